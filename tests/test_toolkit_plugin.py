"""A third-party-style plugin built on the toolkit (``ArrayEnv``), installed as a throw-away
distribution: discovered through its entry point, made by name, on the direct path, conformant."""

from __future__ import annotations

import importlib
import shutil
import sys
from pathlib import Path

import pytest
import torch

import torchenv
from torchenv.batched import SerialEnv
from torchenv.envs import ArrayEnv
from torchenv.envs._direct import direct_plan
from torchenv.registry import reset_plugins
from torchenv.testing import BatchedEnvConformanceTests, EnvConformanceTests

SOURCE = Path(__file__).parent / "toolkit_plugin" / "torchenv_toywalk.py"


@pytest.fixture
def toywalk(tmp_path, monkeypatch):
    """Install ``torchenv-toywalk`` 0.1.0 (dist-info + its one module) on a fresh sys.path entry."""
    monkeypatch.delenv("TORCHENV_DISABLE_PLUGINS", raising=False)
    site = tmp_path / "site"
    info = site / "torchenv_toywalk-0.1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: torchenv-toywalk\nVersion: 0.1.0\nRequires-Dist: torchenv\n"
    )
    (info / "entry_points.txt").write_text("[torchenv]\ntoywalk = torchenv_toywalk\n")
    (info / "top_level.txt").write_text("torchenv_toywalk\n")
    shutil.copy(SOURCE, site / "torchenv_toywalk.py")
    monkeypatch.syspath_prepend(str(site))
    importlib.invalidate_caches()
    reset_plugins()
    yield
    sys.modules.pop("torchenv_toywalk", None)
    reset_plugins()


def _make(num_envs: int | None = None) -> ArrayEnv:
    if num_envs is None:
        return torchenv.make("toywalk:Walk-v0")
    return torchenv.make("toywalk:Walk-v0", num_envs=num_envs)


def test_the_plugin_is_one_small_file():
    assert len(SOURCE.read_text().splitlines()) < 150


def test_discovered_and_made_by_name(toywalk):
    info = {b.name: b for b in torchenv.backends()}["toywalk"]
    assert info.status == "ok", info
    assert torchenv.list_envs("toywalk") == ["Walk-v0"]
    env = _make(4)
    assert isinstance(env, ArrayEnv)
    assert env.batch_size == (4,)
    with pytest.raises(torchenv.registry.UnknownEnvError, match="Walk-v0"):
        torchenv.make("toywalk:Walk-v1")


@pytest.mark.parametrize("num_envs", [None, 4])
def test_direct_path_is_taken(toywalk, num_envs):
    env = _make(num_envs)
    assert direct_plan(env) is not None
    calls = []
    step_into = env._step_into
    env._step_into = lambda action, out: calls.append(1) or step_into(action, out)
    td = env.rollout(60, break_when_any_done=False)
    assert len(calls) == 60
    # 60 steps outlast the 50-step limit: every sub-env's first episode ended (reached the
    # origin or truncated), and its next step starts a fresh episode from a reset.
    done = td["next", "done"].squeeze(-1)
    assert done.any(-1).all()
    steps = td["next", "steps"].squeeze(-1)
    after_done = done[..., :-1]
    assert (steps[..., 1:][after_done] == 1).all()


def _td_path(num_envs: int) -> ArrayEnv:
    env = _make(num_envs)
    env._direct_io_supported = lambda: False
    return env


def test_batched_runners_take_the_direct_path(toywalk):
    serial = SerialEnv(2, lambda: _make(3))
    reference = SerialEnv(2, lambda: _td_path(3))
    try:
        calls = []
        for sub in serial.envs:
            step_into = sub._step_into
            sub._step_into = lambda a, o, f=step_into: calls.append(1) or f(a, o)
        results = []
        for env in (serial, reference):
            env.set_seed(0)
            torch.manual_seed(0)
            results.append(env.rollout(60, break_when_any_done=False))
        assert len(calls) == 2 * 60
        direct, general = results
        assert direct.batch_size == (2, 3, 60)
        for key in general.keys(True, True):
            assert torch.equal(direct[key], general[key]), key
        assert general["next", "truncated"].any()
    finally:
        serial.close()
        reference.close()


class TestToyWalkBatchedConformance(BatchedEnvConformanceTests):
    direct_path = True

    @pytest.fixture(autouse=True)
    def _installed(self, toywalk):
        yield

    def make_batched_env(self, num_envs):
        return _make(num_envs)


class TestToyWalkSingleConformance(EnvConformanceTests):
    @pytest.fixture(autouse=True)
    def _installed(self, toywalk):
        yield

    def make_env(self):
        return _make()
