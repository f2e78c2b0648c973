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
    stats = re.search(r"steps: (\d+)\s+episodes ended: (\d+)\s+total reward: (\S+)", out)
    assert stats and stats.group(1) == "7" and float(stats.group(3)) < 0  # pendulum costs


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


def test_rollout_runs_all_steps_through_episode_ends(capsys):
    assert main(["rollout", "builtin:CartPole", "--steps", "300", "--seed", "0"]) == 0
    out = capsys.readouterr().out
    stats = re.search(r"steps: 300\s+episodes ended: (\d+)\s+total reward: 300", out)
    assert stats and int(stats.group(1)) >= 3  # random CartPole episodes last ~20 steps
    returns = re.search(r"episode return \(reward\): mean (\S+)\s+min (\S+)\s+max (\S+)", out)
    assert returns and float(returns.group(2)) <= float(returns.group(1)) <= float(returns.group(3))


def test_rollout_stop_on_done_stops_at_the_first_end(capsys):
    assert (
        main(["rollout", "builtin:CartPole", "--steps", "300", "--seed", "0", "--stop-on-done"])
        == 0
    )
    out = capsys.readouterr().out
    stats = re.search(r"steps: (\d+)\s+episodes ended: 1\s", out)
    assert stats and int(stats.group(1)) < 300


def test_bench_without_raw_loop_reports_torchenv_only(capsys):
    assert main(["bench", "builtin:Pendulum", "--steps", "50", "--repeats", "1"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"torchenv\s+[\d,]+\s+-", out)
    assert "offers no raw-simulator loop" in out


def test_info_shows_per_dimension_bounds(capsys):
    assert main(["info", "builtin:Pendulum"]) == 0
    assert "[-1, 1] [-1, 1] [-8, 8]" in capsys.readouterr().out
