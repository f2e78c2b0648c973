"""torchenv-gym vs raw gymnasium vs TorchRL's GymEnv: steps per second, side by side.

Single envs (CartPole-v1, Pendulum-v1, HalfCheetah-v5 when mujoco is installed): ``env.rollout``
with random actions from the action spec, without stopping at the end of episodes (resets
included), against a plain gymnasium loop (``env.step`` + ``env.reset`` when done, fixed
actions) and against TorchRL's ``GymEnv.rollout`` run by the TorchRL interpreter named in
``TORCHENV_BENCH_TORCHRL_PYTHON`` (skipped when unset).

Vector envs: ``GymEnv("CartPole-v1", num_envs=N)`` (rollout, partial resets included) against the
same gymnasium vector env stepped directly (its own autoreset, fixed actions, nothing kept), for
the ``sync`` and ``vector_entry_point`` modes; and, as a floor for any wrapper that returns the
trajectory, a bare numpy loop that draws random actions and keeps the step's arrays.

Each of ``--repeats`` rounds (default 3) runs the TorchRL side, ours and raw gymnasium in turn;
the best rate of each is kept, so that a busy moment of the (shared) machine does not land on
one side only.

Run: ``python benchmarks/bench_gym.py`` (about two minutes).
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import time
import warnings

warnings.filterwarnings("ignore")

SINGLE = ["CartPole-v1", "Pendulum-v1"] + (
    ["HalfCheetah-v5"] if importlib.util.find_spec("mujoco") else []
)
VECTOR = [(64, "sync"), (1024, "sync"), (64, "vector_entry_point"), (1024, "vector_entry_point")]
SECONDS = 1.5


def _rate(run, steps_per_call: int, seconds: float = SECONDS) -> float:
    """Calls ``run()`` repeatedly for about ``seconds``; returns steps per second (best of 3)."""
    run()  # warm up
    best = 0.0
    for _ in range(3):
        calls, start = 0, time.perf_counter()
        while True:
            run()
            calls += 1
            elapsed = time.perf_counter() - start
            if elapsed > seconds / 3:
                break
        best = max(best, calls * steps_per_call / elapsed)
    return best


# ---------------------------------------------------------------------------------- our side
def ours_single(env_id: str) -> float:
    from torchenv_gym import GymEnv

    env = GymEnv(env_id)
    env.set_seed(0)
    n = 1000 if env_id != "HalfCheetah-v5" else 300
    return _rate(lambda: env.rollout(n, break_when_any_done=False), n)


def raw_single(env_id: str) -> float:
    import gymnasium

    env = gymnasium.make(env_id)
    env.reset(seed=0)
    action = env.action_space.sample()
    n = 1000 if env_id != "HalfCheetah-v5" else 300

    def run():
        for _ in range(n):
            _, _, terminated, truncated, _ = env.step(action)
            if terminated or truncated:
                env.reset()

    return _rate(run, n)


def ours_vector(num_envs: int, mode: str) -> float:
    from torchenv_gym import GymEnv

    env = GymEnv("CartPole-v1", num_envs=num_envs, vectorization_mode=mode)
    env.set_seed(0)
    n = 200 if mode == "vector_entry_point" else 20
    return _rate(lambda: env.rollout(n, break_when_any_done=False), n * num_envs)


def raw_vector(num_envs: int, mode: str) -> float:
    import gymnasium
    import numpy as np

    env = gymnasium.make_vec("CartPole-v1", num_envs=num_envs, vectorization_mode=mode)
    env.reset(seed=0)
    actions = np.random.default_rng(0).integers(0, 2, num_envs)
    n = 200 if mode == "vector_entry_point" else 20

    def run():
        for _ in range(n):
            env.step(actions)

    return _rate(run, n * num_envs)


def stored_vector(num_envs: int, mode: str) -> float:
    """A hand-written numpy loop that keeps what a rollout keeps: random actions drawn per step,
    the step's arrays appended to lists and stacked batch-major at the end (the floor of any
    wrapper that returns the trajectory, against the bare loop of ``raw_vector``)."""
    import gymnasium
    import numpy as np

    env = gymnasium.make_vec("CartPole-v1", num_envs=num_envs, vectorization_mode=mode)
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    n = 200 if mode == "vector_entry_point" else 20

    def run():
        actions, obs, rewards, terminated, truncated = [], [], [], [], []
        for _ in range(n):
            action = rng.integers(0, 2, num_envs)
            o, r, te, tr, _ = env.step(action)
            for store, value in zip(
                (actions, obs, rewards, terminated, truncated), (action, o, r, te, tr)
            ):
                store.append(value)
        return [np.stack(store, 1) for store in (actions, obs, rewards, terminated, truncated)]

    return _rate(run, n * num_envs)


# ---------------------------------------------------------------------------- TorchRL's side
def torchrl_single(env_id: str) -> float:
    from torchrl.envs import GymEnv

    env = GymEnv(env_id)
    env.set_seed(0)
    n = 300 if env_id != "HalfCheetah-v5" else 100
    return _rate(lambda: env.rollout(n, break_when_any_done=False), n)


def _torchrl_side() -> dict[str, float] | str:
    python = os.environ.get("TORCHENV_BENCH_TORCHRL_PYTHON")
    if not python or not os.path.exists(python):
        return "set TORCHENV_BENCH_TORCHRL_PYTHON to a python with torchrl to compare"
    proc = subprocess.run(
        [python, __file__, "--torchrl"], capture_output=True, text=True, timeout=300
    )
    if proc.returncode:
        return f"TorchRL side failed: {proc.stderr.strip().splitlines()[-1:]}"
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _best(rows: list[dict]) -> dict:
    """Per key, the best (largest) rate over the repeats."""
    out: dict = {}
    for row in rows:
        for key, value in row.items():
            out[key] = max(out.get(key, 0.0), value)
    return out


def main() -> None:
    if "--torchrl" in sys.argv:
        print(json.dumps({env_id: torchrl_single(env_id) for env_id in SINGLE}))
        return
    import gymnasium

    repeats = int(sys.argv[sys.argv.index("--repeats") + 1]) if "--repeats" in sys.argv else 3
    print(
        f"gymnasium {gymnasium.__version__}, {os.cpu_count()} cpus; steps/s, best of {repeats} "
        "rounds (each round runs TorchRL, torchenv and gymnasium in turn: the machine is shared)"
    )
    trl_rounds, ours_rounds, raw_rounds = [], [], []
    skipped = None
    for _ in range(repeats):
        trl = _torchrl_side()
        if isinstance(trl, str):
            skipped = trl
        else:
            trl_rounds.append(trl)
        ours_rounds.append({env_id: ours_single(env_id) for env_id in SINGLE})
        raw_rounds.append({env_id: raw_single(env_id) for env_id in SINGLE})
        ours_rounds[-1] |= {(n, m): ours_vector(n, m) for n, m in VECTOR}
        raw_rounds[-1] |= {(n, m): raw_vector(n, m) for n, m in VECTOR}
        raw_rounds[-1] |= {("stored", n, m): stored_vector(n, m) for n, m in VECTOR}
    if skipped:
        print(f"(TorchRL side skipped: {skipped})")
    trl, ours, raw = _best(trl_rounds), _best(ours_rounds), _best(raw_rounds)
    header = f"{'single env':<18}{'torchenv':>12}{'gymnasium':>12}{'TorchRL':>12}"
    print(header + f"{'vs raw':>9}{'vs TorchRL':>12}")
    for env_id in SINGLE:
        theirs = trl.get(env_id)
        vs_trl = f"{ours[env_id] / theirs:>11.1f}x" if theirs else f"{'-':>12}"
        col = f"{theirs:>12,.0f}" if theirs else f"{'-':>12}"
        ratio = ours[env_id] / raw[env_id]
        print(f"{env_id:<18}{ours[env_id]:>12,.0f}{raw[env_id]:>12,.0f}{col}{ratio:>8.0%} {vs_trl}")
    print(
        f"\n{'CartPole vector':<30}{'torchenv':>12}{'gymnasium':>12}{'ratio':>7}"
        f"{'numpy+store':>13}{'its ratio':>10}"
    )
    for key in VECTOR:
        label = f"num_envs={key[0]} {key[1]}"
        stored = raw[("stored", *key)]
        print(
            f"{label:<30}{ours[key]:>12,.0f}{raw[key]:>12,.0f}{ours[key] / raw[key]:>7.0%}"
            f"{stored:>13,.0f}{stored / raw[key]:>10.0%}"
        )
    print(
        "numpy+store: a bare numpy loop that also keeps the trajectory (random actions, arrays "
        "stacked at the end); 'its ratio' is its rate over gymnasium's bare loop"
    )


if __name__ == "__main__":
    main()
