"""Test environments for the batched envs (handed to tests through fixtures)."""

from __future__ import annotations

import os

import pytest
import torch
from tensordict import TensorDict

from torchenv.envs import EnvBase
from torchenv.specs import Bounded, Categorical, Composite, Unbounded


class CountingNoiseEnv(EnvBase):
    """A deterministic stochastic env: noise from its own generator, random episode lengths.

    Observation ``obs`` (``[obs_dim]``) and ``count``; reward from the generator; done when the
    step counter reaches a length drawn at reset. ``fail_at`` raises at that step;
    ``die_at`` kills the process at that step.
    """

    def __init__(self, obs_dim: int = 3, scale: float = 1.0, fail_at=None, die_at=None):
        super().__init__(batch_size=())
        self.obs_dim = obs_dim
        self.scale = scale
        self.g = 9.81 * scale
        self.fail_at = fail_at
        self.die_at = die_at
        self.rng = torch.Generator().manual_seed(0)
        self.register_buffer("stat", torch.zeros(1))
        self.count = 0
        self.length = 5
        self.observation_spec = Composite(
            obs=Unbounded(shape=(obs_dim,)),
            count=Unbounded(shape=(1,), dtype=torch.int64),
        )
        self.action_spec = Bounded(-1.0, 1.0, shape=(1,))
        self.reward_spec = Unbounded(shape=(1,))
        self.full_done_spec = Composite(
            done=Categorical(2, shape=(1,), dtype=torch.bool),
            terminated=Categorical(2, shape=(1,), dtype=torch.bool),
            truncated=Categorical(2, shape=(1,), dtype=torch.bool),
        )

    def _set_seed(self, seed):
        self.rng.manual_seed(int(seed))

    def bump(self, value: float) -> float:
        """Adds ``value`` to the ``stat`` buffer in place; returns the new value."""
        self.stat.add_(value)
        return float(self.stat)

    def get_count(self, offset: int = 0) -> int:
        return self.count + offset

    def _reset(self, tensordict=None, scale=None, **kwargs):
        if scale is not None:
            self.scale = scale
        self.count = 0
        self.length = int(torch.randint(3, 8, (), generator=self.rng))
        obs = torch.randn(self.obs_dim, generator=self.rng) * self.scale
        return TensorDict(
            obs=obs,
            count=torch.zeros(1, dtype=torch.int64),
            done=torch.zeros(1, dtype=torch.bool),
            terminated=torch.zeros(1, dtype=torch.bool),
            truncated=torch.zeros(1, dtype=torch.bool),
        )

    def _step(self, tensordict):
        self.count += 1
        if self.fail_at is not None and self.count == self.fail_at:
            raise ValueError(f"deliberate failure at step {self.count}")
        if self.die_at is not None and self.count == self.die_at:
            os.kill(os.getpid(), 9)
        action = tensordict["action"]
        obs = torch.randn(self.obs_dim, generator=self.rng) * self.scale + action
        done = torch.tensor([self.count >= self.length])
        return TensorDict(
            obs=obs,
            count=torch.tensor([self.count]),
            reward=torch.rand(1, generator=self.rng) + action,
            done=done,
            terminated=done.clone(),
            truncated=torch.zeros(1, dtype=torch.bool),
        )


class DynamicEnv(EnvBase):
    """An env whose observation grows by one row per step (a ``-1`` dim in its spec)."""

    def __init__(self, max_count: int = 4):
        super().__init__(batch_size=())
        self.observation_spec = Composite(observation=Unbounded(shape=(-1, 2)))
        self.action_spec = Bounded(-1.0, 1.0, shape=(2,))
        self.reward_spec = Unbounded(shape=(1,))
        self.count = 0
        self.max_count = max_count

    def _reset(self, tensordict=None, **kwargs):
        self.count = 0
        return TensorDict(observation=torch.zeros(1, 2), done=torch.zeros(1, dtype=torch.bool))

    def _step(self, tensordict):
        self.count += 1
        done = torch.tensor([self.count >= self.max_count])
        return TensorDict(
            observation=torch.full((self.count + 1, 2), float(self.count)),
            reward=torch.ones(1),
            done=done,
            terminated=done.clone(),
        )


@pytest.fixture
def noise_env_cls():
    return CountingNoiseEnv


@pytest.fixture
def dynamic_env_cls():
    return DynamicEnv


def _processes_mentioning(text: str) -> list[int]:
    """Pids of the live processes whose command line contains ``text``."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                if text.encode() in f.read():
                    pids.append(int(entry))
        except OSError:
            continue
    return pids


@pytest.fixture(scope="session")
def ray_local(tmp_path_factory):
    """One local Ray for the whole session (``ray.init`` takes seconds), no dashboard, asked for
    127.0.0.1 (Ray 2.60 replaces it with the machine's address and listens on all interfaces;
    the token is what guards it), left without a trace: token auth with a token passed in the environment (Ray 2.60 would
    otherwise write one to ``~/.ray/auth_token``), its session files in a temporary directory,
    and, after ``ray.shutdown()``, no process left that was started for it."""
    import importlib.util
    import secrets
    import shutil
    import sys
    import tempfile
    import time

    if importlib.util.find_spec("ray") is None:
        pytest.skip("RayParallelEnv tests need ray (pip install 'torchenv[ray]')")
    if "ray" in sys.modules and sys.modules["ray"].is_initialized():  # pragma: no cover
        yield sys.modules["ray"]  # someone else's Ray: use it, do not stop it
        return
    home_ray = os.path.join(os.path.expanduser("~"), ".ray")
    had_home_ray = os.path.exists(home_ray)
    env_vars = {  # set before Ray is imported: it reads them once
        "RAY_AUTH_MODE": "token",
        "RAY_AUTH_TOKEN": secrets.token_hex(32),
        "RAY_USAGE_STATS_ENABLED": "0",
    }
    saved = {k: os.environ.get(k) for k in env_vars}
    os.environ.update(env_vars)
    import ray

    # short: Ray's unix socket paths live under it (about 100 characters at most)
    temp_dir = tempfile.mkdtemp(prefix="ray-", dir="/tmp")
    try:
        ray.init(
            num_cpus=2,
            include_dashboard=False,
            _node_ip_address="127.0.0.1",
            _temp_dir=temp_dir,
            log_to_driver=False,
            configure_logging=False,
        )
        yield ray
    finally:
        ray.shutdown()
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        deadline = time.monotonic() + 15
        while _processes_mentioning(temp_dir) and time.monotonic() < deadline:
            time.sleep(0.1)
        left = _processes_mentioning(temp_dir)
        shutil.rmtree(temp_dir, ignore_errors=True)
        assert not left, f"Ray processes still running after ray.shutdown(): {left}"
        assert not os.path.exists(temp_dir), f"{temp_dir} could not be removed"
        if not had_home_ray:
            assert not os.path.exists(home_ray), f"Ray wrote {home_ray}"
