"""pytest configuration of the gym plugin's directory (tests and doctests).

The docstring examples of ``torchenv_gym`` are written against gymnasium (the default backend,
vector envs): where only gym is installed (the ``gym023`` / ``gym026`` cells of ``tox.ini``) they
are skipped rather than failed.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

_SRC = Path(__file__).parent / "src"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if importlib.util.find_spec("gymnasium") is not None:
        return
    skip = pytest.mark.skip(reason="torchenv_gym's docstring examples need gymnasium")
    for item in items:
        if isinstance(item, pytest.DoctestItem) and _SRC in item.path.parents:
            item.add_marker(skip)
