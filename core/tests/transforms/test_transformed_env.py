"""Transform / Compose / TransformedEnv: keys, order, specs, parents, clones, slicing."""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict
from torchenv_transforms_helpers import CountingEnv

from torchenv.envs import check_env_specs
from torchenv.envs.builtin import CartPoleEnv, PendulumEnv
from torchenv.transforms import (
    CatFrames,
    Compose,
    DoubleToFloat,
    ObservationNorm,
    RenameTransform,
    RewardScaling,
    RewardSum,
    StepCounter,
    Transform,
    TransformedEnv,
)


class AddOneToObs(Transform):
    def __init__(self):
        super().__init__(in_keys=["observation"], out_keys=["observation"])

    def _apply_transform(self, obs):
        return obs + 1


class AddToAction(Transform):
    def __init__(self, value):
        super().__init__(in_keys=[], out_keys=[], in_keys_inv=["action"], out_keys_inv=["action"])
        self.value = value

    def _inv_apply_transform(self, action):
        return action + self.value


class ScaleAction(Transform):
    def __init__(self, factor):
        super().__init__(in_keys_inv=["action"])
        self.factor = factor

    def _inv_apply_transform(self, action):
        return action * self.factor


class SpecRecorder(Transform):
    """Records the order in which the spec methods are called."""

    def __init__(self, name, log):
        super().__init__()
        self.name = name
        self.log = log

    def transform_output_spec(self, output_spec):
        self.log.append(("output", self.name))
        return output_spec

    def transform_input_spec(self, input_spec):
        self.log.append(("input", self.name))
        return input_spec


# ----------------------------------------------------------------------------- keys, standalone
def test_keys_are_normalised_and_out_keys_default_to_in_keys():
    t = Transform(in_keys="a", in_keys_inv=[("b",), ("c", "d")])
    assert t.in_keys == ["a"]
    assert t.out_keys == ["a"]
    assert t.in_keys_inv == ["b", ("c", "d")]
    assert t.out_keys_inv == ["b", ("c", "d")]


def test_mismatched_key_lengths_raise():
    t = AddOneToObs()
    t.out_keys = ["x", "y"]
    with pytest.raises(ValueError, match="same length"):
        t(TensorDict(observation=torch.zeros(1)))


def test_standalone_forward_and_inverse():
    td = TensorDict(observation=torch.zeros(2), action=torch.zeros(1))
    out = AddOneToObs()(td)
    assert out is td
    assert torch.equal(td["observation"], torch.ones(2))
    inv = AddToAction(1.0).inv(td)
    assert torch.equal(inv["action"], torch.ones(1))
    assert torch.equal(td["action"], torch.zeros(1)), "inv must not write into its input"


def test_missing_key_raises_with_its_name_unless_tolerant():
    t = AddOneToObs()
    with pytest.raises(KeyError, match="observation"):
        t(TensorDict(other=torch.zeros(1)))
    t.set_missing_tolerance(True)
    assert "observation" not in t(TensorDict(other=torch.zeros(1)))


def test_callable_transform():
    env = TransformedEnv(CountingEnv(), lambda td: td.set("observation", td["observation"] * 0 + 7))
    td = env.reset()
    assert (td["observation"] == 7).all()
    assert (env.rand_step(td)["next", "observation"] == 7).all()


# ----------------------------------------------------------------------------- order
def test_inverse_runs_outermost_first():
    base = CountingEnv()
    env = TransformedEnv(base, Compose(ScaleAction(2.0), AddToAction(1.0)))
    td = env.reset()
    td["action"] = torch.full((1,), 0.25, dtype=torch.float64)
    env.step(td)
    # outer (+1) first, then inner (*2): (0.25 + 1) * 2, not 0.25 * 2 + 1
    assert base.actions[-1].item() == pytest.approx(2.5)
    assert td["action"].item() == pytest.approx(0.25), "the caller's action is left untouched"


def test_specs_are_transformed_innermost_first():
    log = []
    env = TransformedEnv(
        CountingEnv(), Compose(SpecRecorder("inner", log), SpecRecorder("outer", log))
    )
    env.output_spec  # noqa: B018
    env.input_spec  # noqa: B018
    assert [name for kind, name in log if kind == "output"] == ["inner", "outer"]
    assert [name for kind, name in log if kind == "input"] == ["inner", "outer"]


