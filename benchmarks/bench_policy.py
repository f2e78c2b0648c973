"""A policy in the loop, the way training runs: torchenv vs raw gymnasium vs TorchRL.

Every side runs the same collector loop: a 64-unit MLP reads the observation, its output
becomes the action, the env steps and resets what ended. On our side and TorchRL's that is a
``TensorDictModule`` and ``env.step_and_maybe_reset``; on gymnasium's it is the MLP on
``torch.from_numpy(obs)`` and ``env.step(action.numpy())`` with a reset when an episode ends
(vector envs reset themselves).

Cases: single envs (CartPole-v1 with one-hot actions, TorchRL's default, and with index actions
``categorical_action_encoding=True``; Pendulum-v1; HalfCheetah-v5 when mujoco is installed),
the "floor" of CartPole (the same policy around a hand-written minimal TensorDict step: the
bound for any env that speaks TensorDicts, see :func:`floor_single`),
``ParallelEnv(4)`` (CartPole one-hot and categorical, Pendulum) against gymnasium's
``AsyncVectorEnv(4)``, and ``GymEnv(num_envs=N,
vectorization_mode="vector_entry_point")`` against gymnasium's vector env with N = 64 and 1024.
The TorchRL side runs in the interpreter named by ``TORCHENV_BENCH_TORCHRL_PYTHON`` (skipped
when unset). The sides alternate over ``--repeats`` rounds (default 3) and the median of each
is reported, with ``torch.set_num_threads(1)``.

    python benchmarks/bench_policy.py [--repeats 3] [--seconds 1.0] [--cases single,parallel,vector]
        [--json PATH]

``--json PATH`` also writes the medians (env-steps/s; ``torchrl`` is null when skipped) to PATH,
one object per case: what ``scripts/doc_images.py`` plots.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import time
import warnings

warnings.filterwarnings("ignore")

# "+categorical": ``categorical_action_encoding=True`` (an index action, as the raw side's MLP
# writes; without it a discrete action is one-hot, TorchRL's default, and the policy pays a
# ``one_hot`` that the raw side does not)
SINGLE = ["CartPole-v1", "CartPole-v1+categorical", "Pendulum-v1"] + (
    ["HalfCheetah-v5"] if importlib.util.find_spec("mujoco") else []
)
# the hand-written TensorDict step (floor_single): the best any TensorDict env can do here
FLOOR = ["CartPole-v1", "CartPole-v1+categorical"]
PARALLEL = [("CartPole-v1", 4), ("CartPole-v1+categorical", 4), ("Pendulum-v1", 4)]
VECTOR = [64, 1024]


def _mlp(obs_dim: int, out_dim: int):
    import torch

    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Linear(obs_dim, 64), torch.nn.Tanh(), torch.nn.Linear(64, out_dim)
    )


def _action_head(space):
    """MLP output size and ``output -> action tensor`` for a gymnasium action space."""
    import torch

    if hasattr(space, "n"):
        return int(space.n), lambda out: out.argmax(-1)
    high = torch.as_tensor(space.high, dtype=torch.float32)
    return int(space.shape[-1]), lambda out: torch.tanh(out) * high


def _timed(step, seconds: float, per_step: int) -> float:
    """env-steps/s of calling ``step()`` for about ``seconds`` (after a warm-up)."""
    for _ in range(20):
        step()
    n, start = 0, time.perf_counter()
    while True:
        for _ in range(50):
            step()
        n += 50
        elapsed = time.perf_counter() - start
        if elapsed >= seconds:
            return n * per_step / elapsed


# ------------------------------------------------------------------------ torchenv / TorchRL
def _td_policy(env, one_hot: bool):
    """A TensorDictModule: MLP on "observation", writing "action" as the env's spec wants."""
    import torch
    from tensordict.nn import TensorDictModule

    obs_dim = env.observation_spec["observation"].shape[-1]
    spec = env.action_spec
    if one_hot:
        n = spec.shape[-1]
        mlp = _mlp(obs_dim, n)

        def act(obs):
            return torch.nn.functional.one_hot(mlp(obs.float()).argmax(-1), n).to(spec.dtype)
    elif hasattr(spec.space, "n"):  # categorical (any batch size)
        mlp = _mlp(obs_dim, int(spec.space.n))

        def act(obs):
            return mlp(obs.float()).argmax(-1)
    else:
        high = spec.space.high
        mlp = _mlp(obs_dim, spec.shape[-1])

        def act(obs):
            return (torch.tanh(mlp(obs.float())) * high).to(spec.dtype)

    class Act(torch.nn.Module):
        def forward(self, obs):
            return act(obs)

    return TensorDictModule(Act(), in_keys=["observation"], out_keys=["action"])


def _td_loop(env, policy):
    import torch

    state = {"td": env.reset()}

    @torch.no_grad()
    def step():
        _, state["td"] = env.step_and_maybe_reset(policy(state["td"]))

    return step


