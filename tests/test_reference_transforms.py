"""The runnable examples of the TorchRL docs in shared/reference/ (transforms, recording and gym parts of envs-api-overview.rst.txt),
run against torchenv with only their imports changed; see test_reference_examples.py for the rules.
"""

from __future__ import annotations

import importlib.util

import pytest
import torch
from tensordict import TensorDict

pytest.importorskip("gymnasium")

pytestmark = pytest.mark.gymnasium


def _missing(module: str) -> bool:
    return importlib.util.find_spec(module) is None


def _gym_backend_ok() -> bool:
    """Whether torchenv reports the legacy ``gym`` backend usable (gym < 0.27 needs numpy<2)."""
    import torchenv

    return any(b.name == "gym" and b.ok for b in torchenv.backends())


# --------------------------------------------------------------------------- transforms section
@pytest.mark.usefixtures("needs_pygame")
def test_overview_transformed_env_pixels_parent_and_inverse():
    from torchenv import Compose, DoubleToFloat, Resize, ToTensorImage, TransformedEnv
    from torchenv_gym import GymEnv

    device = "cuda:0" if torch.cuda.is_available() else "cpu"  # the docs use cuda:0
    base_env = GymEnv("Pendulum-v1", from_pixels=True, device=device)
    transform = Compose(ToTensorImage(in_keys=["pixels"]), Resize(64, 64, in_keys=["pixels"]))
    env = TransformedEnv(base_env, transform)
    td = env.reset()
    assert td["pixels"].shape == torch.Size([3, 64, 64])
    assert td["pixels"].dtype == torch.float32

    resize_parent = env.transform[-1].parent  # the same as TransformedEnv(base_env, transform[:-1])
    assert isinstance(resize_parent, TransformedEnv)
    assert resize_parent.base_env is base_env
    assert len(resize_parent.transform) == 1
    assert isinstance(resize_parent.transform[0], ToTensorImage)
    assert resize_parent.observation_spec["pixels"].shape == torch.Size([3, 500, 500])

    # will map the action from float32 to float64 before calling the base_env.step
    env.append_transform(DoubleToFloat(in_keys_inv=["action"]))
    assert isinstance(env.transform[-1], DoubleToFloat)
    # ...but Pendulum's action is float32 already, so there is no float64 action to map (torchrl
    # 0.14 fails here too, with KeyError 'Failed to find the action_spec.')
    with pytest.raises(TypeError, match="DoubleToFloat.*float64.*float32"):
        env.action_spec  # noqa: B018


def test_overview_double_to_float_inverse_on_a_float64_action():
    import gymnasium
    import numpy as np

    from torchenv import DoubleToFloat, TransformedEnv
    from torchenv_gym import GymWrapper

    class Float64Action(gymnasium.Env):  # a base env whose action is float64
        action_space = gymnasium.spaces.Box(-1.0, 1.0, (1,), dtype=np.float64)
        observation_space = gymnasium.spaces.Box(-1.0, 1.0, (1,), dtype=np.float32)

        def reset(self, *, seed=None, options=None):
            super().reset(seed=seed)
            return np.zeros(1, np.float32), {}

        def step(self, action):
            assert action.dtype == np.float64
            return action.astype(np.float32), 0.0, False, False, {}

    base_env = GymWrapper(Float64Action())
    env = TransformedEnv(base_env)
    # will map the action from float32 to float64 before calling the base_env.step
    env.append_transform(DoubleToFloat(in_keys_inv=["action"]))
    assert base_env.action_spec.dtype == torch.float64
    assert env.action_spec.dtype == torch.float32
    td = env.rand_step()
    assert td["action"].dtype == torch.float32
    torch.testing.assert_close(td["next", "observation"], td["action"])


def test_overview_inv_applied_outermost_first():
    from torchenv import Compose, Transform

    class Record(Transform):
        def __init__(self, name, log):
            super().__init__(in_keys=[], out_keys=[], in_keys_inv=["action"])
            self.name, self.log = name, log

        def _inv_apply_transform(self, action):
            self.log.append(self.name)
            return action

    log = []
    transform = Compose(Record("inner", log), Record("outer", log))
    td = TensorDict({"action": torch.zeros(1)}, [])
    # the docs' schematic: for t in reversed(self.transform): td = t.inv(td)
    for t in reversed(transform):
        td = t.inv(td)
    assert log == ["outer", "inner"]
    log.clear()
    transform.inv(td)
    assert log == ["outer", "inner"]


