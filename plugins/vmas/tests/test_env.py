"""VmasEnv / VmasWrapper against VMAS itself: specs, keys, seeding, equality with raw VMAS."""

from __future__ import annotations

import pytest
import torch

vmas = pytest.importorskip("vmas")

from tensordict import TensorDict  # noqa: E402

from torchenv.envs import MarlGroupMapType, check_env_specs  # noqa: E402
from torchenv.specs import Bounded, Categorical, OneHot  # noqa: E402
from torchenv_vmas import VmasEnv, VmasWrapper  # noqa: E402

pytestmark = pytest.mark.vmas


def _actions(env, steps, seed=123):
    """Fixed random actions (one TensorDict per step) drawn from their own generator."""
    gen = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(steps):
        td = TensorDict(batch_size=env.batch_size)
        for group in env.group_map:
            spec = env.full_action_spec[group, "action"]
            if isinstance(spec, Bounded):
                low, high = spec.space.low, spec.space.high
                value = low + (high - low) * torch.rand(spec.shape, generator=gen)
            else:
                value = torch.randint(0, spec.space.n, spec.shape, generator=gen)
            td[group, "action"] = value
        out.append(td)
    return out


def _drive_ours(env, actions):
    obs, rew, done = [env.reset()["agents", "observation"]], [], []
    for action in actions:
        td = env.step(action.clone())
        nxt = td["next"]
        obs.append(nxt["agents", "observation"])
        rew.append(nxt["agents", "reward"])
        done.append(nxt["done"])
    return torch.stack(obs), torch.stack(rew), torch.stack(done)


def _drive_raw(raw, actions):
    """The same actions sent to VMAS directly (agent i's action is [:, i])."""
    obs = [torch.stack(raw.reset(), 1)]
    rew, done = [], []
    for action in actions:
        o, r, term, trunc, _ = raw.step(list(action["agents", "action"].unbind(1)))
        obs.append(torch.stack(o, 1))
        rew.append(torch.stack(r, 1).unsqueeze(-1))
        done.append((term | trunc).unsqueeze(-1))
    return torch.stack(obs), torch.stack(rew), torch.stack(done)


@pytest.mark.parametrize("scenario", ["balance", "navigation"])
def test_same_as_driving_vmas_directly(scenario):
    kwargs = {"num_envs": 6, "seed": 7, "max_steps": 10}
    ours = VmasEnv(scenario, **kwargs)
    actions = _actions(ours, 14)
    got = _drive_ours(ours, actions)
    raw = vmas.make_env(scenario, terminated_truncated=True, **kwargs)
    want = _drive_raw(raw, actions)
    for a, b in zip(got, want, strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=0)
    assert got[2][9].all() and not got[2][:9].any(), "max_steps=10 ends every sub-env at step 10"


def test_same_seed_same_trajectory_and_seeds_differ():
    def run(seed):
        env = VmasEnv("navigation", num_envs=4, seed=seed)
        env.set_seed(seed)
        return _drive_ours(env, _actions(env, 5))[0]

    torch.testing.assert_close(run(1), run(1), rtol=0, atol=0)
    assert not torch.equal(run(1), run(2))


def test_envs_have_their_own_random_stream():
    """Interleaving two envs (and a raw VMAS env) changes nobody's trajectory, whether VMAS
    keeps one random state for all its envs (>= 1.5.1) or uses the global generators."""
    alone = VmasEnv("navigation", num_envs=4, seed=5)
    first = [alone.reset()["agents", "observation"] for _ in range(3)]
    a = VmasEnv("navigation", num_envs=4, seed=5)
    b = VmasEnv("navigation", num_envs=4, seed=9)
    raw = vmas.make_env("navigation", num_envs=4, seed=5)
    raw_first = [torch.stack(raw.reset(), 1) for _ in range(1)]
    got = []
    for _ in range(3):
        b.reset()
        got.append(a.reset()["agents", "observation"])
    torch.testing.assert_close(torch.stack(got), torch.stack(first), rtol=0, atol=0)
    torch.testing.assert_close(raw_first[0], first[0], rtol=0, atol=0)


def test_torchrl_layout_and_attributes():
    env = VmasEnv("balance", num_envs=5, n_agents=2, seed=0)
    assert env.group_map == {"agents": ["agent_0", "agent_1"]}
    assert env.agent_names == ["agent_0", "agent_1"] and env.n_agents == 2 and env.num_envs == 5
    assert env.full_action_spec["agents"].shape == (5, 2)
    assert env.full_action_spec["agents", "action"].shape == (5, 2, 2)
    obs_spec = env.full_observation_spec
    assert set(obs_spec["agents", "info"].keys()) == {"pos_rew", "ground_rew"}
    assert obs_spec["agents", "info", "pos_rew"].shape == (5, 2, 1)
    assert env.full_reward_spec["agents", "reward"].shape == (5, 2, 1)
    assert set(env.done_keys) == {"done", "terminated", "truncated"}
    td = env.rollout(3)
    assert td["next", "agents", "info", "pos_rew"].dtype == torch.float32
    assert td["next", "agents", "reward"].shape == (5, 3, 2, 1)
    check_env_specs(env)
    assert "VmasEnv(num_envs=5, n_agents=2" in repr(env) and "scenario=balance" in repr(env)


