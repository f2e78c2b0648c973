"""The runnable examples of the TorchRL docs in shared/reference/, run against torchenv: envs part of envs-api-overview.rst.txt.

Each test is one example of ``envs-api-overview.rst.txt``, ``parallelenv-api.txt``,
``transforms.txt`` or ``envs-readme.txt``, copied with only its imports changed
(``torchrl.envs`` -> ``torchenv``, ``torchrl.data`` -> ``torchenv.specs``,
``torchrl.envs.libs.gym`` -> ``torchenv_gym``, ``torchrl._utils`` -> ``torchenv.versions``,
``torchrl.record`` -> ``torchenv.record``) and the least needed to run on its own: an ``env`` or
``N`` the docs leave undefined, ``device="cpu"`` where the docs ask for a GPU that is not there,
``gymnasium`` where the docs name ``gym`` (only gymnasium is installed). The documented outputs
(printed tensors, shapes, asserts) are kept as assertions.

Examples that need a simulator that is not installed (vmas, ALE, dm_control, brax) are skipped
with a reason naming it. Examples that are pseudo-code (undefined helpers) or document the
inherited ``torch.nn.Module`` methods are not copied here.
"""

from __future__ import annotations

import importlib.util
from typing import Optional

import pytest
import torch
from tensordict import LazyStackedTensorDict, TensorDict, TensorDictBase

pytest.importorskip("gymnasium")

pytestmark = pytest.mark.gymnasium


def _missing(module: str) -> bool:
    return importlib.util.find_spec(module) is None


# =============================================================================================
# envs-api-overview.rst.txt
# =============================================================================================


def test_overview_step_and_maybe_reset_loop():
    from torchenv_gym import GymEnv

    env = GymEnv("CartPole-v1")  # self-contained: the docs leave `env` and `N` undefined
    N = 50
    policy = env.rand_action  # the docs' loop leaves the action to a policy

    data_ = env.reset()
    result = []
    for i in range(N):  # noqa: B007 - as in the docs
        data, data_ = env.step_and_maybe_reset(policy(data_))
        result.append(data)

    result = torch.stack(result)
    assert result.batch_size == torch.Size([N])
    assert result["next", "observation"].shape == torch.Size([N, 4])
    # the loop never stops: a done step is followed by a fresh start
    done = result["next", "done"].squeeze(-1)
    for t in torch.nonzero(done[:-1]).flatten().tolist():
        assert not result["done"][t + 1].any()


@pytest.mark.usefixtures("needs_pygame")
def test_overview_parallel_env_batch_size_and_attribute_fan_out():
    from torchenv import ParallelEnv, check_env_specs
    from torchenv_gym import GymEnv

    device = "cuda:0" if torch.cuda.is_available() else "cpu"  # the docs use cuda:0

    def make_env():
        return GymEnv("Pendulum-v1", from_pixels=True, g=9.81, device=device)

    env = make_env()  # the docs check `env` before defining it
    check_env_specs(env)  # this must pass for ParallelEnv to work
    env = ParallelEnv(4, make_env)
    try:
        assert env.batch_size == torch.Size([4])
        a, b, c, d = env.g  # gets the g-force of the various envs, which we set to 9.81 before
        assert a == 9.81
        assert [a, b, c, d] == [9.81] * 4
    finally:
        env.close()


class _ZeroResetEnv:
    """Builds the env the ``_reset`` examples assume: it returns zeros after a reset."""

    @staticmethod
    def make(nested: bool, root: bool):
        from torchenv import EnvBase
        from torchenv.specs import Categorical, Composite, Unbounded

        class ZeroResetEnv(EnvBase):
            def __init__(self):
                super().__init__(batch_size=())
                flag = Categorical(2, shape=(2,), dtype=torch.bool)
                val = Unbounded(shape=(2,), dtype=torch.int64)
                obs, done = {}, {}
                if root:
                    obs["val"] = val.clone()
                    done.update(done=flag.clone(), terminated=flag.clone())
                if nested:
                    for agent in ("agent0", "agent1"):
                        obs[agent] = Composite(val=val.clone())
                        done[agent] = Composite(done=flag.clone(), terminated=flag.clone())
                self.observation_spec = Composite(obs)
                self.full_done_spec = Composite(done)
                self.action_spec = Categorical(2, shape=())
                self.reward_spec = Unbounded(shape=(1,))

            def _reset(self, tensordict=None, **kwargs):
                out = self.full_observation_spec.zero()
                return out.update(self.full_done_spec.zero())

            def _step(self, tensordict):
                out = self.full_observation_spec.zero().update(self.full_done_spec.zero())
                return out.update(self.full_reward_spec.zero())

            def _set_seed(self, seed):
                return seed

        return ZeroResetEnv()


