"""Developer tasks: ``nox -s tests``, ``lint``, ``bench``, ``build``, ``demo``, ``docs`` (``nox -l``).

Every session installs the core and every plugin in ``plugins/*/`` editable, with torch pinned to
the local CPU build through ``constraints.txt``. Arguments after ``--`` go to the tool, e.g.
``nox -s tests -- core/tests/registry -x``.
"""

from __future__ import annotations

import os
from pathlib import Path

import nox

ROOT = Path(__file__).resolve().parent
CONSTRAINTS = ("-c", str(ROOT / "constraints.txt"))

nox.options.sessions = ["lint", "tests"]
nox.options.reuse_existing_virtualenvs = True
nox.options.default_venv_backend = "venv"

# The user guide: every page must exist; their ">>>" examples run as doctests.
DOCS_PAGES = [
    "docs/index.md",
    "docs/getting-started.md",
    "docs/specs.md",
    "docs/envs.md",
    "docs/transforms.md",
    "docs/batched.md",
    "docs/gym.md",
    "docs/dmcontrol.md",
    "docs/cli.md",
    "docs/migrating-from-torchrl.md",
    "docs/plugins.md",
    "docs/export.md",
    "docs/recording.md",
    "docs/multiagent.md",
    "docs/vmas.md",
    "docs/mujoco.md",
    "docs/envpool.md",
    "docs/atari.md",
    "docs/pettingzoo.md",
    "docs/openspiel.md",
    "docs/jax.md",
    "docs/meltingpot.md",
    "docs/distributed.md",
]


def _plugins() -> list[str]:
    return sorted(f"./{p.parent.relative_to(ROOT)}" for p in ROOT.glob("plugins/*/pyproject.toml"))


def _install_workspace(session: nox.Session, requirements: str = "test") -> None:
    editables = ["-e", "./core"]
    for plugin in _plugins():
        editables += ["-e", plugin]
    session.install(*CONSTRAINTS, *editables, "-r", f"requirements/{requirements}.txt")


@nox.session
def tests(session: nox.Session) -> None:
    """The whole test suite (core, plugins, cross-package tests)."""
    _install_workspace(session)
    session.run("pytest", *session.posargs)


@nox.session
def lint(session: nox.Session) -> None:
    """ruff check and ruff format --check over the repository."""
    session.install("ruff>=0.6")
    session.run("ruff", "check", ".", *session.posargs)
    session.run("ruff", "format", "--check", ".")


def _torchrl_python(session: nox.Session) -> str:
    """A python with torchrl: $TORCHENV_BENCH_TORCHRL_PYTHON if set, else a venv made here."""
    given = os.environ.get("TORCHENV_BENCH_TORCHRL_PYTHON")
    if given and Path(given).exists():
        return given
    venv = Path(session.cache_dir) / "torchrl-venv"
    python = venv / "bin" / "python"
    if not python.exists():
        session.run("python", "-m", "venv", str(venv))
    # torchrl pins its own tensordict: only torch is constrained here.
    session.run(
        str(python),
        "-m",
        "pip",
        "install",
        "--quiet",
        "-c",
        str(ROOT / "constraints-torchrl.txt"),
        "torchrl==0.14.1",
        "gymnasium",
        "mujoco==3.17.0",  # HalfCheetah in bench_gym.py; the version of the CI venv
        "imageio",
        external=True,
    )
    # torchenv itself too, for the benchmarks that run both libraries in one process
    # (bench_dqn.py: TorchRL's collector and loss on torchenv's env). No deps: TorchRL's pins stay.
    session.run(
        str(python),
        "-m",
        "pip",
        "install",
        "--quiet",
        "--no-deps",
        "-e",
        str(ROOT / "core"),
        "-e",
        str(ROOT / "plugins" / "gym"),
        "pluggy>=1.5",
        external=True,
    )
    return str(python)


