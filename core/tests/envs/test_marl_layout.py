"""MarlLayout: group map -> nested specs, per-agent values <-> group tensors."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from tensordict import LazyStackedTensorDict

from torchenv.envs import MarlGroupMapType, MarlLayout
from torchenv.specs import (
    Bounded,
    Categorical,
    Composite,
    MultiCategorical,
    OneHot,
    StackedComposite,
    Unbounded,
)

AGENTS = ["agent_0", "agent_1", "adversary_0"]


def _layout(batch=(), **kwargs):
    kwargs.setdefault("observation_specs", {a: Unbounded((3,)) for a in AGENTS})
    kwargs.setdefault("action_specs", {a: Categorical(4) for a in AGENTS})
    return MarlLayout(AGENTS, kwargs.pop("group_map", None), batch_size=batch, **kwargs)


def _in_spec(spec, td):
    return spec.is_in(td.select(*spec.keys(True, True)))


# ---------------------------------------------------------------------- specs
def test_default_grouping_and_shapes():
    layout = _layout(batch=(5,))
    assert layout.group_map == {"agent": ["agent_0", "agent_1"], "adversary": ["adversary_0"]}
    assert layout.groups == ["agent", "adversary"] and layout.n_agents == 3
    assert layout.agent_group == {
        "agent_0": ("agent", 0),
        "agent_1": ("agent", 1),
        "adversary_0": ("adversary", 0),
    }
    obs, act = layout.full_observation_spec, layout.full_action_spec
    assert obs.shape == (5,) and obs["agent"].shape == (5, 2)
    assert obs["agent", "observation"].shape == (5, 2, 3)
    assert obs["adversary", "observation"].shape == (5, 1, 3)
    assert act["agent", "action"].shape == (5, 2)
    assert layout.full_reward_spec["agent", "reward"].shape == (5, 2, 1)
    assert layout.full_reward_spec["agent", "reward"].dtype == torch.float32
    done = layout.full_done_spec
    for key in ("done", "terminated", "truncated"):
        assert done[key].shape == (5, 1) and done[key].dtype == torch.bool
        assert done["agent", key].shape == (5, 2, 1)
        assert done["adversary", key].shape == (5, 1, 1)
    assert layout.heterogeneous == {"agent": False, "adversary": False}


@pytest.mark.parametrize(
    "group_map, expected",
    [
        (MarlGroupMapType.ALL_IN_ONE_GROUP, {"agents": AGENTS}),
        (MarlGroupMapType.ONE_GROUP_PER_AGENT, {a: [a] for a in AGENTS}),
        ({"team": ["adversary_0", "agent_1"], "solo": ["agent_0"]}, None),
    ],
)
def test_group_map_kinds(group_map, expected):
    layout = _layout(group_map=group_map)
    assert layout.group_map == (expected or group_map)
    assert set(layout.full_observation_spec.keys()) == set(layout.group_map)


def test_heterogeneous_group_is_lazily_stacked():
    obs = {"agent_0": Unbounded((3,)), "agent_1": Unbounded((3,)), "adversary_0": Unbounded((7,))}
    layout = _layout(batch=(2,), observation_specs=obs, group_map=MarlGroupMapType.ALL_IN_ONE_GROUP)
    assert layout.heterogeneous == {"agents": True}
    spec = layout.full_observation_spec["agents"]
    assert isinstance(spec, StackedComposite)
    assert spec.shape == (2, 3)
    assert spec["observation"].shape == (2, 3, -1)


def test_optional_entries():
    layout = _layout(
        batch=(2,),
        info_specs={a: Composite(dist=Unbounded((1,))) for a in AGENTS},
        action_mask=True,
        agent_mask=True,
        state_spec=Unbounded((6,)),
        truncated=False,
    )
    obs = layout.full_observation_spec
    assert obs["agent", "info", "dist"].shape == (2, 2, 1)
    assert obs["agent", "action_mask"].shape == (2, 2, 4)
    assert obs["agent", "action_mask"].dtype == torch.bool
    assert obs["agent", "mask"].shape == (2, 2)
    assert obs["state"].shape == (2, 6)
    assert "truncated" not in layout.full_done_spec.keys(True)
    assert layout.action_mask_keys() == [
        (("agent", "action"), ("agent", "action_mask")),
        (("adversary", "action"), ("adversary", "action_mask")),
    ]


@pytest.mark.parametrize(
    "action, mask_shape",
    [(Categorical(4), (4,)), (OneHot(5), (5,)), (MultiCategorical([2, 3]), (5,))],
)
def test_action_mask_shape_follows_one_hot(action, mask_shape):
    layout = _layout(action_specs={a: action for a in AGENTS}, action_mask=True)
    assert layout.full_observation_spec["agent", "action_mask"].shape == (2, *mask_shape)


@pytest.mark.parametrize(
    "done, group_keys", [("per_agent", True), ("shared", True), ("root", False)]
)
def test_done_layouts_keys(done, group_keys):
    layout = _layout(done=done)
    keys = set(layout.full_done_spec.keys(True, True))
    assert {"done", "terminated", "truncated"} <= keys
    assert (("agent", "done") in keys) is group_keys


def test_device_moves_specs():
    layout = _layout(device="cpu")
    assert layout.full_observation_spec["agent", "observation"].device == torch.device("cpu")


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"observation_specs": {"agent_0": Unbounded((3,))}}, ValueError, "no spec for the agents"),
        (
            {"action_specs": {**{a: Categorical(2) for a in AGENTS}, "ghost": Categorical(2)}},
            ValueError,
            "unknown agents",
        ),
        (
            {"action_specs": {a: Bounded(-1, 1, (2,)) for a in AGENTS}, "action_mask": True},
            TypeError,
            "discrete action spec",
        ),
        ({"done": "sometimes"}, ValueError, "done must be one of"),
        ({"group_map": {"team": ["agent_0"]}}, ValueError, "'agent_1' is in no group"),
        (
            {"action_specs": {a: Composite(x=Categorical(2)) for a in AGENTS}},
            TypeError,
            "Composite actions",
        ),
        ({"observation_specs": [Unbounded(3)]}, TypeError, "must be a dict"),
    ],
)
def test_bad_construction(kwargs, error, match):
    with pytest.raises(error, match=match):
        _layout(**kwargs)


# ---------------------------------------------------------------------- outputs: torch
def test_output_torch_stacks_and_reshapes():
    layout = _layout(
        batch=(4,),
        done="root",
        truncated=False,
        info_specs={a: Composite(dist=Unbounded((1,))) for a in AGENTS},
    )
    obs = [torch.randn(4, 3) for _ in AGENTS]
    rew = [torch.randn(4) for _ in AGENTS]  # VMAS gives (num_envs,) rewards
    info = [{"dist": torch.arange(4, dtype=torch.float64)} for _ in AGENTS]
    done = torch.tensor([False, True, False, False])
    td = layout.output({"observation": obs, "reward": rew, "info": info}, {"done": done})
    assert td.batch_size == (4,) and td["agent"].batch_size == (4, 2)
    torch.testing.assert_close(td["agent", "observation"], torch.stack(obs[:2], 1))
    torch.testing.assert_close(td["adversary", "observation"][:, 0], obs[2])
    torch.testing.assert_close(td["agent", "reward"][..., 0], torch.stack(rew[:2], 1))
    assert td["agent", "info", "dist"].dtype == torch.float32
    assert td["done"].flatten().tolist() == done.tolist()
    assert td["terminated"].flatten().tolist() == done.tolist()
    assert ("agent", "done") not in td.keys(True)
    for spec in (layout.full_observation_spec, layout.full_reward_spec, layout.full_done_spec):
        assert _in_spec(spec, td)


def test_output_torch_follows_agent_order_of_custom_groups():
    layout = _layout(
        group_map={"team": ["adversary_0", "agent_0"], "solo": ["agent_1"]}, done="root"
    )
    obs = [torch.full((3,), float(i)) for i in range(3)]
    td = layout.output({"observation": obs}, {"done": False})
    assert td["team", "observation"][:, 0].tolist() == [2.0, 0.0]
    assert td["solo", "observation"][:, 0].tolist() == [1.0]


def test_output_torch_bad_shape_names_key():
    layout = _layout(batch=(4,), done="root")
    with pytest.raises(ValueError, match=r"\('observation',\).*expected \(4, 3\)"):
        layout.output(
            {"observation": [torch.zeros(4, 2)] * 3}, {"done": torch.zeros(4, dtype=torch.bool)}
        )


def test_output_wrong_number_of_values():
    with pytest.raises(ValueError, match="expected one per agent"):
        _layout(done="root").output({"observation": [torch.zeros(3)]}, {"done": False})


def test_output_heterogeneous_torch():
    obs = {"agent_0": Unbounded((3,)), "agent_1": Unbounded((2,)), "adversary_0": Unbounded((3,))}
    layout = _layout(batch=(2,), observation_specs=obs, done="shared")
    values = [torch.randn(2, 3), torch.randn(2, 2), torch.randn(2, 3)]
    td = layout.output(
        {"observation": values, "reward": [torch.zeros(2)] * 3},
        {"done": torch.tensor([True, False])},
    )
    group = td["agent"]
    assert isinstance(group, LazyStackedTensorDict) and group.batch_size == (2, 2)
    torch.testing.assert_close(group.tensordicts[1]["observation"], values[1])
    assert group.tensordicts[0]["done"].flatten().tolist() == [True, False]
    assert _in_spec(layout.full_observation_spec, td)
    assert _in_spec(layout.full_done_spec, td)


# ---------------------------------------------------------------------- outputs: numpy
def test_output_numpy_fills_missing_agents():
    layout = _layout(action_mask=True, agent_mask=True)
    td = layout.output(
        {
            "observation": {"agent_0": np.array([1.0, 2.0, 3.0]), "adversary_0": np.ones(3)},
            "reward": {"agent_0": 1.5, "adversary_0": -1.0},
            "terminated": {"agent_0": False, "adversary_0": False},
            "truncated": {"agent_0": False, "adversary_0": True},
            "action_mask": {"agent_0": np.array([1, 0, 1, 0], dtype=np.int8)},
        },
        acting=["agent_0", "adversary_0"],
    )
    assert td["agent", "observation"].tolist() == [[1.0, 2.0, 3.0], [0.0, 0.0, 0.0]]
    assert td["agent", "reward"].flatten().tolist() == [1.5, 0.0]
    assert td["agent", "done"].flatten().tolist() == [False, True]  # agent_1 left
    assert td["agent", "terminated"].flatten().tolist() == [False, True]
    assert td["adversary", "done"].flatten().tolist() == [True]  # truncated
    assert td["agent", "action_mask"].tolist() == [[True, False, True, False], [True] * 4]
    assert td["agent", "mask"].tolist() == [True, False]
    assert td["done"].tolist() == [True] and td["truncated"].tolist() == [True]
    assert td["terminated"].tolist() == [True]
    for spec in (layout.full_observation_spec, layout.full_reward_spec, layout.full_done_spec):
        assert _in_spec(spec, td)


def test_output_numpy_done_on_all():
    layout = _layout(done_on_any=False, truncated=False)
    term = {"agent_0": True, "agent_1": False, "adversary_0": True}
    assert layout.output({"terminated": term})["done"].tolist() == [False]
    term["agent_1"] = True
    td = layout.output({"terminated": term})
    assert td["done"].tolist() == [True] and td["terminated"].tolist() == [True]


def test_output_numpy_done_only_derives_terminated():
    layout = _layout()
    td = layout.output({"done": {a: a == "agent_1" for a in AGENTS}})
    assert td["agent", "terminated"].flatten().tolist() == [False, True]
    assert td["agent", "truncated"].flatten().tolist() == [False, False]


def test_output_numpy_composite_observation_and_state():
    obs = {a: Composite(pos=Unbounded((2,)), id=Categorical(3, shape=(1,))) for a in AGENTS}
    layout = _layout(observation_specs=obs, state_spec=Unbounded((2, 2)))
    td = layout.output(
        {"observation": {"agent_1": {"pos": [1.0, 2.0], "id": [2]}}, "done": {}},
        {"state": np.eye(2)},
    )
    assert td["agent", "observation", "pos"].tolist() == [[0.0, 0.0], [1.0, 2.0]]
    assert td["agent", "observation", "id"].tolist() == [[0], [2]]
    assert td["state"].tolist() == [[1.0, 0.0], [0.0, 1.0]]


def test_output_numpy_heterogeneous():
    obs = {"agent_0": Unbounded((3,)), "agent_1": Unbounded((2,)), "adversary_0": Unbounded((3,))}
    layout = _layout(observation_specs=obs)
    td = layout.output(
        {"observation": {"agent_1": np.array([5.0, 6.0])}, "terminated": {a: False for a in AGENTS}}
    )
    group = td["agent"]
    assert group.tensordicts[0]["observation"].tolist() == [0.0, 0.0, 0.0]
    assert group.tensordicts[1]["observation"].tolist() == [5.0, 6.0]
    assert group.tensordicts[1]["observation"].dtype == torch.float32
    assert _in_spec(layout.full_observation_spec, td)


def test_output_numpy_bad_value_names_agent_and_key():
    layout = _layout()
    with pytest.raises(ValueError, match=r"agent 'agent_1', key \('observation',\)"):
        layout.output({"observation": {"agent_1": np.zeros(5)}, "done": {}})


@pytest.mark.parametrize(
    "per_agent, root, match",
    [
        ({"observation": {"ghost": 1}}, None, "unknown agents"),
        ({"observation": {}}, None, "needs per-agent 'terminated'"),
        ({"done": {}}, {"state": 1}, "unknown root key 'state'"),
        ({"action_mask": {}}, None, "no entry 'action_mask'"),
        ({("agent", "observation"): {}}, None, "per-agent keys are flat"),
    ],
)
def test_output_bad_keys(per_agent, root, match):
    with pytest.raises(KeyError, match=match):
        _layout().output(per_agent, root)


def test_output_shared_and_root_need_root_done():
    with pytest.raises(KeyError, match="needs root"):
        _layout(done="shared").output({"observation": {}})


# ---------------------------------------------------------------------- actions
def test_split_actions_torch_are_views_in_agent_order():
    layout = _layout(
        batch=(3,), group_map={"team": ["adversary_0", "agent_0"], "solo": ["agent_1"]}
    )
    td = layout.full_action_spec.rand()
    actions = layout.split_actions(td)
    assert [a.shape for a in actions] == [(3,)] * 3
    torch.testing.assert_close(actions[0], td["team", "action"][:, 1])
    torch.testing.assert_close(actions[2], td["team", "action"][:, 0])
    torch.testing.assert_close(actions[1], td["solo", "action"][:, 0])
    assert actions[0].data_ptr() == td["team", "action"][:, 1].data_ptr()


def test_split_actions_numpy_and_categorical():
    layout = _layout(action_specs={a: OneHot(3) for a in AGENTS})
    td = layout.full_action_spec.zero()
    td["agent", "action"][1, 2] = 1
    td["adversary", "action"][0, 1] = 1
    td["agent", "action"][0, 0] = 1
    out = layout.split_actions(td, numpy=True, categorical=True)
    assert out == {"agent_0": 0, "agent_1": 2, "adversary_0": 1}
    assert all(isinstance(v, np.integer) for v in out.values())
    one_hot = layout.split_actions(td, numpy=True)
    assert one_hot["agent_1"].tolist() == [0, 0, 1]
    assert layout.agent_action(td, "adversary_0", numpy=True, categorical=True) == 1
    with pytest.raises(KeyError, match="unknown agent 'ghost'"):
        layout.agent_action(td, "ghost")


def test_split_actions_heterogeneous():
    act = {
        "agent_0": Bounded(-1, 1, (2,)),
        "agent_1": Bounded(-1, 1, (3,)),
        "adversary_0": Bounded(-1, 1, (2,)),
    }
    layout = _layout(batch=(2,), action_specs=act)
    assert layout.heterogeneous["agent"]
    td = layout.full_action_spec.rand()
    actions = layout.split_actions(td)
    assert [tuple(a.shape) for a in actions] == [(2, 2), (2, 3), (2, 2)]
    numpy_actions = layout.split_actions(td, numpy=True)
    np.testing.assert_array_equal(numpy_actions["agent_1"], actions[1].numpy())


def test_set_specs_on_env():
    from torchenv.envs import EnvBase

    class _Env(EnvBase):
        def _reset(self, td=None, **kw):  # pragma: no cover - not called
            raise NotImplementedError

        _step = _reset

        def _set_seed(self, seed):  # pragma: no cover
            return seed

    env = _Env(batch_size=(2,))
    layout = _layout(batch=(2,))
    layout.set_specs(env)
    assert sorted(env.action_keys) == [("adversary", "action"), ("agent", "action")]
    assert set(env.done_keys) >= {"done", ("agent", "done"), ("adversary", "truncated")}
    assert env.full_observation_spec is not layout.full_observation_spec


# ---------------------------------------------------------------------- additions
def test_action_mask_on_some_groups_only():
    act = {
        "agent_0": Categorical(3),
        "agent_1": Categorical(3),
        "adversary_0": Bounded(-1, 1, (2,)),
    }
    layout = _layout(action_specs=act, action_mask=["agent"])
    keys = set(layout.full_observation_spec.keys(True, True))
    assert ("agent", "action_mask") in keys and ("adversary", "action_mask") not in keys
    assert layout.action_mask_keys() == [(("agent", "action"), ("agent", "action_mask"))]
    with pytest.raises(ValueError, match=r"unknown groups \['ghost'\]"):
        _layout(action_mask=["ghost"])


def test_agent_mask_values_per_sub_env():
    layout = _layout(batch=(2,), agent_mask=True, done="root")
    alive = [torch.tensor([True, False]), torch.tensor([True, True]), torch.tensor([False, True])]
    td = layout.output({"mask": alive}, {"done": torch.zeros(2, dtype=torch.bool)})
    assert td["agent", "mask"].tolist() == [[True, True], [False, True]]
    assert td["adversary", "mask"].tolist() == [[False], [True]]
    td = layout.output({}, {"done": torch.zeros(2, dtype=torch.bool)}, acting=["agent_1"])
    assert td["agent", "mask"].tolist() == [[False, True], [False, True]]


def test_reset_rows():
    from tensordict import TensorDict

    layout = _layout(batch=(3,))
    assert layout.reset_rows(None).tolist() == [True] * 3
    assert layout.reset_rows(TensorDict({}, batch_size=(3,))).tolist() == [True] * 3
    only_agents = TensorDict({"agent": {"_reset": torch.ones(3, 2, 1, dtype=torch.bool)}}, (3,))
    assert layout.reset_rows(only_agents).tolist() == [False] * 3
    root = TensorDict({"_reset": torch.tensor([[False], [True], [False]])}, (3,))
    assert layout.reset_rows(root).tolist() == [False, True, False]


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_layout_keeps_data_on_device():
    layout = _layout(batch=(4,), device="cuda", agent_mask=True, action_mask=True)
    cuda = torch.device("cuda", torch.cuda.current_device())
    obs = [torch.randn(4, 3, device="cuda") for _ in AGENTS]
    masks = {a: np.ones((4, 4), dtype=bool) for a in AGENTS}  # numpy path, moved once per group
    td = layout.output(
        {
            "observation": obs,
            "action_mask": masks,
            "done": [torch.zeros(4, 1, dtype=torch.bool, device="cuda")] * 3,
        }
    )
    for key in td.keys(True, True):
        assert td.get(key).device == cuda, key
    assert _in_spec(layout.full_observation_spec, td)
    actions = layout.split_actions(layout.full_action_spec.rand(), numpy=True)
    assert set(actions) == set(AGENTS)


def test_update_action_spec_masks_keeps_random_actions_legal():
    from _marl_mocks import MarlMockEnv

    for spec_masks, legal in ((True, True), (False, False)):
        env = MarlMockEnv(batch_size=(4,), spec_masks=spec_masks)
        env.set_seed(0)
        torch.manual_seed(0)
        data = env.rollout(20, break_when_any_done=False)
        rewards = torch.cat([data["next", g, "reward"].flatten() for g in ("walker", "scout")])
        assert bool((rewards != -1).all()) is legal  # a forbidden move costs -1


def test_shared_reward_layout():
    layout = _layout(batch=(2,), reward="shared", done="root")
    spec = layout.full_reward_spec
    assert list(spec.keys(True, True)) == ["reward"] and spec["reward"].shape == (2, 1)
    td = layout.output(
        {"observation": [torch.zeros(2, 3)] * 3},
        {"reward": torch.tensor([1.0, 2.0]), "done": torch.zeros(2, dtype=torch.bool)},
    )
    assert td["reward"].tolist() == [[1.0], [2.0]]
    assert ("agent", "reward") not in td.keys(True)
    assert _in_spec(layout.full_reward_spec, td)
    with pytest.raises(KeyError, match="no entry 'reward'"):
        layout.output({"reward": [torch.zeros(2)] * 3}, {"done": False})
    with pytest.raises(ValueError, match="pass no reward_specs"):
        _layout(reward="shared", reward_specs={a: Unbounded((1,)) for a in AGENTS})
    with pytest.raises(ValueError, match="reward must be one of"):
        _layout(reward="team")
    with pytest.raises(KeyError, match=r"unknown root key 'reward'"):
        _layout(done="root").output({}, {"done": False, "reward": 1.0})


def test_group_named_like_a_root_entry_is_refused():
    with pytest.raises(ValueError, match="a group named 'done' clashes"):
        _layout(group_map={"done": AGENTS})


# ------------------------------------------------- the fast paths agree with the general one
def _general(layout):
    """The same layout with its fast paths off (the agent-by-agent conversions)."""
    layout._flag_groups = None
    layout._flat_actions = False
    return layout


def _all_present():
    rng = np.random.default_rng(0)
    return {
        "observation": {a: rng.normal(size=3) for a in AGENTS},  # float64 -> float32
        "reward": {"agent_0": 1.5, "agent_1": np.float32(-2.0), "adversary_0": np.array([0.5])},
        "terminated": {"agent_0": False, "agent_1": np.bool_(True), "adversary_0": False},
        "truncated": {"agent_0": False, "agent_1": False, "adversary_0": np.array([True])},
    }


@pytest.mark.parametrize("done_on_any", [True, False])
@pytest.mark.parametrize("drop", [None, "agent_1"])
def test_output_fast_numpy_path_equals_general_path(done_on_any, drop):
    values = _all_present()
    if drop is not None:  # an agent that left: the general path fills it
        values = {k: {a: v for a, v in d.items() if a != drop} for k, d in values.items()}
    fast = _layout(done_on_any=done_on_any).output(values)
    slow = _general(_layout(done_on_any=done_on_any)).output(values)
    assert (fast == slow).all()
    for key in fast.keys(True, True):
        assert fast[key].dtype == slow[key].dtype and fast[key].shape == slow[key].shape


def test_output_fast_flags_values():
    layout = _layout(done_on_any=False)
    term = {"agent_0": True, "agent_1": False, "adversary_0": True}
    trunc = {"agent_0": False, "agent_1": True, "adversary_0": False}
    td = layout.output({"terminated": term, "truncated": trunc})
    assert td["agent", "done"].flatten().tolist() == [True, True]
    assert td["agent", "truncated"].flatten().tolist() == [False, True]
    # every agent done, one cut short: the root is truncated, not terminated
    assert (td["done"].item(), td["terminated"].item(), td["truncated"].item()) == (
        True,
        False,
        True,
    )
    trunc["agent_1"] = False
    td = layout.output({"terminated": term, "truncated": trunc})
    assert td["done"].tolist() == [False] and td["agent", "done"].flatten().tolist() == [
        True,
        False,
    ]


def test_output_fast_path_copies_the_inputs():
    layout = _layout()
    obs = {a: np.zeros(3, dtype=np.float32) for a in AGENTS}
    flags = {a: False for a in AGENTS}
    first = layout.output({"observation": obs, "terminated": flags, "truncated": flags})
    second = layout.output({"observation": obs, "terminated": flags, "truncated": flags})
    obs["agent_0"][:] = 7.0  # the simulator reusing its buffer must not reach the outputs
    assert first["agent", "observation"].abs().sum() == 0
    assert first["agent", "observation"].data_ptr() != second["agent", "observation"].data_ptr()
    first["agent", "done"][0] = True  # nor one output another's, nor one flag another
    assert not second["agent", "done"].any() and not first["agent", "terminated"].any()


@pytest.mark.parametrize(
    "value, match",
    [
        (np.zeros((1, 3)), None),  # a leading singleton dim: reshaped, as item writes do
        (np.zeros((1, 3, 1)), r"agent 'agent_0', key \('observation',\)"),
        (np.zeros(5), r"agent 'agent_0', key \('observation',\)"),
        (np.zeros((3, 3)), r"agent 'agent_0', key \('observation',\)"),
    ],
)
def test_output_fast_path_shapes(value, match):
    layout = _layout()
    obs = {a: value for a in AGENTS}  # every agent alike: the one-array path is tried
    flags = {a: False for a in AGENTS}
    if match is None:
        td = layout.output({"observation": obs, "terminated": flags, "truncated": flags})
        assert td["agent", "observation"].shape == (2, 3)
        return
    with pytest.raises(ValueError, match=match):
        layout.output({"observation": obs, "terminated": flags, "truncated": flags})


def test_output_fast_flags_refuse_unknown_agents_and_odd_values():
    layout = _layout()
    with pytest.raises(KeyError, match="unknown agents"):
        layout.output({"terminated": {"ghost": True}, "truncated": {}})
    with pytest.raises(ValueError, match="agent 'agent_0'"):
        layout.output({"terminated": {"agent_0": np.ones(2, bool)}, "truncated": {}})


@pytest.mark.parametrize("requires_grad", [False, True])
def test_split_actions_numpy_fast_path_equals_general_path(requires_grad):
    layout = _layout(action_specs={a: OneHot(3) for a in AGENTS})
    td = layout.full_action_spec.rand()
    if requires_grad:
        td["agent", "action"] = td["agent", "action"].float().requires_grad_()
    fast = layout.split_actions(td, numpy=True, categorical=True)
    slow = _general(_layout(action_specs={a: OneHot(3) for a in AGENTS})).split_actions(
        td, numpy=True, categorical=True
    )
    assert list(fast) == AGENTS and fast == slow
