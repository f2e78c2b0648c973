"""CartPole, batched and vectorised in pure torch, with gymnasium's ``CartPole-v1`` physics."""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from tensordict import TensorDict, TensorDictBase

from torchenv.envs._common import EnvBase
from torchenv.specs import Categorical, Composite, OneHot, Unbounded

__all__ = ["CartPoleEnv"]


class _Sim:
    """The mutable simulation state, kept out of ``nn.Module.__setattr__`` (slow) on each step."""

    __slots__ = ("state", "steps")

    def __init__(self, state: torch.Tensor, steps: torch.Tensor) -> None:
        self.state = state  # float64 [*batch, 4]: x, x_dot, theta, theta_dot
        self.steps = steps  # int64 [*batch]: steps since the last reset


class CartPoleEnv(EnvBase):
    """Balance a pole on a cart: gymnasium's ``CartPole-v1``, run for a whole batch at once.

    The physics (constants, explicit Euler integration, termination when the cart leaves
    ``[-2.4, 2.4]`` or the pole leans more than 12 degrees, reward ``1.0`` per step, time limit
    of 500 steps) are those of gymnasium's ``CartPole-v1``; the state is integrated in float64
    like gymnasium's, so both produce the same observations from the same state and actions.
    Every sub-env of ``batch_size`` has its own state and step counter; a reset with a
    ``"_reset"`` mask resets only the masked sub-envs.

    Keys:
        observation: ``"observation"``: ``[x, x_dot, theta, theta_dot]`` (float32).
        action: ``"action"``: push left (0) or right (1), ``Categorical(2)``; one-hot of shape
            ``[2]`` with ``categorical_action_encoding=False``.
        reward: ``"reward"``: ``1.0`` per step, shape ``[1]``.
        done: ``"done"``, ``"terminated"`` (pole fell or cart left), ``"truncated"``
            (``max_episode_steps`` reached).

    Args:
        batch_size: number (shape) of sub-envs stepped together. Defaults to ``()``.
        max_episode_steps: episode length after which ``"truncated"`` is set. Defaults to 500.
        categorical_action_encoding: integer actions if ``True`` (default), one-hot otherwise.
        seed: seed of the env's own generator (initial states). Defaults to a seed drawn from
            torch's global generator.
        device: device of the specs, state and data.

    >>> env = CartPoleEnv(batch_size=[8], seed=0)
    >>> td = env.rollout(10, break_when_any_done=False)
    >>> td["next", "observation"].shape
    torch.Size([8, 10, 4])
    """

    gravity = 9.8
    masscart = 1.0
    masspole = 0.1
    length = 0.5  # half the pole's length
    force_mag = 10.0
    tau = 0.02
    theta_threshold_radians = 12 * 2 * math.pi / 360
    x_threshold = 2.4
    reset_noise = 0.05

    def __init__(
        self,
        *,
        batch_size: Sequence[int] | torch.Size | int = (),
        max_episode_steps: int = 500,
        categorical_action_encoding: bool = True,
        seed: int | None = None,
        device: torch.device | str | None = None,
    ) -> None:
        if isinstance(batch_size, int):
            batch_size = (batch_size,)
        super().__init__(device=device, batch_size=torch.Size(batch_size))
        if max_episode_steps < 1:
            raise ValueError(f"max_episode_steps must be >= 1, got {max_episode_steps}")
        self.max_episode_steps = int(max_episode_steps)
        self.categorical_action_encoding = categorical_action_encoding
        self.rng: torch.Generator | None = None
        shape = torch.Size(self.batch_size)
        device = self.device
        self.observation_spec = Composite(
            observation=Unbounded(shape=(*shape, 4), dtype=torch.float32, device=device),
            shape=shape,
        )
        if categorical_action_encoding:
            action = Categorical(2, shape=shape, dtype=torch.int64, device=device)
        else:
            action = OneHot(2, shape=(*shape, 2), dtype=torch.bool, device=device)
        self.action_spec = action
        self.reward_spec = Unbounded(shape=(*shape, 1), dtype=torch.float32, device=device)
        flag = Categorical(2, shape=(*shape, 1), dtype=torch.bool, device=device)
        self.full_done_spec = Composite(
            done=flag, terminated=flag.clone(), truncated=flag.clone(), shape=shape
        )
        self._sim = _Sim(
            state=torch.zeros((*shape, 4), dtype=torch.float64, device=device),
            steps=torch.zeros(shape, dtype=torch.int64, device=device),
        )
        self._polemass_length = self.masspole * self.length
        self._total_mass = self.masspole + self.masscart
        self._forces = torch.tensor(
            [-self.force_mag, self.force_mag], dtype=torch.float64, device=device
        )
        inf = float("inf")
        limits = [self.x_threshold, inf, self.theta_threshold_radians, inf]
        self._limits = torch.tensor(limits, dtype=torch.float64, device=device)
        if seed is None:  # the simulator only: random actions stay on torch's global generator
            self._set_seed(int(torch.empty((), dtype=torch.int64).random_().item()))
        else:  # as set_seed(seed): the random actions too
            self.set_seed(seed)

    def _set_seed(self, seed: int | None) -> None:
        rng = torch.Generator(device=self.device if self.device is not None else "cpu")
        if seed is None:
            rng.seed()
        else:
            rng.manual_seed(seed)
        self.rng = rng

    @property
    def state(self) -> torch.Tensor:
        """The float64 physical state ``[*batch, 4]`` (``x, x_dot, theta, theta_dot``); settable."""
        return self._sim.state

    @state.setter
    def state(self, value: torch.Tensor) -> None:
        current = self._sim.state
        value = torch.as_tensor(value, dtype=torch.float64, device=current.device)
        if value.shape != current.shape:
            raise ValueError(
                f"CartPoleEnv.state must have shape {tuple(current.shape)}, "
                f"got {tuple(value.shape)}"
            )
        self._sim.state = value.clone()

    def _reset(self, tensordict: TensorDictBase | None, **kwargs) -> TensorDictBase:
        sim = self._sim
        shape = sim.steps.shape
        reset = None if tensordict is None else tensordict.get("_reset", None)
        if reset is None or not shape:
            sim.state = self._initial_states(shape)
            sim.steps = torch.zeros_like(sim.steps)
        else:
            # draw fresh states for the reset sub-envs only (drawing is the costly part)
            mask = reset.reshape(shape)
            where = mask.nonzero(as_tuple=True)
            sim.state = sim.state.clone()
            sim.state[where] = self._initial_states((where[0].numel(),))
            sim.steps = sim.steps.masked_fill(mask, 0)
        flag = torch.zeros((*shape, 1), dtype=torch.bool, device=sim.steps.device)
        return TensorDict(
            {
                "observation": sim.state.to(torch.float32),
                "done": flag,
                "terminated": flag.clone(),
                "truncated": flag.clone(),
            },
            shape,
            device=self.device,
        )

    def _initial_states(self, shape: tuple[int, ...] | torch.Size) -> torch.Tensor:
        """Uniform states in ``[-reset_noise, reset_noise]``, shape ``[*shape, 4]``, float64."""
        noise = self.reset_noise
        fresh = torch.rand(
            (*shape, 4), generator=self.rng, dtype=torch.float64, device=self._sim.state.device
        )
        return fresh.mul_(2 * noise).sub_(noise)

    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        # Same float64 operations, in the same order, as gymnasium's CartPole-v1 step, on the
        # whole batch at once; few, fused tensor ops: the cost is per-op dispatch, not flops.
        action = tensordict["action"]
        if not self.categorical_action_encoding:
            action = action[..., 1]
        force = self._forces[action.long()]
        sim = self._sim
        state = sim.state
        theta = state[..., 2]
        theta_dot = state[..., 3]
        costheta = theta.cos()
        sintheta = theta.sin()
        pml = self._polemass_length
        total_mass = self._total_mass
        temp = (force + pml * theta_dot.square() * sintheta) / total_mass
        thetaacc = (self.gravity * sintheta - costheta * temp) / (
            self.length * (4.0 / 3.0 - self.masspole * costheta.square() / total_mass)
        )
        xacc = temp - pml * thetaacc * costheta / total_mass
        # explicit Euler: (x, x_dot, theta, theta_dot) += tau * (x_dot, xacc, theta_dot, thetaacc)
        rates = torch.stack([state[..., 1], xacc, theta_dot, thetaacc], -1)
        new_state = state + self.tau * rates
        steps = sim.steps + 1
        partial = tensordict.get("_step", None)
        if partial is None:
            reward = torch.ones((*steps.shape, 1), dtype=torch.float32, device=steps.device)
        else:
            # partial step: the sub-envs outside the "_step" mask keep their state and count,
            # hence their observation and done flags, and get no reward
            stepped = partial.reshape(steps.shape)
            new_state = torch.where(stepped.unsqueeze(-1), new_state, state)
            steps = torch.where(stepped, steps, sim.steps)
            reward = stepped.unsqueeze(-1).to(torch.float32)
        sim.state = state = new_state
        sim.steps = steps
        terminated = (state.abs() > self._limits).any(-1, keepdim=True)
        truncated = (steps >= self.max_episode_steps).unsqueeze(-1)
        return TensorDict(
            {
                "observation": state.to(torch.float32),
                "reward": reward,
                "done": terminated | truncated,
                "terminated": terminated,
                "truncated": truncated,
            },
            steps.shape,
            device=self.device,
        )
