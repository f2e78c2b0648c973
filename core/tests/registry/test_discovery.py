"""Entry-point discovery with real throw-away distributions: loading, failures, disabling."""

from __future__ import annotations

import sys

import pytest

import torchenv.registry as registry
from torchenv.registry import BackendUnavailableError, UnknownBackendError


def _info(name):
    matches = [b for b in registry.backends() if b.name == name]
    assert len(matches) == 1, [str(b) for b in registry.backends()]
    return matches[0]


def test_plugin_is_discovered_with_its_versions(site):
    site.simulator("tev-sim-ok", "1.2.0")
    site.plugin(
        "tevok",
        dist="torchenv-tevok",
        version="0.3.1",
        simulator="tev-sim-ok",
        supported=">=1.0,<2",
    )
    info = _info("tevok")
    assert info.status == "ok" and info.ok
    assert (info.distribution, info.distribution_version) == ("torchenv-tevok", "0.3.1")
    assert (info.simulator, info.simulator_version, info.supported) == (
        "tev-sim-ok",
        "1.2.0",
        ">=1.0,<2",
    )
    assert info.plugin == "tevok"
    record = next(p for p in registry.plugins() if p.name == "tevok")
    assert record.loaded and [b.name for b in record.backends] == ["tevok"]


def test_simulator_is_imported_only_when_listing_or_making(site):
    site.simulator("tev-sim-lazy", "1.0", module="tev_sim_lazy")
    site.plugin("tevlazy", simulator="tev-sim-lazy", sim_module="tev_sim_lazy")
    registry.backends()
    assert "tev_sim_lazy" not in sys.modules
    assert registry.list_envs("tevlazy") == ["Alpha-v0", "Beta-v1"]
    assert "tev_sim_lazy" in sys.modules


def test_broken_plugin_is_reported_and_does_not_break_others(site):
    site.dist(
        "torchenv-broken",
        "0.0.1",
        entry_points={"tevbroken": "tev_broken_hooks"},
        modules={"tev_broken_hooks": "raise RuntimeError('kaboom at import')\n"},
    )
    site.plugin("tevfine")
    broken = _info("tevbroken")
    assert broken.status == "failed to load"
    assert "RuntimeError: kaboom at import" in broken.reason
    assert "TORCHENV_DISABLE_PLUGINS=tevbroken" in broken.hint
    assert broken.distribution == "torchenv-broken"
    assert _info("tevfine").ok
    assert registry.make("tevfine:Alpha-v0").env_id == "Alpha-v0"
    with pytest.raises(BackendUnavailableError, match="kaboom") as info:
        registry.make("tevbroken:anything")
    assert info.value.status == "failed to load"


def test_entry_point_to_missing_module_is_reported(site):
    site.dist("torchenv-ghost", "1.0", entry_points={"tevghost": "tev_no_such_module"})
    info = _info("tevghost")
    assert info.status == "failed to load"
    assert "tev_no_such_module" in info.reason


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        ("    raise ValueError('cannot declare')\n", "ValueError: cannot declare"),
        ("    return ['not a backend']\n", "must return torchenv.registry.Backend"),
    ],
)
def test_plugin_failing_to_declare_backends_is_reported(site, body, reason):
    source = (
        "import pluggy\nhookimpl = pluggy.HookimplMarker('torchenv')\n"
        "@hookimpl\ndef torchenv_backends():\n" + body
    )
    site.dist(
        "torchenv-baddecl",
        "1.0",
        entry_points={"tevbaddecl": "tev_baddecl"},
        modules={"tev_baddecl": source},
    )
    site.plugin("tevgood")
    info = _info("tevbaddecl")
    assert info.status == "failed to load" and reason in info.reason
    assert _info("tevgood").ok
    assert "tevbaddecl" not in registry.plugin_manager().list_name_plugin()[0]


def test_plugin_with_unknown_hook_is_rejected(site):
    source = (
        "import pluggy\nhookimpl = pluggy.HookimplMarker('torchenv')\n"
        "@hookimpl\ndef torchenv_not_a_hook():\n    return 1\n"
    )
    site.dist(
        "torchenv-typo", "1.0", entry_points={"tevtypo": "tev_typo"}, modules={"tev_typo": source}
    )
    info = _info("tevtypo")
    assert info.status == "failed to load" and "torchenv_not_a_hook" in info.reason
    assert registry.plugin_manager().get_plugin("tevtypo") is None


