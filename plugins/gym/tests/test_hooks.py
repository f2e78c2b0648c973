"""The plugin's hooks and the registry: backends, list_envs, make by name."""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import pytest

from torchenv_gym import GymEnv, _hooks
from torchenv_gym._backend import legacy_gym_usable, registered_ids
from torchenv_gym._toy_envs import LIB

registry = pytest.importorskip("torchenv.registry")
HAS_GYM = importlib.util.find_spec("gym") is not None
# gym < 0.27 uses np.bool8: with numpy 2 (e.g. gym 0.26 pulled in by VMAS) it is refused
GYM_USABLE = HAS_GYM and legacy_gym_usable()


def test_backends_are_declared():
    declared = {b.name: b for b in _hooks.torchenv_backends()}
    assert set(declared) == {"gymnasium", "gym"}
    assert declared["gymnasium"].supported == ">=0.29"
    assert declared["gym"].supported == ">=0.23,<0.27"
    assert all(b.distribution == "torchenv-gym" for b in declared.values())


def test_hook_module_imports_no_simulator_nor_torch():
    code = (
        "import sys, torchenv_gym._hooks as h; h.torchenv_backends(); "
        "heavy = {'gymnasium', 'gym', 'torch'} & set(sys.modules); "
        "assert not heavy, heavy"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_hooks_decline_other_backends():
    assert _hooks.torchenv_list_envs("dmcontrol") is None
    assert _hooks.torchenv_make_env("dmcontrol", "x", {}) is None


def test_registry_sees_the_backends():
    names = {b.name: b for b in registry.backends()}
    assert LIB.__name__ in names
    assert names[LIB.__name__].status == "ok"


def test_list_envs_includes_namespaced_ids():
    ids = registry.list_envs(LIB.__name__)
    assert "CartPole-v1" in ids and "ToyDict-v0" in ids
    assert ids == sorted(ids)
    namespaced = [i for i in registered_ids(LIB) if "/" in i]
    assert all(i in ids for i in namespaced)
    if LIB.__name__ == "gymnasium" and not LIB.__version__.startswith("0."):
        assert namespaced, "gymnasium 1.x registers namespaced ids (phys2d/..., tabular/...)"


def test_make_by_name():
    env = registry.make(f"{LIB.__name__}:CartPole-v1")
    assert isinstance(env, GymEnv)
    assert env._api.library == LIB.__name__
    assert env.rollout(3)["next", "observation"].shape == (3, 4)


def test_make_passes_kwargs():
    env = registry.make(f"{LIB.__name__}:Pendulum-v1", g=2.0, categorical_action_encoding=True)
    assert env._env.unwrapped.g == 2.0


@pytest.mark.skipif(LIB.__name__ != "gymnasium", reason="num_envs needs gymnasium")
def test_make_vectorised():
    env = registry.make("gymnasium:CartPole-v1", num_envs=3)
    assert env.batch_size == (3,)
    env.close()


def test_unknown_env_suggests_close_ids():
    with pytest.raises(registry.UnknownEnvError, match="CartPole-v1"):
        registry.make(f"{LIB.__name__}:CartPole-v9")


@pytest.mark.skipif(HAS_GYM, reason="gym is installed")
def test_missing_gym_is_a_clear_error():
    with pytest.raises(registry.BackendUnavailableError, match="gym"):
        registry.make("gym:CartPole-v1")


@pytest.mark.skipif(not GYM_USABLE, reason="gym not installed, or gym < 0.27 with numpy 2")
def test_gym_backend_by_name_whatever_the_default():
    env = registry.make("gym:CartPole-v1")
    assert env._api.library == "gym"
    assert type(env._env.unwrapped).__module__.startswith("gym.")
    assert env.rollout(3)["next", "observation"].shape == (3, 4)
    assert "CartPole-v1" in registry.list_envs("gym")


@pytest.mark.skipif(not HAS_GYM or GYM_USABLE, reason="needs gym < 0.27 installed with numpy 2")
def test_legacy_gym_with_numpy2_is_a_clear_error():
    info = {b.name: b for b in registry.backends()}["gym"]
    assert info.status == "unsupported version" and "cannot run with numpy 2" in info.reason
    assert "separate venv" in info.hint and "numpy<2" not in info.hint  # never a downgrade
    with pytest.raises(ImportError, match="cannot run with numpy 2.*separate venv"):
        registry.make("gym:CartPole-v1")


def test_list_hides_gymnasium_ids_whose_simulator_is_missing():
    import importlib.util

    pytest.importorskip("gymnasium", reason="lists gymnasium's registry")
    ids = registry.list_envs("gymnasium")
    assert "CartPole-v1" in ids
    has_box2d = importlib.util.find_spec("Box2D") is not None
    has_mujoco = importlib.util.find_spec("mujoco") is not None
    assert ("LunarLander-v3" in ids) == has_box2d
    assert ("HalfCheetah-v5" in ids) == has_mujoco
