"""torchenv.transforms: ``Transform``, ``TransformedEnv``, ``Compose`` and the transform catalog.

>>> from torchenv.envs import PendulumEnv
>>> from torchenv.transforms import Compose, DoubleToFloat, StepCounter, TransformedEnv
>>> env = TransformedEnv(PendulumEnv(), Compose(StepCounter(max_steps=5), DoubleToFloat()))
>>> env.rollout(10).shape
torch.Size([5])
"""

from torchenv.transforms._base import ObservationTransform, Transform
from torchenv.transforms._compose import Compose
from torchenv.transforms._done import StepCounter
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
from torchenv.transforms._normalization import ObservationNorm, VecNorm
from torchenv.transforms._reward import (
    BinarizeReward,
    LineariseRewards,
    Reward2GoTransform,
    RewardClipping,
    RewardScaling,
    RewardSum,
    TargetReturn,
)
from torchenv.transforms._tensors import (
    CatTensors,
    ClipTransform,
    Hash,
    SignTransform,
    Stack,
    UnaryTransform,
)
from torchenv.transforms._transformed_env import AutoResetEnv, TransformedEnv

__all__ = [
    "AutoResetEnv",
    "BinarizeReward",
    "CatFrames",
    "CatTensors",
    "CenterCrop",
    "ClipTransform",
    "Compose",
    "Crop",
    "DTypeCastTransform",
    "DeviceCastTransform",
    "DoubleToFloat",
    "ExcludeTransform",
    "FlattenObservation",
    "FrameSkipTransform",
    "GrayScale",
    "Hash",
    "LineariseRewards",
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
    "TargetReturn",
    "TimeMaxPool",
    "ToTensorImage",
    "Transform",
    "TransformedEnv",
    "UnaryTransform",
    "UnsqueezeTransform",
    "VecNorm",
]
