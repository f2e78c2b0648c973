"""Data methods of :class:`~torchenv.specs.Composite`: generation (rand/zero/one), checks, conversions.

``rand``/``zero`` build the TensorDict once, without validation (entries are built to fit); ``is_in``
reads a plain TensorDict's storage directly. Both are on the env hot path.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import torch
from tensordict import LazyStackedTensorDict, TensorDict, TensorDictBase

from torchenv.specs._errors import SpecKeyError, SpecValueError
from torchenv.specs._utils import batch_shape

if TYPE_CHECKING:
    from torchenv.specs._base import TensorSpec


class CompositeDataOps:
    """Mixin of Composite: data generation, membership checks and conversions."""

    def _build(
        self, fn_name: str, shape: Any, generator: torch.Generator | None = None
    ) -> TensorDictBase:
        bshape = batch_shape(shape)
        data = {}
        kwargs = {} if generator is None else {"generator": generator}
        for key, spec in self._specs.items():
            if spec is not None:
                data[key] = getattr(spec, fn_name)(bshape, **kwargs)
        out = TensorDict._new_unsafe(
            data, batch_size=torch.Size(bshape + self._sshape), device=self._device, nested=False
        )
        names = self._names
        if names is not None:  # the data's dims carry the spec's names (extra leading: unnamed)
            out.names = [*([None] * len(bshape)), *names]
        return out

    def rand(
        self, shape: Sequence[int] | None = None, *, generator: torch.Generator | None = None
    ) -> TensorDictBase:
        """A TensorDict of random values (batch size ``(*shape, *self.shape)``), drawn from
        ``generator`` (torch's global generator when ``None``)."""
        return self._build("rand", shape, generator)

    def zero(self, shape: Sequence[int] | None = None) -> TensorDictBase:
        """A TensorDict of zeros (batch size ``(*shape, *self.shape)``)."""
        return self._build("zero", shape)

    def one(self, shape: Sequence[int] | None = None) -> TensorDictBase:
        """A TensorDict of ones (batch size ``(*shape, *self.shape)``)."""
        return self._build("one", shape)

    def is_in(self, val: Any) -> bool:
        """Whether every entry of the spec is present in ``val`` and in its spec (extra keys are ignored)."""
        if val is None:
            return False
        if type(val) is TensorDict:  # fast path: read the TensorDict's own storage
            get = val._tensordict.get
        elif isinstance(val, LazyStackedTensorDict) and val.stack_dim < val.batch_dims - self._ndim:
            # stacked along an extra leading dim (e.g. a rollout of dynamic shapes): check each part
            return all(self.is_in(td) for td in val.tensordicts)
        else:

            def get(key: str) -> Any:
                return val.get(key, None)

        for key, spec in self._specs.items():
            if spec is None:
                continue
            item = get(key)
            if item is None or not spec.is_in(item):
                return False
        return True

    def _first_mismatch(self, val: Any, prefix: tuple = ()) -> tuple[Any, TensorSpec, Any] | None:
        for key, spec in self._specs.items():
            if spec is None:
                continue
            full = (*prefix, key)
            item = val.get(key, None) if hasattr(val, "get") else None
            if item is None:
                return full, spec, None
            if isinstance(spec, CompositeDataOps):
                sub = spec._first_mismatch(item, full)
                if sub is not None:
                    return sub
            elif not spec.is_in(item):
                return full, spec, item
        return None

    def assert_is_in(self, value: Any, key: Any = None) -> None:
        """Raises :class:`SpecValueError` naming the first key whose value is missing or not in its spec."""
        found = self._first_mismatch(value)
        if found is None:
            return
        key, spec, item = found
        key = key[0] if len(key) == 1 else key
        if item is None:
            raise SpecValueError(
                f"key {key!r} is missing from the value; expected by {spec._short()}"
            )
        raise SpecValueError(
            f"value at key {key!r} is not in {spec._short()}: {spec._explain(item)}"
        )

    def _explain(self, val: Any) -> str:
        found = self._first_mismatch(val)
        if found is None:
            return "no mismatch"
        key, spec, item = found
        if item is None:
            return f"key {key!r} is missing"
        return f"key {key!r}: {spec._explain(item)}"

    def _short(self) -> str:
        return f"Composite(keys={list(self._specs)}, shape={list(self.shape)})"

    def type_check(self, value: Any, selected_keys: Any = None) -> None:  # type: ignore[override]
        """Checks the dtype of every (or each selected) entry of ``value``."""
        if isinstance(value, torch.Tensor) and isinstance(selected_keys, (str, tuple)):
            self[selected_keys].type_check(value, selected_keys)
            return
        keys = self._specs.keys() if selected_keys is None else selected_keys
        for key in keys:
            spec = self[key]
            if spec is not None and key in value:
                spec.type_check(value.get(key), key)

    def project(self, val: TensorDictBase) -> TensorDictBase:
        """Projects every entry of ``val`` into its spec (in place on ``val``, which is returned)."""
        for key, spec in self._specs.items():
            if spec is None:
                continue
            item = val.get(key, None)
            if item is None:
                continue
            new = spec.project(item)
            if new is not item:
                val.set(key, new)
        return val

    def _project(self, val: TensorDictBase) -> TensorDictBase:
        return self.project(val)

    def encode(self, vals: Mapping[str, Any], *, ignore_device: bool = False) -> TensorDictBase:
        """Builds a TensorDict from a (nested) mapping of numpy arrays / numbers / tensors."""
        out = {}
        for key, item in vals.items():
            if key not in self._specs or self._specs[key] is None:
                raise SpecKeyError(f"cannot encode key {key!r}: the Composite has no spec for it")
            out[key] = self._specs[key].encode(item, ignore_device=ignore_device)
        return TensorDict._new_unsafe(
            out, batch_size=self.shape, device=None if ignore_device else self._device, nested=False
        )

    def to_numpy(self, val: TensorDictBase, safe: bool | None = None) -> dict:
        """A nested dict of numpy arrays, one per entry of the spec."""
        if safe:
            self.assert_is_in(val)
        return {
            key: spec.to_numpy(val.get(key))
            for key, spec in self._specs.items()
            if spec is not None
        }

    def zeros_update(self, val: TensorDictBase) -> TensorDictBase:
        """Writes a zero value of every entry into ``val`` (in place; returns it)."""
        return val.update(self.zero())

    def ones_update(self, val: TensorDictBase) -> TensorDictBase:
        """Writes a one value of every entry into ``val`` (in place; returns it)."""
        return val.update(self.one())

    def rand_update(self, val: TensorDictBase) -> TensorDictBase:
        """Writes a random value of every entry into ``val`` (in place; returns it).

        >>> import torch
        >>> from tensordict import TensorDict
        >>> from torchenv.specs import Composite, Unbounded
        >>> data = Composite(a=Unbounded(2)).rand_update(TensorDict(b=torch.ones(1)))
        >>> sorted(data.keys())
        ['a', 'b']
        """
        return val.update(self.rand())

    def zero_like(self) -> TensorDictBase:
        return self.zero()

    def enumerate(self, use_mask: bool = False) -> TensorDictBase:
        """Every combination of the leaves' values, stacked on a new leading dim.

        The first key varies slowest. The result has batch size ``(cardinality(), *self.shape)``.

        Args:
            use_mask: passed on to the leaves (masked categories are left out).

        Returns:
            A TensorDict holding each combination once.

        Raises:
            NotImplementedError: if a leaf cannot be enumerated (continuous, non-tensor).

        >>> from torchenv.specs import Categorical, Composite, OneHot
        >>> td = Composite(a=Categorical(3), b=OneHot(2)).enumerate()
        >>> td.batch_size, td["a"].tolist()
        (torch.Size([6]), [0, 0, 1, 1, 2, 2])
        """
        keys, rows = [], []
        for key, spec in self.items(True, True):
            if spec is None:
                continue
            values = spec.enumerate(use_mask=use_mask)
            keys.append(key)
            rows.append(torch.stack(values) if isinstance(values, list) else values)
        counts = [len(r) for r in rows]
        total = 1
        for n in counts:
            total *= n
        out = TensorDict({}, batch_size=torch.Size((total, *self._sshape)), device=self._device)
        combo = torch.arange(total, device=self._device)
        stride = total
        for key, values, n in zip(keys, rows, counts):
            stride //= n
            out.set(key, values[(combo // stride) % n])
        return out
