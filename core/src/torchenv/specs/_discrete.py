"""Discrete specs over ``n`` categories: ``Categorical`` (an index), ``OneHot`` and ``Binary``.

Categorical and OneHot accept a boolean ``mask`` of allowed categories; ``rand`` then only draws
allowed values, ``is_in`` rejects masked ones and ``project`` replaces them.
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from torchenv.specs._base import TensorSpec, init_leaf
from torchenv.specs._boxes import CategoricalBox
from torchenv.specs._errors import SpecShapeError, SpecValueError
from torchenv.specs._utils import (
    DeviceLike,
    ShapeLike,
    batch_shape,
    copy_if_negative_strides,
    is_float_dtype,
    normalize_dim,
)
from torchenv.specs._validate import as_count, as_shape, check_categories_fit


def _sample_mask(
    mask: torch.Tensor, out_shape: tuple[int, ...], generator: torch.Generator | None = None
) -> torch.Tensor:
    """Draws one allowed category per row of ``mask`` (last dim = categories), for ``out_shape`` rows."""
    n = mask.shape[-1]
    probs = mask.expand(*out_shape, n).reshape(-1, n).to(torch.float32)
    if probs.numel() and bool((probs.sum(-1) == 0).any()):
        raise SpecValueError("cannot sample from a mask that allows no category in some entry")
    if not probs.shape[0]:
        return torch.zeros(out_shape, dtype=torch.long, device=mask.device)
    return torch.multinomial(probs, 1, generator=generator).reshape(out_shape)


def _masked_scores(
    val: Any, mask: torch.Tensor | None, device: torch.device | None
) -> torch.Tensor:
    """``val`` as float32 scores on ``device``, with the categories ``mask`` forbids set to ``-inf``.

    One-hot specs project a value by taking the argmax of these scores (per group of categories).
    """
    score = torch.as_tensor(val, device=device).to(torch.float32)
    if mask is not None:
        score = score.masked_fill(~mask.expand_as(score), -float("inf"))
    return score


class Categorical(TensorSpec):
    """An integer in ``{0, ..., n - 1}`` (a category index).

    Args:
        n: number of categories (``-1``: unknown, only shape and dtype are checked).
        shape: the spec's shape (default ``()``).
        device: the device of the values (default: cpu).
        dtype: the dtype (default ``torch.int64``; ``torch.bool`` with ``n=2`` for done flags).
        mask: optional bool tensor of shape ``(*shape, n)``: allowed categories.

    >>> spec = Categorical(4)
    >>> spec.shape, spec.n
    (torch.Size([]), 4)
    >>> done = Categorical(2, shape=(1,), dtype=torch.bool)
    >>> done.zero()
    tensor([False])
    >>> masked = Categorical(3, mask=torch.tensor([False, True, False]))
    >>> masked.rand()
    tensor(1)
    """

    domain = "discrete"
    _tensor_attrs = {"mask": 1}
    _meta_attrs = ("n",)

    def __init__(
        self,
        n: int,
        shape: ShapeLike = None,
        device: DeviceLike = None,
        dtype: torch.dtype | str = torch.long,
        mask: torch.Tensor | None = None,
    ) -> None:
        owner = type(self).__name__
        self.n = as_count(owner, "n", n)
        init_leaf(self, as_shape(owner, shape), device, dtype)
        check_categories_fit(owner, self.n, self.dtype)
        self.mask = None
        if mask is not None:
            self.update_mask(mask)
        self._refresh()

    @property
    def space(self) -> CategoricalBox:
        return CategoricalBox(self.n)

    @space.setter
    def space(self, box: CategoricalBox) -> None:
        # TorchRL lets users assign ``spec.space``; the category count follows the box.
        if not isinstance(box, CategoricalBox):
            raise TypeError(
                f"{type(self).__name__}.space: expected a CategoricalBox, got {type(box).__name__}"
            )
        n = as_count(type(self).__name__, "space.n", box.n)
        check_categories_fit(type(self).__name__, n, self.dtype)
        self.n = n
        self.mask = None
        self._refresh()

    def _mask_shape(self) -> tuple[int, ...]:
        return (*self._sshape, self.n)

    def update_mask(self, mask: torch.Tensor | None) -> None:
        """Sets (or with ``None`` removes) the mask of allowed categories.

        >>> spec = Categorical(3)
        >>> spec.update_mask(torch.tensor([True, False, False]))
        >>> spec.rand()
        tensor(0)
        """
        self.mask = None if mask is None else self._as_mask(mask, self._mask_shape())

    def rand(
        self, shape: Sequence[int] | None = None, *, generator: torch.Generator | None = None
    ) -> torch.Tensor:
        full = batch_shape(shape) + self._sshape
        if self.mask is not None:
            return _sample_mask(self.mask, full, generator).to(self.dtype)
        n = self.n if self.n > 0 else 2
        return torch.randint(0, n, full, dtype=self.dtype, device=self.device, generator=generator)

    def _rand_block(
        self, steps: int, generator: torch.Generator | None = None
    ) -> torch.Tensor | None:
        """``steps`` samples of ``rand()`` in one draw, stacked on a new first dim (``None``:
        not possible, e.g. with a mask). Same values as ``steps`` calls where the generator
        draws element by element, which ``torchenv.envs._direct`` checks before relying on it."""
        if self.mask is not None:
            return None
        n = self.n if self.n > 0 else 2
        shape = (steps, *self._sshape)
        return torch.randint(0, n, shape, dtype=self.dtype, device=self.device, generator=generator)

    def is_in(self, val: Any) -> bool:
        if not self._layout_ok(val):
            return False
        if self.mask is not None:
            return self._mask_ok(val)
        if self.n < 0 or not val.numel():
            return True
        if self.dtype == torch.bool:
            return self.n >= 2 or not bool(val.any())
        mn, mx = torch.aminmax(val)
        return bool((mn >= 0) & (mx < self.n))

    def _mask_ok(self, val: torch.Tensor) -> bool:
        idx = val.to(torch.long)
        if not val.numel():
            return True
        if bool((idx < 0).any() or (idx >= self.n).any()):
            return False
        mask = self.mask.to(val.device).expand(*val.shape, self.n)
        return bool(mask.gather(-1, idx.unsqueeze(-1)).all())

    def _explain_values(self, val: torch.Tensor) -> str:
        v = val.to(torch.long)
        if bool((v < 0).any() or (v >= self.n).any()):
            return f"expected integers in [0, {self.n - 1}], got min {v.min().item()} and max {v.max().item()}"
        if self.mask is not None:
            return "got a category that the mask forbids"
        return "values outside the space"

    def _short(self) -> str:
        mask = ", masked" if self.mask is not None else ""
        return (
            f"{type(self).__name__}(n={self.n}, shape={list(self.shape)}, dtype={self.dtype}{mask})"
        )

    def _project(self, val: torch.Tensor) -> torch.Tensor:
        val = torch.as_tensor(val, device=self.device)
        if is_float_dtype(val.dtype):
            val = val.round()
        val = val.to(torch.long)
        if self.n > 0:
            val = val.clamp(0, self.n - 1)
        if self.mask is not None:
            mask = self.mask.expand(*val.shape, self.n)
            ok = mask.gather(-1, val.unsqueeze(-1)).squeeze(-1)
            if not bool(ok.all()):
                val = torch.where(ok, val, _sample_mask(mask, tuple(val.shape)))
        return val.to(self.dtype)

    def cardinality(self) -> int:
        return self.n

    def enumerate(self, use_mask: bool = False) -> torch.Tensor:
        values = torch.arange(self.n, device=self.device)
        if use_mask and self.mask is not None:
            if self._ndim:
                raise NotImplementedError(
                    "enumerate(use_mask=True) needs a mask without batch dims"
                )
            values = values[self.mask]
        return values.view(-1, *([1] * self._ndim)).expand(-1, *self._sshape).to(self.dtype)

    def to_categorical(self, val: torch.Tensor, safe: bool | None = None) -> torch.Tensor:
        """``val`` unchanged: it is already categorical (checked when ``safe``)."""
        return self._checked(val, safe)

    def to_categorical_spec(self) -> Categorical:
        """This spec: it is already categorical."""
        return self

    def to_one_hot(self, val: torch.Tensor, safe: bool | None = None) -> torch.Tensor:
        """Encodes category indices as one-hot vectors (bool, the dtype of :meth:`to_one_hot_spec`)."""
        if safe:
            self.assert_is_in(val)
        return torch.nn.functional.one_hot(val.to(torch.long), self.n).to(torch.bool)

    def to_one_hot_spec(self) -> OneHot:
        """The equivalent :class:`OneHot` spec."""
        return OneHot(
            self.n,
            shape=(*self.shape, self.n),
            device=self.device,
            dtype=torch.bool,
            mask=self.mask,
        )


class OneHot(TensorSpec):
    """A one-hot vector over ``n`` categories (the last dim has size ``n``).

    Args:
        n: number of categories.
        shape: the spec's shape; defaults to ``(n,)`` and must end with ``n``.
        device: the device of the values (default: cpu).
        dtype: the dtype (default ``torch.bool``; ``torch.long`` is common too).
        use_register: accepted for TorchRL compatibility, unused.
        mask: optional bool tensor of shape ``shape``: allowed categories.

    >>> spec = OneHot(4)
    >>> spec.rand().sum().item()
    1
    >>> spec.encode(2)
    tensor([False, False,  True, False])
    >>> int(spec.to_numpy(spec.encode(2)))
    2
    """

    domain = "discrete"
    _tensor_attrs = {"mask": 0}
    _meta_attrs = ("n",)
    _protected_dims = 1

    def __init__(
        self,
        n: int,
        shape: ShapeLike = None,
        device: DeviceLike = None,
        dtype: torch.dtype | str = torch.bool,
        use_register: bool = False,
        mask: torch.Tensor | None = None,
    ) -> None:
        n = as_count("OneHot", "n", n)
        shape = as_shape("OneHot", shape, default=(n,))
        if not len(shape) or shape[-1] != n:
            raise SpecShapeError(f"OneHot: the last dim of shape {list(shape)} must be n={n}")
        init_leaf(self, shape, device, dtype)
        self.n = n
        self.use_register = use_register
        self.mask = None
        if mask is not None:
            self.update_mask(mask)
        self._refresh()

    @property
    def space(self) -> CategoricalBox:
        return CategoricalBox(self.n)

    def update_mask(self, mask: torch.Tensor | None) -> None:
        """Sets (or with ``None`` removes) the mask of allowed categories (shape: the spec's shape)."""
        self.mask = None if mask is None else self._as_mask(mask, self._sshape)

    def rand(
        self, shape: Sequence[int] | None = None, *, generator: torch.Generator | None = None
    ) -> torch.Tensor:
        full = batch_shape(shape) + self._sshape
        if self._eye.dtype != self.dtype or self._eye.device != self.device:
            self._refresh()  # dtype/device were assigned directly
        if self.mask is not None:
            return self._eye[_sample_mask(self.mask, full[:-1], generator)]
        rows = self.__dict__.get("_rows")
        if len(full) == 1:
            i = torch.randint(0, self.n, (), generator=generator).item()
            return self._eye[i].clone() if rows is None else torch.from_numpy(rows[i].copy())
        idx = torch.randint(0, self.n, full[:-1], device=self.device, generator=generator)
        if rows is None:
            return self._eye[idx]
        # numpy's take copies small rows much faster than torch's advanced indexing
        return torch.from_numpy(rows.take(idx.numpy(), axis=0))

    def _rand_block(
        self, steps: int, generator: torch.Generator | None = None
    ) -> torch.Tensor | None:
        """``steps`` samples of ``rand()`` in one draw, stacked on a new first dim (``None``:
        not possible, e.g. with a mask; see ``Categorical._rand_block``)."""
        if (
            self.mask is not None
            or self._eye.dtype != self.dtype
            or self._eye.device != self.device
        ):
            return None
        shape = (steps, *self._sshape[:-1])
        idx = torch.randint(0, self.n, shape, device=self.device, generator=generator)
        rows = self.__dict__.get("_rows")
        if rows is None:
            return self._eye[idx]
        return torch.from_numpy(rows.take(idx.numpy(), axis=0))

    def _refresh(self) -> None:
        self._eye = torch.eye(self.n, dtype=self.dtype, device=self.device)
        # the same rows as a numpy array (cpu dtypes numpy has) for rand's fast path
        self._rows = None
        if self._eye.device.type == "cpu":
            # (a dtype numpy lacks, such as bfloat16, keeps torch indexing)
            with contextlib.suppress(TypeError):
                self._rows = self._eye.numpy()

    def is_in(self, val: Any) -> bool:
        if not self._layout_ok(val):
            return False
        if not val.numel():
            return True
        if self.dtype != torch.bool:
            mn, mx = torch.aminmax(val)
            if not bool((mn >= 0) & (mx <= 1)):
                return False
        if val.ndim == 1:
            if int(val.count_nonzero()) != 1:
                return False
        elif int(val.count_nonzero()) != val.numel() // self.n or not bool(val.any(-1).all()):
            return False
        if self.mask is not None:
            mask = self.mask.to(val.device)
            return not bool((val.to(torch.bool) & ~mask).any())
        return True

    def _explain_values(self, val: torch.Tensor) -> str:
        sums = val.to(torch.long).sum(-1)
        if not bool((sums == 1).all()):
            return f"expected exactly one non-zero entry along the last dim (n={self.n})"
        if self.mask is not None:
            return "got a category that the mask forbids"
        return "values other than 0 and 1"

    def _short(self) -> str:
        mask = ", masked" if self.mask is not None else ""
        return f"OneHot(n={self.n}, shape={list(self.shape)}, dtype={self.dtype}{mask})"

    def _project(self, val: torch.Tensor) -> torch.Tensor:
        score = _masked_scores(val, self.mask, self.device)
        idx = score.argmax(-1, keepdim=True)
        return torch.zeros(score.shape, dtype=self.dtype, device=score.device).scatter_(-1, idx, 1)

    def encode(self, val: Any, *, ignore_device: bool = False) -> torch.Tensor:
        """One-hot encodes category indices (ints, numpy arrays or tensors)."""
        device = None if ignore_device else self.device
        idx = torch.as_tensor(copy_if_negative_strides(val), device=device).to(torch.long)
        if idx.numel() and bool((idx < 0).any() or (idx >= self.n).any()):
            raise SpecValueError(
                f"cannot encode {val!r} with {self._short()}: indices must be in [0, {self.n - 1}]"
            )
        out = torch.nn.functional.one_hot(idx, self.n).to(self.dtype)
        if out.shape != self.shape and out.numel() == self.zero().numel():
            out = out.reshape(self._sshape)
        return out

    def to_numpy(self, val: torch.Tensor, safe: bool | None = None) -> np.ndarray:
        """The category indices (``argmax`` over the last dim) as a numpy array."""
        if safe:
            self.assert_is_in(val)
        return val.to(torch.long).argmax(-1).cpu().numpy()

    def index(self, index: torch.Tensor, tensor_to_index: torch.Tensor) -> torch.Tensor:
        """Selects, along dim ``-2`` of ``tensor_to_index``, the entries picked by the one-hot ``index``."""
        idx = index.to(torch.long).argmax(-1)
        shape = tensor_to_index.shape
        gathered = tensor_to_index.gather(
            -2, idx.unsqueeze(-1).unsqueeze(-1).expand(*idx.shape, 1, shape[-1])
        )
        return gathered.squeeze(-2)

    def to_one_hot(self, val: torch.Tensor, safe: bool | None = None) -> torch.Tensor:
        """``val`` unchanged: it is already one-hot (checked when ``safe``)."""
        return self._checked(val, safe)

    def to_one_hot_spec(self) -> OneHot:
        """This spec: it is already one-hot."""
        return self

    def to_categorical(self, val: torch.Tensor, safe: bool | None = None) -> torch.Tensor:
        """Converts one-hot values to category indices."""
        if safe:
            self.assert_is_in(val)
        return val.to(torch.long).argmax(-1)

    def to_categorical_spec(self) -> Categorical:
        """The equivalent :class:`Categorical` spec."""
        return Categorical(self.n, shape=self.shape[:-1], device=self.device, mask=self.mask)

    def cardinality(self) -> int:
        return self.n

    def enumerate(self, use_mask: bool = False) -> torch.Tensor:
        eye = torch.eye(self.n, dtype=self.dtype, device=self.device)
        if use_mask and self.mask is not None:
            if self._ndim > 1:
                raise NotImplementedError(
                    "enumerate(use_mask=True) needs a mask without batch dims"
                )
            eye = eye[self.mask]
        return eye.view(-1, *([1] * (self._ndim - 1)), self.n).expand(-1, *self._sshape)


class Binary(Categorical):
    """``n`` independent binary values (0 or 1).

    Args:
        n: number of binary values (the last dim); inferred from ``shape`` when omitted.
        shape: the spec's shape; defaults to ``(n,)``.
        device: the device of the values (default: cpu).
        dtype: the dtype (default ``torch.int8``; ``torch.bool`` is common).

    >>> spec = Binary(3, dtype=torch.bool)
    >>> spec.rand().shape
    torch.Size([3])
    """

    _tensor_attrs: dict[str, int] = {}
    _protected_dims = 1

    def __init__(
        self,
        n: int | None = None,
        shape: ShapeLike = None,
        device: DeviceLike = None,
        dtype: torch.dtype | str = torch.int8,
    ) -> None:
        if n is None and shape is None:
            raise TypeError("Binary needs n or shape.")
        if n is not None:
            n = as_count("Binary", "n", n)
        shape = as_shape("Binary", shape, default=(n,))
        if n is not None and (not len(shape) or shape[-1] != n):
            raise SpecShapeError(f"Binary: the last dim of shape {list(shape)} must be n={n}")
        super().__init__(2, shape, device, dtype)

    def update_mask(self, mask: torch.Tensor | None) -> None:
        if mask is not None:
            raise NotImplementedError("Binary specs do not support masks.")

    def squeeze(self, dim: int | None = None) -> TensorSpec:
        """Removes dims of size 1, the last one included (``n`` becomes the new last dim).

        >>> Binary(1, shape=(2, 1)).squeeze(-1).shape
        torch.Size([2])
        """
        if dim is None:
            if self._ndim == 1:
                return self
            keep = [s for s in self.shape if s != 1]
        else:
            d = normalize_dim(dim, self._ndim)
            keep = [s for i, s in enumerate(self.shape) if i != d or s != 1]
        if len(keep) == self._ndim:
            return self
        return self._reshaped(torch.Size(keep), lambda t, extra: t)

    def unsqueeze(self, dim: int) -> TensorSpec:
        """Inserts a dim of size 1 anywhere, also last (then ``n`` is 1), as TorchRL allows.

        >>> Binary(3).unsqueeze(-1).shape
        torch.Size([3, 1])
        """
        d = normalize_dim(dim, self._ndim + 1)
        shape = [*self.shape[:d], 1, *self.shape[d:]]
        return self._reshaped(torch.Size(shape), lambda t, extra: t)

    def is_in(self, val: Any) -> bool:
        if not self._layout_ok(val):
            return False
        if self.dtype == torch.bool or not val.numel():
            return True
        mn, mx = torch.aminmax(val)
        return bool((mn >= 0) & (mx <= 1))

    def _explain_values(self, val: torch.Tensor) -> str:
        return "expected values in {0, 1}"

    def _short(self) -> str:
        return f"Binary(shape={list(self.shape)}, dtype={self.dtype})"

    def cardinality(self) -> int:
        return 2 ** (self.shape[-1] if self._ndim else 1)

    def enumerate(self, use_mask: bool = False) -> torch.Tensor:
        n = self.shape[-1]
        values = torch.arange(2**n, device=self.device)
        bits = (values.unsqueeze(-1) >> torch.arange(n - 1, -1, -1, device=self.device)) & 1
        return bits.view(-1, *([1] * (self._ndim - 1)), n).expand(-1, *self._sshape).to(self.dtype)
