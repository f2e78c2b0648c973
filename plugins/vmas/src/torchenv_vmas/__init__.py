"""torchenv-vmas: VMAS multi-agent scenarios as natively batched torchenv envs.

``VmasEnv`` and ``VmasWrapper`` follow TorchRL 0.14.1's names and defaults; the backend
``vmas`` makes them by name (``torchenv.make("vmas:balance", num_envs=1024)``).

>>> import torchenv
>>> env = torchenv.make("vmas:balance", num_envs=16, seed=0)
>>> env.rollout(5)["next", "agents", "observation"].shape
torch.Size([16, 5, 3, 16])
"""

from __future__ import annotations

from torchenv_vmas._backend import scenario_names
from torchenv_vmas._env import VmasEnv, VmasWrapper

__all__ = ["VmasEnv", "VmasWrapper", "scenario_names"]
