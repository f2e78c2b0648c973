"""EnvBase.reset: the reference's "_reset" examples, partial resets, done after reset."""

import pytest
import torch
from _envs_mocks import CounterEnv, MarlEnv, StatelessEnv, ZeroResetEnv
from tensordict import TensorDict


# ----------------------------------------------------------------------------- reference examples
def test_reference_single_reset_at_the_root():
    env = ZeroResetEnv("root")
    data = TensorDict({"val": [1, 1], "_reset": [False, True]}, [])
    env.reset(data)
    assert data.get("val").tolist() == [1, 0]  # only the second value is 0
    assert "_reset" not in data


def test_reference_nested_resets():
    env = ZeroResetEnv("nested")
    data = TensorDict(
        {
            ("agent0", "val"): [1, 1],
            ("agent0", "_reset"): [False, True],
            ("agent1", "val"): [2, 2],
            ("agent1", "_reset"): [True, False],
        },
        [],
    )
    env.reset(data)
    assert data.get(("agent0", "val")).tolist() == [1, 0]
    assert data.get(("agent1", "val")).tolist() == [0, 2]
    assert ("agent0", "_reset") not in data.keys(True)
    assert ("agent1", "_reset") not in data.keys(True)


def test_reference_root_reset_overrides_nested():
    env = ZeroResetEnv("both")
    data = TensorDict(
        {
            "_reset": [True, True],
            ("agent0", "val"): [1, 1],
            ("agent0", "_reset"): [False, True],
            ("agent1", "val"): [2, 2],
            ("agent1", "_reset"): [True, False],
        },
        [],
    )
    env.reset(data)
    assert data.get(("agent0", "val")).tolist() == [0, 0]
    assert data.get(("agent1", "val")).tolist() == [0, 0]
    assert not any((k if isinstance(k, str) else k[-1]) == "_reset" for k in data.keys(True, True))


def test_reference_batched_reset_eliminates_reset_entry():
    env = CounterEnv(batch_size=(4,))
    tensordict = TensorDict({"_reset": [[True], [False], [True], [True]]}, [4])
    out = env.reset(tensordict)
    assert out is tensordict
    assert "_reset" not in out
    assert set(out.keys()) == {"observation", "done", "terminated"}
    assert out["done"].shape == torch.Size([4, 1])


# ----------------------------------------------------------------------------- partial resets
def test_partial_reset_keeps_previous_content_where_not_reset():
    env = CounterEnv(batch_size=(3,), max_count=10)
    td = env.reset()
    for _ in range(2):
        td = env.rand_step(td)
        td = env._step_mdp(td)
    assert td["observation"].squeeze(-1).tolist() == [2.0, 2.0, 2.0]
    td["_reset"] = torch.tensor([[False], [True], [False]])
    env.reset(td)
    assert td["observation"].squeeze(-1).tolist() == [2.0, 0.0, 2.0]
    assert "_reset" not in td


def test_partial_reset_pads_missing_entries_with_zeros():
    env = ZeroResetEnv("root")
    data = TensorDict({"_reset": [False, True], "extra": [5, 5]}, [])
    env.reset(data)
    # "extra" is not produced by _reset: kept where not reset, zero where reset
    assert data["extra"].tolist() == [5, 0]


def test_reset_without_input_returns_new_tensordict_without_reward():
    env = CounterEnv(batch_size=(2,))
    td = env.reset()
    assert td.batch_size == torch.Size([2])
    assert "reward" not in td
    assert not td["done"].any()


def test_reset_must_return_a_new_tensordict():
    env = CounterEnv()
    env._reset = lambda td=None, **kw: td
    with pytest.raises(RuntimeError, match="new tensordict"):
        env.reset(TensorDict())


def test_reset_must_return_a_tensordict():
    env = CounterEnv()
    env._reset = lambda td=None, **kw: {"observation": torch.zeros(1)}
    with pytest.raises(TypeError, match="TensorDict"):
        env.reset()