def lib_single(lib: str, env_id: str, seconds: float) -> float:
    import torch

    torch.set_num_threads(1)
    if lib == "torchrl":
        from torchrl.envs import GymEnv
    else:
        from torchenv_gym import GymEnv
    env_id, _, option = env_id.partition("+")
    env = GymEnv(env_id, categorical_action_encoding=option == "categorical")
    one_hot = "OneHot" in type(env.action_spec).__name__
    try:
        return _timed(_td_loop(env, _td_policy(env, one_hot)), seconds, 1)
    finally:
        env.close()


def lib_parallel(lib: str, env_id: str, workers: int, seconds: float) -> float:
    import functools

    import torch

    torch.set_num_threads(1)
    if lib == "torchrl":
        from torchrl.envs import GymEnv, ParallelEnv
    else:
        from torchenv import ParallelEnv
        from torchenv_gym import GymEnv
    env_id, _, option = env_id.partition("+")
    make = functools.partial(GymEnv, env_id, categorical_action_encoding=option == "categorical")
    env = ParallelEnv(workers, make)
    try:
        one_hot = "OneHot" in type(env.action_spec).__name__
        return _timed(_td_loop(env, _td_policy(env, one_hot)), seconds, workers)
    finally:
        env.close()


def lib_vector(num_envs: int, seconds: float) -> float:
    import torch

    from torchenv_gym import GymEnv

    torch.set_num_threads(1)
    env = GymEnv("CartPole-v1", num_envs=num_envs, vectorization_mode="vector_entry_point")
    try:
        one_hot = "OneHot" in type(env.action_spec).__name__
        return _timed(_td_loop(env, _td_policy(env, one_hot)), seconds, num_envs)
    finally:
        env.close()


def floor_single(env_id: str, seconds: float) -> float:
    """The bound of any TensorDict env: the same policy and loop around a hand-written step.

    The step does only what TorchRL's semantics need: the action to the simulator, five fresh
    output tensors under ``"next"``, and the next input (action and observation/dones carried,
    as ``step_mdp`` does), reset when done. No checks, no specs, one env id. ``ours / raw``
    cannot exceed ``floor / raw`` unless the policy side gets faster.
    """
    import gymnasium as gym
    import numpy as np
    import torch
    from tensordict import TensorDict

    from torchenv_gym import GymEnv

    torch.set_num_threads(1)
    name, _, option = env_id.partition("+")
    spec_env = GymEnv(name, categorical_action_encoding=option == "categorical")
    one_hot = "OneHot" in type(spec_env.action_spec).__name__
    policy = _td_policy(spec_env, one_hot)
    spec_env.close()
    env = gym.make(name)
    empty, from_numpy, scalar = np.empty, torch.from_numpy, torch.Size([])
    new = TensorDict._new_unsafe
    dones = ("done", "terminated", "truncated")

    def step(td):
        action = td._tensordict["action"]
        obs, reward, terminated, truncated, _ = env.step(
            int(action.argmax()) if one_hot else int(action)
        )
        rew, flags = empty(1, np.float32), empty(3, bool)
        rew[0], flags[0], flags[1], flags[2] = (
            reward,
            terminated or truncated,
            terminated,
            truncated,
        )
        nxt = {
            "observation": from_numpy(np.array(obs, dtype=np.float32)),
            "reward": from_numpy(rew),
        }
        nxt.update(zip(dones, map(from_numpy, (flags[0:1], flags[1:2], flags[2:3]))))
        td._set_str(
            "next",
            new(nxt, batch_size=scalar, device=None, nested=False),
            validated=True,
            inplace=False,
        )
        if terminated or truncated:
            obs = env.reset()[0]
            root = {"observation": from_numpy(np.array(obs, dtype=np.float32))}
            root.update((k, torch.zeros(1, dtype=torch.bool)) for k in dones)
        else:
            root = {"observation": nxt["observation"], **{k: nxt[k] for k in dones}}
        root["action"] = action
        return td, new(root, batch_size=scalar, device=None, nested=False)

    obs = env.reset(seed=0)[0]
    first = {"observation": from_numpy(np.array(obs, dtype=np.float32))}
    first.update((k, torch.zeros(1, dtype=torch.bool)) for k in dones)
    state = {"td": new(first, batch_size=scalar, device=None, nested=False)}

    @torch.no_grad()
    def loop():
        _, state["td"] = step(policy(state["td"]))

    try:
        return _timed(loop, seconds, 1)
    finally:
        env.close()


# ------------------------------------------------------------------------------- gymnasium
def raw_single(env_id: str, seconds: float) -> float:
    import gymnasium as gym
    import torch

    torch.set_num_threads(1)
    env = gym.make(env_id.partition("+")[0])
    out_dim, to_action = _action_head(env.action_space)
    mlp = _mlp(env.observation_space.shape[-1], out_dim)
    state = {"obs": env.reset(seed=0)[0]}

    @torch.no_grad()
    def step():
        action = to_action(mlp(torch.from_numpy(state["obs"]).float())).numpy()
        obs, _, terminated, truncated, _ = env.step(action)
        state["obs"] = env.reset()[0] if terminated or truncated else obs

    try:
        return _timed(step, seconds, 1)
    finally:
        env.close()


