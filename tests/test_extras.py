"""The core's extras resolve together and never install two distributions of the same module.

One ``pip install --dry-run --report`` of the core with *every* extra at once, against copies of
the core and plugin source trees (nothing is built, nothing is installed): if the union of all
extras resolves, every pair of extras resolves too (the union's solution, restricted to a pair,
satisfies the pair), and every distribution a pair asks for directly is also in the union's
report, so one resolve checks all pairs for clashes such as ``pygame`` next to ``pygame-ce``
(both install the ``pygame`` module). When the union fails, each pair is resolved to name the
ones that conflict. Needs the package index: marked ``install``.
"""

from __future__ import annotations

import itertools
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import tomllib

ROOT = Path(__file__).resolve().parent.parent

# Distributions that install the same import package: never two of one group in an environment.
CLASHES = [
    {"pygame", "pygame-ce"},
    {"opencv-python", "opencv-python-headless", "opencv-contrib-python"},
]


def core_extras() -> list[str]:
    """The names of the core distribution's extras (core/pyproject.toml)."""
    project = tomllib.loads((ROOT / "core" / "pyproject.toml").read_text())["project"]
    return sorted(project["optional-dependencies"])


def _copy_sources(dest: Path) -> list[Path]:
    """Copies of core/ and plugins/*/ (metadata is prepared there, never in the shared tree)."""
    ignore = shutil.ignore_patterns("build", "dist", "*.egg-info", "__pycache__", "tests")
    projects = [ROOT / "core", *sorted(p.parent for p in ROOT.glob("plugins/*/pyproject.toml"))]
    copies = []
    for project in projects:
        copy = dest / project.name
        shutil.copytree(project, copy, ignore=ignore)
        if project.name == "core":  # core/pyproject.toml's readme is the repository's README
            shutil.copy(ROOT / "README.md", copy / "README.md")
        copies.append(copy)
    return copies


def resolve(extras: list[str], sources: list[Path], report: Path) -> subprocess.CompletedProcess:
    """``pip install --dry-run`` of ``torchenv[extras]`` with the local plugins; writes a report."""
    core, plugins = sources[0], sources[1:]
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--dry-run",
            "--quiet",
            "--ignore-installed",
            "--no-build-isolation",
            "--report",
            str(report),
            "-c",
            str(ROOT / "constraints.txt"),
            f"{core}[{','.join(extras)}]",
            *map(str, plugins),
        ],
        capture_output=True,
        text=True,
    )


def _clashes(report: Path) -> list[set[str]]:
    names = {
        item["metadata"]["name"].lower().replace("_", "-")
        for item in json.loads(report.read_text())["install"]
    }
    return [group & names for group in CLASHES if len(group & names) > 1]


@pytest.mark.install
@pytest.mark.slow
def test_every_pair_of_extras_resolves_without_clashing_distributions(tmp_path):
    extras = core_extras()
    assert {"gym", "gymnasium", "pettingzoo", "all"} <= set(extras), extras
    sources = _copy_sources(tmp_path / "src")
    report = tmp_path / "all.json"
    result = resolve(extras, sources, report)
    if result.returncode != 0:  # find the pairs that conflict, for the message
        failing = [
            pair
            for pair in itertools.combinations(extras, 2)
            if resolve(list(pair), sources, tmp_path / "pair.json").returncode != 0
        ]
        pytest.fail(
            f"extras {extras} do not resolve together; failing pairs: {failing}\n"
            + result.stderr[-3000:]
        )
    assert _clashes(report) == [], "distributions that install the same module"
    installed = {i["metadata"]["name"].lower() for i in json.loads(report.read_text())["install"]}
    # what the pages use: docs/pettingzoo.md's first example is MPE (mpe2)
    assert {"mpe2", "pettingzoo", "pymunk", "gymnasium", "mujoco"} <= installed, installed


def _plugin_extra(requirement: str) -> tuple[str, set[str]]:
    name, _, rest = requirement.partition("[")
    return name, set(rest.split("]", 1)[0].split(",")) if rest else set()


@pytest.mark.parametrize("extra", ["pettingzoo", "all"])
def test_pettingzoo_extras_bring_mpe2(extra):
    """docs/pettingzoo.md starts with an MPE task: the extras that promise PettingZoo bring it."""
    project = tomllib.loads((ROOT / "core" / "pyproject.toml").read_text())["project"]
    plugin_extras = dict(map(_plugin_extra, project["optional-dependencies"][extra]))
    plugin = tomllib.loads((ROOT / "plugins/pettingzoo/pyproject.toml").read_text())["project"]
    brought = " ".join(
        r for e in plugin_extras["torchenv-pettingzoo"] for r in plugin["optional-dependencies"][e]
    )
    assert "mpe2" in brought and "pymunk" in brought, brought
