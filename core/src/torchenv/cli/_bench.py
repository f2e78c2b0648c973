"""``torchenv bench``: an env's steps per second, torchenv beside the raw simulator.

Each side runs ``--steps`` steps with random actions after a short warm-up, in turn, for
``--repeats`` rounds (the median is reported): the raw simulator through its plugin's
``torchenv_raw_loop`` hook (when the plugin offers one), torchenv's env through
``step_and_maybe_reset`` (the collector loop), and, with ``--workers W``, a ``ParallelEnv`` of
``W`` such envs. Ratios are against the raw simulator.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any

from torchenv.cli._format import progress, table

__all__ = ["cmd_bench"]


def _torchenv_loop(env: Any) -> Callable[[int], int]:
    def run(steps: int) -> int:
        td = env.reset()
        for _ in range(steps):
            td = env.rand_action(td)
            _, td = env.step_and_maybe_reset(td)
        return steps * max(env.batch_size.numel(), 1)

    return run


def _timed(run: Callable[[int], int], steps: int) -> float:
    start = time.perf_counter()
    done = run(steps)
    return done / (time.perf_counter() - start)


def cmd_bench(args: argparse.Namespace) -> int:
    """Print steps/s of the raw simulator, torchenv, and torchenv's ParallelEnv, with ratios."""
    import torch

    from torchenv.registry import make, raw_loop

    torch.set_num_threads(1)
    kwargs = dict(args.kwargs or ())
    if args.num_envs:
        kwargs["num_envs"] = args.num_envs
    sides: list[tuple[str, Callable[[int], int], Any]] = []
    with progress(f"making {args.name}"):
        raw = raw_loop(args.name, **kwargs)
        if raw is not None:
            sides.append(("raw simulator", raw, getattr(raw, "close", None)))
        env = make(args.name, **kwargs)
        if args.seed is not None:
            env.set_seed(args.seed)
        sides.append(("torchenv", _torchenv_loop(env), env.close))
        if args.workers:
            from functools import partial

            from torchenv.batched import ParallelEnv

            parallel = ParallelEnv(args.workers, partial(make, args.name, **kwargs))
            sides.append(
                (f"torchenv ParallelEnv({args.workers})", _torchenv_loop(parallel), parallel.close)
            )
    rates: dict[str, list[float]] = {name: [] for name, _, _ in sides}
    try:
        for _, run, _ in sides:  # warm-up: caches, first resets, worker start
            run(max(args.steps // 10, 1))
        for _ in range(args.repeats):
            for name, run, _ in sides:
                rates[name].append(_timed(run, args.steps))
    finally:
        for _, _, close in sides:
            if close is not None:
                close()
    base = statistics.median(rates["raw simulator"]) if raw is not None else None
    rows = []
    for name, _, _ in sides:
        rate = statistics.median(rates[name])
        ratio = f"{rate / base:.2f}" if base else "-"
        rows.append([name, f"{rate:,.0f}", ratio])
    print(table(["side", "env-steps/s", "x raw"], rows), flush=True)
    if raw is None:
        print(f"(the backend of {args.name} offers no raw-simulator loop to compare with)")
    return 0
