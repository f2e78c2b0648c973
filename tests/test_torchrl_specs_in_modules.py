"""Every torchenv spec class that TorchRL accepts by ``isinstance`` works inside TorchRL's
``Composite``, ``ProbabilisticActor``, ``EGreedyModule`` and ``SafeModule`` (issue 37: our
``Bounded`` lacked ``_register_batch_size``, which ``Composite.set`` calls), and
``EnvCreator.state_dict()`` has TorchRL's layout. Runs in the ``torchrl`` tox cell."""

from __future__ import annotations

import pytest
import torch

torchrl = pytest.importorskip("torchrl", reason="needs torchrl (tox -e torchrl)")

from tensordict import TensorDict  # noqa: E402
from tensordict.nn import NormalParamExtractor, TensorDictModule  # noqa: E402
from torchrl.modules import EGreedyModule, ProbabilisticActor, SafeModule, TanhNormal  # noqa: E402

import torchenv  # noqa: E402
import torchenv.specs as S  # noqa: E402
from torchenv.batched import EnvCreator  # noqa: E402

pytestmark = pytest.mark.torchrl

SPECS = {
    "Bounded": lambda: S.Bounded(-2.0, 2.0, shape=(1,)),
    "BoundedDiscrete": lambda: S.Bounded(0, 4, shape=(1,), dtype=torch.int64),
    "Unbounded": lambda: S.Unbounded(shape=(2,)),
    "Categorical": lambda: S.Categorical(3),
    "OneHot": lambda: S.OneHot(3),
    "MultiOneHot": lambda: S.MultiOneHot([2, 3]),
    "MultiCategorical": lambda: S.MultiCategorical([2, 3]),
    "Binary": lambda: S.Binary(3),
}


@pytest.mark.parametrize("name", [*SPECS, "NonTensor"])
def test_spec_inside_torchrl_composite(name):
    spec = SPECS[name]() if name in SPECS else S.NonTensor(shape=())
    composite = torchrl.data.Composite({"action": spec})
    assert composite["action"] is spec
    sample = composite.rand()
    assert composite.is_in(sample)
    batched = torchrl.data.Composite(shape=(4,))
    batched["action"] = spec.expand(4, *spec.shape)
    assert batched.rand().batch_size == (4,)
    assert batched["action"].shape[0] == 4


@pytest.mark.parametrize("name", list(SPECS))
def test_spec_in_safe_module_projects(name):
    spec = SPECS[name]()
    module = SafeModule(
        torch.nn.Identity(), in_keys=["x"], out_keys=["action"], spec=spec, safe=True
    )
    value = spec.rand()
    out = module(TensorDict(x=value))
    assert spec.is_in(out["action"])


@pytest.mark.parametrize("name", [n for n in SPECS if n != "Unbounded"])
def test_spec_in_egreedy_module(name):
    spec = SPECS[name]()
    module = EGreedyModule(spec=spec, eps_init=1.0, eps_end=1.0)
    out = module(TensorDict(action=spec.zero()))
    assert spec.is_in(out["action"])


def test_probabilistic_actor_on_a_continuous_torchenv_env():
    env = torchenv.make("builtin:Pendulum")
    net = TensorDictModule(
        torch.nn.Sequential(torch.nn.Linear(3, 2), NormalParamExtractor()),
        in_keys=["observation"],
        out_keys=["loc", "scale"],
    )
    actor = ProbabilisticActor(
        net,
        in_keys=["loc", "scale"],
        spec=env.action_spec,
        distribution_class=TanhNormal,
        distribution_kwargs={"low": env.action_spec.space.low, "high": env.action_spec.space.high},
        safe=True,
        return_log_prob=True,
    )
    data = env.rollout(4, actor)
    assert data["action"].shape == (4, 1)
    assert env.action_spec.is_in(data["action"])


def test_env_creator_state_dict_layout_matches_torchrl():
    from torchrl.envs import EnvCreator as TorchRLEnvCreator
    from torchrl.envs import TransformedEnv as TorchRLTransformedEnv
    from torchrl.envs import VecNorm as TorchRLVecNorm
    from torchrl.envs.libs.gym import GymEnv as TorchRLGymEnv

    from torchenv.transforms import TransformedEnv, VecNorm

    ours = EnvCreator(
        lambda: TransformedEnv(
            torchenv.make("builtin:Pendulum"), VecNorm(["observation"], new_api=False)
        )
    ).state_dict()
    theirs = TorchRLEnvCreator(
        lambda: TorchRLTransformedEnv(
            TorchRLGymEnv("Pendulum-v1"), TorchRLVecNorm(in_keys=["observation"])
        )
    ).state_dict()
    assert list(ours) == list(theirs) == ["_extra_state"]
    assert sorted(ours["_extra_state"]) == sorted(theirs["_extra_state"])
