"""torchenv.specs: the TensorSpec family (layer 1), TorchRL-compatible.

>>> import torch
>>> from torchenv.specs import Bounded, Categorical, Composite, OneHot, Unbounded
>>> spec = Composite(
...     observation=Unbounded(shape=(4,)),
...     action=OneHot(6),
...     done=Categorical(2, shape=(1,), dtype=torch.bool),
... )
>>> td = spec.rand()
>>> spec.is_in(td)
True
"""

from torchenv.specs._base import TensorSpec
from torchenv.specs._boxes import BinaryBox, Box, BoxList, CategoricalBox, ContinuousBox
from torchenv.specs._choice import Choice
from torchenv.specs._composite import Composite
from torchenv.specs._consolidate import (
    check_no_exclusive_keys,
    consolidate_spec,
    contains_lazy_spec,
)
from torchenv.specs._continuous import (
    Bounded,
    BoundedContinuous,
    BoundedDiscrete,
    Unbounded,
    UnboundedContinuous,
    UnboundedDiscrete,
)
from torchenv.specs._discrete import Binary, Categorical, OneHot
from torchenv.specs._errors import (
    SpecArgumentError,
    SpecEncodeError,
    SpecError,
    SpecIndexError,
    SpecIndexTypeError,
    SpecKeyError,
    SpecLockedError,
    SpecShapeError,
    SpecTypeError,
    SpecValueError,
)
from torchenv.specs._legacy import (
    BinaryDiscreteTensorSpec,
    BoundedTensorSpec,
    CompositeSpec,
    DiscreteTensorSpec,
    LazyStackedCompositeSpec,
    LazyStackedTensorSpec,
    MultiDiscreteTensorSpec,
    MultiOneHotDiscreteTensorSpec,
    NonTensorSpec,
    OneHotDiscreteTensorSpec,
    UnboundedContinuousTensorSpec,
    UnboundedDiscreteTensorSpec,
)
from torchenv.specs._multi import MultiCategorical, MultiOneHot
from torchenv.specs._nontensor import NonTensor
from torchenv.specs._stack import stack_specs
from torchenv.specs._stacked import Stacked, StackedComposite

__all__ = [
    # legacy TorchRL names (aliases)
    "BinaryDiscreteTensorSpec",
    "BoundedTensorSpec",
    "CompositeSpec",
    "DiscreteTensorSpec",
    "LazyStackedCompositeSpec",
    "LazyStackedTensorSpec",
    "MultiDiscreteTensorSpec",
    "MultiOneHotDiscreteTensorSpec",
    "NonTensorSpec",
    "OneHotDiscreteTensorSpec",
    "UnboundedContinuousTensorSpec",
    "UnboundedDiscreteTensorSpec",
    # specs
    "Binary",
    "BinaryBox",
    "Bounded",
    "BoundedContinuous",
    "BoundedDiscrete",
    "Box",
    "BoxList",
    "Categorical",
    "CategoricalBox",
    "Choice",
    "Composite",
    "ContinuousBox",
    "MultiCategorical",
    "MultiOneHot",
    "NonTensor",
    "OneHot",
    "SpecArgumentError",
    "SpecEncodeError",
    "SpecError",
    "SpecIndexError",
    "SpecIndexTypeError",
    "SpecKeyError",
    "SpecLockedError",
    "SpecShapeError",
    "SpecTypeError",
    "SpecValueError",
    "Stacked",
    "StackedComposite",
    "TensorSpec",
    "Unbounded",
    "UnboundedContinuous",
    "UnboundedDiscrete",
    "check_no_exclusive_keys",
    "consolidate_spec",
    "contains_lazy_spec",
    "stack_specs",
]
