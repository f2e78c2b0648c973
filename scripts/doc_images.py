"""Draw the docs' pictures into ``docs/img/`` (PNG): ``nox -s doc_images``.

    python scripts/doc_images.py [--only NAME ...] [--bench-json PATH] [--list]

Each picture comes from the code or from a run, never drawn by hand:

- ``architecture.png``: the core's packages, the plugins (read from ``plugins/*/pyproject.toml``:
  their distribution name and ``torchenv`` entry points) and the libraries torchenv talks to.
- ``step-layout.png``: the keys of a real step of ``builtin:CartPole`` (root, ``"next"``) and what
  ``step_mdp`` carries to the next step's root (computed, not listed by hand).
- ``frame-<backend>.png``: a frame of each backend that renders here, through torchenv (pixels
  entry or the env's ``render()``); MuJoCo-based ones with ``MUJOCO_GL=egl`` when no display is
  set. A backend that cannot render (missing simulator, no OpenGL) is skipped with its reason,
  and its committed picture is left as it was.
- ``bench-policy.png``: the ratios of ``benchmarks/bench_policy.py --json`` (a short run:
  ``--cases single --repeats 3 --seconds 0.5``, a few minutes; ``--bench-cases single,parallel``
  adds the ``ParallelEnv`` rows, much longer; TorchRL's side when
  ``$TORCHENV_BENCH_TORCHRL_PYTHON`` names an interpreter with torchrl), or of ``--bench-json``.

Not drawn: OpenSpiel (its ``render()`` is the game's text), Brax and Jumanji (their renderers
need a display or extra packages the ``jax`` extra does not install).

The pictures are committed, so the docs site builds without running this script.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import struct
import subprocess
import sys
import tempfile
import zlib
from collections.abc import Callable
from pathlib import Path

import numpy as np

# matplotlib only for the diagrams and the plot: a frame needs numpy alone, so that it can be
# drawn from any venv that has the simulator (e.g. Melting Pot's)

ROOT = Path(__file__).resolve().parent.parent
IMG = ROOT / "docs" / "img"
MAX_BYTES = 150_000  # every picture stays small (the site and the repository carry them)

CORE = "#dbe9f6"
PLUGIN = "#e3f1df"
OUTSIDE = "#f6ead8"
EDGE = "#4a4a4a"


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(fig, name: str) -> Path:
    plt = _pyplot()
    path = IMG / name
    fig.savefig(path, dpi=100, facecolor="white")
    plt.close(fig)
    _shrink(path)
    return path


def _shrink(path: Path) -> None:
    """Quantize a PNG to a 256-colour palette when it is over the size budget."""
    if path.stat().st_size <= MAX_BYTES:
        return
    from PIL import Image

    Image.open(path).convert("RGB").quantize(256).save(path, optimize=True)
    if path.stat().st_size > MAX_BYTES:
        raise RuntimeError(f"{path.name} is {path.stat().st_size} bytes (> {MAX_BYTES})")


def _box(ax, x, y, w, h, text, color, size=9, weight="normal", style="round,pad=0.01"):
    from matplotlib.patches import FancyBboxPatch

    ax.add_patch(
        FancyBboxPatch((x, y), w, h, boxstyle=style, facecolor=color, edgecolor=EDGE, lw=1)
    )
    ax.text(x + w / 2, y + h / 2, text, ha="center", va="center", fontsize=size, weight=weight)


def _arrow(ax, start, end, text="", style="-|>", ls="-", color=EDGE, offset=(0, 0)):
    from matplotlib.patches import FancyArrowPatch

    ax.add_patch(
        FancyArrowPatch(start, end, arrowstyle=style, mutation_scale=12, lw=1, ls=ls, color=color)
    )
    if text:
        mx, my = (start[0] + end[0]) / 2 + offset[0], (start[1] + end[1]) / 2 + offset[1]
        ax.text(mx, my, text, fontsize=8, ha="center", va="center", color=color,
                bbox={"facecolor": "white", "edgecolor": "none", "pad": 1})  # fmt: skip


def _plugins() -> list[tuple[str, list[str]]]:
    """(distribution, entry-point names of group ``torchenv``) of every plugin in the repository."""
    out = []
    for pyproject in sorted(ROOT.glob("plugins/*/pyproject.toml")):
        text = pyproject.read_text()  # (no tomllib: Python 3.10 is supported)
        name = re.search(r'^name\s*=\s*"([^"]+)"', text, re.MULTILINE).group(1)
        section = re.search(r"^\[project\.entry-points\.torchenv\]\n(.*?)(?:^\[|\Z)", text,
                            re.MULTILINE | re.DOTALL)  # fmt: skip
        points = re.findall(r"^([\w-]+)\s*=", section.group(1), re.MULTILINE) if section else []
        out.append((name, sorted(points)))
    return out


def architecture() -> Path:
    """The core's parts, the plugins found through entry points, and the interop targets."""
    from matplotlib.patches import FancyBboxPatch

    plugins = _plugins()
    fig, ax = _pyplot().subplots(figsize=(9.6, 6.2))
    fig.subplots_adjust(left=0.01, right=0.99, top=0.99, bottom=0.01)
    ax.set_xlim(0, 96)
    ax.set_ylim(0, 62)
    ax.axis("off")

    _box(ax, 18, 54, 60, 6, 'your code:  torchenv.make("backend:env-id"), a policy, a training loop',
         OUTSIDE, size=9)  # fmt: skip
    # the core distribution
    ax.add_patch(
        FancyBboxPatch(
            (2, 24), 92, 26, boxstyle="round,pad=0.2", facecolor="#f4f8fc", edgecolor=EDGE, lw=1.2
        )  # fmt: skip
    )
    ax.text(4, 47.6, "torchenv  (the core distribution: torch + tensordict, no simulator)",
            fontsize=10, weight="bold", va="center")  # fmt: skip
    parts = [
        ("specs\nComposite, Bounded,\nCategorical, ...", 4),
        ("envs\nEnvBase, rollout,\nstep_mdp, builtins", 19),
        ("transforms\nTransformedEnv,\nObservationNorm, ...", 34),
        ("batched\nSerialEnv,\nParallelEnv, Ray,\nAsyncEnvPool", 49),
        ("registry\nmake, list_envs,\nbackends", 64),
        ("cli\ntorchenv list,\nrollout, record,\nbackends", 79),
    ]
    for text, x in parts:
        _box(ax, x, 34, 13.5, 10, text, CORE, size=7.5)
    _box(ax, 4, 26, 26, 5.5, "record\nVideoRecorder, loggers", CORE, size=7.5)
    _box(ax, 32, 26, 30, 5.5, "interop\nto/from TorchRL, to_gymnasium, to_sb3", CORE, size=7.5)
    _box(ax, 79, 26, 13.5, 5.5, "testing\nconformance tests", CORE, size=7.5)
    _arrow(ax, (48, 54), (48, 50.4))

    # plugins: one distribution each, found through the entry-point group
    n = len(plugins)
    width = 92 / n
    for i, (dist, points) in enumerate(plugins):
        x = 2 + i * width
        label = dist.replace("torchenv-", "torchenv-\n") + "\n\nentry point:\n" + "\n".join(points)
        _box(ax, x + 0.4, 5.5, width - 0.8, 10.5, label, PLUGIN, size=6.5)
    ax.text(48, 17.2, 'plugins: separate distributions, found through the entry-point group "torchenv"'
            " (no import until make() asks)", fontsize=8.5, ha="center", style="italic")  # fmt: skip
    _arrow(ax, (70.75, 34), (70.75, 18.6), "entry points", ls="--", offset=(0, 2))
    ax.text(48, 2.2, "each plugin imports its simulator only when an env is made:\n"
            "gymnasium / gym, ALE, VMAS, PettingZoo, dm_control, MuJoCo, envpool, OpenSpiel, "
            "Brax, Jumanji, Melting Pot", fontsize=8, ha="center", va="center")  # fmt: skip
    # outside libraries the envs plug into
    ax.text(33, 22.2, "out to: TorchRL (collectors, losses), gymnasium, Stable-Baselines3",
            fontsize=8, ha="center", va="center", color="#7a4b00")  # fmt: skip
    return _save(fig, "architecture.png")


