"""``PixelRenderTransform``: the images of the parent env's ``render`` as an observation."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch
from tensordict import NonTensorData, NonTensorStack, TensorDictBase
from tensordict.utils import NestedKey

from torchenv.specs import Composite, NonTensor, Unbounded
from torchenv.transforms import Transform

__all__ = ["PixelRenderTransform"]


def _as_pixels(array: Any) -> torch.Tensor:
    """A tensor that does not share memory with the renderer's (possibly reused) buffer."""
    if isinstance(array, torch.Tensor):
        return array
    if isinstance(array, (list, tuple)):
        return torch.stack([_as_pixels(a) for a in array])
    return torch.from_numpy(np.array(array))


class PixelRenderTransform(Transform):
    """Calls ``render`` on the parent env at every reset and step and writes the image.

    An alternative to ``from_pixels`` for envs that can render: the image is written under
    ``out_keys[0]`` (``"pixels"``) and added to the observation spec (its shape and dtype are
    read from one render, after a reset of the parent env, when the specs are built). In a
    batched env (``SerialEnv`` / ``ParallelEnv``), ``render`` runs in every sub-env and the
    images are stacked; a batched env whose ``render`` returns a single image gets it as
    non-tensor data.

    Args:
        out_keys: one key where the image is written. Defaults to ``["pixels"]``.
        preproc: applied to what ``render`` returns before it is written (e.g. a resize).
        as_non_tensor: write the image as non-tensor data (no shape constraint). Inferred from
            the first render when ``None``: non-tensor when the image's leading dims do not
            match the env's batch size.
        render_method: the name of the env's render method. Defaults to ``"render"``.
        pass_tensordict: pass the data to the render method (for stateless envs).
        **kwargs: passed to the render method (e.g. ``mode="rgb_array"``).

    Examples:
        >>> import numpy as np, torch
        >>> from torchenv.envs import PendulumEnv
        >>> from torchenv.transforms import TransformedEnv
        >>> class RenderedPendulum(PendulumEnv):
        ...     def render(self, tensordict):
        ...         angle = float(tensordict["th"])
        ...         return np.full((8, 8, 3), int(abs(angle) * 40) % 256, dtype=np.uint8)
        >>> env = TransformedEnv(RenderedPendulum(), PixelRenderTransform(pass_tensordict=True))
        >>> env.rollout(3)["pixels"].shape
        torch.Size([3, 8, 8, 3])

    Rendering can be switched off and on with :meth:`switch`.
    """

    def __init__(
        self,
        out_keys: Sequence[NestedKey] | NestedKey | None = None,
        preproc: Callable[[Any], Any] | None = None,
        as_non_tensor: bool | None = None,
        render_method: str = "render",
        pass_tensordict: bool = False,
        **kwargs: Any,
    ) -> None:
        if out_keys is None:
            out_keys = ["pixels"]
        elif isinstance(out_keys, (str, tuple)):
            out_keys = [out_keys]
        if len(out_keys) != 1:
            raise ValueError(
                f"PixelRenderTransform: expected exactly one out_key, got out_keys={list(out_keys)}"
            )
        super().__init__(in_keys=[], out_keys=out_keys)
        self.preproc = preproc
        self.as_non_tensor = as_non_tensor
        self.render_method = render_method
        self.pass_tensordict = pass_tensordict
        self.kwargs = kwargs
        self._enabled = True
        self.__dict__["_render_cache"] = None  # (parent, bound render method), rebuilt per parent

    # ------------------------------------------------------------------ rendering
    def _render_fn(self) -> Callable[..., Any]:
        parent = self.parent
        cached = self.__dict__["_render_cache"]
        if cached is not None and cached[0] is parent:
            return cached[1]
        if parent is None:
            raise RuntimeError(
                "PixelRenderTransform renders its parent env: append it to an env "
                "(TransformedEnv / env.append_transform) before using it"
            )
        method = getattr(parent, self.render_method, None)
        if not callable(method):
            raise ValueError(
                f"PixelRenderTransform: the env {type(parent.base_env).__name__} has no callable "
                f"{self.render_method!r} method (got {method!r})"
            )
        self.__dict__["_render_cache"] = (parent, method)
        return method

    def _call(self, next_tensordict: TensorDictBase) -> TensorDictBase:
        if not self._enabled:
            return next_tensordict
        render = self._render_fn()
        if self.pass_tensordict:
            array = render(next_tensordict, **self.kwargs)
        else:
            array = render(**self.kwargs)
        if self.preproc is not None:
            array = self.preproc(array)
        key = self.out_keys[0]
        if self.as_non_tensor is None:
            shape = tuple(getattr(array, "shape", ()))
            if isinstance(array, (list, tuple)):
                shape = (len(array), *tuple(getattr(array[0], "shape", ())))
            batch = tuple(next_tensordict.batch_size)
            self.as_non_tensor = shape[: len(batch)] != batch
        if self.as_non_tensor:
            next_tensordict.set_non_tensor(key, array)
            return next_tensordict
        pixels = _as_pixels(array)
        device = next_tensordict.device
        if device is not None and pixels.device != device:
            pixels = pixels.to(device)
        try:
            next_tensordict.set(key, pixels)
        except Exception as err:
            raise RuntimeError(
                f"PixelRenderTransform: could not write the rendered image (shape "
                f"{tuple(pixels.shape)}, dtype {pixels.dtype}) under {key!r} in data of batch size "
                f"{tuple(next_tensordict.batch_size)}; adapt it with `preproc`, pass render "
                "arguments as keyword arguments, or use as_non_tensor=True"
            ) from err
        return next_tensordict

    def _reset(
        self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase
    ) -> TensorDictBase:
        return self._call(tensordict_reset)

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        return self._call(tensordict)

    # ---------------------------------------------------------------------- specs
    def transform_observation_spec(self, observation_spec: Composite) -> Composite:
        """Adds the spec of the image: renders once after a reset of the parent env."""
        parent = self.parent
        if parent is None:
            raise RuntimeError(
                "PixelRenderTransform: the pixels spec is read from a render of the parent env, "
                "but the transform has no parent env"
            )
        enabled, self._enabled = self._enabled, True
        try:
            data = self._call(parent.reset())
        finally:
            self._enabled = enabled
        key = self.out_keys[0]
        pixels = data.get(key)
        if isinstance(pixels, (NonTensorData, NonTensorStack)):
            spec = NonTensor(shape=data.batch_size, device=observation_spec.device)
        else:
            spec = Unbounded(shape=pixels.shape, dtype=pixels.dtype, device=pixels.device)
        observation_spec[key] = spec
        return observation_spec

    # ------------------------------------------------------------------- switch
    def switch(self, mode: str | bool | None = None) -> None:
        """Turns rendering off or on: ``True``/``"on"``, ``False``/``"off"``, ``None`` toggles."""
        if mode is None:
            mode = not self._enabled
        elif not isinstance(mode, bool):
            if mode not in ("on", "off"):
                raise ValueError(
                    f"PixelRenderTransform.switch: mode must be True, False, 'on' or 'off', "
                    f"got {mode!r}"
                )
            mode = mode == "on"
        self._enabled = mode

    @property
    def enabled(self) -> bool:
        """Whether rendering is on."""
        return self._enabled

    def empty_cache(self) -> None:
        self.__dict__["_render_cache"] = None
        super().empty_cache()

    def clone(self) -> PixelRenderTransform:
        new = super().clone()
        new.__dict__["_render_cache"] = None
        return new

    def __getstate__(self) -> dict[str, Any]:
        state = super().__getstate__()
        state["_render_cache"] = None
        return state

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(out_keys={self.out_keys}, render_method={self.render_method!r}, "
            f"enabled={self._enabled})"
        )
