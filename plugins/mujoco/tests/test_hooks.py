"""The hook module: the backend declaration, imports, the registry."""

from __future__ import annotations

import subprocess
import sys

import pytest

from torchenv_mujoco import _hooks

pytestmark = pytest.mark.mujoco


def test_backend_is_declared():
    (backend,) = _hooks.torchenv_backends()
    assert backend.name == "mujoco" and backend.distribution == "torchenv-mujoco"
    assert backend.simulator == "mujoco" and backend.supported == ">=3.0"
    assert backend.install == 'pip install "torchenv[mujoco]"'


def test_hook_module_imports_no_simulator_nor_torch():
    code = (
        "import sys, torchenv_mujoco._hooks as h; h.torchenv_backends(); h.torchenv_list_envs('mujoco'); "
        "heavy = {'mujoco', 'gymnasium', 'torch'} & set(sys.modules); assert not heavy, heavy"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_hooks_decline_other_backends():
    assert _hooks.torchenv_list_envs("gymnasium") is None
    assert _hooks.torchenv_make_env("gymnasium", "x", {}) is None
