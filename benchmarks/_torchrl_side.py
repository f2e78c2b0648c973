"""Runs a benchmark's TorchRL side in the TorchRL interpreter and returns its JSON results.

TorchRL pins its own tensordict, so it lives in a separate venv whose python is named by
``$TORCHENV_BENCH_TORCHRL_PYTHON`` (``nox -s bench`` sets it). A benchmark script re-runs itself
there with ``--impl torchrl --json`` and prints its results as one JSON line.
"""

from __future__ import annotations

import json
import os
import subprocess
from typing import Any

ENV_VAR = "TORCHENV_BENCH_TORCHRL_PYTHON"


def torchrl_results(script: str, *args: str) -> Any | None:
    """The JSON a benchmark ``script`` prints under TorchRL's python, or ``None`` (with a message)."""
    python = os.environ.get(ENV_VAR)
    if not python or not os.path.exists(python):
        print(f"TorchRL side skipped: set {ENV_VAR} to a python with torchrl installed.")
        return None
    proc = subprocess.run(
        [python, os.path.abspath(script), "--impl", "torchrl", "--json", *args],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode:
        print(f"TorchRL side failed:\n{proc.stderr[-2000:]}")
        return None
    return json.loads(proc.stdout.strip().splitlines()[-1])
