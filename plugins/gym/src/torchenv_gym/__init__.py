"""torchenv-gym: gym and gymnasium envs for torchenv.

>>> from torchenv_gym import GymEnv
>>> env = GymEnv("CartPole-v1")
>>> env.rollout(3).batch_size
torch.Size([3])
"""

from torchenv_gym._backend import gym_backend, set_gym_backend
from torchenv_gym._env import GymEnv, GymWrapper
from torchenv_gym._info import BaseInfoDictReader, default_info_dict_reader
from torchenv_gym._spaces import gym_space_to_spec, register_gym_spec_conversion

__all__ = [
    "BaseInfoDictReader",
    "GymEnv",
    "GymWrapper",
    "default_info_dict_reader",
    "gym_backend",
    "gym_space_to_spec",
    "register_gym_spec_conversion",
    "set_gym_backend",
]
