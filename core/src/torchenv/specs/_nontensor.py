"""``NonTensor``: a spec for non-tensor data (strings, python objects) carried in TensorDicts."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from tensordict import NonTensorData, NonTensorStack, is_non_tensor, is_tensor_collection

from torchenv.specs._base import TensorSpec
from torchenv.specs._utils import DeviceLike, ShapeLike, batch_shape, to_device
from torchenv.specs._validate import as_device, as_shape


class NonTensor(TensorSpec):
    """Non-tensor data: ``rand``/``zero``/``one`` return a ``NonTensorData`` holding ``example_data``.

    Args:
        shape: the batch shape of the data (default ``(1,)``, as in TorchRL).
        device: the device (default ``None``).
        dtype: the dtype (default ``None``; usually left out).
        example_data: the value that ``rand``/``zero`` carry.
        batched: with ``True``, every element of the shape gets its own copy (a ``NonTensorStack``).
        feature_dims: the number of trailing dims held by one ``NonTensorData`` (exclusive with ``batched``).

    >>> spec = NonTensor(shape=(), example_data="hello")
    >>> spec.rand().data
    'hello'
    >>> spec.is_in(spec.rand())
    True
    """

    domain = None  # type: ignore[assignment]
    _meta_attrs = ("example_data",)

    def __init__(
        self,
        shape: ShapeLike = None,
        device: DeviceLike = None,
        dtype: torch.dtype | None = None,
        example_data: Any = None,
        batched: bool | None = None,
        feature_dims: int | None = None,
        **kwargs: Any,
    ) -> None:
        if kwargs:
            raise TypeError(f"NonTensor got unexpected arguments {sorted(kwargs)}")
        self._set_shape(as_shape("NonTensor", shape, default=(1,)))
        self.device = to_device(as_device("NonTensor", device)) if device is not None else None
        self.dtype = dtype
        self.example_data = example_data
        if batched is not None and feature_dims is not None:
            raise ValueError("NonTensor: pass batched or feature_dims, not both.")
        self.batched = bool(batched)
        if feature_dims is None:
            feature_dims = 0 if self.batched else len(self.shape)
        self.feature_dims = feature_dims

    def _refresh(self) -> None:
        if not self.batched:
            self.feature_dims = (
                min(self.feature_dims, self._ndim) if self.feature_dims else self._ndim
            )

    def rand(
        self, shape: Sequence[int] | None = None, *, generator: torch.Generator | None = None
    ) -> Any:
        total = batch_shape(shape) + self._sshape
        nfeat = 0 if self.batched else self.feature_dims
        outer = total[: len(total) - nfeat]
        val: Any = NonTensorData(
            data=self.example_data,
            batch_size=torch.Size(total[len(total) - nfeat :]),
            device=self.device,
        )
        for size in reversed(outer):
            val = NonTensorStack(*[val.clone() for _ in range(size)], stack_dim=0)
        return val

    def zero(self, shape: Sequence[int] | None = None) -> Any:
        return self.rand(shape)

    def one(self, shape: Sequence[int] | None = None) -> Any:
        return self.rand(shape)

    def is_in(self, val: Any) -> bool:
        if not isinstance(val, torch.Tensor) and not is_tensor_collection(val):
            return True
        if not is_non_tensor(val):
            return False
        return self._shape_ok(torch.Size(val.batch_size))

    def _explain(self, val: Any) -> str:
        if not is_non_tensor(val):
            return f"expected non-tensor data, got {type(val).__name__}"
        return f"expected a batch size ending with {list(self.shape)}, got {list(val.batch_size)}"

    def _short(self) -> str:
        return f"NonTensor(shape={list(self.shape)})"

    def _project(self, val: Any) -> Any:
        raise NotImplementedError("Cannot project a NonTensor spec.")

    def project(self, val: Any) -> Any:
        return val

    def encode(self, val: Any, *, ignore_device: bool = False) -> Any:
        """Wraps ``val`` in a ``NonTensorData`` of the spec's shape."""
        return NonTensorData(
            val, batch_size=torch.Size(self._sshape), device=None if ignore_device else self.device
        )

    def to_numpy(self, val: Any, safe: bool | None = None) -> Any:
        """Non-tensor data is returned as is."""
        return val

    def type_check(self, value: Any, key: Any = None) -> None:
        return None

    def clone(self) -> NonTensor:
        return self._copy()  # type: ignore[return-value]

    def to(self, dest: DeviceLike | torch.dtype) -> NonTensor:
        if isinstance(dest, torch.dtype):
            new = self._copy()
            new.dtype = dest
            return new  # type: ignore[return-value]
        new = self._copy()
        new.device = to_device(dest)
        return new  # type: ignore[return-value]

    def index(self, index: Any, tensor_to_index: Any) -> Any:
        raise NotImplementedError("Cannot use index with a NonTensor spec.")

    def _repr_fields(self) -> list[tuple[str, Any]]:
        return [*super()._repr_fields(), ("example_data", self.example_data)]
