"""torchenv.testing: the conformance tests every env (built-in, plugin, third-party) runs.

``EnvConformanceTests`` for every env; ``MultiAgentConformanceTests`` adds the multi-agent
contract (group keys, masks, per-group done and reward).

>>> from torchenv.testing import EnvConformanceTests
>>> class TestMyEnv(EnvConformanceTests):
...     def make_env(self):
...         from torchenv.envs import CartPoleEnv
...         return CartPoleEnv(batch_size=[4])
"""

from torchenv.testing._batched import BatchedEnvConformanceTests
from torchenv.testing._conformance import EnvConformanceTests
from torchenv.testing._multiagent import MultiAgentConformanceTests

__all__ = ["BatchedEnvConformanceTests", "EnvConformanceTests", "MultiAgentConformanceTests"]
