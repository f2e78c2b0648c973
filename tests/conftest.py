"""Shared fixtures of the cross-package tests."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _headless(monkeypatch):
    """Rendering tests draw off-screen (pygame's dummy video driver)."""
    monkeypatch.setenv("SDL_VIDEODRIVER", "dummy")


@pytest.fixture
def needs_pygame():
    """Skips a test that renders classic-control envs when pygame is not installed."""
    pytest.importorskip("pygame", reason="rendering needs pygame")


@pytest.fixture
def needs_mujoco():
    """Skips a test that makes MuJoCo envs when the mujoco simulator is not installed."""
    pytest.importorskip("mujoco", reason="HalfCheetah needs the mujoco simulator")
