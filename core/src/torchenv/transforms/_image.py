"""Image and shape transforms (torch ops only): ToTensorImage, Resize, CenterCrop, Crop,
GrayScale, PermuteTransform, FlattenObservation, UnsqueezeTransform, SqueezeTransform."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
import torch.nn.functional as F
from tensordict.utils import NestedKey

from torchenv.specs import Bounded, Composite, TensorSpec, Unbounded
from torchenv.transforms._base import ObservationTransform, Transform

__all__ = [
    "CenterCrop",
    "Crop",
    "FlattenObservation",
    "GrayScale",
    "PermuteTransform",
    "Resize",
    "SqueezeTransform",
    "ToTensorImage",
    "UnsqueezeTransform",
]

_PIXELS = ["pixels"]


def _map_spec(
    spec: TensorSpec, fn: Callable[[torch.Tensor], torch.Tensor], dtype=None
) -> TensorSpec:
    """The spec of ``fn(x)`` for ``x`` in ``spec`` (``fn`` must be monotone for bounded specs)."""
    dtype = dtype or spec.dtype
    if isinstance(spec, Bounded):
        low = fn(spec.space.low.to(dtype))
        high = fn(spec.space.high.to(dtype))
        return Bounded(low, high, shape=low.shape, dtype=dtype, device=spec.device)
    shape = fn(spec.zero().to(dtype)).shape
    return Unbounded(shape=shape, dtype=dtype, device=spec.device)


class _ImageShapeError(ValueError, TypeError, RuntimeError):
    """Data that is not an image of the expected layout. A ``ValueError``, and also the types
    TorchRL's image transforms raise there (torchvision's ``TypeError`` in ``GrayScale``, the
    ``RuntimeError`` of ``permute`` in ``ToTensorImage``), so that either ``except`` catches it."""


class _ShapeTransform(ObservationTransform):
    """A transform whose op works on tensors and specs alike (through :func:`_map_spec`)."""

    def _op(self, x: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def _apply_transform(self, obs: torch.Tensor) -> torch.Tensor:
        return self._op(obs)

    def _transform_leaf_spec(self, spec: TensorSpec) -> TensorSpec:
        return _map_spec(spec, self._op)


class _TwoWayShapeTransform(Transform):
    """A shape op on outputs whose inverse undoes it on inputs.

    The policy writes the forward layout, so the outer action / state spec is the forward map
    of the inner one.
    """

    def _forward_spec(self, spec: TensorSpec) -> TensorSpec:
        return _map_spec(spec, self._apply_transform)

    def transform_input_spec(self, input_spec: Composite) -> Composite:
        return self._map_input_specs(input_spec, self._forward_spec)


def _image_size(w: int, h: int | None) -> tuple[int, int]:
    """``(w, h)`` as ints; ``h`` defaults to ``w`` (a square)."""
    return int(w), int(h if h is not None else w)


class ToTensorImage(ObservationTransform):
    """Turns ``[..., H, W, C]`` images (uint8 in ``[0, 255]``) into ``[..., C, H, W]`` floats in ``[0, 1]``.

    Args:
        from_int: divide by 255. Defaults to ``True`` for integer inputs.
        unsqueeze: add a leading dim to unbatched images.
        dtype: the output dtype. Defaults to the default float dtype.
        in_keys: the images. Defaults to ``["pixels"]``.
        out_keys: where to write them. Defaults to ``in_keys``.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> img = torch.full((4, 5, 3), 255, dtype=torch.uint8)
        >>> out = ToTensorImage()(TensorDict(pixels=img))["pixels"]
        >>> out.shape, out.max().item()
        (torch.Size([3, 4, 5]), 1.0)
    """

    def __init__(
        self,
        from_int: bool | None = None,
        unsqueeze: bool = False,
        dtype: torch.dtype | None = None,
        *,
        in_keys: Sequence[NestedKey] | None = None,
        out_keys: Sequence[NestedKey] | None = None,
        shape_tolerant: bool = False,
    ) -> None:
        super().__init__(in_keys or _PIXELS, out_keys)
        self.from_int = from_int
        self.unsqueeze = unsqueeze
        self.dtype = dtype or torch.get_default_dtype()
        self.shape_tolerant = shape_tolerant

    def _apply_transform(self, obs: torch.Tensor) -> torch.Tensor:
        if obs.ndim < 3:
            raise _ImageShapeError(
                f"ToTensorImage: expected images [..., H, W, C], got shape {tuple(obs.shape)}"
            )
        if not self.shape_tolerant or obs.shape[-1] == 3:
            obs = obs.movedim(-1, -3)
        from_int = self.from_int if self.from_int is not None else not obs.is_floating_point()
        obs = obs.to(self.dtype)
        if from_int:
            obs = obs.div(255)
        if self.unsqueeze and obs.ndim == 3:
            obs = obs.unsqueeze(0)
        return obs

    def _transform_leaf_spec(self, spec: TensorSpec) -> TensorSpec:
        shape = list(spec.shape)
        shape = [*shape[:-3], shape[-1], shape[-3], shape[-2]]
        if self.unsqueeze and len(shape) == 3:
            shape = [1, *shape]
        return Bounded(0.0, 1.0, shape=shape, dtype=self.dtype, device=spec.device)

    def __repr__(self) -> str:
        return f"ToTensorImage(keys={self.in_keys})"


class Resize(_ShapeTransform):
    """Resizes ``[..., C, H, W]`` images to ``[..., C, w, h]`` (``torch.nn.functional.interpolate``).

    As in TorchRL, ``w`` sizes the first image dim (rows) and ``h`` the second (columns).

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> Resize(2, 3)(TensorDict(pixels=torch.rand(3, 8, 8)))["pixels"].shape
        torch.Size([3, 2, 3])
    """

    def __init__(
        self,
        w: int,
        h: int | None = None,
        interpolation: str = "bilinear",
        in_keys: Sequence[NestedKey] | None = None,
        out_keys: Sequence[NestedKey] | None = None,
    ) -> None:
        super().__init__(in_keys or _PIXELS, out_keys)
        self.w, self.h = _image_size(w, h)
        self.interpolation = interpolation

    def _op(self, x: torch.Tensor) -> torch.Tensor:
        if x.ndim < 3:
            raise _ImageShapeError(
                f"Resize: expected images [..., C, H, W], got shape {tuple(x.shape)}"
            )
        lead = x.shape[:-3]
        flat = x.reshape(-1, *x.shape[-3:])
        dtype = flat.dtype
        if not flat.is_floating_point():
            flat = flat.float()
        kwargs = (
            {} if self.interpolation == "nearest" else {"antialias": False, "align_corners": False}
        )
        out = F.interpolate(flat, size=(self.w, self.h), mode=self.interpolation, **kwargs)
        if not dtype.is_floating_point:
            out = out.round().to(dtype)
        return out.reshape(*lead, *out.shape[-3:])

    def __repr__(self) -> str:
        return f"Resize(w={self.w}, h={self.h}, interpolation={self.interpolation!r}, keys={self.in_keys})"


def _window(x: torch.Tensor, top: int, left: int, rows: int, cols: int) -> torch.Tensor:
    """The ``rows x cols`` window of ``x`` (``[..., H, W]``) at ``(top, left)``; the parts of the
    window outside the image are zeros (torchvision's ``crop``, which TorchRL calls)."""
    H, W = x.shape[-2], x.shape[-1]
    if top >= 0 and left >= 0 and top + rows <= H and left + cols <= W:
        return x[..., top : top + rows, left : left + cols]
    out = x.new_zeros((*x.shape[:-2], rows, cols))
    r0, r1 = max(top, 0), min(top + rows, H)
    c0, c1 = max(left, 0), min(left + cols, W)
    if r0 < r1 and c0 < c1:
        out[..., r0 - top : r1 - top, c0 - left : c1 - left] = x[..., r0:r1, c0:c1]
    return out


def _center_origin(size: int, crop: int) -> int:
    """Where a centered crop of ``crop`` pixels starts in a dim of ``size`` pixels: the image is
    zero-padded by ``(crop - size) // 2`` before it when it is smaller, else the start is
    ``(size - crop) / 2`` rounded half to even (torchvision's ``center_crop``)."""
    if crop > size:
        return -((crop - size) // 2)
    return int(round((size - crop) / 2.0))


class Crop(_ShapeTransform):
    """Crops ``[..., H, W]`` images at ``(top, left)`` to ``[..., w, h]``.

    As in TorchRL, ``w`` sizes the first image dim (rows) and ``h`` the second (columns). A
    window reaching outside the image (a crop larger than the image, a negative origin) is
    filled with zeros there, as TorchRL's (torchvision's) crop does.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> Crop(2, 3, top=1, left=1)(TensorDict(pixels=torch.rand(3, 8, 8)))["pixels"].shape
        torch.Size([3, 2, 3])
        >>> Crop(3, top=-1, left=0)(TensorDict(pixels=torch.ones(1, 2, 2)))["pixels"][0]
        tensor([[0., 0., 0.],
                [1., 1., 0.],
                [1., 1., 0.]])
    """

    def __init__(
        self,
        w: int,
        h: int | None = None,
        top: int = 0,
        left: int = 0,
        in_keys: Sequence[NestedKey] | None = None,
        out_keys: Sequence[NestedKey] | None = None,
    ) -> None:
        super().__init__(in_keys or _PIXELS, out_keys)
        self.w, self.h = _image_size(w, h)
        self.top = int(top)
        self.left = int(left)

    def _origin(self, x: torch.Tensor) -> tuple[int, int]:
        return self.top, self.left

    def _op(self, x: torch.Tensor) -> torch.Tensor:
        top, left = self._origin(x)
        return _window(x, top, left, self.w, self.h)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(w={self.w}, h={self.h}, keys={self.in_keys})"


class CenterCrop(Crop):
    """Crops the center of ``[..., H, W]`` images to ``[..., w, h]`` (``w`` sizes the rows).

    Where the crop is larger than the image, the image is centered in zeros; where an odd
    number of pixels is cut, the start is rounded half to even, as TorchRL's (torchvision's)
    ``center_crop`` does.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> CenterCrop(4)(TensorDict(pixels=torch.rand(3, 8, 8)))["pixels"].shape
        torch.Size([3, 4, 4])
        >>> CenterCrop(1, 4)(TensorDict(pixels=torch.ones(1, 2, 2)))["pixels"][0]
        tensor([[0., 1., 1., 0.]])
    """

    def __init__(
        self,
        w: int,
        h: int | None = None,
        in_keys: Sequence[NestedKey] | None = None,
        out_keys: Sequence[NestedKey] | None = None,
    ) -> None:
        super().__init__(w, h, 0, 0, in_keys, out_keys)

    def _origin(self, x: torch.Tensor) -> tuple[int, int]:
        return _center_origin(x.shape[-2], self.w), _center_origin(x.shape[-1], self.h)


class GrayScale(_ShapeTransform):
    """Turns ``[..., 3, H, W]`` RGB images into ``[..., 1, H, W]`` luminance images.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> GrayScale()(TensorDict(pixels=torch.ones(3, 4, 4)))["pixels"].shape
        torch.Size([1, 4, 4])
    """

    _WEIGHTS = (0.2989, 0.587, 0.114)

    def __init__(
        self,
        in_keys: Sequence[NestedKey] | None = None,
        out_keys: Sequence[NestedKey] | None = None,
    ) -> None:
        super().__init__(in_keys or _PIXELS, out_keys)

    def _op(self, x: torch.Tensor) -> torch.Tensor:
        if x.ndim < 3 or x.shape[-3] != 3:
            raise _ImageShapeError(
                f"GrayScale: expected [..., 3, H, W] images, got shape {tuple(x.shape)}"
            )
        r, g, b = x.unbind(-3)
        w0, w1, w2 = self._WEIGHTS
        gray = (w0 * r + w1 * g + w2 * b).unsqueeze(-3)
        return gray if x.is_floating_point() else gray.to(x.dtype)


class PermuteTransform(_TwoWayShapeTransform):
    """Permutes the trailing dims of entries (the inverse permutation applies to inverse keys).

    Args:
        dims: a permutation of ``[-len(dims), ..., -1]``.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> t = PermuteTransform((-1, -3, -2), in_keys=["pixels"])
        >>> t(TensorDict(pixels=torch.zeros(4, 5, 3)))["pixels"].shape
        torch.Size([3, 4, 5])
    """

    def __init__(
        self,
        dims: Sequence[int],
        in_keys: Sequence[NestedKey] | None = None,
        out_keys: Sequence[NestedKey] | None = None,
        in_keys_inv: Sequence[NestedKey] | None = None,
        out_keys_inv: Sequence[NestedKey] | None = None,
    ) -> None:
        super().__init__(in_keys, out_keys, in_keys_inv, out_keys_inv)
        dims = [int(d) for d in dims]
        if sorted(dims) != list(range(-len(dims), 0)):
            raise ValueError(
                f"PermuteTransform: dims must be a permutation of {list(range(-len(dims), 0))}, got {dims}"
            )
        self.dims = dims
        self._inv_dims = [0] * len(dims)
        n = len(dims)
        for i, d in enumerate(dims):
            self._inv_dims[d + n] = i - n

    @staticmethod
    def _permute(x: torch.Tensor, dims: list[int]) -> torch.Tensor:
        n = len(dims)
        lead = list(range(x.ndim - n))
        return x.permute(*lead, *[x.ndim + d for d in dims])

    def _apply_transform(self, obs: torch.Tensor) -> torch.Tensor:
        return self._permute(obs, self.dims)

    def _inv_apply_transform(self, state: torch.Tensor) -> torch.Tensor:
        return self._permute(state, self._inv_dims)

    def transform_observation_spec(self, observation_spec: Composite) -> Composite:
        return self._map_specs(observation_spec, self._forward_spec)

    def __repr__(self) -> str:
        return f"PermuteTransform(dims={self.dims}, keys={self.in_keys})"


class FlattenObservation(_ShapeTransform):
    """Flattens the dims ``first_dim`` to ``last_dim`` (negative, counted from the end).

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> t = FlattenObservation(-3, -1, in_keys=["pixels"])
        >>> t(TensorDict(pixels=torch.zeros(3, 4, 5)))["pixels"].shape
        torch.Size([60])
    """

    def __init__(
        self,
        first_dim: int,
        last_dim: int,
        in_keys: Sequence[NestedKey] | None = None,
        out_keys: Sequence[NestedKey] | None = None,
        allow_positive_dim: bool = False,
    ) -> None:
        super().__init__(in_keys or _PIXELS, out_keys)
        if not allow_positive_dim and (first_dim >= 0 or last_dim >= 0):
            raise ValueError(
                f"FlattenObservation: dims must be negative (from the end), got {first_dim}, {last_dim}"
            )
        self.first_dim = first_dim
        self.last_dim = last_dim

    def _op(self, x: torch.Tensor) -> torch.Tensor:
        return x.flatten(self.first_dim, self.last_dim)

    def __repr__(self) -> str:
        return f"FlattenObservation(first_dim={self.first_dim}, last_dim={self.last_dim}, keys={self.in_keys})"


class UnsqueezeTransform(_TwoWayShapeTransform):
    """Inserts a dim of size one at ``dim`` (negative, from the end); squeezes it on inverse keys.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> t = UnsqueezeTransform(-1, in_keys=["obs"])
        >>> t(TensorDict(obs=torch.zeros(3)))["obs"].shape
        torch.Size([3, 1])
    """

    _invert = False

    def __init__(
        self,
        dim: int,
        in_keys: Sequence[NestedKey] | None = None,
        out_keys: Sequence[NestedKey] | None = None,
        in_keys_inv: Sequence[NestedKey] | None = None,
        out_keys_inv: Sequence[NestedKey] | None = None,
        allow_positive_dim: bool = False,
    ) -> None:
        super().__init__(in_keys, out_keys, in_keys_inv, out_keys_inv)
        if dim >= 0 and not allow_positive_dim:
            raise ValueError(
                f"{type(self).__name__}: dim must be negative (from the end), got {dim}"
            )
        self.dim = dim

    def _unsqueeze(self, x: torch.Tensor) -> torch.Tensor:
        return x.unsqueeze(self.dim)

    def _squeeze(self, x: torch.Tensor) -> torch.Tensor:
        # As torch.squeeze and TorchRL: a dim that is not of size 1 is left alone.
        return x.squeeze(self.dim)

    def _apply_transform(self, obs: torch.Tensor) -> torch.Tensor:
        return self._squeeze(obs) if self._invert else self._unsqueeze(obs)

    def _inv_apply_transform(self, state: torch.Tensor) -> torch.Tensor:
        return self._unsqueeze(state) if self._invert else self._squeeze(state)

    def transform_output_spec(self, output_spec: Composite) -> Composite:
        return self._map_output_specs(output_spec, self._forward_spec)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(dim={self.dim}, keys={self.in_keys}, keys_inv={self.in_keys_inv})"


class SqueezeTransform(UnsqueezeTransform):
    """Removes a dim of size one at ``dim``; unsqueezes it back on inverse keys.

    As ``torch.squeeze`` (and TorchRL), a ``dim`` that is not of size one is left as it is, in
    the data and in the specs.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> SqueezeTransform(-1, in_keys=["obs"])(TensorDict(obs=torch.zeros(3, 1)))["obs"].shape
        torch.Size([3])
    """

    _invert = True
