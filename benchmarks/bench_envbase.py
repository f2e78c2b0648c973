"""EnvBase overhead: a trivial env stepped through step / step_and_maybe_reset / rollout.

The same trivial env (constant observation, one-line ``_step``) is written against torchenv
and against TorchRL; the TorchRL side runs in a subprocess of the interpreter named by
``TORCHENV_BENCH_TORCHRL_PYTHON`` (skipped with a message when unset or missing). The table
gives per-step microseconds, the overhead (per-step time minus the env's own ``_step``)
and the ratios TorchRL / torchenv (higher is better for torchenv). Also:
``CartPoleEnv(batch_size=[1024])`` env-steps per second, next to gymnasium's vectorised
CartPole when gymnasium is installed.

Run: ``python benchmarks/bench_envbase.py`` (``--steps N``, ``--profile`` for a cProfile of
torchenv's step loop).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable

import torch

torch.set_num_threads(1)

REPEATS = 2
WARMUP = 200
FLOOR = "env._step alone"


def make_trivial_env(env_base: type, specs: object) -> object:
    """Builds the trivial env on ``env_base`` with specs from module ``specs`` (either library)."""
    from tensordict import TensorDict

    class TrivialEnv(env_base):
        def __init__(self) -> None:
            super().__init__()
            self.observation_spec = specs.Composite(observation=specs.Unbounded(shape=(4,)))
            self.action_spec = specs.Unbounded(shape=(1,))
            self.reward_spec = specs.Unbounded(shape=(1,))
            flag = specs.Categorical(2, shape=(1,), dtype=torch.bool)
            self.full_done_spec = specs.Composite(done=flag, terminated=flag.clone())
            self._obs = torch.zeros(4)
            self._reward = torch.zeros(1)
            self._flag = torch.zeros(1, dtype=torch.bool)

        def _reset(self, tensordict, **kwargs):
            return TensorDict(
                {"observation": self._obs, "done": self._flag, "terminated": self._flag}, []
            )

        def _step(self, tensordict):
            return TensorDict(
                {
                    "observation": self._obs,
                    "reward": self._reward,
                    "done": self._flag,
                    "terminated": self._flag,
                },
                [],
            )

        def _set_seed(self, seed):
            return None

    return TrivialEnv()


def _best_of(fn: Callable[[int], None], steps: int) -> float:
    """Per-step microseconds of ``fn(steps)``, best of ``REPEATS`` (after a warm-up)."""
    fn(WARMUP)
    best = float("inf")
    for _ in range(REPEATS):
        start = time.perf_counter()
        fn(steps)
        best = min(best, time.perf_counter() - start)
    return best / steps * 1e6


def measure(env: object, step_mdp: Callable, steps: int) -> dict[str, float]:
    """Per-step microseconds of each way of stepping ``env``."""
    action = torch.zeros(1)

    def env_step_alone(n: int) -> None:
        td = env.reset().set("action", action)
        for _ in range(n):
            env._step(td)

    def step_only(n: int) -> None:
        td = env.reset().set("action", action)
        for _ in range(n):
            env.step(td)

    def step_and_step_mdp(n: int) -> None:
        td = env.reset()
        for _ in range(n):
            td = step_mdp(env.step(td.set("action", action)))

    def step_and_maybe_reset(n: int) -> None:
        td = env.reset()
        for _ in range(n):
            _, td = env.step_and_maybe_reset(td.set("action", action))

    def policy(td):
        return td.set("action", action)

    def rollout(n: int) -> None:
        env.rollout(n, policy, break_when_any_done=False)

    return {
        FLOOR: _best_of(env_step_alone, steps),
        "step": _best_of(step_only, steps),
        "step + step_mdp": _best_of(step_and_step_mdp, steps),
        "step_and_maybe_reset": _best_of(step_and_maybe_reset, steps),
        "rollout": _best_of(rollout, steps),
    }


def torchrl_side(steps: int) -> dict[str, float]:
    import torchrl.data as specs
    from torchrl.envs import EnvBase
    from torchrl.envs.utils import step_mdp

    return measure(make_trivial_env(EnvBase, specs), step_mdp, steps)


def torchenv_side(steps: int) -> dict[str, float]:
    import torchenv.specs as specs
    from torchenv.envs import EnvBase, step_mdp

    return measure(make_trivial_env(EnvBase, specs), step_mdp, steps)


def run_torchrl(steps: int) -> dict[str, float] | None:
    python = os.environ.get("TORCHENV_BENCH_TORCHRL_PYTHON")
    if not python or not os.path.exists(python):
        print(
            "TorchRL side skipped: set TORCHENV_BENCH_TORCHRL_PYTHON to a python with torchrl "
            "(e.g. /work/venv-trl/bin/python)"
        )
        return None
    proc = subprocess.run(
        [python, __file__, "--side", "torchrl", "--steps", str(steps)],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    if proc.returncode:
        print(f"TorchRL side failed:\n{proc.stderr[-2000:]}")
        return None
    return json.loads(proc.stdout.strip().splitlines()[-1])


def cartpole_throughput(batch: int = 1024, iterations: int = 300) -> dict[str, float]:
    """Env-steps per second of torchenv's batched CartPole (and gymnasium's vector CartPole)."""
    from torchenv.envs import CartPoleEnv

    env = CartPoleEnv(batch_size=[batch], seed=0)
    actions = torch.randint(0, 2, (iterations, batch), generator=torch.Generator().manual_seed(0))
    td = env.reset()
    for i in range(20):
        _, td = env.step_and_maybe_reset(td.set("action", actions[i]))
    start = time.perf_counter()
    for i in range(iterations):
        _, td = env.step_and_maybe_reset(td.set("action", actions[i]))
    result = {"torchenv CartPoleEnv": batch * iterations / (time.perf_counter() - start)}
    try:
        from gymnasium.envs.classic_control.cartpole import CartPoleVectorEnv
    except ImportError:
        return result
    vec = CartPoleVectorEnv(num_envs=batch)
    vec.reset(seed=0)
    np_actions = actions.numpy()
    start = time.perf_counter()
    for i in range(iterations):
        vec.step(np_actions[i])
    result["gymnasium CartPoleVectorEnv (numpy, autoreset)"] = (
        batch * iterations / (time.perf_counter() - start)
    )
    return result


def profile_torchenv(steps: int) -> None:
    import cProfile
    import pstats

    import torchenv.specs as specs
    from torchenv.envs import EnvBase

    env = make_trivial_env(EnvBase, specs)
    action = torch.zeros(1)
    td = env.reset()
    for _ in range(WARMUP):
        _, td = env.step_and_maybe_reset(td.set("action", action))
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(steps):
        _, td = env.step_and_maybe_reset(td.set("action", action))
    profiler.disable()
    pstats.Stats(profiler).sort_stats("tottime").print_stats(25)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=10_000)
    parser.add_argument("--side", choices=["torchenv", "torchrl"], default=None)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    if args.side == "torchrl":
        print(json.dumps(torchrl_side(args.steps)))
        return
    if args.profile:
        profile_torchenv(args.steps)
        return
    ours = torchenv_side(args.steps)
    theirs = run_torchrl(args.steps)
    print(f"\nTrivial env, {args.steps} steps, per-step µs (best of {REPEATS}).")
    print("overhead = per-step time minus the env's own _step (the floor, first row).")
    header = ("method", "torchenv", "torchrl", "ratio", "ovh ours", "ovh torchrl", "ovh ratio")
    print(f"{header[0]:<24}" + "".join(f"{h:>12}" for h in header[1:]))
    for name, ours_us in ours.items():
        row = f"{name:<24}{ours_us:>12.2f}"
        if theirs is not None:
            row += f"{theirs[name]:>12.2f}{theirs[name] / ours_us:>11.1f}x"
            if name != FLOOR:
                ovh_ours = ours_us - ours[FLOOR]
                ovh_theirs = theirs[name] - theirs[FLOOR]
                row += f"{ovh_ours:>12.2f}{ovh_theirs:>12.2f}{ovh_theirs / ovh_ours:>11.1f}x"
        print(row)
    print("\nBatched CartPole (1024 sub-envs, step_and_maybe_reset), env-steps per second:")
    for name, rate in cartpole_throughput().items():
        print(f"{name:<50}{rate:>14,.0f}")


if __name__ == "__main__":
    sys.exit(main())