class _AddOneToObs:
    @staticmethod
    def make():
        from torchenv import Transform

        class AddOneToObs(Transform):
            """A transform that adds 1 to the observation tensor."""

            def __init__(self):
                super().__init__(in_keys=["observation"], out_keys=["observation"])

            def _apply_transform(self, obs: torch.Tensor) -> torch.Tensor:
                return obs + 1

        return AddOneToObs


def test_overview_custom_transform_add_one_to_obs():
    from torchenv import Compose, RewardSum, TransformedEnv
    from torchenv_gym import GymEnv

    AddOneToObs = _AddOneToObs.make()
    env = TransformedEnv(GymEnv("Pendulum-v1"), AddOneToObs())
    env.set_seed(0)
    td = env.reset()
    env.base_env.set_seed(0)
    raw = env.base_env.reset()
    torch.testing.assert_close(td["observation"], raw["observation"] + 1)

    transform = Compose(AddOneToObs(), RewardSum())
    env = TransformedEnv(GymEnv("Pendulum-v1"), transform)
    rollout = env.rollout(5)
    torch.testing.assert_close(
        rollout["next", "episode_reward"][-1], rollout["next", "reward"].sum(0)
    )


def test_overview_custom_inverse_transform_add_one_to_action():
    from torchenv import Transform, TransformedEnv
    from torchenv_gym import GymEnv

    class AddOneToAction(Transform):
        """A transform that adds 1 to the action tensor."""

        def __init__(self):
            super().__init__(
                in_keys=[], out_keys=[], in_keys_inv=["action"], out_keys_inv=["action"]
            )

        def _inv_apply_transform(self, action: torch.Tensor) -> torch.Tensor:
            return action + 1

    t = AddOneToAction()
    td = t.inv(TensorDict({"action": torch.zeros(1)}, []))
    assert td["action"].tolist() == [1.0]
    env = TransformedEnv(GymEnv("Pendulum-v1"), AddOneToAction())
    env.rollout(3, policy=lambda td: td.set("action", torch.zeros(1)))


def _three_transforms():
    from torchenv import DoubleToFloat, RewardSum, StepCounter

    return StepCounter(), RewardSum(), DoubleToFloat()


def test_overview_transform_parent_and_clone():
    from torchenv import Compose, TransformedEnv
    from torchenv_gym import GymEnv

    base_env = GymEnv("Pendulum-v1")
    env = TransformedEnv(base_env, Compose(*_three_transforms()))

    third_transform = env.transform[2]
    assert third_transform.parent is not None

    # raises an Exception as third_transform already has a parent
    with pytest.raises(Exception):  # the docs only say "an Exception"
        TransformedEnv(base_env, third_transform)
    TransformedEnv(base_env, third_transform.clone())  # works


def test_overview_compose_slicing_drops_parent():
    from torchenv import Compose, TransformedEnv
    from torchenv_gym import GymEnv

    base_env = GymEnv("Pendulum-v1")
    transform1, transform2, transform3 = _three_transforms()

    env = TransformedEnv(base_env, Compose(transform1, transform2, transform3))
    last_two = env.transform[-2:]
    assert isinstance(last_two, Compose)
    assert last_two.parent is None
    assert last_two[0] is not transform2
    assert isinstance(last_two[0], type(transform2))  # and the buffers will match
    assert last_two[1] is not transform3
    assert isinstance(last_two[1], type(transform3))  # and the buffers will match


@pytest.mark.skip(
    reason="torchrl.modules.MaskedCategorical is a torchrl.modules name, out of scope"
)
def test_overview_action_mask_masked_categorical_policy():  # pragma: no cover
    """The first ActionMask example builds a policy with ``torchrl.modules.MaskedCategorical``."""


def test_overview_action_mask_transform():
    from tensordict.nn import (  # noqa: F401 - as in the docs
        ProbabilisticTensorDictModule,
        TensorDictModule,
        TensorDictSequential,
    )

    from torchenv import TicTacToeEnv
    from torchenv.transforms import ActionMask, TransformedEnv

    your_base_env = TicTacToeEnv(seed=0)  # a base env that outputs an "action_mask"
    env = TransformedEnv(
        your_base_env,
        ActionMask(action_key="action", mask_key="action_mask"),
    )
    # the default (random) policy only plays the available actions: an illegal move would raise
    for _ in range(5):
        rollout = env.rollout(9)
        actions = rollout["action"]
        masks = rollout["action_mask"]
        assert masks.gather(-1, actions.unsqueeze(-1)).all()
        assert rollout["next", "done"][-1].all()


