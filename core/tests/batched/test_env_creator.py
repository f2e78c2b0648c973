"""EnvCreator: picklable factories whose envs share their tensor state."""

from __future__ import annotations

import pickle

import pytest
import torch

from torchenv.batched import EnvCreator, ParallelEnv, SerialEnv


def test_creator_of_a_lambda_pickles_and_builds(noise_env_cls):
    creator = EnvCreator(lambda: noise_env_cls(obs_dim=2))
    clone = pickle.loads(pickle.dumps(creator))
    env = clone()
    assert isinstance(env, noise_env_cls)
    assert env.reset()["obs"].shape == torch.Size([2])
    assert creator.meta_data["batch_size"] == torch.Size([])
    assert creator.meta_data["output_spec"]["full_observation_spec"]["obs"].shape == (2,)


def test_creator_kwargs_and_variant(noise_env_cls):
    creator = EnvCreator(noise_env_cls, {"obs_dim": 4})
    assert creator().obs_dim == 4
    # creator kwargs take precedence over call-time kwargs
    assert creator(obs_dim=2).obs_dim == 4
    variant = creator.make_variant(scale=3.0)
    assert variant().scale == 3.0
    assert variant().obs_dim == 4
    assert "scale" not in creator.create_env_kwargs


def test_envs_of_a_creator_share_their_buffers(noise_env_cls):
    creator = EnvCreator(noise_env_cls)
    a, b = creator(), creator()
    a.bump(2.0)
    assert float(b.stat) == 2.0
    assert float(creator.state_dict()["stat"]) == 2.0
    creator.load_state_dict({"stat": torch.zeros(1)})
    assert float(a.stat) == 0.0


@pytest.mark.parallel
def test_state_shared_across_worker_processes(noise_env_cls):
    creator = EnvCreator(noise_env_cls)
    env = ParallelEnv(2, creator)
    env.reset()
    env.bump(1.5)  # each worker adds 1.5 to the one shared buffer
    assert env.stat == [torch.tensor([3.0]), torch.tensor([3.0])]
    assert float(creator.state_dict()["stat"]) == 3.0
    env.close()


def test_creator_metadata_used_without_building_an_env(noise_env_cls):
    built = []

    def make():
        built.append(1)
        return noise_env_cls()

    creator = EnvCreator(make)
    assert len(built) == 1  # the shadow env
    env = SerialEnv(2, creator)
    assert len(built) == 1  # specs came from the creator's meta-data
    env.reset()
    assert len(built) == 3
    env.close()


def test_unshared_creator(noise_env_cls):
    creator = EnvCreator(noise_env_cls, share_memory=False)
    a, b = creator(), creator()
    a.bump(1.0)
    assert float(b.stat) == 0.0


def _vecnorm_pendulum():
    from torchenv.envs import PendulumEnv
    from torchenv.transforms import TransformedEnv, VecNorm

    return TransformedEnv(PendulumEnv(), VecNorm(in_keys=["observation"], decay=1.0))


@pytest.mark.parametrize("batched", ["serial", "parallel"])
def test_vecnorm_statistics_are_shared_through_env_creator(batched):
    """VecNorm creates its statistics when the specs are first built: the envs made by an
    EnvCreator must still point them at the shared storage, so every worker updates one set."""
    creator = EnvCreator(_vecnorm_pendulum)
    stats = creator.state_dict()["_extra_state"]  # TorchRL's layout
    cls = SerialEnv if batched == "serial" else ParallelEnv
    env = cls(2, creator)
    try:
        env.rollout(5, break_when_any_done=False)
        # 2 sub-envs x (reset + 5 steps) observations, all counted in the one shared buffer
        count = float(stats["observation_count"])
        if batched == "serial":
            assert count == 12.0
        else:  # workers update concurrently, without a lock (as in TorchRL): one may be lost
            assert 6.0 < count <= 12.0
    finally:
        env.close()


def test_state_dict_has_torchrl_layout_and_loads_back():
    """TorchRL's envs tutorial reads ``creator.state_dict()["_extra_state"]`` (issue 37)."""
    creator = EnvCreator(_vecnorm_pendulum)
    state = creator.state_dict()
    assert list(state) == ["_extra_state"]
    extra = state["_extra_state"]
    assert sorted(extra) == ["observation_count", "observation_ssq", "observation_sum"]
    creator.load_state_dict({"_extra_state": {"observation_count": torch.tensor(7.0)}})
    assert float(creator.state_dict()["_extra_state"]["observation_count"]) == 7.0
    env = creator()  # made envs share the loaded statistics
    counts = [b for n, b in env.named_buffers() if n.endswith("_vn_observation_count")]
    assert [float(c) for c in counts] == [7.0]
    with pytest.raises(KeyError, match="unknown entry 'nope'"):
        creator.load_state_dict({"nope": torch.zeros(1)})
