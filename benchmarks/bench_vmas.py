"""VMAS side by side: raw VMAS, TorchRL 0.14.1's ``VmasEnv`` and ours (``torchenv_vmas.VmasEnv``).

Scenarios ``balance`` (3 agents) and ``navigation`` (4 agents), 32 and 1024 envs, one torch thread
(``torch.set_num_threads(1)``), two loops per side:

* ``step``: ``env.step`` with a fixed action (raw VMAS: the list of per-agent tensors; the
  TorchRL and torchenv envs: the TensorDict with ``(group, "action")``);
* ``policy``: a small torch policy (a linear layer + tanh on the observations) in the loop with
  auto-resets: ``step_and_maybe_reset`` for the TorchRL and torchenv envs; for raw VMAS the same
  policy, ``env.step`` and ``reset_at`` of every done sub-env (what a user of VMAS writes).

Each side is timed against raw VMAS in the same process, in alternating chunks (``--chunks``
of ``--seconds / --chunks`` each, after a warm-up), so the load of a shared machine hits both
alike; the medians of the chunks are printed with the ours/raw and TorchRL/raw ratios. TorchRL's
side runs in its own venv (TorchRL pins another tensordict: ``$TORCHENV_BENCH_TORCHRL_PYTHON``),
against its own interleaved raw VMAS. Run:

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


def _chunk(fn, seconds: float) -> float:
    """Time per call of ``fn`` over a chunk of about ``seconds`` (whole blocks of calls)."""
    n, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        for _ in range(STEPS_PER_CHECK):
            fn()
        n += STEPS_PER_CHECK
    return (time.perf_counter() - start) / n


def _interleaved(fns: dict, seconds: float, chunks: int) -> dict[str, float]:
    """Median time per call of each function, timed in alternating chunks (the machine's load
    changes hit every side alike): ``chunks`` chunks of ``seconds / chunks`` each."""
    for fn in fns.values():  # warm-up
        for _ in range(STEPS_PER_CHECK):
            fn()
    times: dict[str, list[float]] = {name: [] for name in fns}
    names = list(fns)
    for c in range(chunks):
        for name in names if c % 2 == 0 else names[::-1]:
            times[name].append(_chunk(fns[name], seconds / chunks))
    return {name: statistics.median(ts) for name, ts in times.items()}


def _policy(obs_dim: int, act_dim: int) -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(obs_dim, act_dim), torch.nn.Tanh())


def raw_side(scenario: str, num_envs: int, mode: str):
    import vmas

    env = vmas.make_env(scenario, num_envs=num_envs, seed=0, terminated_truncated=True)
    env.reset()
    n = env.n_agents
    if mode == "step":
        actions = [torch.zeros(num_envs, 2) for _ in range(n)]

        def step():
            env.step(actions)

        return step
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

    return step


def td_side(env_cls, scenario: str, num_envs: int, mode: str):
    env = env_cls(scenario, num_envs=num_envs, seed=0)
    td = env.reset()
    if mode == "step":
        td["agents", "action"] = torch.zeros(num_envs, env.n_agents, 2)

        def step():
            env.step(td)

        return step
    policy = _policy(td["agents", "observation"].shape[-1], 2)
    state = {"td": td}

    @torch.no_grad()
    def step():
        data = state["td"]
        data["agents", "action"] = policy(data["agents", "observation"])
        _, state["td"] = env.step_and_maybe_reset(data)

    return step


def measure(impl: str, seconds: float, chunks: int) -> dict[str, dict[str, float]]:
    """Per config, the median time per step of raw VMAS and of ``impl``, interleaved."""
    if impl == "torchrl":
        from torchrl.envs import VmasEnv
    else:
        from torchenv_vmas import VmasEnv
    out = {}
    for scenario in SCENARIOS:
        for num_envs in SIZES:
            for mode in MODES:
                fns = {
                    "raw": raw_side(scenario, num_envs, mode),
                    impl: td_side(VmasEnv, scenario, num_envs, mode),
                }
                out[f"{scenario}/{num_envs}/{mode}"] = _interleaved(fns, seconds, chunks)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=3.0, help="per side and config")
    parser.add_argument("--chunks", type=int, default=9, help="alternating chunks per side")
    parser.add_argument("--impl", choices=["torchrl", "ours"], default=None)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(1)
    if args.impl is not None:  # one side against raw VMAS (the TorchRL subprocess)
        result = measure(args.impl, args.seconds, args.chunks)
        print(json.dumps(result) if args.json else result)
        return
    import vmas
    from _torchrl_side import torchrl_results

    print(
        f"vmas {vmas.__version__}, torch {torch.__version__}, 1 thread; per config and side "
        f"{args.seconds:.1f} s in {args.chunks} chunks alternating with raw VMAS; medians"
    )
    ours = measure("ours", args.seconds, args.chunks)
    trl = torchrl_results(__file__, "--seconds", str(args.seconds), "--chunks", str(args.chunks))
    head = f"{'scenario/num_envs/loop':26s} {'raw us':>8s} {'ours us':>8s} {'ours/raw':>8s}"
    if trl:
        head += f" {'raw us':>8s} {'trl us':>8s} {'trl/raw':>8s}"
    print(head)
    for key, r in ours.items():
        line = f"{key:26s} {r['raw'] * 1e6:8.0f} {r['ours'] * 1e6:8.0f} {r['raw'] / r['ours']:8.1%}"
        if trl:
            t = trl[key]
            line += (
                f" {t['raw'] * 1e6:8.0f} {t['torchrl'] * 1e6:8.0f} {t['raw'] / t['torchrl']:8.1%}"
            )
        print(line)
    print(
        "x/raw = raw VMAS time / x time per step, each side against raw VMAS timed interleaved in "
        "its own process (TorchRL's in its venv): 100% = as fast as raw"
    )


if __name__ == "__main__":
    main()
