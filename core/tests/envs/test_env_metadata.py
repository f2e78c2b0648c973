"""EnvMetaData: a picklable summary of an env."""

import pickle

import torch
from _envs_mocks import CounterEnv, DynamicSpecEnv, MarlEnv

from torchenv.envs import EnvMetaData


def test_metadata_from_env_holds_structure_and_reset_keys():
    env = MarlEnv(batch_size=(3,), shared_done=False)
    meta = EnvMetaData.metadata_from_env(env)
    assert meta.batch_size == torch.Size([3])
    assert meta.batch_locked
    assert not meta.has_dynamic_specs
    td = meta.tensordict
    assert ("agents", "_reset") in td.keys(True, True)
    assert ("next", "agents", "observation") in td.keys(True, True)
    assert meta.specs["output_spec", "full_observation_spec", "agents", "observation"].shape == (
        torch.Size([3, 2, 3])
    )
    assert set(meta.device_map) == set(td.keys(True, True))
    assert "MarlEnv" in meta.env_str


def test_metadata_expand_index_clone_to_and_pickle():
    meta = EnvMetaData.metadata_from_env(CounterEnv())
    expanded = meta.expand(4)
    assert expanded.batch_size == torch.Size([4])
    assert expanded.tensordict.batch_size == torch.Size([4])
    assert expanded.specs.shape == torch.Size([4])
    first = expanded[0]
    assert first.batch_size == torch.Size([])
    clone = meta.clone()
    clone._tensordict["observation"] += 1
    assert meta.tensordict["observation"].eq(0).all()
    moved = meta.to("cpu")
    assert moved.device == torch.device("cpu")
    assert moved.tensordict.device == torch.device("cpu")
    restored = pickle.loads(pickle.dumps(meta))
    assert restored.batch_size == meta.batch_size
    assert set(restored.tensordict.keys(True, True)) == set(meta.tensordict.keys(True, True))


def test_metadata_dynamic_specs():
    assert EnvMetaData.metadata_from_env(DynamicSpecEnv()).has_dynamic_specs
