"""Whether a plugin was built for the installed core: its ``Requires-Dist: torchenv...``.

A plugin distribution declares the core versions it works with (``torchenv>=0.1,<0.2``); a
plugin installed beside a core outside that range is reported, not loaded into a crash.
"""

from __future__ import annotations

import functools
from importlib import metadata

from packaging.requirements import InvalidRequirement, Requirement
from packaging.version import Version

__all__ = ["core_mismatch"]

CORE = "torchenv"


@functools.cache
def _core_version() -> Version | None:
    try:
        return Version(metadata.version(CORE))
    except metadata.PackageNotFoundError:  # a source tree without metadata
        return None


def core_mismatch(distribution: str | None) -> str | None:
    """The plugin's core requirement when the installed core does not meet it, else ``None``.

    >>> core_mismatch("torchenv") is None  # the core itself, and dists without the requirement
    True
    """
    if not distribution or distribution == CORE:
        return None
    try:
        requires = metadata.requires(distribution) or ()
    except metadata.PackageNotFoundError:
        return None
    core = _core_version()
    for line in requires:
        try:
            requirement = Requirement(line)
        except InvalidRequirement:
            continue
        if requirement.name != CORE or requirement.marker is not None:
            continue
        if core is not None and not requirement.specifier.contains(core, prereleases=True):
            return str(requirement)
    return None
