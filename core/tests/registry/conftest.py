"""Fixture ``site``: a throw-away sys.path entry to install plugin distributions into."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest


def _load_fakedist():
    name = "torchenv_tests_fakedist"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(
            name, Path(__file__).with_name("_fakedist.py")
        )
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator:
    monkeypatch.delenv("TORCHENV_DISABLE_PLUGINS", raising=False)
    fake = _load_fakedist().FakeSite(tmp_path / "site", monkeypatch)
    yield fake
    fake.cleanup()
