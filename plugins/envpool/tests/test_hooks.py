"""The hook module: the backend declaration, imports, the registry."""

from __future__ import annotations

import subprocess
import sys

import pytest

from torchenv_envpool import _hooks

pytestmark = pytest.mark.envpool


def test_backend_is_declared():
    (backend,) = _hooks.torchenv_backends()
    assert backend.name == "envpool" and backend.distribution == "torchenv-envpool"
    assert backend.simulator == "envpool" and backend.supported == ">=0.8.4"
    assert backend.install == 'pip install "torchenv[envpool]"'


def test_hook_module_imports_no_simulator():
    code = (
        "import sys, torchenv_envpool._hooks as h; h.torchenv_backends(); "
        "heavy = {'envpool', 'gymnasium'} & set(sys.modules); assert not heavy, heavy"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_hooks_decline_other_backends():
    assert _hooks.torchenv_list_envs("gymnasium") is None
    assert _hooks.torchenv_make_env("gymnasium", "x", {}) is None


def test_backend_reports_ok_when_envpool_is_installed():
    pytest.importorskip("envpool", reason="needs envpool")
    import torchenv

    (info,) = [b for b in torchenv.backends() if b.name == "envpool"]
    assert info.status == "ok", info