def test_group_maps():
    env = VmasEnv("simple_adversary", num_envs=2, continuous_actions=False)
    assert env.group_map == {"adversary": ["adversary_0"], "agent": ["agent_0", "agent_1"]}
    assert isinstance(env.full_action_spec["agent", "action"], Categorical)
    per_agent = VmasEnv(
        "navigation", num_envs=2, n_agents=2, group_map=MarlGroupMapType.ONE_GROUP_PER_AGENT
    )
    assert set(per_agent.group_map) == {"agent_0", "agent_1"}
    custom = VmasEnv(
        "navigation",
        num_envs=2,
        n_agents=3,
        group_map={"a": ["agent_2", "agent_0"], "b": ["agent_1"]},
    )
    td = custom.rollout(2)
    assert td["a", "observation"].shape[:3] == (2, 2, 2)
    with pytest.raises(ValueError, match="agent_1"):
        VmasEnv("navigation", num_envs=2, n_agents=2, group_map={"a": ["agent_0"]})


def test_custom_group_order_reaches_the_right_agents():
    """Actions of a reordered group go to the agents they are written for."""
    env = VmasEnv(
        "navigation", num_envs=3, n_agents=2, seed=0, group_map={"g": ["agent_1", "agent_0"]}
    )
    raw = vmas.make_env("navigation", num_envs=3, n_agents=2, seed=0, terminated_truncated=True)
    env.reset()
    raw.reset()
    action = torch.rand(3, 2, 2) * 2 - 1
    td = env.step(TensorDict({"g": {"action": action}}, batch_size=[3]))
    obs, *_ = raw.step([action[:, 1], action[:, 0]])
    torch.testing.assert_close(td["next", "g", "observation"][:, 0], obs[1], rtol=0, atol=0)


def test_one_hot_actions_are_sent_as_indices():
    env = VmasEnv(
        "navigation",
        num_envs=3,
        n_agents=2,
        seed=0,
        continuous_actions=False,
        categorical_actions=False,
    )
    spec = env.full_action_spec["agents", "action"]
    assert isinstance(spec, OneHot) and spec.shape == (3, 2, 9)
    raw = vmas.make_env(
        "navigation",
        num_envs=3,
        n_agents=2,
        seed=0,
        continuous_actions=False,
        terminated_truncated=True,
    )
    env.reset()
    raw.reset()
    index = torch.tensor([[1, 8], [2, 3], [0, 5]])
    td = env.step(
        TensorDict({"agents": {"action": torch.nn.functional.one_hot(index, 9)}}, batch_size=[3])
    )
    obs, *_ = raw.step(list(index.unbind(1)))
    torch.testing.assert_close(td["next", "agents", "observation"], torch.stack(obs, 1))


def test_wrapper_without_terminated_truncated_has_torchrl_done_keys():
    raw = vmas.make_env("balance", num_envs=2, max_steps=3)
    env = VmasWrapper(raw)
    assert set(env.done_keys) == {"done", "terminated"}
    td = env.rollout(5, break_when_any_done=False)
    assert td["next", "done"][:, 2].all()
    assert torch.equal(td["next", "done"], td["next", "terminated"])


def test_wrapper_dict_spaces():
    raw = vmas.make_env("navigation", num_envs=2, n_agents=2, dict_spaces=True, seed=0)
    env = VmasWrapper(raw)
    assert env.rollout(3)["next", "agents", "observation"].shape == (2, 3, 2, 18)


def test_bad_input_is_reported_clearly():
    with pytest.raises(ValueError, match="unknown scenario 'balanse'"):
        VmasEnv("balanse", num_envs=2)
    with pytest.raises(ValueError, match="num_envs must be a positive int, got 0"):
        VmasEnv("balance", num_envs=0)
    with pytest.raises(TypeError, match="must be a vmas Environment"):
        VmasWrapper(object())
    raw = vmas.make_env("balance", num_envs=2)
    with pytest.raises(TypeError, match="differs from the VMAS env's device"):
        VmasWrapper(raw, device="meta")
    with pytest.raises(NotImplementedError, match="PixelRenderTransform"):
        VmasWrapper(raw, from_pixels=True)
    env = VmasEnv("balance", num_envs=2)
    with pytest.raises(Exception, match="action"):
        env.step(env.reset())


