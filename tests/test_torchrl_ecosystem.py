"""torchenv envs and specs inside TorchRL's collectors, modules, losses and wrappers.

Runs where torchrl is installed (the ``torchrl`` tox cell: ``tox -e torchrl``); skipped elsewhere.
Each test is the TorchRL user code of issue 19, with torchenv envs.
"""

from __future__ import annotations

import functools

import pytest
import torch

torchrl = pytest.importorskip("torchrl", reason="needs torchrl (tox -e torchrl)")

from tensordict.nn import TensorDictModule, TensorDictSequential  # noqa: E402
from torchrl.collectors import Collector, MultiSyncCollector  # noqa: E402
from torchrl.data import LazyTensorStorage, ReplayBuffer  # noqa: E402
from torchrl.modules import (  # noqa: E402
    MLP,
    NormalParamExtractor,
    ProbabilisticActor,
    QValueActor,
    QValueModule,
    TanhNormal,
    ValueOperator,
)
from torchrl.objectives import ClipPPOLoss, DQNLoss  # noqa: E402
from torchrl.objectives.value import GAE  # noqa: E402

import torchenv  # noqa: E402
from torchenv.interop import TorchRLFactory, from_torchrl, to_torchrl  # noqa: E402
from torchenv.transforms import RenameTransform, VecNorm  # noqa: E402

pytestmark = pytest.mark.torchrl

make_cartpole = functools.partial(torchenv.make, "builtin:CartPole")
make_pendulum = functools.partial(torchenv.make, "builtin:Pendulum")


def _q_actor(env):
    n = env.action_spec.space.n
    mlp = MLP(
        in_features=env.observation_spec["observation"].shape[-1], out_features=n, num_cells=[16]
    )
    return QValueActor(mlp, in_keys=["observation"], spec=env.action_spec)


def _collect(collector) -> list:
    try:
        return [batch.clone() for batch in collector]
    finally:
        collector.shutdown()


def test_envs_and_specs_pass_torchrl_isinstance_checks():
    env = make_cartpole()
    assert isinstance(env, torchrl.envs.EnvBase)
    assert isinstance(env.action_spec, torchrl.data.Categorical)
    assert isinstance(env.full_action_spec, torchrl.data.Composite)
    assert isinstance(torchenv.specs.OneHot(3), torchrl.data.OneHot)
    assert not isinstance(torchenv.specs.OneHot(3), torchrl.data.Categorical)


@pytest.mark.parametrize("action_space", ["spec", "one_hot_spec"])
def test_qvalue_actor_and_dqn_loss_take_our_specs(action_space):
    env = make_cartpole()
    spec = env.action_spec if action_space == "spec" else torchenv.specs.OneHot(2)
    mlp = MLP(in_features=4, out_features=2, num_cells=[16])
    value_net = TensorDictModule(mlp, in_keys=["observation"], out_keys=["action_value"])
    policy = TensorDictSequential(value_net, QValueModule(spec=spec))
    loss = DQNLoss(policy, action_space=spec)
    if action_space == "spec":
        data = env.rollout(8, policy)
        value = loss(data)["loss"]
        assert value.ndim == 0 and torch.isfinite(value)
    else:
        assert loss.action_space == "one_hot"


@pytest.mark.parametrize("how", ["instance", "factory"])
@pytest.mark.parametrize("policy", ["random", "qvalue"])
def test_collector_runs_our_env(how, policy):
    env = make_cartpole()
    actor = _q_actor(env) if policy == "qvalue" else None
    source = env if how == "instance" else make_cartpole
    batches = _collect(Collector(source, actor, frames_per_batch=40, total_frames=120))
    assert len(batches) == 3
    data = torch.cat(batches)
    assert data["action"].shape == (120,)
    done = data["next", "done"].squeeze(-1)
    # chaining: each next observation is the following root observation, unless an episode ended
    same = data["next", "observation"][:-1] == data["observation"][1:]
    assert same[~done[:-1]].all()


def test_multisync_collector_runs_our_env():
    collector = MultiSyncCollector(
        [make_cartpole, make_cartpole], None, frames_per_batch=40, total_frames=80
    )
    batches = _collect(collector)
    assert sum(b.numel() for b in batches) == 80


def test_probabilistic_actor_safe_and_ppo_with_gae():
    env = make_pendulum()
    obs_dim = env.observation_spec["observation"].shape[-1]
    net = torch.nn.Sequential(
        MLP(in_features=obs_dim, out_features=2, num_cells=[16]), NormalParamExtractor()
    )
    actor = ProbabilisticActor(
        TensorDictModule(net, in_keys=["observation"], out_keys=["loc", "scale"]),
        in_keys=["loc", "scale"],
        spec=env.full_action_spec,
        safe=True,
        distribution_class=TanhNormal,
        distribution_kwargs={"low": env.action_spec.space.low, "high": env.action_spec.space.high},
        return_log_prob=True,
    )
    value = ValueOperator(
        MLP(in_features=obs_dim, out_features=1, num_cells=[16]), in_keys=["observation"]
    )
    with torch.no_grad():
        data = env.rollout(16, actor)
    assert env.action_spec.is_in(data["action"])
    GAE(gamma=0.99, lmbda=0.95, value_network=value)(data)
    assert "advantage" in data.keys(True)
    losses = ClipPPOLoss(actor, value)(data)
    total = losses["loss_objective"] + losses["loss_critic"] + losses["loss_entropy"]
    total.backward()
    assert torch.isfinite(total)


