"""TorchRL's pre-0.6 spec names, kept as aliases so older code runs unchanged.

>>> from torchenv.specs import Composite, CompositeSpec
>>> CompositeSpec is Composite
True
"""

from __future__ import annotations

from torchenv.specs._composite import Composite
from torchenv.specs._continuous import Bounded, UnboundedContinuous, UnboundedDiscrete
from torchenv.specs._discrete import Binary, Categorical, OneHot
from torchenv.specs._multi import MultiCategorical, MultiOneHot
from torchenv.specs._nontensor import NonTensor
from torchenv.specs._stacked import Stacked, StackedComposite

CompositeSpec = Composite
UnboundedContinuousTensorSpec = UnboundedContinuous
UnboundedDiscreteTensorSpec = UnboundedDiscrete
BoundedTensorSpec = Bounded
DiscreteTensorSpec = Categorical
OneHotDiscreteTensorSpec = OneHot
BinaryDiscreteTensorSpec = Binary
MultiDiscreteTensorSpec = MultiCategorical
MultiOneHotDiscreteTensorSpec = MultiOneHot
NonTensorSpec = NonTensor
LazyStackedTensorSpec = Stacked
LazyStackedCompositeSpec = StackedComposite
