"""Direct array I/O with ``(group, name)`` keys (multi-agent groups): the same data as the
TensorDict path, bit for bit, in ``rollout`` and ``step_and_maybe_reset``, and its fallbacks."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from tensordict import TensorDict

from torchenv.batched import SerialEnv
from torchenv.envs import EnvBase
from torchenv.envs._direct import direct_plan
from torchenv.specs import Bounded, Categorical, Composite, Unbounded
from torchenv.testing import MultiAgentConformanceTests, assert_tensordict_equal

GROUPS = {"cats": 2, "dogs": 1}
FLAGS = ("done", "terminated", "truncated")


class HerdTD(EnvBase):
    """Two groups of agents on a plane (``cats`` move continuously, ``dogs`` by steps), with
    per-agent rewards and done flags; an agent leaving the square ends its sub-env's episode,
    and episodes are cut at a random horizon. TensorDict path only."""

    def __init__(self, batch_size=(), **kwargs):
        super().__init__(batch_size=batch_size, **kwargs)
        bs = self.bs = tuple(self.batch_size)

        def groups(make):
            return Composite(
                {g: Composite(make(g, n), shape=(*bs, n)) for g, n in GROUPS.items()}, shape=bs
            )

        self.full_observation_spec = groups(
            lambda g, n: {
                "position": Unbounded((*bs, n, 2)),
                "age": Unbounded((*bs, n, 1), dtype=torch.int64),
            }
        )
        self.full_action_spec = groups(
            lambda g, n: {
                "action": Bounded(-1.0, 1.0, (*bs, n, 2))
                if g == "cats"
                else Categorical(3, shape=(*bs, n))
            }
        )
        self.full_reward_spec = groups(lambda g, n: {"reward": Unbounded((*bs, n, 1))})
        flag = Categorical(2, shape=(*bs, 1), dtype=torch.bool)
        done = groups(
            lambda g, n: {k: Categorical(2, shape=(*bs, n, 1), dtype=torch.bool) for k in FLAGS}
        )
        for k in FLAGS:
            done[k] = flag.clone()
        self.full_done_spec = done
        self._set_seed(0)
        self.pos = {g: np.zeros((*bs, n, 2), np.float32) for g, n in GROUPS.items()}
        self.age = np.zeros((*bs, 1, 1), np.int64)
        self.horizon = np.zeros((*bs, 1, 1), np.int64)

    def _set_seed(self, seed):
        self.rng = np.random.RandomState(seed)  # the steps' noise
        self.reset_rng = np.random.RandomState(seed + 1)  # the resets' draws

    # the simulator (numpy in, numpy out); every call draws the same amount of randomness
    def _restart(self, mask):
        rng = self.reset_rng
        fresh = {g: rng.uniform(-0.5, 0.5, p.shape).astype(np.float32) for g, p in self.pos.items()}
        horizon = rng.randint(3, 9, self.horizon.shape)
        rows = (...,) if mask is None else mask
        for g, p in self.pos.items():
            p[rows] = fresh[g][rows]
        self.age[rows] = 0
        self.horizon[rows] = horizon[rows]

    def _advance(self, actions):
        self.pos["cats"] += 0.4 * actions["cats"] + self.rng.normal(
            0, 0.2, self.pos["cats"].shape
        ).astype(np.float32)
        self.pos["dogs"] += 0.3 * (actions["dogs"][..., None] - 1.0).astype(np.float32)
        self.age += 1
        out, any_left = {}, np.zeros((*self.bs, 1), bool)
        for g, p in self.pos.items():
            left = np.abs(p).max(-1, keepdims=True) > 1.2
            cut = np.broadcast_to(self.age >= self.horizon, left.shape)
            reward = -np.abs(p).sum(-1, keepdims=True).astype(np.float32)
            out[g] = (reward, left | cut, left, cut.copy())
            any_left |= (left | cut).any(-2)
        trunc = (self.age >= self.horizon)[..., 0]
        term = any_left & ~trunc
        return out, (any_left, term, trunc)

    def _obs(self):
        return {
            g: {"position": p.copy(), "age": np.broadcast_to(self.age, (*self.bs, n, 1)).copy()}
            for (g, p), n in zip(self.pos.items(), GROUPS.values())
        }

    def _td(self, obs, groups=None, root=None):
        data = {}
        for g, n in GROUPS.items():
            entries = {k: torch.from_numpy(v) for k, v in obs[g].items()}
            if groups is None:
                for k in FLAGS:
                    entries[k] = torch.zeros((*self.bs, n, 1), dtype=torch.bool)
            else:
                reward, done, term, trunc = groups[g]
                entries.update(
                    reward=torch.from_numpy(reward),
                    done=torch.from_numpy(done),
                    terminated=torch.from_numpy(term),
                    truncated=torch.from_numpy(trunc),
                )
            data[g] = TensorDict(entries, (*self.bs, n))
        for k, v in zip(FLAGS, root or [np.zeros((*self.bs, 1), bool)] * 3):
            data[k] = torch.from_numpy(np.array(v))
        return TensorDict(data, self.bs)

    def _reset(self, tensordict=None, **kwargs):
        reset = None if tensordict is None else tensordict.get("_reset", None)
        self._restart(None if reset is None else reset.reshape(self.bs).numpy())
        return self._td(self._obs())

    def _step(self, tensordict):
        actions = {g: tensordict[g, "action"].numpy() for g in GROUPS}
        groups, root = self._advance(actions)
        return self._td(self._obs(), groups, root)


class Herd(HerdTD):
    """``HerdTD`` with the direct hooks, writing ``(group, name)`` keys."""

    _direct_io_nested_keys = True

    def _direct_io_supported(self):
        return True

    def _write_obs(self, out, rows):
        for g, entries in self._obs().items():
            for k, v in entries.items():
                out[(g, k)][rows] = v[rows]

    def _step_into(self, action, out):
        groups, root = self._advance({g: action[(g, "action")].numpy() for g in GROUPS})
        self._write_obs(out, (...,))
        for g, values in groups.items():
            for k, v in zip(("reward", *FLAGS), values):
                out[(g, k)][...] = v
        for k, v in zip(FLAGS, root):
            out[k][...] = v
        return bool(root[0].any())

    def _reset_into(self, out, mask=None):
        self._restart(mask)
        rows = (...,) if mask is None else mask
        self._write_obs(out, rows)
        for key in (*FLAGS, *((g, k) for g in GROUPS for k in FLAGS)):
            out[key][rows] = False


def _no_direct(env):
    env._direct_io_supported = lambda: False
    return env


BATCHES = [(), (4,), (2, 3)]


def test_plan_lists_the_groups():
    plan = direct_plan(Herd((4,)))
    assert plan is not None and not plan.flat
    assert plan.nodes == {"cats": torch.Size([4, 2]), "dogs": torch.Size([4, 1])}
    assert set(plan.action_keys) == {("cats", "action"), ("dogs", "action")}
    assert ("dogs", "truncated") in plan.root_keys and ("cats", "reward") in plan.next_keys
    assert "done" in plan.root_keys


def test_nested_keys_need_the_opt_in():
    class Undeclared(Herd):
        _direct_io_nested_keys = False

    assert direct_plan(Undeclared((4,))) is None


@pytest.mark.parametrize("break_when_any_done", [True, False])
@pytest.mark.parametrize("batch_size", BATCHES)
def test_rollout_matches_the_tensordict_path(batch_size, break_when_any_done):
    results = []
    for env in (Herd(batch_size), _no_direct(Herd(batch_size)), HerdTD(batch_size)):
        env.set_seed(3)
        torch.manual_seed(0)
        first = env.rollout(30, break_when_any_done=break_when_any_done)
        torch.manual_seed(1)
        results.append((first, env.rollout(30, break_when_any_done=break_when_any_done)))
    for other in results[1:]:
        for a, b in zip(results[0], other):
            assert_tensordict_equal(a, b)
    data = results[0][0]
    assert data.names[-1] == "time"
    if not break_when_any_done:
        assert data["next", "done"].any(), "resets happened inside the rollout"


def _smr_loop(env, steps=40):
    env.set_seed(5)
    torch.manual_seed(0)
    td = env.reset()
    outs = []
    for _ in range(steps):
        td = env.rand_action(td)
        td.set(("cats", "logits"), torch.randn(*env.batch_size, 2, 3))  # a policy's extra entry
        step, td = env.step_and_maybe_reset(td)
        outs.append((step.clone(), td.clone()))
    return outs


@pytest.mark.parametrize("batch_size", BATCHES)
def test_step_and_maybe_reset_matches_the_tensordict_path(batch_size):
    direct, general = _smr_loop(Herd(batch_size)), _smr_loop(_no_direct(Herd(batch_size)))
    for (step_a, next_a), (step_b, next_b) in zip(direct, general):
        assert_tensordict_equal(step_a, step_b)
        assert_tensordict_equal(next_a, next_b)
    assert any(step["next", "done"].any() for step, _ in direct)


def test_the_direct_path_is_taken_and_falls_back():
    env = Herd((3,))
    calls = []
    step_into = env._step_into
    env._step_into = lambda action, out: calls.append(sorted(action)) or step_into(action, out)
    env.rollout(4, break_when_any_done=False)
    assert len(calls) == 4 and calls[0] == [("cats", "action"), ("dogs", "action")]
    td = env.rand_action(env.reset())
    env.step_and_maybe_reset(td)
    assert len(calls) == 5
    # a group that is not a plain TensorDict of tensors: the TensorDict path
    td = env.rand_action(env.reset())
    td.set(("cats", "memory"), TensorDict({"h": torch.zeros(3, 2, 4)}, (3, 2)))
    step, td_ = env.step_and_maybe_reset(td)
    assert len(calls) == 5
    assert ("cats", "memory", "h") in td_.keys(True, True)


def test_batched_runners_keep_the_tensordict_path():
    """The shared-memory runners bind flat keys only; their results are the reference's."""
    env = SerialEnv(2, lambda: Herd((3,)))
    reference = SerialEnv(2, lambda: HerdTD((3,)))
    results = []
    for e in (env, reference):
        e.set_seed(1)
        torch.manual_seed(0)
        results.append(e.rollout(12, break_when_any_done=False))
    assert_tensordict_equal(*results)
    env.close()
    reference.close()


