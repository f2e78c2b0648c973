"""pytest configuration of the envpool plugin's directory: without envpool its doctests are
skipped (its tests skip themselves, with the reason, through ``pytest.importorskip``)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

_SRC = Path(__file__).parent / "src"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if importlib.util.find_spec("envpool") is not None:
        return
    skip = pytest.mark.skip(
        reason='torchenv_envpool\'s docstring examples need envpool (pip install "torchenv[envpool]")'
    )
    for item in items:
        if isinstance(item, pytest.DoctestItem) and _SRC in item.path.parents:
            item.add_marker(skip)
