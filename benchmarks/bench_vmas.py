"""VMAS side by side: raw VMAS, TorchRL 0.14.1's ``VmasEnv`` and ours (``torchenv_vmas.VmasEnv``).

Scenarios ``balance`` (3 agents) and ``navigation`` (4 agents), 32 and 1024 envs, one torch thread
(``torch.set_num_threads(1)``), two loops per side:

* ``step``: ``env.step`` with a fixed action (raw VMAS: the list of per-agent tensors; the
  TorchRL and torchenv envs: the TensorDict with ``(group, "action")``);
* ``policy``: a small torch policy (a linear layer + tanh on the observations) in the loop with
  auto-resets: ``step_and_maybe_reset`` for the TorchRL and torchenv envs; for raw VMAS the same
  policy, ``env.step`` and ``reset_at`` of every done sub-env (what a user of VMAS writes).

Every measurement is the time per step of a loop of ``--seconds`` (after warm-up); the sides
alternate ``--repeats`` times (TorchRL's side runs in its own venv, one subprocess per round,
because TorchRL pins another tensordict: ``$TORCHENV_BENCH_TORCHRL_PYTHON``); the medians are
printed with ours/raw and TorchRL/raw ratios. Run:

    TORCHENV_BENCH_TORCHRL_PYTHON=/path/to/venv/bin/python python benchmarks/bench_vmas.py
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

SCENARIOS = ("balance", "navigation")
SIZES = (32, 1024)
MODES = ("step", "policy")
STEPS_PER_CHECK = 10


def _loop(fn, seconds: float) -> float:
    for _ in range(STEPS_PER_CHECK):
        fn()
    n, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        for _ in range(STEPS_PER_CHECK):
            fn()
        n += STEPS_PER_CHECK
    return (time.perf_counter() - start) / n


def _policy(obs_dim: int, act_dim: int) -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(obs_dim, act_dim), torch.nn.Tanh())


def raw_side(scenario: str, num_envs: int, mode: str, seconds: float) -> float:
    import vmas

    env = vmas.make_env(scenario, num_envs=num_envs, seed=0, terminated_truncated=True)
    env.reset()
    n = env.n_agents
    if mode == "step":
        actions = [torch.zeros(num_envs, 2) for _ in range(n)]

        def step():
            env.step(actions)

        return _loop(step, seconds)
    obs = env.reset()
    policy = _policy(obs[0].shape[-1], 2)
    state = {"obs": obs}

    @torch.no_grad()
    def step():
        actions = [policy(o) for o in state["obs"]]
        obs, _, term, trunc, _ = env.step(actions)
        done = term | trunc
        if done.any():
            for i in done.nonzero().flatten().tolist():
                env.reset_at(i, return_observations=False)
            obs = env.get_from_scenario(True, False, False, False)[0]
        state["obs"] = obs

    return _loop(step, seconds)


def td_side(env_cls, scenario: str, num_envs: int, mode: str, seconds: float) -> float:
    env = env_cls(scenario, num_envs=num_envs, seed=0)
    td = env.reset()
    if mode == "step":
        td["agents", "action"] = torch.zeros(num_envs, env.n_agents, 2)

        def step():
            env.step(td)

        return _loop(step, seconds)
    policy = _policy(td["agents", "observation"].shape[-1], 2)
    state = {"td": td}

    @torch.no_grad()
    def step():
        data = state["td"]
        data["agents", "action"] = policy(data["agents", "observation"])
        _, state["td"] = env.step_and_maybe_reset(data)

    return _loop(step, seconds)


def one_round(impl: str, seconds: float) -> dict[str, float]:
    out = {}
    for scenario in SCENARIOS:
        for num_envs in SIZES:
            for mode in MODES:
                key = f"{scenario}/{num_envs}/{mode}"
                if impl == "raw":
                    out[key] = raw_side(scenario, num_envs, mode, seconds)
                elif impl == "torchrl":
                    from torchrl.envs import VmasEnv

                    out[key] = td_side(VmasEnv, scenario, num_envs, mode, seconds)
                else:
                    from torchenv_vmas import VmasEnv

                    out[key] = td_side(VmasEnv, scenario, num_envs, mode, seconds)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=1.0)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--impl", choices=["raw", "torchrl", "ours"], default=None)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(1)
    if args.impl is not None:  # one side, one round (the TorchRL subprocess)
        result = one_round(args.impl, args.seconds)
        print(json.dumps(result) if args.json else result)
        return
    from _torchrl_side import torchrl_results

    import vmas

    print(f"vmas {vmas.__version__}, torch {torch.__version__}, 1 thread, "
          f"{args.seconds:.1f} s per measurement, {args.repeats} alternating rounds")
    rounds: dict[str, list[dict[str, float]]] = {"raw": [], "torchrl": [], "ours": []}
    for r in range(args.repeats):
        order = ("raw", "ours", "torchrl") if r % 2 == 0 else ("torchrl", "ours", "raw")
        for impl in order:
            if impl == "torchrl":
                res = torchrl_results(__file__, "--seconds", str(args.seconds))
                if res is not None:
                    rounds["torchrl"].append(res)
            else:
                rounds[impl].append(one_round(impl, args.seconds))
    med = {
        impl: {k: statistics.median(r[k] for r in rs) for k in rs[0]}
        for impl, rs in rounds.items()
        if rs
    }
    has_trl = "torchrl" in med
    print(f"{'scenario/num_envs/loop':28s} {'raw us':>9s} {'ours us':>9s} {'ours/raw':>9s}"
          + (f" {'torchrl us':>10s} {'trl/raw':>8s}" if has_trl else ""))
    for key, raw in med["raw"].items():
        ours = med["ours"][key]
        line = f"{key:28s} {raw * 1e6:9.0f} {ours * 1e6:9.0f} {raw / ours:9.1%}"
        if has_trl:
            trl = med["torchrl"][key]
            line += f" {trl * 1e6:10.0f} {raw / trl:8.1%}"
        print(line)
    print("ratios are throughput relative to raw VMAS (raw time / side time): 100% = as fast as raw")


if __name__ == "__main__":
    main()
