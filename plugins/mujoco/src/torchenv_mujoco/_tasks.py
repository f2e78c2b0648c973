"""The standard locomotion tasks, vectorised over the batch with numpy.

Each task reproduces gymnasium's ``-v5`` version with its default arguments: the same model file,
frame skip, observation, reward, termination, reset noise and step limit. All functions take the
whole batch: ``(num_envs, ...)`` arrays in, ``(num_envs,)`` arrays out; no per-env loop.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["Task", "TASKS"]


class Task:
    """A task: a model, a frame skip, a step limit and vectorised obs / reward / termination.

    Subclasses override the hooks; ``sim`` is a :mod:`torchenv_mujoco._sim` simulator.
    """

    xml: str = ""
    frame_skip: int = 1
    max_episode_steps: int | None = 1000
    contact_forces: bool = False  # needs cfrc_ext (an accelerometer is added to the model)
    exclude_x: int = 0  # leading qpos entries left out of the observation
    fields: tuple[str, ...] = ()  # derived MjData fields the hooks read through sim.field()

    def obs_size(self, model: Any) -> int:
        return model.nq - self.exclude_x + model.nv

    def reset_noise(self, rng: np.random.Generator, n: int, model: Any, init_qpos, init_qvel):
        """Initial ``(qpos, qvel)`` of ``n`` envs (gymnasium's default: uniform, scale 0.1)."""
        scale = 0.1
        qpos = init_qpos + rng.uniform(-scale, scale, (n, model.nq))
        qvel = init_qvel + scale * rng.standard_normal((n, model.nv))
        return qpos, qvel

    def observe(self, sim: Any, reset: bool) -> np.ndarray:
        return np.concatenate([sim.qpos[:, self.exclude_x :], sim.qvel], axis=1)

    def before_step(self, sim: Any) -> Any:
        return sim.qpos[:, 0].copy()

    def reward(self, sim: Any, action: np.ndarray, before: Any, dt: float) -> np.ndarray:
        raise NotImplementedError

    def terminated(self, sim: Any, obs: np.ndarray) -> np.ndarray | None:
        return None  # never


def _ctrl_cost(action: np.ndarray, weight: float) -> np.ndarray:
    return weight * np.square(action).sum(axis=1)


class HalfCheetah(Task):
    xml, frame_skip, exclude_x = "half_cheetah.xml", 5, 1

    def reward(self, sim, action, before, dt):
        return (sim.qpos[:, 0] - before) / dt - _ctrl_cost(action, 0.1)


class _Hopping(Task):
    """Hopper and Walker2d: forward speed + healthy bonus - control cost; fall = end."""

    frame_skip, exclude_x = 4, 1
    z_range: tuple[float, float] = (0.0, 0.0)
    angle_range: tuple[float, float] = (0.0, 0.0)

    def reset_noise(self, rng, n, model, init_qpos, init_qvel):
        scale = 5e-3
        qpos = init_qpos + rng.uniform(-scale, scale, (n, model.nq))
        qvel = init_qvel + rng.uniform(-scale, scale, (n, model.nv))
        return qpos, qvel

    def observe(self, sim, reset):
        return np.concatenate([sim.qpos[:, 1:], np.clip(sim.qvel, -10, 10)], axis=1)

    def healthy(self, sim) -> np.ndarray:
        z, angle = sim.qpos[:, 1], sim.qpos[:, 2]
        lo, hi = self.z_range
        alo, ahi = self.angle_range
        return (lo < z) & (z < hi) & (alo < angle) & (angle < ahi)

    def reward(self, sim, action, before, dt):
        speed = (sim.qpos[:, 0] - before) / dt
        return speed + self.healthy(sim) - _ctrl_cost(action, 1e-3)

    def terminated(self, sim, obs):
        return ~self.healthy(sim)


class Hopper(_Hopping):
    xml = "hopper.xml"
    z_range, angle_range = (0.7, float("inf")), (-0.2, 0.2)

    def healthy(self, sim):
        state = np.concatenate([sim.qpos[:, 2:], sim.qvel], axis=1)
        return super().healthy(sim) & ((state > -100) & (state < 100)).all(axis=1)


class Walker2d(_Hopping):
    xml = "walker2d_v5.xml"
    z_range, angle_range = (0.8, 2.0), (-1.0, 1.0)


class Ant(Task):
    xml, frame_skip, exclude_x, contact_forces = "ant.xml", 5, 2, True
    fields = ("cfrc_ext", "xpos")

    def obs_size(self, model):
        return model.nq - 2 + model.nv + 6 * (model.nbody - 1)

    def observe(self, sim, reset):
        n = sim.qpos.shape[0]
        forces = np.clip(sim.field("cfrc_ext")[:, 1:], -1.0, 1.0).reshape(n, -1)
        if reset:  # gymnasium's reset leaves cfrc_ext at zero (mj_forward does not compute it)
            forces = np.zeros_like(forces)
        return np.concatenate([sim.qpos[:, 2:], sim.qvel, forces], axis=1)

    def before_step(self, sim):
        return sim.field("xpos")[:, 1, 0].copy()

    def healthy(self, sim):
        finite = np.isfinite(sim.qpos).all(axis=1) & np.isfinite(sim.qvel).all(axis=1)
        z = sim.qpos[:, 2]
        return finite & (z >= 0.2) & (z <= 1.0)

    def reward(self, sim, action, before, dt):
        speed = (sim.field("xpos")[:, 1, 0] - before) / dt
        contact = 5e-4 * np.square(np.clip(sim.field("cfrc_ext"), -1.0, 1.0)).sum(axis=(1, 2))
        return speed + self.healthy(sim) - _ctrl_cost(action, 0.5) - contact

    def terminated(self, sim, obs):
        return ~self.healthy(sim)


class Humanoid(Task):
    xml, frame_skip, exclude_x, contact_forces = "humanoid.xml", 5, 2, True
    fields = ("cfrc_ext", "cinert", "cvel", "qfrc_actuator", "xipos")

    def obs_size(self, model):
        bodies = model.nbody - 1
        return model.nq - 2 + model.nv + 10 * bodies + 6 * bodies + model.nv - 6 + 6 * bodies

    def reset_noise(self, rng, n, model, init_qpos, init_qvel):
        scale = 1e-2
        qpos = init_qpos + rng.uniform(-scale, scale, (n, model.nq))
        qvel = init_qvel + rng.uniform(-scale, scale, (n, model.nv))
        return qpos, qvel

    def observe(self, sim, reset):
        n = sim.qpos.shape[0]
        forces = sim.field("cfrc_ext")[:, 1:].reshape(n, -1)
        if reset:
            forces = np.zeros_like(forces)
        parts = [
            sim.qpos[:, 2:],
            sim.qvel,
            sim.field("cinert")[:, 1:].reshape(n, -1),
            sim.field("cvel")[:, 1:].reshape(n, -1),
            sim.field("qfrc_actuator")[:, 6:],
            forces,
        ]
        return np.concatenate(parts, axis=1)

    def before_step(self, sim):
        return self._mass_center_x(sim)

    @staticmethod
    def _mass_center_x(sim):
        mass = sim.model.body_mass
        return (sim.field("xipos")[:, :, 0] @ mass) / mass.sum()

    def healthy(self, sim):
        z = sim.qpos[:, 2]
        return (z > 1.0) & (z < 2.0)

    def reward(self, sim, action, before, dt):
        speed = (self._mass_center_x(sim) - before) / dt
        contact = np.minimum(5e-7 * np.square(sim.field("cfrc_ext")).sum(axis=(1, 2)), 10.0)
        ctrl = 0.1 * np.square(sim.ctrl).sum(axis=1)
        return 1.25 * speed + 5.0 * self.healthy(sim) - ctrl - contact

    def terminated(self, sim, obs):
        return ~self.healthy(sim)


class InvertedPendulum(Task):
    xml, frame_skip = "inverted_pendulum.xml", 2

    def reset_noise(self, rng, n, model, init_qpos, init_qvel):
        scale = 1e-2
        qpos = init_qpos + rng.uniform(-scale, scale, (n, model.nq))
        qvel = init_qvel + rng.uniform(-scale, scale, (n, model.nv))
        return qpos, qvel

    def before_step(self, sim):
        return None

    def _fallen(self, obs):
        return ~np.isfinite(obs).all(axis=1) | (np.abs(obs[:, 1]) > 0.2)

    def reward(self, sim, action, before, dt):
        return (~self._fallen(self.observe(sim, False))).astype(np.float64)

    def terminated(self, sim, obs):
        return self._fallen(obs)


class Reacher(Task):
    xml, frame_skip, max_episode_steps = "reacher.xml", 2, 50
    fields = ("xpos",)

    def obs_size(self, model):
        return 10

    def reset_noise(self, rng, n, model, init_qpos, init_qvel):
        qpos = rng.uniform(-0.1, 0.1, (n, model.nq)) + init_qpos
        goal = rng.uniform(-0.2, 0.2, (n, 2))
        redo = np.linalg.norm(goal, axis=1) >= 0.2
        while redo.any():  # rejection sampling, redrawn for the rows that missed only
            goal[redo] = rng.uniform(-0.2, 0.2, (int(redo.sum()), 2))
            redo = np.linalg.norm(goal, axis=1) >= 0.2
        qpos[:, -2:] = goal
        qvel = init_qvel + rng.uniform(-5e-3, 5e-3, (n, model.nv))
        qvel[:, -2:] = 0.0
        return qpos, qvel

    def _bodies(self, sim):
        import mujoco

        finger = mujoco.mj_name2id(sim.model, mujoco.mjtObj.mjOBJ_BODY, "fingertip")
        target = mujoco.mj_name2id(sim.model, mujoco.mjtObj.mjOBJ_BODY, "target")
        return finger, target

    def _gap(self, sim):
        finger, target = self.__dict__.get("_ids") or self.__dict__.setdefault(
            "_ids", self._bodies(sim)
        )
        xpos = sim.field("xpos")
        return xpos[:, finger] - xpos[:, target]

    def observe(self, sim, reset):
        theta = sim.qpos[:, :2]
        parts = [
            np.cos(theta),
            np.sin(theta),
            sim.qpos[:, 2:],
            sim.qvel[:, :2],
            self._gap(sim)[:, :2],
        ]
        return np.concatenate(parts, axis=1)

    def before_step(self, sim):
        return None

    def reward(self, sim, action, before, dt):
        return -np.linalg.norm(self._gap(sim), axis=1) - np.square(action).sum(axis=1)


TASKS: dict[str, type[Task]] = {
    cls.__name__: cls
    for cls in (HalfCheetah, Hopper, Walker2d, Ant, Humanoid, InvertedPendulum, Reacher)
}
