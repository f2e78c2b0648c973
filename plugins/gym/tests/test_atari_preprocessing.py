"""The DQN-Nature Atari preprocessing recipe of docs/atari.md, built from torchenv transforms
over ``gymnasium:ALE/...``: no-op resets, frame skip 4 with a max over the last two frames,
end-of-life flags, reward signs, grayscale 84x84, a stack of 4 frames."""

from __future__ import annotations

import pytest
import torch

import torchenv
from torchenv.transforms import (
    CatFrames,
    Compose,
    EndOfLifeTransform,
    FrameSkipTransform,
    GrayScale,
    NoopResetEnv,
    Resize,
    SignTransform,
    TimeMaxPool,
    ToTensorImage,
    TransformedEnv,
)

pytest.importorskip(
    "ale_py", reason='Atari needs ale-py (pip install "torchenv[atari]"); it ships the ROMs'
)

pytestmark = [pytest.mark.atari, pytest.mark.gymnasium]

FIRE = 1  # Breakout: launches the ball; the paddle then stays put and the ball is lost


def dqn_nature_env(game: str = "ALE/Breakout-v5") -> TransformedEnv:
    """docs/atari.md's recipe, verbatim."""
    # frameskip=1 and no sticky actions: the transforms below do the skipping (DQN-Nature)
    base = torchenv.make(f"gymnasium:{game}", frameskip=1, repeat_action_probability=0.0)
    return TransformedEnv(
        base,
        Compose(
            NoopResetEnv(noops=30),  # up to 30 random no-ops after each reset
            TimeMaxPool(in_keys=["pixels"], T=2),  # max over the last two frames...
            FrameSkipTransform(4),  # ...of the 4 each action is repeated for (rewards summed)
            EndOfLifeTransform(),  # "end-of-life": a life lost (or the game over)
            SignTransform(in_keys=["reward"]),  # rewards clipped to their sign
            ToTensorImage(in_keys=["pixels"]),  # HWC uint8 -> CHW float in [0, 1]
            GrayScale(in_keys=["pixels"]),
            Resize(84, 84, in_keys=["pixels"]),
            CatFrames(N=4, dim=-3, in_keys=["pixels"]),  # the last 4 frames
        ),
    )


@pytest.fixture(autouse=True)
def _one_torch_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def _frame_number(env) -> int:
    return int(env.base_env.unwrapped.ale.getEpisodeFrameNumber())


def test_observation_is_a_stack_of_four_84x84_gray_frames():
    env = dqn_nature_env()
    try:
        spec = env.observation_spec["pixels"]
        assert tuple(spec.shape) == (4, 84, 84) and spec.dtype == torch.float32
        env.set_seed(0)
        td = env.rollout(6, policy=lambda td: td.set("action", _one_hot(FIRE)))
        obs = td["next", "pixels"]
        assert tuple(obs.shape) == (6, 4, 84, 84)
        assert obs.min() >= 0 and obs.max() <= 1 and obs.std() > 0
        # a stack: each step drops the oldest frame and appends the new one
        torch.testing.assert_close(obs[1:, :3], obs[:-1, 1:], rtol=0, atol=0)
        assert set(td["next", "reward"].unique().tolist()) <= {-1.0, 0.0, 1.0}
        torchenv.envs.check_env_specs(env)
    finally:
        env.close()


def _one_hot(action: int) -> torch.Tensor:
    return torch.nn.functional.one_hot(torch.tensor(action), 4)


def test_noop_reset_and_frame_skip_count_emulator_frames():
    env = dqn_nature_env()
    try:
        starts = set()
        for seed in range(4):
            env.set_seed(seed)
            torch.manual_seed(seed)
            env.reset()
            start = _frame_number(env)
            assert 0 <= start <= 30  # the no-ops ran on the emulator
            starts.add(start)
            td = env.reset()
            start = _frame_number(env)
            for _ in range(5):
                td = env.step(td.set("action", _one_hot(0)))["next"]
            assert _frame_number(env) == start + 5 * 4  # each action: 4 emulator frames
        assert len(starts) > 1  # random no-op counts
    finally:
        env.close()


@pytest.mark.slow
def test_end_of_life_is_flagged_before_the_game_ends():
    env = dqn_nature_env()
    try:
        env.set_seed(0)
        td = env.rollout(
            80,
            policy=lambda td: td.set("action", _one_hot(FIRE)),
            break_when_any_done=False,
        )
        eol = td["next", "end-of-life"].squeeze(-1)
        done = td["next", "done"].squeeze(-1)
        assert eol.any() and not done[: int(eol.nonzero()[0])].any()
        assert not done[eol].all()  # a life lost, not the game over
    finally:
        env.close()
