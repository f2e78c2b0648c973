"""The installed `torchenv` console script and `python -m torchenv.cli`, in subprocesses."""

from __future__ import annotations

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


def _run(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run(list(argv), capture_output=True, text=True, timeout=240, check=False)


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


def test_python_dash_m_reports_errors_in_one_line():
    result = _run(sys.executable, "-m", "torchenv.cli", "list", "no-such-backend-xyz")
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.strip().splitlines() == [result.stderr.strip()]
    assert "unknown backend 'no-such-backend-xyz'" in result.stderr
