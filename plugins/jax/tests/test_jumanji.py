"""JumanjiEnv on real Jumanji envs: the conformance suites (Minesweeper: multi-discrete actions,
action masks, random boards), Snake's specs (discrete action, bounded grid, boolean mask), one-hot
actions, the ActionMask transform, registry, DLPack without copies, errors."""

from __future__ import annotations

import pytest

pytest.importorskip(
    "jax", reason="torchenv-jax's Jumanji tests need jax (pip install 'torchenv[jumanji]')"
)
pytest.importorskip(
    "jumanji", reason="torchenv-jax's Jumanji tests need jumanji (pip install 'torchenv[jumanji]')"
)

import torch

import torchenv
from torchenv.specs import Bounded, Categorical, MultiCategorical, OneHot
from torchenv.testing import BatchedEnvConformanceTests
from torchenv.transforms import ActionMask, TransformedEnv
from torchenv_jax import JumanjiEnv, JumanjiWrapper
from torchenv_jax._bridge import buffer_pointer

pytestmark = pytest.mark.jax


class TestMinesweeperConformance(BatchedEnvConformanceTests):
    num_envs = 4
    # the first observation is a hidden board whatever the mines: seeds show only after steps
    # (test_seeding_reproduces_and_seeds_differ checks seeds on Snake)
    stochastic = False

    def make_batched_env(self, num_envs):
        return JumanjiEnv("Minesweeper-v0", batch_size=(num_envs,))


@pytest.fixture(scope="module")
def snake():
    env = torchenv.make("jumanji:Snake-v1", num_envs=4, seed=0)
    yield env
    env.close()


def test_list_envs_is_jumanjis_registry():
    import jumanji

    assert torchenv.list_envs("jumanji") == sorted(jumanji.registered_environments())
    with pytest.raises(torchenv.registry.UnknownEnvError, match="Nope-v0"):
        torchenv.make("jumanji:Nope-v0", num_envs=2)


def test_snake_specs_follow_jumanjis(snake):
    assert isinstance(snake, JumanjiEnv) and snake.batch_size == (4,)
    action = snake.action_spec
    assert isinstance(action, Categorical) and action.n == 4 and action.dtype == torch.int32
    grid = snake.observation_spec["grid"]
    assert isinstance(grid, Bounded) and grid.shape == (4, 12, 12, 5)
    assert float(grid.space.low.min()) == 0.0 and float(grid.space.high.max()) == 1.0
    mask = snake.observation_spec["action_mask"]
    assert mask.shape == (4, 4) and mask.dtype == torch.bool
    assert snake.reward_spec.shape == (4, 1)


def test_minesweeper_specs_multi_discrete():
    env = JumanjiEnv("Minesweeper-v0", batch_size=(4,), seed=0)
    assert isinstance(env.action_spec, MultiCategorical)
    assert env.action_spec.shape == (4, 2) and env.action_spec.dtype == torch.int32
    assert env.observation_spec["action_mask"].shape == (4, 10, 10)


def test_snake_observation_shares_memory_with_jax(snake):
    td = snake.reset()
    assert td["grid"].data_ptr() == buffer_pointer(snake._carry[0][1].grid)


def test_action_mask_transform_keeps_actions_legal(snake):
    env = TransformedEnv(snake, ActionMask())
    env.set_seed(0)
    td = env.rollout(12, break_when_any_done=False)
    allowed = td["action_mask"].gather(-1, td["action"].long().unsqueeze(-1))
    assert allowed.all()


def test_seeding_reproduces_and_seeds_differ(snake):
    snake.set_seed(3)
    a = snake.reset()["grid"].clone()
    snake.set_seed(3)
    b = snake.reset()["grid"].clone()
    snake.set_seed(4)
    c = snake.reset()["grid"].clone()
    assert torch.equal(a, b) and not torch.equal(a, c)
    assert not torch.equal(a[0], a[1]), "sub-envs got the same key"


def test_one_hot_actions():
    import jumanji

    env = JumanjiWrapper(
        jumanji.make("Snake-v1"), batch_size=(2,), categorical_action_encoding=False, seed=0
    )
    assert isinstance(env.action_spec, OneHot) and env.action_spec.shape == (2, 4)
    td = env.rollout(3, break_when_any_done=False)
    assert td["next", "grid"].shape == (2, 3, 12, 12, 5)


def test_done_flags_and_errors():
    with pytest.raises(ValueError, match="unknown env 'Nope-v0'"):
        JumanjiEnv("Nope-v0")
    with pytest.raises(NotImplementedError, match="from_pixels"):
        JumanjiEnv("Minesweeper-v0", from_pixels=True)
    with pytest.raises(TypeError, match="jumanji Environment"):
        JumanjiWrapper(object())
    env = JumanjiEnv("Minesweeper-v0", batch_size=(4,), seed=0)
    td = env.reset()
    td["action"] = torch.tensor([[0, 0], [0, 0], [1, 1], [1, 1]], dtype=torch.int32)
    td = env.step(td)
    nxt = td["next"]
    assert torch.equal(nxt["done"], nxt["terminated"] | nxt["truncated"])
    assert not nxt["truncated"].any()
    # opening a revealed cell again (or a mine) ends a Minesweeper episode: terminated
    td = torchenv.envs.step_mdp(td, keep_other=True)
    td["action"] = torch.tensor([[0, 0], [0, 0], [1, 1], [1, 1]], dtype=torch.int32)
    assert env.step(td)["next", "terminated"].all()
