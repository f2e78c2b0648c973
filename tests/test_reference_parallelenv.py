"""The runnable examples of the TorchRL docs in shared/reference/ (envs-readme.txt and parallelenv-api.txt),
run against torchenv with only their imports changed; see test_reference_examples.py for the rules.
"""

from __future__ import annotations

import importlib.util
import math

import pytest
import torch
from tensordict import LazyStackedTensorDict
from torch import nn

pytest.importorskip("gymnasium")

pytestmark = pytest.mark.gymnasium


def _missing(module: str) -> bool:
    return importlib.util.find_spec(module) is None


# =============================================================================================
# envs-readme.txt
# =============================================================================================


@pytest.mark.usefixtures("needs_pygame")
def test_readme_to_tensor_image():
    from torchenv import RenameTransform
    from torchenv.transforms import ToTensorImage, TransformedEnv
    from torchenv_gym import GymEnv

    def make_env():  # an env with an "observation_pixels" entry, as the readme assumes
        base = GymEnv("CartPole-v1", from_pixels=True)
        return TransformedEnv(base, RenameTransform(["pixels"], ["observation_pixels"]))

    env = make_env()
    transformed_env = TransformedEnv(
        env, ToTensorImage(in_keys=["observation_pixels"])
    )  # assuming the output key is "observation_pixels"
    td = transformed_env.reset()
    assert td["observation_pixels"].shape == torch.Size([3, 400, 600])
    assert td["observation_pixels"].dtype == torch.float32
    assert 0.0 <= td["observation_pixels"].min() <= td["observation_pixels"].max() <= 1.0


@pytest.mark.skip(
    reason="pre-release API: `keys=` and 'next_*' keys, which torchrl itself no longer accepts"
)
def test_readme_transform_list():  # pragma: no cover
    """``CatFrames(keys=["next_observation_pixels"])`` / ``ObservationNorm(..., keys=...)``."""


# =============================================================================================
# parallelenv-api.txt
# =============================================================================================


class _Custom:
    @staticmethod
    def make():
        from torchenv_gym import GymEnv

        class CustomEnv(GymEnv):
            custom_attribute = 42

            def custom_method(self, x):
                return x + self.custom_attribute

        return CustomEnv("Pendulum-v1")


def test_parallel_attribute_and_method_fan_out():
    from torchenv import ParallelEnv

    my_env_fun = _Custom.make
    args = (1,)
    env = ParallelEnv(3, my_env_fun)
    try:
        custom_attribute_list = env.custom_attribute
        custom_method_list = env.custom_method(*args)
        assert list(custom_attribute_list) == [42, 42, 42]
        assert list(custom_method_list) == [43, 43, 43]
    finally:
        env.close()


def test_parallel_serial_env_creator_and_serial_for_single():
    from torchenv import EnvCreator, ParallelEnv, SerialEnv
    from torchenv_gym import GymEnv

    # EnvCreator ensures that the env is sharable. Optional in most cases.
    make_env = EnvCreator(lambda: GymEnv("Pendulum-v1"))
    env = SerialEnv(2, make_env)  # 2 identical copies of the Pendulum env, run serially
    assert env.rollout(10).batch_size == torch.Size([2, 10])
    env.close()
    env = ParallelEnv(2, make_env)  # 2 identical copies of the Pendulum env, in 2 processes
    try:
        rollout = env.rollout(10)  # executes 10 random steps in the environment
        assert rollout.batch_size == torch.Size([2, 10])
        assert rollout[0]["next", "observation"].shape == torch.Size([10, 3])
    finally:
        env.close()
    # serial_for_single to avoid creating parallel envs if not necessary
    env = ParallelEnv(1, make_env, serial_for_single=True)
    assert isinstance(env, SerialEnv)
    env.close()


