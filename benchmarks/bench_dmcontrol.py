"""torchenv-dmcontrol vs raw dm_control vs TorchRL's DMControlEnv: steps per second, side by side.

Task: cheetah/run (1000-step episodes, resets included). Cases:

* ``single``: one env. Raw: ``env.step`` with a uniform random numpy action drawn per step,
  ``env.reset`` at the end of an episode. Ours / TorchRL: ``env.rollout(N, break_when_any_done=False)`` with random actions
  drawn from the action spec.
* ``policy``: a policy in the loop (a small torch MLP on the concatenated observations). Raw:
  observations → torch → policy → numpy → ``env.step``. Ours / TorchRL: ``step_and_maybe_reset``.
* ``parallel2``: ``ParallelEnv(2)`` rollouts (steps of both workers counted); raw: two envs
  stepped in turn in one process (no parallelism: the reference for per-step cost).

Each of ``--repeats`` rounds (default 5) runs every side in turn (TorchRL, ours, raw,
alternating order per round); the medians are reported, since the machine is shared.
TorchRL runs in the interpreter named by ``$TORCHENV_BENCH_TORCHRL_PYTHON`` (a venv with
``torchrl==0.14.1 dm_control==1.0.50 mujoco==3.17.0``); without it that side is skipped.

Run: ``TORCHENV_BENCH_TORCHRL_PYTHON=/work/venv-trl-dmc/bin/python python benchmarks/bench_dmcontrol.py``
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
import warnings

warnings.filterwarnings("ignore")
os.environ.setdefault("MUJOCO_GL", "egl")

DOMAIN, TASK = "cheetah", "run"
STEPS = {"single": 3000, "policy": 2000, "parallel2": 2000}
CASES = tuple(STEPS)


def _timed(fn, steps: int) -> float:
    start = time.perf_counter()
    fn()
    return steps / (time.perf_counter() - start)


def _policy_module():
    import torch

    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(17, 64), torch.nn.Tanh(), torch.nn.Linear(64, 6))


# ------------------------------------------------------------------------------------ raw side
def raw_case(case: str):
    import numpy as np
    import torch
    from dm_control import suite

    n = STEPS[case]
    rng = np.random.default_rng(0)
    action = rng.uniform(-1, 1, 6)
    if case == "single":
        env = suite.load(DOMAIN, TASK)

        def run():
            env.reset()
            step, reset, uniform = env.step, env.reset, rng.uniform
            for _ in range(n):  # random actions, as the rollouts of ours and TorchRL
                if step(uniform(-1.0, 1.0, 6)).step_type == 2:
                    reset()

        return run, n
    if case == "parallel2":
        envs = [suite.load(DOMAIN, TASK) for _ in range(2)]

        def run():
            for env in envs:
                env.reset()
            for _ in range(n // 2):
                for env in envs:
                    if env.step(action).step_type == 2:
                        env.reset()

        return run, n
    env = suite.load(DOMAIN, TASK)
    policy = _policy_module()

    def run():
        obs = env.reset().observation
        with torch.no_grad():
            for _ in range(n):
                x = torch.from_numpy(np.concatenate([obs["position"], obs["velocity"]]))
                act = policy(x.float()).double().numpy()
                ts = env.step(act)
                obs = env.reset().observation if ts.step_type == 2 else ts.observation

    return run, n


# ------------------------------------------------------------------------- ours and TorchRL
def _policy_td(torch):
    policy = _policy_module()

    def act(td):
        x = torch.cat([td["position"], td["velocity"]], -1).float()
        return td.set("action", policy(x).double())

    return act


def env_case(case: str, impl: str):
    import torch

    if impl == "torchrl":
        from torchrl.envs import DMControlEnv, ParallelEnv
    else:
        from torchenv.batched import ParallelEnv
        from torchenv_dmcontrol import DMControlEnv

    n = STEPS[case]
    if case == "parallel2":
        env = ParallelEnv(2, lambda: DMControlEnv(DOMAIN, TASK))
        env.rollout(10, break_when_any_done=False)  # start the workers
        return (lambda: env.rollout(n // 2, break_when_any_done=False)), n, env
    env = DMControlEnv(DOMAIN, TASK)
    if case == "single":
        return (lambda: env.rollout(n, break_when_any_done=False)), n, env
    act = _policy_td(torch)

    def run():
        td = env.reset()
        with torch.no_grad():
            for _ in range(n):
                _, td = env.step_and_maybe_reset(act(td))

    return run, n, env


def measure(impl: str, case: str) -> float:
    if impl == "raw":
        run, n = raw_case(case)
        env = None
    else:
        run, n, env = env_case(case, impl)
    run()  # warm up
    rate = _timed(run, n)
    if env is not None:
        env.close()
    return rate


def _torchrl_round(repeats: int) -> dict | None:
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from _torchrl_side import torchrl_results

    return torchrl_results(__file__, "--repeats", str(repeats))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--impl", choices=["ours", "torchrl"], default="ours")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    import torch
    from absl import logging as absl_logging

    absl_logging.set_verbosity(absl_logging.ERROR)  # dm_control's model-compiler deprecations
    torch.set_num_threads(1)
    if args.impl == "torchrl":  # one TorchRL round per call, printed as JSON
        print(json.dumps({case: measure("torchrl", case) for case in CASES}))
        return
    rates: dict[tuple[str, str], list[float]] = {}
    for r in range(args.repeats):
        trl = _torchrl_round(1)
        for case in CASES:
            if trl is not None:
                rates.setdefault(("torchrl", case), []).append(trl[case])
            order = ("ours", "raw") if r % 2 == 0 else ("raw", "ours")
            for impl in order:
                rates.setdefault((impl, case), []).append(measure(impl, case))
    med = {key: statistics.median(values) for key, values in rates.items()}
    if args.json:
        print(json.dumps({f"{i}/{c}": v for (i, c), v in med.items()}))
        return
    print(f"{DOMAIN}/{TASK}, medians of {args.repeats} rounds, steps/s (torch threads: 1)")
    print(f"{'case':<10} {'raw':>9} {'ours':>9} {'torchrl':>9} {'ours/raw':>9} {'ours/trl':>9}")
    for case in CASES:
        raw, ours = med[("raw", case)], med[("ours", case)]
        trl = med.get(("torchrl", case))
        trl_txt = f"{trl:9.0f}" if trl else f"{'-':>9}"
        ratio = f"{ours / trl:8.1f}x" if trl else f"{'-':>9}"
        print(f"{case:<10} {raw:9.0f} {ours:9.0f} {trl_txt} {ours / raw:9.0%} {ratio}")


if __name__ == "__main__":
    main()