def test_done_after_reset_raises_unless_allowed():
    env = CounterEnv(max_count=0)
    with pytest.raises(RuntimeError, match="'done' is True after reset"):
        env.reset()
    env = CounterEnv(max_count=0, allow_done_after_reset=True)
    assert env.reset()["done"].all()


def test_done_after_partial_reset_checked_on_reset_dims_only():
    env = CounterEnv(batch_size=(2,), max_count=1)
    td = env.reset()
    td = env._step_mdp(env.rand_step(td))  # both done now
    assert td["done"].all()
    td["_reset"] = torch.tensor([[False], [True]])
    env.reset(td)  # element 0 is done but not reset: fine
    assert td["done"].squeeze(-1).tolist() == [True, False]
    env.max_count = 0  # from now on, a reset element is done right away
    td["_reset"] = torch.tensor([[True], [False]])
    with pytest.raises(RuntimeError, match="selected by '_reset'"):
        env.reset(td)


def test_reset_checks_batch_size():
    env = CounterEnv(batch_size=(2,))
    with pytest.raises(RuntimeError, match=r"batch_size \(2,\).*\(3,\)"):
        env.reset(TensorDict(batch_size=[3]))


def test_batch_unlocked_reset_takes_any_batch():
    env = StatelessEnv()
    td = env.reset(TensorDict(batch_size=[5]))
    assert td["observation"].shape == torch.Size([5, 1])


def test_marl_partial_reset_with_nested_done():
    env = MarlEnv(batch_size=(2,), n_agents=3, shared_done=False, max_count=1)
    td = env.reset()
    td = env._step_mdp(env.rand_step(td))
    assert td["agents", "done"].all()
    assert env.maybe_reset(td) is td
    assert not td["agents", "done"].any()
    assert ("agents", "_reset") not in td.keys(True)
    assert td["agents", "observation"].eq(0).all()


def test_reset_entries_echoed_by_reset_are_removed():
    # like the reference's AutoResettingGymEnv, whose _reset returns its input's copy
    env = ZeroResetEnv("nested")
    original = env._reset

    def echo(td=None, **kwargs):
        out = original(td)
        if td is not None:
            out.update(td.select(*env.reset_keys, strict=False))
        return out

    env._reset = echo
    data = TensorDict({("agent0", "_reset"): [True, True], ("agent1", "_reset"): [True, True]}, [])
    env.reset(data)
    assert not any((k if isinstance(k, str) else k[-1]) == "_reset" for k in data.keys(True, True))


def test_partial_reset_without_done_in_input_warns_and_keeps_done():
    env = CounterEnv(batch_size=(2,), max_count=1)
    env.reset()
    env.rand_step(env.reset())  # both sub-envs are now done in the env state
    data = TensorDict({"_reset": torch.tensor([[True], [False]])}, [2])
    with pytest.warns(UserWarning, match=r"lacks \['done', 'terminated'\]"):
        env.reset(data)
    # the non-reset element keeps the env's done value instead of a zero pad
    assert data["done"].squeeze(-1).tolist() == [False, True]


# ----------------------------------------------------------------------------- root "_reset" fast path
def _reset_both_ways(make_env, make_td):
    """Resets the same data through the fast root-"_reset" path and through the general one."""
    results = []
    for fast in (True, False):
        torch.manual_seed(0)
        env = make_env()
        td = make_td(env)
        env._plan.root_reset = fast
        try:
            results.append(env.reset(td))
        except RuntimeError as err:
            results.append(str(err))
    return results


def _assert_same(fast, general):
    if isinstance(general, str):
        assert fast == general
        return
    assert fast.batch_size == general.batch_size
    assert set(fast.keys(True, True)) == set(general.keys(True, True))
    for key in general.keys(True, True):
        assert fast[key].dtype == general[key].dtype, key
        assert torch.equal(fast[key], general[key]), key


