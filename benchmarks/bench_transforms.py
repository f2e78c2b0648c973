"""Benchmark: per-step overhead of a common transform stack, torchenv vs TorchRL.

The stack is ``StepCounter, RewardSum, ObservationNorm, DoubleToFloat, CatFrames(4)`` on CartPole:

* torchenv: torchenv's built-in, pure-torch ``CartPoleEnv`` (unbatched), transformed by torchenv.
* TorchRL: ``torchrl.envs.GymEnv("CartPole-v1")`` (gymnasium), transformed by TorchRL's transforms.

For each side, the step time of the base env and of the transformed env are measured with the same
loop (``step_and_maybe_reset`` with a fixed action); the overhead of the stack is their difference.
The base envs differ (pure torch vs gymnasium), so the overheads, not the step times, are compared.

Run: ``python benchmarks/bench_transforms.py``. Set ``TORCHENV_BENCH_TORCHRL_PYTHON`` to the python
of a TorchRL install (e.g. ``/work/venv-trl/bin/python``) for the TorchRL side; this file is then run
by that interpreter with ``--impl torchrl --json`` and imports only TorchRL there.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings

from _torchrl_side import torchrl_results

STEPS = 300
REPEATS = 10


def _envs(impl: str):
    import torch

    if impl == "torchrl":
        warnings.filterwarnings("ignore")
        from torchrl.envs import (
            CatFrames,
            Compose,
            DoubleToFloat,
            GymEnv,
            ObservationNorm,
            RewardSum,
            StepCounter,
            TransformedEnv,
        )

        def make_base():
            return GymEnv("CartPole-v1")

        action = torch.tensor([1, 0])  # one-hot action of TorchRL's GymEnv CartPole
    else:
        from torchenv.envs import CartPoleEnv
        from torchenv.transforms import (
            CatFrames,
            Compose,
            DoubleToFloat,
            ObservationNorm,
            RewardSum,
            StepCounter,
            TransformedEnv,
        )

        def make_base():
            return CartPoleEnv(seed=0)

        action = torch.tensor(1)
    base = make_base()
    transformed = TransformedEnv(
        make_base(),
        Compose(
            StepCounter(),
            RewardSum(),
            ObservationNorm(loc=0.0, scale=1.0, in_keys=["observation"]),
            DoubleToFloat(),
            CatFrames(N=4, dim=-1, in_keys=["observation"]),
        ),
    )
    if impl == "torchrl":
        action = base.action_spec.zero()
        action[..., 1] = 1
    return base, transformed, action


def _loop(env, td, action, steps: int):
    for _ in range(steps):
        td["action"] = action
        _, td = env.step_and_maybe_reset(td)
    return td


def _step_times(base, transformed, action) -> tuple[float, float]:
    """Microseconds per ``step_and_maybe_reset`` of both envs: best of REPEATS interleaved loops.

    Interleaving the two envs' loops keeps a change of machine load from biasing one of them.
    """
    envs = (base, transformed)
    tds = [_loop(env, env.reset(), action, 100) for env in envs]  # warm-up
    best = [float("inf"), float("inf")]
    for _ in range(REPEATS):
        for i, env in enumerate(envs):
            start = time.perf_counter()
            tds[i] = _loop(env, tds[i], action, STEPS)
            best[i] = min(best[i], time.perf_counter() - start)
    return best[0] / STEPS * 1e6, best[1] / STEPS * 1e6


def run(impl: str) -> dict[str, float | str]:
    import torch

    torch.set_num_threads(1)
    base, transformed, action = _envs(impl)
    base_t, trans_t = _step_times(base, transformed, action)
    base_name = (
        "torchrl GymEnv('CartPole-v1') (gymnasium)"
        if impl == "torchrl"
        else "torchenv CartPoleEnv (pure torch)"
    )
    return {
        "base_env": base_name,
        "base_us": base_t,
        "transformed_us": trans_t,
        "overhead_us": trans_t - base_t,
    }


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
    print(
        "stack: StepCounter, RewardSum, ObservationNorm, DoubleToFloat, CatFrames(N=4); per step_and_maybe_reset"
    )
    print(f"{'side':9s} {'base env':44s} {'base µs':>9s} {'stack µs':>9s} {'overhead µs':>12s}")
    rows = [("torchenv", ours)] + ([("torchrl", theirs)] if theirs else [])
    for side, r in rows:
        print(
            f"{side:9s} {r['base_env']:44s} {r['base_us']:9.1f} {r['transformed_us']:9.1f} {r['overhead_us']:12.1f}"
        )
    if theirs:
        if ours["overhead_us"] > 0:
            ratio = theirs["overhead_us"] / ours["overhead_us"]
            print(f"overhead ratio (torchrl / torchenv): {ratio:.2f}x")
        else:
            print(
                "torchenv overhead within measurement noise (machine load); rerun on an idle machine"
            )
    sys.stdout.flush()


if __name__ == "__main__":
    main()
