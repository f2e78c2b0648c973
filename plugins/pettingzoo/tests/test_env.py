"""PettingZooEnv / PettingZooWrapper against raw PettingZoo: same seed and actions, same data.

Parallel (simple_spread, discrete, one-hot and continuous actions, global state), AEC turn
semantics (tictactoe: whose turn, masks, only the acting agent's action is used), agents that
leave (test-local envs), infos, seeding and bad arguments.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

pytest.importorskip("pettingzoo")

from leaving_envs import LeavingAEC, LeavingParallel

from torchenv.envs import MarlGroupMapType, step_mdp
from torchenv_pettingzoo import PettingZooEnv, PettingZooWrapper, task_names
from torchenv_pettingzoo._tasks import find_task

pytestmark = pytest.mark.pettingzoo

needs_mpe = pytest.mark.skipif(
    "mpe/simple_spread_v3" not in task_names(), reason="MPE is not installed (mpe2 from 1.26)"
)
needs_tictactoe = pytest.mark.skipif(
    "classic/tictactoe_v3" not in task_names(), reason="classic/tictactoe_v3 is not installed"
)

SPREAD = ["agent_0", "agent_1", "agent_2"]


def _raw(task: str, parallel: bool, **kwargs):
    return find_task(task).make(parallel, kwargs)


# ------------------------------------------------------------------------------ parallel, MPE
@needs_mpe
@pytest.mark.parametrize(
    "options",
    [
        {},
        {"categorical_actions": False},
        {"continuous_actions": True},
        {"return_state": True},
    ],
    ids=["categorical", "one-hot", "continuous", "state"],
)
def test_simple_spread_equals_raw_pettingzoo(options):
    """20 steps over an episode end (max_cycles=8): observations, rewards, flags and state are
    PettingZoo's own, for the same seed and actions."""
    task_kwargs = {"max_cycles": 8}
    if "continuous_actions" in options:
        task_kwargs["continuous_actions"] = options["continuous_actions"]
    ours_kwargs = {k: v for k, v in options.items() if k != "continuous_actions"}
    env = PettingZooEnv("mpe/simple_spread_v3", parallel=True, seed=3, **task_kwargs, **ours_kwargs)
    raw = _raw("mpe/simple_spread_v3", True, **task_kwargs)
    rng = np.random.default_rng(0)
    raw.reset(seed=3)  # the construction's seeded reset (TorchRL's convention)
    obs, _ = raw.reset()
    td = env.reset()
    for i, agent in enumerate(SPREAD):
        np.testing.assert_array_equal(td["agent", "observation"][i].numpy(), obs[agent])
    continuous = options.get("continuous_actions", False)
    onehot = options.get("categorical_actions") is False
    for t in range(20):
        if continuous:
            actions = {a: rng.uniform(0, 1, 5).astype(np.float32) for a in SPREAD}
            td["agent", "action"] = torch.as_tensor(np.stack([actions[a] for a in SPREAD]))
        else:
            actions = {a: int(rng.integers(5)) for a in SPREAD}
            index = torch.tensor([actions[a] for a in SPREAD])
            td["agent", "action"] = (
                torch.nn.functional.one_hot(index, 5).bool() if onehot else index
            )
        obs, rew, term, trunc, _ = raw.step(actions)
        out = env.step(td)
        nxt = out["next"]
        for i, agent in enumerate(SPREAD):
            where = f"step {t}, {agent}"
            np.testing.assert_array_equal(
                nxt["agent", "observation"][i].numpy(), obs[agent], err_msg=where
            )
            assert nxt["agent", "reward"][i].item() == pytest.approx(rew[agent]), where
            assert nxt["agent", "terminated"][i].item() == term[agent], where
            assert nxt["agent", "truncated"][i].item() == trunc[agent], where
        if options.get("return_state"):
            np.testing.assert_array_equal(nxt["state"].numpy(), raw.state())
        assert nxt["done"].item() == any(term[a] or trunc[a] for a in SPREAD)
        td = step_mdp(out)
        if nxt["done"].item():
            raw.reset()
            td = env.reset()