def _keys(td) -> list[str]:
    return sorted(k if isinstance(k, str) else ".".join(k) for k in td.keys(True, True))


def step_layout() -> Path:
    """The keys of one real step (root and ``"next"``) and what ``step_mdp`` carries over."""
    import torchenv
    from torchenv.envs import step_mdp

    env = torchenv.make("builtin:CartPole")
    env.set_seed(0)
    td = env.rand_step(env.reset())
    root = [k for k in _keys(td) if not k.startswith("next.")]
    nxt = [k[len("next.") :] for k in _keys(td) if k.startswith("next.")]
    carried = _keys(step_mdp(td))
    env.close()

    fig, ax = _pyplot().subplots(figsize=(9.0, 3.4))
    fig.subplots_adjust(left=0.01, right=0.99, top=0.99, bottom=0.01)
    ax.set_xlim(0, 90)
    ax.set_ylim(9, 43)
    ax.axis("off")
    row = 4.2

    def column(x, title, keys, color, top=32, rows=None):
        ax.text(x + 11, top + 8, title, ha="center", fontsize=9.5, weight="bold")
        ys = {}
        for i, key in enumerate(keys):
            y = top - (rows[key] if rows else i) * row
            _box(ax, x, y, 22, 3.2, key, color, size=8.5)
            ys[key] = y + 1.6
        return ys

    ys_root = column(2, "td = env.step(td):  root", root, CORE)
    ax.text(13, 37.4, "the step's input", ha="center", fontsize=8, color="#555")
    ys_next = column(34, 'td["next"]', nxt, PLUGIN)
    ax.text(45, 37.4, "what the step produced", ha="center", fontsize=8, color="#555")
    # each carried entry on the row of the "next" entry it comes from
    rows = {key: nxt.index(key) if key in nxt else len(nxt) + i for i, key in enumerate(carried)}
    ys_new = column(66, "step_mdp(td):  next root", carried, OUTSIDE, rows=rows)
    ax.text(77, 37.4, "the next step's input", ha="center", fontsize=8, color="#555")
    for key, y in ys_next.items():
        if key in ys_new:
            _arrow(ax, (56, y), (66, ys_new[key]))
        else:
            ax.text(57, y, "dropped", fontsize=8, va="center", color="#a33")
    for key, y in ys_root.items():
        if key not in carried:
            ax.text(24.5, y, "not carried", fontsize=8, va="center", color="#a33")
    ax.text(
        45,
        10.5,
        "computed from builtin:CartPole: rollout() stacks such steps along a trailing time dim;\n"
        'step_and_maybe_reset() returns (td with its "next", the next root, reset where done)',
        ha="center",
        fontsize=8,
    )
    return _save(fig, "step-layout.png")


