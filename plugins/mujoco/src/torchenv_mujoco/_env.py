"""``MujocoEnv``: ``num_envs`` MuJoCo simulations of one model as one batched torchenv env."""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from torchenv.envs import ArrayEnv
from torchenv.specs import Bounded, Composite, Unbounded
from torchenv_mujoco._assets import asset_path, load_spec, with_contact_forces
from torchenv_mujoco._tasks import TASKS, Task
from torchenv_mujoco._versions import make_sim

__all__ = ["MujocoEnv"]


class _FunctionTask(Task):
    """A task made of user functions (see :class:`MujocoEnv`)."""

    def __init__(self, observation_fn, reward_fn, termination_fn, noise, fields) -> None:
        self.fields = tuple(fields)
        self._obs, self._reward, self._term = observation_fn, reward_fn, termination_fn
        self._noise = noise
        self.max_episode_steps = None

    def obs_size(self, model):
        return -1 if self._obs is not None else model.nq + model.nv

    def reset_noise(self, rng, n, model, init_qpos, init_qvel):
        s = self._noise
        qpos = init_qpos + rng.uniform(-s, s, (n, model.nq)) if s else np.tile(init_qpos, (n, 1))
        qvel = init_qvel + rng.uniform(-s, s, (n, model.nv)) if s else np.tile(init_qvel, (n, 1))
        return qpos, qvel

    def observe(self, sim, reset):
        if self._obs is None:
            return np.concatenate([sim.qpos, sim.qvel], axis=1)
        return self._obs(sim)

    def before_step(self, sim):
        return sim.qpos.copy()

    def reward(self, sim, action, before, dt):
        if self._reward is None:
            return np.zeros(sim.qpos.shape[0])
        return self._reward(sim, action, before)

    def terminated(self, sim, obs):
        return None if self._term is None else self._term(sim, obs)


def _generators(seed: int | None, n: int) -> list[np.random.Generator]:
    """Sub-env ``i`` draws from ``default_rng(seed + i)`` (sub-env 0 as gymnasium's env seeded
    ``seed``); unseeded, from fresh entropy."""
    if seed is None:
        return [np.random.default_rng(s) for s in np.random.SeedSequence().spawn(n)]
    return [np.random.default_rng(seed + i) for i in range(n)]


