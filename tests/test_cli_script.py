"""The installed `torchenv` console script and `python -m torchenv.cli`, in subprocesses."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest


def _script() -> str:
    candidate = Path(sys.executable).with_name("torchenv")
    if candidate.exists():
        return str(candidate)
    found = shutil.which("torchenv")
    if found is None:
        pytest.skip("the torchenv console script is not installed in this environment")
    return found


def _run(*argv: str, env: dict | None = None) -> subprocess.CompletedProcess:
    environ = None if env is None else {**os.environ, **env}
    return subprocess.run(
        list(argv), capture_output=True, text=True, timeout=240, check=False, env=environ
    )


def test_console_script_lists_backends():
    result = _run(_script(), "backends")
    assert result.returncode == 0, result.stderr
    header, *rows = result.stdout.splitlines()
    assert header.split() == ["BACKEND", "PLUGIN", "SIMULATOR", "SUPPORTED", "STATUS"]
    assert any(row.split()[:1] == ["builtin"] and row.endswith("ok") for row in rows)


def test_console_script_rollout_of_the_builtin_pendulum():
    result = _run(_script(), "rollout", "builtin:Pendulum", "--steps", "4", "--seed", "0")
    assert result.returncode == 0, result.stderr
    assert "steps: 4" in result.stdout


def test_console_script_bench_and_record_of_a_gymnasium_env(tmp_path):
    pytest.importorskip("gymnasium")
    pytest.importorskip("torchenv_gym")
    result = _run(_script(), "bench", "gymnasium:CartPole-v1", "--steps", "200", "--repeats", "1")
    assert result.returncode == 0, result.stderr
    assert re.search(r"raw simulator\s+[\d,]+\s+1\.00", result.stdout)
    assert re.search(r"torchenv\s+[\d,]+\s+\d+\.\d\d", result.stdout)
    pytest.importorskip("pygame", reason="CartPole renders with pygame")
    pytest.importorskip("imageio_ffmpeg", reason="mp4 needs the video extra")
    out = tmp_path / "cartpole.mp4"
    env = {"SDL_VIDEODRIVER": "dummy"}
    result = _run(
        _script(), "record", "gymnasium:CartPole-v1", "--out", str(out), "--steps", "12", env=env
    )
    assert result.returncode == 0, result.stderr
    assert out.stat().st_size > 1000
    import imageio.v3 as iio

    frames = iio.imread(out)
    # the first frame, 12 steps, and one more first frame for each episode that ended
    assert frames.shape[0] >= 13 and frames.shape[-1] == 3


def test_python_dash_m_reports_errors_in_one_line():
    result = _run(sys.executable, "-m", "torchenv.cli", "list", "no-such-backend-xyz")
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.strip().splitlines() == [result.stderr.strip()]
    assert "unknown backend 'no-such-backend-xyz'" in result.stderr