def test_replay_buffer_with_our_transform():
    env = make_cartpole()
    rb = ReplayBuffer(
        storage=LazyTensorStorage(100),
        transform=RenameTransform(["observation"], ["obs"]),
    )
    rb.extend(env.rollout(10, break_when_any_done=False))
    sample = rb.sample(4)
    keys = set(sample.keys(True))
    assert "obs" in keys and "observation" not in keys


def test_torchrl_transformed_env_around_our_env():
    from torchrl.envs import StepCounter, TransformedEnv

    env = TransformedEnv(to_torchrl(make_cartpole()), StepCounter())
    data = env.rollout(5, break_when_any_done=False)
    assert data["next", "step_count"].flatten().tolist()[:3] == [1, 2, 3]


def test_torchrl_parallel_env_of_our_env():
    from torchrl.envs import ParallelEnv

    env = ParallelEnv(2, TorchRLFactory("builtin:CartPole"))
    try:
        data = env.rollout(5, break_when_any_done=False)
    finally:
        env.close()
    assert data.shape == (2, 5)


def test_torchrl_reward_sum_around_our_env_and_clear_error_inside_ours():
    from torchrl.envs import RewardSum, TransformedEnv

    env = TransformedEnv(to_torchrl(make_cartpole()), RewardSum())
    data = env.rollout(4, break_when_any_done=False)
    assert data["next", "episode_reward"].flatten().tolist() == [1.0, 2.0, 3.0, 4.0]
    with pytest.raises(TypeError, match="RewardSum is a TorchRL transform.*to_torchrl"):
        torchenv.TransformedEnv(make_cartpole(), RewardSum())


def test_from_torchrl_runs_a_torchrl_env_in_our_batched_env():
    from torchrl.envs import GymEnv

    pytest.importorskip("gymnasium")
    env = torchenv.SerialEnv(2, lambda: from_torchrl(GymEnv("Pendulum-v1")))
    try:
        data = env.rollout(3)
    finally:
        env.close()
    assert data.shape == (2, 3)
    assert isinstance(env.action_spec, torchenv.specs.Bounded)


def test_spec_round_trip_is_exact():
    from torchenv import specs as S
    from torchenv.interop import from_torchrl_spec, to_torchrl_spec

    cases = [
        S.Bounded(-1.0, 2.0, shape=(3,)),
        S.Unbounded((2,), dtype=torch.float64),
        S.Categorical(3, mask=torch.tensor([True, False, True])),
        S.OneHot(4),
        S.MultiOneHot([2, 3]),
        S.MultiCategorical([2, 3]),
        S.Binary(3),
        S.Composite(
            a=S.Unbounded((5, 1)),
            b=S.Composite(c=S.Categorical(2, shape=(5, 2)), shape=(5,)),
            shape=(5,),
        ),
        torch.stack([S.Unbounded((2,)), S.Unbounded((3,))], 0),
    ]
    for spec in cases:
        theirs = to_torchrl_spec(spec)
        assert type(theirs).__module__.startswith("torchrl.data")
        assert type(theirs).__name__ == type(spec).__name__
        assert theirs.shape == spec.shape
        if not isinstance(spec, S.Composite):
            assert theirs.dtype == spec.dtype
        assert from_torchrl_spec(theirs) == spec


@pytest.mark.gymnasium
@pytest.mark.parametrize(
    ("env_id", "kwargs"),
    [("CartPole-v1", {"max_episode_steps": 10}), ("CartPole-v1", {}), ("Pendulum-v1", {})],
)
def test_gym_env_hands_the_learner_what_torchrl_does(env_id, kwargs):
    """The guard of issue 19's learning-speed question: what a learner sees, entry by entry.

    Observation dtype and values, reward, done/terminated/truncated at the time limit, the reset
    observations and the chaining across resets: the same actions must give the same data as
    TorchRL's GymEnv. Both ``set_seed`` reset the env once (TorchRL's convention); our random
    actions draw from the env's generator seeded like ``torch.manual_seed(seed)``, TorchRL's from
    the global generator, which is seeded alike here.
    """
    pytest.importorskip("gymnasium")
    from torchrl.envs import GymEnv as TorchRLGymEnv

    from torchenv_gym import GymEnv

    theirs, ours = TorchRLGymEnv(env_id, **kwargs), GymEnv(env_id, **kwargs)
    theirs.set_seed(0)
    ours.set_seed(0)
    torch.manual_seed(0)
    expected = theirs.rollout(300, break_when_any_done=False)
    torch.manual_seed(1)  # ours draws from its own generator, seeded 0 by set_seed
    actual = ours.rollout(300, break_when_any_done=False)
    assert set(actual.keys(True, True)) == set(expected.keys(True, True))
    for key in expected.keys(True, True):
        assert actual[key].dtype == expected[key].dtype, key
        assert actual[key].shape == expected[key].shape, key
        torch.testing.assert_close(actual[key], expected[key], rtol=0, atol=0, msg=str(key))
    assert expected["next", "done"].any(), "the rollout must cross episode ends"


