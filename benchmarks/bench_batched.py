"""Batched envs: torchenv ``ParallelEnv`` vs gymnasium ``AsyncVectorEnv`` vs TorchRL ``ParallelEnv``.

CartPole-v1 and Pendulum-v1 with 2 and 4 workers. For each: throughput (env steps per second of
a ``step_and_maybe_reset`` loop with random actions; for gymnasium, ``envs.step`` with its
autoreset) and start-up time (construction to the end of the first reset). Our side uses the gym
plugin's ``GymEnv`` when ``torchenv_gym`` is importable (the same simulator as the others), else
the built-in ``CartPoleEnv`` / ``PendulumEnv`` (printed). TorchRL's side runs in a subprocess of
the interpreter named by ``TORCHENV_BENCH_TORCHRL_PYTHON`` (skipped with a message when unset or
missing) with its ``GymEnv`` and default start method.

Ours and gymnasium run alternately ``--repeats`` times (best throughput, best start-up kept),
because the development machine is shared; TorchRL runs once per configuration, all in one
subprocess.

Run: ``python benchmarks/bench_batched.py`` (``--seconds S`` per measurement, ``--repeats N``,
``--workers 2 4``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

import torch

ENV_IDS = ("CartPole-v1", "Pendulum-v1")


def _loop(step, seconds: float, warmup: int = 30) -> tuple[int, float]:
    """Run ``step()`` for about ``seconds``; returns (iterations, elapsed)."""
    for _ in range(warmup):
        step()
    n, start = 0, time.perf_counter()
    deadline = start + seconds
    while True:
        for _ in range(50):
            step()
        n += 50
        now = time.perf_counter()
        if now >= deadline:
            return n, now - start


def _action_pool(env_id: str, workers: int, n: int = 64):
    """``n`` random batched actions drawn once (numpy), replayed in turn by every library."""
    import numpy as np

    rng = np.random.default_rng(0)
    if env_id.startswith("CartPole"):
        return [rng.integers(0, 2, size=(workers,)) for _ in range(n)]
    return [rng.uniform(-2, 2, size=(workers, 1)).astype(np.float32) for _ in range(n)]


def bench_torchenv(env_id: str, workers: int, seconds: float, rand: bool) -> dict:
    from torchenv.batched import ParallelEnv

    try:
        import functools

        from torchenv_gym import GymEnv

        make = functools.partial(GymEnv, env_id)
        which = f'torchenv_gym.GymEnv("{env_id}")'
    except ImportError:
        from torchenv.envs.builtin import CartPoleEnv, PendulumEnv

        make = CartPoleEnv if env_id.startswith("CartPole") else PendulumEnv
        which = f"builtin {make.__name__}"
    start = time.perf_counter()
    env = ParallelEnv(workers, make)
    td = env.reset()
    startup = time.perf_counter() - start
    state = {"td": td, "i": 0}
    actions = [torch.as_tensor(a) for a in _action_pool(env_id, workers)]
    if type(env.action_spec).__name__ == "OneHot":  # GymEnv's default encoding, like TorchRL's
        n = env.action_spec.shape[-1]
        actions = [torch.nn.functional.one_hot(a, n).to(env.action_spec.dtype) for a in actions]

    def step():
        if rand:
            td = env.rand_action(state["td"])
        else:
            state["i"] = i = (state["i"] + 1) % len(actions)
            td = state["td"].set("action", actions[i])
        _, state["td"] = env.step_and_maybe_reset(td)

    n, elapsed = _loop(step, seconds)
    env.close()
    return {"sps": n * workers / elapsed, "startup": startup, "which": which}


def bench_gymnasium(env_id: str, workers: int, seconds: float, rand: bool) -> dict:
    import gymnasium as gym

    start = time.perf_counter()
    envs = gym.vector.AsyncVectorEnv([lambda: gym.make(env_id)] * workers)
    envs.reset(seed=0)
    startup = time.perf_counter() - start
    sample = envs.action_space.sample
    actions = _action_pool(env_id, workers)
    state = {"i": 0}

    def step():
        if rand:
            envs.step(sample())
        else:
            state["i"] = i = (state["i"] + 1) % len(actions)
            envs.step(actions[i])

    n, elapsed = _loop(step, seconds)
    envs.close()
    return {"sps": n * workers / elapsed, "startup": startup}


_TORCHRL_SCRIPT = r"""
import json, sys, time
from torchrl.envs import GymEnv, ParallelEnv
import numpy as np, torch
configs, seconds, rand = json.loads(sys.argv[1]), float(sys.argv[2]), sys.argv[3] == "1"
def make(env_id):
    return GymEnv(env_id)
