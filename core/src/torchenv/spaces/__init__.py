"""torchenv.spaces: spaces → specs, and numpy values both ways, for any simulator.

gym, gymnasium, PettingZoo and VMAS describe their envs with the same space classes; they are
recognised by class name, so nothing here imports a simulator. :func:`space_to_spec` converts a
space; :func:`make_reader` / :func:`make_writer` build the per-env converters of its values
(observations → tensors, action tensors or arrays → what the simulator takes).

>>> import numpy as np
>>> from torchenv.spaces import space_to_spec
>>> class MultiBinary:
...     n, dtype = 3, np.dtype("int8")
>>> space_to_spec(MultiBinary()).shape
torch.Size([3])
"""

from torchenv.spaces._codec import (
    make_array_reader,
    make_array_writer,
    make_direct_obs_writer,
    make_obs_array_reader,
    make_reader,
    make_writer,
    to_numpy,
)
from torchenv.spaces._convert import (
    gym_space_to_spec,
    numpy_to_torch_dtype,
    register_gym_spec_conversion,
    register_space_conversion,
    space_to_spec,
    tuple_is_stacked,
)

__all__ = [
    "gym_space_to_spec",
    "make_array_reader",
    "make_array_writer",
    "make_direct_obs_writer",
    "make_obs_array_reader",
    "make_reader",
    "make_writer",
    "numpy_to_torch_dtype",
    "register_gym_spec_conversion",
    "register_space_conversion",
    "space_to_spec",
    "to_numpy",
    "tuple_is_stacked",
]
