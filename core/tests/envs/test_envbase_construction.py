"""EnvBase subclasses written the TorchRL way: ``__new__`` with arguments, specs set early."""

from __future__ import annotations

import torch
from tensordict import TensorDict

from torchenv.envs import EnvBase, check_env_specs
from torchenv.specs import Bounded, Categorical, Composite, Unbounded


class _Steps:
    """``_reset`` / ``_step`` / ``_set_seed`` of a 3-observation, 1-action env."""

    def _reset(self, tensordict=None, **kwargs):
        return TensorDict(observation=torch.zeros(*self.batch_size, 3), batch_size=self.batch_size)

    def _step(self, tensordict):
        b = self.batch_size
        return TensorDict(
            observation=tensordict["action"].expand(*b, 3) + 1,
            reward=torch.ones(*b, 1),
            done=torch.zeros(*b, 1, dtype=torch.bool),
            batch_size=b,
        )

    def _set_seed(self, seed):
        self.seed = seed


class NewWithArgs(_Steps, EnvBase):
    def __new__(cls, *args, **kwargs):
        return super().__new__(cls, *args, **kwargs)

    def __init__(self, size: int = 3, **kwargs):
        super().__init__(**kwargs)
        self.observation_spec = Composite(observation=Unbounded((size,)))
        self.action_spec = Bounded(-1.0, 1.0, (1,))
        self.reward_spec = Unbounded((1,))


class SpecsBeforeInit(_Steps, EnvBase):
    def __init__(self):
        self.observation_spec = Composite(observation=Unbounded((3,)))
        self.action_spec = Bounded(-1.0, 1.0, (1,))
        super().__init__()
        self.reward_spec = Unbounded((1,))


class ClassLevelSpecs(_Steps, EnvBase):
    """The pattern of TorchRL's mock envs: ``cls._output_spec`` / ``cls._input_spec`` in __new__."""

    @classmethod
    def __new__(cls, *args, batch_size=(), **kwargs):
        b = torch.Size(batch_size)
        flag = Categorical(2, (*b, 1), dtype=torch.bool)
        cls._output_spec = Composite(
            full_observation_spec=Composite(observation=Unbounded((*b, 3)), shape=b),
            full_reward_spec=Composite(reward=Unbounded((*b, 1)), shape=b),
            full_done_spec=Composite(done=flag, terminated=flag.clone(), shape=b),
            shape=b,
        )
        cls._input_spec = Composite(
            full_action_spec=Composite(action=Bounded(-1.0, 1.0, (*b, 1)), shape=b),
            full_state_spec=Composite(shape=b),
            shape=b,
        )
        return super().__new__(*args, **kwargs)

    def __init__(self, *args, batch_size=(), **kwargs):
        super().__init__(batch_size=batch_size, device="cpu")


def test_new_taking_the_constructor_arguments():
    env = NewWithArgs(size=3)
    check_env_specs(env)
    assert env.rollout(4).batch_size == (4,)


def test_specs_set_before_envbase_init_are_kept():
    env = SpecsBeforeInit()
    assert list(env.observation_spec.keys()) == ["observation"]
    assert env.action_spec == Bounded(-1.0, 1.0, (1,))
    check_env_specs(env)


def test_class_level_spec_containers_are_adopted_with_the_batch_size():
    env = ClassLevelSpecs(batch_size=(2,))
    assert env.batch_size == (2,)
    assert env.full_action_spec["action"].shape == (2, 1)
    check_env_specs(env)
    assert env.rollout(3).batch_size == (2, 3)
    assert ClassLevelSpecs().batch_size == ()


def test_batch_unlocked_through_new_as_torchrl():
    class Unlocked(NewWithArgs):
        def __new__(cls, *args, **kwargs):
            return super().__new__(cls, *args, _batch_locked=False, **kwargs)

    assert Unlocked().batch_locked is False
    assert NewWithArgs().batch_locked is True