@needs_mpe
def test_seed_then_reset_continues_pettingzoo_reset_with_seed():
    env = PettingZooEnv("mpe/simple_spread_v3", parallel=True)
    raw = _raw("mpe/simple_spread_v3", True)
    for seed in (0, 7):
        env.set_seed(seed)  # resets with the seed right away, as TorchRL's
        raw.reset(seed=seed)
        obs, _ = raw.reset()
        got = env.reset()["agent", "observation"].numpy()
        np.testing.assert_array_equal(got, np.stack([obs[a] for a in SPREAD]))
    # an unseeded reset goes on with the stream, as PettingZoo's does
    obs, _ = raw.reset()
    np.testing.assert_array_equal(
        env.reset()["agent", "observation"].numpy(), np.stack([obs[a] for a in SPREAD])
    )


@needs_mpe
def test_group_maps():
    env = PettingZooEnv("mpe/simple_adversary_v3", parallel=True)
    assert env.group_map == {"adversary": ["adversary_0"], "agent": ["agent_0", "agent_1"]}
    one = PettingZooEnv(
        "mpe/simple_adversary_v3", parallel=True, group_map=MarlGroupMapType.ONE_GROUP_PER_AGENT
    )
    assert list(one.group_map) == ["adversary_0", "agent_0", "agent_1"]
    custom = PettingZooEnv(
        "mpe/simple_spread_v3",
        parallel=True,
        group_map={"a": ["agent_0"], "b": ["agent_1", "agent_2"]},
    )
    assert custom.reset()["b", "observation"].shape == (2, 18)
    with pytest.raises(ValueError, match="agent_2"):
        PettingZooEnv(
            "mpe/simple_spread_v3", parallel=True, group_map={"a": ["agent_0", "agent_1"]}
        )


# ------------------------------------------------------------------------------------ AEC
def _legal(mask: np.ndarray, rng: np.random.Generator) -> int:
    return int(rng.choice(np.flatnonzero(mask)))


@needs_tictactoe
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_tictactoe_equals_raw_aec(seed):
    """Whole games: whose turn it is, the acting agent's mask, observations and rewards are the
    raw AEC env's; the other player's action entry is ignored (filled with garbage here)."""
    env = PettingZooEnv("classic/tictactoe_v3", parallel=False, use_mask=True, seed=seed)
    raw = _raw("classic/tictactoe_v3", False)
    raw.reset(seed=seed)
    rng = np.random.default_rng(seed)
    td = env.reset()
    players = ["player_1", "player_2"]
    for t in range(30):
        agent = raw.agent_selection
        assert td[agent, "mask"].tolist() == [True], f"move {t}: {agent} should act"
        other = players[1 - players.index(agent)]
        assert td[other, "mask"].tolist() == [False]
        mask = raw.observe(agent)["action_mask"]
        np.testing.assert_array_equal(td[agent, "action_mask"][0].numpy(), mask.astype(bool))
        assert (
            env.full_action_spec[agent, "action"].mask.flatten().tolist()
            == mask.astype(bool).tolist()
        ), "the action spec's mask follows the acting agent's"
        action = _legal(mask, rng)
        td[agent, "action"] = torch.tensor([action])
        td[other, "action"] = torch.tensor([int(rng.integers(9))])  # not its turn: ignored
        raw.step(action)
        out = env.step(td)
        nxt = out["next"]
        for p in players:
            np.testing.assert_array_equal(
                nxt[p, "observation", "observation"][0].numpy(), raw.observe(p)["observation"]
            )
            assert nxt[p, "reward"].item() == raw.rewards[p]
            assert nxt[p, "terminated"].item() == raw.terminations[p]
        over = all(raw.terminations[p] or raw.truncations[p] for p in players)
        assert nxt["done"].item() == over  # done_on_any=False by default for AEC envs
        if over:
            assert not nxt["player_1", "mask"].item() and not nxt["player_2", "mask"].item()
            break
        td = step_mdp(out)
    else:
        raise AssertionError("a game of tictactoe lasts at most 9 moves")


@needs_tictactoe
def test_aec_needs_use_mask_and_has_no_parallel_api():
    with pytest.raises(ValueError, match="use_mask=True"):
        PettingZooEnv("classic/tictactoe_v3", parallel=False)
    with pytest.raises(ValueError, match="no parallel API"):
        PettingZooEnv("classic/tictactoe_v3", parallel=True)


