"""The README's install commands, run as written against freshly built wheels in fresh venvs.

The distributions are built once per test session by ``scripts/build_dists.py`` (the same as
``nox -s build``); each ``pip install ...`` line of the README's Install section, and the install
hint of every backend, runs in its own venv with ``--find-links`` to them and ``-c constraints.txt``
(the CPU torch pin), then the environment it promises is made and rolled out.

Sharing work: the wheels are built once, and torch (the pinned CPU build, which the constraints
file selects anyway) is installed once into a base venv that every command's venv starts as a
hard-linked copy of; the command then installs everything else itself. Both are shared by the
pytest-xdist workers through a file lock. Marked ``install`` and ``slow``; part of the suite CI runs.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest
from filelock import FileLock

ROOT = Path(__file__).resolve().parent.parent
# Building every wheel and the base venv happens in the first test's setup: a longer limit than the
# suite's 300 s, for a loaded machine.
pytestmark = [pytest.mark.install, pytest.mark.slow, pytest.mark.timeout(1800)]

# What each command promises, checked in its venv: the backends that must be "ok".
PROMISES = {
    "torchenv": ["builtin"],
    "torchenv[gymnasium]": ["builtin", "gymnasium"],
    "torchenv[gym]": ["builtin", "gym"],
    "torchenv[vmas]": ["builtin", "vmas"],
    "torchenv[dmcontrol]": ["builtin", "dmcontrol"],
    "torchenv[mujoco]": ["builtin", "mujoco"],
    "torchenv[pettingzoo]": ["builtin", "pettingzoo"],
    "torchenv[envpool]": ["builtin", "envpool"],
    "torchenv[openspiel]": ["builtin", "openspiel"],
    "torchenv[brax]": ["builtin", "brax"],
    "torchenv[jumanji]": ["builtin", "jumanji"],
    "torchenv[meltingpot]": ["builtin", "meltingpot"],
    "torchenv[all]": [
        "builtin",
        "vmas",
        "gymnasium",
        "dmcontrol",
        "mujoco",
        "pettingzoo",
        "envpool",
        "openspiel",
        "brax",
        "jumanji",
    ],
}
# The env each backend's promise is checked with.
ENVS = {
    "gymnasium": "gymnasium:CartPole-v1",
    "gym": "gym:CartPole-v1",
    "vmas": "vmas:balance",
    "dmcontrol": "dmcontrol:cartpole/balance",
    "mujoco": "mujoco:InvertedPendulum",
    "pettingzoo": "pettingzoo:classic/tictactoe_v3",
    "envpool": "envpool:CartPole-v1",
    "openspiel": "openspiel:kuhn_poker",
    "brax": "brax:fast",
    "jumanji": "jumanji:Snake-v1",
    "meltingpot": "meltingpot:coins",
}
# make() arguments an env needs (natively batched envs: num_envs is required).
MAKE_KWARGS = {
    "vmas:balance": {"num_envs": 2},
    "envpool:CartPole-v1": {"num_envs": 2},
    "brax:fast": {"num_envs": 2},
    "jumanji:Snake-v1": {"num_envs": 2},
}
# Commands that cannot work on this project's machines, with the reason (skipped, not dropped:
# they run wherever the reason does not hold).
CANNOT_RUN_HERE = {
    "torchenv[meltingpot]": (
        "dm-meltingpot is an sdist whose build downloads its assets from a storage host that "
        "this machine cannot reach (only package registries are)"
    ),
}


def readme_install_commands() -> list[str]:
    """The ``pip install`` lines of the README's Install section (comments stripped)."""
    text = (ROOT / "README.md").read_text()
    section = text.split("## Install", 1)[1].split("\n## ", 1)[0]
    block = section.split("```bash", 1)[1].split("```", 1)[0]
    return [line.split("#", 1)[0].strip() for line in block.splitlines() if line.startswith("pip ")]


