"""Benchmark: spec hot paths (rand, zero, is_in; leaves and a typical Composite), torchenv vs TorchRL.

Run: ``python benchmarks/bench_specs.py``. Set ``TORCHENV_BENCH_TORCHRL_PYTHON`` to the python of a
TorchRL install (e.g. ``/work/venv-trl/bin/python``) to time TorchRL's specs side by side; this file is run
by that interpreter with ``--impl torchrl --json`` and imports only TorchRL there.
"""

from __future__ import annotations

import argparse
import json
import sys
import timeit
import warnings
from collections.abc import Callable

from _torchrl_side import torchrl_results

BUDGET_S = 0.1  # time spent per measurement


def _build(impl: str) -> dict[str, Callable[[], object]]:
    import torch

    if impl == "torchrl":
        warnings.filterwarnings("ignore")
        from torchrl.data import Bounded, Categorical, Composite, OneHot, Unbounded
    else:
        from torchenv.specs import Bounded, Categorical, Composite, OneHot, Unbounded

    obs = Unbounded(shape=(4,))
    pixels = Bounded(0, 255, shape=(3, 64, 64), dtype=torch.uint8)
    action = OneHot(6)
    reward = Unbounded(shape=(1,))
    done = Categorical(2, shape=(1,), dtype=torch.bool)
    comp = Composite(observation=obs, pixels=pixels, action=action, reward=reward, done=done)
    nested = Composite(agents=Composite(observation=Unbounded(shape=(3, 4)), shape=(3,)), done=done)
    x_obs, x_pix, x_act, x_done = obs.rand(), pixels.rand(), action.rand(), done.rand()
    td = comp.rand()
    td_nested = nested.rand()
    torch.manual_seed(0)
    return {
        "Unbounded(4).rand": obs.rand,
        "Unbounded(4).zero": obs.zero,
        "Unbounded(4).is_in": lambda: obs.is_in(x_obs),
        "Bounded uint8 (3,64,64).rand": pixels.rand,
        "Bounded uint8 (3,64,64).is_in": lambda: pixels.is_in(x_pix),
        "OneHot(6).rand": action.rand,
        "OneHot(6).is_in": lambda: action.is_in(x_act),
        "Categorical(2,bool).rand": done.rand,
        "Categorical(2,bool).is_in": lambda: done.is_in(x_done),
        "Composite.rand": comp.rand,
        "Composite.zero": comp.zero,
        "Composite.zero((16,))": lambda: comp.zero((16,)),
        "Composite.is_in": lambda: comp.is_in(td),
        "nested Composite.zero": nested.zero,
        "nested Composite.is_in": lambda: nested.is_in(td_nested),
    }


def _time(fn: Callable[[], object]) -> float:
    """Microseconds per call (best of 3 runs of a number of calls sized to BUDGET_S)."""
    timer = timeit.Timer(fn)
    number, elapsed = timer.autorange()
    number = max(1, int(number * (BUDGET_S / 3) / max(elapsed, 1e-9)))
    return min(timer.repeat(repeat=3, number=number)) / number * 1e6


def run(impl: str) -> dict[str, float]:
    import torch

    torch.set_num_threads(1)
    cases = _build(impl)
    return {name: _time(fn) for name, fn in cases.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--impl", choices=["torchenv", "torchrl"], default="torchenv")
    parser.add_argument("--json", action="store_true", help="print raw results as JSON")
    args = parser.parse_args()
    if args.json:
        print(json.dumps(run(args.impl)))
        return
    ours = run("torchenv")
    theirs = torchrl_results(__file__)
    print(f"{'case':34s} {'torchenv µs':>12s} {'torchrl µs':>12s} {'speedup':>8s}")
    for name, t in ours.items():
        if theirs and name in theirs:
            print(f"{name:34s} {t:12.2f} {theirs[name]:12.2f} {theirs[name] / t:7.2f}x")
        else:
            print(f"{name:34s} {t:12.2f} {'-':>12s} {'-':>8s}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