@pytest.mark.parametrize(
    "mask",
    [
        [[True], [False], [True], [False], [False]],
        [[True]] * 5,
        [[False]] * 5,
        [True, False, False, True, True],  # batch-shaped mask
        None,
    ],
)
@pytest.mark.parametrize("extra", ["none", "extra_in_input", "obs_missing", "other_shape"])
def test_root_reset_fast_path_matches_general_path(mask, extra):
    def make_env():
        env = CounterEnv(batch_size=(5,), max_count=3)
        env.reset()
        for _ in range(2):
            env.rand_step(env.reset())
        return env

    def make_td(env):
        td = env._step_mdp(env.rand_step(env.reset()))
        td["observation"] = torch.arange(5.0).unsqueeze(-1) + 10
        if mask is not None:
            td["_reset"] = torch.tensor(mask)
        if extra == "extra_in_input":
            td["hidden"] = torch.ones(5, 2, 3, dtype=torch.int32)
        elif extra == "obs_missing":
            del td["observation"]
        elif extra == "other_shape":
            td["observation"] = torch.zeros(5, 2)
        return td

    assert make_env()._plan.root_reset
    _assert_same(*_reset_both_ways(make_env, make_td))


@pytest.mark.parametrize("allow", [True, False])
def test_root_reset_fast_path_done_after_reset(allow):
    def make_env():
        env = CounterEnv(batch_size=(3,), max_count=1, allow_done_after_reset=allow)
        return env

    def make_td(env):
        env.count = torch.ones(3, 1)  # every sub-env done, and done again right after a reset
        env.max_count = 0 if allow else 1
        td = TensorDict(
            {
                "observation": torch.ones(3, 1),
                "done": torch.ones(3, 1, dtype=torch.bool),
                "terminated": torch.ones(3, 1, dtype=torch.bool),
                "_reset": torch.tensor([[True], [False], [True]]),
            },
            [3],
        )
        return td

    fast, general = _reset_both_ways(make_env, make_td)
    _assert_same(fast, general)
    if allow:
        assert fast["done"].all()
    else:
        assert fast["observation"].squeeze(-1).tolist() == [0.0, 1.0, 0.0]


def test_root_reset_fast_path_done_after_reset_raises():
    env = CounterEnv(batch_size=(2,), max_count=1)
    td = env._step_mdp(env.rand_step(env.reset()))
    env.max_count = 0
    td["_reset"] = torch.tensor([[True], [False]])
    assert env._plan.root_reset
    with pytest.raises(RuntimeError, match="selected by '_reset'"):
        env.reset(td)


def test_root_reset_fast_path_reset_returning_input_memory():
    # an env that resets its observation buffer in place and hands it back: the fast path sees
    # the same memory on both sides and keeps it, with the values the general path computes
    class InPlaceEnv(CounterEnv):
        def _reset(self, tensordict=None, **kwargs):
            out = super()._reset(tensordict, **kwargs)
            if tensordict is not None and "observation" in tensordict:
                buffer = tensordict["observation"]
                buffer.copy_(out["observation"])
                out["observation"] = buffer
            return out

    def make_td(env):
        td = env._step_mdp(env.rand_step(env.reset()))
        td["_reset"] = torch.tensor([[True], [False], [True]])
        return td

    fast, general = _reset_both_ways(lambda: InPlaceEnv(batch_size=(3,), max_count=5), make_td)
    _assert_same(fast, general)
    assert fast["observation"].squeeze(-1).tolist() == [0.0, 1.0, 0.0]


@pytest.mark.parametrize("fast", [True, False])
def test_partial_reset_keeps_env_values_of_entries_missing_from_the_input(fast):
    """A reset input cut to its "_reset" entries (as maybe_reset passes it) lacks the
    observations: the rows not reset take the env's value, not a zero pad."""
    env = CounterEnv(batch_size=(3,), max_count=10)
    env.reset()
    env._plan.root_reset = fast
    td = env._step_mdp(env.rand_step(env.reset()))
    current = td["observation"].clone()
    assert current.tolist() == [[1.0]] * 3
    reset_input = TensorDict({"_reset": torch.tensor([[True], [False], [False]])}, (3,))
    out = env.reset(reset_input)
    assert out["observation"][0].tolist() == [0.0]  # reset row
    assert out["observation"][1:].tolist() == current[1:].tolist()  # not a zero pad