def test_forward_runs_innermost_first():
    env = TransformedEnv(CountingEnv(), Compose(RewardScaling(0.0, 2.0), RewardScaling(1.0, 1.0)))
    td = env.reset()
    td["action"] = torch.ones(1, dtype=torch.float64)
    # inner: *2, outer: +1 -> 3 (the other order would give 4)
    assert env.step(td)["next", "reward"].item() == pytest.approx(3.0)


# ----------------------------------------------------------------------------- specs and caching
def test_specs_are_cached_and_not_recomputed_per_step():
    log = []
    env = TransformedEnv(CountingEnv(), SpecRecorder("t", log))
    env.rollout(5)
    n = len(log)
    assert n > 0
    env.rollout(5)
    assert len(log) == n
    assert env.output_spec is env.output_spec


def test_cache_specs_false_recomputes():
    log = []
    env = TransformedEnv(CountingEnv(), SpecRecorder("t", log), cache_specs=False)
    env.output_spec  # noqa: B018
    n = len(log)
    env.output_spec  # noqa: B018
    assert len(log) > n


def test_append_and_insert_invalidate_the_specs():
    env = TransformedEnv(CountingEnv(), StepCounter())
    assert "episode_reward" not in env.observation_spec
    env.append_transform(RewardSum())
    assert "episode_reward" in env.observation_spec
    env.insert_transform(0, RenameTransform(["observation"], ["obs"]))
    assert "obs" in env.observation_spec
    assert "observation" not in env.observation_spec
    assert isinstance(env.transform[0], RenameTransform)
    check_env_specs(env)


def test_out_keys_inv_specs_are_exposed():
    base = CountingEnv()
    env = TransformedEnv(
        base, RenameTransform([], [], in_keys_inv=["action"], out_keys_inv=["act"])
    )
    assert "act" in env.full_action_spec
    assert "action" not in env.full_action_spec
    td = env.rand_step()
    assert "act" in td
    assert torch.equal(base.actions[-1], td["act"])
    check_env_specs(env)


def test_double_to_float_on_actions_exposes_float32():
    base = CountingEnv()
    env = TransformedEnv(base, DoubleToFloat(in_keys_inv=["action"], in_keys=["observation"]))
    assert env.action_spec.dtype == torch.float32
    td = env.rand_step()
    assert td["action"].dtype == torch.float32
    assert base.actions[-1].dtype == torch.float64
    check_env_specs(env)


# ----------------------------------------------------------------------------- structure
def test_transform_is_always_a_compose():
    assert isinstance(TransformedEnv(CountingEnv()).transform, Compose)
    assert len(TransformedEnv(CountingEnv()).transform) == 0
    env = TransformedEnv(CountingEnv(), StepCounter())
    assert isinstance(env.transform, Compose) and len(env.transform) == 1
    env = TransformedEnv(CountingEnv(), [StepCounter(), RewardSum()])
    assert [type(t) for t in env.transform] == [StepCounter, RewardSum]


def test_auto_unwrap():
    base = CountingEnv()
    inner = TransformedEnv(base, StepCounter())
    outer = TransformedEnv(inner, RewardSum())
    assert outer.base_env is base
    assert [type(t) for t in outer.transform] == [StepCounter, RewardSum]
    assert outer.transform[0] is not inner.transform[0]
    nested = TransformedEnv(TransformedEnv(base, StepCounter()), RewardSum(), auto_unwrap=False)
    assert isinstance(nested.base_env, TransformedEnv)
    check_env_specs(nested)


def test_attribute_fall_through_to_base_env():
    env = TransformedEnv(CountingEnv(max_count=7), StepCounter())
    assert env.max_count == 7
    with pytest.raises(AttributeError):
        env.not_an_attribute  # noqa: B018


def test_batch_size_and_device_follow_base_env():
    env = TransformedEnv(CartPoleEnv(batch_size=[3]), StepCounter())
    assert env.batch_size == torch.Size([3])
    assert env.device == env.base_env.device
    with pytest.raises(RuntimeError, match="batch size"):
        env.batch_size = [2]


# ----------------------------------------------------------------------------- parent / clone
def _three(base=None):
    t1, t2, t3 = RewardScaling(0.0, 2.0), StepCounter(), ObservationNorm(0.0, 1.0)
    env = TransformedEnv(base or CountingEnv(), Compose(t1, t2, t3))
    return env, (t1, t2, t3)


