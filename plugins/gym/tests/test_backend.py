"""set_gym_backend / gym_backend, version checks and the per-version dispatch."""

from __future__ import annotations

import importlib.util
import types

import pytest

import torchenv_gym._backend as backend_module
from torchenv.versions import implement_for
from torchenv_gym import GymEnv, gym_backend, set_gym_backend
from torchenv_gym._backend import check_supported, legacy_gym_usable
from torchenv_gym._toy_envs import LIB
from torchenv_gym._versions import GymApi

HAS_GYM = importlib.util.find_spec("gym") is not None
# gym < 0.27 uses np.bool8: with numpy 2 (e.g. gym 0.26 pulled in by VMAS) it is refused
GYM_USABLE = HAS_GYM and legacy_gym_usable()
HAS_GYMNASIUM = importlib.util.find_spec("gymnasium") is not None


def test_default_backend_prefers_gymnasium():
    assert gym_backend().__name__ == ("gymnasium" if HAS_GYMNASIUM else "gym")


def test_context_manager_by_name_and_module_nests_and_restores():
    before = gym_backend()
    with set_gym_backend(LIB.__name__):
        assert gym_backend() is LIB
        with set_gym_backend(LIB):
            assert gym_backend() is LIB
        assert gym_backend() is LIB
    assert gym_backend() is before


def test_decorator():
    @set_gym_backend(LIB.__name__)
    def current():
        return gym_backend()

    assert current() is LIB


def test_submodule():
    with set_gym_backend(LIB.__name__):
        wrappers = gym_backend("wrappers")
    assert wrappers.__name__ == f"{LIB.__name__}.wrappers"


def test_set_for_good(monkeypatch):
    monkeypatch.setattr(backend_module, "_current", None)
    set_gym_backend(LIB.__name__).set()
    assert gym_backend() is LIB
    implement_for.prefer()  # undo the preference set() made


def test_unknown_backend_name():
    with pytest.raises(ValueError, match="Unknown gym backend 'gymm'"), set_gym_backend("gymm"):
        pass


@pytest.mark.skipif(HAS_GYM, reason="gym is installed")
def test_missing_backend_says_what_to_install():
    with pytest.raises(ImportError, match="pip install"), set_gym_backend("gym"):
        pass


@pytest.mark.parametrize(
    ("name", "version"), [("gym", "0.21.0"), ("gym", "0.27.0"), ("gymnasium", "0.28.1")]
)
def test_unsupported_versions_are_refused_clearly(name, version):
    fake = types.ModuleType(name)
    fake.__version__ = version
    with pytest.raises(ImportError, match=rf"{name} {version} is not supported.*supported: {name}"):
        check_supported(fake)
    with pytest.raises(ImportError, match="not supported"), set_gym_backend(fake):
        pass


def test_api_matches_library_version():
    api = GymApi.of(LIB)
    env = LIB.make("CartPole-v1")
    obs, info = api.reset_env(env, 0, None)
    assert isinstance(info, dict) and obs.shape == (4,)
    result = api.step_env(env, 0)
    assert len(result) == 5  # always (obs, reward, terminated, truncated, info)
    assert GymApi.of(LIB) is api  # cached


def test_implement_for_follows_set_gym_backend():
    @implement_for("gym", None, None)
    def which():
        return "gym"

    @implement_for("gymnasium", None, None)
    def which():  # noqa: F811
        return "gymnasium"

    with set_gym_backend(LIB.__name__):
        assert which() == LIB.__name__


@pytest.mark.skipif(
    not (GYM_USABLE and HAS_GYMNASIUM),
    reason="needs a usable gym (numpy<2) and gymnasium side by side",
)
def test_switch_between_gym_and_gymnasium_in_one_process():
    import gym
    import gymnasium

    with set_gym_backend(gymnasium):
        assert gym_backend() is gymnasium
        env1 = GymEnv("Pendulum-v1")
    with set_gym_backend("gym"):
        assert gym_backend() is gym
        assert gym_backend("wrappers").__name__ == "gym.wrappers"
        env2 = GymEnv("Pendulum-v1")
    assert type(env1._env.unwrapped).__module__.startswith("gymnasium.")
    assert type(env2._env.unwrapped).__module__.startswith("gym.")
    assert env1._api.library == "gymnasium" and env2._api.library == "gym"
    # each env keeps its own library's behaviour after the context exits
    for env in (env1, env2):
        env.set_seed(0)
        td = env.rollout(5)
        assert td["next", "observation"].shape == (5, 3)


@pytest.mark.skipif(not HAS_GYM or GYM_USABLE, reason="needs gym < 0.27 installed with numpy 2")
def test_legacy_gym_with_numpy2_is_refused_clearly():
    with (
        pytest.raises(ImportError, match=r"needs numpy<2 \(it uses np.bool8"),
        set_gym_backend("gym"),
    ):
        pass
