"""torchenv.envs: ``EnvBase``, the MDP contract and its utilities (TorchRL-compatible)."""

from tensordict.nn import InteractionType as ExplorationType
from tensordict.nn import set_interaction_type as set_exploration_type
from tensordict.nn.probabilistic import interaction_type as exploration_type

from torchenv.envs._array import ArrayEnv
from torchenv.envs._checks import check_env_specs
from torchenv.envs._closed import EnvClosedError
from torchenv.envs._common import EnvBase
from torchenv.envs._finite import NonFiniteError
from torchenv.envs._info import BaseInfoDictReader, default_info_dict_reader
from torchenv.envs._libraries import get_available_libraries
from torchenv.envs._marl import (
    MarlGroupMapType,
    check_marl_grouping,
    group_map_by_prefix,
    resolve_group_map,
)
from torchenv.envs._marl_layout import MarlLayout
from torchenv.envs._metadata import EnvMetaData
from torchenv.envs._step_mdp import step_mdp
from torchenv.envs._utils import RandomPolicy, make_composite_from_td, terminated_or_truncated
from torchenv.envs.builtin import CartPoleEnv, PendulumEnv, TicTacToeEnv

__all__ = [
    "ArrayEnv",
    "BaseInfoDictReader",
    "CartPoleEnv",
    "EnvBase",
    "EnvClosedError",
    "EnvMetaData",
    "ExplorationType",
    "MarlGroupMapType",
    "MarlLayout",
    "NonFiniteError",
    "PendulumEnv",
    "TicTacToeEnv",
    "check_marl_grouping",
    "exploration_type",
    "get_available_libraries",
    "group_map_by_prefix",
    "resolve_group_map",
    "RandomPolicy",
    "check_env_specs",
    "default_info_dict_reader",
    "make_composite_from_td",
    "set_exploration_type",
    "step_mdp",
    "terminated_or_truncated",
]
