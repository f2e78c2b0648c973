"""pytest configuration of the vmas plugin's directory: without VMAS its doctests are skipped."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

_SRC = Path(__file__).parent / "src"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if importlib.util.find_spec("vmas") is not None:
        return
    skip = pytest.mark.skip(reason="torchenv_vmas's docstring examples need vmas")
    for item in items:
        if isinstance(item, pytest.DoctestItem) and _SRC in item.path.parents:
            item.add_marker(skip)
