"""MuJoCo's settotalmass deprecation warning (dm_control's cheetah) is logged once per process."""

from __future__ import annotations

import logging

import pytest

pytest.importorskip("dm_control")
pytestmark = pytest.mark.dmcontrol


def test_settotalmass_warning_at_most_once(caplog):
    import torchenv

    with caplog.at_level(logging.WARNING, logger="absl"):
        for _ in range(3):
            torchenv.make("dmcontrol:cheetah/run").close()
    hits = [r for r in caplog.records if "settotalmass" in r.getMessage()]
    assert len(hits) <= 1, [r.getMessage() for r in hits]
