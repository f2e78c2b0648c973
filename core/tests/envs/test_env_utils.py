"""check_env_specs, terminated_or_truncated, make_composite_from_td, RandomPolicy."""

import pytest
import torch
from _envs_mocks import CounterEnv, DynamicSpecEnv, MarlEnv, StatelessEnv
from tensordict import LazyStackedTensorDict, TensorDict

from torchenv.envs import (
    RandomPolicy,
    check_env_specs,
    make_composite_from_td,
    terminated_or_truncated,
)
from torchenv.specs import Bounded, Categorical, Composite, Unbounded


# ----------------------------------------------------------------------------- check_env_specs
@pytest.mark.parametrize(
    "make",
    [
        lambda: CounterEnv(),
        lambda: CounterEnv(batch_size=(3,), max_count=2),
        lambda: MarlEnv(),
        lambda: MarlEnv(shared_done=False),
        lambda: StatelessEnv(),
    ],
)
def test_check_env_specs_passes_on_consistent_envs(make):
    check_env_specs(make(), seed=0)
    check_env_specs(make(), break_when_any_done="both")


def test_check_env_specs_dynamic_specs():
    check_env_specs(DynamicSpecEnv(), return_contiguous=False)


def test_check_env_specs_names_a_missing_key():
    env = CounterEnv()
    original = env._step

    def step_with_extra(td):
        out = original(td)
        out["surprise"] = torch.zeros(1)
        return out

    env._step = step_with_extra
    with pytest.raises(
        AssertionError, match=r"in the data but not in the specs: \[\"\('next', 'surprise'\)\"\]"
    ):
        check_env_specs(env)


def test_check_env_specs_names_dtype_mismatch():
    env = CounterEnv()
    original = env._step

    def step_double(td):
        out = original(td)
        out["observation"] = out["observation"].double()
        return out

    env._step = step_double
    with pytest.raises(AssertionError, match=r"(?s)\('next', 'observation'\).*float64.*float32"):
        check_env_specs(env)


def test_check_env_specs_names_out_of_spec_value():
    env = CounterEnv()
    env.observation_spec = Composite(observation=Bounded(0.0, 1.5, shape=(1,)))
    with pytest.raises(
        AssertionError, match=r"(?s)\('next', 'observation'\) is out of its spec.*BoundedContinuous"
    ):
        check_env_specs(env)


def test_check_env_specs_rejects_reward_at_reset():
    env = CounterEnv()
    original = env._reset

    def reset_with_reward(td=None, **kw):
        return original(td).set("reward", torch.zeros(1))

    env._reset = reset_with_reward
    with pytest.raises(AssertionError, match="reward"):
        check_env_specs(env)


# ----------------------------------------------------------------------------- terminated_or_truncated
def test_terminated_or_truncated_with_spec_writes_per_level():
    spec = Composite(
        done=Categorical(2, shape=(1,), dtype=torch.bool),
        truncated=Categorical(2, shape=(1,), dtype=torch.bool),
        nested=Composite(
            done=Categorical(2, shape=(1,), dtype=torch.bool),
            truncated=Categorical(2, shape=(1,), dtype=torch.bool),
        ),
    )
    data = TensorDict(
        {"done": [True], "truncated": [False], "nested": {"done": [False], "truncated": [True]}}, []
    )
    assert terminated_or_truncated(data, spec)
    assert data["_reset"].tolist() == [True]
    assert data["nested", "_reset"].tolist() == [True]


def test_terminated_or_truncated_without_spec_and_custom_key():
    data = TensorDict(
        {"terminated": [[False], [True]], "agents": {"truncated": [[[False]], [[False]]]}}, [2]
    )
    assert terminated_or_truncated(data, key="_done_any")
    assert data["_done_any"].squeeze(-1).tolist() == [False, True]
    assert data["agents", "_done_any"].flatten().tolist() == [False, False]


def test_terminated_or_truncated_all_false_removes_keys_unless_asked():
    data = TensorDict({"done": [False], "terminated": [False]}, [])
    assert not terminated_or_truncated(data)
    assert "_reset" not in data
    assert not terminated_or_truncated(data, write_full_false=True)
    assert data["_reset"].tolist() == [False]


def test_terminated_or_truncated_key_none_writes_nothing():
    data = TensorDict({"done": [True]}, [])
    assert terminated_or_truncated(data, key=None)
    assert set(data.keys()) == {"done"}


