"""Batched envs: torchenv ``ParallelEnv`` vs gymnasium ``AsyncVectorEnv`` vs TorchRL ``ParallelEnv``.

CartPole-v1 and Pendulum-v1 with 2 and 4 workers. For each: throughput (env steps per second of
a ``step_and_maybe_reset`` loop with random actions; for gymnasium, ``envs.step`` with its
autoreset) and start-up time (construction to the end of the first reset). Our side uses the gym
plugin's ``GymEnv`` when ``torchenv_gym`` is importable (the same simulator as the others), else
the built-in ``CartPoleEnv`` / ``PendulumEnv`` (printed). TorchRL's side runs in a subprocess of
the interpreter named by ``TORCHENV_BENCH_TORCHRL_PYTHON`` (skipped with a message when unset or
missing) with its ``GymEnv`` and default start method.

Ours and gymnasium run alternately ``--repeats`` times (best throughput, best start-up kept),
because the development machine is shared; TorchRL runs once per configuration, all in one
subprocess.

Heavy-tailed case (``--case heavy-tail``): ``HeavyTailEnv`` sub-envs whose steps sleep 0.1 ms,
or 10 ms with probability 1%; ``ParallelEnv(8)`` (lock-step: every batched step waits for its
slowest sub-env) against ``AsyncEnvPool`` of 8 with ``recv_size=4`` (each ``recv`` returns the
first 4 sub-envs to finish), processes and threads, a linear policy module in the loop
(``step_and_maybe_reset``). The sides alternate ``--repeats`` times; the table gives medians,
and the parent process's CPU time per env step (user + system, ``time.process_time``), which a
loaded machine distorts much less than throughput.

Run: ``python benchmarks/bench_batched.py`` (``--seconds S`` per measurement, ``--repeats N``,
``--workers 2 4``, ``--case gym|heavy-tail|all``).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time

import torch
from tensordict import TensorDict

from torchenv.envs import EnvBase
from torchenv.specs import Bounded, Composite, Unbounded

ENV_IDS = ("CartPole-v1", "Pendulum-v1")


def _loop(step, seconds: float, warmup: int = 30) -> tuple[int, float]:
    """Run ``step()`` for about ``seconds``; returns (iterations, elapsed)."""
    for _ in range(warmup):
        step()
    n, start = 0, time.perf_counter()
    deadline = start + seconds
    while True:
        for _ in range(50):
            step()
        n += 50
        now = time.perf_counter()
        if now >= deadline:
            return n, now - start


def _loop_cpu(step, seconds: float) -> tuple[int, float, float]:
    """``_loop``, also returning the CPU time this process spent (user + system): the parent's
    own cost, which depends much less on the machine's load than the throughput does."""
    for _ in range(30):
        step()
    cpu = time.process_time()
    n, elapsed = _loop(step, seconds, warmup=0)
    return n, elapsed, time.process_time() - cpu


def _action_pool(env_id: str, workers: int, n: int = 64):
    """``n`` random batched actions drawn once (numpy), replayed in turn by every library."""
    import numpy as np

    rng = np.random.default_rng(0)
    if env_id.startswith("CartPole"):
        return [rng.integers(0, 2, size=(workers,)) for _ in range(n)]
    return [rng.uniform(-2, 2, size=(workers, 1)).astype(np.float32) for _ in range(n)]


def bench_torchenv(env_id: str, workers: int, seconds: float, rand: bool) -> dict:
    from torchenv.batched import ParallelEnv

    try:
        import functools

        from torchenv_gym import GymEnv

        make = functools.partial(GymEnv, env_id)
        which = f'torchenv_gym.GymEnv("{env_id}")'
    except ImportError:
        from torchenv.envs.builtin import CartPoleEnv, PendulumEnv

        make = CartPoleEnv if env_id.startswith("CartPole") else PendulumEnv
        which = f"builtin {make.__name__}"
    start = time.perf_counter()
    env = ParallelEnv(workers, make)
    td = env.reset()
    startup = time.perf_counter() - start
    state = {"td": td, "i": 0}
    actions = [torch.as_tensor(a) for a in _action_pool(env_id, workers)]
    if type(env.action_spec).__name__ == "OneHot":  # GymEnv's default encoding, like TorchRL's
        n = env.action_spec.shape[-1]
        actions = [torch.nn.functional.one_hot(a, n).to(env.action_spec.dtype) for a in actions]

    def step():
        if rand:
            td = env.rand_action(state["td"])
        else:
            state["i"] = i = (state["i"] + 1) % len(actions)
            td = state["td"].set("action", actions[i])
        _, state["td"] = env.step_and_maybe_reset(td)

    n, elapsed = _loop(step, seconds)
    env.close()
    return {"sps": n * workers / elapsed, "startup": startup, "which": which}