def test_overview_reset_single_root():
    env = _ZeroResetEnv.make(nested=False, root=True)
    # single reset at the root
    data = TensorDict({"val": [1, 1], "_reset": [False, True]}, [])
    env.reset(data)
    assert data.get("val").tolist() == [1, 0]  # only the second value is 0


def test_overview_reset_nested():
    env = _ZeroResetEnv.make(nested=True, root=False)
    # nested resets
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
    assert data.get(("agent0", "val")).tolist() == [1, 0]  # only the second value is 0
    assert data.get(("agent1", "val")).tolist() == [0, 2]  # only the first value is 0


def test_overview_reset_root_overrides_nested():
    env = _ZeroResetEnv.make(nested=True, root=True)
    # nested resets are overridden by a "_reset" at the root
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
    assert data.get(("agent0", "val")).tolist() == [0, 0]  # reset at the root overrides nested
    assert data.get(("agent1", "val")).tolist() == [0, 0]  # reset at the root overrides nested


@pytest.mark.usefixtures("needs_pygame")
def test_overview_batched_reset_eliminates_reset_entry():
    from torchenv import ParallelEnv
    from torchenv_gym import GymEnv

    # the docs' env: 4 pixel envs in parallel
    env = ParallelEnv(4, lambda: GymEnv("Pendulum-v1", from_pixels=True))
    try:
        env.reset()
        tensordict = TensorDict({"_reset": [[True], [False], [True], [True]]}, [4])
        out = env.reset(tensordict)  # eliminates the "_reset" entry
        assert "_reset" not in out
        assert {"terminated", "done", "pixels", "truncated"} <= set(out.keys())
        assert out["done"].shape == torch.Size([4, 1])
        assert out["pixels"].shape == torch.Size([4, 500, 500, 3])
        assert out["pixels"].dtype == torch.uint8
    finally:
        env.close()


@pytest.mark.skipif(_missing("vmas"), reason="the VmasEnv example needs the vmas simulator")
def test_overview_marl_vmas_rand_step():  # pragma: no cover - vmas is not installed here
    VmasEnv = pytest.importorskip("torchenv_vmas", reason="needs the torchenv-vmas plugin").VmasEnv

    env = VmasEnv("balance", num_envs=3, n_agents=5)
    td = env.rand_step()
    assert td["agents", "action"].shape == torch.Size([3, 5, 2])
    assert td["next", "agents", "observation"].shape == torch.Size([3, 5, 16])
    assert td["next", "agents", "reward"].shape == torch.Size([3, 5, 1])
    assert td["next", "done"].shape == torch.Size([3, 1])


def test_overview_marl_specs_with_torch_stack():
    from torchenv import EnvBase
    from torchenv.specs import Bounded, Categorical, Composite, Unbounded

    class MarlEnv(EnvBase):  # the docs' `env`: an env with `n_agents`
        n_agents = 3

        def _reset(self, tensordict=None, **kwargs):
            raise NotImplementedError

        def _step(self, tensordict):
            raise NotImplementedError

        def _set_seed(self, seed):
            return seed

    env = MarlEnv()
    agent_i_action_spec = Bounded(low=-1, high=1, shape=(2,))
    agent_i_reward_spec = Unbounded(shape=(1,))
    agent_i_observation_spec = Unbounded(shape=(4,))

    action_specs = []
    observation_specs = []
    reward_specs = []
    info_specs = []  # noqa: F841 - as in the docs
    for i in range(env.n_agents):  # noqa: B007 - as in the docs
        action_specs.append(agent_i_action_spec)
        reward_specs.append(agent_i_reward_spec)
        observation_specs.append(agent_i_observation_spec)
    env.action_spec = Composite(
        {"agents": Composite({"action": torch.stack(action_specs)}, shape=(env.n_agents,))}
    )
    env.reward_spec = Composite(
        {"agents": Composite({"reward": torch.stack(reward_specs)}, shape=(env.n_agents,))}
    )
    env.observation_spec = Composite(
        {
            "agents": Composite(
                {"observation": torch.stack(observation_specs)}, shape=(env.n_agents,)
            )
        }
    )
    env.done_spec = Categorical(
        n=2,
        shape=torch.Size((1,)),
        dtype=torch.bool,
    )

    # the notes that follow the example
    assert env.action_key == ("agents", "action")
    assert env.reward_key == ("agents", "reward")
    assert "done" in env.done_keys  # shared done: at the root, as in single-agent envs
    assert env.reward_spec == torch.stack(reward_specs)
    assert env.reward_spec == env.output_spec["full_reward_spec"][env.reward_key]
    assert env.output_spec["full_reward_spec"]["agents"].shape == torch.Size([3])
    assert env.action_spec.shape == torch.Size([3, 2])
    assert env.observation_spec["agents", "observation"].shape == torch.Size([3, 4])


