"""``check_finite`` (issue 35): the first NaN/inf action, observation or reward is reported with
its key and batch rows: once per env by default, every time with ``"raise"``, never with
``"ignore"``; on every step path (step, step_and_maybe_reset, rollout, batched envs)."""

from __future__ import annotations

import warnings

import pytest
import torch
from tensordict import TensorDict

import torchenv
from torchenv.batched import SerialEnv
from torchenv.envs import EnvBase, NonFiniteError, PendulumEnv
from torchenv.specs import Bounded, Composite, Unbounded


class NanObsEnv(EnvBase):
    """A batch of 4; the observation of row 2 becomes NaN at the second step."""

    def __init__(self, **kwargs):
        super().__init__(batch_size=(4,), **kwargs)
        self.observation_spec = Composite(observation=Unbounded((4, 3)), shape=(4,))
        self.action_spec = Bounded(-1.0, 1.0, shape=(4, 1))
        self.reward_spec = Unbounded((4, 1))
        self.t = 0

    def _reset(self, tensordict=None, **kwargs):
        self.t = 0
        return TensorDict(
            observation=torch.zeros(4, 3), done=torch.zeros(4, 1, dtype=torch.bool), batch_size=4
        )

    def _step(self, tensordict):
        self.t += 1
        obs = torch.full((4, 3), float(self.t))
        if self.t >= 2:
            obs[2, 1] = float("nan")
        return TensorDict(
            observation=obs,
            reward=torch.ones(4, 1),
            done=torch.zeros(4, 1, dtype=torch.bool),
            batch_size=4,
        )

    def _set_seed(self, seed):
        pass


def _nan_action(env, td):
    td = env.rand_action(td)
    td["action"] = torch.full_like(td["action"], float("nan"))
    return td


def _finite_warnings(record) -> list[str]:
    return [str(w.message) for w in record if "non-finite" in str(w.message)]


def test_default_warns_once_naming_the_action():
    env = PendulumEnv()
    assert env.check_finite == "warn"
    td = env.reset()
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        for _ in range(3):
            td = env.step(_nan_action(env, td))["next"]
    (message,) = _finite_warnings(record)
    assert "non-finite action 'action'" in message and "NaN" in message


def test_raise_mode_raises_at_every_step_with_key_and_rows():
    env = NanObsEnv(check_finite="raise")
    td = env.reset()
    td = env.step(env.rand_action(td))["next"]  # finite
    for _ in range(2):
        with pytest.raises(
            NonFiniteError, match=r"observation 'observation' at batch index \(2,\)"
        ) as info:
            env.step(env.rand_action(td))
        assert info.value.key == "observation" and info.value.rows == [(2,)]


def test_ignore_mode_and_the_property():
    env = PendulumEnv(check_finite="ignore")
    td = env.reset()
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        env.step(_nan_action(env, td))
    assert _finite_warnings(record) == []
    env.check_finite = "raise"
    with pytest.raises(NonFiniteError, match="action 'action'"):
        env.step(_nan_action(env, env.reset()))
    with pytest.raises(ValueError, match="check_finite must be one of 'warn', 'raise', 'ignore'"):
        env.check_finite = "loud"
    with pytest.raises(ValueError, match="check_finite must be one of"):
        PendulumEnv(check_finite=True)


def test_make_takes_check_finite_for_every_backend():
    env = torchenv.make("builtin:Pendulum", check_finite="raise")
    assert env.check_finite == "raise"
    with pytest.raises(NonFiniteError):
        env.rollout(3, policy=lambda td: _nan_action(env, td))
    with pytest.raises(ValueError, match="check_finite must be one of"):
        torchenv.make("builtin:Pendulum", check_finite="never")


def test_rollout_and_step_and_maybe_reset_report_only_the_affected_rows():
    env = NanObsEnv()
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        env.rollout(4)
    (message,) = _finite_warnings(record)
    assert "observation 'observation' at batch index (2,):" in message
    env = NanObsEnv(check_finite="raise")
    td = env.reset()
    _, td = env.step_and_maybe_reset(env.rand_action(td))
    with pytest.raises(NonFiniteError, match=r"batch index \(2,\)"):
        env.step_and_maybe_reset(env.rand_action(td))


def test_batched_env_reports_the_worker_row():
    env = SerialEnv(3, PendulumEnv)
    env.check_finite = "raise"
    td = env.reset()
    td = env.rand_action(td)
    td["action"][1] = float("inf")
    with pytest.raises(NonFiniteError, match=r"action 'action' at batch index \(1,\): inf"):
        env.step_and_maybe_reset(td)
    with pytest.raises(NonFiniteError, match=r"batch index \(1,\)"):
        env.step(td)
    env.close()


def test_finite_data_passes_and_a_sum_overflow_is_not_reported():
    env = NanObsEnv(check_finite="raise")
    td = env.reset()
    env.step(env.rand_action(td))
    big = torch.full((4, 3), 3e38)  # its sum overflows to inf; every element is finite
    from torchenv.envs._finite import check_values

    check_values(env, None, TensorDict(observation=big, batch_size=4), 1)


@pytest.mark.parametrize("kind", ["tensor", "array"])
@pytest.mark.parametrize(
    "shape", [(), (1,), (5,), (2, 3), (1, 64), (65,), (3, 30), (2, 3, 4)], ids=str
)
@pytest.mark.parametrize("bad", [float("nan"), float("inf"), float("-inf")], ids=str)
def test_every_size_and_kind_of_value_is_looked_at(shape, kind, bad):
    # the fast look sums small values as Python lists and large ones with the library's
    # reduction, tensors and the direct paths' numpy arrays: each way must see a bad element
    from torchenv.envs._finite import check_values

    env = NanObsEnv(check_finite="raise")
    value = torch.ones(shape)
    value.view(-1)[-1] = bad
    if kind == "array":
        value = value.numpy()
    batch_dims = min(len(shape), 1)
    with pytest.raises(NonFiniteError) as info:
        check_values(env, None, {"observation": value}, batch_dims)
    assert info.value.key == "observation"
    expected_row = [()] if batch_dims == 0 else [(shape[0] - 1,)]
    assert info.value.rows == expected_row
    finite = torch.ones(shape)
    check_values(env, None, {"observation": finite.numpy() if kind == "array" else finite}, 0)


def test_a_tensor_that_requires_grad_is_looked_at():
    from torchenv.envs._finite import check_values

    env = NanObsEnv(check_finite="raise")
    action = torch.full((4, 1), float("nan"), requires_grad=True)
    with pytest.raises(NonFiniteError, match="action"):
        check_values(env, {"action": action}, None, 1)


def test_direct_path_looks_at_nested_group_outputs():
    # the direct step_and_maybe_reset looks at its numpy arrays, keyed (group, name)
    from test_envbase_direct_nested import Herd

    class NanHerd(Herd):
        def _obs(self):
            obs = super()._obs()
            if self.age.max() >= 2:
                obs["cats"]["position"][1, 0, 1] = float("nan")
            return obs

        def _step(self, tensordict):  # the direct path must not fall back to this
            raise AssertionError("the TensorDict path was taken")

    env = NanHerd((4,), check_finite="raise")
    env.set_seed(0)
    td = env.reset()
    td = env.rand_action(td)
    _, td = env.step_and_maybe_reset(td)
    td = env.rand_action(td)
    with pytest.raises(NonFiniteError) as info:
        env.step_and_maybe_reset(td)
    assert info.value.key == ("cats", "position")
    assert info.value.rows == [(1,)]