# ----------------------------------------------------------------------------- make_composite_from_td
def test_make_composite_from_td_nested_and_null_shapes():
    td = TensorDict(
        {
            "obs": torch.zeros(3, 4),
            "scalar": torch.zeros(3, dtype=torch.int64),
            "nested": {"x": torch.zeros(3, 2)},
        },
        [3],
    )
    spec = make_composite_from_td(td)
    assert spec.shape == torch.Size([3])
    assert isinstance(spec["obs"], Unbounded) and spec["obs"].shape == torch.Size([3, 4])
    assert spec["scalar"].dtype == torch.int64
    assert spec["nested", "x"].shape == torch.Size([3, 2])
    assert spec.is_in(td)
    scalar_td = TensorDict({"s": torch.tensor(1.0)}, [])
    assert make_composite_from_td(scalar_td)["s"].shape == torch.Size([1])
    assert make_composite_from_td(scalar_td, unsqueeze_null_shapes=False)["s"].shape == torch.Size(
        []
    )


def test_make_composite_from_td_dynamic_shape():
    td = LazyStackedTensorDict.lazy_stack(
        [TensorDict({"obs": torch.zeros(2, 3)}), TensorDict({"obs": torch.zeros(4, 3)})], 0
    )
    spec = make_composite_from_td(td, dynamic_shape=True)
    assert spec["obs"].shape == torch.Size([2, -1, 3])


# ----------------------------------------------------------------------------- RandomPolicy
def test_random_policy_leaf_and_composite():
    spec = Bounded(-1.0, 1.0, shape=(3,))
    td = RandomPolicy(spec)(TensorDict())
    assert spec.is_in(td["action"])
    composite = Composite(agents=Composite(action=Bounded(0.0, 1.0, shape=(2,))))
    td = RandomPolicy(composite)(TensorDict())
    assert composite.is_in(td)
    env = CounterEnv()
    r = env.rollout(3, RandomPolicy(env.action_spec))
    assert env.action_spec.is_in(r["action"][0])


def test_check_env_specs_method():
    env = CounterEnv()
    env.check_env_specs(seed=1)


# ------------------------------------------------------------------ any_set (any_done's first look)
@pytest.mark.parametrize(
    "where, shape",
    [("done", (1,)), (("agents", "terminated"), (3, 1)), (("agents", "truncated"), (100, 1))],
)
def test_any_set_finds_a_flag_at_any_level(where, shape):
    from torchenv.envs._utils import any_set

    td = TensorDict(
        {
            "done": torch.zeros(1, dtype=torch.bool),
            "agents": TensorDict(
                {
                    "terminated": torch.zeros(3, 1, dtype=torch.bool),
                    "truncated": torch.zeros(100, 1, dtype=torch.bool),
                },
                batch_size=(),
            ),
        },
        batch_size=(),
    )
    keys = ["done", ("agents", "terminated"), ("agents", "truncated"), ("missing", "done")]
    assert not any_set(td, keys)
    flag = torch.zeros(shape, dtype=torch.bool)
    flag.view(-1)[-1] = True  # the last element, past what a first-row check would see
    td.set(where, flag)
    assert any_set(td, keys)


@pytest.mark.parametrize("shape", [(), (1,), (5,), (3, 1), (2, 4), (2, 3, 1), (65,), (70, 1)])
@pytest.mark.parametrize("where", ["none", "first", "last"])
def test_any_small_agrees_with_torch_any(shape, where):
    from torchenv.envs._utils import _any_small

    value = torch.zeros(shape, dtype=torch.bool)
    if where != "none":
        value.view(-1)[0 if where == "first" else -1] = True
    assert _any_small(value) is bool(value.any())
    assert _any_small(value.to(torch.uint8)) is bool(value.any())


def test_any_done_on_nested_flags_writes_reset_only_when_set():
    env = MarlEnv(shared_done=False)
    td = env.reset()
    nxt = env.step(env.rand_action(td))["next"]
    for key in env.done_keys:
        nxt.set(key, torch.zeros_like(nxt.get(key)))
    assert not env.any_done(nxt)
    assert not any(
        k[-1] == "_reset" if isinstance(k, tuple) else k == "_reset" for k in nxt.keys(True)
    )
    group_key = next(k for k in env.done_keys if isinstance(k, tuple))
    flag = nxt.get(group_key).clone()
    flag.view(-1)[-1] = True
    nxt.set(group_key, flag)
    assert env.any_done(nxt)
    assert nxt.get((*group_key[:-1], "_reset")).view(-1)[-1]
