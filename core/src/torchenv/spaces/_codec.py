"""Move values between spaces and torch: observation readers and action writers, built once.

A *reader* turns what the simulator returns for a space into a tensor (or a nested dict of tensors)
matching the space's spec; a *writer* turns an action (a tensor, or its numpy view) into what the
simulator's ``step`` expects. Both are
closures chosen at construction, so the per-step path runs no dispatch and no validation. Arrays
become tensors with ``torch.from_numpy`` (no copy).

``batch`` is the shape of the leading dims added by a vector env (``()`` for a single env).

>>> import numpy as np
>>> from torchenv.spaces import space_to_spec
>>> class Box:  # duck-typed: any class named Box with these attributes
...     shape, dtype, low, high = (2,), np.dtype("float32"), -1.0, 1.0
>>> spec = space_to_spec(Box())
>>> make_reader(Box(), spec)(np.zeros(2, np.float32))
tensor([0., 0.])
>>> make_writer(Box(), spec)(spec.zero())
array([0., 0.], dtype=float32)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from tensordict import NonTensorData, TensorDict, TensorDictBase

from torchenv.specs import Composite, TensorSpec

__all__ = [
    "make_array_reader",
    "make_array_writer",
    "make_direct_obs_writer",
    "make_obs_array_reader",
    "make_reader",
    "make_writer",
    "to_numpy",
]

Reader = Callable[[Any], Any]
Writer = Callable[[Any], Any]


def _kind(space: Any) -> str:
    for klass in type(space).__mro__:
        if klass.__name__ in _KINDS:
            return klass.__name__
    return ""


_KINDS = {"Box", "Discrete", "MultiDiscrete", "MultiBinary", "Dict", "Tuple"}


def _start(space: Any) -> Any:
    start = getattr(space, "start", 0)
    return start if np.any(start) else 0


def to_numpy(a: torch.Tensor | np.ndarray) -> np.ndarray:
    """The numpy view of an action tensor (detached and moved to the cpu only when needed);
    numpy arrays are returned as they are."""
    if type(a) is np.ndarray:
        return a
    try:
        return a.numpy()
    except (RuntimeError, TypeError):  # requires grad, or not on the cpu
        return a.detach().cpu().numpy()


# ---------------------------------------------------------------------------------------- readers
def make_reader(space: Any, spec: TensorSpec, batch: tuple[int, ...] = ()) -> Reader:
    """Build ``read(value) -> tensor | dict`` for values of ``space`` converted to ``spec``."""
    kind = _kind(space)
    if kind == "Box":
        np_dtype = np.dtype(space.dtype)
        if tuple(space.shape) == ():
            shape = (*batch, 1)
            return lambda v: torch.from_numpy(np.asarray(v, dtype=np_dtype).reshape(shape))
        return lambda v: torch.from_numpy(np.asarray(v, dtype=np_dtype))
    if kind in ("Discrete", "MultiDiscrete"):
        start = _start(space)
        dtype = spec.dtype
        if type(spec).__name__ == "OneHot":
            n = spec.shape[-1]
            return lambda v: F.one_hot(torch.as_tensor(np.asarray(v) - start), n).to(dtype)
        if type(spec).__name__ == "MultiOneHot":
            nvec = [int(n) for n in np.asarray(space.nvec)]

            def read_multi_one_hot(v: Any) -> torch.Tensor:
                t = torch.as_tensor(np.asarray(v) - start)
                parts = [F.one_hot(t[..., i], n) for i, n in enumerate(nvec)]
                return torch.cat(parts, -1).to(dtype)

            return read_multi_one_hot
        return lambda v: torch.as_tensor(np.asarray(v) - start, dtype=dtype)
    if kind == "MultiBinary":
        np_dtype = np.dtype(space.dtype)
        return lambda v: torch.from_numpy(np.asarray(v, dtype=np_dtype))
    if kind == "Dict" and isinstance(spec, Composite):
        readers = {}
        for key, sub in space.spaces.items():
            name = key if key in spec else "observation"
            readers[key] = (name, make_reader(sub, spec[name], batch))
        return lambda v: {name: read(v[key]) for key, (name, read) in readers.items()}
    if kind == "Tuple":
        return _tuple_reader(space, spec, batch)
    if type(spec).__name__ == "NonTensor":
        return lambda v: NonTensorData(v, batch_size=batch)
    encode = getattr(spec, "encode", None)
    if encode is None:
        raise TypeError(f"Cannot read values of {space!r} into {type(spec).__name__}.")
    return encode


def _tuple_reader(space: Any, spec: TensorSpec, batch: tuple[int, ...]) -> Reader:
    subs = list(space.spaces)
    if isinstance(spec, Composite):
        readers = [(str(i), make_reader(s, spec[str(i)], batch)) for i, s in enumerate(subs)]
        return lambda v: {key: read(v[i]) for i, (key, read) in enumerate(readers)}
    # stacked: element i of the tuple is row i (after the batch dims)
    element_spec = spec[(slice(None),) * len(batch) + (0,)] if batch else spec[0]
    read_one = make_reader(subs[0], element_spec, batch)
    dim = len(batch)
    return lambda v: torch.stack([read_one(x) for x in v], dim)


# ------------------------------------------------------------------------------- direct writers
ArrayWriter = Callable[[Any, Any], None]


def make_array_writer(
    space: Any, spec: TensorSpec, batch: tuple[int, ...] = ()
) -> ArrayWriter | None:
    """Build ``write(value, array)``: what :func:`make_reader` gives, copied into ``array``.

    ``array`` is a numpy array with the spec's shape and dtype. Returns ``None`` for spaces that
    need more than a copy (one-hot encodings, tuples, text...): those envs use the TensorDict
    path.
    """
    kind = _kind(space)
    name = type(spec).__name__
    if kind in ("Box", "MultiBinary"):
        if kind == "Box" and tuple(space.shape) == ():
            shape = (*batch, 1)
            return lambda v, array: np.copyto(array, np.reshape(v, shape), casting="unsafe")
        return lambda v, array: np.copyto(array, v, casting="unsafe")
    if kind in ("Discrete", "MultiDiscrete") and name not in ("OneHot", "MultiOneHot"):
        start = _start(space)
        if isinstance(start, int) and start == 0:
            return lambda v, array: np.copyto(array, v, casting="unsafe")
        return lambda v, array: np.copyto(array, np.asarray(v) - start, casting="unsafe")
    return None


def make_direct_obs_writer(space: Any, spec: Composite, batch: tuple[int, ...] = ()) -> Any:
    """Build ``write(obs, out)`` filling the observation arrays ``out[key]``, or ``None``.

    ``spec`` is the env's observation Composite: one ``"observation"`` entry for a plain
    space, one entry per key for a ``Dict`` space of plain spaces.
    """
    if _kind(space) == "Dict":
        writers = []
        for key, sub in space.spaces.items():
            name = key if key in spec else "observation"
            leaf = spec.get(name, None)
            if leaf is None or isinstance(leaf, Composite):
                return None
            write = make_array_writer(sub, leaf, batch)
            if write is None:
                return None
            writers.append((key, name, write))

        def write_dict(obs: Any, out: dict) -> None:
            for key, name, write in writers:
                write(obs[key], out[name])

        return write_dict
    leaf = spec.get("observation", None)
    if leaf is None or isinstance(leaf, Composite):
        return None
    write = make_array_writer(space, leaf, batch)
    if write is None:
        return None
    return lambda obs, out: write(obs, out["observation"])


# --------------------------------------------------------------------------------- array readers
ArrayReader = Callable[[Any], np.ndarray]


def make_array_reader(
    space: Any, spec: TensorSpec, batch: tuple[int, ...] = ()
) -> ArrayReader | None:
    """Build ``read(value) -> numpy array`` with the spec's shape and dtype (no copy when the
    value already is one), or ``None`` for spaces that need more (one-hot encodings, tuples,
    text...). What :func:`make_reader` gives, before ``torch.from_numpy``.
    """
    kind = _kind(space)
    name = type(spec).__name__
    if kind in ("Box", "MultiBinary"):
        np_dtype = np.dtype(space.dtype)
        if kind == "Box" and tuple(space.shape) == ():
            shape = (*batch, 1)
            return lambda v: np.asarray(v, dtype=np_dtype).reshape(shape)
        return lambda v: np.asarray(v, dtype=np_dtype)
    if kind in ("Discrete", "MultiDiscrete") and name not in ("OneHot", "MultiOneHot"):
        start = _start(space)
        np_dtype = torch.empty((), dtype=spec.dtype).numpy().dtype
        shape = tuple(spec.shape)
        if isinstance(start, int) and start == 0:
            return lambda v: np.asarray(v, dtype=np_dtype).reshape(shape)
        return lambda v: np.asarray(np.asarray(v) - start, dtype=np_dtype).reshape(shape)
    return None


def make_obs_array_reader(
    space: Any, spec: Composite, batch: tuple[int, ...] = (), name: str = "observation"
) -> Any:
    """Build ``read(obs) -> {key: array}`` for the env's observation Composite, or ``None``.

    ``spec`` holds one ``name`` entry for a plain space (``"observation"``, or e.g.
    ``"pixels"`` for frames), one entry per key for a ``Dict`` space of plain spaces (a
    ``"state"`` key may have been renamed ``"observation"``).
    """
    if _kind(space) == "Dict":
        readers = []
        for key, sub in space.spaces.items():
            name = key if key in spec else "observation"
            leaf = spec.get(name, None)
            if leaf is None or isinstance(leaf, Composite):
                return None
            read = make_array_reader(sub, leaf, batch)
            if read is None:
                return None
            readers.append((key, name, read))
        return lambda obs: {name: read(obs[key]) for key, name, read in readers}
    leaf = spec.get(name, None)
    if leaf is None or isinstance(leaf, Composite):
        return None
    read = make_array_reader(space, leaf, batch)
    if read is None:
        return None
    return lambda obs: {name: read(obs)}


# ---------------------------------------------------------------------------------------- writers
def make_writer(space: Any, spec: TensorSpec, batch: tuple[int, ...] = ()) -> Writer:
    """Build ``write(action_tensor) -> value`` that ``env.step`` accepts for ``space``."""
    kind = _kind(space)
    if kind == "Box":
        np_dtype = np.dtype(space.dtype)
        shape = (*batch, *space.shape)

        def write_box(a: torch.Tensor) -> np.ndarray:
            array = to_numpy(a)
            if array.dtype != np_dtype or array.shape != shape:
                array = array.astype(np_dtype).reshape(shape)
            return array

        return write_box
    if kind == "Discrete":
        start = _start(space)
        # a numpy scalar of the space's dtype, as space.sample() gives: gymnasium's
        # Discrete.contains checks those faster than Python ints
        scalar = np.dtype(getattr(space, "dtype", None) or np.int64).type
        if type(spec).__name__ == "OneHot":
            if batch:
                if spec.shape[-1] == 2 and not spec.dtype.is_floating_point:
                    # argmax of two integer entries: one comparison (argmax is slow on short rows)
                    def write_two_hot(a: torch.Tensor) -> np.ndarray:
                        array = to_numpy(a)
                        index = (array[..., 1] > array[..., 0]).astype(np.intp)
                        return index + start if start_nonzero else index

                    start_nonzero = not (isinstance(start, int) and start == 0)
                    return write_two_hot
                if isinstance(start, int) and start == 0:
                    return lambda a: to_numpy(a).argmax(-1)
                return lambda a: to_numpy(a).argmax(-1) + start

            def write_one_hot(a: torch.Tensor) -> Any:
                try:  # a short list is much faster than torch's argmax
                    return scalar(a.tolist().index(1) + start)
                except ValueError:  # not exactly one-hot: take the largest entry
                    return scalar(int(a.argmax()) + start)

            return write_one_hot
        if batch:
            if isinstance(start, int) and start == 0:
                return lambda a: to_numpy(a).reshape(batch)
            return lambda a: to_numpy(a).reshape(batch) + start
        return lambda a: scalar(int(a) + start)
    if kind == "MultiDiscrete":
        start = _start(space)
        np_dtype = np.dtype(space.dtype)
        name = type(spec).__name__
        if name == "OneHot":
            return lambda a: to_numpy(a).argmax(-1).astype(np_dtype) + start
        if name == "MultiOneHot":
            sizes = [int(n) for n in np.asarray(space.nvec)]

            def write_multi_one_hot(a: torch.Tensor) -> np.ndarray:
                parts = np.split(to_numpy(a), np.cumsum(sizes)[:-1], -1)
                return np.stack([p.argmax(-1) for p in parts], -1).astype(np_dtype) + start

            return write_multi_one_hot
        return lambda a: to_numpy(a).astype(np_dtype) + start
    if kind == "MultiBinary":
        np_dtype = np.dtype(space.dtype)
        return lambda a: to_numpy(a).astype(np_dtype)
    if kind == "Dict" and isinstance(spec, Composite):
        writers = {}
        for key, sub in space.spaces.items():
            name = key if key in spec else "observation"  # "state" may have been renamed
            writers[key] = (name, make_writer(sub, spec[name], batch))

        def write_dict(a: Any) -> dict:
            # each entry an array, as TorchRL gives (a Discrete alone is written as a scalar)
            out = {}
            for key, (name, write) in writers.items():
                value = write(a.get(name))
                out[key] = np.asarray(value) if isinstance(value, (np.generic, int)) else value
            return out

        return write_dict
    if kind == "Tuple":
        subs = list(space.spaces)
        if isinstance(spec, Composite):
            writers = [make_writer(s, spec[str(i)], batch) for i, s in enumerate(subs)]
            return lambda a: tuple(w(a.get(str(i))) for i, w in enumerate(writers))
        dim = len(batch)
        element_spec = spec[(slice(None),) * dim + (0,)] if batch else spec[0]
        write_one = make_writer(subs[0], element_spec, batch)
        return lambda a: tuple(write_one(x) for x in _unbind(a, dim))
    spec_to_numpy = getattr(spec, "to_numpy", None)
    if spec_to_numpy is None:
        raise TypeError(f"Cannot write actions of {type(spec).__name__} to {space!r}.")
    return lambda a: spec_to_numpy(torch.from_numpy(a) if type(a) is np.ndarray else a)


def _unbind(a: Any, dim: int) -> Any:
    if type(a) is np.ndarray:
        return np.moveaxis(a, dim, 0)
    return a.unbind(dim)


def to_tensordict(values: dict, batch_size: torch.Size, device: Any) -> TensorDictBase:
    """Build a TensorDict from a (nested) dict of tensors without validating it."""
    return TensorDict(values, batch_size=batch_size, device=device)
