"""pytest configuration of the meltingpot plugin's directory: without Melting Pot its doctests
are skipped (the tests themselves skip with a reason through ``pytest.importorskip``)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

_SRC = Path(__file__).parent / "src"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if importlib.util.find_spec("meltingpot") is not None:
        return
    skip = pytest.mark.skip(reason="torchenv_meltingpot's docstring examples need dm-meltingpot")
    for item in items:
        if isinstance(item, pytest.DoctestItem) and _SRC in item.path.parents:
            item.add_marker(skip)
