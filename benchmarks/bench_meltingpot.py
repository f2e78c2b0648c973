"""torchenv-meltingpot vs the raw Melting Pot substrate: steps per second, policy in the loop.

Substrate: ``coins`` (2 players, 88x88 RGB each). Sides:

- ``raw-policy``: the substrate stepped directly; a small network (the players' RGB views
  average-pooled 8x8, then a linear layer to the action logits, argmax) picks every player's
  action from the stacked views, a reset when an episode ends;
- ``ours-policy`` / ``ours-policy-step``: the same network as a ``TensorDictModule`` reading
  ``("agents", "observation", "RGB")`` and writing ``("agents", "action")``, in
  ``rollout(policy=..., auto_reset=False)`` going on from the last call's state (a Melting Pot
  reset rebuilds the world: seconds) and in a ``step_and_maybe_reset`` loop; both sides under
  ``torch.no_grad()``.

TorchRL's ``MeltingpotEnv`` is not measured: TorchRL 0.14.1 pins tensordict 0.14, and a second
venv with Melting Pot (tensorflow, the assets) was not built for it.

Each of ``--rounds`` rounds (default 3) runs the sides in turn (alternating the order), one thread
(``torch.set_num_threads(1)``); the report gives the median rate of each side and the ratios.

Run: ``python benchmarks/bench_meltingpot.py`` (importing Melting Pot imports tensorflow: slow).
"""

from __future__ import annotations

import argparse
import statistics
import time
import warnings

warnings.filterwarnings("ignore")

SUBSTRATE = "coins"
STEPS = 50
SECONDS = 2.0


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


def _net(n_actions: int):
    import torch
    from torch import nn

    torch.manual_seed(0)
    linear = nn.Linear(11 * 11 * 3, n_actions)

    def forward(rgb):  # (n, 88, 88, 3) uint8 -> (n,) actions
        x = rgb.permute(0, 3, 1, 2).float().div(255)
        x = nn.functional.avg_pool2d(x, 8).flatten(1)
        return linear(x).argmax(-1)

    return forward


def raw_policy(substrate) -> float:
    import numpy as np
    import torch

    n_actions = substrate.action_spec()[0].num_values
    net = _net(n_actions)
    holder = {"ts": substrate.reset()}

    def run():
        with torch.no_grad():
            for _ in range(STEPS):
                ts = holder["ts"]
                if ts.last():
                    ts = substrate.reset()
                rgb = torch.from_numpy(np.stack([o["RGB"] for o in ts.observation]))
                holder["ts"] = substrate.step(net(rgb).tolist())

    return _rate(run, STEPS)


def _ours_policy(env):
    from tensordict.nn import TensorDictModule

    net = _net(env.full_action_spec["agents", "action"].space.n)
    return TensorDictModule(
        net, in_keys=[("agents", "observation", "RGB")], out_keys=[("agents", "action")]
    )


def ours_policy(env) -> float:
    import torch

    policy = _ours_policy(env)
    state = {"td": env.reset()}

    def run():
        # each call goes on from the last state (auto_reset=False): a Melting Pot reset
        # rebuilds the whole dmlab2d world, which the raw loop only does when an episode ends
        with torch.no_grad():
            td = env.rollout(
                STEPS, policy, break_when_any_done=False, auto_reset=False, tensordict=state["td"]
            )
        state["td"] = td[-1].get("next").exclude(*env.reward_keys)

    return _rate(run, STEPS)


def ours_policy_step(env) -> float:
    import torch

    policy = _ours_policy(env)
    state = {"td": env.reset()}

    def run():
        td = state["td"]
        with torch.no_grad():
            for _ in range(STEPS):
                _, td = env.step_and_maybe_reset(policy(td))
        state["td"] = td

    return _rate(run, STEPS)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    import importlib.metadata

    import torch

    from torchenv_meltingpot import MeltingpotEnv

    torch.set_num_threads(1)
    print(
        f"dm-meltingpot {importlib.metadata.version('dm-meltingpot')}, torch "
        f"{torch.__version__}, 1 thread, {args.rounds} rounds (medians), {STEPS} steps per call"
    )
    env = MeltingpotEnv(SUBSTRATE)
    env.set_seed(0)
    substrate = env.base_env  # the same substrate, stepped directly
    sides = {
        "raw-policy": lambda: raw_policy(substrate),
        "ours-policy": lambda: ours_policy(env),
        "ours-policy-step": lambda: ours_policy_step(env),
    }
    rates: dict[str, list[float]] = {}
    for r in range(args.rounds):
        order = list(sides) if r % 2 == 0 else list(reversed(sides))
        for name in order:
            rates.setdefault(name, []).append(sides[name]())
    med = {k: statistics.median(v) for k, v in rates.items()}
    print(f"\n{SUBSTRATE}")
    for name, value in med.items():
        spread = f"{min(rates[name]):,.1f}-{max(rates[name]):,.1f}"
        print(f"  {name:18s} {value:>10,.1f} steps/s   (rounds: {spread})")
    for name in ("ours-policy", "ours-policy-step"):
        print(f"  {name} / raw-policy".ljust(36) + f"{med[name] / med['raw-policy']:.2f}")
    env.close()


if __name__ == "__main__":
    main()
