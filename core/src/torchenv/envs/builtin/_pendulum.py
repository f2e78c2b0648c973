"""The classic pendulum swing-up, stateless and batch-unlocked, in pure torch."""

from __future__ import annotations

import math

import torch
from tensordict import TensorDict, TensorDictBase

from torchenv.envs._common import EnvBase
from torchenv.specs import Bounded, Categorical, Composite, Unbounded

__all__ = ["PendulumEnv"]

_PARAM_NAMES = ("max_speed", "max_torque", "dt", "g", "m", "l")


def _angle_normalize(x: torch.Tensor) -> torch.Tensor:
    """Wraps an angle into ``[-pi, pi)``."""
    return torch.remainder(x + math.pi, 2 * math.pi) - math.pi


class PendulumEnv(EnvBase):
    """A stateless pendulum: swing it up and keep it upright with a bounded torque.

    The dynamics are gymnasium's ``Pendulum-v1``. The env keeps no state: the angle ``"th"``,
    the angular velocity ``"thdot"`` and the physical parameters ``"params"`` travel in the
    tensordict, so a step is a pure function of its input. The env is batch-unlocked: its
    ``batch_size`` is empty, and ``reset``/``step`` accept a tensordict of any batch size,
    which sets how many pendulums run at once.

    Keys:
        observations: ``"observation"`` (``[cos th, sin th, thdot]``, as gymnasium's), ``"th"``,
        ``"thdot"`` and ``"params"`` (``max_speed``, ``max_torque``, ``dt``, ``g``, ``m``, ``l``).
        action: ``"action"``, a torque of shape ``[1]`` in ``[-2, 2]``.
        reward: ``-(th^2 + 0.1 thdot^2 + 0.001 u^2)`` (with ``th`` normalised), shape ``[1]``.
        done / terminated: always ``False``; limit episodes with a step-count transform.

    Args:
        td_params: a tensordict with a ``"params"`` entry (see :meth:`gen_params`).
            Defaults to ``gen_params()``.
        seed: seed of the env's own generator (reset states). Defaults to a seed drawn from
            torch's global generator.
        device: device of the specs and data.

    >>> env = PendulumEnv(seed=0)
    >>> env.rollout(3)["next", "observation"].shape
    torch.Size([3, 3])
    >>> td = env.reset(TensorDict(batch_size=[5]))  # five pendulums at once
    >>> env.rand_step(td)["next", "th"].shape
    torch.Size([5])
    """

    _batch_locked = False
    DEFAULT_X = math.pi
    DEFAULT_Y = 1.0

    def __init__(
        self,
        td_params: TensorDictBase | None = None,
        seed: int | None = None,
        device: torch.device | str | None = None,
    ) -> None:
        super().__init__(device=device)
        self.rng: torch.Generator | None = None
        if td_params is None:
            td_params = self.gen_params(device=self.device)
        self._make_spec(td_params)
        if seed is None:  # the simulator only: random actions stay on torch's global generator
            self._set_seed(int(torch.empty((), dtype=torch.int64).random_().item()))
        else:  # as set_seed(seed): the random actions too
            self.set_seed(seed)

    @staticmethod
    def gen_params(
        g: float = 10.0,
        batch_size: torch.Size | tuple[int, ...] | None = None,
        device: torch.device | str | None = None,
    ) -> TensorDictBase:
        """Returns a tensordict holding the physical parameters under ``"params"``.

        >>> PendulumEnv.gen_params(batch_size=[2])["params", "g"]
        tensor([10., 10.])
        """
        batch_size = torch.Size(batch_size or ())
        values = {"max_speed": 8.0, "max_torque": 2.0, "dt": 0.05, "g": g, "m": 1.0, "l": 1.0}
        params = {
            name: torch.full(batch_size, value, dtype=torch.float32, device=device)
            for name, value in values.items()
        }
        return TensorDict({"params": TensorDict(params, batch_size)}, batch_size, device=device)

    def _make_spec(self, td_params: TensorDictBase) -> None:
        params = td_params["params"]
        max_speed = float(params["max_speed"].reshape(-1)[0])
        max_torque = float(params["max_torque"].reshape(-1)[0])
        device = self.device
        state = Composite(
            th=Bounded(low=-math.pi, high=math.pi, shape=(), dtype=torch.float32, device=device),
            thdot=Bounded(
                low=-max_speed, high=max_speed, shape=(), dtype=torch.float32, device=device
            ),
            params=Composite(
                {
                    name: Unbounded(shape=(), dtype=torch.float32, device=device)
                    for name in _PARAM_NAMES
                },
                shape=(),
            ),
            shape=(),
        )
        observation = state.clone()
        observation["observation"] = Bounded(
            low=torch.tensor([-1.0, -1.0, -max_speed]),
            high=torch.tensor([1.0, 1.0, max_speed]),
            shape=(3,),
            dtype=torch.float32,
            device=device,
        )
        self.observation_spec = observation
        self.state_spec = state
        self.action_spec = Bounded(
            low=-max_torque, high=max_torque, shape=(1,), dtype=torch.float32, device=device
        )
        self.reward_spec = Unbounded(shape=(1,), dtype=torch.float32, device=device)
        self.full_done_spec = Composite(
            done=Categorical(2, shape=(1,), dtype=torch.bool, device=device),
            terminated=Categorical(2, shape=(1,), dtype=torch.bool, device=device),
            shape=(),
        )

    def _set_seed(self, seed: int | None) -> None:
        rng = torch.Generator(device=self.device if self.device is not None else "cpu")
        if seed is None:
            rng.seed()
        else:
            rng.manual_seed(seed)
        self.rng = rng

    def _reset(self, tensordict: TensorDictBase | None, **kwargs) -> TensorDictBase:
        if tensordict is None:
            batch_size = self.batch_size
            params = None
        else:
            batch_size = tensordict.batch_size
            params = tensordict.get("params", None)
        if params is None:
            params = self.gen_params(batch_size=batch_size, device=self.device)["params"]
        th = self._uniform(batch_size, self.DEFAULT_X)
        thdot = self._uniform(batch_size, self.DEFAULT_Y)
        done = torch.zeros((*batch_size, 1), dtype=torch.bool, device=self.device)
        return TensorDict(
            {
                "th": th,
                "thdot": thdot,
                "params": params,
                "observation": torch.stack([th.cos(), th.sin(), thdot], -1),
                "done": done,
                "terminated": done.clone(),
            },
            batch_size,
            device=self.device,
        )

    def _uniform(self, shape: torch.Size, high: float) -> torch.Tensor:
        sample = torch.rand(shape, generator=self.rng, device=self.device)
        return sample.mul_(2 * high).sub_(high)

    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        th = tensordict.get("th")
        thdot = tensordict.get("thdot")
        params = tensordict.get("params")
        g = params.get("g")
        m = params.get("m")
        length = params.get("l")
        dt = params.get("dt")
        max_torque = params.get("max_torque")
        max_speed = params.get("max_speed")
        u = tensordict["action"].squeeze(-1)
        u = torch.maximum(torch.minimum(u, max_torque), -max_torque)
        cost = _angle_normalize(th).square() + 0.1 * thdot.square() + 0.001 * u.square()
        thdot_acc = 3 * g / (2 * length) * th.sin() + 3.0 / (m * length.square()) * u
        new_thdot = thdot + thdot_acc * dt
        new_thdot = torch.maximum(torch.minimum(new_thdot, max_speed), -max_speed)
        new_th = _angle_normalize(th + new_thdot * dt)
        done = torch.zeros((*tensordict.batch_size, 1), dtype=torch.bool, device=th.device)
        return TensorDict(
            {
                "th": new_th,
                "thdot": new_thdot,
                "params": params,
                "observation": torch.stack([new_th.cos(), new_th.sin(), new_thdot], -1),
                "reward": cost.neg().unsqueeze(-1),
                "done": done,
                "terminated": done.clone(),
            },
            tensordict.batch_size,
            device=self.device,
        )