def test_parent_is_the_env_up_to_the_transform():
    env, (t1, t2, t3) = _three()
    parent = env.transform[-1].parent
    assert isinstance(parent, TransformedEnv)
    assert parent.base_env is env.base_env
    assert [type(t) for t in parent.transform] == [RewardScaling, StepCounter]
    assert parent.transform[0] is not t1
    assert parent.transform[0].scale is t1.scale  # clones share buffers
    assert env.transform[0].parent.transform is not None
    assert len(env.transform[0].parent.transform) == 0
    assert "step_count" in parent.observation_spec
    assert t3.parent is parent  # cached


def test_parent_matches_env_built_from_the_slice():
    env, _ = _three()
    parent = env.transform[-1].parent
    same = TransformedEnv(env.base_env, env.transform[:-1])
    assert parent.output_spec == same.output_spec
    assert parent.input_spec == same.input_spec


def test_parent_through_nested_compose():
    inner = Compose(StepCounter(), RewardSum())
    env = TransformedEnv(CountingEnv(), Compose(RewardScaling(0.0, 2.0), inner))
    parent = inner[1].parent
    assert [type(t) for t in parent.transform] == [RewardScaling, StepCounter]
    assert inner[1].container is env
    check_env_specs(env)


def test_auto_unwrap_with_a_compose():
    outer = TransformedEnv(
        TransformedEnv(CountingEnv(), StepCounter()), Compose(RewardSum(), RewardScaling(0.0, 1.0))
    )
    assert [type(t) for t in outer.transform] == [StepCounter, RewardSum, RewardScaling]


def test_container_is_the_env():
    env, (t1, _, _) = _three()
    assert t1.container is env
    assert env.transform.container is env
    assert RewardSum().container is None
    assert RewardSum().parent is None


def test_a_transform_has_one_parent_and_clone_drops_it():
    env, (_, _, t3) = _three()
    third = env.transform[2]
    assert third.parent is not None
    with pytest.raises(AttributeError, match="clone"):
        TransformedEnv(CountingEnv(), third)
    clone = third.clone()
    assert clone.parent is None
    assert clone.loc is third.loc and clone.scale is third.scale
    other = TransformedEnv(CountingEnv(), clone)
    assert other.transform[0] is clone
    check_env_specs(other)


def test_clone_shares_buffers_updated_in_place():
    t = RewardScaling(0.0, 2.0)
    c = t.clone()
    t.scale.fill_(5.0)
    assert c.scale.item() == 5.0


def test_compose_slices_are_parentless_clones():
    env, (t1, t2, t3) = _three()
    last_two = env.transform[-2:]
    assert isinstance(last_two, Compose)
    assert last_two.parent is None
    assert last_two[0] is not t2 and isinstance(last_two[0], type(t2))
    assert last_two[1] is not t3 and isinstance(last_two[1], type(t3))
    assert last_two[1].loc is t3.loc
    assert env.transform[[0, 2]][1].scale is t3.scale
    # the originals keep their parent
    assert t3.parent is not None
    # a slice can make a new env
    check_env_specs(TransformedEnv(CountingEnv(), last_two))


def test_compose_sequence_api():
    c = Compose(StepCounter())
    c.append(RewardSum())
    c.insert(0, AddOneToObs())
    assert [type(t) for t in c] == [AddOneToObs, StepCounter, RewardSum]
    assert len(c) == 3
    popped = c.pop()
    assert isinstance(popped, RewardSum) and len(c) == 2
    with pytest.raises(IndexError):
        c.insert(5, RewardSum())
    with pytest.raises(TypeError, match="Transform or a callable"):
        c.append(3)
    assert Compose([StepCounter(), RewardSum()])[1].__class__ is RewardSum
    assert len(Compose(transforms=[StepCounter()])) == 1


def test_forward_of_compose_standalone():
    td = TensorDict(observation=torch.zeros(2), reward=torch.ones(1))
    out = Compose(AddOneToObs(), RewardScaling(1.0, 3.0))(td)
    assert torch.equal(out["observation"], torch.ones(2))
    assert out["reward"].item() == 4.0


# ----------------------------------------------------------------------------- _step skip
class SkipAll(Transform):
    def _inv_call(self, tensordict):
        return tensordict.set("_step", torch.zeros(tensordict.batch_size, dtype=torch.bool))


def test_step_emitted_by_a_transform_skips_base_step_and_later_transforms():
    base = CountingEnv()
    env = TransformedEnv(base, Compose(RewardScaling(10.0, 1.0), SkipAll()))
    td = env.reset()
    out = env.step(env.rand_action(td))
    assert base.actions == []
    assert out["next", "reward"].item() == 0.0, "the skipped step runs no transform"
    assert torch.equal(out["next", "observation"], td["observation"])


