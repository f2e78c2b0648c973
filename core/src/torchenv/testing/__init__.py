"""torchenv.testing: the conformance tests every env (built-in, plugin, third-party) runs.

``EnvConformanceTests`` for every env; ``MultiAgentConformanceTests`` adds the multi-agent
contract (group keys, masks, per-group done and reward); ``AsyncEnvPoolConformanceTests`` the
asynchronous API of ``AsyncEnvPool``; ``SeedingConformanceTests`` checks that the same seed gives
the same data. ``assert_tensordict_equal`` compares
two tensordicts bit for bit (what the suites use to compare two paths or two runs).

>>> from torchenv.testing import EnvConformanceTests
>>> class TestMyEnv(EnvConformanceTests):
...     def make_env(self):
...         from torchenv.envs import CartPoleEnv
...         return CartPoleEnv(batch_size=[4])
"""

from torchenv.testing._async_pool import AsyncEnvPoolConformanceTests
from torchenv.testing._batched import BatchedEnvConformanceTests
from torchenv.testing._conformance import EnvConformanceTests, assert_tensordict_equal
from torchenv.testing._multiagent import MultiAgentConformanceTests
from torchenv.testing._seeding import SeedingConformanceTests

__all__ = [
    "AsyncEnvPoolConformanceTests",
    "BatchedEnvConformanceTests",
    "EnvConformanceTests",
    "MultiAgentConformanceTests",
    "SeedingConformanceTests",
    "assert_tensordict_equal",
]
