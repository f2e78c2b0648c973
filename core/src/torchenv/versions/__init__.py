"""torchenv.versions: dispatch on installed library versions, read from distribution metadata.

>>> from torchenv.versions import implement_for, installed_version
>>> installed_version("packaging") is not None
True
"""

from torchenv.versions._errors import DistributionNotInstalledError, UnsupportedVersionError
from torchenv.versions._implement_for import (
    VersionDispatcher,
    format_range,
    implement_for,
    version_in_range,
)
from torchenv.versions._metadata import (
    DISTRIBUTION_OVERRIDES,
    clear_version_cache,
    distribution_name,
    installed_version,
    parse_version,
)

__all__ = [
    "DISTRIBUTION_OVERRIDES",
    "DistributionNotInstalledError",
    "UnsupportedVersionError",
    "VersionDispatcher",
    "clear_version_cache",
    "distribution_name",
    "format_range",
    "implement_for",
    "installed_version",
    "parse_version",
    "version_in_range",
]
