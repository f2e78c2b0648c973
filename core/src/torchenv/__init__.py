"""torchenv: one TensorDict-based environment API for PyTorch RL, over every simulator.

The public API lives here, on one screen. Names are imported lazily from the layer that
defines them, so ``import torchenv`` stays cheap and imports no simulator.

>>> import torchenv
>>> env = torchenv.make("builtin:Pendulum")
>>> rollout = env.rollout(3)
>>> rollout.batch_size
torch.Size([3])
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# name -> module that defines it. One entry per public name.
_EXPORTS: dict[str, str] = {
    # specs
    **{
        name: "torchenv.specs"
        for name in (
            "TensorSpec",
            "Unbounded",
            "UnboundedContinuous",
            "UnboundedDiscrete",
            "Bounded",
            "BoundedContinuous",
            "BoundedDiscrete",
            "Categorical",
            "OneHot",
            "MultiCategorical",
            "MultiOneHot",
            "Binary",
            "NonTensor",
            "Choice",
            "Composite",
            "Stacked",
            "StackedComposite",
            "check_no_exclusive_keys",
            "consolidate_spec",
            "contains_lazy_spec",
        )
    },
    # envs
    **{
        name: "torchenv.envs"
        for name in (
            "EnvBase",
            "EnvMetaData",
            "ExplorationType",
            "exploration_type",
            "set_exploration_type",
            "MarlGroupMapType",
            "RandomPolicy",
            "check_env_specs",
            "check_marl_grouping",
            "get_available_libraries",
            "make_composite_from_td",
            "step_mdp",
            "terminated_or_truncated",
            "PendulumEnv",
            "CartPoleEnv",
            "TicTacToeEnv",
        )
    },
    # transforms
    **{
        name: "torchenv.transforms"
        for name in (
            "ActionDiscretizer",
            "ActionMask",
            "AutoResetEnv",
            "AutoResetTransform",
            "BatchSizeTransform",
            "BinarizeReward",
            "CatFrames",
            "CatTensors",
            "CenterCrop",
            "ClipTransform",
            "Compose",
            "ConditionalSkip",
            "Crop",
            "DTypeCastTransform",
            "DeviceCastTransform",
            "DiscreteActionProjection",
            "DoubleToFloat",
            "EndOfLifeTransform",
            "ExcludeTransform",
            "FiniteTensorDictCheck",
            "FlattenObservation",
            "FrameSkipTransform",
            "GrayScale",
            "Hash",
            "InitTracker",
            "LineariseRewards",
            "MultiAction",
            "NoopResetEnv",
            "ObservationNorm",
            "ObservationTransform",
            "PermuteTransform",
            "RemoveEmptySpecs",
            "RenameTransform",
            "Resize",
            "Reward2GoTransform",
            "RewardClipping",
            "RewardScaling",
            "RewardSum",
            "SelectTransform",
            "SignTransform",
            "SqueezeTransform",
            "Stack",
            "StepCounter",
            "SuccessReward",
            "TerminateTransform",
            "PinMemoryTransform",
            "TargetReturn",
            "TensorDictPrimer",
            "TimeMaxPool",
            "Timer",
            "ToTensorImage",
            "TrajCounter",
            "Transform",
            "TransformedEnv",
            "UnaryTransform",
            "UnsqueezeTransform",
            "VecNorm",
            "VecNormV2",
            "ExpandAs",
            "NextObservationDelta",
            "RandomTruncationTransform",
            "MultiStepTransform",
            "RandomCropTensorDict",
            "gSDENoise",
            "auto_unwrap_transformed_env",
            "set_auto_unwrap_transformed_env",
        )
    },
    # batched
    **{
        name: "torchenv.batched"
        for name in (
            "SerialEnv",
            "ParallelEnv",
            "RayParallelEnv",
            "EnvCreator",
            "AsyncEnvPool",
            "ProcessorAsyncEnvPool",
            "ThreadingAsyncEnvPool",
        )
    },
    # versions
    "implement_for": "torchenv.versions",
    # outward interfaces
    "to_gymnasium": "torchenv.interop",
    # registry
    **{
        name: "torchenv.registry"
        for name in (
            "make",
            "backends",
            "list_envs",
            "Backend",
            "BackendInfo",
            "hookimpl",
            "hookspec",
        )
    },
}

__all__ = sorted([*_EXPORTS, "__version__"])

# TorchRL interop: once torchrl is imported too, our envs and specs pass its isinstance checks.
from torchenv.interop._hook import install_torchrl_hook  # noqa: E402

install_torchrl_hook()
del install_torchrl_hook


def __getattr__(name: str) -> Any:
    if name == "__version__":
        from importlib.metadata import version

        return version("torchenv")
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'torchenv' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__


if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from torchenv.batched import (  # noqa: F401
        AsyncEnvPool,
        EnvCreator,
        ParallelEnv,
        ProcessorAsyncEnvPool,
        RayParallelEnv,
        SerialEnv,
        ThreadingAsyncEnvPool,
    )
    from torchenv.envs import EnvBase, check_env_specs, step_mdp  # noqa: F401
    from torchenv.registry import backends, list_envs, make  # noqa: F401
    from torchenv.specs import Composite, TensorSpec  # noqa: F401
    from torchenv.transforms import Compose, Transform, TransformedEnv  # noqa: F401
    from torchenv.versions import implement_for  # noqa: F401
