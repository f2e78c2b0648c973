"""JAX <-> torch without copies (DLPack), and the JAX device that follows a torch device."""

from __future__ import annotations

from typing import Any

import torch

__all__ = ["to_torch", "to_jax", "tree_to_torch", "jax_device", "buffer_pointer"]


def to_torch(array: Any) -> torch.Tensor:
    """A torch tensor on the JAX array's buffer (DLPack: no copy).

    >>> import jax.numpy as jnp
    >>> x = jnp.arange(4.0)
    >>> t = to_torch(x)
    >>> t.data_ptr() == buffer_pointer(x)
    True
    """
    return torch.from_dlpack(array)


def to_jax(tensor: torch.Tensor) -> Any:
    """A JAX array on the torch tensor's buffer (DLPack: no copy when it is contiguous).

    >>> t = torch.arange(4.0)
    >>> buffer_pointer(to_jax(t)) == t.data_ptr()
    True
    """
    import jax.dlpack

    return jax.dlpack.from_dlpack(tensor.contiguous())


def tree_to_torch(tree: Any) -> Any:
    """Every leaf of a pytree of JAX arrays (dicts, tuples, named tuples) as a torch tensor."""
    import jax

    return jax.tree_util.tree_map(torch.from_dlpack, tree)


def buffer_pointer(array: Any) -> int:
    """The address of a (single-device) JAX array's buffer."""
    return array.unsafe_buffer_pointer()


def jax_device(device: torch.device | None) -> Any:
    """The JAX device where an env on the torch ``device`` runs: ``cpu`` -> JAX's first CPU
    device, ``cuda:i`` -> JAX's ``i``-th GPU (a clear error when JAX has none).

    >>> jax_device(torch.device("cpu")).platform
    'cpu'
    """
    import jax

    device = torch.device("cpu") if device is None else torch.device(device)
    if device.type == "cpu":
        return jax.devices("cpu")[0]
    if device.type == "cuda":
        try:
            gpus = jax.devices("gpu")
        except RuntimeError as err:
            raise RuntimeError(
                f"device={device}: JAX has no GPU backend here ({err}); install jax with CUDA "
                "(pip install 'jax[cuda12]') or use device='cpu'"
            ) from err
        index = device.index or 0
        if index >= len(gpus):
            raise RuntimeError(f"device={device}: JAX sees {len(gpus)} GPU(s)")
        return gpus[index]
    raise ValueError(f"device: expected 'cpu' or 'cuda[:i]' for a JAX env, got {device}")