# ------------------------------------------------------------------------------- frames
def _as_image(value) -> np.ndarray:
    """An (H, W, 3) uint8 array from a torch / numpy frame, HWC or CHW, or a stack of gray ones."""
    array = np.asarray(value.numpy() if hasattr(value, "numpy") else value)
    while array.ndim > 3 and array.shape[0] == 1:
        array = array[0]
    if array.ndim == 3 and array.shape[0] not in (1, 3) and array.shape[-1] not in (1, 3):
        array = np.concatenate(list(array), axis=1)  # stacked gray frames, side by side
    if array.ndim == 3 and array.shape[0] in (1, 3) and array.shape[-1] not in (1, 3):
        array = array.transpose(1, 2, 0)
    if array.ndim == 2:
        array = array[..., None]
    if array.shape[-1] == 1:
        array = np.repeat(array, 3, axis=-1)
    return np.ascontiguousarray(array[..., :3]).astype(np.uint8)


def _frame_gym():
    import torchenv

    env = torchenv.make("gymnasium:CartPole-v1", from_pixels=True, pixels_only=False)
    env.set_seed(0)
    td = env.rollout(8, break_when_any_done=False)
    env.close()
    return td["next", "pixels"][-1]


def _frame_atari():
    import torchenv

    env = torchenv.make("gymnasium:ALE/Breakout-v5", from_pixels=True, pixels_only=False)
    env.set_seed(0)
    td = env.rollout(60, break_when_any_done=False)
    env.close()
    return td["next", "pixels"][-1]


