"""``RayParallelEnv`` vs ``ParallelEnv``: 2 workers, each holding a natively batched env.

Each worker runs the built-in ``CartPoleEnv(batch_size=[B])`` (vectorised in torch), so one
command serves ``B`` envs. For each ``B`` (``--batch``), both sides run a ``step_and_maybe_reset``
loop with pre-drawn random actions; the two sides alternate ``--repeats`` times and the median of
the per-step times is kept (the development machine is shared and noisy). Printed per ``B``:

- the time of one batched step (``ms/step``) and the env steps per second of each side;
- ``ray/parallel``: the ratio of the per-step times (above 1: Ray is slower);
- ``round trip``: Ray's per-step time minus ``ParallelEnv``'s, the cost of the Ray calls (one
  per worker, issued before waiting on any) over shared-memory signalling.

A local Ray is started (2 CPUs, 127.0.0.1, no dashboard, session files in a temporary
directory that is removed) and shut down at the end. Torch runs one thread per process.

On a multi-node cluster the round trip adds the network latency (typically 0.1-1 ms in one data
centre) and each reply crosses the network by value; ``ParallelEnv`` cannot span machines at all,
so the question becomes whether ``B`` envs' worth of compute per actor outweighs the round trip.

Run: ``python benchmarks/bench_ray.py`` (``--batch 1 64 1024``, ``--seconds S``, ``--repeats N``).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time

import torch


def _per_step(env, batch: int, seconds: float, warmup: int = 20) -> float:
    """Seconds per batched ``step_and_maybe_reset`` over about ``seconds``."""
    g = torch.Generator().manual_seed(0)
    actions = [torch.randint(0, 2, (2, batch), generator=g) for _ in range(64)]
    td = env.reset()
    for i in range(warmup):
        td.set("action", actions[i % 64])
        _, td = env.step_and_maybe_reset(td)
    n, start = 0, time.perf_counter()
    while True:
        for _ in range(20):
            td.set("action", actions[n % 64])
            _, td = env.step_and_maybe_reset(td)
            n += 1
        elapsed = time.perf_counter() - start
        if elapsed >= seconds:
            return elapsed / n


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--batch", type=int, nargs="+", default=[1, 64, 1024])
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    torch.set_num_threads(1)
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    import ray

    from torchenv.batched import ParallelEnv, RayParallelEnv
    from torchenv.envs.builtin import CartPoleEnv

    temp_dir = tempfile.mkdtemp(prefix="ray-", dir="/tmp")
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        _node_ip_address="127.0.0.1",
        _temp_dir=temp_dir,
        log_to_driver=False,
    )
    try:
        print(f"torch threads 1, ray {ray.__version__}, {args.repeats} alternating repeats, median")
        print(
            f"{'B':>6} {'ray ms/step':>12} {'par ms/step':>12} {'ray steps/s':>12} "
            f"{'par steps/s':>12} {'ray/parallel':>13} {'round trip ms':>14}"
        )
        for batch in args.batch:
            kwargs = {"batch_size": [batch]}
            envs = {
                "ray": RayParallelEnv(2, CartPoleEnv, kwargs, num_cpus=1),
                "par": ParallelEnv(2, CartPoleEnv, kwargs),
            }
            times: dict[str, list[float]] = {"ray": [], "par": []}
            try:
                for r in range(args.repeats):
                    order = ("ray", "par") if r % 2 == 0 else ("par", "ray")
                    for side in order:
                        times[side].append(_per_step(envs[side], batch, args.seconds))
            finally:
                for env in envs.values():
                    env.close()
            t_ray, t_par = statistics.median(times["ray"]), statistics.median(times["par"])
            n = 2 * batch
            print(
                f"{batch:>6} {t_ray * 1e3:>12.3f} {t_par * 1e3:>12.3f} {n / t_ray:>12.0f} "
                f"{n / t_par:>12.0f} {t_ray / t_par:>13.2f} {(t_ray - t_par) * 1e3:>14.3f}"
            )
    finally:
        ray.shutdown()
        shutil.rmtree(temp_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
