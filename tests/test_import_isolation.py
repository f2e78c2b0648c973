"""The core never imports a simulator: not on `import torchenv`, not when listing backends."""

from __future__ import annotations

import json
import subprocess
import sys

SIMULATORS = ("gym", "gymnasium", "vmas", "pettingzoo", "dm_control", "mujoco")

PROBE = """
import json, sys
sims = {sims!r}
loaded = lambda: sorted(m for m in sys.modules if m.split(".")[0] in sims)
import torchenv
after_import = loaded()
{extra}
print(json.dumps({{"import": after_import, "after": loaded()}}))
"""


def _probe(extra: str = "") -> dict:
    code = PROBE.format(sims=SIMULATORS, extra=extra)
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=240, check=False
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_import_torchenv_imports_no_simulator():
    seen = _probe()
    assert seen["import"] == []


def test_discovery_and_backend_status_import_no_simulator():
    seen = _probe(
        "torchenv.backends(); torchenv.registry.plugins(); torchenv.registry.plugin_manager()"
    )
    assert seen["after"] == []


def test_import_torchenv_is_lazy():
    """Only the facade and the TorchRL import hook load (no layer, no torch, no tensordict)."""
    code = (
        "import sys, torchenv; "
        "print(sorted(m for m in sys.modules if m.startswith(('torchenv', 'torch', 'tensordict'))))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=240, check=True
    )
    assert result.stdout.strip() == "['torchenv', 'torchenv.interop', 'torchenv.interop._hook']"


def test_cli_and_registry_modules_import_no_torch():
    # discovery loads plugins (which may import torch); the modules themselves must not
    code = (
        "import sys, torchenv.cli, torchenv.registry, torchenv.versions; "
        "torchenv.cli.build_parser(); "
        "print(sorted(m for m in ('torch', 'tensordict', 'numpy') if m in sys.modules))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=240, check=True
    )
    assert result.stdout.strip() == "[]"


def test_listing_backends_imports_no_torch():
    # `torchenv backends` must stay fast: hook modules (builtin and installed plugins) are cheap
    code = (
        "import sys, torchenv; infos = torchenv.backends(); "
        "print(sorted(m for m in ('torch', 'tensordict') if m in sys.modules))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=240, check=True
    )
    assert result.stdout.strip() == "[]"
