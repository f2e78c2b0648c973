"""The task table of the installed PettingZoo (and mpe2): names, lookup, per-version sources."""

from __future__ import annotations

import importlib.util

import pytest
from packaging.version import Version

pytest.importorskip("pettingzoo")

import pettingzoo

from torchenv.registry import UnknownEnvError
from torchenv_pettingzoo._tasks import Task, all_tasks, find_task, task_names
from torchenv_pettingzoo._versions import builtin_tasks, mpe_package, scan_package

pytestmark = pytest.mark.pettingzoo

VERSION = Version(pettingzoo.__version__)
HAS_MPE2 = importlib.util.find_spec("mpe2") is not None


def test_task_names_are_sorted_and_made_of_families():
    names = task_names()
    assert names == sorted(names)
    assert "classic/tictactoe_v3" in names
    assert all(n.split("/")[0] in {"atari", "butterfly", "classic", "sisl", "mpe"} for n in names)
    assert set(names) <= set(all_tasks())


def test_mpe_comes_from_the_version_s_source():
    if Version("1.26") > VERSION:
        assert mpe_package() == "pettingzoo.mpe"
        assert all_tasks()["mpe/simple_spread_v3"].module == "pettingzoo.mpe.simple_spread_v3"
    elif HAS_MPE2:
        assert mpe_package() == "mpe2"
        assert all_tasks()["mpe/simple_spread_v3"].module == "mpe2.simple_spread_v3"
    else:
        assert mpe_package() is None
        assert not any(n.startswith("mpe/") for n in all_tasks())


def test_builtin_tasks_per_version():
    tasks = builtin_tasks()
    entry = tasks["classic/tictactoe_v3"]
    if Version("1.27") <= VERSION:
        # the registry: no import needed to know which tasks have a parallel API
        assert entry == {"registry_id": "classic/tictactoe-v3", "parallel": False}
        assert tasks["classic/rps_v2"]["parallel"] is True
    else:
        assert entry == {"module": "pettingzoo.classic.tictactoe_v3"}
        assert "tictactoe_v3" in scan_package("pettingzoo.classic")
    assert not any(name.startswith("mpe/") for name in tasks)


def test_find_task_forms():
    assert find_task("classic/tictactoe_v3").name == "classic/tictactoe_v3"
    assert find_task("tictactoe_v3").name == "classic/tictactoe_v3"  # TorchRL's bare name
    assert find_task("classic/tictactoe-v3").name == "classic/tictactoe_v3"  # registry spelling
    assert find_task("classic/tictactoe").name == "classic/tictactoe_v3"  # newest version


def test_unknown_task_suggests_close_names():
    with pytest.raises(UnknownEnvError, match="classic/tictactoe_v3"):
        find_task("classic/tictactoe_v9")
    with pytest.raises(UnknownEnvError):
        find_task("no_such_game_v1")


def test_missing_dependencies_name_what_to_install():
    task = Task("sisl/fake_walker_v1", module="pettingzoo.sisl.fake_walker_v1")
    assert task.requirements() == ("pygame", "pymunk", "scipy")
    with pytest.raises(ImportError, match=r"pettingzoo:sisl/fake_walker_v1 cannot be imported"):
        task.make(False, {})
    box2d = Task("sisl/multiwalker_v9").requirements()
    assert box2d == ("Box2D", "pygame")


def test_has_parallel():
    assert not find_task("classic/tictactoe_v3").has_parallel()
    if "mpe/simple_spread_v3" in all_tasks():
        assert find_task("mpe/simple_spread_v3").has_parallel()


def test_mpe_without_mpe2_says_to_install_it(monkeypatch):
    import torchenv_pettingzoo._tasks as tasks

    monkeypatch.setattr(tasks, "mpe_package", lambda: None)
    with pytest.raises(ImportError, match="pip install mpe2"):
        tasks.find_task("mpe/no_such_scenario_v1")
