"""BraxEnv on real Brax envs: the conformance suites, registry, seeding, partial reset by mask,
DLPack without copies, clear errors.

Brax's ``fast`` env (its trivial unit-test env: one body pushed by the sign of the action)
compiles in seconds; it resets deterministically (all zeros), hence ``stochastic = False``.
"""

from __future__ import annotations

import pytest

pytest.importorskip(
    "jax", reason="torchenv-jax's Brax tests need jax (pip install 'torchenv[brax]')"
)
pytest.importorskip(
    "brax", reason="torchenv-jax's Brax tests need brax (pip install 'torchenv[brax]')"
)

import torch

import torchenv
from torchenv.testing import BatchedEnvConformanceTests
from torchenv_jax import BraxEnv, BraxWrapper
from torchenv_jax._bridge import buffer_pointer, to_jax

pytestmark = pytest.mark.jax


class TestBraxFastConformance(BatchedEnvConformanceTests):
    num_envs = 4
    stochastic = False  # "fast" resets to zeros whatever the key

    def make_batched_env(self, num_envs):
        return BraxEnv("fast", batch_size=(num_envs,), max_episode_steps=5)


@pytest.fixture(scope="module")
def fast():
    env = BraxEnv("fast", batch_size=(4,), seed=0, max_episode_steps=5)
    yield env
    env.close()


def test_make_by_name_and_list_envs():
    assert {"ant", "fast", "halfcheetah"} <= set(torchenv.list_envs("brax"))
    env = torchenv.make("brax:fast", num_envs=4, seed=0, max_episode_steps=5)
    assert isinstance(env, BraxEnv) and env.batch_size == (4,)
    assert env.action_spec.shape == (4, 1)
    assert env.observation_spec["observation"].shape == (4, 2)
    with pytest.raises(torchenv.registry.UnknownEnvError, match="nope"):
        torchenv.make("brax:nope", num_envs=2)


def test_compile_seconds_recorded(fast):
    seconds = fast.compile_seconds
    assert set(seconds) == {"reset", "step"}
    assert all(s > 0 for s in seconds.values())


def test_observation_shares_memory_with_jax(fast):
    """The observation handed to torch is a view of JAX's output buffer (DLPack, no copy)."""
    td = fast.reset()
    assert td["observation"].data_ptr() == buffer_pointer(fast.jax_state.obs)
    td["action"] = torch.ones(4, 1)
    out = fast.step(td)["next"]
    assert out["observation"].data_ptr() == buffer_pointer(fast.jax_state.obs)


def test_action_crosses_without_copy():
    action = torch.rand(4, 1)
    assert buffer_pointer(to_jax(action)) == action.data_ptr()


def test_dynamics_follow_the_action(fast):
    """Brax's fast env: velocity grows by dt per step with a positive action, not otherwise."""
    td = fast.reset()
    for _ in range(3):
        td["action"] = torch.tensor([[1.0], [-1.0], [1.0], [-1.0]])
        td = fast.step(td)
        td = torchenv.envs.step_mdp(td, keep_other=True)
    vel = td["observation"][:, 1]
    assert torch.allclose(vel, torch.tensor([0.06, 0.0, 0.06, 0.0]))


def test_truncation_after_max_episode_steps(fast):
    td = fast.rollout(6, break_when_any_done=False)
    truncated = td["next", "truncated"][..., 0]
    assert not truncated[:, :4].any() and truncated[:, 4].all()
    assert torch.equal(td["next", "done"], td["next", "truncated"] | td["next", "terminated"])


def test_partial_reset_only_masked_rows(fast):
    td = fast.reset()
    td["action"] = torch.ones(4, 1)
    td = torchenv.envs.step_mdp(fast.step(td), keep_other=True)
    before = td["observation"].clone()
    mask = torch.tensor([[True], [False], [False], [True]])
    out = fast.reset(td.set("_reset", mask))
    assert torch.equal(out["observation"][[1, 2]], before[[1, 2]])
    assert (out["observation"][[0, 3]] == 0).all() and (before[[0, 3]] != 0).any()


def test_wrapper_accepts_a_brax_env():
    import brax.envs

    env = BraxWrapper(brax.envs.get_environment("fast"), batch_size=(2,), seed=1)
    assert env.rollout(2)["next", "observation"].shape == (2, 2, 2)
    with pytest.raises(TypeError, match="brax.envs.Env"):
        BraxWrapper(object())


def test_bad_inputs_raise_clear_errors(fast):
    with pytest.raises(ValueError, match="unknown env 'nope'"):
        BraxEnv("nope")
    with pytest.raises(ValueError, match="max_episode_steps"):
        BraxEnv("fast", batch_size=(2,), max_episode_steps=0)
    td = fast.reset()
    td["action"] = torch.zeros(4, 3)
    with pytest.raises(ValueError, match=r"action.*\(4, 3\).*\(4, 1\)"):
        fast.step(td)
