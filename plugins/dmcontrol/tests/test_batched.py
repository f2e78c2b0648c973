"""DMControlEnv in SerialEnv / ParallelEnv: the workers take the direct array path."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from dm_control import suite

from torchenv.batched import ParallelEnv, SerialEnv
from torchenv.testing import BatchedEnvConformanceTests
from torchenv_dmcontrol import DMControlEnv

pytestmark = pytest.mark.dmcontrol


def make_counted():
    """A cheetah/run env that counts how its steps arrive (direct ``_step_into`` or ``_step``)."""
    env = DMControlEnv("cheetah", "run")
    env.__dict__["path_counts"] = counts = {"direct": 0, "tensordict": 0}
    step_into, step = env._step_into, env._step

    def counted_step_into(action, out):
        counts["direct"] += 1
        return step_into(action, out)

    def counted_step(td):
        counts["tensordict"] += 1
        return step(td)

    env.__dict__["_step_into"] = counted_step_into
    env.__dict__["_step"] = counted_step
    return env


def _run(env, steps=12):
    env.set_seed(0)
    torch.manual_seed(0)
    td = env.reset()
    outs = []
    for _ in range(steps):
        td = env.rand_action(td)
        out, td = env.step_and_maybe_reset(td)
        outs.append(out["next"].clone())
    return torch.stack(outs)


@pytest.mark.parallel
def test_parallel_workers_take_the_direct_path_and_match_serial():
    penv = ParallelEnv(2, make_counted)
    senv = SerialEnv(2, lambda: DMControlEnv("cheetah", "run"))
    try:
        ours, reference = _run(penv), _run(senv)
        counts = penv.path_counts
        assert [c["direct"] for c in counts] == [12, 12], counts
        assert [c["tensordict"] for c in counts] == [0, 0], counts
        rollout = penv.rollout(5)
        assert rollout["next", "velocity"].shape == (2, 5, 9)
        assert [c["direct"] for c in penv.path_counts] == [17, 17]
    finally:
        penv.close()
        senv.close()
    assert (ours == reference).all()


class TestSerialCartpoleConformance(BatchedEnvConformanceTests):
    """The batched contract (partial resets, independent and seeded sub-envs) on SerialEnv."""

    num_envs = 3
    rollout_steps = 6

    def make_batched_env(self, num_envs):
        return SerialEnv(num_envs, lambda: DMControlEnv("cartpole", "swingup"))


def test_seeded_workers_start_as_raw_dm_control_with_their_seeds():
    env = SerialEnv(2, lambda: DMControlEnv("walker", "walk"))
    try:
        env.set_seed(5)
        td = env.reset()
    finally:
        env.close()
    seed = 5
    for i in range(2):
        single = DMControlEnv("walker", "walk")
        next_seed = single.set_seed(seed)
        raw_env = suite.load("walker", "walk", task_kwargs={"random": seed})
        raw_env.reset()  # set_seed's own reset (TorchRL's convention)
        raw = raw_env.reset().observation
        for key, value in raw.items():
            np.testing.assert_array_equal(td[i][key].numpy(), np.reshape(value, (-1,)))
        seed = next_seed
    assert not torch.equal(td[0]["orientations"], td[1]["orientations"])
