"""Terminal formatting helpers: tables that fit, wrapped lists, the spinner."""

from __future__ import annotations

import io
import threading

from torchenv.cli._format import Spinner, table, wrap_words


def test_table_shrinks_the_widest_column_to_fit():
    rows = [["builtin", "x" * 80, "ok"], ["gym", "short", "simulator missing"]]
    text = table(["NAME", "PLUGIN", "STATUS"], rows, width=50)
    lines = text.splitlines()
    assert all(len(line) <= 50 for line in lines)
    assert lines[1].startswith("builtin") and "..." in lines[1]
    assert lines[2].endswith("simulator missing")  # the narrow columns keep their text


def test_table_keeps_natural_widths_when_they_fit():
    text = table(["A", "BB"], [["1", "2"], ["333", "4"]], width=100)
    assert text.splitlines() == ["A    BB", "1    2", "333  4"]


def test_wrap_words_respects_width_and_order():
    words = [f"word{i}" for i in range(30)]
    text = wrap_words(words, width=30)
    assert all(len(line) <= 30 for line in text.splitlines())
    assert text.split() == words


class _Tty(io.StringIO):
    def isatty(self):
        return True


def test_spinner_draws_on_a_terminal_and_clears_its_line():
    stream = _Tty()
    done = threading.Event()
    with Spinner("working", stream=stream, delay=0.0):
        done.wait(0.25)
    text = stream.getvalue()
    assert "\rworking " in text
    assert text.endswith("\r")


def test_spinner_is_silent_off_a_terminal_or_for_quick_work():
    stream = io.StringIO()
    with Spinner("working", stream=stream, delay=0.0):
        threading.Event().wait(0.15)
    assert stream.getvalue() == ""
    tty = _Tty()
    with Spinner("working", stream=tty, delay=5.0):
        pass
    assert tty.getvalue() == ""
