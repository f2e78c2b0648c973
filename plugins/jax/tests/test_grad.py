"""``requires_grad=True``: gradients through the JAX step into torch, checked against central
finite differences, through one step and through two (the kept state carries the history).

The default tests use a small Brax env written for them (a ``brax.envs.Env`` subclass with
smooth point-mass dynamics: compiles in seconds); ``test_brax_physics_gradient`` (``slow``) does
the same on Brax's own ``inverted_pendulum`` (positional pipeline), whose compilation takes
minutes on a loaded CPU.
"""

from __future__ import annotations

import pytest

pytest.importorskip("jax", reason="torchenv-jax's gradient tests need jax")
brax_envs = pytest.importorskip("brax.envs", reason="torchenv-jax's gradient tests need brax")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import torch  # noqa: E402
from tensordict import TensorDict  # noqa: E402

from torchenv_jax import BraxEnv, BraxWrapper  # noqa: E402

pytestmark = pytest.mark.jax


class PointMass(brax_envs.Env):
    """A 2-D point mass pushed by ``tanh(action)``; reward ``-|pos|^2``; obs ``(pos, vel)``."""

    def reset(self, rng):
        pos = jax.random.uniform(rng, (2,), minval=-1.0, maxval=1.0)
        obs = jnp.concatenate([pos, jnp.zeros(2)])
        zero = jnp.zeros(())
        return brax_envs.State(pipeline_state=None, obs=obs, reward=zero, done=zero)

    def step(self, state, action):
        pos, vel = state.obs[:2], state.obs[2:]
        vel = vel + 0.5 * jnp.tanh(action)
        pos = pos + 0.5 * vel
        obs = jnp.concatenate([pos, vel])
        return state.replace(obs=obs, reward=-jnp.sum(pos**2))

    @property
    def observation_size(self):
        return 4

    @property
    def action_size(self):
        return 2

    @property
    def backend(self):
        return "none"


def _loss(env, state, actions):
    """Reset the env to ``state``, take ``actions``, return a scalar of the last outputs."""
    env.jax_state = state
    td = TensorDict(batch_size=env.batch_size)
    for action in actions:
        td = env.step(td.set("action", action))["next"].clone(recurse=False)
    return td["reward"].sum() + 0.3 * td["observation"].sum()


def _check_against_finite_differences(env, steps, eps=1e-2):
    torch.manual_seed(0)
    env.reset()
    state = env.jax_state
    n, d = env.batch_size[0], env.action_spec.shape[-1]
    actions = [(0.5 * torch.randn(n, d)).requires_grad_() for _ in range(steps)]
    loss = _loss(env, state, actions)
    loss.backward()
    for t, action in enumerate(actions):
        direction = torch.randn(n, d)
        with torch.no_grad():
            plus = [a + eps * direction if i == t else a for i, a in enumerate(actions)]
            minus = [a - eps * direction if i == t else a for i, a in enumerate(actions)]
            fd = (_loss(env, state, plus) - _loss(env, state, minus)) / (2 * eps)
        analytic = (action.grad * direction).sum()
        assert action.grad.abs().sum() > 0, f"step {t}: zero gradient"
        torch.testing.assert_close(analytic, fd, rtol=2e-2, atol=2e-3)


@pytest.fixture(scope="module")
def point_mass():
    env = BraxWrapper(PointMass(), batch_size=(3,), requires_grad=True, seed=0)
    yield env
    env.close()


def test_gradient_one_step(point_mass):
    _check_against_finite_differences(point_mass, steps=1)


def test_gradient_through_two_steps(point_mass):
    """The second step's outputs depend on the first action through the kept state."""
    _check_against_finite_differences(point_mass, steps=2)


def test_partial_reset_cuts_history_of_reset_rows_only(point_mass):
    env = point_mass
    env.reset()
    action = torch.zeros(3, 2, requires_grad=True)
    td = env.reset().set("action", action)
    td = env.step(td)
    mask = torch.tensor([[True], [False], [False]])
    env.reset(td["next"].clone(recurse=False).set("_reset", mask))
    out = env.step(td["next"].clone(recurse=False).set("action", torch.zeros(3, 2)))
    out["next", "observation"].sum().backward()
    assert action.grad[0].abs().sum() == 0  # row 0 was reset: no path to the first action
    assert action.grad[1:].abs().sum() > 0


def test_without_requires_grad_outputs_have_no_graph():
    env = BraxWrapper(PointMass(), batch_size=(3,), seed=0)
    td = env.reset().set("action", torch.zeros(3, 2, requires_grad=True))
    assert not env.step(td)["next", "observation"].requires_grad


@pytest.mark.slow
def test_brax_physics_gradient():
    env = BraxEnv(
        "inverted_pendulum", backend="positional", batch_size=(2,), requires_grad=True, seed=0
    )
    _check_against_finite_differences(env, steps=2, eps=1e-2)
