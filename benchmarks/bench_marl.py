"""Multi-agent building blocks: the per-step cost of ``MarlLayout`` against hand-written code.

Two simulator shapes, the data of one step turned into the group TensorDict of an env, plus the
actions split back per agent:

* ``torch``: a VMAS-like batched simulator (lists of ``(num_envs, ...)`` tensors: 4 agents,
  observation 18, reward, 3 info entries, a root done), at 32 and 1024 envs. Sides: ``layout``
  (``MarlLayout.output`` + ``split_actions``), ``per_agent_td`` (TorchRL's VmasWrapper way: one
  TensorDict per agent, ``LazyStackedTensorDict.maybe_dense_stack``, ``to_tensordict``) and
  ``stack_only`` (the bare ``torch.stack`` calls and one TensorDict: a floor).
* ``numpy``: a PettingZoo-like simulator (dicts agent -> numpy: 3 agents, observation 18,
  per-agent terminated/truncated, unbatched, one agent absent). Sides: ``layout`` and
  ``zero_clone`` (TorchRL's PettingZooWrapper way: clone a cached zero TensorDict, write each agent
  with ``torch.tensor``).

Sides alternate ``--repeats`` times, median of the per-step times. Run
``python benchmarks/bench_marl.py`` (``--seconds S`` per measurement, ``--repeats N``).
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import torch
from tensordict import LazyStackedTensorDict, TensorDict

from torchenv.envs import MarlGroupMapType, MarlLayout
from torchenv.specs import Bounded, Categorical, Composite, Unbounded

AGENTS4 = [f"agent_{i}" for i in range(4)]
INFO = ("pos_rew", "final_rew", "agent_collisions")


def _time(fn, seconds: float) -> float:
    for _ in range(20):
        fn()
    n, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        for _ in range(20):
            fn()
        n += 20
    return (time.perf_counter() - start) / n


def torch_sides(num_envs: int) -> dict:
    layout = MarlLayout(
        AGENTS4,
        MarlGroupMapType.ALL_IN_ONE_GROUP,
        observation_specs={a: Unbounded((18,)) for a in AGENTS4},
        action_specs={a: Bounded(-1.0, 1.0, (2,)) for a in AGENTS4},
        info_specs={a: Composite({k: Unbounded((1,)) for k in INFO}) for a in AGENTS4},
        done="root",
        truncated=False,
        batch_size=(num_envs,),
    )
    obs = [torch.randn(num_envs, 18) for _ in AGENTS4]
    rew = [torch.randn(num_envs) for _ in AGENTS4]
    info = [{k: torch.randn(num_envs) for k in INFO} for _ in AGENTS4]
    done = torch.zeros(num_envs, dtype=torch.bool)
    action_td = layout.full_action_spec.rand()
    batch = torch.Size([num_envs])

    def layout_side():
        layout.split_actions(action_td)
        return layout.output(
            {"observation": obs, "reward": rew, "info": info}, {"done": done, "terminated": done}
        )

    def per_agent_td():
        action_td.get(("agents", "action")).unbind(1)
        tds = []
        for i in range(len(AGENTS4)):
            agent = TensorDict(
                {"observation": obs[i], "reward": rew[i].unsqueeze(-1)}, batch_size=batch
            )
            agent.set(
                "info",
                TensorDict({k: v.unsqueeze(-1) for k, v in info[i].items()}, batch_size=batch),
            )
            tds.append(agent)
        group = LazyStackedTensorDict.maybe_dense_stack(tds, dim=1).to_tensordict()
        d = done.unsqueeze(-1)
        return TensorDict({"agents": group, "done": d, "terminated": d.clone()}, batch_size=batch)

    def stack_only():
        action_td.get(("agents", "action")).unbind(1)
        group = TensorDict(
            {
                "observation": torch.stack(obs, 1),
                "reward": torch.stack(rew, 1).unsqueeze(-1),
                "info": {k: torch.stack([i[k] for i in info], 1).unsqueeze(-1) for k in INFO},
            },
            batch_size=(num_envs, len(AGENTS4)),
        )
        d = done.unsqueeze(-1)
        return TensorDict({"agents": group, "done": d, "terminated": d.clone()}, batch_size=batch)

    a, b = layout_side(), per_agent_td()
    for key in b.keys(True, True):
        assert torch.equal(a.get(key), b.get(key)), key
    return {"layout": layout_side, "per_agent_td": per_agent_td, "stack_only": stack_only}


def numpy_sides() -> dict:
    agents = ["agent_0", "agent_1", "agent_2"]
    layout = MarlLayout(
        agents,
        observation_specs={a: Unbounded((18,)) for a in agents},
        action_specs={a: Categorical(5) for a in agents},
        agent_mask=True,
    )
    rng = np.random.default_rng(0)
    live = agents[:2]
    obs = {a: rng.standard_normal(18).astype(np.float32) for a in live}
    rew = {a: float(rng.standard_normal()) for a in live}
    term = {a: False for a in live}
    trunc = {a: False for a in live}
    action_td = layout.full_action_spec.rand()
    spec = layout.full_observation_spec.clone()
    spec.update(layout.full_reward_spec)
    spec.update(layout.full_done_spec)
    zero = spec.zero()

    def layout_side():
        layout.split_actions(action_td, numpy=True)
        return layout.output(
            {"observation": obs, "reward": rew, "terminated": term, "truncated": trunc},
            acting=live,
        )

    def zero_clone():
        act = action_td.get(("agent", "action")).numpy()
        {a: act[i] for i, a in enumerate(agents)}
        out = zero.clone()
        g_obs, g_rew = out.get(("agent", "observation")), out.get(("agent", "reward"))
        g_done, g_term = out.get(("agent", "done")), out.get(("agent", "terminated"))
        g_trunc, g_mask = out.get(("agent", "truncated")), out.get(("agent", "mask"))
        g_mask += True
        for i, a in enumerate(agents):
            if a in obs:
                g_obs[i] = torch.tensor(obs[a])
                g_rew[i] = torch.tensor(rew[a], dtype=torch.float32)
                g_done[i] = torch.tensor(term[a] or trunc[a])
                g_term[i] = torch.tensor(term[a])
                g_trunc[i] = torch.tensor(trunc[a])
            else:
                g_done[i] = g_term[i] = g_trunc[i] = True
                g_mask[i] = False
        out.set("done", g_done.any(0))
        out.set("terminated", g_term.any(0))
        out.set("truncated", g_trunc.any(0))
        return out

    a, b = layout_side(), zero_clone()
    for key in b.keys(True, True):
        assert torch.equal(a.get(key), b.get(key)), key
    return {"layout": layout_side, "zero_clone": zero_clone}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=0.5)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    torch.set_num_threads(1)
    cases = [(f"torch, {n} envs", torch_sides(n)) for n in (32, 1024)]
    cases.append(("numpy, 3 agents", numpy_sides()))
    for name, sides in cases:
        times: dict[str, list[float]] = {side: [] for side in sides}
        for _ in range(args.repeats):
            for side, fn in sides.items():
                times[side].append(_time(fn, args.seconds))
        med = {side: statistics.median(ts) for side, ts in times.items()}
        ref = med["layout"]
        cells = ", ".join(
            f"{side} {t * 1e6:.1f} us ({t / ref:.2f}x layout)" for side, t in med.items()
        )
        print(f"{name}: {cells}")


if __name__ == "__main__":
    main()