def test_device_cpu_explicit_and_to_same_device():
    env = VmasEnv("balance", num_envs=3, device="cpu", seed=0)
    assert env.device == torch.device("cpu") and env.base_vmas_env.device == torch.device("cpu")
    assert env.full_observation_spec["agents", "observation"].device == torch.device("cpu")
    assert env.to("cpu") is env
    assert env.rollout(2)["next", "agents", "observation"].device == torch.device("cpu")


@pytest.mark.skipif(
    not torch.cuda.is_available(), reason="device='cuda' needs a CUDA GPU (none here)"
)
def test_cuda():
    env = VmasEnv("balance", num_envs=32, device="cuda", seed=0)
    assert env.device.type == "cuda"
    td = env.rollout(5)
    assert td["next", "agents", "observation"].device.type == "cuda"
    check_env_specs(env)
    moved = VmasEnv("balance", num_envs=4, seed=0).to("cuda")
    assert moved.base_vmas_env.device.type == "cuda"
    assert moved.rollout(3)["next", "agents", "reward"].device.type == "cuda"
    check_env_specs(moved)


def test_terminated_and_truncated_are_vmas_own_flags():
    """balance ends on its own (pushed sideways, the package falls: ``terminated``) before
    ``max_steps`` (``truncated``): both flags equal VMAS's, step by step; ``done`` is either."""
    kwargs = {"num_envs": 16, "seed": 0, "max_steps": 45}
    ours = VmasEnv("balance", **kwargs)
    raw = vmas.make_env("balance", terminated_truncated=True, **kwargs)
    push = torch.tensor([1.0, 0.0]).expand(16, ours.n_agents, 2).clone()
    ours.reset()
    raw.reset()
    got, want = [], []
    for _ in range(45):
        action = TensorDict({"agents": {"action": push}}, batch_size=[16])
        nxt = ours.step(action)["next"]
        got.append(torch.stack([nxt["terminated"], nxt["truncated"], nxt["done"]]))
        _, _, term, trunc, _ = raw.step(list(push.unbind(1)))
        want.append(torch.stack([term, trunc, term | trunc]).unsqueeze(-1))
    got, want = torch.stack(got), torch.stack(want)
    torch.testing.assert_close(got, want, rtol=0, atol=0)
    terminated, truncated = got[:, 0], got[:, 1]
    assert terminated[:44].any(), "the package falls in some sub-env before the horizon"
    assert not terminated.all(), "and not in all of them"
    assert not truncated[:44].any() and truncated[44].all(), "max_steps=45 truncates at step 45"


@pytest.mark.parametrize("scenario", ["balance", "discovery"])
def test_info_per_group_equals_the_scenario_info(scenario):
    """With one group per agent, each group carries its own agent's ``info`` entries."""
    env = VmasEnv(scenario, num_envs=3, seed=0, group_map=MarlGroupMapType.ONE_GROUP_PER_AGENT)
    raw = vmas.make_env(scenario, num_envs=3, seed=0, terminated_truncated=True)
    td = env.reset()
    raw.reset()
    action = env.full_action_spec.zero()
    nxt = env.step(td.update(action))["next"]
    _, _, _, _, infos = raw.step([action[n, "action"][:, 0] for n in env.agent_names])
    assert set(env.group_map) == set(env.agent_names)
    for name, info in zip(env.agent_names, infos, strict=True):
        assert set(nxt[name, "info"].keys()) == set(info)
        for key, value in info.items():
            got = nxt[name, "info", key][:, 0]
            torch.testing.assert_close(got, value.reshape(got.shape).float(), rtol=0, atol=0)


@pytest.mark.parametrize("scenario", ["navigation", "het_mass"])
def test_global_generators_are_left_alone(scenario):
    """Making, seeding, resetting and stepping our env neither reads nor moves the process's
    torch / numpy / random streams (VMAS >= 1.5.1 isolates its draws; before, we do).
    het_mass draws from numpy's global generator on reset."""
    import random

    import numpy as np

    env = VmasEnv(scenario, num_envs=3, seed=0)
    torch.manual_seed(11)
    np.random.seed(11)
    random.seed(11)
    env.set_seed(4)
    td = env.reset()
    for action in _actions(env, 4):  # drawn from their own generator
        td = env.step(td.update(action))["next"]
    env.reset()
    draws = (torch.rand(3), np.random.rand(3), random.random())
    torch.manual_seed(11)
    np.random.seed(11)
    random.seed(11)
    torch.testing.assert_close(draws[0], torch.rand(3), rtol=0, atol=0)
    assert (draws[1] == np.random.rand(3)).all() and draws[2] == random.random()
