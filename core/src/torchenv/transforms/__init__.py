"""torchenv.transforms: ``Transform``, ``TransformedEnv``, ``Compose`` and the transform catalog.

>>> from torchenv.envs import PendulumEnv
>>> from torchenv.transforms import Compose, DoubleToFloat, StepCounter, TransformedEnv
>>> env = TransformedEnv(PendulumEnv(), Compose(StepCounter(max_steps=5), DoubleToFloat()))
>>> env.rollout(10).shape
torch.Size([5])
"""

from torchenv.transforms._actions import (
    ActionDiscretizer,
    ActionMask,
    DiscreteActionProjection,
    MultiAction,
)
from torchenv.transforms._auto_unwrap import (
    auto_unwrap_transformed_env,
    set_auto_unwrap_transformed_env,
)
from torchenv.transforms._base import ObservationTransform, Transform
from torchenv.transforms._compose import Compose
from torchenv.transforms._done import RandomTruncationTransform, StepCounter, TerminateTransform
from torchenv.transforms._dtype_device import DeviceCastTransform, DoubleToFloat, DTypeCastTransform
from torchenv.transforms._frames import CatFrames, FrameSkipTransform, NoopResetEnv, TimeMaxPool
from torchenv.transforms._image import (
    CenterCrop,
    Crop,
    FlattenObservation,
    GrayScale,
    PermuteTransform,
    Resize,
    SqueezeTransform,
    ToTensorImage,
    UnsqueezeTransform,
)
from torchenv.transforms._keys import (
    ExcludeTransform,
    RemoveEmptySpecs,
    RenameTransform,
    SelectTransform,
)
from torchenv.transforms._misc import (
    AutoResetTransform,
    BatchSizeTransform,
    ConditionalSkip,
    EndOfLifeTransform,
    FiniteTensorDictCheck,
    PinMemoryTransform,
    Timer,
)
from torchenv.transforms._normalization import ObservationNorm, VecNorm
from torchenv.transforms._primers import InitTracker, TensorDictPrimer, TrajCounter, gSDENoise
from torchenv.transforms._replay import (
    MultiStepTransform,
    NextObservationDelta,
    RandomCropTensorDict,
)
from torchenv.transforms._reward import (
    BinarizeReward,
    LineariseRewards,
    Reward2GoTransform,
    RewardClipping,
    RewardScaling,
    RewardSum,
    SuccessReward,
    TargetReturn,
)
from torchenv.transforms._tensors import (
    CatTensors,
    ClipTransform,
    ExpandAs,
    Hash,
    SignTransform,
    Stack,
    UnaryTransform,
)
from torchenv.transforms._transformed_env import AutoResetEnv, TransformedEnv

# TorchRL's private helper for custom transforms, importable where TorchRL code looks for it.
from torchenv.transforms._utils import _apply_to_composite as _apply_to_composite
from torchenv.transforms._vecnorm_v2 import VecNormV2

__all__ = [
    "auto_unwrap_transformed_env",
    "set_auto_unwrap_transformed_env",
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
    "ExpandAs",
    "FiniteTensorDictCheck",
    "FlattenObservation",
    "FrameSkipTransform",
    "GrayScale",
    "Hash",
    "InitTracker",
    "LineariseRewards",
    "MultiAction",
    "MultiStepTransform",
    "NextObservationDelta",
    "NoopResetEnv",
    "ObservationNorm",
    "ObservationTransform",
    "PermuteTransform",
    "PinMemoryTransform",
    "RandomCropTensorDict",
    "RandomTruncationTransform",
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
    "TargetReturn",
    "TensorDictPrimer",
    "TerminateTransform",
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
    "gSDENoise",
]