@nox.session
def bench(session: nox.Session) -> None:
    """Every benchmarks/bench_*.py, side by side with TorchRL (run in its own venv)."""
    _install_workspace(session)
    env = {"TORCHENV_BENCH_TORCHRL_PYTHON": _torchrl_python(session)}
    selected = session.posargs or sorted(str(p) for p in ROOT.glob("benchmarks/bench_*.py"))
    for script in selected:
        session.run("python", script, env=env)


@nox.session(name="torchrl_suite")
def torchrl_suite(session: nox.Session) -> None:
    """TorchRL 0.14.1's own test files against torchenv (scripts/torchrl_suite.py); not in CI.

    Needs a pytorch/rl git checkout: ``TORCHRL_CHECKOUT=PATH nox -s torchrl_suite [-- FILE ...]``.
    The venv has torchrl (with the tensordict it pins), the simulators of requirements/test.txt's
    pins, and torchenv's core and plugins installed editable without their dependencies.
    """
    if not os.environ.get("TORCHRL_CHECKOUT"):
        session.error("set TORCHRL_CHECKOUT to a pytorch/rl git repository (bare or not)")
    session.install(
        "-c",
        str(ROOT / "constraints-torchrl.txt"),
        "torchrl==0.14.1",
        "pytest>=8",
        "pytest-timeout>=2.3",
        "scipy",
        "gymnasium",
        "mujoco==3.17.0",
        "dm_control==1.0.50",
        "vmas==1.5.2",
        "pettingzoo==1.27.0",
        "mpe2==1.1.1",
        "pygame-ce>=2.3",
        "pluggy>=1.5",
    )
    session.install("--no-deps", "-e", "./core", *(a for p in _plugins() for a in ("-e", p)))
    session.run("python", "scripts/torchrl_suite.py", "--python", "python", *session.posargs)


@nox.session
def build(session: nox.Session) -> None:
    """Wheels and sdists of the core and every plugin in dist/, checked with twine."""
    session.install(*CONSTRAINTS, "build>=1.2", "twine>=5", "setuptools>=68", "wheel")
    session.run("python", "scripts/build_dists.py", *(session.posargs or ["dist"]))


@nox.session
def demo(session: nox.Session) -> None:
    """Make an env by name, roll it out and print what came back."""
    _install_workspace(session)
    session.run("torchenv", "backends")
    session.run("torchenv", "rollout", *(session.posargs or ["builtin:Pendulum"]))


@nox.session(name="doc_images")
def doc_images(session: nox.Session) -> None:
    """Draw the docs' pictures into docs/img/ (scripts/doc_images.py); commit what changed.

    Diagrams, a frame of each backend that renders here (MuJoCo through EGL when headless) and
    the plot of a short ``benchmarks/bench_policy.py`` run (with TorchRL's side, in its venv).
    Arguments go to the script, e.g. ``nox -s doc_images -- --only architecture step-layout``.
    """
    _install_workspace(session)
    session.install(*CONSTRAINTS, "matplotlib")
    env = {}
    if not session.posargs or "bench-policy" in session.posargs:
        env["TORCHENV_BENCH_TORCHRL_PYTHON"] = _torchrl_python(session)
    session.run("python", "scripts/doc_images.py", *session.posargs, env=env)


@nox.session
def docs(session: nox.Session) -> None:
    """The docs site (mkdocs build --strict into site/) and every page's examples as doctests."""
    for page in DOCS_PAGES:
        if not (ROOT / page).is_file():
            session.error(f"{page} is missing")
    _install_workspace(session)
    session.run("mkdocs", "build", "--strict", env={"NO_MKDOCS_2_WARNING": "1"})
    sources = ["core/src", *(f"{plugin}/src" for plugin in _plugins())]
    session.run(
        "pytest",
        "-p",
        "no:cacheprovider",
        "--doctest-modules",
        "--doctest-glob=docs/*.md",
        "docs",
        *sources,
        *session.posargs,
    )
