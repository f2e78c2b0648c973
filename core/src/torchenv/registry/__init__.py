"""torchenv.registry: backend plugins found through entry points, and ``make`` by name.

>>> import torchenv
>>> env = torchenv.make("builtin:Pendulum")
>>> "builtin" in [b.name for b in torchenv.backends()]
True
>>> torchenv.list_envs("builtin")
['CartPole', 'Pendulum', 'TicTacToe']
"""

from torchenv.registry._errors import (
    AmbiguousNameError,
    BackendUnavailableError,
    InvalidEnvNameError,
    InvalidKwargError,
    PluginExitError,
    PluginWarning,
    TorchEnvRegistryError,
    UnknownBackendError,
    UnknownEnvError,
)
from torchenv.registry._hookspecs import Backend, hookimpl, hookspec
from torchenv.registry._info import (
    FAILED_TO_LOAD,
    OK,
    SIMULATOR_MISSING,
    STATUSES,
    UNSUPPORTED_VERSION,
    BackendInfo,
)
from torchenv.registry._make import backends, list_envs, make, split_name
from torchenv.registry._manager import (
    DISABLE_ENV_VAR,
    ENTRY_POINT_GROUP,
    PluginRecord,
    plugin_manager,
    plugins,
    register_plugin,
    reset_plugins,
    unregister_plugin,
)
from torchenv.registry._raw import raw_loop

__all__ = [
    "raw_loop",
    "DISABLE_ENV_VAR",
    "ENTRY_POINT_GROUP",
    "FAILED_TO_LOAD",
    "OK",
    "SIMULATOR_MISSING",
    "STATUSES",
    "UNSUPPORTED_VERSION",
    "AmbiguousNameError",
    "Backend",
    "BackendInfo",
    "BackendUnavailableError",
    "InvalidEnvNameError",
    "InvalidKwargError",
    "PluginExitError",
    "PluginWarning",
    "PluginRecord",
    "TorchEnvRegistryError",
    "UnknownBackendError",
    "UnknownEnvError",
    "backends",
    "hookimpl",
    "hookspec",
    "list_envs",
    "make",
    "plugin_manager",
    "plugins",
    "register_plugin",
    "reset_plugins",
    "split_name",
    "unregister_plugin",
]
