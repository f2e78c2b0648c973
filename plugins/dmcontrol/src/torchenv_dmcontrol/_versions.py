"""Which dm_control / mujoco pairs work together, checked from metadata (no simulator import).

dm_control is released against one mujoco and declares only ``mujoco>=X``: pip then happily
installs a newer mujoco (4.x) with which ``suite.load`` crashes. torchenv-dmcontrol therefore
supports *pairs*: :data:`TESTED_PAIRS` lists the ones its tox cells run; for other dm_control
versions in :data:`SUPPORTED` the mujoco must share the major.minor of the minimum that
dm_control declares (the version it was released with).
"""

from __future__ import annotations

from importlib import metadata

from packaging.requirements import Requirement
from packaging.version import InvalidVersion, Version

__all__ = [
    "SUPPORTED",
    "TESTED_PAIRS",
    "DEFAULT_PAIR",
    "install_command",
    "mujoco_range",
    "pair_problem",
    "check_pair",
]

#: dm_control versions this plugin supports (PEP 440).
SUPPORTED = ">=1.0.41,<1.1"
#: dm_control version -> the mujoco version it is tested with (the tox cells).
TESTED_PAIRS: dict[str, str] = {"1.0.41": "3.8.1", "1.0.44": "3.11.0", "1.0.50": "3.17.0"}
#: the pair the CI and the plugin's default extra use.
DEFAULT_PAIR = ("1.0.50", "3.17.0")


def install_command(dm_control: str, mujoco: str) -> str:
    """The pip command that installs one pair.

    >>> install_command("1.0.50", "3.17.0")
    'pip install "dm_control==1.0.50" "mujoco==3.17.0"'
    """
    return f'pip install "dm_control=={dm_control}" "mujoco=={mujoco}"'


def _declared_mujoco_minimum(dm_version: str) -> Version | None:
    try:
        requires = metadata.requires("dm_control") or []
    except metadata.PackageNotFoundError:
        return None
    for line in requires:
        req = Requirement(line)
        if req.name.lower() == "mujoco" and req.marker is None:
            for spec in req.specifier:
                if spec.operator in (">=", "=="):
                    return Version(spec.version)
    return None


def mujoco_range(
    dm_version: str, declared_minimum: Version | None = None
) -> tuple[Version, Version]:
    """``[low, high)``: the mujoco versions that go with dm_control ``dm_version``.

    A tested pair gives its mujoco's major.minor series; otherwise the series of the minimum
    dm_control declares (``declared_minimum``, read from the installed metadata when omitted).

    >>> [str(v) for v in mujoco_range("1.0.50")]
    ['3.17.0', '3.18']
    """
    tested = TESTED_PAIRS.get(dm_version)
    low = Version(tested) if tested else declared_minimum or _declared_mujoco_minimum(dm_version)
    if low is None:
        raise ValueError(f"no known mujoco for dm_control {dm_version}")
    return low, Version(f"{low.major}.{low.minor + 1}")


def _installed(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def pair_problem(dm_version: str | None, mujoco_version: str | None) -> tuple[str, str] | None:
    """``None`` if the two versions form a supported pair, else ``(reason, install hint)``.

    >>> pair_problem("1.0.50", "3.17.0") is None
    True
    >>> reason, hint = pair_problem("1.0.50", "4.0.0")
    >>> reason
    'dm_control 1.0.50 needs mujoco>=3.17.0,<3.18 (found mujoco 4.0.0)'
    >>> hint
    'pip install "dm_control==1.0.50" "mujoco==3.17.0"'
    """
    default_hint = install_command(*DEFAULT_PAIR)
    if dm_version is None:
        return "dm_control is not installed", default_hint
    if mujoco_version is None:
        return "mujoco is not installed", default_hint
    try:
        dm, mj = Version(dm_version), Version(mujoco_version)
    except InvalidVersion as err:
        return f"unreadable version: {err}", default_hint
    from packaging.specifiers import SpecifierSet

    if not SpecifierSet(SUPPORTED).contains(dm, prereleases=True):
        return (
            f"dm_control {dm_version} is not supported by torchenv-dmcontrol "
            f"(supported: dm_control{SUPPORTED})",
            default_hint,
        )
    try:
        low, high = mujoco_range(dm_version)
    except ValueError as err:
        return str(err), default_hint
    if low <= mj < high:
        return None
    hint = install_command(dm_version, str(low))
    return f"dm_control {dm_version} needs mujoco>={low},<{high} (found mujoco {mj})", hint


def installed_pair_problem() -> tuple[str, str] | None:
    """:func:`pair_problem` of the installed dm_control and mujoco (metadata only)."""
    return pair_problem(_installed("dm_control"), _installed("mujoco"))


def check_pair() -> None:
    """Raise an ``ImportError`` naming the pair to install if the installed pair is unsupported.

    >>> check_pair()
    """
    problem = installed_pair_problem()
    if problem is not None:
        reason, hint = problem
        raise ImportError(f"torchenv-dmcontrol: {reason}. Install a supported pair: {hint}")
