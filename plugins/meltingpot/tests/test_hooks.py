"""The ``meltingpot`` backend: listing and errors (no substrate is built here)."""

from __future__ import annotations

import pytest

pytest.importorskip("meltingpot")

import torchenv
from torchenv.registry import UnknownEnvError

pytestmark = pytest.mark.meltingpot


def test_list_envs_are_the_substrates():
    from meltingpot import substrate

    assert torchenv.list_envs("meltingpot") == sorted(substrate.SUBSTRATES)


def test_unknown_substrate_and_scenarios():
    with pytest.raises(UnknownEnvError, match="meltingpot:coins"):
        torchenv.make("meltingpot:coinz")
    with pytest.raises(NotImplementedError, match="scenario.*'meltingpot:coins'"):
        torchenv.make("meltingpot:coins_0")
    with pytest.raises(ValueError, match="SerialEnv"):
        torchenv.make("meltingpot:coins", num_envs=2)