@pytest.mark.skipif(_missing("dm_control"), reason="the DMControlEnv example needs dm_control")
def test_parallel_multi_task_dm_control():  # pragma: no cover - dm_control is not installed
    from torchenv import ParallelEnv

    plugin = pytest.importorskip("torchenv_dmcontrol", reason="needs the torchenv-dmcontrol plugin")
    DMControlEnv = plugin.DMControlEnv

    env = ParallelEnv(
        2,
        [lambda: DMControlEnv("humanoid", "stand"), lambda: DMControlEnv("humanoid", "walk")],
    )
    rollout = env.rollout(10)
    assert rollout[0]["action"].shape == torch.Size([10, 21])
    env.close()


def test_parallel_check_env_specs_then_parallel():
    from torchenv import ParallelEnv, check_env_specs
    from torchenv_gym import GymEnv

    def make_env():
        return GymEnv("Pendulum-v1")

    env = make_env()
    check_env_specs(env)  # if this passes without error you're good to go!
    penv = ParallelEnv(2, make_env)
    try:
        check_env_specs(penv)
    finally:
        penv.close()


@pytest.mark.usefixtures("needs_mujoco")
@pytest.mark.filterwarnings("ignore:.*HalfCheetah-v4 is out of date")
def test_parallel_info_dict_reader_and_primer():
    from torchenv import TensorDictPrimer, TransformedEnv, check_env_specs
    from torchenv_gym import GymEnv, set_gym_backend  # noqa: F401 - as in the docs

    env = GymEnv("HalfCheetah-v4")
    r = env.rollout(3)  # no info registered, this env passes check_env_specs
    assert r["next", "observation"].shape == torch.Size([3, 17])
    check_env_specs(env)  # succeeds!
    env.set_info_dict_reader()  # sets the default info_dict reader
    r = env.rollout(10)
    for key in ("reward_ctrl", "reward_run", "x_position", "x_velocity"):
        assert r["next", key].shape == torch.Size([10])
        # torchrl misses the root infos here ("the info_dict is empty at reset time") and its
        # check_env_specs then fails; torchenv's reader writes zeros at reset, so both hold
        assert r[key].shape == torch.Size([10])
    check_env_specs(env)
    # This ad-hoc fix registers the info-spec for reset
    env_fixed = TransformedEnv(env, TensorDictPrimer(env.info_dict_reader[0].info_spec))
    r = env_fixed.rollout(10)
    for key in ("reward_ctrl", "reward_run", "x_position", "x_velocity"):
        assert r[key].shape == torch.Size([10])
    check_env_specs(env_fixed)  # Succeeds! This env can be used within a parallel env!


def test_parallel_device_choice_cpu():
    from torchenv import ParallelEnv
    from torchenv_gym import GymEnv

    N = 2
    MyEnv = GymEnv
    # If no cuda device is available
    # The docs pass an env instance; batched envs need a constructor (torchrl 0.14 fails too,
    # in the worker, with "please use a constructor such as ParallelEnv(num_env, lambda env=env: env)")
    with pytest.raises(TypeError, match="env instance.*constructor"):
        ParallelEnv(N, MyEnv("Pendulum-v1", device="cpu"))
    env = ParallelEnv(N, lambda: MyEnv("Pendulum-v1", device="cpu"))
    try:
        assert env.rollout(2).batch_size == torch.Size([N, 2])
    finally:
        env.close()


@pytest.mark.skipif(not torch.cuda.is_available(), reason="the device=cuda examples need CUDA")
def test_parallel_device_choice_cuda():  # pragma: no cover - no CUDA here
    from torchenv import ParallelEnv
    from torchenv_gym import GymEnv

    N = 2
    MyEnv = GymEnv
    # The sub-envs are executed on CPU, but the policy is on GPU
    env = ParallelEnv(N, lambda: MyEnv("Pendulum-v1", device="cpu"), device="cuda")
    assert env.rollout(2).device.type == "cuda"
    env.close()


def _spec_env():
    from torchenv_gym import GymEnv

    return GymEnv("Pendulum-v1")


