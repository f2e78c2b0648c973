"""Batched simulators: ``num_envs`` copies of one MuJoCo model behind one small interface.

:class:`BatchSim` runs on ``mujoco.batch.Batch`` (MuJoCo >= 3.17): one C call steps every simulation
on a thread pool, without the GIL, and fields are live ``(num_envs, ...)`` arrays. :class:`LoopSim`
is the fallback for older MuJoCo 3.x: one ``MjData`` per env, stepped in a Python loop (correct,
slower). Both give the same numbers: each env is one ``MjData`` stepped with ``mj_step``.

Both expose ``qpos``, ``qvel`` and ``ctrl`` as writable ``(num_envs, ...)`` arrays, ``field(name)``
for derived ``MjData`` fields declared at construction (``fields=``; as ``mj_step`` leaves
them: one substep behind the state),
``step(nstep)``, ``reset(ids, qpos, qvel)`` and ``get_data(i)`` (for rendering).
"""

from __future__ import annotations

from typing import Any

import mujoco
import numpy as np

__all__ = ["BatchSim", "LoopSim"]


class BatchSim:
    """``num_envs`` simulations of ``model`` on ``mujoco.batch.Batch`` with ``num_threads`` threads.

    >>> import mujoco
    >>> model = mujoco.MjModel.from_xml_string(
    ...     "<mujoco><worldbody><body><joint type='slide'/><geom size='.1'/></body></worldbody></mujoco>")
    >>> from torchenv_mujoco import batch_available
    >>> cls = BatchSim if batch_available() else LoopSim  # mujoco.batch: MuJoCo >= 3.17
    >>> sim = cls(model, num_envs=4, num_threads=1, fields=("xpos",))
    >>> sim.step(5); sim.qpos.shape
    (4, 1)
    """

    def __init__(
        self, model: mujoco.MjModel, num_envs: int, num_threads: int = 1, fields: tuple = ()
    ) -> None:
        from mujoco.batch import Batch

        self.model = model
        self.num_envs = num_envs
        self._batch = Batch(model, num_envs, nthread=num_threads)
        self.qpos = self._batch.bind("qpos")
        self.qvel = self._batch.bind("qvel")
        self.ctrl = self._batch.bind("ctrl")
        # derived fields are copied out after each call only once bound: bind them now
        self._fields = {name: _checked(self._batch.bind, name) for name in fields}
        self._stage_none = int(mujoco.mjtStage.mjSTAGE_NONE)

    def field(self, name: str) -> np.ndarray:
        """The derived ``MjData`` field ``name`` of every env, ``(num_envs, ...)`` (live, read-only)."""
        try:
            return self._fields[name]
        except KeyError:
            raise _undeclared(name, self._fields) from None

    def step(self, nstep: int) -> None:
        """``nstep`` calls of ``mj_step`` on every env, with the controls in :attr:`ctrl`."""
        self._batch.step(nstep=nstep)

    def reset(self, ids: np.ndarray | None, qpos: np.ndarray, qvel: np.ndarray) -> None:
        """``mj_resetData`` the envs ``ids`` (None: all), set their state, then ``mj_forward``."""
        self._batch.reset(ids, stage=self._stage_none)
        rows = slice(None) if ids is None else ids
        self.qpos[rows] = qpos
        self.qvel[rows] = qvel
        self._batch.forward(ids)

    def get_data(self, i: int) -> mujoco.MjData:
        """Env ``i`` as an ``MjData`` with its derived fields computed (``mj_forward``)."""
        data = self._batch.get_data(i)
        mujoco.mj_forward(self.model, data)
        return data

    def close(self) -> None:
        self._batch = None


class LoopSim:
    """The fallback for MuJoCo < 3.17: one ``MjData`` per env, stepped one after the other.

    ``num_threads`` is accepted and ignored (documented in ``docs/mujoco.md``).

    >>> import mujoco
    >>> model = mujoco.MjModel.from_xml_string(
    ...     "<mujoco><worldbody><body><joint type='slide'/><geom size='.1'/></body></worldbody></mujoco>")
    >>> sim = LoopSim(model, num_envs=2, fields=("xpos",))
    >>> sim.step(2); sim.field("xpos").shape
    (2, 2, 3)
    """

    def __init__(
        self, model: mujoco.MjModel, num_envs: int, num_threads: int = 1, fields: tuple = ()
    ) -> None:
        self.model = model
        self.num_envs = num_envs
        self._datas = [mujoco.MjData(model) for _ in range(num_envs)]
        self.qpos = np.stack([d.qpos for d in self._datas])
        self.qvel = np.stack([d.qvel for d in self._datas])
        self.ctrl = np.stack([d.ctrl for d in self._datas])
        get = lambda name: np.stack([getattr(d, name) for d in self._datas])  # noqa: E731
        self._fields = {name: _checked(get, name) for name in fields}

    def _pull(self) -> None:
        for i, data in enumerate(self._datas):
            self.qpos[i] = data.qpos
            self.qvel[i] = data.qvel
            for name, array in self._fields.items():
                array[i] = getattr(data, name)

    def field(self, name: str) -> np.ndarray:
        """The derived ``MjData`` field ``name`` of every env, ``(num_envs, ...)``."""
        try:
            return self._fields[name]
        except KeyError:
            raise _undeclared(name, self._fields) from None

    def step(self, nstep: int) -> None:
        """``nstep`` calls of ``mj_step`` on every env, with the controls in :attr:`ctrl`."""
        model = self.model
        for i, data in enumerate(self._datas):
            data.qpos[:] = self.qpos[i]
            data.qvel[:] = self.qvel[i]
            data.ctrl[:] = self.ctrl[i]
            mujoco.mj_step(model, data, nstep=nstep)
        self._pull()

    def reset(self, ids: np.ndarray | None, qpos: np.ndarray, qvel: np.ndarray) -> None:
        """``mj_resetData`` the envs ``ids`` (None: all), set their state, then ``mj_forward``."""
        ids = range(self.num_envs) if ids is None else ids
        for row, i in enumerate(ids):
            data = self._datas[i]
            mujoco.mj_resetData(self.model, data)
            data.qpos[:] = qpos[row]
            data.qvel[:] = qvel[row]
            mujoco.mj_forward(self.model, data)
            self.ctrl[i] = data.ctrl
        self._pull()

    def get_data(self, i: int) -> mujoco.MjData:
        """Env ``i``'s ``MjData`` (a copy)."""
        data = self._datas[i]
        copy = mujoco.MjData(self.model)
        copy.qpos[:], copy.qvel[:] = data.qpos, data.qvel
        mujoco.mj_forward(self.model, copy)
        return copy

    def close(self) -> None:
        self._datas = []


def _checked(bind, name: str) -> np.ndarray:
    try:
        return bind(name)
    except (AttributeError, ValueError) as err:
        raise ValueError(f"fields: {name!r} is not a derived MjData field ({err}).") from None


def _undeclared(name: str, fields: dict) -> KeyError:
    return KeyError(
        f"field {name!r} was not declared: pass fields=({name!r}, ...) so that it is bound before "
        f"the first step (declared: {sorted(fields)})."
    )


def describe(sim: Any) -> str:
    """A short name of the stepping path, for reprs and docs."""
    return "mujoco.batch" if isinstance(sim, BatchSim) else "per-env loop"
