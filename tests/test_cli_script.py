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


# Backends without from_pixels: VMAS renders, PettingZoo renders when made with render_mode,
# MuJoCo renders headless with MUJOCO_GL=egl (what record picks without a display).
RECORDABLE = [
    ("vmas", "vmas:balance", ["--kwargs", "num_envs=2"]),
    ("pettingzoo", "pettingzoo:mpe/simple_spread_v3", []),
    ("mujoco", "mujoco:InvertedPendulum", []),
]


@pytest.mark.parametrize(("module", "name", "extra"), RECORDABLE, ids=[r[0] for r in RECORDABLE])
def test_record_works_for_backends_that_render(module, name, extra, tmp_path):
    pytest.importorskip(f"torchenv_{module}")
    pytest.importorskip("imageio")
    out = tmp_path / "video.gif"
    environ = {"SDL_VIDEODRIVER": "dummy"}
    if module == "mujoco":
        environ = {**environ, "MUJOCO_GL": "egl"}
    result = _run(
        _script(),
        "record",
        name,
        *extra,
        "--out",
        str(out),
        "--steps",
        "4",
        "--no-progress",
        env=environ,
    )
    if module == "mujoco" and "could not create an OpenGL context" in result.stderr:
        pytest.skip("no EGL on this machine (the error named the fix)")
    assert result.returncode == 0, result.stderr
    assert "\r" not in result.stderr  # --no-progress
    import imageio.v3 as iio

    frames = iio.imread(out)
    assert frames.shape[0] >= 4 and frames.shape[-1] in (3, 4), frames.shape


def test_record_names_the_mujoco_gl_fix_when_opengl_fails(tmp_path):
    pytest.importorskip("torchenv_mujoco")
    # a backend that cannot work here: the error names MUJOCO_GL=egl
    result = _run(
        _script(),
        "record",
        "mujoco:InvertedPendulum",
        "--out",
        str(tmp_path / "v.gif"),
        "--steps",
        "2",
        "--no-progress",
        env={"MUJOCO_GL": "osmesa", "PYOPENGL_PLATFORM": "osmesa"},
    )
    if result.returncode == 0:
        pytest.skip("OSMesa renders on this machine")
    assert result.returncode == 2
    assert "MUJOCO_GL=egl torchenv record mujoco:InvertedPendulum" in result.stderr, result.stderr


def test_errors_show_command_line_syntax_not_python():
    result = _run(_script(), "info", "builtin")
    assert result.returncode == 2
    assert "torchenv info builtin:<env-id>" in result.stderr, result.stderr
    assert "make(" not in result.stderr


def test_a_natively_batched_env_gets_num_envs_1_and_kwargs_pass_through():
    pytest.importorskip("torchenv_vmas")
    result = _run(_script(), "rollout", "vmas:balance", "--steps", "2", "--no-progress")
    assert result.returncode == 0, result.stderr
    assert "num_envs=1 (choose with --kwargs num_envs=N)" in result.stdout
    result = _run(
        _script(),
        "rollout",
        "vmas:balance",
        "--steps",
        "2",
        "--kwargs",
        "num_envs=3",
        "--no-progress",
    )
    assert result.returncode == 0, result.stderr
    assert re.search(r"next\.agents\.reward\s+\[3, 2, 3, 1\]", result.stdout), result.stdout


def test_a_bare_pettingzoo_task_name_is_found():
    pytest.importorskip("torchenv_pettingzoo")
    result = _run(_script(), "info", "tictactoe_v3")
    assert result.returncode == 0, result.stderr
    assert "PettingZooEnv" in result.stdout
