"""The training examples run (a short run: they learn in the full one, see each docstring)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "examples" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_dqn_cartpole_trains_with_torchenv_and_torch_only(capsys):
    dqn = _load("dqn_cartpole")
    returns = dqn.train(frames=1200, num_envs=4, seed=0)  # past the warm-up: gradient steps run
    assert len(returns) > 10 and all(r >= 1 for r in returns), returns
    assert "frames" in capsys.readouterr().out
    assert dqn.train(frames=600, num_envs=4, seed=1) == dqn.train(frames=600, num_envs=4, seed=1)
