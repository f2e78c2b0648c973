"""pytest configuration of the dmcontrol plugin's directory (tests and doctests).

``pixels_available`` renders one frame in a subprocess (a broken OpenGL setup can abort the
process that tries it) and caches the verdict for the session. ``MUJOCO_GL`` is set (to ``egl`` when headless and unset) before the tests import
dm_control.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from torchenv_dmcontrol._suite import choose_headless_gl

# before any test module imports dm_control: it picks its OpenGL backend at import time
choose_headless_gl()

_PROBE = (
    "from torchenv_dmcontrol._suite import import_suite; "
    "s = import_suite(); e = s.load('cartpole', 'balance'); "
    "assert e.physics.render(height=8, width=8).shape == (8, 8, 3)"
)


@pytest.fixture(scope="session")
def pixels_available() -> None:
    """Skip the test unless dm_control can render here (software GL, e.g. EGL or OSMesa)."""
    try:
        proc = subprocess.run(
            [sys.executable, "-c", _PROBE], capture_output=True, text=True, timeout=120
        )
    except subprocess.TimeoutExpired:
        pytest.skip("rendering probe timed out")
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["?"]
        pytest.skip(
            "dm_control cannot render here (needs OpenGL: MUJOCO_GL=egl with libegl1 "
            f"libegl-mesa0, or osmesa with libosmesa6): {tail[0]}"
        )
