"""torchenv-openspiel vs raw pyspiel vs TorchRL's OpenSpielEnv: steps per second.

Games: ``kuhn_poker`` (chance deals, 2-3 moves a game), ``tic_tac_toe`` (turn-based, 27-float
board planes) and ``goofspiel(num_cards=4)`` (simultaneous moves, chance point cards). Sides:

- ``raw-policy``: pyspiel played directly with a small MLP (observation -> 64 -> 64 -> action
  logits) choosing the acting players' moves: every player's observation tensor read and
  stacked, one forward pass, the argmax over the legal actions (``legal_actions_mask``) applied,
  chance outcomes sampled with numpy, per-player rewards from ``returns()``, a new game when one
  is over;
- ``ours-policy`` / ``ours-policy-step``: the same MLP as a ``TensorDictModule`` reading
  ``("agents", "observation")`` and ``("agents", "action_mask")`` and writing
  ``("agents", "action")``, in ``rollout(policy=...)`` and in a ``step_and_maybe_reset`` loop;
  both sides under ``torch.no_grad()``, as a collector runs;
- ``ours``: ``OpenSpielEnv(...).rollout(n, break_when_any_done=False)`` with random legal actions
  (``rand_action`` follows the masks), the whole trajectory kept;
- ``torchrl``: TorchRL 0.14.1's ``OpenSpielEnv`` the same way (random actions from its masked
  action spec), run by the python named in ``TORCHENV_BENCH_TORCHRL_PYTHON`` (a venv with
  torchrl 0.14.1 and open_spiel).

Both envs use index actions (``categorical_actions=True``). Each of ``--rounds`` rounds (default
5) runs the TorchRL side, then ours and raw in turn (alternating the order), one thread
(``torch.set_num_threads(1)``); the report gives the median rate of each side and the ratios.

Run: ``python benchmarks/bench_openspiel.py`` (about two minutes with the TorchRL side).
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

GAMES = ["kuhn_poker", "tic_tac_toe", "goofspiel(num_cards=4)"]
STEPS = 300
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


def _mlp(n_obs: int, n_act: int):
    import torch
    from torch import nn

    torch.manual_seed(0)
    return nn.Sequential(
        nn.Linear(n_obs, 64), nn.Tanh(), nn.Linear(64, 64), nn.Tanh(), nn.Linear(64, n_act)
    )


def _masked_argmax(net, observation, mask):
    logits = net(observation.flatten(-(observation.dim() - 1)))
    return logits.masked_fill(~mask, float("-inf")).argmax(-1)


# --------------------------------------------------------------------------------- raw loop
def raw_policy(game_string: str) -> float:
    import numpy as np
    import pyspiel
    import torch

    game = pyspiel.load_game(game_string)
    players = range(game.num_players())
    n_obs = int(np.prod(game.observation_tensor_shape()))
    net = _mlp(n_obs, game.num_distinct_actions())
    rng = np.random.default_rng(0)

    def sample(outcomes):
        u, total = rng.random(), 0.0
        for action, p in outcomes:
            total += p
            if u < total:
                return action
        return outcomes[-1][0]

    def resolve(state):
        while state.is_chance_node():
            state.apply_action(sample(state.chance_outcomes()))

    holder = {}

    def new_game():
        state = game.new_initial_state()
        resolve(state)
        holder["state"], holder["returns"] = state, np.zeros(len(players))

    new_game()

    def run():
        with torch.no_grad():
            for _ in range(STEPS):
                state = holder["state"]
                if state.is_terminal():
                    new_game()
                    state = holder["state"]
                obs = torch.from_numpy(
                    np.asarray([state.observation_tensor(p) for p in players], np.float32)
                )
                simultaneous = state.is_simultaneous_node()
                acting = players if simultaneous else [state.current_player()]
                mask = np.zeros((len(players), game.num_distinct_actions()), bool)
                for p in acting:
                    mask[p] = state.legal_actions_mask(p)
                mask[[p for p in players if p not in acting], 0] = True
                actions = _masked_argmax(net, obs, torch.from_numpy(mask)).tolist()
                if simultaneous:
                    state.apply_actions(actions)
                else:
                    state.apply_action(actions[acting[0]])
                resolve(state)
                returns = np.asarray(state.returns())
                rewards = returns - holder["returns"]  # noqa: F841 - what an agent learns from
                holder["returns"] = returns

    return _rate(run, STEPS)


# ---------------------------------------------------------------------------------- our side
def _ours_env(game_string: str):
    from torchenv_openspiel import OpenSpielEnv

    env = OpenSpielEnv(game_string, categorical_actions=True)
    env.set_seed(0)
    return env


def ours(game_string: str) -> float:
    env = _ours_env(game_string)
    return _rate(lambda: env.rollout(STEPS, break_when_any_done=False), STEPS)


def _ours_policy_env(game_string: str):
    from tensordict.nn import TensorDictModule

    env = _ours_env(game_string)
    shape = env.observation_spec["agents", "observation"].shape[1:]
    n_obs = int(shape.numel())
    net = _mlp(n_obs, env.full_action_spec["agents", "action"].space.n)

    def forward(observation, mask):
        return _masked_argmax(net, observation, mask)

    policy = TensorDictModule(
        forward,
        in_keys=[("agents", "observation"), ("agents", "action_mask")],
        out_keys=[("agents", "action")],
    )
    return env, policy


def ours_policy(game_string: str) -> float:
    import torch

    env, policy = _ours_policy_env(game_string)

    def run():
        with torch.no_grad():
            env.rollout(STEPS, policy, break_when_any_done=False)

    return _rate(run, STEPS)


def ours_policy_step(game_string: str) -> float:
    import torch

    env, policy = _ours_policy_env(game_string)
    state = {"td": env.reset()}

    def run():
        td = state["td"]
        with torch.no_grad():
            for _ in range(STEPS):
                _, td = env.step_and_maybe_reset(policy(td))
        state["td"] = td

    return _rate(run, STEPS)


# ---------------------------------------------------------------------------- TorchRL's side
def torchrl_side(game_string: str) -> dict[str, float]:
    """TorchRL's OpenSpielEnv rollout (random actions from its masked spec)."""
    import torch
    from torchrl.envs.libs.openspiel import OpenSpielEnv

    torch.set_num_threads(1)
    # the game string carries the parameters: TorchRL 0.14.1's parameters= calls
    # pyspiel.load_game(name, parameters=...), which open_spiel 2.0 rejects (TypeError)
    env = OpenSpielEnv(game_string, categorical_actions=True)
    env.set_seed(0)
    return {"torchrl": _rate(lambda: env.rollout(STEPS, break_when_any_done=False), STEPS)}


