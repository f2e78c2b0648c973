"""Hostile plugins cannot take the core down (issue 20): exits, name clashes, hooks that raise
or hang. Real throw-away distributions, discovered through their entry points."""

from __future__ import annotations

import os
import subprocess
import sys
import threading

import pytest

import torchenv.registry as registry
from torchenv.registry import AmbiguousNameError, PluginWarning

HOOKS = "import pluggy\nhookimpl = pluggy.HookimplMarker('torchenv')\n"


def _failed(name):
    return [b for b in registry.backends() if b.name == name and b.status == "failed to load"]


@pytest.mark.parametrize(
    ("source", "reason"),
    [
        ("import sys\nsys.exit(3)\n", "sys.exit(3)"),
        ("raise SystemExit('bye')\n", "sys.exit('bye')"),
        (HOOKS + "@hookimpl\ndef torchenv_backends():\n    raise SystemExit(4)\n", "sys.exit(4)"),
    ],
)
def test_plugin_exiting_on_import_is_a_failed_plugin(site, source, reason):
    site.dist(
        "torchenv-exits", "1.0", entry_points={"tevexit": "tev_exit"}, modules={"tev_exit": source}
    )
    (info,) = _failed("tevexit")
    assert reason in info.reason and "PluginExitError" in info.reason
    assert type(registry.make("builtin:Pendulum")).__name__ == "PendulumEnv"
    assert registry.list_envs("builtin") == ["CartPole", "Pendulum", "TicTacToe"]


def test_plugin_calling_os_exit_on_import_is_a_failed_plugin(site):
    """Run in a child process: were the guard missing, ``os._exit`` would end pytest itself."""
    site.dist(
        "torchenv-hardexit",
        "1.0",
        entry_points={"tevhard": "tev_hard"},
        modules={"tev_hard": "import os\nos._exit(7)\n"},
    )
    code = (
        "import torchenv\n"
        "bad = [b for b in torchenv.backends() if b.name == 'tevhard']\n"
        "print(bad[0].status, '|', bad[0].reason)\n"
        "print(type(torchenv.make('builtin:Pendulum')).__name__)\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site.root), *sys.path])}
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, (out.returncode, out.stderr[-2000:])
    lines = out.stdout.splitlines()
    assert lines[0].startswith("failed to load |") and "os._exit(7)" in lines[0]
    assert lines[1] == "PendulumEnv"


def test_os_exit_from_another_thread_is_left_alone_while_plugins_load():
    from torchenv.registry._manager import _no_exit

    real = os._exit
    seen = []
    with _no_exit():
        guarded = os._exit
        thread = threading.Thread(target=lambda: seen.append(guarded is not real))
        thread.start()
        thread.join()
        with pytest.raises(registry.PluginExitError, match=r"os._exit\(5\)"):
            os._exit(5)
    assert os._exit is real and seen == [True]


def test_third_party_backend_named_builtin_does_not_shadow_the_core(site):
    site.plugin("builtin", dist="torchenv-impostor", envs=("Pendulum",))
    assert type(registry.make("builtin:Pendulum")).__name__ == "PendulumEnv"
    assert type(registry.make("Pendulum")).__name__ == "PendulumEnv"
    assert registry.list_envs("builtin") == ["CartPole", "Pendulum", "TicTacToe"]


def test_alias_clash_between_third_parties_names_both_and_how_to_choose(site):
    site.plugin("tevone", dist="torchenv-one", aliases=("shared",))
    site.plugin("tevtwo", dist="torchenv-two", aliases=("shared",))
    with pytest.raises(AmbiguousNameError) as info:
        registry.make("shared:Alpha-v0")
    message = str(info.value)
    assert "torchenv-one" in message and "torchenv-two" in message
    assert "TORCHENV_DISABLE_PLUGINS=" in message
    assert registry.make("tevone:Alpha-v0").env_id == "Alpha-v0"


def test_env_created_hook_that_raises_warns_and_make_succeeds(site):
    source = HOOKS + (
        "@hookimpl\ndef torchenv_env_created(env, backend, env_id):\n"
        "    raise RuntimeError('observer broke')\n"
    )
    site.dist(
        "torchenv-observer", "1.0", entry_points={"tevobs": "tev_obs"}, modules={"tev_obs": source}
    )
    with pytest.warns(
        PluginWarning,
        match=r"plugin 'tevobs': torchenv_env_created raised RuntimeError: observer broke",
    ):
        env = registry.make("builtin:Pendulum")
    assert type(env).__name__ == "PendulumEnv"


def _hanging_lister(site, release_name):
    source = HOOKS + (
        "import threading\nfrom torchenv.registry import Backend\n"
        f"{release_name} = threading.Event()\n"
        "@hookimpl\ndef torchenv_backends():\n"
        "    return [Backend(name='tevhang', distribution='torchenv-hang', simulator=None)]\n"
        "@hookimpl\ndef torchenv_list_envs(backend):\n"
        f"    {release_name}.wait(60)\n"
        "    return ['Slow-v0']\n"
    )
    site.dist(
        "torchenv-hang", "1.0", entry_points={"tevhang": "tev_hang"}, modules={"tev_hang": source}
    )


def test_hanging_list_hook_does_not_block_a_bare_builtin_id(site):
    _hanging_lister(site, "RELEASE")
    try:
        assert type(registry.make("Pendulum")).__name__ == "PendulumEnv"
    finally:
        sys.modules["tev_hang"].RELEASE.set()


def test_hanging_list_hook_is_skipped_with_a_warning_for_other_bare_ids(site, monkeypatch):
    _hanging_lister(site, "RELEASE")
    site.plugin("tevquick", envs=("Quick-v0",))
    monkeypatch.setenv("TORCHENV_LIST_TIMEOUT", "0.3")
    try:
        with pytest.warns(
            PluginWarning, match=r"plugin 'tevhang': torchenv_list_envs\('tevhang'\) did not answer"
        ):
            env = registry.make("Quick-v0")
        assert env.env_id == "Quick-v0"
    finally:
        sys.modules["tev_hang"].RELEASE.set()


def test_plugin_whose_import_hangs_is_reported_and_others_still_load(site, monkeypatch):
    """A hook module stuck at import (a lock never released) fails to load after
    ``TORCHENV_PLUGIN_LOAD_TIMEOUT`` seconds; make()/backends() work for every other backend."""
    site.dist(
        "torchenv-stuck",
        "1.0",
        entry_points={"tevstuck": "tev_stuck"},
        modules={"tev_stuck": "import threading\nRELEASE = threading.Event()\nRELEASE.wait(600)\n"},
    )
    site.plugin("tevquick2", envs=("Quick2-v0",))
    monkeypatch.setenv("TORCHENV_PLUGIN_LOAD_TIMEOUT", "0.5")
    try:
        infos = {b.name: b for b in registry.backends()}
        assert registry.make("Quick2-v0").env_id == "Quick2-v0"
        assert type(registry.make("builtin:Pendulum")).__name__ == "PendulumEnv"
        failed = [r for r in registry.plugins() if r.name == "tevstuck"]
        assert len(failed) == 1 and isinstance(failed[0].error, TimeoutError)
        message = str(failed[0].error)
        assert "tev_stuck" in message and "TORCHENV_DISABLE_PLUGINS=tevstuck" in message
        assert "tevquick2" in infos
    finally:
        module = sys.modules.get("tev_stuck")
        if module is not None and hasattr(module, "RELEASE"):
            module.RELEASE.set()
