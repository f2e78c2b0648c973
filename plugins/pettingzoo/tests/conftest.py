"""The pettingzoo plugin's tests import the test-local envs of ``leaving_envs.py``."""

from __future__ import annotations

import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

# the test-local envs are a helper module, not tests (and need PettingZoo to import)
collect_ignore = ["leaving_envs.py"]
