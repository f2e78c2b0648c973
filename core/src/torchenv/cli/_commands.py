"""The CLI's sub-commands. Each takes the parsed arguments and returns an exit code.

``backends`` and ``list`` import only the registry; ``info``, ``check`` and ``rollout`` import
``torchenv.envs`` (and torch) when they run.
"""

from __future__ import annotations

import argparse
import ast
import re
import textwrap
from typing import Any

from torchenv.cli._format import progress, spec_lines, table, terminal_width, wrap_words


def _say(text: str = "") -> None:
    print(text, flush=True)


def parse_kwarg(text: str) -> tuple[str, Any]:
    """Parse ``key=value``; the value is a Python literal when it reads as one, else a string.

    >>> parse_kwarg("num_envs=4")
    ('num_envs', 4)
    >>> parse_kwarg("device=cpu")
    ('device', 'cpu')
    """
    key, sep, raw = text.partition("=")
    if not sep or not key.strip().isidentifier():
        raise argparse.ArgumentTypeError(f"expected key=value, got {text!r}")
    try:
        value = ast.literal_eval(raw)
    except (ValueError, SyntaxError):
        value = raw
    return key.strip(), value


def cmd_backends(args: argparse.Namespace) -> int:
    """Print every installed backend with versions and status."""
    from torchenv.registry import backends, plugins
    from torchenv.registry._manager import disabled_plugins

    with progress("discovering plugins"):
        infos = backends()
        plugins()
    rows = []
    for info in infos:
        plugin = " ".join(filter(None, (info.distribution, info.distribution_version)))
        simulator = "-"
        if info.simulator:
            simulator = f"{info.simulator} {info.simulator_version or '(missing)'}"
        rows.append([info.name, plugin, simulator, info.supported or "any", info.status])
    if not rows:
        _say("no backends installed")
    else:
        _say(table(["BACKEND", "PLUGIN", "SIMULATOR", "SUPPORTED", "STATUS"], rows))
    width = terminal_width()
    problems = [i for i in infos if not i.ok]
    if problems:
        _say()
    for info in problems:
        line = f"{info.name}: {info.reason}" + (f". {info.hint}" if info.hint else "")
        # wrapped, never clipped: the hint is the part that says what to do
        _say(textwrap.fill(line, width, subsequent_indent="  ", break_on_hyphens=False))
    disabled = disabled_plugins()
    if disabled:
        _say(f"disabled by TORCHENV_DISABLE_PLUGINS: {', '.join(disabled)}")
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    """Print the env ids of one backend, or of every backend grouped by backend."""
    from torchenv.registry import backends, list_envs

    if args.backend:
        with progress(f"listing {args.backend}"):
            ids = list_envs(args.backend)
        _say(f"{args.backend} ({len(ids)} envs)")
        if ids:
            _say(wrap_words(ids))
        return 0
    with progress("discovering plugins"):
        infos = backends()
    for i, info in enumerate(infos):
        if i:
            _say()
        if not info.ok:
            hint = f". {info.hint}" if info.hint else ""
            _say(f"{info.name}: unavailable ({info.status}): {info.reason}{hint}")
            continue
        try:
            with progress(f"listing {info.name}"):
                ids = list_envs(info.name)
        except Exception as err:  # one failing backend must not hide the others
            _say(f"{info.name}: cannot list envs: {type(err).__name__}: {err}")
            continue
        _say(f"{info.name} ({len(ids)} envs)")
        if ids:
            _say(wrap_words(ids))
    return 0