@pytest.mark.skipif(_missing("ale_py"), reason="the ALE/Pong-v5 example needs ale_py (ALE)")
@pytest.mark.skipif(_missing("imageio"), reason="writing mp4 needs imageio")
def test_overview_video_recorder_pong(tmp_path):
    from torchenv.record import CSVLogger, VideoRecorder
    from torchenv_gym import GymEnv

    logger = CSVLogger(str(tmp_path / "dummy-exp"), video_format="mp4")
    env = GymEnv("ALE/Pong-v5")
    env = env.append_transform(VideoRecorder(logger, tag="rendered", in_keys=["pixels"]))
    env.rollout(10)
    env.transform.dump()  # Save the video and clear cache
    # our check: GymEnv registered ale_py's envs and named the RGB frames "pixels", as TorchRL
    assert list((tmp_path / "dummy-exp").rglob("*.mp4"))


@pytest.mark.usefixtures("needs_pygame")
@pytest.mark.skipif(_missing("imageio"), reason="writing mp4 needs imageio")
def test_overview_pixel_render_transform_parallel(tmp_path, monkeypatch):
    from torchenv import EnvCreator, ParallelEnv, check_env_specs
    from torchenv.record.loggers import CSVLogger
    from torchenv.record.recorder import PixelRenderTransform, VideoRecorder
    from torchenv_gym import GymEnv

    monkeypatch.chdir(tmp_path)

    def make_env():
        env = GymEnv("CartPole-v1", render_mode="rgb_array")
        # Uncomment this line to execute per-env
        # env = env.append_transform(PixelRenderTransform())
        return env

    logger = CSVLogger("dummy", video_format="mp4")

    env = ParallelEnv(2, EnvCreator(make_env))  # the docs use 16 workers; 2 cores here
    env.start()
    # Comment this line to execute per-env
    env = env.append_transform(PixelRenderTransform())

    env = env.append_transform(VideoRecorder(logger=logger, tag="pixels_record"))
    try:
        env.rollout(3)

        check_env_specs(env)

        r = env.rollout(30)
        assert r["pixels"].shape[:2] == r.batch_size
        assert r["pixels"].shape[-1] == 3
        env.transform.dump()
    finally:
        env.close()
    videos = [p for p in tmp_path.rglob("*") if p.is_file() and p.suffix == ".mp4"]
    assert videos, "dump() writes an mp4 file"


def test_overview_set_gym_backend_and_gym_backend():
    import gymnasium
    from gymnasium.envs.classic_control.pendulum import PendulumEnv

    from torchenv_gym import GymEnv, gym_backend, set_gym_backend

    with set_gym_backend(gymnasium):
        assert gym_backend() is gymnasium
        env1 = GymEnv("Pendulum-v1")
    assert isinstance(env1._env.unwrapped, PendulumEnv)

    # `import mo_gymnasium` in the docs is unused; the "gym" half needs gym (not installed)
    with set_gym_backend("gymnasium"):
        wrappers = gym_backend("wrappers")
        assert wrappers is gymnasium.wrappers


@pytest.mark.skipif(
    _missing("gym") or not _gym_backend_ok(),
    reason="the set_gym_backend(gym) half needs a usable gym (gym < 0.27 needs numpy<2)",
)
def test_overview_set_gym_backend_gym():  # pragma: no cover - gym is not installed here
    import gym

    from torchenv_gym import GymEnv, gym_backend, set_gym_backend

    with set_gym_backend(gym):
        assert gym_backend() is gym
        env2 = GymEnv("Pendulum-v1")
    assert type(env2._env.unwrapped).__module__.startswith("gym.")
    with set_gym_backend("gym"):
        assert gym_backend("wrappers") is gym.wrappers


def test_overview_implement_for():
    from torchenv.versions import implement_for

    # the docs use "gym" (v0.26.2 there); gymnasium >= 1.0 is what is installed here
    @implement_for("gymnasium", None, "0.26.0")
    def fun():
        return 0

    @implement_for("gymnasium", "0.26.0", None)
    def fun():  # noqa: F811 - redefinition is the point of implement_for
        return 1

    assert fun() == 1
