"""Box specs: ``Unbounded`` and ``Bounded``, each with a continuous and a discrete (integer) variant.

``Unbounded(...)`` / ``Bounded(...)`` return the variant that fits the dtype, as in TorchRL:
float dtypes give ``*Continuous``, integer and bool dtypes give ``*Discrete``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch

from torchenv.specs._base import TensorSpec, init_leaf
from torchenv.specs._boxes import ContinuousBox
from torchenv.specs._utils import (
    DeviceLike,
    ShapeLike,
    batch_shape,
    is_float_dtype,
    to_device,
)
from torchenv.specs._validate import as_device, as_dtype, as_shape, check_bounds


def _dtype_limits(dtype: torch.dtype) -> tuple[float, float]:
    if dtype == torch.bool:
        return 0, 1
    if is_float_dtype(dtype):
        return -math.inf, math.inf
    info = torch.iinfo(dtype)
    return info.min, info.max


class Unbounded(TensorSpec):
    """A tensor with no bounds other than its dtype's.

    ``Unbounded(shape=(3,))`` has dtype ``torch.get_default_dtype()``; an integer or bool dtype gives
    an :class:`UnboundedDiscrete`.

    Args:
        shape: the spec's shape (an int means ``(int,)``); defaults to ``(1,)``.
        device: the device of the values (default: cpu).
        dtype: the dtype of the values (default: ``torch.get_default_dtype()``).

    >>> spec = Unbounded(shape=(3,))
    >>> type(spec).__name__, spec.dtype
    ('UnboundedContinuous', torch.float32)
    >>> spec.is_in(torch.zeros(5, 3))
    True
    """

    domain = "continuous"

    def __new__(cls, *args: Any, **kwargs: Any) -> Unbounded:
        if cls is Unbounded:
            dtype = kwargs.get("dtype", args[2] if len(args) > 2 else None)
            if dtype is not None and not is_float_dtype(as_dtype(cls.__name__, dtype)):
                cls = UnboundedDiscrete
            else:
                cls = UnboundedContinuous
        return super().__new__(cls)

    def __init__(
        self,
        shape: ShapeLike = None,
        device: DeviceLike = None,
        dtype: torch.dtype | None = None,
        **kwargs: Any,
    ) -> None:
        if "n" in kwargs:  # legacy spelling of the shape
            shape = kwargs.pop("n")
        if kwargs:
            raise TypeError(f"{type(self).__name__} got unexpected arguments {sorted(kwargs)}")
        init_leaf(
            self,
            as_shape(type(self).__name__, shape, default=(1,)),
            device,
            dtype if dtype is not None else torch.get_default_dtype(),
        )
        self._refresh()

    def _refresh(self) -> None:
        self.domain = "continuous" if is_float_dtype(self.dtype) else "discrete"

    def _to_dtype(self, dtype: torch.dtype) -> TensorSpec:
        new = super()._to_dtype(dtype)
        new.__class__ = UnboundedContinuous if is_float_dtype(dtype) else UnboundedDiscrete
        return new

    @property
    def space(self) -> ContinuousBox:
        box = self.__dict__.get("_space_set")
        if box is not None and tuple(box.low.shape) == tuple(self._sshape):
            return box
        lo, hi = _dtype_limits(self.dtype)
        shape = self._sshape
        return ContinuousBox(
            torch.full(shape, lo, dtype=self.dtype, device=self.device),
            torch.full(shape, hi, dtype=self.dtype, device=self.device),
        )

    @space.setter
    def space(self, box: ContinuousBox) -> None:
        # TorchRL lets users assign ``spec.space``. An unbounded spec records the box (it is what
        # ``space`` and ``==`` report) but its values stay unbounded: use Bounded to bound them.
        if not isinstance(box, ContinuousBox):
            raise TypeError(
                f"{type(self).__name__}.space: expected a ContinuousBox, got {type(box).__name__}"
            )
        self._space_set = box

    def __eq__(self, other: object) -> bool:
        if not super().__eq__(other):
            return False
        if "_space_set" in self.__dict__ or "_space_set" in other.__dict__:
            return self.space == other.space
        return True

    __hash__ = None  # type: ignore[assignment]

    @property
    def low(self) -> torch.Tensor:
        return self.space.low

    @property
    def high(self) -> torch.Tensor:
        return self.space.high

    def rand(
        self, shape: Sequence[int] | None = None, *, generator: torch.Generator | None = None
    ) -> torch.Tensor:
        full = batch_shape(shape) + self._sshape
        if is_float_dtype(self.dtype):
            return torch.randn(full, dtype=self.dtype, device=self.device, generator=generator)
        return torch.empty(full, dtype=self.dtype, device=self.device).random_(generator=generator)

    def is_in(self, val: Any) -> bool:
        return self._layout_ok(val)

    def _explain_values(self, val: torch.Tensor) -> str:
        return "unknown reason"

    def _project(self, val: torch.Tensor) -> torch.Tensor:
        val = torch.as_tensor(val)
        if not is_float_dtype(self.dtype) and is_float_dtype(val.dtype):
            val = val.round()
        return val.to(self.dtype)

    def enumerate(self, use_mask: bool = False) -> torch.Tensor:
        raise NotImplementedError("enumerate cannot be called with unbounded specs.")


class UnboundedContinuous(Unbounded):
    """An :class:`Unbounded` spec with a floating dtype."""


class UnboundedDiscrete(Unbounded):
    """An :class:`Unbounded` spec with an integer or bool dtype (``dtype`` defaults to ``torch.int64``)."""

    def __init__(
        self,
        shape: ShapeLike = None,
        device: DeviceLike = None,
        dtype: torch.dtype | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(shape, device, dtype if dtype is not None else torch.int64, **kwargs)


def _as_bound(value: Any, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    if isinstance(value, torch.Tensor):
        return value.to(dtype=dtype, device=device)
    return torch.as_tensor(value, dtype=dtype, device=device)


class Bounded(TensorSpec):
    """A tensor whose values lie in ``[low, high]`` (element-wise; ``low``/``high`` broadcast to ``shape``).

    A float dtype gives a :class:`BoundedContinuous`, an integer dtype a :class:`BoundedDiscrete`.

    Args:
        low: lower bound (number or tensor). ``minimum`` is accepted too.
        high: upper bound (number or tensor). ``maximum`` is accepted too.
        shape: the spec's shape; inferred from ``low``/``high`` when omitted.
        device: the device of the values (default: cpu).
        dtype: the dtype of the values (default: ``torch.get_default_dtype()``).
        domain: ``"continuous"`` or ``"discrete"`` (default: from the dtype).

    >>> spec = Bounded(-1.0, 1.0, shape=(2,))
    >>> spec.is_in(spec.rand())
    True
    >>> spec.project(torch.tensor([3.0, -0.5]))
    tensor([ 1.0000, -0.5000])
    >>> type(Bounded(0, 255, shape=(3,), dtype=torch.uint8)).__name__
    'BoundedDiscrete'
    """

    domain = "continuous"
    _tensor_attrs = {"low": 0, "high": 0}

    def __new__(cls, *args: Any, **kwargs: Any) -> Bounded:
        if cls is Bounded:
            dtype = kwargs.get("dtype", args[4] if len(args) > 4 else None)
            domain = kwargs.get("domain")
            if dtype is not None:
                dtype = as_dtype(cls.__name__, dtype)
            discrete = domain == "discrete" or (dtype is not None and not is_float_dtype(dtype))
            cls = BoundedDiscrete if discrete else BoundedContinuous
        return super().__new__(cls)

    def __init__(
        self,
        low: Any = None,
        high: Any = None,
        shape: ShapeLike = None,
        device: DeviceLike = None,
        dtype: torch.dtype | None = None,
        domain: str | None = None,
        **kwargs: Any,
    ) -> None:
        low = kwargs.pop("minimum", low)
        high = kwargs.pop("maximum", high)
        if kwargs:
            raise TypeError(f"{type(self).__name__} got unexpected arguments {sorted(kwargs)}")
        if low is None or high is None:
            raise TypeError(f"{type(self).__name__} needs both low and high bounds.")
        owner = type(self).__name__
        if dtype is None:
            dtype = torch.int64 if domain == "discrete" else torch.get_default_dtype()
        dtype = as_dtype(owner, dtype)
        dev = to_device(as_device(owner, device)) if device is not None else torch.device("cpu")
        low_t = check_bounds(owner, "low", low, dtype, dev)
        high_t = check_bounds(owner, "high", high, dtype, dev)
        if shape is None:
            bshape = torch.broadcast_shapes(low_t.shape, high_t.shape)
            if not len(bshape):
                raise ValueError(
                    f"{type(self).__name__} needs a shape: pass shape=... or tensor bounds "
                    f"(got scalar low={low!r} and high={high!r})."
                )
            shape = bshape
        shape = as_shape(owner, shape)
        init_leaf(self, shape, dev, dtype)
        try:
            self._space = ContinuousBox(
                low_t.expand(self._sshape).clone(), high_t.expand(self._sshape).clone()
            )
        except RuntimeError:
            raise ValueError(
                f"{type(self).__name__}: low (shape {list(low_t.shape)}) and high (shape {list(high_t.shape)}) "
                f"do not broadcast to the spec shape {list(shape)}."
            ) from None
        if bool((low_t > high_t).any()):  # the bounds as given: an empty shape hides nothing
            raise ValueError(
                f"{type(self).__name__}: low must be <= high, got low={low!r} and high={high!r}."
            )
        self._refresh()

    # low/high live in the space box, so that ``spec.space.low = ...`` (as TorchRL transforms do) works
    @property
    def low(self) -> torch.Tensor:
        return self._space.low

    @low.setter
    def low(self, value: torch.Tensor) -> None:
        self._space.low = value
        self._refresh()

    @property
    def high(self) -> torch.Tensor:
        return self._space.high

    @high.setter
    def high(self, value: torch.Tensor) -> None:
        self._space.high = value
        self._refresh()

    def _set_tensor(self, name: str, value: torch.Tensor) -> None:
        setattr(self._space, name, value)

    def _copy(self) -> TensorSpec:
        new = super()._copy()
        new._space = ContinuousBox(self._space.low, self._space.high)
        return new

    def _check_cache(self) -> None:
        space = self._space
        if (
            space.low is not self._c_low
            or space.high is not self._c_high
            or space.low.dtype != self.dtype
        ):
            self._refresh()

    def _refresh(self) -> None:
        space = self._space
        if space.low.dtype != self.dtype or space.low.device != self.device:
            space.low = space.low.to(dtype=self.dtype, device=self.device)
        if space.high.dtype != self.dtype or space.high.device != self.device:
            space.high = space.high.to(dtype=self.dtype, device=self.device)
        self._c_low, self._c_high = space.low, space.high
        self.domain = "continuous" if is_float_dtype(self.dtype) else "discrete"
        numel = self.low.numel()
        lo_s = hi_s = None
        if numel:
            flat_lo, flat_hi = self.low.reshape(-1), self.high.reshape(-1)
            if numel == 1 or (
                bool((flat_lo == flat_lo[0]).all()) and bool((flat_hi == flat_hi[0]).all())
            ):
                lo_s, hi_s = flat_lo[0].item(), flat_hi[0].item()
        self._lo_s, self._hi_s = lo_s, hi_s
        dlo, dhi = _dtype_limits(self.dtype)
        self._full_range = lo_s is not None and lo_s <= dlo and hi_s >= dhi
        self._finite = (
            bool(torch.isfinite(self.low).all() and torch.isfinite(self.high).all())
            if numel
            else True
        )

    def _to_dtype(self, dtype: torch.dtype) -> TensorSpec:
        new = super()._to_dtype(dtype)
        new.__class__ = BoundedContinuous if is_float_dtype(dtype) else BoundedDiscrete
        return new

    @property
    def space(self) -> ContinuousBox:
        return self._space

    @space.setter
    def space(self, box: ContinuousBox) -> None:
        # TorchRL lets users assign ``spec.space``: the bounds follow the box.
        if not isinstance(box, ContinuousBox):
            raise TypeError(
                f"{type(self).__name__}.space: expected a ContinuousBox, got {type(box).__name__}"
            )
        low, high = torch.as_tensor(box.low), torch.as_tensor(box.high)
        try:
            low, high = low.expand(self._sshape).clone(), high.expand(self._sshape).clone()
        except RuntimeError:
            raise ValueError(
                f"{type(self).__name__}.space: low (shape {list(low.shape)}) and high (shape "
                f"{list(high.shape)}) do not broadcast to the spec shape {list(self.shape)}."
            ) from None
        if bool((low > high).any()):
            raise ValueError(f"{type(self).__name__}.space: low must be <= high.")
        self._space = ContinuousBox(low, high)
        self._refresh()

    @property
    def minimum(self) -> torch.Tensor:
        return self.low

    @property
    def maximum(self) -> torch.Tensor:
        return self.high

    def _rand_block(
        self, steps: int, generator: torch.Generator | None = None
    ) -> torch.Tensor | None:
        """``steps`` samples of ``rand()`` in one draw, stacked on a new first dim (``None`` for
        the cases drawn otherwise; see ``Categorical._rand_block``)."""
        self._check_cache()
        dtype, device = self.dtype, self.device
        lo, hi = self._lo_s, self._hi_s
        shape = (steps, *self._sshape)
        if lo is None:
            return None
        if is_float_dtype(dtype):
            if not self._finite:
                return None
            return torch.empty(shape, dtype=dtype, device=device).uniform_(
                lo, hi, generator=generator
            )
        if self._full_range or dtype == torch.bool:
            return None
        try:
            return torch.randint(
                int(lo), int(hi) + 1, shape, dtype=dtype, device=device, generator=generator
            )
        except (ValueError, RuntimeError):
            return self._rand_to_max(shape, generator)

    def _rand_to_max(
        self, full: Sequence[int], generator: torch.Generator | None = None
    ) -> torch.Tensor:
        """Uniform integers in ``[low, high]`` when ``high`` is the dtype's max (``low`` is not its min)."""
        lo, hi = int(self._lo_s), int(self._hi_s)  # type: ignore[arg-type]
        out = torch.randint(
            lo - 1, hi, tuple(full), dtype=self.dtype, device=self.device, generator=generator
        )
        return out.add_(1)

    def rand(
        self, shape: Sequence[int] | None = None, *, generator: torch.Generator | None = None
    ) -> torch.Tensor:
        self._check_cache()
        full = batch_shape(shape) + self._sshape
        dtype, device, g = self.dtype, self.device, generator
        lo, hi = self._lo_s, self._hi_s
        if is_float_dtype(dtype):
            if lo is not None and self._finite:
                return torch.empty(full, dtype=dtype, device=device).uniform_(lo, hi, generator=g)
            if not self._finite:
                out = torch.randn(full, dtype=dtype, device=device, generator=g)
                return out.clamp_(self.low, self.high)
            out = torch.rand(full, dtype=dtype, device=device, generator=g)
            return out.mul_(self.high - self.low).add_(self.low)
        if self._full_range:  # e.g. uint8 pixels in [0, 255]: random_() covers the dtype's range
            return torch.empty(full, dtype=dtype, device=device).random_(generator=g)
        if lo is not None:
            if dtype == torch.bool:
                return torch.randint(int(lo), int(hi) + 1, full, device=device, generator=g).to(
                    dtype
                )
            try:
                return torch.randint(
                    int(lo), int(hi) + 1, full, dtype=dtype, device=device, generator=g
                )
            except (ValueError, RuntimeError):  # high is the dtype's max: high + 1 overflows
                return self._rand_to_max(full, g)
        span = (self.high.to(torch.float64) - self.low.to(torch.float64)) + 1
        out = (
            torch.rand(full, dtype=torch.float64, device=device, generator=g)
            .mul_(span)
            .floor_()
            .add_(self.low)
        )
        return out.clamp_(max=self.high.to(torch.float64)).to(dtype)

    def is_in(self, val: Any) -> bool:
        if not self._layout_ok(val):
            return False
        if self._space.low is not self._c_low or self._space.high is not self._c_high:
            self._refresh()
        dtype = self.dtype
        if self._full_range and not is_float_dtype(dtype):
            return True
        if not val.numel():
            return True
        lo = self._lo_s
        if lo is not None and dtype != torch.bool:
            mn, mx = torch.aminmax(val)
            return bool((mn >= lo) & (mx <= self._hi_s))
        low, high = self.low, self.high
        if val.device != self.device:
            low, high = low.to(val.device), high.to(val.device)
        try:
            return bool(((val >= low) & (val <= high)).all())
        except RuntimeError:  # dynamic dims: bounds do not broadcast
            return bool((val >= low.min()).all() and (val <= high.max()).all())

    def _explain_values(self, val: torch.Tensor) -> str:
        low, high = self.low.to(val.device), self.high.to(val.device)
        try:
            below, above = val < low, val > high
        except RuntimeError:
            return "bounds do not broadcast with the value"
        if val.is_floating_point() and bool(torch.isnan(val).any()):
            return "got NaN values"
        parts = []
        if bool(below.any()):
            parts.append(f"got min {val.min().item()} below low (min low {low.min().item()})")
        if bool(above.any()):
            parts.append(f"got max {val.max().item()} above high (max high {high.max().item()})")
        return "; ".join(parts) or "values outside [low, high]"

    def _short(self) -> str:
        self._check_cache()
        if self._lo_s is not None:
            rng = f"low={self._lo_s}, high={self._hi_s}"
        else:
            rng = "low/high=tensors"
        return f"{type(self).__name__}(shape={list(self.shape)}, {rng}, dtype={self.dtype})"

    def _project(self, val: torch.Tensor) -> torch.Tensor:
        val = torch.as_tensor(val)
        if not is_float_dtype(self.dtype) and is_float_dtype(val.dtype):
            val = val.round()
        val = val.to(self.dtype)
        low, high = self.low.to(val.device), self.high.to(val.device)
        if self.dtype == torch.bool:
            return val
        try:
            return torch.clamp(val, low, high)
        except RuntimeError:
            return torch.clamp(val, low.min(), high.max())

    def cardinality(self) -> int | float:
        """The number of values: ``inf`` for a floating dtype (as TorchRL), else the exact count."""
        if is_float_dtype(self.dtype):
            return float("inf")
        return int(torch.prod(self.high.to(torch.float64) - self.low.to(torch.float64) + 1).item())

    def _register_batch_size(self, batch_size: torch.Size | tuple) -> None:
        """Called by TorchRL's ``Composite.set`` on every ``Bounded`` it holds (TorchRL's boxes
        then keep their bounds without the batch dims); ours keep full-shape bounds, so there
        is nothing to record. Present so that TorchRL's ``Composite``, ``ProbabilisticActor``,
        ``EGreedyModule`` and ``SafeModule`` accept our ``Bounded``."""

    def enumerate(self, use_mask: bool = False) -> torch.Tensor:
        if is_float_dtype(self.dtype) or self._lo_s is None:
            raise NotImplementedError("enumerate needs a discrete Bounded spec with scalar bounds.")
        values = torch.arange(int(self._lo_s), int(self._hi_s) + 1, device=self.device)
        grids = (
            torch.cartesian_prod(*([values] * math.prod(self._sshape))) if self._sshape else values
        )
        return grids.reshape(-1, *self._sshape).to(self.dtype)


class BoundedContinuous(Bounded):
    """A :class:`Bounded` spec with a floating dtype."""


class BoundedDiscrete(Bounded):
    """A :class:`Bounded` spec with an integer dtype (``dtype`` defaults to ``torch.int64``)."""

    def __init__(
        self,
        low: Any = None,
        high: Any = None,
        shape: ShapeLike = None,
        device: DeviceLike = None,
        dtype: torch.dtype | None = None,
        domain: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(
            low,
            high,
            shape,
            device,
            dtype if dtype is not None else torch.int64,
            "discrete",
            **kwargs,
        )
