"""SIGTERM stops a command as Ctrl-C does (what ``systemctl stop`` and ``kill`` send).

Either signal sets :data:`~hubsurvey.core.runs.STOP_REQUESTED` and raises KeyboardInterrupt, so
that the run is recorded interrupted and its lock, holder file, snapshot and WAL are cleaned up.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from typing import Any

from hubsurvey.core.runs import STOP_REQUESTED


def interrupt(signum: int, _frame: Any) -> None:
    """The handler of SIGTERM and SIGINT: ask the command to stop, then stop it as Ctrl-C does."""
    STOP_REQUESTED.set()
    raise KeyboardInterrupt(f"signal {signal.Signals(signum).name}")


@contextlib.contextmanager
def sigterm_as_ctrl_c() -> Iterator[None]:
    """Within the block, SIGTERM and SIGINT stop the command (:func:`interrupt`); the previous
    handlers come back after it. Off the main thread signals cannot be handled: nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    STOP_REQUESTED.clear()  # a command of its own (the tests run several in one process)
    previous = {number: signal.signal(number, interrupt) for number in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
