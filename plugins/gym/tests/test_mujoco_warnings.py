"""MuJoCo's compiler warning for gymnasium's HalfCheetah (deprecated ``settotalmass``) comes at
most once per process, as a Python warning, not once per env printed from C (issue 29)."""

from __future__ import annotations

import warnings

import pytest

mujoco = pytest.importorskip("mujoco", reason="gymnasium's MuJoCo tasks need mujoco")
pytest.importorskip("gymnasium")

import torchenv  # noqa: E402


def test_settotalmass_is_not_printed_per_env(capfd):
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        for kwargs in ({}, {}, {"num_envs": 3}):
            torchenv.make("gymnasium:HalfCheetah-v5", **kwargs).close()
    printed = capfd.readouterr()
    assert "settotalmass" not in printed.out + printed.err
    hits = [w for w in record if "settotalmass" in str(w.message)]
    assert len(hits) <= 1  # none when an earlier test of this process already showed it
    assert mujoco.get_mju_user_warning() is None  # MuJoCo's own printing is back


def test_a_users_own_handler_is_left_alone():
    seen = []
    mujoco.set_mju_user_warning(seen.append)
    try:
        torchenv.make("gymnasium:HalfCheetah-v5").close()
        assert mujoco.get_mju_user_warning() is not None
    finally:
        mujoco.set_mju_user_warning(None)
    assert any("settotalmass" in message for message in seen)
