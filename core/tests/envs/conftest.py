"""Makes the EnvBase test envs (``_envs_mocks``) importable from the test files."""

import sys
from pathlib import Path

_HERE = str(Path(__file__).parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)
