"""``EnvMetaData``: what a process needs to know about an env without building it."""

from __future__ import annotations

import torch
from tensordict import TensorDictBase

from torchenv.envs._utils import _replace_last
from torchenv.specs import Composite

__all__ = ["EnvMetaData"]


class EnvMetaData:
    """A picklable summary of an env: a zero tensordict of its data, its specs, batch size, device.

    Tensors and specs are stored on CPU; :attr:`tensordict` and :attr:`specs` hand them back
    on :attr:`device`.

    Args:
        tensordict: a zero-filled tensordict with the structure of a step (with ``"next"``
            and the ``"_reset"`` entries).
        specs: ``Composite(output_spec=..., input_spec=...)``.
        batch_size: the env batch size.
        env_str: a printable description of the env.
        device: the env device.
        batch_locked: whether the env is batch-locked.
        device_map: ``{key: device}`` of every entry of ``tensordict``.

    Examples:
        >>> from torchenv.envs import PendulumEnv
        >>> meta = EnvMetaData.metadata_from_env(PendulumEnv())
        >>> meta.batch_size
        torch.Size([])
        >>> meta.expand(4).tensordict.batch_size
        torch.Size([4])
    """

    def __init__(
        self,
        *,
        tensordict: TensorDictBase,
        specs: Composite,
        batch_size: torch.Size,
        env_str: str,
        device: torch.device | None,
        batch_locked: bool,
        device_map: dict | None = None,
    ) -> None:
        self._tensordict = tensordict.to("cpu") if _off_cpu(tensordict.device) else tensordict
        self._specs = specs.to("cpu") if _off_cpu(specs.device) else specs
        self.batch_size = torch.Size(batch_size)
        self.env_str = env_str
        self.device = device
        self.batch_locked = batch_locked
        self.device_map = dict(device_map or {})
        self.has_dynamic_specs = any(
            d < 0 for key in self._specs.keys(True, True) for d in self._specs[key].shape
        )

    @property
    def tensordict(self) -> TensorDictBase:
        """A copy of the zero tensordict, on :attr:`device`."""
        td = self._tensordict.copy()
        if td.device == self.device:
            return td
        return td.clear_device_() if self.device is None else td.to(self.device)

    @property
    def specs(self) -> Composite:
        """The specs, on :attr:`device` (when it is set)."""
        return self._specs if self.device is None else self._specs.to(self.device)

    @staticmethod
    def metadata_from_env(env) -> EnvMetaData:
        """Builds the metadata of ``env`` (from its specs: no step is run)."""
        tensordict = env.fake_tensordict().clone()
        for done_key in env.done_keys:
            done = tensordict.get(
                ("next", *((done_key,) if isinstance(done_key, str) else done_key))
            )
            tensordict.set(_replace_last(done_key, "_reset"), torch.zeros_like(done))
        device_map = {key: tensordict.get(key).device for key in tensordict.keys(True, True)}
        try:
            env_str = str(env)
        except Exception:  # a repr must never make metadata fail
            env_str = f"{type(env).__name__}()"
        return EnvMetaData(
            tensordict=tensordict,
            specs=env.specs,
            batch_size=env.batch_size,
            env_str=env_str,
            device=env.device,
            batch_locked=env.batch_locked,
            device_map=device_map,
        )

    def _replace(self, **changes) -> EnvMetaData:
        fields = {
            "tensordict": self._tensordict,
            "specs": self._specs,
            "batch_size": self.batch_size,
            "env_str": self.env_str,
            "device": self.device,
            "batch_locked": self.batch_locked,
            "device_map": self.device_map,
        }
        fields.update(changes)
        return EnvMetaData(**fields)

    def expand(self, *size: int) -> EnvMetaData:
        """The metadata of ``size`` copies of the env (a batched env's)."""
        if len(size) == 1 and not isinstance(size[0], int):
            size = tuple(size[0])
        return self._replace(
            tensordict=self._tensordict.expand(*size).clone(),
            specs=self._specs.expand(*size),
            batch_size=torch.Size(size),
        )

    def clone(self) -> EnvMetaData:
        return self._replace(tensordict=self._tensordict.clone(), specs=self._specs.clone())

    def to(self, device) -> EnvMetaData:
        """The same metadata with ``device`` as the env device."""
        if device is not None:
            device = torch.device(device)
        device_map = {key: device for key in self.device_map}
        return self._replace(device=device, device_map=device_map)

    def __getitem__(self, index) -> EnvMetaData:
        tensordict = self._tensordict[index]
        return self._replace(
            tensordict=tensordict,
            specs=self._specs[index],
            batch_size=tensordict.batch_size,
        )

    def __repr__(self) -> str:
        return (
            f"EnvMetaData(env_str={self.env_str!r}, batch_size={tuple(self.batch_size)}, "
            f"device={self.device}, batch_locked={self.batch_locked})"
        )


def _off_cpu(device) -> bool:
    return device is not None and torch.device(device).type != "cpu"
