"""TicTacToeEnv: conformance, action mask, turns, wins, draws, single-player mode."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict

from torchenv.envs import TicTacToeEnv
from torchenv.testing import EnvConformanceTests

LINES = [(0, 1, 2), (3, 4, 5), (6, 7, 8), (0, 3, 6), (1, 4, 7), (2, 5, 8), (0, 4, 8), (2, 4, 6)]


class TestTicTacToeConformance(EnvConformanceTests):
    stochastic = False  # resets and moves are deterministic: only the actions are random

    def make_env(self):
        return TicTacToeEnv()


class TestSinglePlayerConformance(EnvConformanceTests):
    def make_env(self):
        return TicTacToeEnv(single_player=True)


def play(env, moves, td=None):
    """Plays ``moves`` in order; returns the list of "next" tensordicts."""
    td = env.reset() if td is None else td
    out = []
    for move in moves:
        td = env.step(td.set("action", torch.tensor(move)))
        out.append(td["next"])
        td = td["next"].exclude(("player0", "reward"), ("player1", "reward"))
    return out


def test_mask_turn_and_board_after_a_move():
    env = TicTacToeEnv()
    td = env.reset()
    assert td["action_mask"].all() and td["turn"].item() == 0
    assert (td["board"] == -1).all()
    (nxt,) = play(env, [4])
    mask = nxt["action_mask"]
    assert not mask[4] and mask.sum() == 8
    assert nxt["turn"].item() == 1
    # seen from player1, player0's mark is an opponent's mark (0)
    assert nxt["board"][1, 1].item() == 0 and (nxt["board"] == -1).sum() == 8
    (nxt,) = play(env, [0], td=nxt.clone())
    assert nxt["turn"].item() == 0
    assert nxt["board"][1, 1].item() == 1 and nxt["board"][0, 0].item() == 0
    assert nxt["action_mask"].sum() == 7


@pytest.mark.parametrize("line", LINES)
def test_player0_wins_on_each_line(line):
    others = [cell for cell in range(9) if cell not in line]
    # player1's two marks, off the line, cannot win nor block
    moves = [line[0], others[0], line[1], others[1], line[2]]
    steps = play(TicTacToeEnv(), moves)
    for nxt in steps[:-1]:
        assert not nxt["done"].item()
    last = steps[-1]
    assert last["done"].item() and last["terminated"].item() and not last["truncated"].item()
    assert last["player0", "reward"].item() == 1.0
    assert last["player1", "reward"].item() == 0.0


def test_player1_wins():
    steps = play(TicTacToeEnv(), [0, 3, 1, 4, 8, 5])
    last = steps[-1]
    assert last["done"].item()
    assert last["player1", "reward"].item() == 1.0 and last["player0", "reward"].item() == 0.0
    assert all(s["player0", "reward"].item() == 0.0 for s in steps)


def test_draw_ends_without_reward():
    steps = play(TicTacToeEnv(), [0, 1, 2, 4, 3, 5, 7, 6, 8])
    assert [s["done"].item() for s in steps] == [False] * 8 + [True]
    last = steps[-1]
    assert not last["action_mask"].any()
    assert last["player0", "reward"].item() == 0.0 and last["player1", "reward"].item() == 0.0


def test_illegal_move_raises_naming_the_action():
    env = TicTacToeEnv()
    (nxt,) = play(env, [4])
    with pytest.raises(ValueError, match="'action'.*action_mask"):
        play(env, [4], td=nxt.clone())


def test_rand_action_plays_legal_moves_only():
    env = TicTacToeEnv()
    td = env.reset(TensorDict(batch_size=[64]))
    for _ in range(5):
        td = env.step(env.rand_action(td))["next"].exclude(
            ("player0", "reward"), ("player1", "reward")
        )
    mask = td["action_mask"].clone()
    for _ in range(20):
        action = env.rand_action(td.clone())["action"]
        assert mask.gather(-1, action.unsqueeze(-1)).all()
    only = torch.zeros(9, dtype=torch.bool)
    only[7] = True
    single = TensorDict({"action_mask": only}, [])
    assert env.rand_action(single)["action"].item() == 7


def test_batched_games_keep_mask_consistent_with_board():
    env = TicTacToeEnv()
    rollout = env.rollout(
        9, tensordict=env.reset(TensorDict(batch_size=[32])), break_when_any_done=False
    )
    board = rollout["next", "board"].flatten(-2)
    assert torch.equal(rollout["next", "action_mask"], board == -1)
    # every game ends within nine moves
    assert rollout["next", "done"].any(1).all()


def test_single_player_opponent_answers_at_once():
    env = TicTacToeEnv(single_player=True, seed=0)
    (nxt,) = play(env, [4])
    assert nxt["turn"].item() == 0
    assert nxt["action_mask"].sum() == 7  # the agent's move and the opponent's reply
    assert nxt["board"][1, 1].item() == 1  # seen from player0 again


def test_single_player_is_reproducible_with_seed_and_ends_games():
    boards = []
    for _ in range(2):
        env = TicTacToeEnv(single_player=True, seed=11)
        with torch.random.fork_rng():
            torch.manual_seed(0)  # the agent's random moves
            data = env.rollout(
                5, tensordict=env.reset(TensorDict(batch_size=[50])), break_when_any_done=False
            )
        boards.append(data["next", "board"])
        assert data["next", "done"].any(1).all()  # five agent moves always end a game
        assert (data["next", "player1", "reward"].sum() > 0) and (
            data["next", "player0", "reward"].sum() > 0
        )
    assert torch.equal(boards[0], boards[1])