def _run_torchrl(game_string: str) -> dict[str, float] | None:
    python = os.environ.get("TORCHENV_BENCH_TORCHRL_PYTHON")
    if not python or not os.path.exists(python):
        return None
    proc = subprocess.run(
        [python, os.path.abspath(__file__), "--impl", "torchrl", "--game", game_string],
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )
    if proc.returncode:
        print(f"TorchRL side failed for {game_string}:\n{proc.stderr[-1500:]}", file=sys.stderr)
        return None
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--impl", choices=["all", "torchrl"], default="all")
    parser.add_argument("--game", choices=GAMES, default=None)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    if args.impl == "torchrl":
        print(json.dumps(torchrl_side(args.game)))
        return
    import importlib.metadata

    import torch

    torch.set_num_threads(1)
    print(
        f"open_spiel {importlib.metadata.version('open_spiel')}, torch {torch.__version__}, "
        f"1 thread, {args.rounds} rounds (medians), {STEPS} steps per call"
    )
    sides = {
        "raw-policy": raw_policy,
        "ours-policy": ours_policy,
        "ours-policy-step": ours_policy_step,
        "ours": ours,
    }
    for game in [args.game] if args.game else GAMES:
        rates: dict[str, list[float]] = {}
        for r in range(args.rounds):
            trl = _run_torchrl(game)
            for key, value in (trl or {}).items():
                rates.setdefault(key, []).append(value)
            order = list(sides) if r % 2 == 0 else list(reversed(sides))
            for name in order:
                rates.setdefault(name, []).append(sides[name](game))
        med = {k: statistics.median(v) for k, v in rates.items()}
        print(f"\n{game}")
        for name, value in med.items():
            spread = f"{min(rates[name]):,.0f}-{max(rates[name]):,.0f}"
            print(f"  {name:18s} {value:>10,.0f} steps/s   (rounds: {spread})")
        for name in ("ours-policy", "ours-policy-step"):
            print(f"  {name} / raw-policy".ljust(36) + f"{med[name] / med['raw-policy']:.2f}")
        if "torchrl" in med:
            print("  ours / torchrl".ljust(36) + f"{med['ours'] / med['torchrl']:.2f}")


if __name__ == "__main__":
    main()
