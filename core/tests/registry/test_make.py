"""make / list_envs end to end through throw-away plugin distributions."""

from __future__ import annotations

import pytest

import torchenv
import torchenv.registry as registry
from torchenv.registry import (
    AmbiguousNameError,
    BackendUnavailableError,
    InvalidEnvNameError,
    TorchEnvRegistryError,
    UnknownBackendError,
    UnknownEnvError,
)

CREATED_HOOK = """\
import pluggy
hookimpl = pluggy.HookimplMarker("torchenv")
CALLS = []

@hookimpl
def torchenv_env_created(env, backend, env_id):
    CALLS.append((env, backend, env_id))
"""


def test_make_passes_kwargs_and_calls_created_hook(site):
    site.plugin("tevmk", envs=("Walker-v2",))
    site.dist(
        "torchenv-watcher",
        "1.0",
        entry_points={"tevwatch": "tev_watch_hooks"},
        modules={"tev_watch_hooks": CREATED_HOOK},
    )
    env = torchenv.make("tevmk:Walker-v2", num_envs=4, device="cpu")
    assert (env.env_id, env.kwargs) == ("Walker-v2", {"num_envs": 4, "device": "cpu"})
    import tev_watch_hooks

    assert [(env, "tevmk", "Walker-v2")] == tev_watch_hooks.CALLS


def test_unknown_backend_suggests_close_matches(site):
    site.plugin("tevzorblaxium")
    with pytest.raises(UnknownBackendError) as info:
        registry.make("tevzorblaxim:CartPole-v1")
    error = info.value
    assert isinstance(error, LookupError) and isinstance(error, TorchEnvRegistryError)
    assert error.suggestions == ["tevzorblaxium"]
    assert "Did you mean 'tevzorblaxium'?" in str(error)
    assert "tevzorblaxium" in error.known


def test_unknown_env_suggests_close_matches(site):
    site.plugin("tevenvs", envs=("CartPole-v1", "Pendulum-v1", "Acrobot-v1"))
    with pytest.raises(UnknownEnvError) as info:
        registry.make("tevenvs:CartPol-v1")
    assert info.value.suggestions == ["tevenvs:CartPole-v1"]
    assert "tevenvs:CartPole-v1" in str(info.value)
    with pytest.raises(UnknownEnvError) as info:
        registry.make("tevenvs:Pendulum")  # missing version suffix: prefix match
    assert "tevenvs:Pendulum-v1" in info.value.suggestions


def test_backend_names_are_case_insensitive_and_aliases_work(site):
    site.plugin("tevcase", aliases=("tevalias",))
    assert registry.make("TevCase:Alpha-v0").env_id == "Alpha-v0"
    assert registry.make("tevalias:Beta-v1").env_id == "Beta-v1"


def test_two_plugins_claiming_one_backend_is_ambiguous(site):
    site.plugin("tevtwice", dist="torchenv-one")
    site.plugin("tevtwice", dist="torchenv-two", entry_point="tevtwice-two")
    with pytest.raises(AmbiguousNameError) as info:
        registry.make("tevtwice:Alpha-v0")
    assert "torchenv-one" in str(info.value) and "torchenv-two" in str(info.value)


def test_bare_env_id(site):
    site.plugin("tevbare1", envs=("OnlyHere-v0", "Shared-v0"))
    site.plugin("tevbare2", envs=("Shared-v0",))
    assert registry.make("OnlyHere-v0").env_id == "OnlyHere-v0"
    with pytest.raises(AmbiguousNameError) as info:
        registry.make("Shared-v0")
    assert info.value.candidates == ["tevbare1:Shared-v0", "tevbare2:Shared-v0"]
    with pytest.raises(UnknownEnvError) as info:
        registry.make("OnlyHere-v1")
    assert "tevbare1:OnlyHere-v0" in info.value.suggestions


def test_missing_simulator_says_what_to_install(site):
    site.plugin(
        "tevnosim",
        simulator="tev-absent-sim",
        supported=">=2.0",
        install='pip install "torchenv[tevnosim]"',
    )
    info = next(b for b in registry.backends() if b.name == "tevnosim")
    assert info.status == "simulator missing" and info.simulator_version is None
    with pytest.raises(BackendUnavailableError) as error:
        registry.make("tevnosim:Alpha-v0")
    assert isinstance(error.value, ImportError)
    assert error.value.status == "simulator missing"
    message = str(error.value)
    assert "tev-absent-sim is not installed" in message
    assert 'pip install "torchenv[tevnosim]"' in message
    with pytest.raises(BackendUnavailableError):
        registry.list_envs("tevnosim")


def test_missing_simulator_default_hint_uses_the_supported_range(site):
    site.plugin("tevnosim2", simulator="tev-absent-sim2", supported=">=0.29")
    with pytest.raises(BackendUnavailableError, match='pip install "tev-absent-sim2>=0.29"'):
        registry.make("tevnosim2:Alpha-v0")


def test_missing_extra_distribution(site):
    site.simulator("tev-sim-main", "1.0")
    site.plugin("tevextra", simulator="tev-sim-main", extras=("tev-sim-helper",))
    with pytest.raises(BackendUnavailableError, match="tev-sim-helper is not installed"):
        registry.make("tevextra:Alpha-v0")
    site.simulator("tev-sim-helper", "0.1")
    assert registry.make("tevextra:Alpha-v0").env_id == "Alpha-v0"


def test_unsupported_simulator_version(site):
    site.simulator("tev-old-sim", "0.21.0")
    site.plugin("tevold", dist="torchenv-tevold", simulator="tev-old-sim", supported=">=0.26,<2")
    info = next(b for b in registry.backends() if b.name == "tevold")
    assert info.status == "unsupported version" and info.simulator_version == "0.21.0"
    with pytest.raises(BackendUnavailableError) as error:
        registry.make("tevold:Alpha-v0")
    message = str(error.value)
    assert "tev-old-sim 0.21.0 is installed" in message
    assert "tev-old-sim>=0.26,<2" in message
    assert error.value.status == "unsupported version"


def test_pre_release_simulator_inside_the_range_is_accepted(site):
    site.simulator("tev-pre-sim", "1.1.0rc1")
    site.plugin("tevpre", simulator="tev-pre-sim", supported=">=1.0")
    assert registry.make("tevpre:Alpha-v0").env_id == "Alpha-v0"


def test_invalid_supported_range_marks_the_backend_failed(site):
    site.plugin("tevbadspec", simulator="tev-any", supported="not a specifier")
    info = next(b for b in registry.backends() if b.name == "tevbadspec")
    assert info.status == "failed to load" and "not a specifier" in info.reason


def test_list_envs_is_sorted_and_unique(site):
    site.plugin("tevlist", envs=("b", "a", "c", "a"))
    assert registry.list_envs("tevlist") == ["a", "b", "c"]


@pytest.mark.parametrize("name", ["", "   ", ":Alpha-v0", "tevx:", 3])
def test_invalid_names(name):
    with pytest.raises(InvalidEnvNameError, match="backend:env-id"):
        registry.make(name)


def test_split_name_keeps_colons_in_the_env_id():
    assert registry.split_name("gymnasium:my_pkg:Env-v0") == ("gymnasium", "my_pkg:Env-v0")
