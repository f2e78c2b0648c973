"""The plugin's hooks and the registry: backend, list_envs, make by name."""

from __future__ import annotations

import subprocess
import sys

import pytest

import torchenv.registry as registry
from torchenv_dmcontrol import DMControlEnv, _hooks


def test_backend_is_declared():
    (backend,) = _hooks.torchenv_backends()
    assert backend.name == "dmcontrol" and backend.simulator == "dm_control"
    assert backend.distribution == "torchenv-dmcontrol"
    assert backend.install == 'pip install "torchenv[dmcontrol]"'
    assert backend.compatibility is not None


def test_hook_module_imports_no_simulator_nor_torch():
    code = (
        "import sys, torchenv_dmcontrol._hooks as h; [b.compatibility() for b in "
        "h.torchenv_backends()]; heavy = {'dm_control', 'mujoco', 'torch'} & set(sys.modules); "
        "assert not heavy, heavy"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_hooks_decline_other_backends():
    assert _hooks.torchenv_list_envs("gymnasium") is None
    assert _hooks.torchenv_make_env("gymnasium", "cheetah/run", {}) is None


def test_registry_sees_the_backend():
    info = {b.name: b for b in registry.backends()}["dmcontrol"]
    assert info.status == "ok", info


def test_list_envs_is_the_benchmarking_and_extra_sets():
    from dm_control import suite

    ids = registry.list_envs("dmcontrol")
    expected = {f"{d}/{t}" for d, t in (*suite.BENCHMARKING, *suite.EXTRA)}
    assert ids == sorted(expected)
    assert {"cheetah/run", "walker/walk", "cartpole/swingup"} <= set(ids)


def test_make_by_name_passes_kwargs():
    env = registry.make("dmcontrol:cartpole/swingup", frame_skip=3, time_limit=2.0)
    try:
        assert isinstance(env, DMControlEnv) and env.frame_skip == 3
        assert (env.env_name, env.task_name) == ("cartpole", "swingup")
    finally:
        env.close()


def test_make_unknown_task_suggests():
    with pytest.raises(registry.UnknownEnvError, match="cheetah/run"):
        registry.make("dmcontrol:cheetah/runn")