def bench_gymnasium(env_id: str, workers: int, seconds: float, rand: bool) -> dict:
    import gymnasium as gym

    start = time.perf_counter()
    envs = gym.vector.AsyncVectorEnv([lambda: gym.make(env_id)] * workers)
    envs.reset(seed=0)
    startup = time.perf_counter() - start
    sample = envs.action_space.sample
    actions = _action_pool(env_id, workers)
    state = {"i": 0}

    def step():
        if rand:
            envs.step(sample())
        else:
            state["i"] = i = (state["i"] + 1) % len(actions)
            envs.step(actions[i])

    n, elapsed = _loop(step, seconds)
    envs.close()
    return {"sps": n * workers / elapsed, "startup": startup}


_TORCHRL_SCRIPT = r"""
import json, sys, time
from torchrl.envs import GymEnv, ParallelEnv
import numpy as np, torch
configs, seconds, rand = json.loads(sys.argv[1]), float(sys.argv[2]), sys.argv[3] == "1"
def make(env_id):
    return GymEnv(env_id)
if __name__ == "__main__":
    import functools
    out = []
    for env_id, workers in configs:
        start = time.perf_counter()
        env = ParallelEnv(workers, functools.partial(make, env_id))
        td = env.reset()
        startup = time.perf_counter() - start
        rng = np.random.default_rng(0)
        if env_id.startswith("CartPole"):  # TorchRL's GymEnv: one-hot actions
            actions = [torch.nn.functional.one_hot(torch.as_tensor(rng.integers(0, 2, size=(workers,))), 2) for _ in range(64)]
        else:
            actions = [torch.as_tensor(rng.uniform(-2, 2, size=(workers, 1)).astype(np.float32)) for _ in range(64)]
        def step(td, i):
            td = env.rand_action(td) if rand else td.set("action", actions[i % 64])
            return env.step_and_maybe_reset(td)[1]
        for i in range(30):
            td = step(td, i)
        n, t0 = 0, time.perf_counter()
        while time.perf_counter() - t0 < seconds:
            for i in range(50):
                td = step(td, i)
            n += 50
        elapsed = time.perf_counter() - t0
        env.close()
        out.append({"sps": n * workers / elapsed, "startup": startup})
    print(json.dumps(out))
"""


def bench_torchrl(configs: list, seconds: float, rand: bool) -> list | None:
    """All TorchRL measurements in one subprocess (one interpreter start, one import)."""
    python = os.environ.get("TORCHENV_BENCH_TORCHRL_PYTHON")
    if not python or not os.path.exists(python):
        return None
    proc = subprocess.run(
        [python, "-c", _TORCHRL_SCRIPT, json.dumps(configs), str(seconds), str(int(rand))],
        capture_output=True,
        text=True,
        timeout=600,
    )
    if proc.returncode != 0:
        print(f"TorchRL side failed:\n{proc.stderr[-2000:]}")
        return None
    return json.loads(proc.stdout.strip().splitlines()[-1])


