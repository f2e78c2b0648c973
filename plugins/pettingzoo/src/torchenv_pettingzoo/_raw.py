"""The raw PettingZoo loop that ``torchenv bench`` compares ``PettingZooEnv`` with."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from torchenv_pettingzoo._tasks import find_task

__all__ = ["make_raw_loop"]

# PettingZooEnv's own arguments: they shape the torchenv side only
_TORCHENV_ONLY = (
    "device",
    "return_state",
    "group_map",
    "use_mask",
    "categorical_actions",
    "done_on_any",
    "seed",
    "num_envs",
    "from_pixels",
    "pixels_only",
)


def make_raw_loop(env_id: str, kwargs: dict[str, Any]) -> Callable[[int], int]:
    """``run(steps)``: the task made by PettingZoo and stepped with random actions.

    Parallel tasks (the default where there is one) step every live agent and reset when all
    agents have left (PettingZoo's own loop); AEC tasks step the selected agent
    (``None`` for agents that are done) and reset when no agent is left.
    """
    task = find_task(env_id)
    options = {k: v for k, v in kwargs.items() if k not in _TORCHENV_ONLY}
    parallel = options.pop("parallel", None)
    parallel = task.has_parallel() if parallel is None else bool(parallel)
    env = task.make(parallel, options)
    spaces = {a: env.action_space(a) for a in env.possible_agents}
    for i, space in enumerate(spaces.values()):
        space.seed(i)

    def run(steps: int) -> int:
        env.reset(seed=0)
        if parallel:
            for _ in range(steps):
                if not env.agents:
                    env.reset()
                env.step({a: spaces[a].sample() for a in env.agents})
            return steps
        for _ in range(steps):
            if not env.agents:
                env.reset()
            agent = env.agent_selection
            if env.terminations[agent] or env.truncations[agent]:
                env.step(None)
                continue
            mask = env.observe(agent)
            mask = mask.get("action_mask") if isinstance(mask, dict) else None
            env.step(spaces[agent].sample(mask))
        return steps

    run.close = env.close  # type: ignore[attr-defined]
    return run
