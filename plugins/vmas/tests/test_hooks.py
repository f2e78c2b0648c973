"""The plugin's hooks and the registry: the backend, list_envs, make by name."""

from __future__ import annotations

import subprocess
import sys

import pytest

from torchenv_vmas import _hooks

registry = pytest.importorskip("torchenv.registry")


def test_backend_is_declared():
    (backend,) = _hooks.torchenv_backends()
    assert backend.name == "vmas" and backend.simulator == "vmas"
    assert backend.supported == ">=1.4.3,<1.6" and "pip install" in backend.install
    assert backend.distribution == "torchenv-vmas"


def test_hook_module_imports_no_simulator_nor_torch():
    code = (
        "import sys, torchenv_vmas._hooks as h; h.torchenv_backends(); "
        "heavy = {'vmas', 'gym', 'torch'} & set(sys.modules); assert not heavy, heavy"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_hooks_decline_other_backends():
    assert _hooks.torchenv_list_envs("gymnasium") is None
    assert _hooks.torchenv_make_env("gymnasium", "x", {}) is None


@pytest.mark.vmas
def test_list_envs_is_vmas_scenario_list():
    vmas = pytest.importorskip("vmas")
    ids = registry.list_envs("vmas")
    assert ids == sorted({*vmas.scenarios, *vmas.mpe_scenarios, *vmas.debug_scenarios})
    assert {"balance", "navigation", "transport", "simple_adversary"} <= set(ids)


@pytest.mark.vmas
def test_make_by_name_and_unknown_name():
    pytest.importorskip("vmas")
    from torchenv_vmas import VmasEnv

    env = registry.make("vmas:balance", num_envs=16)
    assert isinstance(env, VmasEnv) and env.batch_size == (16,)
    with pytest.raises(registry.UnknownEnvError, match="balanse"):
        registry.make("vmas:balanse", num_envs=2)
    with pytest.raises(TypeError, match=r"vmas:balance: num_envs is required .* got None"):
        registry.make("vmas:balance")


@pytest.mark.vmas
def test_unsupported_version_is_refused(monkeypatch):
    vmas = pytest.importorskip("vmas")
    from torchenv_vmas._backend import check_supported

    monkeypatch.setattr(vmas, "__version__", "1.3.4")
    with pytest.raises(ImportError, match=r"vmas 1.3.4 is not supported .*vmas>=1.4.3,<1.6"):
        check_supported(vmas)
