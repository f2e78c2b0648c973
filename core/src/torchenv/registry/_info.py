"""BackendInfo: what ``torchenv.backends()`` reports, and how a backend's status is found.

The status comes from distribution metadata only: no simulator is imported.
"""

from __future__ import annotations

from dataclasses import dataclass

from packaging.specifiers import InvalidSpecifier, SpecifierSet

from torchenv.registry._compat import core_mismatch
from torchenv.registry._hookspecs import Backend
from torchenv.versions import installed_version

OK = "ok"
SIMULATOR_MISSING = "simulator missing"
UNSUPPORTED_VERSION = "unsupported version"
FAILED_TO_LOAD = "failed to load"
INCOMPATIBLE_CORE = "incompatible core"
STATUSES = (OK, SIMULATOR_MISSING, UNSUPPORTED_VERSION, FAILED_TO_LOAD, INCOMPATIBLE_CORE)


@dataclass(frozen=True)
class BackendInfo:
    """One backend as installed here.

    Attributes:
        name: the backend name (``make("name:...")``); for a plugin that failed to load, its
            entry-point name.
        plugin: the entry-point name of the plugin that declares it.
        distribution: the plugin's distribution (``"torchenv-gym"``), ``None`` if unknown.
        distribution_version: its installed version.
        simulator: the simulator distribution (``"gymnasium"``), ``None`` if none is needed.
        simulator_version: the installed simulator version, ``None`` if missing or not needed.
        supported: PEP 440 specifier of the supported simulator versions (``""``: any).
        status: ``"ok"``, ``"simulator missing"``, ``"unsupported version"``,
            ``"failed to load"`` or ``"incompatible core"`` (the plugin needs another torchenv).
        reason: why the status is not ``"ok"`` (empty when it is).
        hint: what to do about it, usually a ``pip install`` command.
        description: one line from the plugin.
        aliases: other accepted names.

    >>> info = BackendInfo(name="toy", plugin="toy", distribution="torchenv-toy",
    ...                    distribution_version="0.1", simulator=None, simulator_version=None,
    ...                    supported="", status="ok")
    >>> info.ok
    True
    """

    name: str
    plugin: str
    distribution: str | None
    distribution_version: str | None
    simulator: str | None
    simulator_version: str | None
    supported: str
    status: str
    reason: str = ""
    hint: str = ""
    description: str = ""
    aliases: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        """Whether envs of this backend can be made."""
        return self.status == OK

    def __str__(self) -> str:
        plugin = " ".join(filter(None, (self.distribution, self.distribution_version)))
        text = f"{self.name} ({plugin or self.plugin}): {self.status}"
        if self.reason:
            return f"{text}: {self.reason}" + (f". {self.hint}" if self.hint else "")
        if self.simulator:
            text += (
                f"; {self.simulator} {self.simulator_version} (supported {self.supported or 'any'})"
            )
        return text


def _install_hint(backend: Backend, requirement: str) -> str:
    return backend.install or f'pip install "{requirement}"'


def backend_info(
    backend: Backend, plugin: str, distribution: str | None, version: str | None
) -> BackendInfo:
    """Compute the status of ``backend`` from installed metadata (imports no simulator)."""
    base = {
        "name": backend.name,
        "plugin": plugin,
        "distribution": distribution or backend.distribution,
        "distribution_version": version,
        "simulator": backend.simulator,
        "supported": backend.supported,
        "description": backend.description,
        "aliases": tuple(backend.aliases),
    }
    sim_version = None
    status, reason, hint = OK, "", ""
    try:
        spec = SpecifierSet(backend.supported)
    except InvalidSpecifier as err:
        spec = SpecifierSet()
        status, reason = FAILED_TO_LOAD, f"invalid supported range {backend.supported!r}: {err}"
        hint = f"report it to the maintainers of {base['distribution']}"
    needed = core_mismatch(base["distribution"]) if status == OK else None
    if needed:
        core = installed_version("torchenv")
        status = INCOMPATIBLE_CORE
        reason = f"{base['distribution']} {version} needs {needed}, torchenv {core} is installed"
        hint = f'pip install --upgrade {base["distribution"]} "{needed}"'
    if backend.simulator and status == OK:
        found = installed_version(backend.simulator)
        sim_version = str(found) if found is not None else None
        requirement = f"{backend.simulator}{backend.supported}"
        if found is None:
            status, reason = SIMULATOR_MISSING, f"{backend.simulator} is not installed"
            hint = _install_hint(backend, requirement)
        elif not spec.contains(found, prereleases=True):
            status = UNSUPPORTED_VERSION
            reason = (
                f"{backend.simulator} {found} is installed, but {base['distribution']} "
                f"supports {requirement}"
            )
            hint = f'pip install "{requirement}"'
    if status == OK:
        for extra in backend.extra_distributions:
            if installed_version(extra) is None:
                status, reason = SIMULATOR_MISSING, f"{extra} is not installed"
                hint = _install_hint(backend, extra)
                break
    return BackendInfo(
        **base, simulator_version=sim_version, status=status, reason=reason, hint=hint
    )


def failed_info(
    plugin: str, distribution: str | None, version: str | None, error: BaseException
) -> BackendInfo:
    """The entry of a plugin that failed to load (its backends are unknown)."""
    reinstall = f"pip install --force-reinstall {distribution}" if distribution else "reinstall it"
    return BackendInfo(
        name=plugin,
        plugin=plugin,
        distribution=distribution,
        distribution_version=version,
        simulator=None,
        simulator_version=None,
        supported="",
        status=FAILED_TO_LOAD,
        reason=f"{type(error).__name__}: {error}".strip(),
        hint=f"{reinstall}, or skip it with TORCHENV_DISABLE_PLUGINS={plugin}",
    )
