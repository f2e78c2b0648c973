"""pytest configuration of the jax plugin's directory: without JAX and the simulators its
doctests are skipped (each module's examples need the library they show)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

_SRC = Path(__file__).parent / "src"
# module stem -> the distributions its docstring examples import
_NEEDS = {
    "_brax": ("jax", "brax"),
    "_grad": ("jax", "brax"),
    "_jumanji": ("jax", "jumanji"),
    "_jumanji_specs": ("jax", "jumanji"),
    "_versions": ("jax", "brax", "jumanji"),
    "__init__": ("jax", "brax"),
    "_bridge": ("jax",),
    "_base": ("jax",),
}


def _missing(names: tuple[str, ...]) -> list[str]:
    return [n for n in names if importlib.util.find_spec(n) is None]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if not isinstance(item, pytest.DoctestItem) or _SRC not in item.path.parents:
            continue
        missing = _missing(_NEEDS.get(item.path.stem, ("jax",)))
        if missing:
            reason = f"torchenv_jax's docstring examples need {', '.join(missing)}"
            item.add_marker(pytest.mark.skip(reason=reason))
