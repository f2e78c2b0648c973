"""Build the wheels and sdists of the core and every plugin into one folder, and check them.

    python scripts/build_dists.py [DIST_DIR]       (default: dist/)

Runs ``python -m build`` (no isolation: setuptools comes from the running environment, which
keeps the build offline-friendly) for ``core/`` and each ``plugins/*/``, then ``twine check``
on everything built. ``nox -s build`` and ``tests/test_install.py`` call it.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def projects() -> list[Path]:
    """The core and every plugin folder, core first."""
    return [ROOT / "core", *sorted(p.parent for p in ROOT.glob("plugins/*/pyproject.toml"))]


def build(dist_dir: Path) -> list[Path]:
    """Build every project into ``dist_dir`` (emptied first); return the files built."""
    if dist_dir.exists():
        shutil.rmtree(dist_dir)
    dist_dir.mkdir(parents=True)
    for project in projects():
        subprocess.run(
            [
                sys.executable,
                "-m",
                "build",
                "--no-isolation",
                "--outdir",
                str(dist_dir),
                str(project),
            ],
            check=True,
            stdout=subprocess.DEVNULL,
        )
        # setuptools leaves build/ and *.egg-info next to the sources
        shutil.rmtree(project / "build", ignore_errors=True)
    files = sorted(dist_dir.iterdir())
    subprocess.run(
        [sys.executable, "-m", "twine", "check", "--strict", *map(str, files)], check=True
    )
    return files


def main() -> None:
    dist_dir = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "dist"
    for path in build(dist_dir.resolve()):
        print(path.relative_to(dist_dir.resolve().parent))


if __name__ == "__main__":
    main()