def _frame_envpool():
    import torchenv

    env = torchenv.make("envpool:Pong-v5", num_envs=1)
    env.set_seed(0)
    td = env.rollout(30, break_when_any_done=False)
    env.close()
    return td["next", "observation"][0, -1]  # the 4 stacked 84x84 gray frames the agent sees


def _frame_mujoco():
    import torchenv

    env = torchenv.make("mujoco:HalfCheetah", num_envs=1)
    env.set_seed(0)
    env.rollout(40)
    frame = env.render(width=320, height=240, camera="track")  # the task's tracking camera
    env.close()
    return frame


def _frame_dmcontrol():
    import torchenv

    env = torchenv.make("dmcontrol:cheetah/run")
    env.set_seed(0)
    env.rollout(20)
    frame = env.render(height=240, width=320)
    env.close()
    return frame


def _frame_vmas():
    import torchenv

    env = torchenv.make("vmas:balance", num_envs=1, seed=0)
    env.rollout(20)
    frame = env.render()
    env.close()
    return frame


def _frame_pettingzoo():
    import torchenv

    env = torchenv.make(
        "pettingzoo:mpe/simple_spread_v3", parallel=True, render_mode="rgb_array", seed=0
    )
    env.rollout(10)
    frame = env.render()
    env.close()
    return frame


def _frame_meltingpot():
    import torchenv

    env = torchenv.make("meltingpot:commons_harvest__open")
    env.set_seed(0)
    env.rollout(20)
    frame = env.render()
    env.close()
    return frame


FRAMES: dict[str, Callable] = {
    "gymnasium": _frame_gym,
    "atari": _frame_atari,
    "envpool": _frame_envpool,
    "mujoco": _frame_mujoco,
    "dmcontrol": _frame_dmcontrol,
    "vmas": _frame_vmas,
    "pettingzoo": _frame_pettingzoo,
    "meltingpot": _frame_meltingpot,
}


def _write_png(path: Path, image: np.ndarray) -> None:
    """An (H, W, 3) uint8 array as an RGB PNG (zlib only: no imaging library needed)."""
    height, width, _ = image.shape
    rows = b"".join(b"\x00" + image[i].tobytes() for i in range(height))  # filter 0 per row

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    path.write_bytes(
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows, 9))
        + chunk(b"IEND", b"")
    )


