"""Checks every test and doctest of the repository shares: none may leave process-wide torch
state changed for the tests after it (a doctest that turned autograd off once made a later
doctest's PPO fail with 'does not require grad')."""

from __future__ import annotations

import pytest
import torch


@pytest.fixture(autouse=True)
def _autograd_left_on():
    yield
    if not torch.is_grad_enabled():
        torch.set_grad_enabled(True)
        pytest.fail("this test turned autograd off for the whole process and left it off")
