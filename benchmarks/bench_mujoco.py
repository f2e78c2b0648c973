"""torchenv-mujoco vs gymnasium vs envpool vs bare ``mujoco.batch``: HalfCheetah steps per second.

All sides in one run, each measured in turn, ``--repeats`` rounds (default 3), median kept
(the machine is shared: noisy). One env step = 5 ``mj_step`` (HalfCheetah's frame skip).

* gymnasium ``HalfCheetah-v5``, one env, a plain ``step`` loop (reset when done);
* gymnasium ``SyncVectorEnv`` of 64 (``make_vec(..., vectorization_mode="sync")``);
* envpool ``HalfCheetah-v5`` at 64 (where envpool imports: its interpreter is named by
  ``TORCHENV_BENCH_ENVPOOL_PYTHON``; reported as missing otherwise);
* bare ``mujoco.batch.Batch`` of 64 / 1024 with 1 and 2 threads: write controls, ``step(nstep=5)``;
  nothing else (the floor of any wrapper);
* ours, ``MujocoEnv("HalfCheetah", num_envs=N, num_threads=T)`` for N in 1/64/1024, T in 1/2:
  ``rollout`` with a fixed action (the direct path), and, with a policy in the loop (a 2-layer
  MLP, torch), ``step_and_maybe_reset``;
* TorchRL 0.14.1's ``GymEnv("HalfCheetah-v5")``, one env and ``num_envs=64`` (gymnasium's vector
  env), the same MLP policy loop, in the interpreter ``TORCHENV_BENCH_TORCHRL_PYTHON`` names
  (TorchRL pins its own tensordict: a separate venv).

Run: ``python benchmarks/bench_mujoco.py`` (about 3 minutes; ``--quick`` for a shorter one).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import time
import warnings

warnings.filterwarnings("ignore")
FRAME_SKIP = 5


def _rate(run, steps_per_call: int, seconds: float) -> float:
    run()  # warm up
    calls, start = 0, time.perf_counter()
    while True:
        run()
        calls += 1
        elapsed = time.perf_counter() - start
        if elapsed > seconds:
            return calls * steps_per_call / elapsed


# ------------------------------------------------------------------------------- gymnasium
def gym_single(seconds: float) -> float:
    import gymnasium as gym
    import numpy as np

    env = gym.make("HalfCheetah-v5")
    env.reset(seed=0)
    action = np.full(env.action_space.shape, 0.1, np.float32)

    def run():
        for _ in range(100):
            _, _, term, trunc, _ = env.step(action)
            if term or trunc:
                env.reset()

    return _rate(run, 100, seconds)


def gym_sync(n: int, seconds: float) -> float:
    import gymnasium as gym
    import numpy as np

    env = gym.make_vec("HalfCheetah-v5", num_envs=n, vectorization_mode="sync")
    env.reset(seed=0)
    action = np.full(env.action_space.shape, 0.1, np.float32)

    def run():
        for _ in range(10):
            env.step(action)

    return _rate(run, 10 * n, seconds)


ENVPOOL_CODE = """
import json, sys, time, numpy as np, envpool
n, seconds = int(sys.argv[1]), float(sys.argv[2])
env = envpool.make_gymnasium("HalfCheetah-v5", num_envs=n, batch_size=n, num_threads=2)
env.reset()
action = np.full((n, 6), 0.1, np.float32)
for _ in range(10): env.step(action)
calls, start = 0, time.perf_counter()
while time.perf_counter() - start < seconds:
    env.step(action); calls += 1
