"""Terminal output for the CLI: tables that fit, wrapped lists, spec summaries, a spinner."""

from __future__ import annotations

import shutil
import sys
import threading
from collections.abc import Sequence
from typing import Any, TextIO

MAX_WIDTH = 100


def terminal_width() -> int:
    """The terminal width, at most :data:`MAX_WIDTH` columns (100 when unknown)."""
    return min(shutil.get_terminal_size((MAX_WIDTH, 24)).columns, MAX_WIDTH)


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: max(width - 3, 1)] + "..."


def table(headers: Sequence[str], rows: Sequence[Sequence[str]], width: int | None = None) -> str:
    """Format ``rows`` under ``headers`` in columns that fit ``width`` (widest columns shrink).

    >>> print(table(["A", "B"], [["x", "long value"]], width=20))
    A  B
    x  long value
    """
    width = width or terminal_width()
    sep = "  "
    cells = [list(map(str, headers))] + [[str(c) for c in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    budget = width - len(sep) * (len(widths) - 1)
    while sum(widths) > budget and max(widths) > 4:
        widest = widths.index(max(widths))
        widths[widest] -= 1
    lines = []
    for row in cells:
        padded = [_clip(cell, w).ljust(w) for cell, w in zip(row, widths)]
        lines.append(sep.join(padded).rstrip())
    return "\n".join(lines)


def wrap_words(words: Sequence[str], indent: str = "  ", width: int | None = None) -> str:
    """Lay ``words`` out in lines of at most ``width`` columns.

    >>> print(wrap_words(["CartPole", "Pendulum", "TicTacToe"], width=24))
      CartPole  Pendulum
      TicTacToe
    """
    width = width or terminal_width()
    lines: list[str] = []
    line = indent
    for word in words:
        candidate = word if line == indent else f"  {word}"
        if line != indent and len(line) + len(candidate) > width:
            lines.append(line)
            line, candidate = indent, word
        line += candidate
    if line != indent:
        lines.append(line)
    return "\n".join(lines)


def _domain(spec: Any, max_dims: int = 6) -> str:
    """The values a leaf takes: ``n=...``, one ``[low, high]``, or per dimension when they vary.

    >>> import torch
    >>> from torchenv.specs import Bounded
    >>> _domain(Bounded(torch.tensor([-1.0, -8.0]), torch.tensor([1.0, 8.0]), shape=(2,)))
    '[-1, 1] [-8, 8]'
    >>> _domain(Bounded(-2.0, 2.0, shape=(3,)))
    '[-2, 2]'
    """
    n = getattr(spec, "n", None)
    if isinstance(n, int) and n > 0:
        return f"n={n}"
    low, high = getattr(spec, "low", None), getattr(spec, "high", None)
    if low is None or high is None:
        return ""
    try:
        low, high = low.flatten(), high.flatten()
        if bool((low == low[0]).all()) and bool((high == high[0]).all()):
            return f"[{float(low[0]):g}, {float(high[0]):g}]"
        pairs = [f"[{float(lo):g}, {float(hi):g}]" for lo, hi in zip(low[:max_dims], high)]
    except Exception:  # not a tensor we can read
        return ""
    more = f" ... ({low.numel()} dims)" if low.numel() > max_dims else ""
    return " ".join(pairs) + more


def spec_lines(spec: Any, indent: str = "  ") -> list[str]:
    """One line per leaf of ``spec``: key, spec class, shape, dtype and domain."""
    if spec is None:
        return [f"{indent}(none)"]
    items = getattr(spec, "items", None)
    if items is not None:
        leaves = [
            (".".join(k) if isinstance(k, tuple) else str(k), v)
            for k, v in items(include_nested=True, leaves_only=True)
        ]
    else:
        leaves = [("", spec)]
    if not leaves:
        return [f"{indent}(empty)"]
    rows = []
    for key, leaf in leaves:
        shape = list(getattr(leaf, "shape", ()))
        dtype = str(getattr(leaf, "dtype", "")).replace("torch.", "")
        rows.append([key or "-", type(leaf).__name__, f"shape={shape}", dtype, _domain(leaf)])
    body = table(["key", "spec", "shape", "dtype", "domain"], rows, terminal_width() - len(indent))
    return [indent + line for line in body.splitlines()[1:]]


class Spinner:
    """A stderr spinner shown while slow work runs, only on a terminal and only after a delay."""

    frames = "|/-\\"

    def __init__(self, message: str, stream: TextIO | None = None, delay: float = 0.3) -> None:
        self.message = message
        self.stream = stream or sys.stderr
        self.delay = delay
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._shown = False

    def _run(self) -> None:
        if self._stop.wait(self.delay):
            return
        for i in range(1 << 62):
            self.stream.write(f"\r{self.message} {self.frames[i % 4]}")
            self.stream.flush()
            self._shown = True
            if self._stop.wait(0.1):
                return

    def __enter__(self) -> Spinner:
        isatty = getattr(self.stream, "isatty", lambda: False)
        if isatty():
            self._thread = threading.Thread(target=self._run, daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._thread is None:
            return
        self._stop.set()
        self._thread.join()
        if self._shown:
            self.stream.write("\r" + " " * (len(self.message) + 2) + "\r")
            self.stream.flush()


def progress(message: str) -> Spinner:
    """``with progress("making x"):`` shows a spinner on stderr if the work takes a while."""
    return Spinner(message)
