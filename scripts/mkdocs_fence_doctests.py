"""A griffe extension for the docs site: bare ``>>>`` examples in docstrings become code blocks.

Our docstrings keep short doctests in their description (they run in the test suite); Markdown
would render them as prose. Each run of lines starting at column 0 with ``>>>`` (and the output
lines after it, up to a blank line) is fenced as ``pycon``. Examples inside a Google
``Examples:`` section are indented, and griffe's parser already handles them.
"""

from __future__ import annotations

from typing import Any

import griffe


def fence_doctests(text: str) -> str:
    """``text`` with every top-level doctest block wrapped in a ``pycon`` fence."""
    out: list[str] = []
    inside = False
    for line in text.splitlines():
        if not inside and line.startswith(">>>"):
            out.append("```pycon")
            inside = True
        elif inside and not line.strip():
            out.append("```")
            inside = False
        out.append(line)
    if inside:
        out.append("```")
    return "\n".join(out)


class FenceDoctests(griffe.Extension):
    """Applies :func:`fence_doctests` to every docstring griffe loads."""

    def on_object(self, *, obj: Any, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = fence_doctests(obj.docstring.value)