def test_parallel_action_spec_leaf_or_composite():
    from torchenv.specs import Categorical, Composite, Unbounded

    env = _spec_env()
    env.action_spec = Unbounded(1)
    assert isinstance(env.action_spec, Unbounded)
    assert env.action_spec.shape == torch.Size([1])

    env.action_spec = Composite({"nested": {"action": Unbounded(1)}})
    assert isinstance(env.action_spec, Unbounded)
    assert env.action_key == ("nested", "action")

    env.action_spec = Composite(
        {"nested": {"action": Unbounded(1), "another_action": Categorical(1)}}
    )
    assert isinstance(env.action_spec, Composite)
    assert set(env.action_spec.keys(True, True)) == {
        ("nested", "action"),
        ("nested", "another_action"),
    }
    full = env.input_spec["full_action_spec"]
    assert isinstance(full, Composite)
    assert full["nested", "another_action"] == Categorical(1)


def test_parallel_done_spec_leaf_or_composite():
    from torchenv.specs import Categorical, Composite

    env = _spec_env()
    # The docs' done specs have an empty shape, which torchrl 0.14 rejects too ("the done_spec's
    # leaves shape cannot be empty"); the same examples with the trailing singleton dim:
    with pytest.raises(ValueError, match="done.*empty shape"):
        env.done_spec = Categorical(2, dtype=torch.bool)
    # A lone "done" is flanked with its "terminated" dual, so done_spec holds two leaves and is
    # returned whole (torchrl 0.14 does the same; its docs print the lone leaf).
    env.done_spec = Categorical(2, (1,), dtype=torch.bool)
    assert env.done_keys == ["done", "terminated"]
    assert env.done_spec["done"] == Categorical(2, (1,), dtype=torch.bool)

    env.done_spec = Composite({"nested": {"done": Categorical(2, (1,), dtype=torch.bool)}})
    assert env.done_keys == [("nested", "done"), ("nested", "terminated")]
    assert env.done_spec["nested", "done"] == Categorical(2, (1,), dtype=torch.bool)

    env.done_spec = Composite(
        {
            "nested": {
                "done": Categorical(2, (1,), dtype=torch.bool),
                "another_done": Categorical(2, (1,), dtype=torch.bool),
            }
        }
    )
    assert isinstance(env.done_spec, Composite)
    assert ("nested", "another_done") in env.output_spec["full_done_spec"].keys(True, True)


def test_parallel_reward_spec_leaf_or_composite():
    from torchenv.specs import Categorical, Composite, Unbounded

    env = _spec_env()
    env.reward_spec = Unbounded(1)
    assert isinstance(env.reward_spec, Unbounded)

    env.reward_spec = Composite({"nested": {"reward": Unbounded(1)}})
    assert isinstance(env.reward_spec, Unbounded)

    # the docs' Categorical(1) has an empty shape, which torchrl 0.14 rejects too
    with pytest.raises(ValueError, match="reward.*empty shape"):
        env.reward_spec = Composite(
            {"nested": {"reward": Unbounded(1), "another_reward": Categorical(1)}}
        )
    env.reward_spec = Composite(
        {"nested": {"reward": Unbounded(1), "another_reward": Categorical(1, (1,))}}
    )
    assert isinstance(env.reward_spec, Composite)
    assert ("nested", "another_reward") in env.output_spec["full_reward_spec"].keys(True, True)


def test_parallel_gym_pendulum_specs():
    from torchenv.specs import BoundedContinuous, Categorical, Composite, UnboundedContinuous
    from torchenv_gym import GymEnv

    env = GymEnv("Pendulum-v1")
    assert isinstance(env.action_spec, BoundedContinuous)
    assert env.action_spec.shape == torch.Size([1])
    assert env.action_spec.dtype == torch.float32
    assert env.action_spec.space.low.shape == torch.Size([1])

    # done, terminated and truncated: done_spec is the Composite of the three (as in torchrl 0.14,
    # whose docs still print the single leaf)
    assert set(env.done_spec.keys()) == {"done", "terminated", "truncated"}
    for leaf in env.done_spec.values():
        assert isinstance(leaf, Categorical)
        assert leaf.shape == torch.Size([1])
        assert leaf.dtype == torch.bool
        assert leaf.space.n == 2

    assert isinstance(env.observation_spec, Composite)
    assert isinstance(env.observation_spec["observation"], BoundedContinuous)
    assert env.observation_spec["observation"].shape == torch.Size([3])

    assert isinstance(env.reward_spec, UnboundedContinuous)
    assert env.reward_spec.shape == torch.Size([1])
    assert env.reward_spec.dtype == torch.float32

    assert set(env.input_spec.keys()) == {"full_state_spec", "full_action_spec"}
    assert isinstance(env.input_spec["full_action_spec", "action"], BoundedContinuous)
    assert {"full_reward_spec", "full_observation_spec", "full_done_spec"} == set(
        env.output_spec.keys()
    )
    assert env.output_spec["full_observation_spec", "observation"].shape == torch.Size([3])


