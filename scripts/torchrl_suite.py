"""TorchRL's own test files as torchenv's acceptance test (run by hand or by ``nox -s torchrl_suite``).

    python scripts/torchrl_suite.py --checkout PATH [--ref REF] [--python PY] [FILE ...] [-- PYTEST ARGS]

``PATH`` (or ``$TORCHRL_CHECKOUT``) is a pytorch/rl git repository, bare or not. The test files
below are extracted from ``REF`` (default ``HEAD``) into a temporary folder at run time: nothing of
TorchRL's is ever committed here. They then run, with pytest, in ``PY`` (default: this Python),
which must have torchrl 0.14.1, torchenv and its plugins, and the simulators installed.

The import alias: a pytest plugin written next to the extracted files imports torchenv, then
TorchRL (whose package, ``torchrl.testing`` helpers and modules stay TorchRL's), and replaces, in
every TorchRL module of the env API, each name that torchenv also has by torchenv's object
(``torchrl.envs.EnvBase`` is ``torchenv.envs.EnvBase``, ``torchrl.data.Bounded`` is
``torchenv.specs.Bounded``, ``torchrl.envs.libs.gym.GymEnv`` is ``torchenv_gym.GymEnv``, ...).
Nothing is implemented in the alias: a name torchenv lacks stays TorchRL's, and a test that reaches
TorchRL-private machinery is reported apart (out of scope).

The report: one row per file (passed, failed, errors, skipped, pass rate over the tests that ran,
in scope), then the failures grouped by cause (exception type and normalised message), largest
group first, each with a few test ids.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import subprocess
import sys
import tarfile
import tempfile
import xml.etree.ElementTree as ET
from collections import Counter, defaultdict
from io import BytesIO
from pathlib import Path

# The files of TorchRL's suite that test what torchenv offers.
DEFAULT_FILES = [
    "test/test_specs.py",
    "test/envs",
    "test/transforms",
    "test/libs/test_gym.py",
    "test/libs/test_vmas.py",
    "test/libs/test_multiagent.py",
    "test/libs/test_dm_control.py",
    "test/libs/test_mujoco.py",
]
# Support files the test files import (conftest.py files are added for every folder extracted).
SUPPORT_FILES = ["test/conftest.py", "test/libs/conftest.py"]

# TorchRL module -> the torchenv modules whose names replace TorchRL's there.
ALIASES = {
    "torchrl._utils": ["torchenv.versions"],
    "torchrl.data": ["torchenv.specs"],
    "torchrl.data.tensor_specs": ["torchenv.specs"],
    "torchrl.data.utils": ["torchenv.specs"],
    "torchrl.envs": ["torchenv.batched", "torchenv.transforms", "torchenv.envs"],
    "torchrl.envs.common": ["torchenv.envs"],
    "torchrl.envs.utils": ["torchenv.envs"],
    "torchrl.envs.batched_envs": ["torchenv.batched"],
    "torchrl.envs.env_creator": ["torchenv.batched"],
    "torchrl.envs.async_envs": ["torchenv.batched"],
    "torchrl.envs.custom": ["torchenv.envs.builtin"],
    "torchrl.envs.transforms": ["torchenv.transforms"],
    "torchrl.envs.transforms.transforms": ["torchenv.transforms"],
    "torchrl.envs.transforms.functional": ["torchenv.transforms.functional"],
    "torchrl.envs.libs.gym": ["torchenv_gym"],
    "torchrl.envs.libs.dm_control": ["torchenv_dmcontrol"],
    "torchrl.envs.libs.vmas": ["torchenv_vmas"],
    "torchrl.envs.libs.pettingzoo": ["torchenv_pettingzoo"],
    "torchrl.envs.libs.envpool": ["torchenv_envpool"],
    "torchrl.envs.libs.brax": ["torchenv_jax"],
    "torchrl.envs.libs.jumanji": ["torchenv_jax"],
    "torchrl.envs.libs.openspiel": ["torchenv_openspiel"],
    "torchrl.envs.libs.meltingpot": ["torchenv_meltingpot"],
    "torchrl.record": ["torchenv.record"],
}

# TorchRL modules imported before the alias replaces names (they subclass TorchRL's env classes
# at import time; out of scope, see below).
PRELOAD = ["torchrl.collectors", "torchrl.envs.llm"]

# What issue 28 puts out of scope: tests of TorchRL-private attributes, and of what is not an env
# library. A test whose id matches OUT_OF_SCOPE_IDS, or whose failure names a private attribute or
# import, is reported apart.
OUT_OF_SCOPE_IDS = re.compile(
    r"collector|replay|buffer|rnn|lstm|gru|llm|vla|satellite|ur5e|_StepMDP|_workers"
    r"|_CHECK_SPEC_ENCODE|multisync|multiasync|compile",
    re.IGNORECASE,
)
PRIVATE_FAILURE = re.compile(
    r"(has no attribute|cannot import name|object has no attribute) '_\w+'"
    r"|No module named 'torchrl\.\w+\._"
)

ALIAS_PLUGIN = '''"""Written by scripts/torchrl_suite.py: TorchRL's env API names resolve to torchenv's."""
import importlib
import os
import sys

ALIASES = {aliases!r}
PRELOAD = {preload!r}


def _torchenv_names(sources):
    names = {{}}
    for source in reversed(sources):  # the first source wins
        try:
            module = importlib.import_module(source)
        except ImportError:
            continue
        for name in dir(module):
            if name.startswith("__"):
                continue
            value = getattr(module, name)
            if type(value).__name__ == "module":
                continue
            names[name] = value
    return names


def _alias():
    import torchenv  # noqa: F401  (before torchrl: torchenv registers with TorchRL's ABCs)
    import torchrl  # noqa: F401

    # TorchRL modules that subclass its env classes at import time (its LLM envs, imported by
    # torchrl.collectors) are built on TorchRL's own classes: imported before the names are
    # replaced, else their metaclasses clash with torchenv's and whole test files fail to collect.
    for name in PRELOAD:
        try:
            importlib.import_module(name)
        except ImportError:
            pass

    replaced = 0
    for target, sources in ALIASES.items():
        try:
            module = importlib.import_module(target)
        except ImportError:
            continue
        ours = _torchenv_names(sources)
        for name in list(vars(module)):
            if name in ours and not name.startswith("__"):
                setattr(module, name, ours[name])
                replaced += 1
        if hasattr(module, "__all__"):  # "from torchrl.x import *" brings torchenv's names too
            for name in module.__all__:
                if name in ours:
                    setattr(module, name, ours[name])
    os.environ["TORCHENV_ALIASED_NAMES"] = str(replaced)


_alias()


def pytest_report_header(config):
    return "torchrl import alias: " + os.environ["TORCHENV_ALIASED_NAMES"] + " names are torchenv's"
'''


def extract(checkout: Path, ref: str, files: list[str], into: Path) -> None:
    """``git archive`` the ``files`` (and the conftest.py files beside them) of ``ref`` into ``into``."""
    listed = subprocess.run(
        ["git", "-C", str(checkout), "ls-tree", "-r", "--name-only", ref, "test/"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    wanted = set(SUPPORT_FILES)
    for item in files:
        wanted |= {p for p in listed if p == item or p.startswith(item.rstrip("/") + "/")}
        folder = item if not item.endswith(".py") else item.rsplit("/", 1)[0]
        wanted |= {p for p in listed if p == f"{folder}/conftest.py"}
    wanted &= set(listed)
    archive = subprocess.run(
        ["git", "-C", str(checkout), "archive", "--format=tar", ref, *sorted(wanted)],
        check=True,
        capture_output=True,
    ).stdout
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")


def run(python: str, workdir: Path, file: str, extra: list[str], memory_gb: float) -> Path | None:
    """Runs one extracted file with the alias plugin; returns its JUnit XML report (None: crashed).

    Each file runs in its own pytest process, under an address-space limit, so that a test that
    asks for far too much memory fails with a ``MemoryError`` instead of taking the machine down.
    """
    (workdir / "_torchenv_alias.py").write_text(
        ALIAS_PLUGIN.format(aliases=ALIASES, preload=PRELOAD)
    )
    report = workdir / "reports" / (file.replace("/", "_") + ".xml")
    report.parent.mkdir(exist_ok=True)
    report.unlink(missing_ok=True)
    env = dict(os.environ, PYTHONPATH=f"{workdir}{os.pathsep}{workdir / 'test'}")
    command = [
        python,
        "-m",
        "pytest",
        "-p",
        "_torchenv_alias",
        "-p",
        "no:cacheprovider",
        "--rootdir",
        str(workdir),
        "-o",
        "addopts=",
        "--timeout=300",
        "-q",
        "--tb=no",
        "--no-header",
        f"--junitxml={report}",
        str(workdir / file),
        *extra,
    ]
    limit = int(memory_gb * 2**30)

    def limit_memory() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    print("$", " ".join(command), flush=True)
    subprocess.run(command, cwd=workdir, env=env, check=False, preexec_fn=limit_memory)
    return report if report.exists() else None


def _cause(element: ET.Element) -> str:
    message = (element.get("message") or element.text or "").strip().splitlines()
    first = message[0] if message else element.get("type", "?")
    first = re.sub(r"0x[0-9a-f]+", "0x…", first)
    first = re.sub(r"\d+(\.\d+)?", "N", first)
    return first[:140]


def summarize(reports: dict[str, Path | None], workdir: Path) -> str:
    """The per-file table and the failures grouped by cause, as text."""
    rows: dict[str, Counter] = defaultdict(Counter)
    causes: dict[str, list[str]] = defaultdict(list)
    out_of_scope: Counter = Counter()
    crashed = [file for file, report in reports.items() if report is None]
    cases = [
        c for r in reports.values() if r is not None for c in ET.parse(r).getroot().iter("testcase")
    ]
    for case in cases:
        file = _file_of(case, workdir)
        test_id = f"{file}::{case.get('name')}"
        problem = case.find("failure")
        if problem is None:
            problem = case.find("error")
        if case.find("skipped") is not None:
            outcome = "skipped"
        elif problem is not None:
            outcome = "failed" if problem.tag == "failure" else "errors"
        else:
            outcome = "passed"
        cause = _cause(problem) if problem is not None else ""
        if OUT_OF_SCOPE_IDS.search(test_id) or PRIVATE_FAILURE.search(cause):
            out_of_scope[outcome] += 1
            rows[file]["out of scope"] += 1
            continue
        rows[file][outcome] += 1
        if problem is not None:
            causes[cause].append(test_id)
    lines = [
        f"{'file':52} {'passed':>7} {'failed':>7} {'errors':>7} {'skipped':>8} {'out':>5} {'rate':>6}"
    ]
    totals: Counter = Counter()
    for file in sorted(rows):
        row = rows[file]
        totals.update(row)
        lines.append(_row(file, row))
    lines.append(_row("all", totals))
    if crashed:
        lines.append(f"\ncrashed (no report: the pytest process died): {crashed}")
    lines.append(f"\nout of scope (private attributes, non-env parts): {dict(out_of_scope)}")
    lines.append("\nfailures by cause (largest first):")
    for cause, ids in sorted(causes.items(), key=lambda item: -len(item[1])):
        lines.append(f"{len(ids):5d}  {cause}")
        lines.extend(f"         {test_id}" for test_id in ids[:3])
    return "\n".join(lines)


def _file_of(case: ET.Element, workdir: Path) -> str:
    file = case.get("file")
    if file:
        return file
    classname = case.get("classname", "")
    parts = classname.split(".")
    for end in range(len(parts), 0, -1):
        candidate = "/".join(parts[:end]) + ".py"
        if (workdir / candidate).exists():
            return candidate
    return classname


def _row(file: str, row: Counter) -> str:
    ran = row["passed"] + row["failed"] + row["errors"]
    rate = f"{row['passed'] / ran:.2f}" if ran else "-"
    return (
        f"{file:52} {row['passed']:7d} {row['failed']:7d} {row['errors']:7d} "
        f"{row['skipped']:8d} {row['out of scope']:5d} {rate:>6}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="*", default=DEFAULT_FILES, help="paths under test/")
    parser.add_argument("--checkout", default=os.environ.get("TORCHRL_CHECKOUT"))
    parser.add_argument("--ref", default="HEAD", help="the git ref to extract (default HEAD)")
    parser.add_argument(
        "--python",
        default=os.environ.get("TORCHENV_TORCHRL_SUITE_PYTHON", sys.executable),
        help="a Python with torchrl 0.14.1, torchenv and the simulators",
    )
    parser.add_argument("--keep", help="extract into this folder (kept) instead of a temp dir")
    parser.add_argument(
        "--memory-gb", type=float, default=8.0, help="address-space limit of each pytest process"
    )
    argv = sys.argv[1:] if argv is None else argv
    extra = argv[argv.index("--") + 1 :] if "--" in argv else []  # after --: pytest's arguments
    args = parser.parse_args(argv[: len(argv) - len(extra) - (1 if "--" in argv else 0)])
    if not args.checkout:
        parser.error("give --checkout PATH or set TORCHRL_CHECKOUT to a pytorch/rl git repository")
    with tempfile.TemporaryDirectory(prefix="torchrl-suite-") as tmp:
        workdir = Path(args.keep or tmp).resolve()
        workdir.mkdir(parents=True, exist_ok=True)
        extract(Path(args.checkout), args.ref, args.files, workdir)
        reports = {}
        for item in args.files:
            targets = [item] if item.endswith(".py") else _test_files(workdir, item)
            for file in targets:
                reports[file] = run(args.python, workdir, file, extra, args.memory_gb)
        print(summarize(reports, workdir))
    return 0


def _test_files(workdir: Path, folder: str) -> list[str]:
    return sorted(str(p.relative_to(workdir)) for p in (workdir / folder).glob("test_*.py"))


if __name__ == "__main__":
    sys.exit(main())