def test_disable_plugins_by_entry_point_or_distribution(site, monkeypatch):
    site.plugin("tevoff", dist="torchenv-tevoff")
    site.plugin("tevon")
    monkeypatch.setenv("TORCHENV_DISABLE_PLUGINS", "tevoff, some-other")
    registry.reset_plugins()
    names = [b.name for b in registry.backends()]
    assert "tevoff" not in names and "tevon" in names
    with pytest.raises(UnknownBackendError, match="Disabled by TORCHENV_DISABLE_PLUGINS: "):
        registry.make("tevoff:Alpha-v0")
    monkeypatch.setenv("TORCHENV_DISABLE_PLUGINS", "torchenv_tevoff")  # distribution name
    registry.reset_plugins()
    assert "tevoff" not in [b.name for b in registry.backends()]


def test_disabling_a_broken_plugin_silences_it(site, monkeypatch):
    site.dist(
        "torchenv-noisy",
        "1.0",
        entry_points={"tevnoisy": "tev_noisy"},
        modules={"tev_noisy": "raise ImportError('nope')\n"},
    )
    assert _info("tevnoisy").status == "failed to load"
    monkeypatch.setenv("TORCHENV_DISABLE_PLUGINS", "tevnoisy")
    registry.reset_plugins()
    assert "tevnoisy" not in [b.name for b in registry.backends()]


def test_cached_manager_ignores_new_distributions(site):
    pm = registry.plugin_manager()
    # write a distribution directly, without FakeSite's refresh
    info = site.root / "torchenv_sneaky-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: torchenv-sneaky\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[torchenv]\ntevsneaky = tev_sneaky_mod\n")
    (site.root / "tev_sneaky_mod.py").write_text("X = 1\n")
    site.modules.append("tev_sneaky_mod")
    assert registry.plugin_manager() is pm
    assert pm.get_plugin("tevsneaky") is None
    registry.reset_plugins()
    assert registry.plugin_manager().get_plugin("tevsneaky") is not None


def test_duplicate_entry_point_name_is_reported(site):
    site.plugin("tevdup", dist="torchenv-dup-a")
    site.plugin("tevdup2", dist="torchenv-dup-b", entry_point="tevdup")
    failed = [p for p in registry.plugins() if not p.loaded and p.name == "tevdup"]
    assert len(failed) == 1 and "already used" in str(failed[0].error)


def test_in_process_plugin_registration():
    import types

    from torchenv.registry import Backend, hookimpl

    plugin = types.SimpleNamespace()
    plugin.torchenv_backends = hookimpl(lambda: [Backend("tevmem", "in-process")])
    plugin.torchenv_list_envs = hookimpl(lambda backend: ["X"] if backend == "tevmem" else None)
    registry.register_plugin(plugin, name="tevmem-plugin")
    try:
        assert registry.list_envs("tevmem") == ["X"]
        registry.reset_plugins()  # survives a re-discovery
        assert registry.list_envs("tevmem") == ["X"]
    finally:
        registry.unregister_plugin("tevmem-plugin")
    with pytest.raises(UnknownBackendError):
        registry.list_envs("tevmem")


def test_plugin_built_for_another_core_is_reported_with_the_fix(site):
    site.plugin("tevnewcore", version="2.0.0", requires=("torchenv>=99,<100", "numpy"))
    info = _info("tevnewcore")
    assert info.status == "incompatible core" and not info.ok
    assert "needs torchenv<100,>=99" in info.reason and "torchenv 0." in info.reason
    assert info.hint == 'pip install --upgrade torchenv-tevnewcore "torchenv<100,>=99"'
    with pytest.raises(BackendUnavailableError, match="incompatible core|needs torchenv"):
        registry.make("tevnewcore:Alpha-v0")


def test_plugin_whose_core_range_holds_is_ok(site):
    site.plugin("tevgoodcore", requires=("torchenv>=0.1,<1",))
    assert _info("tevgoodcore").ok
