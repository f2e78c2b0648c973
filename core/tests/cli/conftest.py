"""Fixture ``site`` (shared with the registry tests): install throw-away plugin distributions."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest


def _load_fakedist():
    name = "torchenv_tests_fakedist"
    if name not in sys.modules:
        path = Path(__file__).parent.parent / "registry" / "_fakedist.py"
        spec = importlib.util.spec_from_file_location(name, path)
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


@pytest.fixture(autouse=True)
def _wide_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """The CLI's tables fit the terminal: give every test the same width (100 columns), whatever
    runs it (a narrow terminal, or a pytest-xdist worker that inherits COLUMNS)."""
    monkeypatch.setenv("COLUMNS", "100")