def test_overview_auto_resetting_gym_env():
    from torchenv_gym import GymEnv, set_gym_backend

    torch.manual_seed(0)

    class AutoResettingGymEnv(GymEnv):
        def _step(self, tensordict):
            tensordict = super()._step(tensordict)
            if tensordict["done"].any():
                td_reset = super().reset()
                tensordict.update(td_reset.exclude(*self.done_keys))
            return tensordict

        def _reset(self, tensordict=None):
            if tensordict is not None and "_reset" in tensordict:
                return tensordict.copy()
            return super()._reset(tensordict)

    with set_gym_backend("gymnasium"):  # the docs use "gym", which is not installed here
        env = AutoResettingGymEnv("CartPole-v1", auto_reset=True, auto_reset_replace=True)
        env.set_seed(0)
        r = env.rollout(30, break_when_any_done=False)
    done = r["next", "done"].squeeze()
    assert r.batch_size == torch.Size([30])
    assert done.any(), "30 random CartPole steps end at least one episode"
    # observation after reset are set as nan
    obs = r["next", "observation"]
    assert obs[done].isnan().all()
    assert not obs[~done].isnan().any()
    # the step after a done starts from the new episode's first observation
    for t in torch.nonzero(done[:-1]).flatten().tolist():
        assert not r["observation"][t + 1].isnan().any()


def test_overview_dynamic_spec_rollout_not_contiguous():
    from torchenv import EnvBase
    from torchenv.specs import Binary, Bounded, Composite, Unbounded

    class EnvWithDynamicSpec(EnvBase):
        def __init__(self, max_count=5):
            super().__init__(batch_size=())
            self.observation_spec = Composite(
                observation=Unbounded(shape=(3, -1, 2)),
            )
            self.action_spec = Bounded(low=-1, high=1, shape=(2,))
            self.full_done_spec = Composite(
                done=Binary(1, shape=(1,), dtype=torch.bool),
                terminated=Binary(1, shape=(1,), dtype=torch.bool),
                truncated=Binary(1, shape=(1,), dtype=torch.bool),
            )
            self.reward_spec = Unbounded((1,), dtype=torch.float)
            self.count = 0
            self.max_count = max_count

        def _reset(self, tensordict=None):
            self.count = 0
            data = TensorDict(
                {
                    "observation": torch.full(
                        (3, self.count + 1, 2),
                        self.count,
                        dtype=self.observation_spec["observation"].dtype,
                    )
                }
            )
            data.update(self.done_spec.zero())
            return data

        def _step(
            self,
            tensordict: TensorDictBase,
        ) -> TensorDictBase:
            self.count += 1
            done = self.count >= self.max_count
            observation = TensorDict(
                {
                    "observation": torch.full(
                        (3, self.count + 1, 2),
                        self.count,
                        dtype=self.observation_spec["observation"].dtype,
                    )
                }
            )
            done = self.full_done_spec.zero() | done
            reward = self.full_reward_spec.zero()
            return observation.update(done).update(reward)

        def _set_seed(self, seed: Optional[int]):  # noqa: UP045 - as in the docs
            self.manual_seed = seed
            return seed

    env = EnvWithDynamicSpec()
    rollout = env.rollout(5, return_contiguous=False)
    assert isinstance(rollout, LazyStackedTensorDict)
    assert isinstance(rollout["next"], LazyStackedTensorDict)
    assert rollout.batch_size == torch.Size([5])
    # the docs' printed shapes (a -1 where the steps differ)
    assert rollout.get_item_shape("observation") == torch.Size([5, 3, -1, 2])
    assert rollout.get_item_shape(("next", "observation")) == torch.Size([5, 3, -1, 2])
    for key in ("done", "terminated", "truncated"):
        assert rollout.get(key).shape == torch.Size([5, 1])
        assert rollout.get(("next", key)).shape == torch.Size([5, 1])
    assert rollout.get(("next", "reward")).shape == torch.Size([5, 1])
    assert rollout.get("action").shape == torch.Size([5, 2])
    assert [rollout[t]["next", "observation"].shape[1] for t in range(5)] == [2, 3, 4, 5, 6]
    assert rollout[-1]["next", "done"].all()