print(json.dumps(calls * n / (time.perf_counter() - start)))
"""


def envpool_rate(n: int, seconds: float) -> float | str:
    python = os.environ.get("TORCHENV_BENCH_ENVPOOL_PYTHON")
    if not python:
        return "not run (TORCHENV_BENCH_ENVPOOL_PYTHON unset)"
    proc = subprocess.run(
        [python, "-c", ENVPOOL_CODE, str(n), str(seconds)], capture_output=True, text=True
    )
    if proc.returncode:
        return "failed: " + (proc.stderr.strip().splitlines() or ["?"])[-1]
    return json.loads(proc.stdout)


# ------------------------------------------------------------------------------- bare batch
def bare_batch(n: int, threads: int, seconds: float) -> float:
    """Controls written, ``step(nstep=5)``; every 1000 steps a reset to HalfCheetah's initial
    distribution (as the env does: a sim left running drifts into states that step at another
    speed)."""
    import numpy as np
    from mujoco.batch import Batch

    from torchenv_mujoco._assets import asset_path, load_spec

    model = load_spec(asset_path("half_cheetah.xml")).compile()
    batch = Batch(model, n, nthread=threads)
    ctrl, qpos, qvel = batch.bind("ctrl"), batch.bind("qpos"), batch.bind("qvel")
    action = np.full((n, model.nu), 0.1)
    rng = np.random.default_rng(0)
    state = {"steps": 0}

    def reset():
        batch.reset()
        qpos[:] = model.qpos0 + rng.uniform(-0.1, 0.1, (n, model.nq))
        qvel[:] = 0.1 * rng.standard_normal((n, model.nv))
        batch.forward()

    reset()

    def run():
        for _ in range(10):
            ctrl[:] = action
            batch.step(nstep=FRAME_SKIP)
        state["steps"] += 10
        if state["steps"] >= 1000:
            state["steps"] = 0
            reset()

    return _rate(run, 10 * n, seconds)


# ------------------------------------------------------------------------------- ours
def ours_rollout(n: int, threads: int, seconds: float) -> float:
    import torch

    from torchenv_mujoco import MujocoEnv

    env = MujocoEnv("HalfCheetah", num_envs=n, num_threads=threads)
    action = torch.full((n, 6), 0.1)
    steps = max(10, 2000 // n)

    def policy(td):
        return td.set("action", action)

    def run():
        env.rollout(steps, policy, break_when_any_done=False)

    return _rate(run, steps * n, seconds)


def _policy_rate(env, n: int, seconds: float) -> float:
    """``step_and_maybe_reset`` with a 2-layer MLP (torch) choosing the actions: the collector loop."""
    import torch

    obs_dim = env.observation_spec["observation"].shape[-1]
    act_dim = env.action_spec.shape[-1]
    net = torch.nn.Sequential(
        torch.nn.Linear(obs_dim, 64), torch.nn.Tanh(), torch.nn.Linear(64, act_dim), torch.nn.Tanh()
    )
    act_dtype = env.action_spec.dtype
    steps = max(10, 2000 // n)
    state = {"td": env.reset()}

    @torch.no_grad()
    def run():
        td = state["td"]
        for _ in range(steps):
            td["action"] = net(td["observation"].float()).to(act_dtype)
            _, td = env.step_and_maybe_reset(td)
        state["td"] = td

    return _rate(run, steps * n, seconds)


def ours_policy(n: int, threads: int, seconds: float) -> float:
    from torchenv_mujoco import MujocoEnv

    return _policy_rate(MujocoEnv("HalfCheetah", num_envs=n, num_threads=threads), n, seconds)


def torchrl_policy(n: int, seconds: float) -> float:
    """TorchRL 0.14.1's ``GymEnv("HalfCheetah-v5")``: one env, or gymnasium's vector env of ``n``."""
    from torchrl.envs import GymEnv

    env = GymEnv("HalfCheetah-v5") if n == 1 else GymEnv("HalfCheetah-v5", num_envs=n)
    return _policy_rate(env, n, seconds)


def torchrl_side(seconds: float) -> dict[str, float] | str:
    """The TorchRL rows, run in the interpreter ``$TORCHENV_BENCH_TORCHRL_PYTHON`` names."""
    python = os.environ.get("TORCHENV_BENCH_TORCHRL_PYTHON")
    if not python:
        return "not run (TORCHENV_BENCH_TORCHRL_PYTHON unset)"
    proc = subprocess.run(
        [python, os.path.abspath(__file__), "--torchrl", "--seconds", str(seconds)],
        capture_output=True,
        text=True,
    )
    if proc.returncode:
        return "failed: " + (proc.stderr.strip().splitlines() or ["?"])[-1]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=1.0)
    parser.add_argument("--quick", action="store_true", help="fewer cases, one round")
    parser.add_argument("--torchrl", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    import torch

    torch.set_num_threads(1)
    if args.torchrl:  # the TorchRL side, in TorchRL's interpreter: one JSON line
        rates = {
            f"TorchRL GymEnv + MLP policy, {n} env(s)": torchrl_policy(n, args.seconds)
            for n in (1, 64)
        }
        print(json.dumps(rates))
        return
    sizes = (1, 64) if args.quick else (1, 64, 1024)
    cases = {
        "gymnasium HalfCheetah-v5, 1 env": lambda s: gym_single(s),
        "gymnasium SyncVectorEnv, 64": lambda s: gym_sync(64, s),
    }
    for n in sizes[1:]:
        for t in (1, 2):
            cases[f"bare mujoco.batch, {n} envs, {t} thr"] = lambda s, n=n, t=t: bare_batch(n, t, s)
    for n in sizes:
        for t in (1, 2):
            cases[f"ours rollout, {n} envs, {t} thr"] = lambda s, n=n, t=t: ours_rollout(n, t, s)
    for n in sizes[1:]:
        for t in (1, 2):
            cases[f"ours + MLP policy, step_and_maybe_reset, {n} envs, {t} thr"] = (
                lambda s, n=n, t=t: ours_policy(n, t, s)
            )
    rounds = 1 if args.quick else args.repeats
    results: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(rounds):  # sides alternate within every round
        for name, case in cases.items():
            results[name].append(case(args.seconds))
        trl = torchrl_side(args.seconds)
        if isinstance(trl, dict):
            for name, rate in trl.items():
                results.setdefault(name, []).append(rate)
    med = {name: statistics.median(v) for name, v in results.items() if v}
    for name, rate in med.items():
        print(f"{name:<62} {rate:>12,.0f} env-steps/s")
    if not isinstance(trl, dict):
        print(f"{'TorchRL GymEnv + MLP policy':<62} {trl}")
    print(f"{'envpool HalfCheetah-v5, 64 envs, 2 thr':<62} {envpool_rate(64, args.seconds)}")
    ours = med["ours rollout, 64 envs, 2 thr"]
    print(f"ours 64/2thr vs gymnasium 1 env: {ours / med['gymnasium HalfCheetah-v5, 1 env']:.2f}x")
    print(
        f"ours 64/2thr vs bare mujoco.batch 64/2thr: {ours / med['bare mujoco.batch, 64 envs, 2 thr']:.1%}"
    )
    print(
        f"ours 64/2thr vs gymnasium SyncVectorEnv 64: {ours / med['gymnasium SyncVectorEnv, 64']:.2f}x"
    )
    mlp = med["ours + MLP policy, step_and_maybe_reset, 64 envs, 2 thr"]
    for n in (1, 64):
        trl_rate = med.get(f"TorchRL GymEnv + MLP policy, {n} env(s)")
        if trl_rate:
            print(f"ours + MLP 64/2thr vs TorchRL GymEnv + MLP at {n}: {mlp / trl_rate:.2f}x")


if __name__ == "__main__":
    main()
