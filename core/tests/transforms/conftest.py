"""Loads the test helpers (small envs with known dynamics) as ``torchenv_transforms_helpers``."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

_NAME = "torchenv_transforms_helpers"
if _NAME not in sys.modules:
    _spec = importlib.util.spec_from_file_location(_NAME, Path(__file__).with_name("_helpers.py"))
    _module = importlib.util.module_from_spec(_spec)
    sys.modules[_NAME] = _module
    _spec.loader.exec_module(_module)


import pytest  # noqa: E402


@pytest.fixture
def image_env():
    return sys.modules[_NAME].ImageEnv
