"""Transforms of collected data, for replay buffers: NextObservationDelta."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import torch
from tensordict import TensorDictBase, unravel_key
from tensordict.utils import NestedKey

from torchenv.transforms._base import Transform, _normalize_keys
from torchenv.transforms._utils import as_tuple

__all__ = ["NextObservationDelta"]

_INT_AND_BOOL = (torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64, torch.bool)


class NextObservationDelta(Transform):
    """Stores ``("next", obs)`` as a low-precision delta ``("next", "delta", obs)``.

    On the env side, each step writes ``(next_obs - obs).to(delta_dtype)`` under
    ``("next", "delta", key)``; once ``step_mdp`` has moved the full ``("next", key)`` to the
    root of the next input, ``step_and_maybe_reset`` and ``rollout`` drop it from the step
    output, so a rollout (or a collector's batch) holds the delta only. On the replay-buffer
    side, calling the transform rebuilds ``("next", key) = data[key] + delta`` (and drops the
    delta unless ``drop_delta=False``). The compression is lossy, to ``delta_dtype``'s
    precision. The transform cannot live inside a ``SerialEnv``/``ParallelEnv`` worker: wrap
    the batched env instead. TorchRL's transform of the same name.

    Args:
        in_keys: the observations to compress. By default, every floating-point observation
            of the parent env whose dtype is not in ``excluded_dtypes`` (read lazily); on data
            outside of an env they must be given.

    Keyword Args:
        delta_dtype: the floating dtype of the stored delta (default ``torch.float16``).
        restore_dtype: the dtype of the rebuilt ``("next", key)``, or ``"root"`` (default) for
            the dtype of the root entry.
        drop_delta: remove the delta once it is used (default ``True``).
        excluded_dtypes: dtypes skipped when ``in_keys`` are inferred (integers and bool).

    Raises:
        ValueError: if ``delta_dtype`` is not floating or ``restore_dtype`` is neither a
            floating dtype nor ``"root"``.

    Examples:
        >>> from torchenv.envs import PendulumEnv
        >>> from torchenv.transforms import TransformedEnv
        >>> env = TransformedEnv(PendulumEnv(), NextObservationDelta(["th", "thdot"]))
        >>> rollout = env.rollout(3, break_when_any_done=False)
        >>> rollout["next", "delta", "th"].dtype, ("next", "th") in rollout.keys(True)
        (torch.float16, False)
        >>> NextObservationDelta(["th", "thdot"])(rollout)["next", "th"].dtype
        torch.float32
    """

    _cache_keys = ("_inferred_in_keys",)

    def __init__(
        self,
        in_keys: Sequence[NestedKey] | None = None,
        *,
        delta_dtype: torch.dtype = torch.float16,
        restore_dtype: torch.dtype | Literal["root"] = "root",
        drop_delta: bool = True,
        excluded_dtypes: tuple[torch.dtype, ...] = _INT_AND_BOOL,
    ) -> None:
        if not delta_dtype.is_floating_point:
            raise ValueError(
                f"NextObservationDelta: delta_dtype must be a floating-point dtype, "
                f"got {delta_dtype}."
            )
        if restore_dtype != "root" and not (
            isinstance(restore_dtype, torch.dtype) and restore_dtype.is_floating_point
        ):
            raise ValueError(
                "NextObservationDelta: restore_dtype must be a floating-point dtype or 'root', "
                f"got {restore_dtype!r}."
            )
        self.delta_dtype = delta_dtype
        self.restore_dtype = restore_dtype
        self.drop_delta = drop_delta
        self.excluded_dtypes = tuple(excluded_dtypes)
        super().__init__(in_keys=in_keys, out_keys=in_keys)

    # in_keys are read from the parent's observation spec when not given (None outside an env)
    @property
    def in_keys(self) -> list[NestedKey] | None:
        d = self.__dict__
        keys = d.get("_in_keys")
        if keys is not None:
            return keys
        keys = d.get("_inferred_in_keys")
        if keys is None:
            parent = self.parent
            if parent is None:
                return None
            keys = d["_inferred_in_keys"] = [
                unravel_key(key)
                for key, spec in parent.observation_spec.items(True, True)
                if spec.dtype is not None
                and spec.dtype not in self.excluded_dtypes
                and spec.dtype.is_floating_point
            ]
        return keys

    @in_keys.setter
    def in_keys(self, value: Sequence[NestedKey] | NestedKey | None) -> None:
        self.__dict__["_in_keys"] = _normalize_keys(value)
        self.__dict__.pop("_pairs", None)

    @property
    def out_keys(self) -> list[NestedKey] | None:
        keys = self.__dict__.get("_out_keys")
        if keys is None:
            in_keys = self.in_keys
            return None if in_keys is None else list(in_keys)
        return keys

    @out_keys.setter
    def out_keys(self, value: Sequence[NestedKey] | NestedKey | None) -> None:
        self.__dict__["_out_keys"] = _normalize_keys(value)
        self.__dict__.pop("_pairs", None)

    @property
    def _is_step_noop(self) -> bool:
        return False

    # ------------------------------------------------------------------ env side
    def _call(self, next_tensordict: TensorDictBase) -> TensorDictBase:
        return next_tensordict

    def _reset(
        self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase
    ) -> TensorDictBase:
        return tensordict_reset

    def _step(self, tensordict: TensorDictBase, next_tensordict: TensorDictBase) -> TensorDictBase:
        for key in self.in_keys or ():
            obs = tensordict.get(key, None)
            next_obs = next_tensordict.get(key, None)
            if obs is None or next_obs is None:
                continue
            # subtract in the source precision, then cast once
            next_tensordict.set(("delta", *as_tuple(key)), (next_obs - obs).to(self.delta_dtype))
        return next_tensordict

    def _post_step_mdp_hooks(
        self, tensordict: TensorDictBase, tensordict_: TensorDictBase
    ) -> tuple[TensorDictBase, TensorDictBase]:
        next_td = tensordict.get("next", None)
        if next_td is not None:
            for key in self.in_keys or ():
                next_td.pop(key, None)
        return tensordict, tensordict_

    def transform_fake_tensordict(self, fake_tensordict: TensorDictBase) -> TensorDictBase:
        next_td = fake_tensordict.get("next", None)
        if next_td is None:
            return fake_tensordict
        for key in self.in_keys or ():
            leaf = next_td.pop(key, None)
            if leaf is not None:
                next_td.set(("delta", *as_tuple(key)), leaf.to(self.delta_dtype))
        return fake_tensordict

    def _check_batched_worker_compat(self) -> None:
        raise RuntimeError(
            "NextObservationDelta cannot live inside a SerialEnv/ParallelEnv worker: the "
            "batched env's step_and_maybe_reset does not run its workers' post-step-mdp hooks, "
            "so ('next', obs) would not be dropped. Put the transform outside the batched env, "
            "e.g. TransformedEnv(ParallelEnv(n, make_env), NextObservationDelta())."
        )

    # ------------------------------------------------------------- replay side
    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        """Rebuilds ``("next", key)`` from the root entry and the stored delta.

        Keys for which the root entry or the delta is missing are skipped; outside of an env,
        with no ``in_keys`` given, nothing is done.
        """
        for key in self.in_keys or ():
            key = as_tuple(key)
            delta_key = ("next", "delta", *key)
            obs = tensordict.get(key, None)
            delta = tensordict.get(delta_key, None)
            if obs is None or delta is None:
                continue
            dtype = obs.dtype if self.restore_dtype == "root" else self.restore_dtype
            tensordict.set(("next", *key), obs.to(dtype) + delta.to(dtype))
            if self.drop_delta:
                tensordict.pop(delta_key)
        return tensordict

    def __repr__(self) -> str:
        return (
            f"NextObservationDelta(in_keys={self.__dict__.get('_in_keys')}, "
            f"delta_dtype={self.delta_dtype})"
        )
