"""Direct array I/O of parallel PettingZoo envs: rollouts and ``step_and_maybe_reset`` write
PettingZoo's dicts straight into the step's arrays, with the data of the TensorDict path."""

from __future__ import annotations

import pytest
import torch

pytest.importorskip("pettingzoo")

from leaving_envs import LeavingAEC, LeavingParallel

from torchenv.envs._direct import direct_plan
from torchenv.testing import assert_tensordict_equal
from torchenv_pettingzoo import PettingZooEnv, PettingZooWrapper, task_names

pytestmark = pytest.mark.pettingzoo

needs_mpe = pytest.mark.skipif(
    "mpe/simple_spread_v3" not in task_names(), reason="MPE is not installed (mpe2 from 1.26)"
)


def _spread(**kwargs):
    return PettingZooEnv("mpe/simple_spread_v3", parallel=True, seed=0, max_cycles=25, **kwargs)


def _leaving(**kwargs):
    return PettingZooWrapper(LeavingParallel(infos=False), use_mask=True, seed=0, **kwargs)


MAKERS = {
    "spread": lambda: _spread(),
    "spread-one-hot": lambda: _spread(categorical_actions=False),
    "spread-continuous": lambda: _spread(continuous_actions=True),
    "spread-state-mask": lambda: _spread(return_state=True, use_mask=True),
    "spread-done-on-all": lambda: _spread(done_on_any=False),
    "leaving-done-on-any": lambda: _leaving(),
    "leaving-done-on-all": lambda: _leaving(done_on_any=False, return_state=True),
}
SPREAD_MAKERS = [name for name in MAKERS if name.startswith("spread")]


def _params(names):
    return [
        pytest.param(name, marks=needs_mpe) if name.startswith("spread") else name for name in names
    ]


def _no_direct(env):
    env._direct_io_supported = lambda: False
    return env


@pytest.mark.parametrize("name", _params(MAKERS))
def test_the_direct_path_applies(name):
    plan = direct_plan(MAKERS[name]())
    assert plan is not None and not plan.flat


@pytest.mark.parametrize("break_when_any_done", [False, True])
@pytest.mark.parametrize("name", _params(MAKERS))
def test_rollout_equals_the_tensordict_path(name, break_when_any_done):
    results = []
    for env in (MAKERS[name](), _no_direct(MAKERS[name]())):
        torch.manual_seed(0)
        results.append(env.rollout(30, break_when_any_done=break_when_any_done))
    assert_tensordict_equal(*results)
    if not break_when_any_done:
        assert results[0]["next", "done"].any(), "an episode ended inside the rollout"


@pytest.mark.parametrize("name", _params(MAKERS))
def test_step_and_maybe_reset_equals_the_tensordict_path(name):
    runs = []
    for env in (MAKERS[name](), _no_direct(MAKERS[name]())):
        torch.manual_seed(0)
        td, steps = env.reset(), []
        for _ in range(30):
            step, td = env.step_and_maybe_reset(env.rand_action(td))
            steps.append((step.clone(), td.clone()))
        runs.append(steps)
    for (step_a, next_a), (step_b, next_b) in zip(*runs):
        assert_tensordict_equal(step_a, step_b)
        assert_tensordict_equal(next_a, next_b)


def test_a_policy_loop_takes_the_direct_path():
    env = _leaving()
    calls = []
    step_into = env._step_into
    env._step_into = lambda action, out: calls.append(1) or step_into(action, out)

    def policy(td):
        td["runner", "action"] = (td["runner", "observation"][..., 0] < 0).long() * 2
        return td

    data = env.rollout(12, policy, break_when_any_done=False)
    assert len(calls) == 11  # the last step needs no next input: a plain env.step
    assert data["next", "done"].any()


def test_a_reset_of_agents_only_returns_the_last_direct_step():
    """done_on_any=False: an agent that left sets its group's flags, not the root's; a reset of
    that group only (what ``maybe_reset`` asks) hands back the last step, written by the direct
    path, and leaves the episode going."""
    env = _leaving(done_on_any=False)
    td = env.reset()
    for _ in range(3):  # runner_0 leaves at step 3
        step, td = env.step_and_maybe_reset(env.rand_action(td))
    nxt = step["next"]
    assert nxt["runner", "done"][0].item() and not nxt["done"].item()
    request = td.clone()
    request.set(("runner", "_reset"), nxt["runner", "done"].clone())
    out = env.reset(request)
    for key in (("runner", "observation"), ("runner", "mask"), ("runner", "done")):
        assert torch.equal(out[key], nxt[key]), key
    assert env.agents == ["runner_1", "runner_2"]


@pytest.mark.parametrize(
    "make",
    [
        lambda: PettingZooWrapper(LeavingParallel(), use_mask=True),  # infos
        lambda: PettingZooWrapper(LeavingAEC(), use_mask=True),  # turn-based, masks
        pytest.param(
            lambda: _spread(
                group_map={"team": ["agent_0", "agent_1"], "solo": ["agent_2"]},
                run_type_checks=True,
            ),
            marks=needs_mpe,
        ),
    ],
    ids=["infos", "aec", "type-checks"],
)
def test_other_configurations_keep_the_tensordict_path(make):
    env = make()
    assert direct_plan(env) is None
    env.rollout(5, break_when_any_done=False)


@needs_mpe
def test_several_groups_take_the_direct_path():
    groups = {"team": ["agent_0", "agent_1"], "solo": ["agent_2"]}
    env, reference = _spread(group_map=groups), _no_direct(_spread(group_map=groups))
    plan = direct_plan(env)
    assert plan is not None and set(plan.action_keys) == {("team", "action"), ("solo", "action")}
    results = []
    for e in (env, reference):
        torch.manual_seed(0)
        results.append(e.rollout(30, break_when_any_done=False))
    assert_tensordict_equal(*results)
