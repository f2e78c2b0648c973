"""TorchRL's getting-started DQN on CartPole: frames to "solved", TorchRL's GymEnv vs ours.

The learning-speed check of issue 19. The training loop is TorchRL's tutorial
(``getting-started-5``: a 64x64 MLP Q-network, 5,000 random frames, then 10 Adam steps per
100-frame batch, soft target updates) run unchanged in TorchRL's collector and loss, once on
``torchrl.envs.GymEnv("CartPole-v1")`` and once on ``torchenv_gym.GymEnv("CartPole-v1")``,
both inside ``TransformedEnv(..., StepCounter())``. "Solved" is the tutorial's criterion: an
episode longer than 200 steps in the replay buffer. Each (side, seed) runs in a fresh process,
the sides alternating. The whole script needs torchrl *and* torchenv in one interpreter: it runs
itself under ``$TORCHENV_BENCH_TORCHRL_PYTHON`` (``nox -s bench`` installs torchenv there).

    python benchmarks/bench_dqn.py --seeds 6
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

MAX_FRAMES = 100_000


def train(side: str, seed: int) -> int:
    """Frames collected until solved (``MAX_FRAMES`` if never)."""
    import torch
    from tensordict.nn import TensorDictModule, TensorDictSequential
    from torchrl.collectors import Collector
    from torchrl.data import LazyTensorStorage, ReplayBuffer
    from torchrl.modules import MLP, QValueModule
    from torchrl.objectives import DQNLoss, SoftUpdate

    if side == "torchrl":
        from torchrl.envs import GymEnv, StepCounter, TransformedEnv
    else:
        from torchenv import StepCounter, TransformedEnv
        from torchenv_gym import GymEnv

    torch.manual_seed(seed)
    torch.set_num_threads(1)
    env = TransformedEnv(GymEnv("CartPole-v1"), StepCounter())
    env.set_seed(seed)
    value_net = TensorDictModule(
        MLP(out_features=env.action_spec.shape[-1], num_cells=[64, 64]),
        in_keys=["observation"],
        out_keys=["action_value"],
    )
    policy = TensorDictSequential(value_net, QValueModule(spec=env.action_spec))
    init_rand_steps = 5000
    collector = Collector(
        env, policy, frames_per_batch=100, total_frames=-1, init_random_frames=init_rand_steps
    )
    rb = ReplayBuffer(storage=LazyTensorStorage(100_000))
    loss = DQNLoss(value_network=policy, action_space=env.action_spec, delay_value=True)
    optim = torch.optim.Adam(loss.parameters(), lr=0.02)
    updater = SoftUpdate(loss, eps=0.99)
    frames = 0
    try:
        for data in collector:
            frames += data.numel()
            rb.extend(data)
            if len(rb) > init_rand_steps:
                for _ in range(10):
                    loss(rb.sample(128))["loss"].backward()
                    optim.step()
                    optim.zero_grad()
                    updater.step()
            if rb[:]["next", "step_count"].max() > 200 or frames >= MAX_FRAMES:
                break
    finally:
        collector.shutdown()
    return frames


def _run_one(side: str, seed: int) -> int:
    proc = subprocess.run(
        [sys.executable, os.path.abspath(__file__), "--one", side, str(seed)],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode:
        raise RuntimeError(f"{side} seed {seed} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])["frames"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=6)
    parser.add_argument("--one", nargs=2, metavar=("SIDE", "SEED"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps({"frames": train(args.one[0], int(args.one[1]))}))
        return
    try:
        import torchrl  # noqa: F401

        import torchenv_gym  # noqa: F401
    except ImportError:
        python = os.environ.get("TORCHENV_BENCH_TORCHRL_PYTHON")
        if not python or not os.path.exists(python):
            print(
                "bench_dqn skipped: needs torchrl and torchenv-gym in one python; set "
                "TORCHENV_BENCH_TORCHRL_PYTHON (nox -s bench does)"
            )
            return
        os.execv(python, [python, os.path.abspath(__file__), *sys.argv[1:]])
    frames: dict[str, list[int]] = {"torchrl": [], "torchenv": []}
    print(f"{'seed':>4} {'TorchRL GymEnv':>15} {'torchenv GymEnv':>16}")
    for seed in range(args.seeds):
        order = ("torchrl", "torchenv") if seed % 2 == 0 else ("torchenv", "torchrl")
        row = {side: _run_one(side, seed) for side in order}
        for side, value in row.items():
            frames[side].append(value)
        print(f"{seed:>4} {row['torchrl']:>15} {row['torchenv']:>16}", flush=True)
    theirs, ours = statistics.median(frames["torchrl"]), statistics.median(frames["torchenv"])
    print(
        f"median frames to solved: TorchRL {theirs:.0f}, torchenv {ours:.0f} "
        f"(torchenv / TorchRL = {ours / theirs:.2f}; below 1 learns in fewer frames)"
    )


if __name__ == "__main__":
    main()