def test_aec_turns_of_agents_that_left_are_passed():
    """player_0 leaves after 2 moves, player_1 after 4: the env never hands them the turn again
    (PettingZoo's dead steps happen inside the step), their flags stay done, the mask follows."""
    env = PettingZooWrapper(LeavingAEC(), use_mask=True, seed=0)
    td = env.reset()
    order, rewards = [], []
    rng = np.random.default_rng(0)
    for _ in range(12):
        acting = [g for g in env.group_map if td[g, "mask"].item()]
        assert len(acting) == 1
        agent = acting[0]
        order.append(agent)
        mask = td[agent, "action_mask"][0].numpy()
        env.rand_action(td)  # every group needs an action entry; only the acting one is used
        td[agent, "action"] = torch.tensor([_legal(mask, rng)])
        out = env.step(td)
        rewards.append(out["next", agent, "reward"].item())
        td = step_mdp(out)
        if td["done"].item():
            break
    assert order[:7] == [
        "player_0", "player_1", "player_2",
        "player_0", "player_1", "player_2",
        "player_1",
    ]  # fmt: skip
    assert "player_0" not in order[4:]
    assert td["player_0", "done"].item() and td["player_0", "terminated"].item()
    assert len(order) == 12 and td["done"].item() and td["truncated"].item()
    assert len(set(rewards)) > 1, "rewards of the acting agents come through"


# -------------------------------------------------------------------- agents that leave (parallel)
def test_parallel_agents_that_leave():
    env = PettingZooWrapper(
        LeavingParallel(), use_mask=True, done_on_any=False, return_state=True, seed=1
    )
    td = env.reset()
    assert td["runner", "mask"].tolist() == [True, True, True]
    data = env.rollout(10, break_when_any_done=False)
    nxt = data["next"]
    # runner_0 leaves at step 3, runner_1 at step 6, runner_2 is truncated at step 10
    assert nxt["runner", "mask"][:, 0].tolist() == [True, True] + [False] * 8
    assert nxt["runner", "terminated"][:, 0, 0].tolist() == [False, False] + [True] * 8
    assert nxt["runner", "mask"][:, 1].tolist() == [True] * 5 + [False] * 5
    assert nxt["runner", "observation"][3:, 0].abs().sum() == 0, "agents that left read zeros"
    assert nxt["runner", "info", "age"][:, 2].tolist() == list(range(1, 11))
    assert nxt["done"][:, 0].tolist() == [False] * 9 + [True]
    assert nxt["truncated"][-1].item() and not nxt["terminated"][-1].item()
    assert nxt["state"].shape == (10, 3)


def test_parallel_leaving_agents_need_use_mask():
    env = PettingZooWrapper(LeavingParallel(), done_on_any=False)
    with pytest.raises(ValueError, match=r"\['runner_0'\] have left.*use_mask=True"):
        env.rollout(5, break_when_any_done=False)


def test_parallel_done_on_any_resets_when_the_first_agent_leaves():
    env = PettingZooWrapper(LeavingParallel(), use_mask=True, seed=0)
    data = env.rollout(7, break_when_any_done=False)
    assert data["next", "done"][:, 0].tolist() == [False, False, True, False, False, True, False]
    # after the reset every runner is back
    assert data["runner", "mask"][3].tolist() == [True, True, True]


# ---------------------------------------------------------------------------- bad arguments
def test_bad_arguments():
    with pytest.raises(TypeError, match="pettingzoo.ParallelEnv or pettingzoo.AECEnv"):
        PettingZooWrapper(object())
    with pytest.raises(TypeError, match="expected a PettingZoo env"):
        PettingZooWrapper()
    with pytest.raises(ValueError, match="batch_size"):
        PettingZooWrapper(LeavingParallel(), batch_size=(2,))
    with pytest.raises(TypeError, match="seed"):
        PettingZooWrapper(LeavingParallel(), seed=1.5)
    with pytest.raises(TypeError, match="parallel must be a bool"):
        PettingZooEnv("classic/tictactoe_v3", parallel="yes")


@needs_mpe
def test_unknown_task_argument_names_it():
    with pytest.raises(
        TypeError, match=r"mpe/simple_spread_v3 rejected its arguments \['colour'\]"
    ):
        PettingZooEnv("mpe/simple_spread_v3", parallel=True, colour="red")


def test_close_closes_pettingzoo():
    closed = []
    raw = LeavingParallel()
    raw.close = lambda: closed.append(True)
    env = PettingZooWrapper(raw)
    env.close()
    env.close()
    assert closed == [True] and env.is_closed
