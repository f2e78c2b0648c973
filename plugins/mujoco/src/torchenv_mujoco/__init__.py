"""torchenv-mujoco: MuJoCo directly, natively batched and multi-threaded.

>>> import torchenv
>>> env = torchenv.make("mujoco:HalfCheetah", num_envs=8, num_threads=2)
>>> env.batch_size
torch.Size([8])
"""

from torchenv_mujoco._env import MujocoEnv
from torchenv_mujoco._tasks import TASKS, Task
from torchenv_mujoco._versions import batch_available

__all__ = ["MujocoEnv", "TASKS", "Task", "batch_available"]
