"""get_available_libraries reports the registry's backends and whether each is usable."""

from __future__ import annotations

import pytest

from torchenv.envs import get_available_libraries
from torchenv.registry import Backend, backends, hookimpl, register_plugin, unregister_plugin


class _MissingSimulatorPlugin:
    @hookimpl
    def torchenv_backends(self):
        return [
            Backend(
                name="toy-missing",
                distribution="torchenv-toy-missing",
                simulator="torchenv-no-such-simulator",
                install="pip install torchenv-no-such-simulator",
            )
        ]


@pytest.fixture
def missing_backend():
    register_plugin(_MissingSimulatorPlugin(), name="toy-missing-plugin")
    try:
        yield "toy-missing"
    finally:
        unregister_plugin("toy-missing-plugin")


def test_builtin_backend_is_available():
    libraries = get_available_libraries()
    assert libraries["builtin"] is True
    assert set(libraries) == {info.name for info in backends()}


def test_backend_without_its_simulator_is_unavailable(missing_backend):
    libraries = get_available_libraries()
    assert libraries[missing_backend] is False
    assert libraries["builtin"] is True


def test_unregistered_backend_disappears(missing_backend):
    assert missing_backend in get_available_libraries()
    unregister_plugin("toy-missing-plugin")
    assert missing_backend not in get_available_libraries()