class HeavyTailEnv(EnvBase):
    """A sub-env whose step sleeps ``fast`` seconds, or ``slow`` with probability ``p_slow``
    (its own generator); observation: the sum of its actions; episodes of ``episode`` steps."""

    def __init__(self, fast=1e-4, slow=1e-2, p_slow=0.01, episode=200, seed=0):
        super().__init__(batch_size=())
        self.fast, self.slow, self.p_slow, self.episode = fast, slow, p_slow, episode
        self.rng = random.Random(seed)
        self.observation_spec = Composite(observation=Unbounded(shape=(4,)))
        self.action_spec = Bounded(-1.0, 1.0, shape=(1,))
        self.reward_spec = Unbounded(shape=(1,))
        self.t, self.obs = 0, torch.zeros(4)

    def _set_seed(self, seed):
        self.rng.seed(seed)

    def _reset(self, tensordict=None, **kwargs):
        self.t, self.obs = 0, torch.zeros(4)
        no = torch.zeros(1, dtype=torch.bool)
        return TensorDict(observation=self.obs.clone(), done=no, terminated=no.clone())

    def _step(self, tensordict):
        time.sleep(self.slow if self.rng.random() < self.p_slow else self.fast)
        self.t += 1
        self.obs = self.obs + tensordict["action"]
        done = torch.tensor([self.t >= self.episode])
        return TensorDict(
            observation=self.obs.clone(), reward=torch.ones(1), done=done, terminated=done.clone()
        )


def _policy():
    from tensordict.nn import TensorDictModule

    return TensorDictModule(torch.nn.Linear(4, 1), ["observation"], ["action"])


def bench_heavy_parallel(n: int, seconds: float, make=HeavyTailEnv) -> tuple[float, float]:
    """Env steps per second of ``ParallelEnv(n)`` (lock-step ``step_and_maybe_reset``), and
    the parent's CPU microseconds per env step."""
    from torchenv.batched import ParallelEnv

    env, policy = ParallelEnv(n, make), _policy()
    state = {"root": env.reset()}

    def step():
        _, state["root"] = env.step_and_maybe_reset(policy(state["root"]))

    it, elapsed, cpu = _loop_cpu(step, seconds)
    env.close()
    return it * n / elapsed, 1e6 * cpu / (it * n)


def bench_heavy_pool(
    n: int, k: int, seconds: float, backend: str, make=HeavyTailEnv
) -> tuple[float, float]:
    """Env steps per second of ``AsyncEnvPool`` (``n`` sub-envs, each recv the first ``k``),
    and the parent's CPU microseconds per env step."""
    from torchenv.batched import AsyncEnvPool

    pool = AsyncEnvPool([make] * n, backend=backend, recv_size=k)
    policy = _policy()
    pool.async_reset_send()
    pool.async_step_and_maybe_reset_send(policy(pool.async_reset_recv(min_get=n)))

    def step():
        _, root = pool.async_step_and_maybe_reset_recv()  # the first k ready
        pool.async_step_and_maybe_reset_send(policy(root))

    it, elapsed, cpu = _loop_cpu(step, seconds)
    pool.async_step_and_maybe_reset_recv(min_get=len(pool.busy))
    pool.close()
    return it * k / elapsed, 1e6 * cpu / (it * k)


