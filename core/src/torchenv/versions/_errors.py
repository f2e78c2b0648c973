"""Errors raised when an installed distribution does not fit what the code supports."""

from __future__ import annotations


class DistributionNotInstalledError(ModuleNotFoundError):
    """A distribution needed to pick an implementation is not installed.

    Attributes:
        distribution: the distribution (or import) name that was looked up.
    """

    def __init__(self, message: str, *, distribution: str) -> None:
        super().__init__(message, name=distribution)
        self.distribution = distribution


class UnsupportedVersionError(ImportError):
    """The installed version of a distribution is outside every supported range.

    Attributes:
        distribution: the distribution name.
        version: the installed version, as a string.
        supported: the supported ranges, as readable strings (``">=0.26, <1.0"``).
    """

    def __init__(
        self, message: str, *, distribution: str, version: str, supported: tuple[str, ...]
    ) -> None:
        super().__init__(message, name=distribution)
        self.distribution = distribution
        self.version = version
        self.supported = supported
