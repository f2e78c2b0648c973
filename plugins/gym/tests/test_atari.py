"""Atari through gymnasium: ``make("gymnasium:ALE/Pong-v5")`` once ale-py is installed (its envs
are registered by the plugin: gymnasium >= 1.0 no longer loads them by itself)."""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch

import torchenv
from torchenv.envs import check_env_specs

pytest.importorskip(
    "ale_py", reason='Atari needs ale-py (pip install "torchenv[atari]"); it ships the ROMs'
)
pytest.importorskip("gymnasium")

pytestmark = [pytest.mark.atari, pytest.mark.gymnasium]


def test_make_ale_pong_registers_the_ale_envs():
    # a fresh process: nothing has imported ale_py before the make
    code = (
        "import sys, torchenv; env = torchenv.make('gymnasium:ALE/Pong-v5'); "
        "td = env.rollout(2); assert td['next', 'pixels'].dtype.is_floating_point is False; "
        "assert 'ale_py' in sys.modules; print(tuple(td['next', 'pixels'].shape))"
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    assert out.stdout.strip().splitlines()[-1] == "(2, 210, 160, 3)"


def test_gym_env_class_registers_the_ale_envs_too():
    # TorchRL's GymEnv("ALE/Pong-v5") in a fresh process: the class itself imports ale_py
    code = (
        "import sys; from torchenv_gym import GymEnv; env = GymEnv('ALE/Pong-v5'); "
        "print(sorted(env.observation_spec.keys()))"
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    assert out.stdout.strip().splitlines()[-1] == "['pixels']"


def test_frames_are_pixels_other_observations_are_observation():
    # TorchRL's rule: H x W x 3 frames in [0, 255] are "pixels"; RAM or grayscale screens not
    for obs_type, key in (("rgb", "pixels"), ("grayscale", "observation"), ("ram", "observation")):
        env = torchenv.make("gymnasium:ALE/Pong-v5", obs_type=obs_type)
        try:
            assert list(env.observation_spec.keys()) == [key]
            assert env.rollout(2)["next", key].dtype == torch.uint8
        finally:
            env.close()


def test_ale_envs_are_listed():
    names = torchenv.list_envs("gymnasium")
    assert {"ALE/Pong-v5", "ALE/Breakout-v5"} <= set(names)


def test_ale_pong_specs_and_frames():
    env = torchenv.make("gymnasium:ALE/Pong-v5", frameskip=4, repeat_action_probability=0.0)
    try:
        spec = env.observation_spec["pixels"]
        assert spec.dtype == torch.uint8 and tuple(spec.shape) == (210, 160, 3)
        assert env.action_spec.shape[-1] == 6
        check_env_specs(env)
        env.set_seed(0)
        first = env.rollout(5)
        env.set_seed(0)
        actions = iter(first["action"])
        again = env.rollout(5, policy=lambda td: td.set("action", next(actions)))
        assert torch.equal(first["next", "pixels"], again["next", "pixels"])
    finally:
        env.close()


def test_ale_vector_env_is_batched():
    env = torchenv.make("gymnasium:ALE/Breakout-v5", num_envs=3, frameskip=4)
    try:
        td = env.rollout(4)
        assert tuple(td.batch_size) == (3, 4)
        assert td["next", "pixels"].dtype == torch.uint8
    finally:
        env.close()


def test_unknown_ale_id_is_a_clear_error():
    with pytest.raises(torchenv.registry.UnknownEnvError, match="ALE/Pongg-v5"):
        torchenv.make("gymnasium:ALE/Pongg-v5")
