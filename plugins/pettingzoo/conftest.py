"""pytest configuration of the pettingzoo plugin's directory: without PettingZoo its doctests are
skipped (the tests themselves skip with a reason through ``pytest.importorskip``)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

_SRC = Path(__file__).parent / "src"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if importlib.util.find_spec("pettingzoo") is not None:
        return
    skip = pytest.mark.skip(reason="torchenv_pettingzoo's docstring examples need pettingzoo")
    for item in items:
        if isinstance(item, pytest.DoctestItem) and _SRC in item.path.parents:
            item.add_marker(skip)