class MujocoEnv(ArrayEnv):
    """``num_envs`` simulations of one MuJoCo model, stepped together on ``num_threads`` threads.

    With MuJoCo >= 3.17 the simulations run in ``mujoco.batch.Batch`` (one C call per step for
    the whole batch, without the GIL); with older 3.x in a per-env loop (same numbers, slower).
    The batch size is ``(num_envs,)``; a ``"_reset"`` mask resets only its rows.

    Args:
        model: the name of a standard task (``"HalfCheetah"``, ``"Hopper"``, ``"Walker2d"``,
            ``"Ant"``, ``"Humanoid"``, ``"InvertedPendulum"``, ``"Reacher"``: gymnasium's ``-v5``
            envs, batched), a path to an MJCF file, or an MJCF XML string.
        num_envs: number of simulations.
        frame_skip: ``mj_step`` calls per env step (default: the task's, else 1).
        num_threads: threads that step the batch (MuJoCo >= 3.17).
        observation_fn: ``f(sim) -> (num_envs, d)`` float array; ``sim`` has ``qpos``, ``qvel``,
            ``ctrl``, ``model`` and ``field(name)`` (a derived ``MjData`` field named in
            ``fields``, ``(num_envs, ...)``, as ``mj_step`` leaves it). Default: ``concat(qpos, qvel)``. Only for a model, not for a task.
        reward_fn: ``f(sim, action, qpos_before) -> (num_envs,)``; default 0.
        termination_fn: ``f(sim, obs) -> (num_envs,)`` bool; default never.
        reset_noise_scale: uniform noise added to the initial ``qpos``/``qvel`` (models only).
        fields: derived ``MjData`` fields (``"xpos"``, ``"sensordata"``, ...) the functions read
            through ``sim.field(name)`` (models only; bound once, before the first step).
        max_episode_steps: truncation (``"truncated"``) after this many steps; default: the task's
            (1000, Reacher 50), none for a model.

    Keyword Args:
        device (torch.device): as for any env.
        batch_size (torch.Size): as for any env; must be ``(num_envs,)`` if given.

    >>> env = MujocoEnv("HalfCheetah", num_envs=4, num_threads=1)
    >>> env.rollout(3)["next", "observation"].shape
    torch.Size([4, 3, 17])
    >>> xml = "<mujoco><worldbody><body><joint name='x' type='slide'/><geom size='.1'/></body>"
    >>> xml += "</worldbody><actuator><motor joint='x'/></actuator></mujoco>"
    >>> env = MujocoEnv(xml, num_envs=2, reward_fn=lambda sim, a, before: -sim.qpos[:, 0] ** 2)
    >>> env.rand_step(env.reset())["next", "reward"].shape
    torch.Size([2, 1])
    """

    def __init__(
        self,
        model: str | os.PathLike,
        num_envs: int = 1,
        *,
        frame_skip: int | None = None,
        num_threads: int = 1,
        observation_fn: Callable[[Any], np.ndarray] | None = None,
        reward_fn: Callable[[Any, np.ndarray, np.ndarray], np.ndarray] | None = None,
        termination_fn: Callable[[Any, np.ndarray], np.ndarray] | None = None,
        reset_noise_scale: float = 0.0,
        fields: tuple[str, ...] = (),
        max_episode_steps: int | None = None,
        device: Any = None,
        batch_size: Any = None,
        **kwargs: Any,
    ) -> None:
        if isinstance(num_envs, bool) or not isinstance(num_envs, int) or num_envs < 1:
            raise ValueError(f"num_envs: expected a positive int, got {num_envs!r}.")
        if not isinstance(num_threads, int) or num_threads < 1:
            raise ValueError(f"num_threads: expected a positive int, got {num_threads!r}.")
        if batch_size is not None and tuple(batch_size) != (num_envs,):
            raise ValueError(
                f"batch_size: expected ({num_envs},) (num_envs) or None, got {tuple(batch_size)}."
            )
        task_name = str(model) if str(model) in TASKS else None
        if task_name is not None:
            if observation_fn or reward_fn or termination_fn or reset_noise_scale or fields:
                raise ValueError(
                    f"observation_fn/reward_fn/termination_fn/reset_noise_scale/fields apply to models, "
                    f"not to the task {task_name!r}."
                )
            task = TASKS[task_name]()
            spec = load_spec(asset_path(task.xml))
        else:
            task = _FunctionTask(
                observation_fn, reward_fn, termination_fn, reset_noise_scale, fields
            )
            spec = load_spec(model)
        if max_episode_steps is not None:
            if max_episode_steps < 1:
                raise ValueError(
                    f"max_episode_steps: expected >= 1 or None, got {max_episode_steps}."
                )
            task.max_episode_steps = max_episode_steps
        frame_skip = task.frame_skip if frame_skip is None else frame_skip
        if not isinstance(frame_skip, int) or frame_skip < 1:
            raise ValueError(f"frame_skip: expected a positive int, got {frame_skip!r}.")
        if task.contact_forces:
            spec = with_contact_forces(spec)
        super().__init__(device=device, batch_size=(num_envs,), **kwargs)
        with warnings.catch_warnings():  # gymnasium's humanoid.xml: a deprecated attribute
            warnings.filterwarnings("ignore", message=".*settotalmass.*")
            mj_model = spec.compile()
        d = self.__dict__
        d["task_name"] = task_name
        d["_task"], d["num_envs"], d["frame_skip"] = task, num_envs, frame_skip
        d["num_threads"] = num_threads
        d["mj_model"] = mj_model
        d["dt"] = mj_model.opt.timestep * frame_skip
        d["_sim"] = make_sim(mj_model, num_envs, num_threads, task.fields)
        d["_init_qpos"] = mj_model.qpos0.copy()
        d["_init_qvel"] = np.zeros(mj_model.nv)
        d["_rngs"] = _generators(None, num_envs)
        d["_steps"] = np.zeros(num_envs, dtype=np.int64)
        d["_renderer"] = None
        self._make_specs(mj_model)

    def _make_specs(self, mj_model: Any) -> None:
        n = self.num_envs
        size = self._task.obs_size(mj_model)
        if size < 0:  # user observation function: ask it once for its width
            self._reset_sim(None)
            size = np.asarray(self._task.observe(self._sim, True)).shape[1]
        self.observation_spec = Composite(
            observation=Unbounded((n, size), dtype=torch.float64, device=self.device),
            shape=(n,),
            device=self.device,
        )
        if mj_model.nu:
            ranges = mj_model.actuator_ctrlrange.astype(np.float32)
            limited = mj_model.actuator_ctrllimited.astype(bool)
            low = np.where(limited, ranges[:, 0], -np.inf).astype(np.float32)
            high = np.where(limited, ranges[:, 1], np.inf).astype(np.float32)
            self.action_spec = Bounded(
                torch.from_numpy(np.broadcast_to(low, (n, mj_model.nu)).copy()),
                torch.from_numpy(np.broadcast_to(high, (n, mj_model.nu)).copy()),
                (n, mj_model.nu),
                dtype=torch.float32,
                device=self.device,
            )
        else:
            raise ValueError("model: the MJCF model has no actuator (nu == 0): nothing to act on.")
        self.reward_spec = Unbounded((n, 1), dtype=torch.float32, device=self.device)

    # ------------------------------------------------------------------ simulator side
    @property
    def sim(self) -> Any:
        """The batched simulator (``qpos``, ``qvel``, ``ctrl``, ``field(name)``, ``step``)."""
        return self._sim

    def _reset_sim(self, mask: np.ndarray | None) -> None:
        ids = None if mask is None else np.flatnonzero(mask)
        rows = range(self.num_envs) if ids is None else ids
        # one generator per sub-env: its resets do not depend on when the others reset
        model, task, rngs = self.mj_model, self._task, self._rngs
        init_qpos, init_qvel = self._init_qpos, self._init_qvel
        states = [task.reset_noise(rngs[i], 1, model, init_qpos, init_qvel) for i in rows]
        qpos = np.concatenate([q for q, _ in states])
        qvel = np.concatenate([v for _, v in states])
        self._sim.reset(ids, qpos, qvel)
        if ids is None:
            self._steps[:] = 0
        else:
            self._steps[ids] = 0

    def _array_reset(self, out: dict, mask: np.ndarray | None, seed: int | None) -> None:
        if seed is not None:
            self.__dict__["_rngs"] = _generators(seed, self.num_envs)
        self._reset_sim(mask)
        obs = self._task.observe(self._sim, True)
        if mask is None:
            out["observation"] = obs  # a fresh array: taken without a copy
        else:
            out["observation"][mask] = obs[mask]

    def _array_step(self, action: np.ndarray, out: dict) -> None:
        sim, task = self._sim, self._task
        before = task.before_step(sim)
        sim.ctrl[:] = action
        sim.step(self.frame_skip)
        obs = task.observe(sim, False)
        out["observation"] = obs
        out["reward"][:, 0] = task.reward(sim, action, before, self.dt)
        terminated = task.terminated(sim, obs)
        term = out["terminated"][:, 0]
        if terminated is None:
            term[:] = False
        else:
            term[:] = terminated
        steps = self._steps
        steps += 1
        trunc = out["truncated"][:, 0]
        limit = task.max_episode_steps
        if limit is None:
            trunc[:] = False
        else:
            np.greater_equal(steps, limit, out=trunc)
        np.logical_or(term, trunc, out=out["done"][:, 0])

    # ------------------------------------------------------------------ rendering
    def render(self, index: int = 0, width: int = 240, height: int = 240, camera: Any = -1):
        """An ``(height, width, 3)`` uint8 image of env ``index`` (needs an OpenGL context:
        ``MUJOCO_GL=egl`` or ``osmesa`` when headless)."""
        import mujoco

        if not 0 <= index < self.num_envs:
            raise IndexError(f"index: expected 0 <= index < {self.num_envs}, got {index}.")
        renderer = self._renderer
        if renderer is None or (renderer.width, renderer.height) != (width, height):
            if renderer is not None:
                renderer.close()
            renderer = mujoco.Renderer(self.mj_model, height=height, width=width)
            self.__dict__["_renderer"] = renderer
        renderer.update_scene(self._sim.get_data(index), camera=camera)
        return renderer.render()

    def close(self, *, raise_if_closed: bool = False) -> None:
        """Close the env: release the renderer and the simulations (idempotent)."""
        if self.is_closed:
            return super().close(raise_if_closed=raise_if_closed)
        renderer = self.__dict__.get("_renderer")
        if renderer is not None:
            renderer.close()
            self.__dict__["_renderer"] = None
        self._sim.close()
        super().close()

    def __repr__(self) -> str:
        what = self.task_name or "model"
        return (
            f"MujocoEnv({what}, num_envs={self.num_envs}, frame_skip={self.frame_skip}, "
            f"num_threads={self.num_threads})"
        )
