"""The ``torchenv`` command line: argument parsing, dispatch and error reporting."""

from __future__ import annotations

import argparse
import sys
import traceback
from collections.abc import Sequence

from torchenv.cli import _bench, _commands, _record

EXIT_ERROR = 2


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("torchenv")
    except PackageNotFoundError:  # pragma: no cover - source tree without metadata
        return "unknown"


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``torchenv``.

    Sub-commands: backends, list, info, check, rollout, bench, record.
    """
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--debug", action="store_true", default=argparse.SUPPRESS, help="show full tracebacks"
    )
    parser = argparse.ArgumentParser(
        prog="torchenv",
        description="One TensorDict environment API over every simulator: inspect backends, "
        "list, check, roll out, benchmark and record envs.",
        parents=[common],
    )
    parser.add_argument("--version", action="version", version=f"torchenv {_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    p = sub.add_parser("backends", parents=[common], help="installed backends and their status")
    p.set_defaults(func=_commands.cmd_backends)

    p = sub.add_parser("list", parents=[common], help="env ids of one or every backend")
    p.add_argument("backend", nargs="?", metavar="BACKEND", help="only this backend")
    p.set_defaults(func=_commands.cmd_list)

    def env_command(name: str, help: str, func) -> argparse.ArgumentParser:
        p = sub.add_parser(name, parents=[common], help=help)
        p.add_argument("name", metavar="NAME", help="env name, e.g. builtin:Pendulum")
        p.add_argument(
            "--kwargs",
            nargs="*",
            default=[],
            type=_commands.parse_kwarg,
            metavar="KEY=VALUE",
            help="keyword arguments for make(), values read as Python literals",
        )
        p.add_argument("--seed", type=int, default=None, help="seed (default: none)")
        p.set_defaults(func=func)
        return p

    env_command("info", "make an env and print its specs", _commands.cmd_info)
    env_command("check", "make an env and run check_env_specs", _commands.cmd_check)
    p = env_command(
        "rollout", "make an env and roll it out with random actions", _commands.cmd_rollout
    )
    p.add_argument(
        "--steps", type=_positive, default=10, help="steps to run, resetting ended episodes (10)"
    )
    p.add_argument(
        "--stop-on-done", action="store_true", help="stop at the first end of an episode"
    )
    p.add_argument("--no-progress", dest="progress", action="store_false", help="no progress bar")
    p = env_command(
        "bench", "steps/s of the env beside the raw simulator it wraps", _bench.cmd_bench
    )
    p.add_argument("--steps", type=_positive, default=2000, help="steps per timing (2000)")
    p.add_argument("--repeats", type=_positive, default=3, help="timing rounds; median (3)")
    p.add_argument("--num-envs", type=_positive, default=None, help="make(..., num_envs=N)")
    p.add_argument("--workers", type=_positive, default=None, help="also a ParallelEnv of W")
    p = env_command(
        "record", "roll the env out and write its frames as a video", _record.cmd_record
    )
    p.add_argument("--out", required=True, help="video file; its extension picks the format")
    p.add_argument("--steps", type=_positive, default=200, help="frames to record (200)")
    p.add_argument("--fps", type=_positive, default=30, help="frames per second (30)")
    p.add_argument("--no-progress", dest="progress", action="store_false", help="no progress bar")
    return parser


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _one_line(err: BaseException) -> str:
    from torchenv.registry import TorchEnvRegistryError

    text = " ".join(str(err).split()) or type(err).__name__
    if isinstance(err, TorchEnvRegistryError):
        return text
    return f"{type(err).__name__}: {text}"


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``torchenv`` with ``argv`` (default: ``sys.argv[1:]``) and return the exit code.

    Errors print one line on stderr and return 2 (``--debug`` adds the traceback).

    >>> main(["--version"])  # doctest: +ELLIPSIS
    torchenv ...
    0
    """
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:  # --help, --version, usage errors
        code = exit_.code
        return code if isinstance(code, int) else (0 if code is None else EXIT_ERROR)
    try:
        return args.func(args)
    except KeyboardInterrupt:
        print("torchenv: interrupted", file=sys.stderr)
        return 130
    except Exception as err:
        if getattr(args, "debug", False):
            traceback.print_exc()
        message = _commands.cli_syntax(_one_line(err), getattr(args, "command", "rollout"))
        print(f"torchenv: error: {message}", file=sys.stderr)
        return EXIT_ERROR
