"""Several sub-envs per worker: ``ParallelEnv(64, envs_per_worker=32)`` (2 processes) against
``ParallelEnv(64)`` (64 processes) and gymnasium's ``SyncVectorEnv(64)`` in one process.

CartPole-v1 (``torchenv_gym.GymEnv`` when the gym plugin is importable, the same simulator as
gymnasium's; else the built-in ``CartPoleEnv``, printed), a linear policy module in the loop
(observation -> logits -> argmax -> one-hot action; ``step_and_maybe_reset`` on our side,
``envs.step`` with its autoreset on gymnasium's), ``torch.set_num_threads(1)``. The sides
alternate ``--repeats`` times; the table gives medians of env steps per second and the ratios
the issue asks for (>= 3x ``ParallelEnv(64)``, >= 0.8x ``SyncVectorEnv(64)``). TorchRL has no
envs-per-worker option (its users put a vectorised gym env in each worker instead), so it is
not run here; ``bench_batched.py`` compares ``ParallelEnv`` with TorchRL's.

Run: ``python benchmarks/bench_batched_sub_envs.py`` (``--seconds S`` per measurement,
``--repeats N``, ``--envs 64``, ``--per-worker 32``).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import torch


def _make():
    try:
        import functools

        from torchenv_gym import GymEnv

        return functools.partial(GymEnv, "CartPole-v1"), 'torchenv_gym.GymEnv("CartPole-v1")'
    except ImportError:
        from torchenv.envs import CartPoleEnv

        return CartPoleEnv, "builtin CartPoleEnv"


def _policy() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Linear(4, 2)


def _loop(step, seconds: float, warmup: int = 20) -> float:
    """Calls of ``step()`` per second over about ``seconds``."""
    for _ in range(warmup):
        step()
    n, start = 0, time.perf_counter()
    while True:
        for _ in range(20):
            step()
        n += 20
        elapsed = time.perf_counter() - start
        if elapsed >= seconds:
            return n / elapsed


def bench_torchenv(n: int, per_worker: int, seconds: float) -> float:
    from torchenv.batched import ParallelEnv

    make, _ = _make()
    env = ParallelEnv(n, make, envs_per_worker=per_worker)
    env.set_seed(0)
    policy = _policy()
    state = {"td": env.reset()}
    one_hot = type(env.action_spec).__name__ == "OneHot"
    dtype = env.action_spec.dtype

    def step():
        td = state["td"]
        with torch.no_grad():
            choice = policy(td["observation"]).argmax(-1)
        action = torch.nn.functional.one_hot(choice, 2).to(dtype) if one_hot else choice
        _, state["td"] = env.step_and_maybe_reset(td.set("action", action))

    try:
        return _loop(step, seconds) * n
    finally:
        env.close()


def bench_gymnasium_sync(n: int, seconds: float) -> float:
    import gymnasium as gym

    envs = gym.vector.SyncVectorEnv([lambda: gym.make("CartPole-v1")] * n)
    obs, _ = envs.reset(seed=0)
    policy = _policy()
    state = {"obs": obs}

    def step():
        with torch.no_grad():
            action = policy(torch.as_tensor(state["obs"], dtype=torch.float32)).argmax(-1)
        state["obs"], *_ = envs.step(action.numpy())

    try:
        return _loop(step, seconds) * n
    finally:
        envs.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=1.0, help="per measurement")
    parser.add_argument("--repeats", type=int, default=3, help="alternated runs per side")
    parser.add_argument("--envs", type=int, default=64)
    parser.add_argument("--per-worker", type=int, default=32)
    args = parser.parse_args()
    torch.set_num_threads(1)
    n, k = args.envs, args.per_worker
    sides = {
        f"ParallelEnv({n}, envs_per_worker={k})": lambda: bench_torchenv(n, k, args.seconds),
        f"ParallelEnv({n})": lambda: bench_torchenv(n, 1, args.seconds),
        f"gymnasium SyncVectorEnv({n})": lambda: bench_gymnasium_sync(n, args.seconds),
    }
    runs: dict[str, list[float]] = {name: [] for name in sides}
    for r in range(args.repeats):
        for name, run in sides.items():
            runs[name].append(run())
        print(f"repeat {r + 1}/{args.repeats} done", file=sys.stderr)
    med = {name: statistics.median(v) for name, v in runs.items()}
    ours, one_each, sync = med.values()
    print(
        f"\nCartPole-v1, {n} envs, policy in the loop; os.cpu_count()={os.cpu_count()}; "
        f"ours: {_make()[1]}; env steps/s, median of {args.repeats} (all runs)"
    )
    for name, value in med.items():
        print(f"  {name:<36} {value:9.0f}   {[round(v) for v in runs[name]]}")
    print(f"  envs_per_worker={k} / ParallelEnv({n}):     {ours / one_each:6.2f}x  (issue: >= 3)")
    print(f"  envs_per_worker={k} / SyncVectorEnv({n}):   {ours / sync:6.2f}x  (issue: >= 0.8)")


if __name__ == "__main__":
    main()
