"""Several categorical variables in one tensor: ``MultiCategorical`` (indices) and ``MultiOneHot``.

``nvec`` gives the number of categories of each variable. A MultiCategorical's last dim holds one index
per variable; a MultiOneHot's last dim holds the concatenated one-hot vectors (size ``sum(nvec)``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from torchenv.specs._base import TensorSpec, _normalize_index, init_leaf
from torchenv.specs._boxes import BoxList
from torchenv.specs._discrete import _masked_scores, _sample_mask
from torchenv.specs._errors import (
    SpecArgumentError,
    SpecEncodeError,
    SpecShapeError,
    SpecValueError,
)
from torchenv.specs._utils import (
    DeviceLike,
    ShapeLike,
    batch_shape,
    copy_if_negative_strides,
    is_float_dtype,
)
from torchenv.specs._validate import as_shape


def _as_nvec(owner: str, nvec: Any) -> torch.Tensor:
    """``nvec`` as a long tensor of whole numbers >= 1; else an error naming ``nvec``."""
    if isinstance(nvec, (str, bytes)) or nvec is None:
        raise TypeError(f"{owner}: nvec must be a sequence of ints >= 1; got {nvec!r}.")
    if not isinstance(nvec, (torch.Tensor, np.ndarray)) and any(
        isinstance(x, (bool, np.bool_)) for x in np.asarray(nvec, dtype=object).reshape(-1)
    ):
        raise TypeError(f"{owner}: nvec must be a sequence of ints >= 1, not bools; got {nvec!r}.")
    try:
        raw = nvec if isinstance(nvec, torch.Tensor) else torch.as_tensor(np.asarray(nvec))
    except (TypeError, ValueError, RuntimeError):
        raise TypeError(f"{owner}: nvec must be a sequence of ints >= 1; got {nvec!r}.") from None
    if raw.dtype.is_complex or raw.dtype is torch.bool or not raw.numel():
        raise TypeError(f"{owner}: nvec must be a non-empty sequence of ints >= 1; got {nvec!r}.")
    if raw.dtype.is_floating_point and not bool((raw == raw.trunc()).all()):
        raise SpecArgumentError(f"{owner}: nvec must hold whole numbers >= 1; got {nvec!r}.")
    if bool((raw < 1).any()):
        raise SpecArgumentError(f"{owner}: nvec must hold ints >= 1; got {nvec!r}.")
    return raw.to(torch.long)


def _chunks(nvec: Sequence[int]) -> tuple[list[int], list[int]]:
    starts, pos = [], 0
    for n in nvec:
        starts.append(pos)
        pos += n
    return list(nvec), starts


class MultiCategorical(TensorSpec):
    """One category index per variable; variable ``i`` takes values in ``{0, ..., nvec[i] - 1}``.

    Args:
        nvec: categories per variable (list or tensor; a tensor may carry batch dims).
        shape: the spec's shape (default ``nvec.shape``); its last dim is the number of variables.
        device: the device of the values (default: cpu).
        dtype: the dtype (default ``torch.int64``).
        mask: optional bool tensor of shape ``(*shape[:-1], sum(nvec))``: allowed categories.
        remove_singleton: as in TorchRL, ``rand()`` of an unmasked spec of shape ``(1,)`` drops
            the variable dim (and ``is_in`` accepts such samples).

    >>> spec = MultiCategorical([2, 3])
    >>> spec.shape, spec.cardinality()
    (torch.Size([2]), 6)
    >>> spec.is_in(torch.tensor([1, 2]))
    True
    """

    domain = "discrete"
    _tensor_attrs = {"nvec": 0, "mask": 0}
    _protected_dims = 1

    def __init__(
        self,
        nvec: Sequence[int] | torch.Tensor,
        shape: ShapeLike = None,
        device: DeviceLike = None,
        dtype: torch.dtype = torch.int64,
        mask: torch.Tensor | None = None,
        remove_singleton: bool = True,
    ) -> None:
        nvec_t = _as_nvec("MultiCategorical", nvec)
        if nvec_t.ndim == 0:
            nvec_t = nvec_t.unsqueeze(0)
        shape = as_shape("MultiCategorical", shape, default=nvec_t.shape)
        init_leaf(self, shape, device, dtype)
        try:
            self.nvec = nvec_t.to(self.device).expand(self._sshape).clone()
        except RuntimeError:
            raise SpecShapeError(
                f"MultiCategorical: nvec of shape {list(nvec_t.shape)} does not broadcast to {list(shape)}"
            ) from None
        self.remove_singleton = remove_singleton
        self.mask = None
        self._refresh()
        if mask is not None:
            self.update_mask(mask)

    def _refresh(self) -> None:
        flat = (
            self.nvec.reshape(-1, self.nvec.shape[-1]) if self.nvec.ndim else self.nvec.view(1, 1)
        )
        self._uniform = flat.shape[0] <= 1 or bool((flat == flat[:1]).all())
        self._row = flat[0].tolist() if flat.numel() else []
        # TorchRL drops the variable dim of a one-variable spec's samples (``remove_singleton``)
        self._squeeze_out = bool(self.remove_singleton) and tuple(self._shape) == (1,)

    @property
    def space(self) -> BoxList:
        return BoxList.from_nvec(self._row if self._uniform else self.nvec)

    def update_mask(self, mask: torch.Tensor | None) -> None:
        """Sets the allowed categories: a bool tensor of shape ``(*shape[:-1], sum(nvec))``."""
        if mask is None:
            self.mask = None
            return
        if not self._uniform:
            raise SpecValueError(
                "only MultiCategorical specs with one nvec for all batch entries can be masked"
            )
        self.mask = self._as_mask(mask, (*self._sshape[:-1], sum(self._row)))

    def rand(
        self, shape: Sequence[int] | None = None, *, generator: torch.Generator | None = None
    ) -> torch.Tensor:
        full = batch_shape(shape) + self._sshape
        if self.mask is not None:
            parts = self.mask.split(self._row, -1)
            samples = [_sample_mask(m, full[:-1], generator) for m in parts]
            return torch.stack(samples, -1).to(self.dtype)  # TorchRL keeps the dim here
        out = torch.rand(full, dtype=torch.float64, device=self.device, generator=generator)
        out = out.mul_(self.nvec).floor_()
        if self._squeeze_out:
            return out.squeeze(-1).to(self.dtype)
        return out.to(self.dtype)

    def is_in(self, val: Any) -> bool:
        if not self._layout_ok(val):
            # a sample without its variable dim (remove_singleton); the retry cannot recurse again
            if self._squeeze_out and isinstance(val, torch.Tensor) and val.shape[-1:] != (1,):
                return self.is_in(val.unsqueeze(-1))
            return False
        if not val.numel():
            return True
        nvec = self.nvec.to(val.device)
        if not bool(((val >= 0) & (val < nvec)).all()):
            return False
        if self.mask is not None:
            _, starts = _chunks(self._row)
            pos = val.to(torch.long) + torch.tensor(starts, device=val.device)
            mask = self.mask.to(val.device).expand(*val.shape[:-1], self.mask.shape[-1])
            return bool(mask.gather(-1, pos).all())
        return True

    def _explain_values(self, val: torch.Tensor) -> str:
        return f"expected 0 <= value < nvec (nvec={self._row if self._uniform else 'per-entry'})"

    def _short(self) -> str:
        return f"MultiCategorical(nvec={self._row}, shape={list(self.shape)}, dtype={self.dtype})"

    def _project(self, val: torch.Tensor) -> torch.Tensor:
        val = torch.as_tensor(val, device=self.device)
        if is_float_dtype(val.dtype):
            val = val.round()
        shape = val.shape
        val = torch.minimum(val.to(torch.long).clamp_min(0), self.nvec - 1)
        if val.shape != shape and val.numel() == shape.numel():
            # a 0-d value of a one-variable spec stays 0-d (as rand() gives it)
            val = val.reshape(shape)
        if self.mask is not None:
            parts = self.mask.split(self._row, -1)
            cols = []
            for i, m in enumerate(parts):
                col = val[..., i]
                m = m.expand(*col.shape, m.shape[-1])
                ok = m.gather(-1, col.unsqueeze(-1)).squeeze(-1)
                cols.append(torch.where(ok, col, _sample_mask(m, tuple(col.shape))))
            val = torch.stack(cols, -1)
        return val.to(self.dtype)

    def cardinality(self) -> int:
        return int(torch.tensor(self._row, dtype=torch.float64).prod().item())

    def __getitem__(self, idx: Any) -> TensorSpec:
        """Indexes the spec; an index that reaches the last dim picks variables, as in TorchRL.

        An int on the last dim keeps that variable as a one-variable spec.

        >>> spec = MultiCategorical([2, 3], shape=(4, 2))
        >>> spec[0].shape, spec[0, 1].shape, spec[0, 1].nvec
        (torch.Size([2]), torch.Size([1]), tensor([3]))
        """
        norm = _normalize_index(idx, self._ndim)
        if (
            None in norm
            or len(norm) != self._ndim
            or any(isinstance(i, torch.Tensor) and i.dtype == torch.bool for i in norm)
        ):
            return super().__getitem__(idx)
        spec = super().__getitem__(norm[:-1]) if len(norm) > 1 else self
        last, n = norm[-1], spec.shape[-1]
        if isinstance(last, slice):
            pick = torch.arange(n)[last]
        else:
            pick = torch.as_tensor(last).reshape(-1).long()
            if bool(((pick < -n) | (pick >= n)).any()):
                raise IndexError(
                    f"index {last} is out of bounds for the {n} variables of {self._short()}"
                )
            pick = pick % n
        from torchenv.specs._stack import _select_variables

        return _select_variables(spec, pick)

    def enumerate(self, use_mask: bool = False) -> torch.Tensor:
        """Every combination of the variables' values (the first variable varies slowest).

        Args:
            use_mask: leave out the combinations the mask forbids (a mask without batch dims).

        Returns:
            A tensor of shape ``(n, *self.shape)``.

        Raises:
            RuntimeError: if the spec is masked and ``use_mask`` is ``False`` (as in TorchRL).

        >>> MultiCategorical([2, 2]).enumerate().tolist()
        [[0, 0], [0, 1], [1, 0], [1, 1]]
        """
        values = self._all_rows()
        if self.mask is not None:
            if not use_mask:
                raise RuntimeError(
                    f"Cannot enumerate a masked {type(self).__name__} spec: pass use_mask=True "
                    "to list the allowed values only."
                )
            if self.mask.ndim != 1:
                raise NotImplementedError(
                    "enumerate(use_mask=True) needs a mask without batch dims"
                )
            starts = torch.tensor([0, *self._row[:-1]], device=self.device).cumsum(0)
            values = values[self.mask[values + starts].all(-1)]
        values = values.view(values.shape[0], *([1] * (self._ndim - 1)), self.shape[-1])
        return values.expand(values.shape[0], *self._sshape).to(self.dtype)

    def _all_rows(self) -> torch.Tensor:
        grids = torch.meshgrid(
            *[torch.arange(n, device=self.device) for n in self._row], indexing="ij"
        )
        return torch.stack([g.reshape(-1) for g in grids], -1)

    def to_categorical(self, val: torch.Tensor, safe: bool | None = None) -> torch.Tensor:
        """``val`` unchanged: it is already categorical (checked when ``safe``)."""
        return self._checked(val, safe)

    def to_categorical_spec(self) -> MultiCategorical:
        """This spec: it is already categorical."""
        return self

    def to_one_hot(self, val: torch.Tensor, safe: bool | None = None) -> torch.Tensor:
        """Concatenated one-hot encoding of the indices (bool)."""
        if safe:
            self.assert_is_in(val)
        parts = [
            torch.nn.functional.one_hot(val[..., i].long(), n) for i, n in enumerate(self._row)
        ]
        return torch.cat(parts, -1).to(torch.bool)

    def to_one_hot_spec(self) -> MultiOneHot:
        """The equivalent :class:`MultiOneHot` spec."""
        return MultiOneHot(
            self._row, shape=(*self.shape[:-1], sum(self._row)), device=self.device, mask=self.mask
        )


class MultiOneHot(TensorSpec):
    """Concatenated one-hot vectors, one per variable with ``nvec[i]`` categories.

    Args:
        nvec: categories per variable.
        shape: the spec's shape; defaults to ``(sum(nvec),)`` and must end with ``sum(nvec)``.
        device: the device of the values (default: cpu).
        dtype: the dtype (default ``torch.bool``).
        use_register: accepted for TorchRL compatibility.
        mask: optional bool tensor of shape ``shape``: allowed categories.

    >>> spec = MultiOneHot([2, 3])
    >>> spec.rand().sum().item()
    2
    >>> spec.encode([1, 0]).tolist()
    [False, True, True, False, False]
    """

    domain = "discrete"
    _tensor_attrs = {"mask": 0}
    _meta_attrs = ("nvec",)
    _protected_dims = 1

    def __init__(
        self,
        nvec: Sequence[int],
        shape: ShapeLike = None,
        device: DeviceLike = None,
        dtype: torch.dtype = torch.bool,
        use_register: bool = False,
        mask: torch.Tensor | None = None,
    ) -> None:
        self.nvec = _as_nvec("MultiOneHot", nvec).reshape(-1).tolist()
        total = sum(self.nvec)
        shape = as_shape("MultiOneHot", shape, default=(total,))
        if not len(shape) or shape[-1] != total:
            raise SpecShapeError(
                f"MultiOneHot: the last dim of shape {list(shape)} must be sum(nvec)={total}"
            )
        init_leaf(self, shape, device, dtype)
        self.use_register = use_register
        self.mask = None
        if mask is not None:
            self.update_mask(mask)
        self._refresh()

    def _refresh(self) -> None:
        _, starts = _chunks(self.nvec)
        self._starts = torch.tensor(starts, device=self.device)
        self._nvec_t = torch.tensor(self.nvec, device=self.device, dtype=torch.float64)
        ends = [s + n - 1 for s, n in zip(starts, self.nvec)]
        self._ends = torch.tensor(ends, device=self.device)

    @property
    def space(self) -> BoxList:
        return BoxList.from_nvec(self.nvec)

    def update_mask(self, mask: torch.Tensor | None) -> None:
        """Sets the allowed categories (bool tensor of the spec's shape)."""
        self.mask = None if mask is None else self._as_mask(mask, self._sshape)

    def rand(
        self, shape: Sequence[int] | None = None, *, generator: torch.Generator | None = None
    ) -> torch.Tensor:
        full = batch_shape(shape) + self._sshape
        rows = full[:-1]
        if self.mask is not None:
            parts = self.mask.split(self.nvec, -1)
            idx = torch.stack([_sample_mask(m, rows, generator) for m in parts], -1)
        else:
            idx = torch.rand(
                (*rows, len(self.nvec)),
                dtype=torch.float64,
                device=self.device,
                generator=generator,
            )
            idx = idx.mul_(self._nvec_t).floor_().long()
        out = torch.zeros(full, dtype=self.dtype, device=self.device)
        return out.scatter_(-1, idx + self._starts, 1)

    def is_in(self, val: Any) -> bool:
        if not self._layout_ok(val):
            return False
        if not val.numel():
            return True
        v = val.to(torch.long)
        if self.dtype != torch.bool:
            mn, mx = torch.aminmax(v)
            if not bool((mn >= 0) & (mx <= 1)):
                return False
        cs = v.cumsum(-1)
        ends = cs.index_select(-1, self._ends.to(v.device))
        sums = torch.diff(ends, dim=-1, prepend=torch.zeros_like(ends[..., :1]))
        if not bool((sums == 1).all()):
            return False
        if self.mask is not None:
            return not bool((v.to(torch.bool) & ~self.mask.to(v.device)).any())
        return True

    def _explain_values(self, val: torch.Tensor) -> str:
        return f"expected exactly one non-zero entry in each of the {len(self.nvec)} groups (nvec={self.nvec})"

    def _short(self) -> str:
        return f"MultiOneHot(nvec={self.nvec}, shape={list(self.shape)}, dtype={self.dtype})"

    def _project(self, val: torch.Tensor) -> torch.Tensor:
        score = _masked_scores(val, self.mask, self.device)
        idx = torch.stack([p.argmax(-1) for p in score.split(self.nvec, -1)], -1)
        out = torch.zeros(score.shape, dtype=self.dtype, device=score.device)
        return out.scatter_(-1, idx + self._starts, 1)

    def to_one_hot(self, val: torch.Tensor, safe: bool | None = None) -> torch.Tensor:
        """``val`` unchanged: it is already one-hot (checked when ``safe``)."""
        return self._checked(val, safe)

    def to_one_hot_spec(self) -> MultiOneHot:
        """This spec: it is already one-hot."""
        return self

    def to_categorical(self, val: torch.Tensor, safe: bool | None = None) -> torch.Tensor:
        """The index of the active category of each variable (last dim: one per variable)."""
        if safe:
            self.assert_is_in(val)
        return torch.stack([p.to(torch.long).argmax(-1) for p in val.split(self.nvec, -1)], -1)

    def to_categorical_spec(self) -> MultiCategorical:
        """The equivalent :class:`MultiCategorical` spec."""
        return MultiCategorical(
            self.nvec, shape=(*self.shape[:-1], len(self.nvec)), device=self.device, mask=self.mask
        )

    def encode(self, val: Any, *, ignore_device: bool = False) -> torch.Tensor:
        """One-hot encodes per-variable indices (last dim: one index per variable)."""
        device = None if ignore_device else self.device
        idx = torch.as_tensor(copy_if_negative_strides(val), device=device).to(torch.long)
        if idx.shape[-1:] != (len(self.nvec),):
            raise SpecEncodeError(
                f"cannot encode {val!r} with {self._short()}: expected {len(self.nvec)} indices"
            )
        bad = (idx < 0) | (idx >= torch.tensor(self.nvec, device=idx.device))
        if bool(bad.any()):
            raise SpecValueError(
                f"cannot encode {val!r} with {self._short()}: indices must be < nvec"
            )
        out = torch.zeros((*idx.shape[:-1], self.shape[-1]), dtype=self.dtype, device=idx.device)
        return out.scatter_(-1, idx + self._starts.to(idx.device), 1)

    def to_numpy(self, val: torch.Tensor, safe: bool | None = None) -> np.ndarray:
        """The per-variable indices as a numpy array."""
        return self.to_categorical(val, safe).cpu().numpy()

    def cardinality(self) -> int:
        out = 1
        for n in self.nvec:
            out *= n
        return out

    def enumerate(self, use_mask: bool = False) -> torch.Tensor:
        """Every combination of the variables' one-hot values, shape ``(n, *self.shape)``.

        Raises:
            RuntimeError: if the spec is masked and ``use_mask`` is ``False`` (as in TorchRL).

        >>> MultiOneHot([2, 2]).enumerate().int().tolist()
        [[1, 0, 1, 0], [1, 0, 0, 1], [0, 1, 1, 0], [0, 1, 0, 1]]
        """
        if self.mask is not None and not use_mask:
            raise RuntimeError(
                "Cannot enumerate a masked MultiOneHot spec: pass use_mask=True to list the "
                "allowed values only."
            )
        categorical = self.to_categorical_spec()
        return categorical.to_one_hot(categorical.enumerate(use_mask)).to(self.dtype)
