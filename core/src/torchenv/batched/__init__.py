"""torchenv.batched: run several environments as one batched env.

``SerialEnv`` runs them in this process, ``ParallelEnv`` in worker processes that exchange data
through shared memory, ``RayParallelEnv`` in Ray actors (``pip install "torchenv[ray]"``);
``EnvCreator`` makes a picklable factory whose envs share their state; ``AsyncEnvPool``
(threads or processes) steps and collects its sub-envs separately.
"""

from torchenv.batched._async_pool import AsyncEnvPool
from torchenv.batched._async_processes import ProcessorAsyncEnvPool
from torchenv.batched._async_threads import ThreadingAsyncEnvPool
from torchenv.batched._creator import EnvCreator
from torchenv.batched._parallel import ParallelEnv
from torchenv.batched._ray import RayParallelEnv
from torchenv.batched._restart import WorkerRestartedWarning
from torchenv.batched._serial import SerialEnv
from torchenv.batched._spec_check import SpecMismatchError
from torchenv.batched._worker import EnvClosedError, WorkerError, heartbeat

__all__ = [
    "AsyncEnvPool",
    "EnvClosedError",
    "EnvCreator",
    "ParallelEnv",
    "ProcessorAsyncEnvPool",
    "RayParallelEnv",
    "SerialEnv",
    "SpecMismatchError",
    "ThreadingAsyncEnvPool",
    "WorkerError",
    "WorkerRestartedWarning",
    "heartbeat",
]
