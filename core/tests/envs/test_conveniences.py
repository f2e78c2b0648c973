"""TorchRL's EnvBase conveniences, written as a TorchRL user writes them: ``step_mdp``,
``rollout(actions=, storing_device=, set_state=)``, ``reset(set_state=)``, ``auto_specs_``,
``all_actions``, ``cardinality``, collectors, ``configure_parallel``, ``make_parallel``."""

from __future__ import annotations

import warnings

import pytest
import torch
from tensordict import TensorDict

from torchenv.batched import ParallelEnv, SerialEnv
from torchenv.envs import EnvBase
from torchenv.specs import Bounded, Categorical, Composite, NonTensor, Unbounded


class Counter(EnvBase):
    """``observation = number of steps + action``; done after ``horizon`` steps."""

    def __init__(self, horizon: int = 5):
        super().__init__()
        self.observation_spec = Composite(observation=Unbounded((1,)))
        self.action_spec = Bounded(-1, 1, (1,))
        self.reward_spec = Unbounded((1,))
        self.horizon = horizon
        self.count = 0

    def _reset(self, td):
        self.count = 0
        return TensorDict(observation=torch.zeros(1))

    def _step(self, td):
        self.count += 1
        return TensorDict(
            observation=torch.full((1,), float(self.count)) + td["action"],
            reward=torch.ones(1),
            done=torch.tensor([self.count >= self.horizon]),
        )

    def _set_seed(self, seed):
        pass


class Restorable(Counter):
    """Counter whose reset restores ``"count"`` from the input when asked (``set_state``)."""

    _supports_set_state = True

    def __init__(self):
        super().__init__()
        self.state_spec = Composite(count=Unbounded((1,)))
        self.seen: list = []

    def _reset(self, td, set_state=None):
        self.seen.append(set_state)
        if set_state and td is not None:
            self.count = int(td["count"].item())
        else:
            self.count = 0
        return TensorDict(observation=torch.full((1,), float(self.count)), count=torch.zeros(1))


# ---------------------------------------------------------------------------- step_mdp
def test_step_mdp_moves_next_to_the_root_and_keeps_the_action():
    env = Counter()
    stepped = env.step(env.reset().set("action", torch.full((1,), 0.5)))
    data = env.step_mdp(stepped)
    assert set(data.keys()) == {"action", "observation", "done", "terminated"}
    assert data["observation"].item() == 1.5
    assert data["action"].item() == 0.5


# ---------------------------------------------------------------------------- rollout
def test_rollout_replays_actions_in_order():
    actions = [torch.full((1,), a) for a in (0.5, -0.5, 0.25)]
    data = Counter().rollout(10, actions=actions)
    # a sized iterable bounds the rollout: 3 steps, observation i + action_i
    assert data["next", "observation"].squeeze(-1).tolist() == [1.5, 1.5, 3.25]
    assert data["action"].squeeze(-1).tolist() == [0.5, -0.5, 0.25]


def test_rollout_actions_capped_by_max_steps_and_read_lazily():
    consumed = []

    def gen():
        for i in range(100):
            consumed.append(i)
            yield torch.zeros(1)

    data = Counter(horizon=50).rollout(4, actions=gen())
    assert data.batch_size == torch.Size([4])
    assert len(consumed) == 4  # an iterator is read only as far as max_steps


def test_rollout_actions_from_a_tensor_iterate_its_first_dim():
    data = Counter().rollout(3, actions=torch.tensor([[0.1], [0.2], [0.3]]))
    assert torch.allclose(data["next", "observation"].squeeze(-1), torch.tensor([1.1, 2.2, 3.3]))


def test_rollout_actions_and_policy_are_exclusive_and_checked():
    env = Counter()
    with pytest.raises(ValueError, match="policy or actions"):
        env.rollout(3, policy=lambda td: td, actions=[torch.zeros(1)])
    with pytest.raises(TypeError, match="iterable"):
        env.rollout(3, actions=0.5)
    with pytest.raises(ValueError, match="empty"):
        env.rollout(3, actions=[])


def test_rollout_actions_stop_at_done_like_a_policy():
    data = Counter(horizon=2).rollout(10, actions=[torch.zeros(1)] * 10)
    assert data.batch_size == torch.Size([2])
    assert data["next", "done"].squeeze(-1).tolist() == [False, True]


def test_rollout_storing_device_and_set_state_forwarded():
    env = Restorable()
    data = env.rollout(2, storing_device="cpu", set_state=False)
    assert data.device == torch.device("cpu")
    assert env.seen[0] is False  # the first reset received set_state=False


# ---------------------------------------------------------------------------- set_state
def test_set_state_true_on_an_env_without_support_raises_and_false_is_swallowed():
    env = Counter()
    with pytest.raises(NotImplementedError, match="set_state"):
        env.reset(TensorDict(), set_state=True)
    # unsupported envs never see the argument (Counter._reset takes none)
    assert env.reset(set_state=False)["observation"].item() == 0.0
    with pytest.raises(NotImplementedError):
        env.set_state()


