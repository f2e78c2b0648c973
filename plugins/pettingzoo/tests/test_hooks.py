"""The plugin's hooks and the registry: the backend, list_envs, make by name."""

from __future__ import annotations

import subprocess
import sys

import pytest

from torchenv_pettingzoo import _hooks

pytest.importorskip("pettingzoo")

import torchenv
from torchenv_pettingzoo import PettingZooEnv

pytestmark = pytest.mark.pettingzoo


def test_backend_is_declared():
    (backend,) = _hooks.torchenv_backends()
    assert backend.name == "pettingzoo" and backend.simulator == "pettingzoo"
    assert backend.supported == ">=1.24.3,<1.28"
    assert backend.distribution == "torchenv-pettingzoo"


def test_hook_module_imports_no_simulator_nor_torch():
    code = (
        "import sys, torchenv_pettingzoo._hooks as h; h.torchenv_backends(); "
        "heavy = {'pettingzoo', 'mpe2', 'torch'} & set(sys.modules); "
        "assert not heavy, heavy"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_hooks_decline_other_backends():
    assert _hooks.torchenv_list_envs("vmas") is None
    assert _hooks.torchenv_make_env("vmas", "x", {}) is None
    assert _hooks.torchenv_raw_loop("vmas", "x", {}) is None


def test_registry_sees_the_backend():
    status = {b.name: b for b in torchenv.backends()}["pettingzoo"]
    assert status.status == "ok"


def test_list_envs():
    ids = torchenv.list_envs("pettingzoo")
    assert "classic/tictactoe_v3" in ids and ids == sorted(ids)


def test_make_defaults_follow_the_task():
    aec = torchenv.make("pettingzoo:classic/tictactoe_v3")
    assert isinstance(aec, PettingZooEnv)
    assert not aec.parallel and aec.use_mask and not aec.done_on_any  # AEC: masks, done on all
    if "mpe/simple_spread_v3" in torchenv.list_envs("pettingzoo"):
        par = torchenv.make("pettingzoo:mpe/simple_spread_v3", seed=0, N=2)
        assert par.parallel and not par.use_mask and par.done_on_any
        assert par.reset()["agent", "observation"].shape == (2, 12)


def test_make_refuses_num_envs():
    with pytest.raises(ValueError, match="num_envs=2.*SerialEnv"):
        torchenv.make("pettingzoo:classic/tictactoe_v3", num_envs=2)


def test_make_unknown_id():
    from torchenv.registry import UnknownEnvError

    with pytest.raises(UnknownEnvError, match="tictactoe_v3"):
        torchenv.make("pettingzoo:classic/tictactoe_v4")


def test_raw_loop_steps_the_simulator():
    run = _hooks.torchenv_raw_loop("pettingzoo", "classic/tictactoe_v3", {})
    assert run(50) == 50
    run.close()