def hint_commands() -> list[str]:
    """The install hints that torchenv prints for its installed backends (error messages)."""
    import torchenv

    shown = {b.hint for b in torchenv.backends()}
    declared = {b.install for record in torchenv.registry.plugins() for b in record.backends}
    return sorted(c for c in shown | declared if c.startswith("pip install"))


def _target(command: str) -> str:
    return shlex.split(command)[-1]


def _shared_root(tmp_path_factory) -> Path:
    """A folder every pytest-xdist worker of this session sees (the parent of their basetemps)."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def _once(root: Path, name: str, make) -> Path:
    """``root/name``, made by ``make(path)`` by the first worker to ask; the others wait for it."""
    path = root / name
    with FileLock(str(root / f"{name}.lock")):
        if not (path / ".complete").exists():
            shutil.rmtree(path, ignore_errors=True)
            make(path)
            (path / ".complete").touch()
    return path


def _build_dists(path: Path) -> None:
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import build_dists
    finally:
        sys.path.pop(0)
    build_dists.build(path)


def _base_venv(path: Path) -> None:
    venv.EnvBuilder(with_pip=True).create(path)
    pip = [str(path / "bin" / "python"), "-m", "pip", "install", "--quiet"]
    subprocess.run([*pip, "-c", str(ROOT / "constraints.txt"), "torch"], check=True)


@pytest.fixture(scope="session")
def dist_dir(tmp_path_factory) -> Path:
    return _once(_shared_root(tmp_path_factory), "dist", _build_dists)


@pytest.fixture(scope="session")
def base_venv(tmp_path_factory) -> Path:
    return _once(_shared_root(tmp_path_factory), "base-venv", _base_venv)


def test_readme_and_hints_list_install_commands_with_promises():
    commands = readme_install_commands()
    assert commands and all(c.startswith("pip install ") for c in commands)
    hints = hint_commands()
    assert 'pip install "torchenv[gymnasium]"' in hints
    assert all(_target(c) in PROMISES for c in commands + hints), commands + hints


@pytest.mark.parametrize("command", sorted(set(readme_install_commands()) | set(hint_commands())))
def test_readme_install_command_works_from_built_wheels(command, dist_dir, base_venv, tmp_path):
    if _target(command) in CANNOT_RUN_HERE and not os.environ.get("TORCHENV_TRY_ALL_INSTALLS"):
        pytest.skip(CANNOT_RUN_HERE[_target(command)])
    env_dir = tmp_path / "venv"
    try:
        _install_and_check(command, dist_dir, base_venv, env_dir)
    finally:  # hard links mostly, but what the command installed is not kept
        shutil.rmtree(env_dir, ignore_errors=True)


def _install_and_check(command: str, dist_dir: Path, base_venv: Path, env_dir: Path) -> None:
    # A hard-linked copy: pip replaces files (never writes into them), so the base stays intact.
    subprocess.run(["cp", "-al", str(base_venv), str(env_dir)], check=True)
    python = str(env_dir / "bin" / "python")
    args = shlex.split(command)[2:]  # after "pip install"
    subprocess.run(
        [
            python,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--find-links",
            str(dist_dir),
            "-c",
            str(ROOT / "constraints.txt"),
            *args,
        ],
        check=True,
    )
    expected = PROMISES[_target(command)]
    probe = (
        "import torchenv; "
        "status = {b.name: b.status for b in torchenv.backends()}; print(status); "
        f"assert all(status.get(n) == 'ok' for n in {expected!r}), status; "
        f"name = {ENVS!r}.get({expected[-1]!r}, 'builtin:Pendulum'); "
        f"data = torchenv.make(name, **{MAKE_KWARGS!r}.get(name, {{}})).rollout(5); "
        " assert data.batch_size[0] >= 1; print(name, 'ok')"
    )
    result = subprocess.run([python, "-c", probe], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    cli = subprocess.run(
        [str(env_dir / "bin" / "torchenv"), "backends"], capture_output=True, text=True
    )
    assert cli.returncode == 0 and re.search(r"^builtin .* ok$", cli.stdout, re.M), cli.stdout
