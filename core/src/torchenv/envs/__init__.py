"""torchenv.envs: ``EnvBase``, the MDP contract and its utilities (TorchRL-compatible)."""

from torchenv.envs._checks import check_env_specs
from torchenv.envs._common import EnvBase
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
    "CartPoleEnv",
    "EnvBase",
    "EnvMetaData",
    "MarlGroupMapType",
    "MarlLayout",
    "PendulumEnv",
    "TicTacToeEnv",
    "check_marl_grouping",
    "get_available_libraries",
    "group_map_by_prefix",
    "resolve_group_map",
    "RandomPolicy",
    "check_env_specs",
    "make_composite_from_td",
    "step_mdp",
    "terminated_or_truncated",
]
