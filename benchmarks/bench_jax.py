"""JAX simulators side by side: the library's own jit+vmap loop, TorchRL 0.14.1's ``BraxEnv`` /
``JumanjiEnv`` and ours (``torchenv_jax.BraxEnv`` / ``JumanjiEnv``).

Configs: Brax ``ant`` and Jumanji ``Snake-v1``, 1024 envs (``--num-envs``), a torch policy in the
loop (Brax: linear + tanh on the observation; Snake: linear on the flattened grid, argmax), one
torch thread. Per side:

* ``raw``: what a torch user of the library writes without an env API: ``jax.jit(jax.vmap(step))``
  and ``jax.jit(jax.vmap(reset))`` with a jitted ``jnp.where`` for the done sub-envs, observations
  to torch and actions back through DLPack;
* ``ours`` / ``torchrl``: ``step_and_maybe_reset`` with the policy writing ``"action"``.

Each side is timed against raw in the same process, in alternating chunks of ``--steps`` steps
(``--chunks`` chunks per side, after a warm-up step), medians printed with the ratios
raw/ours and raw/TorchRL (100% = as fast as raw). Compile times are printed too (ours:
``env.compile_seconds``; raw: the first call of each jitted function). TorchRL's side runs in its
own venv (``$TORCHENV_BENCH_TORCHRL_PYTHON``, with brax and jumanji installed). Run:

    TORCHENV_BENCH_TORCHRL_PYTHON=/path/to/venv/bin/python python benchmarks/bench_jax.py
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

CONFIGS = ("brax:ant", "jumanji:Snake-v1")


def _policy(backend: str, obs_dim: int, act_dim: int):
    torch.manual_seed(0)
    linear = torch.nn.Linear(obs_dim, act_dim)
    if backend == "brax":
        return lambda obs: torch.tanh(linear(obs))
    return lambda obs: linear(obs.flatten(1)).argmax(-1).to(torch.int32)


def _obs_key(backend: str) -> str:
    return "observation" if backend == "brax" else "grid"


def raw_side(config: str, num_envs: int):
    """The library's own batched loop with the torch policy, DLPack both ways."""
    import jax
    import jax.numpy as jnp

    backend, name = config.split(":")
    if backend == "brax":
        import brax.envs

        env = brax.envs.get_environment(name)

        def init(key):
            return env.reset(key)

        def step(state, action):
            state = env.step(state, action)
            return state, state.done > 0.5

        def observe(carry):
            return carry.obs

        act_dim, obs_dim = env.action_size, env.observation_size
    else:
        import jumanji

        env = jumanji.make(name)

        def init(key):
            state, ts = env.reset(key)
            return state, ts.observation

        def step(carry, action):
            state, ts = env.step(carry[0], action)
            return (state, ts.observation), ts.last()

        def observe(carry):
            return carry[1].grid

        act_dim = int(env.action_spec.num_values)
        obs_dim = int(jnp.prod(jnp.array(env.observation_spec.grid.shape)))

    def reset_where(keys, carry, mask):
        pairs = jax.vmap(jax.random.split)(keys)
        fresh = jax.vmap(init)(pairs[:, 1])

        def pick(a, b):
            return jnp.where(mask.reshape(mask.shape + (1,) * (a.ndim - 1)), a, b)

        return pick(pairs[:, 0], keys), jax.tree_util.tree_map(pick, fresh, carry)

    vstep = jax.jit(jax.vmap(step))
    vreset = jax.jit(reset_where)
    keys = jax.random.split(jax.random.PRNGKey(0), num_envs)
    start = time.perf_counter()
    blank = jax.vmap(init)(keys)
    keys, carry = vreset(keys, blank, jnp.ones(num_envs, bool))
    jax.block_until_ready(carry)
    compile_reset = time.perf_counter() - start
    policy = _policy(backend, obs_dim, act_dim)
    state = {"keys": keys, "carry": carry, "obs": torch.from_dlpack(observe(carry))}

    @torch.no_grad()
    def one():
        action = jax.dlpack.from_dlpack(policy(state["obs"]))
        carry, done = vstep(state["carry"], action)
        if torch.from_dlpack(done).any():
            state["keys"], carry = vreset(state["keys"], carry, done)
        state["carry"], state["obs"] = carry, torch.from_dlpack(observe(carry))

    start = time.perf_counter()
    one()
    compile_step = time.perf_counter() - start
    return one, {"reset": compile_reset, "step": compile_step}


