"""Import time: torchenv's layers vs TorchRL's, both on top of the same torch + tensordict.

Each run is a fresh interpreter that imports, in order and timed one by one:

1. ``torch``;
2. ``tensordict`` and ``tensordict.nn`` (what both libraries stand on; it imports
   ``torch._dynamo``, which is most of its time);
3. the library's env API: ``ParallelEnv``, ``SerialEnv``, ``TransformedEnv``, ``Compose`` and
   ``StepCounter`` (torchenv: from the facade; TorchRL: from ``torchrl.envs``);
4. ``gymnasium`` (the simulator: the same on both sides, not counted as ours);
5. the env's class and one ``GymEnv("CartPole-v1")``.

"ours" is steps 3 + 5, the target being at most 0.1 s. The run also lists the ``torch.*``
modules that steps 3-5 import beyond what tensordict already did (anything there means we pull
in more of torch than needed). The sides alternate over ``--repeats`` runs (default 7);
medians are reported. A first, untimed run of each side writes the bytecode caches: without
them (``PYTHONDONTWRITEBYTECODE=1`` on a source checkout) every module is compiled on every
import, which alone costs about 0.1 s for torchenv, so the variable is removed for the runs.

The TorchRL side runs in the interpreter named by ``TORCHENV_BENCH_TORCHRL_PYTHON`` (skipped
when unset).

    python benchmarks/bench_import.py [--repeats 7]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

CHILD = r"""
import json, sys, time
lib = sys.argv[1]
clock = time.perf_counter
t0 = clock()
import torch
t1 = clock()
import tensordict, tensordict.nn
t2 = clock()
before = set(sys.modules)
if lib == "torchenv":
    from torchenv import Compose, ParallelEnv, SerialEnv, StepCounter, TransformedEnv
else:
    from torchrl.envs import Compose, ParallelEnv, SerialEnv, StepCounter, TransformedEnv
t3 = clock()
import gymnasium
t4 = clock()
if lib == "torchenv":
    from torchenv_gym import GymEnv
else:
    from torchrl.envs import GymEnv
env = GymEnv("CartPole-v1")
t5 = clock()
env.close()
extra_torch = sorted(
    m for m in set(sys.modules) - before if m == "torch" or m.startswith("torch.")
)
print(json.dumps({
    "torch": t1 - t0, "tensordict": t2 - t1, "api": t3 - t2, "gymnasium": t4 - t3,
    "make": t5 - t4, "extra_torch": extra_torch,
}))
"""

ROWS = ("torch", "tensordict", "api", "gymnasium", "make")


def _run(python: str, lib: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONWARNINGS"] = "ignore"
    proc = subprocess.run(
        [python, "-c", CHILD, lib], capture_output=True, text=True, env=env, check=False
    )
    if proc.returncode:
        raise RuntimeError(f"the {lib} side failed:\n{proc.stderr.strip()[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    sides = {"torchenv": sys.executable}
    trl = os.environ.get("TORCHENV_BENCH_TORCHRL_PYTHON")
    if trl and os.path.exists(trl):
        sides["torchrl"] = trl
    else:
        print("(TorchRL side skipped: set TORCHENV_BENCH_TORCHRL_PYTHON)")
    for lib, python in sides.items():  # untimed: writes the bytecode caches
        _run(python, lib)
    runs: dict[str, list[dict]] = {lib: [] for lib in sides}
    for i in range(args.repeats):
        order = list(sides) if i % 2 == 0 else list(reversed(sides))
        for lib in order:
            runs[lib].append(_run(sides[lib], lib))
    med = {
        lib: {row: statistics.median(r[row] for r in rs) for row in ROWS}
        for lib, rs in runs.items()
    }
    header = f"{'seconds (median of ' + str(args.repeats) + ' fresh interpreters)':<44}" + "".join(
        f"{lib:>10}" for lib in med
    )
    print(header)
    print("-" * len(header))
    labels = {
        "torch": "import torch",
        "tensordict": "import tensordict, tensordict.nn",
        "api": "env API (ParallelEnv, TransformedEnv...)",
        "gymnasium": "import gymnasium (the simulator)",
        "make": "GymEnv('CartPole-v1') incl. its import",
    }
    for row in ROWS:
        print(f"{labels[row]:<44}" + "".join(f"{m[row]:>10.3f}" for m in med.values()))
    ours = {lib: m["api"] + m["make"] for lib, m in med.items()}
    print(
        f"{'library layers (env API + make)':<44}" + "".join(f"{v:>10.3f}" for v in ours.values())
    )
    td_share = {lib: m["tensordict"] for lib, m in med.items()}
    for lib in med:
        total = td_share[lib] + ours[lib]
        target = " (target: at most 0.1 s)" if lib == "torchenv" else ""
        print(
            f"{lib}: its layers take {ours[lib]:.3f} s beyond tensordict{target}; tensordict "
            f"is {td_share[lib] / total:.0%} of tensordict + layers"
        )
    if "torchrl" in ours:
        print(f"torchenv / TorchRL layers: {ours['torchenv'] / ours['torchrl']:.2f}")
    for lib, rs in runs.items():
        extra = rs[-1]["extra_torch"]
        print(
            f"{lib}: torch modules imported by the layers beyond tensordict's: {len(extra)}"
            + (f" ({', '.join(extra[:8])}{', ...' if len(extra) > 8 else ''})" if extra else "")
        )


if __name__ == "__main__":
    main()
