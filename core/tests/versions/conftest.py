"""Fixtures: real throw-away distributions (dist-info metadata on sys.path), no mocks."""

from __future__ import annotations

import importlib
import itertools
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from torchenv.versions import implement_for

_counter = itertools.count()


@pytest.fixture(autouse=True)
def _fresh_versions() -> Iterator[None]:
    implement_for.reset()
    yield
    implement_for.reset()


@pytest.fixture
def install_dist(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., Path]]:
    """Install a distribution (metadata only, plus optional modules) into a fresh sys.path entry.

    Later installs shadow earlier ones, like a newer site directory would.
    """
    added: list[str] = []

    def install(
        name: str, version: str, *, modules: dict[str, str] | None = None, reset: bool = True
    ) -> Path:
        root = tmp_path / f"site{next(_counter)}"
        info = root / f"{name.replace('-', '_')}-{version}.dist-info"
        info.mkdir(parents=True)
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
        for module, source in (modules or {}).items():
            (root / f"{module}.py").write_text(source)
            added.append(module)
        if modules:
            (info / "top_level.txt").write_text("\n".join(modules) + "\n")
        monkeypatch.syspath_prepend(str(root))
        importlib.invalidate_caches()
        if reset:
            implement_for.reset()
        return root

    yield install
    for module in added:
        sys.modules.pop(module, None)
    importlib.invalidate_caches()
