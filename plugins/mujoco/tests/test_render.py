"""Pixels through MuJoCo's renderer, where an OpenGL context can be made (MUJOCO_GL=egl/osmesa)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.mujoco

_CODE = """
import mujoco  # first: an unusable MUJOCO_GL fails here, with the GL library's own message
import numpy as np
from torchenv_mujoco import MujocoEnv
env = MujocoEnv("HalfCheetah", num_envs=2)
env.set_seed(0)
td = env.reset()
a = env.render(0, width=64, height=48)
b = env.render(1, width=64, height=48)
assert a.shape == (48, 64, 3) and a.dtype == np.uint8, (a.shape, a.dtype)
assert a.std() > 0, "blank image"
env.close()
print("ok")
"""


@pytest.mark.parametrize("backend", ["egl", "osmesa"])
def test_render_headless(backend):
    # in a subprocess: MUJOCO_GL is read once per process, and a failing GL must not take pytest down
    env = dict(os.environ, MUJOCO_GL=backend, PYOPENGL_PLATFORM=backend)
    proc = subprocess.run(
        [sys.executable, "-c", _CODE], env=env, capture_output=True, text=True, timeout=120
    )
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["?"])[-1]
        if "ok" not in proc.stdout and ("GL" in proc.stderr or "egl" in proc.stderr.lower()):
            pytest.skip(f"no {backend} OpenGL context here: {last}")
        raise AssertionError(proc.stderr)
    assert "ok" in proc.stdout