def test_step_skip_partial_on_batch_unlocked_env():
    class SkipFirst(Transform):
        def _inv_call(self, tensordict):
            mask = torch.ones(tensordict.batch_size, dtype=torch.bool)
            mask[0] = False
            return tensordict.set("_step", mask)

    env = TransformedEnv(PendulumEnv(), SkipFirst())
    td = env.reset(TensorDict(batch_size=[3]))
    td = env.rand_action(td)
    out = env.step(td)
    assert torch.equal(out["next", "th"][0], td["th"][0])
    assert not torch.equal(out["next", "th"][1:], td["th"][1:])


# ----------------------------------------------------------------------------- batched base and resets
def test_batched_base_env_with_partial_reset():
    env = TransformedEnv(CartPoleEnv(batch_size=[4], seed=0), Compose(StepCounter(), RewardSum()))
    check_env_specs(env)
    td = env.reset()
    for _ in range(3):
        td = env.rand_step(td)
        from torchenv.envs import step_mdp

        td = step_mdp(td)
    assert (td["step_count"] == 3).all()
    td["_reset"] = torch.tensor([True, False, True, False]).unsqueeze(-1)
    td = env.reset(td)
    assert td["step_count"].squeeze(-1).tolist() == [0, 3, 0, 3]
    assert td["episode_reward"].squeeze(-1).tolist() == [0.0, 3.0, 0.0, 3.0]


def test_state_dict_round_trip():
    env, _ = _three()
    sd = env.state_dict()
    assert any("scale" in k for k in sd)
    env2, _ = _three()
    env2.transform[0].scale.fill_(9.0)
    env2.load_state_dict(sd)
    assert env2.transform[0].scale.item() == 2.0


def test_common_stack_on_pendulum_passes_check_env_specs():
    env = TransformedEnv(
        PendulumEnv(),
        Compose(
            StepCounter(max_steps=10),
            RewardSum(),
            ObservationNorm(0.0, 1.0, in_keys=["observation"]),
            DoubleToFloat(),
            CatFrames(3, -1, in_keys=["observation"]),
        ),
    )
    check_env_specs(env)
    td = env.rollout(20)
    assert td.shape == torch.Size([10])
    assert td["observation"].shape == torch.Size([10, 9])


def test_pickle_and_deepcopy_keep_the_chain():
    import copy
    import pickle

    env, _ = _three(CartPoleEnv(seed=0))
    env.rollout(3)  # fills the hot-path caches
    for other in (pickle.loads(pickle.dumps(env)), copy.deepcopy(env)):
        assert other.transform[0].container is other
        assert [type(t) for t in other.transform[-1].parent.transform] == [
            RewardScaling,
            StepCounter,
        ]
        check_env_specs(other)


def test_forward_and_inv_accept_tensors_by_key():
    assert torch.equal(AddOneToObs()(observation=torch.zeros(2)), torch.ones(2))
    assert AddToAction(2.0).inv(action=torch.zeros(1)).item() == 2.0


class SelfResettingEnv(CountingEnv):
    """Resets itself when done: the step output already holds the next episode's first obs."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.reset_calls = 0

    def _reset(self, tensordict=None, **kwargs):
        self.reset_calls += 1
        return super()._reset(tensordict, **kwargs)

    def _step(self, tensordict):
        out = super()._step(tensordict)
        if out["done"].any():
            self.count = torch.zeros_like(self.count)
            out.set("observation", self._obs(out.empty())["observation"])
        return out


def test_auto_resetting_base_env_runs_transform_resets():
    base = SelfResettingEnv(max_count=3, obs_dim=1, auto_reset=True)
    env = TransformedEnv(base, Compose(StepCounter(), CatFrames(2, -1, in_keys=["observation"])))
    check_env_specs(env)
    base.reset_calls = 0
    td = env.rollout(7, break_when_any_done=False)
    assert base.reset_calls == 1  # only the first reset reaches the base env
    assert td["step_count"].squeeze(-1).tolist() == [0, 1, 2, 0, 1, 2, 0]
    done = td["next", "done"].squeeze(-1)
    assert done.tolist() == [False, False, True, False, False, True, False]
    assert torch.isnan(td["next", "observation"][done]).any()
    # after a done, the frames restart from the base env's own first observation
    assert td["observation"][3].tolist() == [0.0, 0.0]
