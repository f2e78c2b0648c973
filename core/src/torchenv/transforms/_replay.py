"""Transforms of collected data, for replay buffers: NextObservationDelta, MultiStepTransform,
RandomCropTensorDict."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Literal

import torch
from tensordict import TensorDictBase, unravel_key
from tensordict.utils import NestedKey

from torchenv.transforms._base import Transform, _normalize_keys
from torchenv.transforms._utils import as_tuple

__all__ = ["MultiStepTransform", "NextObservationDelta", "RandomCropTensorDict"]

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


_DEFAULT_DONE_KEYS: tuple[str, ...] = ("done", "truncated", "terminated")


def _n_step_returns(
    data: TensorDictBase,
    *,
    done_key: NestedKey,
    done_keys: Sequence[NestedKey],
    reward_keys: Sequence[NestedKey],
    mask_key: NestedKey | None,
    n_steps: int,
    gamma: float,
) -> TensorDictBase:
    """n-step targets along the last batch dim (time), as TorchRL's ``MultiStep`` computes them.

    For each step ``t`` of a trajectory (trajectories end at a done step or at the end of the
    data), ``m = min(n_steps, steps left in the trajectory from t) - 1``: ``("next", reward)``
    becomes ``sum_k gamma**k * reward[t + k]`` for ``k <= m`` (the original is kept as
    ``("next", "original_reward")``), the other ``"next"`` entries but the dones are taken at
    ``t + m``, and ``steps_to_next_obs = m + 1``, ``gamma = gamma ** (m + 1)`` and
    ``nonterminal = m != 0`` (``False`` where the mask is) are written.
    """
    out = data.clone(False)
    done = out.get(("next", done_key))
    if done.shape != out.shape:
        if done.shape[:-1] == out.shape and done.shape[-1] == 1:
            done = done.squeeze(-1)
        else:
            raise RuntimeError(
                f"MultiStepTransform: the done entry {('next', done_key)!r} must have the "
                f"tensordict's shape {tuple(out.shape)} (with an optional trailing 1), got "
                f"{tuple(done.shape)}"
            )
    done = done.bool()
    length = out.shape[-1]
    time_dim = out.ndim - 1
    steps = torch.arange(length, device=done.device)
    # the last step of each trajectory: the first done at or after t, else the data's end
    last = torch.where(done, steps, torch.full_like(steps, length - 1))
    last = last.flip(-1).cummin(-1).values.flip(-1)
    ahead = (last - steps).clamp_max(n_steps - 1)  # m
    summed = []
    for reward_key in reward_keys:
        reward = out.get(("next", reward_key))
        within = ahead.reshape(*ahead.shape, *((1,) * (reward.ndim - ahead.ndim)))
        total = reward.clone()
        discount = 1.0
        for k in range(1, n_steps):
            discount = discount * gamma
            later = torch.zeros_like(reward)
            later.narrow(time_dim, 0, length - k).copy_(reward.narrow(time_dim, k, length - k))
            total = total + torch.where(within >= k, discount * later, torch.zeros_like(later))
        summed.append(total)
    gathered = out.get("next").exclude(*reward_keys, *done_keys).gather(-1, steps + ahead)
    out.set("steps_to_next_obs", ahead + 1)
    for reward_key, total in zip(reward_keys, summed):
        out.rename_key_(("next", reward_key), ("next", "original_reward"))
        out.set(("next", reward_key), total)
    out.get("next").update(gathered)
    out.set("gamma", gamma ** (ahead + 1))
    nonterminal = ahead != 0
    if mask_key is not None:
        mask = out.get(mask_key, None)
        if mask is not None:
            nonterminal = nonterminal & mask.reshape(nonterminal.shape).bool()
    out.set("nonterminal", nonterminal)
    return out


class MultiStepTransform(Transform):
    """n-step returns for replay buffers: the inverse transform, run on the data written.

    Each batch (time last) is appended to the ``n_steps`` steps kept from the previous one;
    the output is all but the last ``n_steps`` steps (they need the next batch), with
    ``("next", reward)`` the discounted sum of the next ``n_steps`` rewards within the
    trajectory, the other ``"next"`` entries (dones excepted) taken ``n_steps - 1`` steps
    ahead (less at a trajectory's end), and ``steps_to_next_obs``, ``gamma`` (the discount to
    apply to the value of ``"next"``) and ``nonterminal`` added. While fewer than
    ``n_steps + 1`` steps were seen, the inverse returns ``None``. The forward transform is
    the identity. It cannot be used in an env. TorchRL's transform of the same name.

    Args:
        n_steps: the number of steps (>= 1; can be changed later through ``n_steps``).
        gamma: the discount factor.

    Keyword Args:
        reward_keys: the rewards to accumulate (default ``["reward"]``).
        done_key: the done entry ending trajectories (default ``"done"``).
        done_keys: the entries left as they are (default ``["done", "truncated",
            "terminated"]``).
        mask_key: the valid-step mask (default ``"mask"``; ignored when absent).

    Raises:
        ValueError: if ``n_steps`` is not a positive int, or on use inside an env.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> data = TensorDict(
        ...     {"obs": torch.arange(6.0), ("next", "obs"): torch.arange(1.0, 7.0),
        ...      ("next", "reward"): torch.ones(6), ("next", "done"): torch.zeros(6, dtype=torch.bool)},
        ...     batch_size=[6],
        ... )
        >>> out = MultiStepTransform(n_steps=2, gamma=0.5).inv(data)
        >>> out["next", "obs"].tolist(), out["next", "reward"].tolist()
        ([2.0, 3.0, 4.0, 5.0], [1.5, 1.5, 1.5, 1.5])
    """

    ENV_ERR = (
        "The MultiStepTransform is only an inverse transform and can be applied exclusively "
        "to replay buffers."
    )

    def __init__(
        self,
        n_steps: int,
        gamma: float,
        *,
        reward_keys: list[NestedKey] | None = None,
        done_key: NestedKey | None = None,
        done_keys: list[NestedKey] | None = None,
        mask_key: NestedKey | None = None,
    ) -> None:
        super().__init__()
        self.n_steps = n_steps
        self.reward_keys = ["reward"] if reward_keys is None else reward_keys
        self.done_key = "done" if done_key is None else done_key
        self.done_keys = list(_DEFAULT_DONE_KEYS) if done_keys is None else done_keys
        self.mask_key = "mask" if mask_key is None else mask_key
        self.gamma = gamma
        self._buffer: TensorDictBase | None = None
        self._validated = False

    @property
    def n_steps(self) -> int:
        """The look-ahead window; can be changed during training."""
        return self._n_steps

    @n_steps.setter
    def n_steps(self, value: int) -> None:
        if not isinstance(value, int) or value < 1:
            raise ValueError(
                f"MultiStepTransform: n_steps must be a strictly positive integer, got {value!r}"
            )
        self._n_steps = value

    def _inv_call(self, tensordict: TensorDictBase) -> TensorDictBase | None:
        if not self._validated:
            if self.parent is not None:
                raise ValueError(self.ENV_ERR)
            self._validated = True
        n = self.n_steps
        data = tensordict if self._buffer is None else torch.cat([self._buffer, tensordict], -1)
        self._buffer = data[..., -n:].copy()
        if data.shape[-1] <= n:
            return None
        out = _n_step_returns(
            data,
            done_key=self.done_key,
            done_keys=self.done_keys,
            reward_keys=self.reward_keys,
            mask_key=self.mask_key,
            n_steps=n,
            gamma=self.gamma,
        )
        return out[..., :-n]

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        return tensordict

    def __repr__(self) -> str:
        return f"MultiStepTransform(n_steps={self.n_steps}, gamma={self.gamma})"


class RandomCropTensorDict(Transform):
    """Crops a random sub-sequence of ``sub_seq_len`` steps along ``sample_dim`` (time).

    For trajectories sampled from a replay buffer: each element of the other batch dims gets
    its own random start. With ``mask_key`` (a boolean mask of the tensordict's shape, valid
    steps first), the crop stays within each element's valid steps. Not an env transform.
    TorchRL's transform of the same name (same draws: the start is ``randint(len -
    sub_seq_len)``, so the last possible start is never drawn).

    Args:
        sub_seq_len: the length of the crops.
        sample_dim: the dim to crop (default ``-1``; negative dims are preferred).
        mask_key: the valid-step mask, if any.

    Raises:
        RuntimeError: on a tensordict with no batch dims or shorter than ``sub_seq_len`` (or
            whose masked trajectories are).
        ValueError: if the mask does not have the tensordict's shape.

    Examples:
        >>> import torch
        >>> from tensordict import TensorDict
        >>> td = TensorDict(obs=torch.arange(20).view(2, 10), batch_size=[2, 10])
        >>> out = RandomCropTensorDict(4)(td)
        >>> out.shape, bool(((out["obs"][:, 1:] - out["obs"][:, :-1]) == 1).all())
        (torch.Size([2, 4]), True)
    """

    def __init__(
        self, sub_seq_len: int, sample_dim: int = -1, mask_key: NestedKey | None = None
    ) -> None:
        if sample_dim > 0:
            warnings.warn(
                "RandomCropTensorDict: a positive sample_dim may misbehave on tensordicts of "
                "varying batch dims; time is the last dim by convention, prefer -1.",
                stacklevel=2,
            )
        super().__init__()
        self.sub_seq_len = sub_seq_len
        self.sample_dim = sample_dim
        self.mask_key = mask_key

    def forward(self, tensordict: TensorDictBase) -> TensorDictBase:
        shape, dim, length = tensordict.shape, self.sample_dim, self.sub_seq_len
        if not len(shape):
            raise RuntimeError("RandomCropTensorDict: cannot crop a tensordict with no batch dims.")
        if shape[dim] < length:
            raise RuntimeError(
                f"RandomCropTensorDict: cannot crop {length} steps along dim {dim} of a "
                f"tensordict of shape {tuple(shape)}; lower sub_seq_len or sample longer "
                "sequences."
            )
        idx_shape = list(shape)
        idx_shape[dim] = 1
        device = tensordict.device or torch.device("cpu")
        mask_key = self.mask_key
        mask = None if mask_key is None else tensordict.get(mask_key, None)
        if mask is None:
            span = shape[dim] - length
            start = (
                torch.randint(span, idx_shape, device=device)
                if span > 0
                else torch.zeros(idx_shape, dtype=torch.long, device=device)
            )
        else:
            if mask.shape != shape:
                raise ValueError(
                    f"RandomCropTensorDict: the mask {mask_key!r} must have the tensordict's "
                    f"shape {tuple(shape)}, got {tuple(mask.shape)}."
                )
            lengths = mask.cumsum(dim).max(dim, True)[0]
            if (lengths < length).any():
                raise RuntimeError(
                    f"RandomCropTensorDict: cannot crop {length} steps: the shortest masked "
                    f"trajectory has {int(lengths.min())}."
                )
            start = (torch.rand(idx_shape, device=device) * (lengths - length)).to(torch.long)
        offsets = torch.arange(length, device=start.device)
        view = [1] * tensordict.ndim
        view[dim] = length
        return tensordict.gather(dim=dim, index=start + offsets.view(view))

    def _reset(
        self, tensordict: TensorDictBase, tensordict_reset: TensorDictBase
    ) -> TensorDictBase:
        return self.forward(tensordict_reset)

    def __repr__(self) -> str:
        return (
            f"RandomCropTensorDict(sub_seq_len={self.sub_seq_len}, "
            f"sample_dim={self.sample_dim}, mask_key={self.mask_key!r})"
        )