def test_parallel_append_transform_callable():
    from torchenv import TransformedEnv
    from torchenv_gym import GymEnv

    env = GymEnv("CartPole-v1")
    loc = 0.5
    scale = 1.0
    transform = lambda data: data.set(  # noqa: E731 - as in the docs
        "observation", (data.get("observation") - loc) / scale
    )
    env = env.append_transform(transform=transform)
    assert isinstance(env, TransformedEnv)
    assert "TransformedEnv" in repr(env)
    env.set_seed(0)
    td = env.reset()
    env.base_env.set_seed(0)
    raw = env.base_env.reset()
    torch.testing.assert_close(td["observation"], raw["observation"] - 0.5)


def test_parallel_full_done_spec_gym_wrapper():
    import gymnasium

    from torchenv_gym import GymWrapper

    env = GymWrapper(gymnasium.make("Pendulum-v1"))
    full = env.full_done_spec
    assert {"done", "truncated"} <= set(full.keys())
    for key in full:
        assert full[key].shape == torch.Size([1])
        assert full[key].dtype == torch.bool


def test_parallel_full_reward_spec_rename_transform():
    import gymnasium

    from torchenv import RenameTransform, TransformedEnv
    from torchenv.specs import UnboundedContinuous
    from torchenv_gym import GymWrapper

    base_env = GymWrapper(gymnasium.make("Pendulum-v1"))
    env = TransformedEnv(base_env, RenameTransform("reward", ("nested", "reward")))
    assert list(env.full_reward_spec.keys(True, True)) == [("nested", "reward")]
    assert isinstance(env.full_reward_spec["nested", "reward"], UnboundedContinuous)
    assert env.full_reward_spec["nested", "reward"].shape == torch.Size([1])
    assert env.reward_key == ("nested", "reward")


@pytest.mark.skip(reason="the BraxEnv examples need brax (not installed; no torchenv brax plugin)")
def test_parallel_brax_full_action_and_state_spec():  # pragma: no cover
    """``BraxEnv(envname).full_action_spec`` / ``.full_state_spec`` / ``.state_spec``."""


@pytest.mark.skip(
    reason="the register_gym examples need dm_control / brax (not installed; torchenv has no "
    "EnvBase.register_gym)"
)
def test_parallel_register_gym():  # pragma: no cover
    """``DMControlEnv.register_gym("DMC-cheetah-v0", ...)`` and ``BraxEnv.register_gym``."""


def test_parallel_rollout_step_counter_and_names():
    from torchenv import SerialEnv
    from torchenv.transforms import StepCounter, TransformedEnv
    from torchenv_gym import GymEnv

    # Using rollout without a policy
    env = TransformedEnv(GymEnv("Pendulum-v1"), StepCounter(max_steps=20))
    rollout = env.rollout(max_steps=1000)
    assert rollout.batch_size == torch.Size([20])
    assert rollout["next", "step_count"].shape == torch.Size([20, 1])
    assert rollout["next", "step_count"].dtype == torch.int64
    assert rollout["next", "truncated"][-1].all()
    assert rollout.names == ["time"]

    # with envs that contain more dimensions
    env = SerialEnv(3, lambda: TransformedEnv(GymEnv("Pendulum-v1"), StepCounter(max_steps=20)))
    rollout = env.rollout(max_steps=1000)
    assert rollout.batch_size == torch.Size([3, 20])
    assert rollout["next", "observation"].shape == torch.Size([3, 20, 3])
    assert rollout.names == [None, "time"]

    # Examples of non-contiguous rollout
    rollout = env.rollout(4, return_contiguous=False)
    assert isinstance(rollout, LazyStackedTensorDict)
    assert rollout.batch_size == torch.Size([3, 4])
    assert rollout["next", "step_count"].shape == torch.Size([3, 4, 1])
    assert rollout.names == [None, "time"]
    env.close()