def make_for_cli(name: str, kwargs: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    """``make(name, **kwargs)`` and the keywords used: a natively batched env that needs
    ``num_envs`` (VMAS) gets ``num_envs=1`` when none was given (``--kwargs num_envs=N``)."""
    from torchenv.registry import make

    try:
        return make(name, **kwargs), kwargs
    except TypeError as err:
        if "num_envs is required" not in str(err) or "num_envs" in kwargs:
            raise
        _say(f"{name}: num_envs=1 (choose with --kwargs num_envs=N)")
        kwargs = {**kwargs, "num_envs": 1}
        return make(name, **kwargs), kwargs


_MAKE_CALL = re.compile(r"(?:torchenv\.)?make\(\s*'([^']*)'\s*(?:,\s*([^()]*))?\)")


def cli_syntax(text: str, command: str = "rollout") -> str:
    """An error message with ``make('NAME', k=v)`` spelt as the command line that does it.

    >>> cli_syntax("e.g. torchenv.make('vmas:balance', num_envs=32)")
    'e.g. torchenv rollout vmas:balance --kwargs num_envs=32'
    >>> cli_syntax("Name the backend: make('backend:env-id'); see: torchenv list", "info")
    'Name the backend: torchenv info backend:env-id; see: torchenv list'
    """

    def spell(match: re.Match) -> str:
        name, rest = match.group(1), (match.group(2) or "").strip()
        pairs = [p.strip().replace(" ", "") for p in rest.split(",") if p.strip()]
        kwargs = f" --kwargs {' '.join(pairs)}" if pairs else ""
        return f"torchenv {command} {name}{kwargs}"

    return _MAKE_CALL.sub(spell, text)


def _make(args: argparse.Namespace) -> Any:
    kwargs = dict(args.kwargs or ())
    with progress(f"making {args.name}"):
        return make_for_cli(args.name, kwargs)[0]


def cmd_info(args: argparse.Namespace) -> int:
    """Make an env and print its batch size, device and specs."""
    env = _make(args)
    try:
        cls = type(env)
        _say(f"{args.name}  ({cls.__module__}.{cls.__qualname__})")
        locked = getattr(env, "batch_locked", "?")
        _say(f"batch size: {list(env.batch_size)}   device: {env.device}   batch locked: {locked}")
        for title, attr in (
            ("observation spec", "full_observation_spec"),
            ("action spec", "full_action_spec"),
            ("reward spec", "full_reward_spec"),
            ("done spec", "full_done_spec"),
            ("state spec", "full_state_spec"),
        ):
            _say(f"{title}:")
            for line in spec_lines(getattr(env, attr, None)):
                _say(line)
    finally:
        _close(env)
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    """Make an env and run check_env_specs on it."""
    from torchenv.envs import check_env_specs

    env = _make(args)
    try:
        with progress(f"checking {args.name}"):
            check_env_specs(env, seed=args.seed)
    except AssertionError as err:
        _say(f"FAILED: {args.name}: {err}")
        return 1
    finally:
        _close(env)
    _say(f"OK: {args.name} produces data that matches its specs")
    return 0


def _nested(key: Any) -> tuple[str, ...]:
    return key if isinstance(key, tuple) else (key,)


def cmd_rollout(args: argparse.Namespace) -> int:
    """Make an env, seed it, run ``--steps`` random steps (resetting as needed) and summarise."""
    env = _make(args)
    try:
        if args.seed is not None:
            env.set_seed(args.seed)
        data = env.rollout(
            args.steps,
            break_when_any_done=args.stop_on_done,
            progress=f"rolling out {args.name}" if args.progress else False,
        )
        _say(f"rollout of {args.name}: TensorDict batch_size={list(data.batch_size)}")
        rows = []
        for key in data.keys(include_nested=True, leaves_only=True):
            value = data.get(key)
            name = ".".join(_nested(key))
            shape = list(getattr(value, "shape", ()))
            dtype = str(getattr(value, "dtype", type(value).__name__)).replace("torch.", "")
            rows.append([name, str(shape), dtype])
        for line in table(["key", "shape", "dtype"], rows, terminal_width() - 2).splitlines():
            _say("  " + line)
        for line in episode_summary(env, data):
            _say(line)
    finally:
        _close(env)
    return 0


def episode_summary(env: Any, data: Any) -> list[str]:
    """The rollout summary: steps, episodes that ended, total reward and episode returns.

    An episode ends where the root ``"done"`` of the ``next`` step is set; its return sums the
    rewards since the previous end (or the start) in the same sub-env.
    """
    import torch

    steps = data.batch_size[-1] if data.batch_dims else 0
    done = data.get(("next", "done"), None)
    done = None if done is None else done.reshape(*data.batch_size).bool()
    ended = "-" if done is None else str(int(done.sum()))
    totals, returns_lines = [], []
    for key in env.reward_keys:
        name = ".".join(_nested(key))
        reward = data.get(("next", *_nested(key))).reshape(*data.batch_size, -1).sum(-1).double()
        totals.append(f"{float(reward.sum()):.4g}")
        if done is None:
            continue
        running = torch.zeros(data.batch_size[:-1], dtype=torch.float64)
        returns = []
        for t in range(steps):
            running += reward[..., t]
            returns.extend(running[done[..., t]].tolist())
            running[done[..., t]] = 0.0
        if returns:
            mean = sum(returns) / len(returns)
            returns_lines.append(
                f"episode return ({name}): mean {mean:.4g}   min {min(returns):.4g}   "
                f"max {max(returns):.4g}"
            )
    total = " / ".join(totals)
    return [f"steps: {steps}   episodes ended: {ended}   total reward: {total}", *returns_lines]


def _close(env: Any) -> None:
    close = getattr(env, "close", None)
    if close is None:
        return
    try:
        close(raise_if_closed=False)
    except TypeError:
        close()