def raw_vector(env, seconds: float) -> float:
    import torch

    torch.set_num_threads(1)
    out_dim, to_action = _action_head(env.single_action_space)
    mlp = _mlp(env.single_observation_space.shape[-1], out_dim)
    state = {"obs": env.reset(seed=0)[0]}

    @torch.no_grad()
    def step():
        action = to_action(mlp(torch.from_numpy(state["obs"]).float())).numpy()
        state["obs"] = env.step(action)[0]

    try:
        return _timed(step, seconds, env.num_envs)
    finally:
        env.close()


def raw_async(env_id: str, workers: int, seconds: float) -> float:
    import gymnasium as gym

    env_id = env_id.partition("+")[0]
    return raw_vector(gym.vector.AsyncVectorEnv([lambda: gym.make(env_id)] * workers), seconds)


def raw_vector_entry(num_envs: int, seconds: float) -> float:
    import gymnasium as gym

    env = gym.make_vec("CartPole-v1", num_envs=num_envs, vectorization_mode="vector_entry_point")
    return raw_vector(env, seconds)


# ------------------------------------------------------------------------------------ driver
def _torchrl(case: str, args: list[str], seconds: float) -> float | None:
    python = os.environ.get("TORCHENV_BENCH_TORCHRL_PYTHON")
    if not python or not os.path.exists(python):
        return None
    proc = subprocess.run(
        [python, os.path.abspath(__file__), "--torchrl", case, *args, "--seconds", str(seconds)],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode:
        print(f"  (TorchRL side of {case} {args} failed: {proc.stderr.strip().splitlines()[-1:]})")
        return None
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _median(values: list[float | None]) -> float | None:
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def _row(label: str, ours: float, raw: float, trl: float | None) -> str:
    trl_text = f"{trl:>10,.0f} {ours / trl:>8.2f}" if trl else f"{'-':>10} {'-':>8}"
    return f"{label:<34} {ours:>10,.0f} {raw:>10,.0f} {ours / raw:>8.2f} {trl_text}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=1.0)
    parser.add_argument("--cases", default="single,parallel,vector")
    parser.add_argument("--json", metavar="PATH", help="also write the medians as JSON to PATH")
    parser.add_argument("--torchrl", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.torchrl:  # the TorchRL side, in TorchRL's interpreter
        case, *rest = args.torchrl
        if case == "single":
            print(json.dumps(lib_single("torchrl", rest[0], args.seconds)))
        else:
            print(json.dumps(lib_parallel("torchrl", rest[0], int(rest[1]), args.seconds)))
        return
    cases = args.cases.split(",")
    header = f"{'case (env-steps/s, policy in the loop)':<34} {'torchenv':>10} {'raw+MLP':>10} {'x raw':>8} {'TorchRL':>10} {'x TorchRL':>8}"
    print(header)
    print("-" * len(header))
    s = args.seconds
    plan = []
    if "single" in cases:
        plan += [
            (
                f"{e}",
                lambda e=e: lib_single("torchenv", e, s),
                lambda e=e: raw_single(e, s),
                ("single", [e]),
            )
            for e in SINGLE
        ]
        plan += [
            (
                f"{e} floor",
                lambda e=e: floor_single(e, s),
                lambda e=e: raw_single(e, s),
                None,
            )
            for e in FLOOR
        ]
    if "parallel" in cases:
        plan += [
            (
                f"{e.replace('+categorical', '+cat')} Parallel({w})/Async({w})",
                lambda e=e, w=w: lib_parallel("torchenv", e, w, s),
                lambda e=e, w=w: raw_async(e, w, s),
                ("parallel", [e, str(w)]),
            )
            for e, w in PARALLEL
        ]
    if "vector" in cases:
        plan += [
            (
                f"CartPole-v1 vector {n}",
                lambda n=n: lib_vector(n, s),
                lambda n=n: raw_vector_entry(n, s),
                None,
            )
            for n in VECTOR
        ]
    results = []
    for label, ours_fn, raw_fn, trl_case in plan:
        ours, raw, trl = [], [], []
        for _ in range(args.repeats):
            if trl_case is not None:
                trl.append(_torchrl(trl_case[0], trl_case[1], s))
            ours.append(ours_fn())
            raw.append(raw_fn())
        print(_row(label, _median(ours), _median(raw), _median(trl)), flush=True)
        results.append(
            {"case": label, "torchenv": _median(ours), "raw": _median(raw), "torchrl": _median(trl)}
        )
        if args.json:  # after each case: a run cut short keeps what it measured
            with open(args.json, "w") as f:
                json.dump({"repeats": args.repeats, "seconds": s, "results": results}, f, indent=1)


if __name__ == "__main__":
    main()
