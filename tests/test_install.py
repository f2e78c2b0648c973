"""The README's install commands, run as written against freshly built wheels in fresh venvs.

The distributions are built by ``scripts/build_dists.py`` (the same as ``nox -s build``); each
``pip install ...`` line of the README's Install section, and the install hint of every backend,
runs in a new venv with ``--find-links`` to them and ``-c constraints.txt`` (the CPU torch pin),
then the environment it promises is made and rolled out. Slow (a torch install per venv):
marked ``install``; part of the suite CI runs.
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
pytestmark = [pytest.mark.install, pytest.mark.slow]

# What each command promises, checked in its venv: the backends that must be "ok".
PROMISES = {
    "torchenv": ["builtin"],
    "torchenv[gymnasium]": ["builtin", "gymnasium"],
    "torchenv[gym]": ["builtin", "gym"],
    "torchenv[vmas]": ["builtin", "vmas"],
    "torchenv[dmcontrol]": ["builtin", "dmcontrol"],
    "torchenv[mujoco]": ["builtin", "mujoco"],
    "torchenv[pettingzoo]": ["builtin", "pettingzoo"],
    "torchenv[all]": ["builtin", "vmas", "gymnasium", "dmcontrol", "mujoco", "pettingzoo"],
}
# The env each backend's promise is checked with.
ENVS = {
    "gymnasium": "gymnasium:CartPole-v1",
    "gym": "gym:CartPole-v1",
    "vmas": "vmas:balance",
    "dmcontrol": "dmcontrol:cartpole/balance",
    "mujoco": "mujoco:InvertedPendulum",
    "pettingzoo": "pettingzoo:classic/tictactoe_v3",
}
# make() arguments an env needs (VMAS envs are natively batched: num_envs is required).
MAKE_KWARGS = {"vmas:balance": {"num_envs": 2}}


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


@pytest.fixture(scope="module")
def dist_dir(tmp_path_factory) -> Path:
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import build_dists
    finally:
        sys.path.pop(0)
    out = tmp_path_factory.mktemp("dist")
    build_dists.build(out)
    return out


def test_readme_and_hints_list_install_commands_with_promises():
    commands = readme_install_commands()
    assert commands and all(c.startswith("pip install ") for c in commands)
    hints = hint_commands()
    assert 'pip install "torchenv[gymnasium]"' in hints
    assert all(_target(c) in PROMISES for c in commands + hints), commands + hints


@pytest.mark.parametrize("command", sorted(set(readme_install_commands()) | set(hint_commands())))
def test_readme_install_command_works_from_built_wheels(command, dist_dir, tmp_path):
    env_dir = tmp_path / "venv"
    try:
        _install_and_check(command, dist_dir, env_dir)
    finally:  # a venv with torch is about 1 GB: none is kept for pytest's last three runs
        shutil.rmtree(env_dir, ignore_errors=True)


def _install_and_check(command: str, dist_dir: Path, env_dir: Path) -> None:
    venv.EnvBuilder(with_pip=True).create(env_dir)
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
