"""Every plugin of this workspace that is installed loads, declares backends and lists envs."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import torchenv
from torchenv.registry import STATUSES, plugins

ROOT = Path(__file__).resolve().parent.parent


def _workspace_plugins() -> list[str]:
    names = []
    for pyproject in sorted(ROOT.glob("plugins/*/pyproject.toml")):
        match = re.search(r'^name\s*=\s*"([^"]+)"', pyproject.read_text(), re.M)
        if match:
            names.append(match.group(1))
    return names


def _norm(name: str | None) -> str:
    return re.sub(r"[-_.]+", "-", name or "").lower()


def test_every_backend_has_a_known_status():
    for info in torchenv.backends():
        assert info.status in STATUSES, info
        assert info.ok == (info.reason == ""), info


@pytest.mark.parametrize("distribution", ["torchenv", *_workspace_plugins()])
def test_workspace_plugin_loads(distribution):
    records = [p for p in plugins() if _norm(p.distribution) == _norm(distribution)]
    if not records:
        pytest.skip(f"{distribution} is not installed here")
    for record in records:
        assert record.loaded, f"{record.name}: {record.error!r}"
        assert record.backends, f"{record.name} declares no backend"


def test_available_backends_list_their_envs():
    for info in torchenv.backends():
        if info.ok:
            ids = torchenv.list_envs(info.name)
            assert ids and all(isinstance(i, str) and i for i in ids), info.name