class TestHerdConformance(MultiAgentConformanceTests):
    expected_groups = ("cats", "dogs")
    done_aggregation = "any"
    direct_path = True

    def make_env(self):
        return Herd((4,))


# ---------------------------------------------------------------- MarlLayout.output_into
def _layout_and_arrays(**kwargs):
    from torchenv.envs import MarlLayout

    agents = ["scout_0", "scout_1", "guard_0"]
    layout = MarlLayout(
        agents,
        observation_specs={a: Unbounded((2,)) for a in agents},
        action_specs={a: Categorical(3) for a in agents},
        **kwargs,
    )
    specs = (layout.full_observation_spec, layout.full_reward_spec, layout.full_done_spec)
    # filled with 7 (True for flags): an entry output_into leaves alone shows
    arrays = {
        key: torch.full(spec[key].shape, 7, dtype=spec[key].dtype).numpy()
        for spec in specs
        for key in spec.keys(True, True)
    }
    return layout, arrays


@pytest.mark.parametrize("done_on_any", [True, False])
def test_output_into_writes_what_output_builds(done_on_any):
    layout, arrays = _layout_and_arrays(agent_mask=True, done_on_any=done_on_any)
    assert layout.supports_arrays
    per_agent = {
        "observation": {"scout_0": np.array([1.0, 2.0]), "guard_0": np.array([3.0, 4.0])},
        "reward": {"scout_0": 0.25, "guard_0": -1.5},
    }
    terminated = {"scout_0": False, "guard_0": True}
    truncated = {"scout_0": False, "guard_0": False}  # scout_1 has left: absent
    acting = ["scout_0"]
    done = layout.output_into(arrays, per_agent, terminated, truncated, acting=acting)
    expected = layout.output(
        {**per_agent, "terminated": terminated, "truncated": truncated}, acting=acting
    )
    got = layout.tensordict_of_arrays(arrays)
    assert_tensordict_equal(got, expected)
    assert done == expected["done"].item() == done_on_any


def test_output_into_names_unknown_agents_and_bad_shapes():
    layout, arrays = _layout_and_arrays()
    flags = {"scout_0": False}
    with pytest.raises(KeyError, match="unknown agents.*'ghost'"):
        layout.output_into(arrays, {"observation": {"ghost": np.zeros(2)}}, flags, flags)
    with pytest.raises(ValueError, match="agent 'scout_0'.*observation.*shape"):
        layout.output_into(arrays, {"observation": {"scout_0": np.zeros(5)}}, flags, flags)


def test_layouts_the_arrays_cannot_hold():
    layout, arrays = _layout_and_arrays(action_mask=True)
    assert not layout.supports_arrays
    flags = {"scout_0": False}
    with pytest.raises(ValueError, match="supports_arrays is False"):
        layout.output_into(arrays, {"observation": {"scout_0": np.zeros(2)}}, flags, flags)
    layout, _ = _layout_and_arrays(done="root")
    assert not layout.supports_arrays
