"""Throw-away plugin distributions for registry and CLI tests (real metadata, no mocks).

A :class:`FakeSite` is a directory put on ``sys.path`` that holds ``<dist>-<ver>.dist-info``
folders (METADATA, entry_points.txt, top_level.txt) and the plain modules they provide, so
``importlib.metadata`` discovers them exactly as installed distributions.
"""

from __future__ import annotations

import importlib
import sys
import textwrap
from pathlib import Path

import pytest

from torchenv.registry import reset_plugins

PLUGIN_TEMPLATE = """\
import pluggy

from torchenv.registry import Backend

hookimpl = pluggy.HookimplMarker("torchenv")
BACKEND = {backend!r}
ENVS = {envs!r}
SIMULATOR_MODULE = {sim_module!r}


@hookimpl
def torchenv_backends():
    return [Backend(name=BACKEND, distribution={dist!r}, simulator={simulator!r},
                    supported={supported!r}, install={install!r}, aliases={aliases!r},
                    extra_distributions={extras!r}, description="fake backend for tests")]


@hookimpl
def torchenv_list_envs(backend):
    if backend != BACKEND:
        return None
    if SIMULATOR_MODULE:
        __import__(SIMULATOR_MODULE)
    return list(ENVS)


class FakeEnv:
    def __init__(self, env_id, kwargs):
        self.env_id = env_id
        self.kwargs = kwargs


@hookimpl
def torchenv_make_env(backend, env_id, kwargs):
    if backend != BACKEND or env_id not in ENVS:
        return None
    if SIMULATOR_MODULE:
        __import__(SIMULATOR_MODULE)
    return FakeEnv(env_id, kwargs)
"""


class FakeSite:
    """A sys.path entry where tests "install" distributions."""

    def __init__(self, root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.root = root
        self.modules: list[str] = []
        root.mkdir(parents=True, exist_ok=True)
        monkeypatch.syspath_prepend(str(root))

    def dist(
        self,
        name: str,
        version: str,
        *,
        entry_points: dict[str, str] | None = None,
        modules: dict[str, str] | None = None,
        requires: tuple[str, ...] = (),
    ) -> Path:
        """Install distribution ``name`` ``version`` with ``torchenv`` entry points and modules."""
        info = self.root / f"{name.replace('-', '_')}-{version}.dist-info"
        info.mkdir()
        requires_lines = "".join(f"Requires-Dist: {r}\n" for r in requires)
        (info / "METADATA").write_text(
            f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n{requires_lines}"
        )
        if entry_points:
            lines = "".join(f"{k} = {v}\n" for k, v in entry_points.items())
            (info / "entry_points.txt").write_text(f"[torchenv]\n{lines}")
        for module, source in (modules or {}).items():
            (self.root / f"{module}.py").write_text(textwrap.dedent(source))
            self.modules.append(module)
        if modules:
            (info / "top_level.txt").write_text("".join(f"{m}\n" for m in modules))
        self.refresh()
        return info

    def plugin(
        self,
        backend: str,
        *,
        dist: str | None = None,
        version: str = "0.1.0",
        envs: tuple[str, ...] = ("Alpha-v0", "Beta-v1"),
        simulator: str | None = None,
        sim_module: str | None = None,
        supported: str = "",
        install: str = "",
        aliases: tuple[str, ...] = (),
        extras: tuple[str, ...] = (),
        entry_point: str | None = None,
        requires: tuple[str, ...] = (),
    ) -> str:
        """Install a working plugin distribution for ``backend``; return its hook module name."""
        dist = dist or f"torchenv-{backend}"
        module = f"tev_plugin_{backend.replace('-', '_')}_{len(self.modules)}"
        source = PLUGIN_TEMPLATE.format(
            backend=backend,
            envs=tuple(envs),
            sim_module=sim_module,
            dist=dist,
            simulator=simulator,
            supported=supported,
            install=install,
            aliases=tuple(aliases),
            extras=tuple(extras),
        )
        self.dist(
            dist,
            version,
            entry_points={entry_point or backend: module},
            modules={module: source},
            requires=requires,
        )
        return module

    def simulator(self, name: str, version: str, module: str | None = None) -> None:
        """Install a fake simulator distribution (with an importable module if given)."""
        self.dist(name, version, modules={module: "IMPORTED = True\n"} if module else None)

    def refresh(self) -> None:
        importlib.invalidate_caches()
        reset_plugins()

    def cleanup(self) -> None:
        for module in self.modules:
            sys.modules.pop(module, None)
        reset_plugins()