def test_set_state_restores_the_state_on_envs_that_support_it():
    env = Restorable()
    restored = env.reset(TensorDict(count=torch.full((1,), 3.0)), set_state=True)
    assert restored["observation"].item() == 3.0
    assert env.seen[-1] is True
    with pytest.raises(ValueError, match="select_reset_only"):
        env.reset(TensorDict(count=torch.ones(1)), set_state=True, select_reset_only=True)


def test_set_state_unspecified_with_state_present_warns_and_honours_it():
    env = Restorable()
    with pytest.warns(FutureWarning, match="set_state"):
        out = env.reset(TensorDict(count=torch.full((1,), 2.0)))
    assert out["observation"].item() == 2.0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert env.reset()["observation"].item() == 0.0  # no state given: no warning
    assert env.seen[-1] is False


# ---------------------------------------------------------------------------- auto_specs_
class Blind(EnvBase):
    """No specs declared; the observation grows by one row per step (a dynamic dim)."""

    def __init__(self):
        super().__init__()
        self.rows = 1

    def _reset(self, td):
        self.rows = 1
        return TensorDict(
            observation=torch.zeros(3),
            memory=torch.zeros(self.rows, 2),
            done=torch.zeros(1, dtype=torch.bool),
            terminated=torch.zeros(1, dtype=torch.bool),
        )

    def _step(self, td):
        self.rows += 1
        return TensorDict(
            observation=torch.ones(3),
            memory=torch.ones(self.rows, 2),
            reward=torch.ones(1, dtype=torch.float64),
            done=torch.zeros(1, dtype=torch.bool),
            terminated=torch.zeros(1, dtype=torch.bool),
        )

    def _set_seed(self, seed):
        pass


def _act(td):
    return td.set("action", torch.zeros(2, dtype=torch.int64))


def test_auto_specs_infers_every_spec_from_two_steps():
    env = Blind().auto_specs_(_act, observation_key=["observation", "memory"])
    assert env.full_action_spec["action"].shape == torch.Size([2])
    assert env.full_action_spec["action"].dtype == torch.int64
    assert env.observation_spec["observation"].shape == torch.Size([3])
    # the memory grew between the two steps: its first dim is dynamic
    assert env.observation_spec["memory"].shape == torch.Size([-1, 2])
    assert env.reward_spec.dtype == torch.float64
    assert set(env.full_done_spec.keys()) == {"done", "terminated"}
    assert isinstance(env.full_state_spec, Composite)
    data = env.rollout(3, _act, return_contiguous=False)
    assert [m.shape[0] for m in data.get(("next", "memory"), as_list=True)] == [2, 3, 4]


def test_auto_specs_refuses_outputs_it_cannot_place():
    with pytest.raises(RuntimeError, match="memory"):
        Blind().auto_specs_(_act)


# ---------------------------------------------------------------------------- actions
class Three(Counter):
    def __init__(self):
        super().__init__()
        self.action_spec = Categorical(3)


def test_all_actions_and_cardinality_enumerate_the_action_spec():
    env = Three()
    assert env.all_actions()["action"].tolist() == [0, 1, 2]
    assert env.cardinality() == 3


# ---------------------------------------------------------------------------- misc
def test_collector_is_held_weakly():
    class FakeCollector:
        pass

    env = Counter()
    collector = FakeCollector()
    env.register_collector(collector)
    assert env.collector is collector
    del collector
    assert env.collector is None


def test_configure_parallel_is_for_batched_envs_and_eager_returns_self():
    env = Counter()
    with pytest.raises(NotImplementedError, match="batched"):
        env.configure_parallel(use_buffers=True)
    assert env.eager() is env


def test_make_parallel_builds_a_parallel_env_or_a_serial_one_for_a_single_env():
    env = Counter.make_parallel(Counter, num_envs=2)
    try:
        assert isinstance(env, ParallelEnv) and env.batch_size == torch.Size([2])
        assert env.rollout(2)["next", "observation"].shape == torch.Size([2, 2, 1])
    finally:
        env.close()
    single = Counter.make_parallel(Counter, num_envs=1, serial_for_single=True)
    assert isinstance(single, SerialEnv)
    single.close()


def test_input_and_output_spec_unbatched_drop_the_batch_dims():
    env = SerialEnv(2, Counter)
    try:
        assert env.input_spec.shape == torch.Size([2])
        assert env.input_spec_unbatched.shape == torch.Size([])
        assert env.output_spec_unbatched["full_observation_spec", "observation"].shape == (1,)
    finally:
        env.close()


def test_non_tensor_spec_entries_are_inferred_as_non_tensor():
    class Talking(Blind):
        def _step(self, td):
            out = super()._step(td)
            out["text"] = "hello"
            return out

    env = Talking().auto_specs_(_act, observation_key=["observation", "memory", "text"])
    assert isinstance(env.observation_spec["text"], NonTensor)


def test_frame_skip_is_a_wrapper_argument_not_an_envbase_one():
    # TorchRL 0.14.1's EnvBase.__init__ refuses frame_skip (its wrappers, e.g. GymEnv, take it);
    # so does ours, with the same exception type
    class Forwarding(Counter):
        def __init__(self, **kwargs):
            EnvBase.__init__(self, **kwargs)

    with pytest.raises(TypeError, match="frame_skip"):
        Forwarding(frame_skip=2)
