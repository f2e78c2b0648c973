"""Make torchenv envs and specs pass TorchRL's type checks.

TorchRL's collectors, modules and losses branch on ``isinstance(x, torchrl.envs.EnvBase)`` and
``isinstance(spec, torchrl.data.OneHot)``. Both of TorchRL's roots (``EnvBase`` and
``TensorSpec``) are abstract base classes, so our classes can be registered as their virtual
subclasses: the checks pass, and TorchRL then calls the methods our classes share with its own
(the API is the same by design). Nothing is copied or wrapped, so a step costs what it costs.

The registration runs once, when both torchenv and torchrl are imported (see
:mod:`torchenv.interop._hook`), and can be run by hand with :func:`register_with_torchrl`.
"""

from __future__ import annotations

import importlib
import warnings
from typing import Any

__all__ = ["register_with_torchrl", "is_registered_with_torchrl"]

# torchenv.specs name -> torchrl.data name, for every spec class TorchRL code tests for.
_SPEC_CLASSES = {
    "TensorSpec": "TensorSpec",
    "Unbounded": "Unbounded",
    "Bounded": "Bounded",
    "Categorical": "Categorical",
    "OneHot": "OneHot",
    "MultiCategorical": "MultiCategorical",
    "MultiOneHot": "MultiOneHot",
    "Binary": "Binary",
    "NonTensor": "NonTensor",
    "Choice": "Choice",
    "Composite": "Composite",
    "Stacked": "Stacked",
    "StackedComposite": "StackedComposite",
}

_registered = False


def is_registered_with_torchrl() -> bool:
    """Whether :func:`register_with_torchrl` has run in this process."""
    return _registered


def register_with_torchrl() -> bool:
    """Register torchenv's env and spec classes with TorchRL's abstract base classes.

    After this, ``isinstance(env, torchrl.envs.EnvBase)`` and
    ``isinstance(spec, torchrl.data.OneHot)`` hold for torchenv objects, and TorchRL's
    action-space lookup (``QValueModule(spec=...)``, ``DQNLoss(action_space=...)``) knows our
    spec classes. It runs by itself when torchrl is imported; calling it again does nothing.

    Returns:
        ``True`` when the classes are registered, ``False`` when torchrl is not installed.

    >>> from torchenv.interop import register_with_torchrl
    >>> isinstance(register_with_torchrl(), bool)
    True
    """
    global _registered
    if _registered:
        return True
    try:
        trl_envs = importlib.import_module("torchrl.envs")
        trl_data = importlib.import_module("torchrl.data")
    except ImportError:
        return False
    _registered = True  # set first: the imports below may re-enter through the hook
    try:
        _register(trl_envs, trl_data)
    except Exception as err:  # never break an import of torchrl or torchenv
        warnings.warn(
            f"torchenv could not register its classes with torchrl ({type(err).__name__}: "
            f"{err}); torchenv envs will not pass TorchRL's isinstance checks",
            RuntimeWarning,
            stacklevel=2,
        )
    return True


def _register(trl_envs: Any, trl_data: Any) -> None:
    from torchenv import specs as ours
    from torchenv.envs import EnvBase

    trl_envs.EnvBase.register(EnvBase)
    action_spaces = importlib.import_module("torchrl.data.utils").ACTION_SPACE_MAP
    for our_name, their_name in _SPEC_CLASSES.items():
        theirs = getattr(trl_data, their_name, None)
        mine = getattr(ours, our_name)
        if theirs is None:
            continue
        theirs.register(mine)
        if theirs in action_spaces:
            action_spaces.setdefault(mine, action_spaces[theirs])