def test_registration_follows_import_order():
    """torchrl imported after torchenv, or before it: both register (fresh interpreters)."""
    import subprocess
    import sys

    check = (
        "import torchrl.envs, torchrl.data; "
        "env = torchenv.make('builtin:CartPole'); "
        "assert isinstance(env, torchrl.envs.EnvBase); "
        "assert isinstance(env.action_spec, torchrl.data.Categorical)"
    )
    for code in (f"import torchenv; {check}", f"import torchrl; import torchenv; {check}"):
        result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        assert result.returncode == 0, result.stderr[-2000:]


def test_vecnorm_loads_torchrl_state_dict():
    from torchrl.envs import TransformedEnv as TorchRLTransformedEnv
    from torchrl.envs import VecNorm as TorchRLVecNorm

    theirs = TorchRLTransformedEnv(
        to_torchrl(make_cartpole()), TorchRLVecNorm(in_keys=["observation"])
    )
    theirs.rollout(5)
    ours = VecNorm(in_keys=["observation"])
    ours.load_state_dict(theirs.transform.state_dict())
    expected = theirs.transform.state_dict()["_extra_state"]
    assert torch.equal(
        ours.state_dict()["_extra_state"]["observation_sum"], expected["observation_sum"]
    )


@pytest.mark.parametrize(
    "kwargs",
    [{"decay": 0.9}, {"decay": 1.0}, {"decay": 0.99, "reduce_batch_dims": True}],
)
def test_vecnormv2_gives_torchrl_s_numbers_and_state_dict(kwargs):
    from tensordict import TensorDict
    from torchrl.envs import VecNormV2 as TorchRLVecNormV2

    from torchenv.transforms import VecNormV2

    generator = torch.Generator().manual_seed(0)
    xs = torch.randn(6, 2, 3, generator=generator) * 3 + 1
    theirs = TorchRLVecNormV2(in_keys=["obs"], out_keys=["obs_norm"], **kwargs)
    ours = VecNormV2(in_keys=["obs"], out_keys=["obs_norm"], **kwargs)
    for x in xs:
        td = TensorDict(obs=x, batch_size=[2])
        # TorchRL's VecNormV2 runs only inside an env (its forward raises): call its step
        expected = theirs._step(td.clone(), td.clone())["obs_norm"]
        torch.testing.assert_close(ours(td.clone())["obs_norm"], expected, rtol=0, atol=0)
    state = theirs.state_dict()
    assert list(ours.state_dict()) == list(state)
    assert list(ours.state_dict()["_extra_state"]) == list(state["_extra_state"])
    fresh = VecNormV2(in_keys=["obs"], out_keys=["obs_norm"], **kwargs)
    fresh.load_state_dict(state)
    torch.testing.assert_close(fresh.loc["obs"], theirs.loc["obs"])
    torch.testing.assert_close(fresh.scale["obs"], theirs.scale["obs"])


@pytest.mark.parametrize("stateful", [True, False])
def test_vecnormv2_in_an_env_matches_torchrl_s_in_its_env(stateful):
    from torchrl.envs import TransformedEnv as TorchRLTransformedEnv
    from torchrl.envs import VecNormV2 as TorchRLVecNormV2

    from torchenv.envs import PendulumEnv
    from torchenv.transforms import TransformedEnv, VecNormV2

    kwargs = dict(in_keys=["observation"], out_keys=["obs_norm"], stateful=stateful, decay=0.9)
    mine, yours = PendulumEnv(), PendulumEnv()
    mine.set_seed(0)
    yours.set_seed(0)
    ours = TransformedEnv(mine, VecNormV2(**kwargs))
    theirs = TorchRLTransformedEnv(to_torchrl(yours), TorchRLVecNormV2(**kwargs))
    assert set(ours.observation_spec.keys(True, True)) == set(
        theirs.observation_spec.keys(True, True)
    )

    def zero_torque(td):
        return td.set("action", torch.zeros(*td.shape, 1))

    got = ours.rollout(4, zero_torque)
    expected = theirs.rollout(4, zero_torque)
    torch.testing.assert_close(got["observation"], expected["observation"])
    for key in ["obs_norm", ("next", "obs_norm")]:
        torch.testing.assert_close(got[key], expected[key], rtol=0, atol=0)
    if not stateful:
        for name in ("_vecnorm_loc", "_vecnorm_var", "_vecnorm_count"):
            torch.testing.assert_close(
                got["next", name].to_dict(), expected["next", name].to_dict()
            )