def td_side(impl: str, config: str, num_envs: int):
    backend, name = config.split(":")
    if impl == "torchrl":
        from torchrl.envs import BraxEnv, JumanjiEnv
    else:
        from torchenv_jax import BraxEnv, JumanjiEnv
    cls = BraxEnv if backend == "brax" else JumanjiEnv
    start = time.perf_counter()
    env = cls(name, batch_size=[num_envs], device="cpu")
    env.set_seed(0)
    td = env.reset()
    key = _obs_key(backend)
    shape = env.action_spec.shape
    act_dim = shape[-1] if backend == "brax" else int(env.action_spec.space.n)
    policy = _policy(backend, td[key][0].numel(), act_dim)
    state = {"td": td}

    @torch.no_grad()
    def one():
        data = state["td"]
        data["action"] = policy(data[key])
        _, state["td"] = env.step_and_maybe_reset(data)

    one()
    seconds = getattr(env, "compile_seconds", {"first reset+step": time.perf_counter() - start})
    return one, seconds


def _interleaved(fns: dict, steps: int, chunks: int) -> dict[str, float]:
    times: dict[str, list[float]] = {name: [] for name in fns}
    names = list(fns)
    for c in range(chunks):
        for name in names if c % 2 == 0 else names[::-1]:
            start = time.perf_counter()
            for _ in range(steps):
                fns[name]()
            times[name].append((time.perf_counter() - start) / steps)
    return {name: statistics.median(ts) for name, ts in times.items()}


def measure(impl: str, configs, num_envs: int, steps: int, chunks: int) -> dict:
    out = {}
    for config in configs:
        raw, raw_compile = raw_side(config, num_envs)
        side, side_compile = td_side(impl, config, num_envs)
        result = _interleaved({"raw": raw, impl: side}, steps, chunks)
        result["compile"] = {"raw": raw_compile, impl: side_compile}
        out[config] = result
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--num-envs", type=int, default=1024)
    parser.add_argument("--steps", type=int, default=3, help="steps per chunk")
    parser.add_argument("--chunks", type=int, default=5, help="alternating chunks per side")
    parser.add_argument("--configs", nargs="+", default=list(CONFIGS), choices=CONFIGS)
    parser.add_argument("--impl", choices=["torchrl", "ours"], default=None)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(1)
    run = (args.num_envs, args.steps, args.chunks)
    if args.impl is not None:  # one side against raw (the TorchRL subprocess)
        result = measure(args.impl, args.configs, *run)
        print(json.dumps(result) if args.json else result)
        return
    import jax
    from _torchrl_side import torchrl_results

    print(
        f"jax {jax.__version__} ({jax.default_backend()}), torch {torch.__version__}, 1 torch "
        f"thread, {args.num_envs} envs, policy in the loop; {args.chunks} chunks of "
        f"{args.steps} steps per side alternating with raw; medians"
    )
    ours = measure("ours", args.configs, *run)
    extra = ["--configs", *args.configs, "--num-envs", str(args.num_envs)]
    extra += ["--steps", str(args.steps), "--chunks", str(args.chunks)]
    trl = torchrl_results(__file__, *extra)
    head = f"{'config':18s} {'raw ms':>8s} {'ours ms':>8s} {'raw/ours':>8s}"
    if trl:
        head += f" {'raw ms':>8s} {'trl ms':>8s} {'raw/trl':>8s} {'trl/ours':>8s}"
    print(head)
    for key, r in ours.items():
        line = f"{key:18s} {r['raw'] * 1e3:8.1f} {r['ours'] * 1e3:8.1f} {r['raw'] / r['ours']:8.1%}"
        if trl:
            t = trl[key]
            line += (
                f" {t['raw'] * 1e3:8.1f} {t['torchrl'] * 1e3:8.1f} {t['raw'] / t['torchrl']:8.1%}"
                f" {(t['torchrl'] / t['raw']) / (r['ours'] / r['raw']):7.1f}x"
            )
        print(line)
    for key, r in ours.items():
        compile_s = {
            side: {k: round(v, 1) for k, v in s.items()} for side, s in r["compile"].items()
        }
        if trl:
            compile_s["torchrl"] = {
                k: round(v, 1) for k, v in trl[key]["compile"]["torchrl"].items()
            }
        print(f"compile seconds {key}: {compile_s}")
    print(
        "raw/x = raw time / x time per step (100% = as fast as the library's own loop); trl/ours "
        "= TorchRL's time over ours, each normalised by its own interleaved raw loop"
    )


if __name__ == "__main__":
    main()
