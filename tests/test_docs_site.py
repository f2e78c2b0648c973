"""The docs site (mkdocs-material + mkdocstrings) builds with no warning, and shows every page."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

pytest.importorskip("mkdocs", reason="the docs site needs mkdocs (requirements/test.txt)")
pytest.importorskip("mkdocstrings", reason="the API reference needs mkdocstrings")
yaml = pytest.importorskip("yaml")


def _nav_pages(nav) -> set[str]:
    pages: set[str] = set()
    for item in nav:
        value = next(iter(item.values())) if isinstance(item, dict) else item
        pages |= _nav_pages(value) if isinstance(value, list) else {value}
    return pages


def test_every_page_is_in_the_navigation():
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    pages = {str(p.relative_to(ROOT / "docs")) for p in (ROOT / "docs").rglob("*.md")}
    assert pages == _nav_pages(config["nav"])


@pytest.mark.slow
def test_site_builds_in_strict_mode(tmp_path):
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=env,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "WARNING" not in result.stderr, result.stderr
    assert (tmp_path / "site" / "api" / "specs" / "index.html").exists()
    for plugin in _PLUGINS:  # each public name of each plugin is rendered (not just the module)
        html = (tmp_path / "site" / "api" / f"torchenv_{plugin}" / "index.html").read_text()
        for name in _plugin_exports(plugin):
            assert f'id="torchenv_{plugin}.{name}"' in html, (plugin, name)


_PLUGINS = sorted(p.parent.name for p in (ROOT / "plugins").glob("*/pyproject.toml"))


def _plugin_exports(plugin: str) -> list[str]:
    """The names of ``torchenv_<plugin>.__all__``, read from the source (no simulator import)."""
    import ast

    init = ROOT / "plugins" / plugin / "src" / f"torchenv_{plugin}" / "__init__.py"
    for node in ast.parse(init.read_text()).body:
        if isinstance(node, ast.AnnAssign) and getattr(node.target, "id", "") == "_EXPORTS":
            return sorted(ast.literal_eval(node.value))
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "__all__":
            return sorted(ast.literal_eval(node.value))
    raise AssertionError(f"{init} has neither _EXPORTS nor a literal __all__")


@pytest.mark.parametrize("plugin", _PLUGINS)
def test_every_plugin_has_an_api_page_listing_its_public_names(plugin):
    """A plugin's names are lazy (``__getattr__``): griffe only documents what the page lists."""
    page = ROOT / "docs" / "api" / f"torchenv_{plugin}.md"
    assert page.exists(), f"no API reference page for torchenv_{plugin}"
    listed = re.findall(rf"^::: torchenv_{plugin}\.(\w+)$", page.read_text(), re.MULTILINE)
    assert sorted(listed) == _plugin_exports(plugin)
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    mkdocstrings = next(p["mkdocstrings"] for p in config["plugins"] if "mkdocstrings" in p)
    handler = mkdocstrings["handlers"]["python"]
    assert f"plugins/{plugin}/src" in handler["paths"]
    assert f"api/torchenv_{plugin}.md" in _nav_pages(config["nav"])


def _unfenced_doctest_lines(text: str) -> list[int]:
    """Line numbers of ``>>>`` lines outside fenced code blocks (mkdocs renders them as prose)."""
    lines, fence = [], None
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.lstrip()
        if stripped.startswith(("```", "~~~")):
            marker = stripped[:3]
            if fence is None:
                fence = marker
            elif marker == fence:
                fence = None
            continue
        if fence is None and stripped.startswith(">>>"):
            lines.append(number)
    return lines


def test_unfenced_doctest_lines_are_found():
    text = "prose\n>>> 1 + 1\n2\n```python\n>>> 2\n2\n\n```\n"
    assert _unfenced_doctest_lines(text) == [2]


