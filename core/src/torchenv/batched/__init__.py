"""torchenv.batched: run several environments as one batched env.

``SerialEnv`` runs them in this process, ``ParallelEnv`` in worker processes that exchange data
through shared memory, ``RayParallelEnv`` in Ray actors (``pip install "torchenv[ray]"``);
``EnvCreator`` makes a picklable factory whose envs share their state.
"""

from torchenv.batched._creator import EnvCreator
from torchenv.batched._parallel import ParallelEnv
from torchenv.batched._ray import RayParallelEnv
from torchenv.batched._serial import SerialEnv
from torchenv.batched._worker import EnvClosedError, WorkerError

__all__ = [
    "EnvClosedError",
    "EnvCreator",
    "ParallelEnv",
    "RayParallelEnv",
    "SerialEnv",
    "WorkerError",
]