if __name__ == "__main__":
    import functools
    out = []
    for env_id, workers in configs:
        start = time.perf_counter()
        env = ParallelEnv(workers, functools.partial(make, env_id))
        td = env.reset()
        startup = time.perf_counter() - start
        rng = np.random.default_rng(0)
        if env_id.startswith("CartPole"):  # TorchRL's GymEnv: one-hot actions
            actions = [torch.nn.functional.one_hot(torch.as_tensor(rng.integers(0, 2, size=(workers,))), 2) for _ in range(64)]
        else:
            actions = [torch.as_tensor(rng.uniform(-2, 2, size=(workers, 1)).astype(np.float32)) for _ in range(64)]
        def step(td, i):
            td = env.rand_action(td) if rand else td.set("action", actions[i % 64])
            return env.step_and_maybe_reset(td)[1]
        for i in range(30):
            td = step(td, i)
        n, t0 = 0, time.perf_counter()
        while time.perf_counter() - t0 < seconds:
            for i in range(50):
                td = step(td, i)
            n += 50
        elapsed = time.perf_counter() - t0
        env.close()
        out.append({"sps": n * workers / elapsed, "startup": startup})
    print(json.dumps(out))
"""


def bench_torchrl(configs: list, seconds: float, rand: bool) -> list | None:
    """All TorchRL measurements in one subprocess (one interpreter start, one import)."""
    python = os.environ.get("TORCHENV_BENCH_TORCHRL_PYTHON")
    if not python or not os.path.exists(python):
        return None
    proc = subprocess.run(
        [python, "-c", _TORCHRL_SCRIPT, json.dumps(configs), str(seconds), str(int(rand))],
        capture_output=True,
        text=True,
        timeout=600,
    )
    if proc.returncode != 0:
        print(f"TorchRL side failed:\n{proc.stderr[-2000:]}")
        return None
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=0.75, help="per measurement")
    parser.add_argument("--repeats", type=int, default=2, help="best of, ours and gymnasium")
    parser.add_argument("--workers", type=int, nargs="+", default=[2, 4])
    parser.add_argument(
        "--rand-action",
        action="store_true",
        help="sample actions with each library's own sampler (env.rand_action / "
        "action_space.sample) instead of replaying the same pre-drawn actions",
    )
    args = parser.parse_args()
    if not os.environ.get("TORCHENV_BENCH_TORCHRL_PYTHON"):
        print("TORCHENV_BENCH_TORCHRL_PYTHON is not set: skipping the TorchRL side.")

    configs = [(env_id, w) for env_id in ENV_IDS for w in args.workers]
    rows = []
    for env_id, workers in configs:
        # alternate the two libraries and keep the best run of each (the machine may be shared)
        runs = [
            (
                bench_torchenv(env_id, workers, args.seconds, args.rand_action),
                bench_gymnasium(env_id, workers, args.seconds, args.rand_action),
            )
            for _ in range(args.repeats)
        ]
        ours = max((r[0] for r in runs), key=lambda r: r["sps"])
        ours["startup"] = min(r[0]["startup"] for r in runs)
        gymv = max((r[1] for r in runs), key=lambda r: r["sps"])
        gymv["startup"] = min(r[1]["startup"] for r in runs)
        rows.append([env_id, workers, ours, gymv, None])
        print(f"done: {env_id} x{workers} (ours: {ours['which']})", file=sys.stderr)
    trl = bench_torchrl(configs, args.seconds, args.rand_action)
    if trl is not None:
        for row, result in zip(rows, trl):
            row[4] = result

    how = "own samplers" if args.rand_action else "the same pre-drawn actions"
    print(f"\nos.cpu_count()={os.cpu_count()}; actions: {how}; steps/s = env steps per second")
    head = (
        f"{'env':<12} {'W':>2} | {'torchenv':>9} {'gym Async':>9} {'TorchRL':>9} | "
        f"{'x gym':>6} {'x TorchRL':>9} || startup s: {'ours':>6} {'gym':>6} {'TorchRL':>7} "
        f"{'ours/TRL':>8}"
    )
    print(head)
    print("-" * len(head))
    for env_id, workers, ours, gymv, trl in rows:
        trl_sps = f"{trl['sps']:9.0f}" if trl else f"{'-':>9}"
        trl_start = f"{trl['startup']:7.2f}" if trl else f"{'-':>7}"
        x_trl = f"{ours['sps'] / trl['sps']:9.2f}" if trl else f"{'-':>9}"
        start_ratio = f"{ours['startup'] / trl['startup']:8.3f}" if trl else f"{'-':>8}"
        print(
            f"{env_id:<12} {workers:>2} | {ours['sps']:9.0f} {gymv['sps']:9.0f} {trl_sps} | "
            f"{ours['sps'] / gymv['sps']:6.2f} {x_trl} || {'':11}{ours['startup']:6.3f} "
            f"{gymv['startup']:6.3f} {trl_start} {start_ratio}"
        )
    print(f"\nours: {rows[0][2]['which']} / {rows[-1][2]['which']}")


if __name__ == "__main__":
    main()
