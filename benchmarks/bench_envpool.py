"""torchenv-envpool vs envpool's own numpy API vs TorchRL's MultiThreadedEnv; Atari via envpool vs
our ParallelEnv over gymnasium's ALE. Env steps per second, a policy in the loop on every side.

All sides in one run, measured in turn within each of ``--repeats`` rounds (default 3), median
kept (the machine is shared: noisy; compare the ratios, printed at the end).

* raw: ``pool = envpool.make(task, env_type="gymnasium", num_envs=N, num_threads=2)``; the loop
  ``obs -> torch.from_numpy -> policy -> .numpy() -> pool.step`` (envpool resets ended envs by
  itself on the next step);
* ours: ``MultiThreadedEnv(N, task, create_env_kwargs={"num_threads": 2})``, the collector loop
  ``td["action"] = policy(td["observation"]); _, td = env.step_and_maybe_reset(td)``;
* TorchRL 0.14.1's ``MultiThreadedEnv(N, task, create_env_kwargs={"num_threads": 2})``, the same
  loop, in ``$TORCHENV_BENCH_TORCHRL_PYTHON`` (TorchRL pins its own tensordict; its
  MultiThreadedEnv makes envpool pools with ``env_type="gym"``, which envpool >= 1.0 dropped:
  that python needs envpool < 1.0, numpy < 2, gym and treevalue);
* Atari: ours over envpool ``Pong-v5`` vs ``ParallelEnv(N, make("gymnasium:ALE/Pong-v5",
  frameskip=4))`` (worker processes), the same policy, at the same N.

Policies: HalfCheetah, a 2-layer MLP (64 tanh units); Pong, a linear layer over every 8th pixel
of the frame stack and an argmax (cheap: the env side dominates, as in an Atari collector).

Run: ``python benchmarks/bench_envpool.py`` (about 6 minutes; ``--quick``: one round, 64 envs).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import warnings

warnings.filterwarnings("ignore")
TASKS = ("Pong-v5", "HalfCheetah-v5")
THREADS = 2


def make_policy(task: str, obs_shape: tuple, act_dim: int):
    import torch

    torch.manual_seed(0)
    if task == "Pong-v5":
        pix = torch.zeros(obs_shape)[..., ::8, ::8].numel()
        lin = torch.nn.Linear(pix, act_dim)

        def policy(obs):
            return lin(obs[..., ::8, ::8].flatten(1).float()).argmax(-1)

        return policy
    net = torch.nn.Sequential(
        torch.nn.Linear(obs_shape[-1], 64),
        torch.nn.Tanh(),
        torch.nn.Linear(64, act_dim),
        torch.nn.Tanh(),
    )
    return lambda obs: net(obs.float())


def _rate(step, n: int, seconds: float) -> float:
    """Env steps per second of ``step`` (one call steps ``n`` envs), over ``seconds``."""
    step()  # warm up
    calls, start = 0, time.perf_counter()
    while True:
        step()
        calls += 1
        elapsed = time.perf_counter() - start
        if elapsed > seconds:
            return calls * n / elapsed


def _has_gymnasium() -> bool:
    import importlib.util

    return importlib.util.find_spec("gymnasium") is not None


def raw_rate(task: str, n: int, seconds: float) -> float:
    import envpool
    import numpy as np
    import torch

    env_type = "gymnasium" if _has_gymnasium() else "gym"  # TorchRL's venv: envpool < 1, gym
    pool = envpool.make(
        task,
        env_type=env_type,
        num_envs=n,
        num_threads=THREADS,
        seed=0,
        gym_reset_return_info=True,
    )
    space = pool.spec.action_space
    discrete = type(space).__name__ == "Discrete"
    policy = make_policy(
        task, pool.spec.observation_space.shape, space.n if discrete else space.shape[0]
    )
    state = {"obs": pool.reset()[0]}

    @torch.no_grad()
    def step():
        action = policy(torch.from_numpy(state["obs"])).numpy()
        state["obs"] = pool.step(action.astype(np.int32) if discrete else action)[0]

    rate = _rate(step, n, seconds)
    pool.close()
    return rate


def _env_rate(env, task: str, n: int, seconds: float) -> float:
    import torch

    space = env.action_spec
    discrete = not space.dtype.is_floating_point
    act_dim = int(space.n) if discrete else space.shape[-1]
    obs_shape = tuple(env.observation_spec["observation"].shape[1:])
    policy = make_policy(task, obs_shape, act_dim)
    state = {"td": env.reset()}

    @torch.no_grad()
    def step():
        td = state["td"]
        td["action"] = policy(td["observation"])
        state["td"] = env.step_and_maybe_reset(td)[1]

    rate = _rate(step, n, seconds)
    env.close()
    return rate


def ours_rate(task: str, n: int, seconds: float) -> float:
    from torchenv_envpool import MultiThreadedEnv

    env = MultiThreadedEnv(n, task, create_env_kwargs={"num_threads": THREADS, "seed": 0})
    return _env_rate(env, task, n, seconds)


def torchrl_rate(task: str, n: int, seconds: float) -> float:
    from torchrl.envs import MultiThreadedEnv

    env = MultiThreadedEnv(n, task, create_env_kwargs={"num_threads": THREADS, "seed": 0})
    return _env_rate(env, task, n, seconds)


def parallel_ale_rate(n: int, seconds: float) -> float:
    import torch

    import torchenv
    from torchenv.batched import ParallelEnv

    env = ParallelEnv(n, lambda: torchenv.make("gymnasium:ALE/Pong-v5", frameskip=4))
    torch.manual_seed(0)
    lin = torch.nn.Linear(27 * 20 * 3, 6)  # every 8th pixel of a 210x160 RGB frame
    state = {"td": env.reset()}

    @torch.no_grad()
    def step():
        td = state["td"]
        frames = td["observation"][:, ::8, ::8].flatten(1).float()
        index = lin(frames).argmax(-1)
        td["action"] = torch.nn.functional.one_hot(index, 6)
        state["td"] = env.step_and_maybe_reset(td)[1]

    rate = _rate(step, n, seconds)
    env.close()
    return rate


def torchrl_side(sizes: tuple[int, ...], seconds: float) -> dict[str, float] | str:
    python = os.environ.get("TORCHENV_BENCH_TORCHRL_PYTHON")
    if not python:
        return "not run (TORCHENV_BENCH_TORCHRL_PYTHON unset)"
    args = [python, os.path.abspath(__file__), "--torchrl", "--seconds", str(seconds)]
    args += ["--sizes", *map(str, sizes)]
    proc = subprocess.run(args, capture_output=True, text=True)
    if proc.returncode:
        return "failed: " + (proc.stderr.strip().splitlines() or ["?"])[-1]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=1.5)
    parser.add_argument("--sizes", type=int, nargs="+", default=[64, 256])
    parser.add_argument("--atari-envs", type=int, default=8)
    parser.add_argument("--quick", action="store_true", help="one round, 64 envs")
    parser.add_argument("--torchrl", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    import torch

    torch.set_num_threads(1)
    sizes = (64,) if args.quick else tuple(args.sizes)
    if args.torchrl:  # TorchRL's side, in TorchRL's interpreter: one JSON line
        import envpool

        rates = {}
        for task in TASKS:
            # envpool < 1.0 (what TorchRL's env_type="gym" needs) has HalfCheetah-v4, not -v5
            name = task if task in envpool.list_all_envs() else task.replace("-v5", "-v4")
            for n in sizes:
                try:
                    rates[f"torchrl {task} {n}"] = torchrl_rate(name, n, args.seconds)
                    rates[f"raw envpool {envpool.__version__} {task} {n}"] = raw_rate(
                        name, n, args.seconds
                    )
                except Exception as err:  # reported, not fatal: "where TorchRL runs it"
                    print(f"torchrl {task} {n}: {err!r}", file=sys.stderr)
        print(json.dumps(rates))
        return
    cases = {}
    for task in TASKS:
        for n in sizes:
            cases[f"raw {task} {n}"] = lambda s, t=task, n=n: raw_rate(t, n, s)
            cases[f"ours {task} {n}"] = lambda s, t=task, n=n: ours_rate(t, n, s)
    a = args.atari_envs
    cases[f"ours Pong-v5 {a}"] = lambda s: ours_rate("Pong-v5", a, s)
    cases[f"ParallelEnv ALE/Pong-v5 {a}"] = lambda s: parallel_ale_rate(a, s)
    rounds = 1 if args.quick else args.repeats
    results: dict[str, list[float]] = {name: [] for name in cases}
    trl: dict | str = "not run"
    failures: dict[str, str] = {}
    for r in range(rounds):  # sides alternate: the order flips every round
        names = list(cases) if r % 2 == 0 else list(reversed(cases))
        for name in names:
            try:
                results[name].append(cases[name](args.seconds))
            except Exception as err:  # reported, the other sides still run
                failures[name] = f"failed: {err!r}"
        trl = torchrl_side(sizes, args.seconds)
        if isinstance(trl, dict):
            for name, rate in trl.items():
                results.setdefault(name, []).append(rate)
    med = {name: statistics.median(v) for name, v in results.items() if v}
    print(f"torch threads 1, envpool num_threads {THREADS}, {rounds} round(s), median env-steps/s")
    for name, rate in med.items():
        print(f"  {name:<40} {rate:>12,.0f}")
    if not isinstance(trl, dict):
        print(f"  TorchRL MultiThreadedEnv: {trl}")
    print("ratios (same run):")
    for task in TASKS:
        for n in sizes:
            ours = med[f"ours {task} {n}"]
            print(f"  ours / envpool raw, {task}, {n} envs: {ours / med[f'raw {task} {n}']:.3f}")
            trl_rate = med.get(f"torchrl {task} {n}")
            trl_raw = [
                v
                for k, v in med.items()
                if k.startswith("raw envpool") and k.endswith(f"{task} {n}")
            ]
            if trl_rate:
                print(
                    f"  ours / TorchRL MultiThreadedEnv, {task}, {n} envs: {ours / trl_rate:.2f}x"
                )
            if trl_rate and trl_raw:
                # TorchRL runs on another envpool version: each side over its own raw envpool
                print(
                    f"    each over its own raw envpool: ours {ours / med[f'raw {task} {n}']:.3f}, "
                    f"TorchRL {trl_rate / trl_raw[0]:.3f}"
                )
    for name, why in failures.items():
        print(f"  {name}: {why}")
    if f"ParallelEnv ALE/Pong-v5 {a}" in med:
        ratio = med[f"ours Pong-v5 {a}"] / med[f"ParallelEnv ALE/Pong-v5 {a}"]
        print(f"  ours envpool Pong / ParallelEnv over gymnasium ALE/Pong, {a} envs: {ratio:.2f}x")


if __name__ == "__main__":
    main()
