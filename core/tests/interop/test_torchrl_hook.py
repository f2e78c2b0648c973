"""The TorchRL registration hook, against a stand-in ``torchrl`` package built in a temp dir.

The real TorchRL runs in tests/test_torchrl_ecosystem.py (tox -e torchrl). Here a minimal
package with TorchRL's abstract roots checks the mechanics: registration when torchrl is
imported after torchenv or before it, the action-space map, and the opt-out variable.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

_FAKE_TORCHRL = {
    "torchrl/__init__.py": "from torchrl import data, envs\n",
    "torchrl/envs/__init__.py": "import abc\nclass EnvBase(abc.ABC):\n    pass\n",
    "torchrl/data/__init__.py": textwrap.dedent(
        """
        import abc
        class TensorSpec(abc.ABC):
            pass
        class Categorical(TensorSpec):
            pass
        class OneHot(TensorSpec):
            pass
        class Composite(TensorSpec):
            pass
        """
    ),
    "torchrl/data/utils.py": textwrap.dedent(
        """
        from torchrl.data import Categorical, OneHot
        ACTION_SPACE_MAP = {Categorical: "categorical", OneHot: "one_hot"}
        """
    ),
}

_CHECK = textwrap.dedent(
    """
    import torchrl.envs, torchrl.data, torchrl.data.utils
    from torchenv import specs
    from torchenv.envs import PendulumEnv
    from torchenv.interop import is_registered_with_torchrl
    print(is_registered_with_torchrl(),
          issubclass(PendulumEnv, torchrl.envs.EnvBase),
          isinstance(specs.OneHot(2), torchrl.data.OneHot),
          isinstance(specs.OneHot(2), torchrl.data.Categorical),
          torchrl.data.utils.ACTION_SPACE_MAP.get(specs.Categorical))
    """
)


@pytest.fixture
def fake_torchrl(tmp_path: Path) -> Path:
    for rel, text in _FAKE_TORCHRL.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return tmp_path


def _run(code: str, path: Path, **env: str) -> str:
    environ = {**os.environ, "PYTHONPATH": os.pathsep.join([str(path), *sys.path]), **env}
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=environ, timeout=120
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout.split()


@pytest.mark.parametrize("first", ["torchenv", "torchrl"])
def test_registers_whatever_the_import_order(fake_torchrl, first):
    order = (
        "import torchenv; import torchrl"
        if first == "torchenv"
        else "import torchrl; import torchenv"
    )
    out = _run(f"{order}\n{_CHECK}", fake_torchrl)
    assert out == ["True", "True", "True", "False", "categorical"]


def test_opt_out_variable_leaves_torchrl_alone(fake_torchrl):
    out = _run(
        f"import torchenv; import torchrl\n{_CHECK}", fake_torchrl, TORCHENV_TORCHRL_INTEROP="0"
    )
    assert out == ["False", "False", "False", "False", "None"]


def test_without_torchrl_registration_reports_false():
    from torchenv.interop import register_with_torchrl

    if "torchrl" in sys.modules or _importable("torchrl"):
        pytest.skip("torchrl is installed here; the fake-package tests cover the mechanics")
    assert register_with_torchrl() is False


def _importable(name: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(name) is not None
