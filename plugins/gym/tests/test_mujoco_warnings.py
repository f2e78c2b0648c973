"""MuJoCo's compiler warning for gymnasium's HalfCheetah (deprecated ``settotalmass``) comes at
most once per process, as a Python warning, not once per env printed from C (issue 29)."""

from __future__ import annotations

import subprocess
import sys

import pytest

mujoco = pytest.importorskip("mujoco", reason="gymnasium's MuJoCo tasks need mujoco")
pytest.importorskip("gymnasium")

import torchenv  # noqa: E402


def test_settotalmass_is_said_once_per_process_not_per_env():
    # a fresh process: no other library (dm_control...) has installed its own MuJoCo handler
    code = (
        "import torchenv, mujoco\n"
        "for kwargs in ({}, {}, {'num_envs': 3}):\n"
        "    torchenv.make('gymnasium:HalfCheetah-v5', **kwargs).close()\n"
        "assert mujoco.get_mju_user_warning() is None  # MuJoCo's own printing is back\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    said = out.stdout + out.stderr
    assert said.count("settotalmass") == 1, said  # one RuntimeWarning for the 5 models compiled
    assert "RuntimeWarning: MuJoCo: compiler attribute 'settotalmass'" in said


def test_a_handler_already_installed_is_left_alone():
    previous = mujoco.get_mju_user_warning()
    seen = []
    mujoco.set_mju_user_warning(seen.append)
    try:
        torchenv.make("gymnasium:HalfCheetah-v5").close()
        assert mujoco.get_mju_user_warning() is not None
    finally:
        mujoco.set_mju_user_warning(previous)
    assert any("settotalmass" in message for message in seen)