def heavy_tail(n: int, seconds: float, repeats: int, fast: float, slow: float) -> None:
    """The heavy-tailed case: the sides alternate; medians of throughput and of the ratios."""
    import functools

    k = n // 2
    make = functools.partial(HeavyTailEnv, fast=fast, slow=slow)
    runs: dict[str, list[float]] = {"ParallelEnv": [], "pool-proc": [], "pool-thread": []}
    cpus: dict[str, list[float]] = {name: [] for name in runs}
    with torch.no_grad():
        for _ in range(repeats):
            for name, result in (
                ("ParallelEnv", bench_heavy_parallel(n, seconds, make)),
                ("pool-proc", bench_heavy_pool(n, k, seconds, "multiprocessing", make)),
                ("pool-thread", bench_heavy_pool(n, k, seconds, "threading", make)),
            ):
                runs[name].append(result[0])
                cpus[name].append(result[1])
            print(
                "run: " + ", ".join(f"{name} {v[-1]:.0f}" for name, v in runs.items()),
                file=sys.stderr,
            )
    base = runs["ParallelEnv"]
    print(
        f"\nheavy-tailed steps ({fast * 1e3:g} ms, 1% {slow * 1e3:g} ms), {n} sub-envs, recv_size={k}, policy in the "
        f"loop; median of {repeats} alternated runs of {seconds} s; load average "
        f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs"
    )
    print(f"{'side':<28} {'steps/s':>9} {'x ParallelEnv':>14} {'parent CPU us/step':>19}")
    for name, label in (
        ("ParallelEnv", f"ParallelEnv({n})"),
        ("pool-proc", f"AsyncEnvPool processes, {k}"),
        ("pool-thread", f"AsyncEnvPool threads, {k}"),
    ):
        ratio = statistics.median(a / b for a, b in zip(runs[name], base))
        cpu = statistics.median(cpus[name])
        print(f"{label:<28} {statistics.median(runs[name]):9.0f} {ratio:14.2f} {cpu:19.0f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=0.75, help="per measurement")
    parser.add_argument("--repeats", type=int, default=2, help="best of, ours and gymnasium")
    parser.add_argument("--workers", type=int, nargs="+", default=[2, 4])
    parser.add_argument(
        "--rand-action",
        action="store_true",
        help="sample actions with each library's own sampler (env.rand_action / "
        "action_space.sample) instead of replaying the same pre-drawn actions",
    )
    parser.add_argument("--case", choices=("gym", "heavy-tail", "all"), default="all")
    parser.add_argument("--envs", type=int, default=8, help="sub-envs of the heavy-tailed case")
    parser.add_argument(
        "--tail",
        type=float,
        nargs=2,
        default=(1e-4, 1e-2),
        metavar=("FAST", "SLOW"),
        help="heavy-tailed case: step seconds, usually and 1%% of the time (0.0001 0.01)",
    )
    args = parser.parse_args()
    torch.set_num_threads(1)
    if args.case in ("heavy-tail", "all"):
        heavy_tail(args.envs, max(args.seconds, 1.0), max(args.repeats, 5), *args.tail)
        if args.case == "heavy-tail":
            return
    if not os.environ.get("TORCHENV_BENCH_TORCHRL_PYTHON"):
        print("TORCHENV_BENCH_TORCHRL_PYTHON is not set: skipping the TorchRL side.")

    configs = [(env_id, w) for env_id in ENV_IDS for w in args.workers]
    rows = []
    for env_id, workers in configs:
        # alternate the two libraries and keep the best run of each (the machine may be shared)
        runs = [
            (
                bench_torchenv(env_id, workers, args.seconds, args.rand_action),
                bench_gymnasium(env_id, workers, args.seconds, args.rand_action),
            )
            for _ in range(args.repeats)
        ]
        ours = max((r[0] for r in runs), key=lambda r: r["sps"])
        ours["startup"] = min(r[0]["startup"] for r in runs)
        gymv = max((r[1] for r in runs), key=lambda r: r["sps"])
        gymv["startup"] = min(r[1]["startup"] for r in runs)
        rows.append([env_id, workers, ours, gymv, None])
        print(f"done: {env_id} x{workers} (ours: {ours['which']})", file=sys.stderr)
    trl = bench_torchrl(configs, args.seconds, args.rand_action)
    if trl is not None:
        for row, result in zip(rows, trl):
            row[4] = result

    how = "own samplers" if args.rand_action else "the same pre-drawn actions"
    print(f"\nos.cpu_count()={os.cpu_count()}; actions: {how}; steps/s = env steps per second")
    head = (
        f"{'env':<12} {'W':>2} | {'torchenv':>9} {'gym Async':>9} {'TorchRL':>9} | "
        f"{'x gym':>6} {'x TorchRL':>9} || startup s: {'ours':>6} {'gym':>6} {'TorchRL':>7} "
        f"{'ours/TRL':>8}"
    )
    print(head)
    print("-" * len(head))
    for env_id, workers, ours, gymv, trl in rows:
        trl_sps = f"{trl['sps']:9.0f}" if trl else f"{'-':>9}"
        trl_start = f"{trl['startup']:7.2f}" if trl else f"{'-':>7}"
        x_trl = f"{ours['sps'] / trl['sps']:9.2f}" if trl else f"{'-':>9}"
        start_ratio = f"{ours['startup'] / trl['startup']:8.3f}" if trl else f"{'-':>8}"
        print(
            f"{env_id:<12} {workers:>2} | {ours['sps']:9.0f} {gymv['sps']:9.0f} {trl_sps} | "
            f"{ours['sps'] / gymv['sps']:6.2f} {x_trl} || {'':11}{ours['startup']:6.3f} "
            f"{gymv['startup']:6.3f} {trl_start} {start_ratio}"
        )
    print(f"\nours: {rows[0][2]['which']} / {rows[-1][2]['which']}")


if __name__ == "__main__":
    main()
