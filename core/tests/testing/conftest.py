"""Makes the core's test envs (``core/tests/envs/_*_mocks.py``) importable from the test files."""

import sys
from pathlib import Path

_ENVS = str(Path(__file__).parent.parent / "envs")
if _ENVS not in sys.path:
    sys.path.insert(0, _ENVS)