def test_parallel_rollout_with_module_and_tensordict_module_policy():
    from tensordict.nn import TensorDictModule

    from torchenv_gym import GymEnv

    env = GymEnv("CartPole-v1", categorical_action_encoding=True)

    class ArgMaxModule(nn.Module):
        def forward(self, values):
            return values.argmax(-1)

    n_obs = env.observation_spec["observation"].shape[-1]
    n_act = env.action_spec.n
    # A deterministic policy
    policy = nn.Sequential(nn.Linear(n_obs, n_act), ArgMaxModule())
    rollout = env.rollout(max_steps=10, policy=policy)
    n = rollout.batch_size[0]
    assert 1 <= n <= 10
    assert rollout["action"].shape == torch.Size([n])
    assert rollout["action"].dtype == torch.int64
    with torch.no_grad():
        expected = policy(rollout["observation"])
    assert torch.equal(rollout["action"], expected)

    # Under the hood, rollout will wrap the policy in a TensorDictModule
    # To speed things up we can do that ourselves
    policy = TensorDictModule(
        policy, in_keys=list(env.observation_spec.keys()), out_keys=["action"]
    )
    rollout = env.rollout(max_steps=10, policy=policy)
    assert rollout["action"].dtype == torch.int64
    assert rollout["next", "observation"].shape == torch.Size([rollout.batch_size[0], 4])
    assert set(rollout["next"].keys()) == {
        "done",
        "observation",
        "reward",
        "terminated",
        "truncated",
    }


def test_parallel_data_collection_rollouts_with_step_mdp():
    from torchenv import step_mdp
    from torchenv_gym import GymEnv

    env = GymEnv("CartPole-v1")
    epochs = 10
    input_td = env.reset()
    for i in range(epochs):
        rollout_td = env.rollout(
            max_steps=100,
            break_when_any_done=False,
            auto_reset=False,
            tensordict=input_td,
        )
        assert rollout_td.batch_size == torch.Size([100])
        if i:  # the rollout continues from where the previous one stopped
            torch.testing.assert_close(rollout_td[0]["observation"], input_td["observation"])
        input_td = step_mdp(
            rollout_td[..., -1],
        )
        assert "next" not in input_td


def test_parallel_step_and_maybe_reset_rollout():
    from torchenv import ParallelEnv
    from torchenv_gym import GymEnv

    def rollout(env, n):
        data_ = env.reset()
        result = []
        for i in range(n):  # noqa: B007 - as in the docs
            data, data_ = env.step_and_maybe_reset(data_)
            result.append(data)
        return torch.stack(result)

    # Deliberate deviation (issue 20): the docs' loop writes no action, so TorchRL steps with
    # whatever the shared action buffer last held; torchenv refuses, as ``step`` does. With the
    # one line a policy would add (a random action), the example runs as documented.
    env = ParallelEnv(2, lambda: GymEnv("CartPole-v1"))
    try:
        with pytest.raises(KeyError, match="the action entry 'action' is missing"):
            rollout(env, 2)
        step_and_maybe_reset = env.step_and_maybe_reset
        env.step_and_maybe_reset = lambda td: step_and_maybe_reset(env.rand_action(td))
        r = rollout(env, 2)
    finally:
        env.close()
    assert r.batch_size == torch.Size([2, 2])
    assert r["next", "observation"].shape == torch.Size([2, 2, 4])
    for key in ("done", "terminated", "truncated"):
        assert r[key].shape == torch.Size([2, 2, 1])
        assert r["next", key].shape == torch.Size([2, 2, 1])
    assert r["next", "reward"].shape == torch.Size([2, 2, 1])
    assert not math.isnan(r["next", "observation"].sum().item())
