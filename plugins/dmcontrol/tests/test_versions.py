"""The dm_control / mujoco pair check and how ``torchenv backends`` reports it."""

from __future__ import annotations

import pytest

import torchenv.registry as registry
from torchenv_dmcontrol import _versions
from torchenv_dmcontrol._versions import TESTED_PAIRS, mujoco_range, pair_problem


@pytest.mark.parametrize(("dm", "mj"), sorted(TESTED_PAIRS.items()))
def test_tested_pairs_are_supported(dm, mj):
    assert pair_problem(dm, mj) is None
    assert pair_problem(dm, mj[:-1] + "9") is None  # same major.minor series


@pytest.mark.parametrize(
    ("dm", "mj", "needle", "hint"),
    [
        ("1.0.50", "4.0.0", "mujoco>=3.17.0,<3.18", '"dm_control==1.0.50" "mujoco==3.17.0"'),
        ("1.0.41", "3.17.0", "mujoco>=3.8.1,<3.9", '"dm_control==1.0.41" "mujoco==3.8.1"'),
        ("1.0.30", "3.1.0", "not supported", '"dm_control==1.0.50" "mujoco==3.17.0"'),
        (None, "3.17.0", "dm_control is not installed", "dm_control==1.0.50"),
        ("1.0.50", None, "mujoco is not installed", "mujoco==3.17.0"),
    ],
)
def test_bad_pairs_name_the_pair_to_install(dm, mj, needle, hint):
    reason, install = pair_problem(dm, mj)
    assert needle in reason
    assert hint in install


def test_untested_version_uses_the_declared_minimum():
    from packaging.version import Version

    low, high = mujoco_range("1.0.47", declared_minimum=Version("3.14.0"))
    assert (str(low), str(high)) == ("3.14.0", "3.15")


def test_installed_pair_is_supported_here():
    assert _versions.installed_pair_problem() is None
    _versions.check_pair()


def test_backends_report_an_unsupported_pair(monkeypatch):
    real = _versions._installed
    monkeypatch.setattr(
        _versions, "_installed", lambda name: "4.0.0" if name == "mujoco" else real(name)
    )
    info = {b.name: b for b in registry.backends()}["dmcontrol"]
    assert info.status == "unsupported version"
    assert "mujoco 4.0.0" in info.reason
    assert "mujoco==" in info.hint and "dm_control==" in info.hint
    with pytest.raises(ImportError, match="Install a supported pair"):
        _versions.check_pair()
    with pytest.raises(registry.BackendUnavailableError, match="unsupported version"):
        registry.make("dmcontrol:cheetah/run")
