"""info / check / rollout on the builtin envs (skipped until torchenv.envs provides them)."""

from __future__ import annotations

import re

import pytest

from torchenv.cli import main

envs = pytest.importorskip("torchenv.envs")
if not hasattr(envs, "PendulumEnv") or not hasattr(envs, "check_env_specs"):
    pytest.skip("the builtin envs are not there yet", allow_module_level=True)


def test_info_prints_specs(capsys):
    assert main(["info", "builtin:Pendulum"]) == 0
    out = capsys.readouterr().out
    assert "PendulumEnv" in out and "batch size: []" in out
    for section in ("observation spec:", "action spec:", "reward spec:", "done spec:"):
        assert section in out
    assert re.search(r"^\s+action\s+\w+\s+shape=\[1\]\s+float32\s+\[-2, 2\]", out, re.M)


def test_check_ok(capsys):
    assert main(["check", "builtin:CartPole", "--seed", "1"]) == 0
    assert capsys.readouterr().out.startswith("OK: builtin:CartPole")


def test_rollout_prints_summary_and_stats(capsys):
    assert main(["rollout", "builtin:Pendulum", "--steps", "7", "--seed", "3"]) == 0
    out = capsys.readouterr().out
    assert "batch_size=[7]" in out
    assert re.search(r"next\.reward\s+\[7, 1\]\s+float32", out)
    stats = re.search(r"steps: (\d+)\s+total reward: (\S+)\s+done: (\d+)", out)
    assert stats and stats.group(1) == "7" and float(stats.group(2)) < 0  # pendulum costs


def test_rollout_is_reproducible_with_a_seed(capsys):
    main(["rollout", "builtin:CartPole", "--steps", "5", "--seed", "11"])
    first = capsys.readouterr().out
    main(["rollout", "builtin:CartPole", "--steps", "5", "--seed", "11"])
    assert capsys.readouterr().out == first


def test_rollout_with_kwargs(capsys):
    assert main(["rollout", "builtin:CartPole", "--steps", "4", "--kwargs", "batch_size=[3]"]) == 0
    out = capsys.readouterr().out
    assert "batch_size=[3, 4]" in out
    assert "steps: 4" in out