def _downscale(image: np.ndarray, max_width: int = 360) -> np.ndarray:
    """Average ``k x k`` blocks (the smallest integer ``k`` that fits ``max_width``)."""
    k = -(-image.shape[1] // max_width)
    if k <= 1:
        return image
    height, width = image.shape[0] // k * k, image.shape[1] // k * k
    blocks = image[:height, :width].reshape(height // k, k, width // k, k, 3)
    return blocks.mean(axis=(1, 3)).round().astype(np.uint8)


def frame(backend: str) -> Path:
    """A frame of ``backend``'s env, downscaled to at most 360 px wide."""
    path = IMG / f"frame-{backend}.png"
    _write_png(path, _downscale(_as_image(FRAMES[backend]())))
    if path.stat().st_size > MAX_BYTES:
        raise RuntimeError(f"{path.name} is {path.stat().st_size} bytes (> {MAX_BYTES})")
    return path


# ------------------------------------------------------------------------------ benchmark
def _run_bench_policy(cases: str) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "policy.json"
        cmd = [sys.executable, str(ROOT / "benchmarks" / "bench_policy.py"), "--cases", cases,
               "--repeats", "3", "--seconds", "0.5", "--json", str(out)]  # fmt: skip
        subprocess.run(cmd, check=True, cwd=ROOT)
        return json.loads(out.read_text())


def bench_policy(bench_json: Path | None, cases: str = "single") -> Path:
    """Ratios of ``bench_policy.py``: torchenv / raw gymnasium + MLP and torchenv / TorchRL."""
    data = json.loads(bench_json.read_text()) if bench_json else _run_bench_policy(cases)
    rows = [r for r in data["results"] if r["torchenv"] and r["raw"]]
    labels = [r["case"] for r in rows]
    raw = [r["torchenv"] / r["raw"] for r in rows]
    trl = [r["torchenv"] / r["torchrl"] if r.get("torchrl") else np.nan for r in rows]
    fig, ax = _pyplot().subplots(figsize=(8.4, 0.42 * len(rows) + 1.6))
    y = np.arange(len(rows))
    # bars grow from 1 (as fast) to the ratio, on a log axis: 0.5 and 2 are as far from 1
    raw_w = [v - 1 for v in raw]
    ax.barh(y - 0.2, raw_w, left=1, height=0.38, color="#7aa6d6",
            label="torchenv / raw gymnasium + the same MLP")  # fmt: skip
    if not np.all(np.isnan(trl)):
        trl_w = [v - 1 for v in trl]
        ax.barh(y + 0.2, trl_w, left=1, height=0.38, color="#e39b4f",
                label="torchenv / TorchRL 0.14.1")  # fmt: skip
    for offset, values in ((-0.2, raw), (0.2, trl)):
        for yi, value in zip(y, values):
            if not np.isnan(value):
                ha = "left" if value >= 1 else "right"
                pad = 1.04 if value >= 1 else 0.96
                ax.text(value * pad, yi + offset, f"{value:.2f}", va="center", ha=ha, fontsize=7)
    ax.axvline(1.0, color="#333", lw=0.8)
    ax.set_yticks(y, labels, fontsize=8)
    ax.invert_yaxis()
    ax.set_xscale("log")
    finite = [v for v in [*raw, *trl] if not np.isnan(v)]
    ticks = [t for t in (0.125, 0.25, 0.5, 1, 2, 4, 8, 16, 32, 64) if
             min(finite) / 2 <= t <= max(finite) * 2]  # fmt: skip
    ax.set_xticks(ticks, [f"{t:g}" for t in ticks], fontsize=8)
    ax.minorticks_off()
    ax.set_xlim(min(finite) / 1.6, max(finite) * 1.6)
    ax.set_xlabel("speed ratio, env-steps/s with a policy in the loop (log scale; "
                  "right of 1: torchenv is faster)", fontsize=8)  # fmt: skip
    ax.set_title(
        f"benchmarks/bench_policy.py: medians of {data['repeats']} alternated rounds of "
        f"{data['seconds']} s, one torch thread",
        fontsize=9,
    )
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    return _save(fig, "bench-policy.png")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    names = ["architecture", "step-layout", *(f"frame-{b}" for b in FRAMES), "bench-policy"]
    parser.add_argument("--only", nargs="+", choices=names, help="draw only these pictures")
    parser.add_argument("--bench-json", type=Path, help="plot this bench_policy.py --json output")
    parser.add_argument("--bench-cases", default="single", help="bench_policy.py --cases")
    parser.add_argument("--list", action="store_true", help="list the pictures and exit")
    args = parser.parse_args()
    if args.list:
        print("\n".join(names))
        return 0
    if "DISPLAY" not in os.environ:  # headless: MuJoCo (mujoco, dmcontrol) renders through EGL
        os.environ.setdefault("MUJOCO_GL", "egl")
        os.environ.setdefault("PYOPENGL_PLATFORM", os.environ["MUJOCO_GL"])
    IMG.mkdir(parents=True, exist_ok=True)
    skipped = []
    for name in args.only or names:
        if name == "architecture":
            path = architecture()
        elif name == "step-layout":
            path = step_layout()
        elif name == "bench-policy":
            path = bench_policy(args.bench_json, args.bench_cases)
        else:
            try:
                path = frame(name.removeprefix("frame-"))
            except Exception as err:  # missing simulator, no OpenGL: say why, keep the old one
                reason = f"{type(err).__name__}: {str(err).splitlines()[0][:160]}"
                skipped.append(name)
                print(f"skipped {name}: {reason}", flush=True)
                continue
        print(f"wrote {path.relative_to(ROOT)} ({path.stat().st_size // 1024} KiB)", flush=True)
    if skipped:
        print(f"skipped (kept as committed): {', '.join(skipped)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
