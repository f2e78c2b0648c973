"""gymnasium vector envs as natively batched torchenv envs (``batch_size=[num_envs]``).

torchenv's contract is that a step returns the true next observation, and that the caller resets
finished envs with a ``"_reset"`` mask. gymnasium vector envs reset finished envs themselves, with
a convention that depends on the version and the env:

* **disabled** (gymnasium >= 1.1, the default for ``"sync"``/``"async"`` here): nothing is reset
  automatically; a partial reset is ``env.reset(options={"reset_mask": mask})``. Exact. For
  gymnasium's own ``SyncVectorEnv`` the adapter resets the masked sub-envs itself, as that call
  would, without its loop over every sub-env and its copy of every observation.
* **same-step** (gymnasium 0.29, or envs that declare it): the step that ends an episode already
  returns the first observation of the next one, and the last one in ``info["final_obs"]``
  (``"final_observation"`` before 1.0). The adapter swaps the last observation back in and keeps the
  new one for the partial reset that follows. Exact.
* **next-step** (gymnasium 1.0, and vector-entry-point envs such as CartPole's): the step *after*
  the end resets the env, ignoring its action, and returns the first observation with reward 0 and
  done False. Sync vector envs expose their sub-envs, so the adapter resets those directly and
  clears gymnasium's pending flag: exact. Other envs (vector entry points, async) give that
  observation only with the next step, so a partial reset returns the last observation for the
  envs that ended and the next step carries gymnasium's reset transition (reward 0): trajectories
  are gymnasium's own. A full reset is always exact.

Sub-envs that are still running can be reset alone in sync vector envs (and with disabled
autoreset); other vector envs raise ``NotImplementedError`` for that.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from torchenv_gym._versions import (
    AUTORESET_DISABLED,
    AUTORESET_NEXT_STEP,
    AUTORESET_SAME_STEP,
)

if TYPE_CHECKING:  # pragma: no cover
    from torchenv_gym._env import GymWrapper

__all__ = ["VectorAdapter", "is_vector_env"]


def is_vector_env(env: Any) -> bool:
    """Whether ``env`` is a gym/gymnasium vector env (or a wrapper of one).

    Decided from the class hierarchy: asking a single env's wrappers for ``num_envs`` warns in
    gymnasium 0.29.
    """
    return any(klass.__name__ == "VectorEnv" for klass in type(env).__mro__)


def _where(mask: np.ndarray, new: Any, old: Any) -> Any:
    """Per-env choice between two batched observations (arrays or dicts of arrays)."""
    if isinstance(new, dict):
        return {k: _where(mask, new[k], old[k]) for k in new}
    if isinstance(new, tuple):
        return tuple(_where(mask, n, o) for n, o in zip(new, old))
    m = mask.reshape(mask.shape + (1,) * (np.ndim(new) - 1))
    return np.where(m, new, old)


def _put_rows(obs: Any, rows: dict[int, Any]) -> Any:
    """Copy of the batched ``obs`` with row ``i`` replaced by ``rows[i]`` (a single-env obs)."""
    if isinstance(obs, dict):
        return {k: _put_rows(obs[k], {i: r[k] for i, r in rows.items()}) for k in obs}
    if isinstance(obs, tuple):
        return tuple(_put_rows(o, {i: r[j] for i, r in rows.items()}) for j, o in enumerate(obs))
    out = np.array(obs, copy=True)
    for i, row in rows.items():
        out[i] = row
    return out


class VectorAdapter:
    """The reset and step of a :class:`~torchenv_gym.GymWrapper` around a vector env."""

    def __init__(self, wrapper: GymWrapper) -> None:
        self.wrapper = wrapper
        self.env = wrapper._env
        self.api = wrapper._api
        self.num_envs = int(self.env.num_envs)
        self.mode = self.api.autoreset_mode(self.env)
        self.final_key = self.api.final_obs_key
        self.last_obs: Any = None  # raw observations last returned
        self.next_obs: Any = None  # same-step: first observations of the episodes that ended
        self.ended = np.zeros(self.num_envs, dtype=bool)
        shape = (self.num_envs, 1)
        self._shape = shape
        # gymnasium's own SyncVectorEnv (not a wrapper of it): its sub-envs can be reset directly
        self.sync = type(self.env).__name__ == "SyncVectorEnv" and hasattr(self.env, "envs")

    # ------------------------------------------------------------------ reset
    def reset(self, out: dict, mask: np.ndarray | None, seed: Any, options: Any) -> Any:
        """``GymWrapper._array_reset``: resets the sub-envs of ``mask`` (all if ``None``) and
        writes their first observations into the rows of ``out``; returns the info."""
        if mask is not None and self.last_obs is None:
            mask = None  # nothing to keep yet: a full reset
        obs, info = self._reset_obs(mask, seed, options)
        if mask is None:
            out.update(self.wrapper._obs_arrays(obs))
        else:
            for key, value in self.wrapper._obs_arrays(obs).items():
                out[key][mask] = np.asarray(value)[mask]
        return info

    def _reset_obs(self, mask: np.ndarray | None, seed: Any, options: Any) -> tuple[Any, Any]:
        """Reset all sub-envs (``mask`` is ``None``) or those in ``mask``; returns the batched
        observations (the rows not reset keep their last observation) and the info."""
        w = self.wrapper
        info: Any = {}
        if mask is None:
            obs, info = w._api.reset_env(self.env, seed, options)
            self.ended = np.zeros(self.num_envs, dtype=bool)
            self.next_obs = None
        elif not mask.any():
            obs = self.last_obs
        elif self.mode == AUTORESET_DISABLED:
            if self.sync and seed is None and not options and not w.info_dict_reader:
                # what SyncVectorEnv.reset(options={"reset_mask": mask}) does, but in O(resets)
                # rather than a loop over every sub-env, a concatenation and a deep copy
                obs = self._reset_sub_envs(self.last_obs, mask)
            else:
                options = dict(options or {}) | {"reset_mask": mask}
                obs, info = w._api.reset_env(self.env, seed, options)
            self.ended = self.ended & ~mask  # never in place: shared with outputs
        else:
            obs, todo = self.last_obs, mask
            if self.mode == AUTORESET_SAME_STEP and self.next_obs is not None:
                # gymnasium already reset the envs that ended: use their first observation
                obs = _where(mask & self.ended, self.next_obs, obs)
                todo = mask & ~self.ended
                if todo.any():
                    obs = self._reset_sub_envs(obs, todo)
            else:  # mask.any() was checked above
                obs = self._reset_sub_envs(obs, todo)
            self.ended = self.ended & ~mask  # never in place: shared with outputs
        self.last_obs = obs
        return obs, info

    def _reset_sub_envs(self, obs: Any, todo: np.ndarray) -> Any:
        """Reset the sub-envs in ``todo`` one by one (sync vector envs expose them as ``.envs``)."""
        subs = getattr(self.env, "envs", None)
        if subs is None:
            if self.mode == AUTORESET_NEXT_STEP and not (todo & ~self.ended).any():
                return obs  # gymnasium resets them during the next step (see the module docs)
            raise NotImplementedError(
                f"{type(self.env).__name__} cannot reset single sub-envs that are still running "
                f"(sub-envs {np.flatnonzero(todo & ~self.ended).tolist()}; autoreset "
                f"{self.mode}). Reset all envs, or use vectorization_mode='sync'."
            )
        env = self.env
        pending = getattr(env, "_autoreset_envs", None)  # gymnasium 1.x next-step flags
        rows = {}
        for i in np.flatnonzero(todo).tolist():
            rows[i], _ = self.api.reset_env(subs[i], None, None)
            if pending is not None:
                pending[i] = False
        if self.sync:  # keep SyncVectorEnv's own records as its masked reset does
            for name in ("_terminations", "_truncations"):
                flags = getattr(env, name, None)
                if isinstance(flags, np.ndarray):
                    flags[todo] = False
            env_obs = getattr(env, "_env_obs", None)
            if isinstance(env_obs, list):
                for i, row in rows.items():
                    env_obs[i] = row
        return _put_rows(obs, rows)

    # ------------------------------------------------------------------ step
    def _step_raw(self, action: Any) -> tuple:
        """The vector env's step, with the true last observations of the envs that ended."""
        obs, reward, terminated, truncated, info = self.env.step(action)
        terminated = np.asarray(terminated, dtype=bool)
        truncated = np.asarray(truncated, dtype=bool)
        done = terminated | truncated
        if self.mode == AUTORESET_SAME_STEP:
            final = info.get(self.final_key) if info else None
            if final is not None:
                index = np.flatnonzero(info.get("_" + self.final_key, done)).tolist()
                self.next_obs = obs
                obs = _put_rows(obs, {i: final[i] for i in index})
        self.ended = done
        self.last_obs = obs
        return obs, reward, terminated, truncated, done, info

    def step(self, action: Any, out: dict) -> Any:
        """``GymWrapper._array_step``: one step of every sub-env; returns the info."""
        w = self.wrapper
        obs, reward, terminated, truncated, done, info = self._step_raw(w._action_of(action))
        out.update(w._obs_arrays(obs))
        n = self._shape
        out["reward"] = np.asarray(reward, dtype=np.float32).reshape(n)
        out["done"] = done.reshape(n)
        out["terminated"] = terminated.reshape(n)
        out["truncated"] = truncated.reshape(n)
        return info


__all__ += ["AUTORESET_DISABLED", "AUTORESET_NEXT_STEP", "AUTORESET_SAME_STEP"]
