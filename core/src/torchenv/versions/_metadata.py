"""Installed versions, read from distribution metadata without importing anything.

A name can be a distribution name (``"dm-control"``) or an import name (``"dm_control"``,
``"cv2"``); import names are mapped to the distribution that provides them. Look-ups are cached;
:func:`clear_version_cache` forgets them (tests that install distributions, backend switches).
"""

from __future__ import annotations

import importlib.metadata as metadata
import re
import threading

from packaging.version import InvalidVersion, Version

# Import names whose distribution has another name, or that are commonly confused. Checked first.
DISTRIBUTION_OVERRIDES: dict[str, str] = {
    "gym": "gym",
    "gymnasium": "gymnasium",
    "dm_control": "dm_control",
    "dm_env": "dm-env",
    "mujoco": "mujoco",
    "cv2": "opencv-python",
    "sklearn": "scikit-learn",
    "yaml": "PyYAML",
    "PIL": "pillow",
    "ale_py": "ale-py",
    "isaacgym": "isaacgym",
}

_lock = threading.Lock()
_versions: dict[str, Version | None] = {}
_dist_names: dict[str, str | None] = {}
_packages: dict[str, list[str]] | None = None


def clear_version_cache() -> None:
    """Forget every cached distribution name and version (the next look-up reads metadata again)."""
    global _packages
    with _lock:
        _versions.clear()
        _dist_names.clear()
        _packages = None


def _exists(dist: str) -> bool:
    try:
        metadata.distribution(dist)
    except metadata.PackageNotFoundError:
        return False
    return True


def _packages_distributions() -> dict[str, list[str]]:
    global _packages
    if _packages is None:
        _packages = metadata.packages_distributions()
    return _packages


def distribution_name(name: str) -> str | None:
    """Return the installed distribution that provides ``name``, or ``None`` if none does.

    ``name`` may be a distribution name or a top-level import name.

    >>> distribution_name("packaging")
    'packaging'
    >>> distribution_name("surely-not-installed-xyz") is None
    True
    """
    if name in _dist_names:
        return _dist_names[name]
    candidates = [DISTRIBUTION_OVERRIDES[name]] if name in DISTRIBUTION_OVERRIDES else []
    candidates.append(name)
    found = next((dist for dist in candidates if _exists(dist)), None)
    if found is None and name.isidentifier():
        provided = _packages_distributions().get(name)
        found = provided[0] if provided else None
    _dist_names[name] = found
    return found


def parse_version(text: str) -> Version:
    """Parse a version string with PEP 440 rules, tolerating legacy suffixes.

    >>> parse_version("1.0.post1") > parse_version("1.0")
    True
    >>> parse_version("2.3.0-custom")
    <Version('2.3.0')>
    """
    try:
        return Version(text)
    except InvalidVersion:
        match = re.match(r"\s*v?(\d+(?:\.\d+)*)", text)
        if match is None:
            raise InvalidVersion(f"cannot read a version from {text!r}") from None
        return Version(match.group(1))


def installed_version(name: str) -> Version | None:
    """Return the installed version of a distribution (or import name), ``None`` if not installed.

    Reads distribution metadata only: the module is not imported.

    >>> installed_version("packaging") >= parse_version("20")
    True
    >>> installed_version("surely-not-installed-xyz") is None
    True
    """
    if name in _versions:
        return _versions[name]
    dist = distribution_name(name)
    version = None
    if dist is not None:
        try:
            version = parse_version(metadata.version(dist))
        except metadata.PackageNotFoundError:
            version = None
    with _lock:
        _versions[name] = version
    return version
