"""torchenv-pettingzoo vs raw PettingZoo vs TorchRL's PettingZooEnv: steps per second.

Tasks: ``mpe/simple_spread_v3`` (parallel, 3 agents, ``max_cycles=25``) and
``classic/tictactoe_v3`` (AEC, action masks). Sides:

- ``raw``: PettingZoo stepped directly: fixed actions (legal ones from the mask for tictactoe),
  a reset when the episode is over, nothing kept;
- ``ours``: ``PettingZooEnv(...).rollout(n, break_when_any_done=False)`` (random actions from the
  action spec, resets included, the whole trajectory kept), and a ``step_and_maybe_reset`` loop
  with a fixed action tensordict (``ours-step``);
- ``raw-policy`` / ``ours-policy`` / ``ours-policy-step`` (parallel tasks): the same small MLP
  (observation -> 64 -> 64 -> action logits, argmax) drives each side. Raw: the agents'
  observations stacked with numpy, one forward pass for all agents, the argmax handed back as a
  dict; ours: a ``TensorDictModule`` reading ``(group, "observation")`` and writing
  ``(group, "action")`` in ``rollout(policy=...)`` and in a ``step_and_maybe_reset`` loop;
  both under ``torch.no_grad()``, as a collector runs;
- ``torchrl``: TorchRL 0.14.1's ``PettingZooEnv`` rollout, run by the python named in
  ``TORCHENV_BENCH_TORCHRL_PYTHON`` (a venv with torchrl and PettingZoo 1.24.3, where TorchRL's
  task lookup works); its own raw loop is measured there too (``torchrl-raw``), so that each
  ratio compares sides on the same PettingZoo.

Each of ``--rounds`` rounds (default 5) runs the TorchRL side, ours and raw in turn (alternating
the order), one thread (``torch.set_num_threads(1)``); the report gives the median rate of each.

Run: ``python benchmarks/bench_pettingzoo.py`` (about three minutes with the TorchRL side).
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

TASKS = {
    "mpe/simple_spread_v3": {"parallel": True, "kwargs": {"max_cycles": 25}},
    "classic/tictactoe_v3": {"parallel": False, "kwargs": {}},
}
STEPS = 400
SECONDS = 1.0


def _rate(run, steps_per_call: int, seconds: float = SECONDS) -> float:
    """Steps per second of ``run()`` over about ``seconds`` (after one warm-up call)."""
    run()
    calls, start = 0, time.perf_counter()
    while True:
        run()
        calls += 1
        elapsed = time.perf_counter() - start
        if elapsed > seconds:
            return calls * steps_per_call / elapsed


# --------------------------------------------------------------------------------- raw loops
def _raw_loop(env, parallel: bool):
    import numpy as np

    rng = np.random.default_rng(0)
    if parallel:
        actions = {a: env.action_space(a).sample() for a in env.possible_agents}

        def run():
            for _ in range(STEPS):
                if not env.agents:
                    env.reset()
                env.step({a: actions[a] for a in env.agents})

        return run

    def run_aec():
        for _ in range(STEPS):
            if not env.agents:
                env.reset()
            agent = env.agent_selection
            if env.terminations[agent] or env.truncations[agent]:
                env.step(None)
                continue
            mask = env.observe(agent)["action_mask"]
            env.step(int(rng.choice(np.flatnonzero(mask))))

    return run_aec


def raw(task: str) -> float:
    from torchenv_pettingzoo._tasks import find_task

    spec = TASKS[task]
    env = find_task(task).make(spec["parallel"], dict(spec["kwargs"]))
    env.reset(seed=0)
    return _rate(_raw_loop(env, spec["parallel"]), STEPS)


# ---------------------------------------------------------------------------------- our side
def _ours_env(task: str):
    from torchenv_pettingzoo import PettingZooEnv

    spec = TASKS[task]
    parallel = spec["parallel"]
    return PettingZooEnv(task, parallel=parallel, use_mask=not parallel, seed=0, **spec["kwargs"])


def ours(task: str) -> float:
    env = _ours_env(task)
    return _rate(lambda: env.rollout(STEPS, break_when_any_done=False), STEPS)


def ours_step(task: str) -> float:
    env = _ours_env(task)
    td = env.rand_action(env.reset())
    actions = td.select(*env.action_keys).clone()

    def run():
        nonlocal td
        for _ in range(STEPS):
            if TASKS[task]["parallel"]:
                td.update(actions)
            else:
                env.rand_action(td)  # the legal moves change every turn
            _, td = env.step_and_maybe_reset(td)

    return _rate(run, STEPS)


# -------------------------------------------------------------------- policy in the loop
def _mlp(n_obs: int, n_act: int):
    import torch
    from torch import nn

    torch.manual_seed(0)
    return nn.Sequential(
        nn.Linear(n_obs, 64), nn.Tanh(), nn.Linear(64, 64), nn.Tanh(), nn.Linear(64, n_act)
    )


def raw_policy(task: str) -> float:
    import numpy as np
    import torch

    from torchenv_pettingzoo._tasks import find_task

    spec = TASKS[task]
    env = find_task(task).make(True, dict(spec["kwargs"]))
    agents = list(env.possible_agents)
    net = _mlp(env.observation_space(agents[0]).shape[0], int(env.action_space(agents[0]).n))
    state = {"obs": env.reset(seed=0)[0]}

    def run():
        obs = state["obs"]
        with torch.no_grad():
            for _ in range(STEPS):
                if not env.agents:
                    obs, _ = env.reset()
                live = env.agents
                batch = torch.from_numpy(np.stack([obs[a] for a in live]))
                actions = net(batch).argmax(-1).numpy()
                obs = env.step(dict(zip(live, actions)))[0]
        state["obs"] = obs

    return _rate(run, STEPS)


def _ours_policy_env(task: str):
    from tensordict.nn import TensorDictModule

    env = _ours_env(task)
    (group,) = env.group_map  # simple_spread: one group "agent"
    obs = env.observation_spec[group, "observation"].shape[-1]
    act = int(env.full_action_spec[group, "action"].space.n)
    net = _mlp(obs, act)

    def forward(observation):
        return net(observation).argmax(-1)

    policy = TensorDictModule(
        forward, in_keys=[(group, "observation")], out_keys=[(group, "action")]
    )
    return env, policy


def ours_policy(task: str) -> float:
    import torch

    env, policy = _ours_policy_env(task)

    def run():
        with torch.no_grad():
            env.rollout(STEPS, policy, break_when_any_done=False)

    return _rate(run, STEPS)


def ours_policy_step(task: str) -> float:
    import torch

    env, policy = _ours_policy_env(task)
    state = {"td": env.reset()}

    def run():
        td = state["td"]
        with torch.no_grad():
            for _ in range(STEPS):
                _, td = env.step_and_maybe_reset(policy(td))
        state["td"] = td

    return _rate(run, STEPS)


# ---------------------------------------------------------------------------- TorchRL's side
def torchrl_side(task: str) -> dict[str, float]:
    """TorchRL's PettingZooEnv rollout and the raw loop, both on this venv's PettingZoo."""
    import importlib

    import torch
    from torchrl.envs.libs.pettingzoo import PettingZooEnv, PettingZooWrapper

    torch.set_num_threads(1)
    spec = TASKS[task]
    parallel = spec["parallel"]
    family, module = task.split("/")
    mod = importlib.import_module(f"pettingzoo.{family}.{module}")
    if parallel:
        env = PettingZooEnv(module, parallel=True, seed=0, **spec["kwargs"])
    else:
        # TorchRL's task lookup imports every classic game (chess, rlcard...): wrap the env
        env = PettingZooWrapper(mod.env(**spec["kwargs"]), use_mask=True, seed=0)
    env.set_seed(0)
    torchrl = _rate(lambda: env.rollout(STEPS, break_when_any_done=False), STEPS)
    pz = mod.parallel_env(**spec["kwargs"]) if parallel else mod.env(**spec["kwargs"])
    pz.reset(seed=0)
    return {"torchrl": torchrl, "torchrl-raw": _rate(_raw_loop(pz, parallel), STEPS)}


def _run_torchrl(task: str) -> dict[str, float] | None:
    python = os.environ.get("TORCHENV_BENCH_TORCHRL_PYTHON")
    if not python or not os.path.exists(python):
        return None
    proc = subprocess.run(
        [python, os.path.abspath(__file__), "--impl", "torchrl", "--task", task],
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    if proc.returncode:
        print(f"TorchRL side failed for {task}:\n{proc.stderr[-1500:]}", file=sys.stderr)
        return None
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--impl", choices=["all", "torchrl"], default="all")
    parser.add_argument("--task", choices=list(TASKS), default=None)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    if args.impl == "torchrl":
        print(json.dumps(torchrl_side(args.task)))
        return
    import pettingzoo
    import torch

    torch.set_num_threads(1)
    print(
        f"pettingzoo {pettingzoo.__version__}, torch {torch.__version__}, 1 thread, "
        f"{args.rounds} rounds (medians), {STEPS} steps per call"
    )
    for task in [args.task] if args.task else list(TASKS):
        rates: dict[str, list[float]] = {}
        sides = {"raw": raw, "ours": ours, "ours-step": ours_step}
        if TASKS[task]["parallel"]:
            sides.update(
                {
                    "raw-policy": raw_policy,
                    "ours-policy": ours_policy,
                    "ours-policy-step": ours_policy_step,
                }
            )
        for r in range(args.rounds):
            trl = _run_torchrl(task)
            for key, value in (trl or {}).items():
                rates.setdefault(key, []).append(value)
            order = list(sides) if r % 2 == 0 else list(reversed(sides))
            for name in order:
                rates.setdefault(name, []).append(sides[name](task))
        med = {k: statistics.median(v) for k, v in rates.items()}
        print(f"\n{task}")
        for name, value in med.items():
            spread = f"{min(rates[name]):,.0f}-{max(rates[name]):,.0f}"
            print(f"  {name:16s} {value:>10,.0f} steps/s   (rounds: {spread})")
        print(f"  ours / raw           {med['ours'] / med['raw']:.2f}")
        print(f"  ours-step / raw      {med['ours-step'] / med['raw']:.2f}")
        if "raw-policy" in med:
            for name in ("ours-policy", "ours-policy-step"):
                print(f"  {name} / raw-policy".ljust(35) + f"{med[name] / med['raw-policy']:.2f}")
        if "torchrl" in med:
            print(f"  torchrl / its raw    {med['torchrl'] / med['torchrl-raw']:.2f}")
            print(f"  ours / torchrl       {med['ours'] / med['torchrl']:.2f}")


if __name__ == "__main__":
    main()