@pytest.mark.parametrize("page", sorted(p.name for p in (ROOT / "docs").glob("*.md")))
def test_every_doctest_example_is_in_a_code_block(page):
    """The strict build does not see a ``>>>`` block outside a fence: it renders as a paragraph."""
    assert _unfenced_doctest_lines((ROOT / "docs" / page).read_text()) == [], page


_LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


@pytest.mark.parametrize(
    "page",
    ["README.md", *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").rglob("*.md"))],
)
def test_relative_links_point_to_files_in_the_repository(page):
    path = ROOT / page
    missing = [
        target
        for target in _LINK.findall(path.read_text())
        if "://" not in target
        and not target.startswith("mailto:")
        and not (path.parent / target).exists()
    ]
    assert missing == [], f"{page} links to files that are not in the repository: {missing}"


# Repository paths named in the text (not as links): ``benchmarks/bench_gym.py``, ``docs/x.md``...
_REPO_PATH = re.compile(
    r"(?<![\w/.])((?:benchmarks|scripts|docs|plugins|core|tests|requirements|examples)/"
    r"[\w/-]+\.(?:py|md|txt|toml|sh|yml|yaml|ini|json|png))"
)


@pytest.mark.parametrize("page", sorted(p.name for p in (ROOT / "docs").glob("*.md")))
def test_repository_paths_named_in_a_page_exist(page):
    text = (ROOT / "docs" / page).read_text()
    missing = sorted({p for p in _REPO_PATH.findall(text) if not (ROOT / p).exists()})
    assert missing == [], f"docs/{page} names files that are not in the repository: {missing}"


# ---------------------------------------------------------------------------------- pictures
_IMAGE = re.compile(r"!\[[^\]]*\]\(([^)\s]+)\)|<img [^>]*src=\"([^\"]+)\"")
IMG = ROOT / "docs" / "img"


def _page_images() -> dict[str, set[Path]]:
    """Each page's referenced pictures, resolved against the page's folder."""
    out = {}
    for page in (ROOT / "docs").rglob("*.md"):
        targets = {a or b for a, b in _IMAGE.findall(page.read_text())}
        out[str(page.relative_to(ROOT))] = {
            (page.parent / t).resolve() for t in targets if "://" not in t
        }
    return out


def test_every_picture_a_page_shows_exists():
    missing = {page: sorted(str(p) for p in images if not p.is_file())
               for page, images in _page_images().items()}  # fmt: skip
    assert {page: m for page, m in missing.items() if m} == {}


def test_every_picture_in_docs_img_is_shown_by_a_page():
    shown = set().union(*_page_images().values())
    unused = sorted(p.name for p in IMG.iterdir() if p.resolve() not in shown)
    assert unused == [], f"docs/img holds pictures no page shows: {unused}"


def test_pictures_are_small_pngs_drawn_by_the_script():
    """PNG (``*.gif`` is git-ignored), under 150 KB, each one a picture scripts/doc_images.py draws."""
    listed = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "doc_images.py"), "--list"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    files = sorted(IMG.iterdir())
    assert files, "docs/img is empty"
    for path in files:
        assert path.suffix == ".png", path.name
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", f"{path.name} is not a PNG"
        assert path.stat().st_size < 150_000, f"{path.name}: {path.stat().st_size} bytes"
        assert path.stem in listed, f"{path.name} is not drawn by scripts/doc_images.py"


def test_doc_images_writes_valid_pngs(tmp_path):
    """The script's own PNG writer (frames need no imaging library) round-trips through Pillow."""
    pil = pytest.importorskip("PIL.Image")
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import doc_images
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    import numpy as np

    image = np.random.default_rng(0).integers(0, 256, (37, 720, 3), dtype=np.uint8)
    small = doc_images._downscale(image)
    assert small.shape == (18, 360, 3)
    assert np.array_equal(small[0, 0], image[:2, :2].reshape(-1, 3).mean(0).round())
    doc_images._write_png(tmp_path / "x.png", small)
    assert np.array_equal(np.asarray(pil.open(tmp_path / "x.png").convert("RGB")), small)
