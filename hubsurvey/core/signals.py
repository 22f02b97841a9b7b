"""SIGTERM stops a command as Ctrl-C does (what ``systemctl stop`` and ``kill`` send).

Either signal sets :data:`STOP_REQUESTED` and raises KeyboardInterrupt, so that the run is
recorded interrupted and its lock, holder file, snapshot and WAL are cleaned up.

This module imports nothing of hubsurvey's, so that every layer (the store's helpers too) can ask
whether a stop was asked for.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from typing import Any

#: Set when the process is asked to stop (Ctrl-C or SIGTERM). An error raised after it is the stop's
#: doing: DuckDB ends a query the signal interrupts with ``duckdb.InterruptException`` or, inside
#: ``COPY FROM DATABASE``, with ``RuntimeError("Query interrupted")``, never KeyboardInterrupt.
STOP_REQUESTED = threading.Event()


def is_interruption(error: BaseException) -> bool:
    """Whether ``error`` ends a command because it was asked to stop (the run is ``interrupted``)."""
    return isinstance(error, KeyboardInterrupt) or STOP_REQUESTED.is_set()


def raise_if_stopped(error: BaseException | None = None) -> None:
    """Raise the stop (KeyboardInterrupt, chained to ``error``) once one was asked for: a loop that
    takes per-item errors, or whose library call swallowed the interruption, ends there."""
    if STOP_REQUESTED.is_set():
        raise KeyboardInterrupt("asked to stop") from error


#: the signal that asked the running command to stop (its exit code is 128 + its number)
_stop_signal = signal.SIGINT


def stop_signal() -> signal.Signals:
    """The signal that stopped the command: SIGTERM when a handled SIGTERM did, else SIGINT (Ctrl-C)."""
    return _stop_signal


def interrupt(signum: int, _frame: Any) -> None:
    """The handler of SIGTERM and SIGINT: ask the command to stop, then stop it as Ctrl-C does."""
    global _stop_signal
    STOP_REQUESTED.set()
    _stop_signal = signal.Signals(signum)
    raise KeyboardInterrupt(f"signal {signal.Signals(signum).name}")


@contextlib.contextmanager
def sigterm_as_ctrl_c() -> Iterator[None]:
    """Within the block, SIGTERM and SIGINT stop the command (:func:`interrupt`); the previous
    handlers come back after it. Off the main thread signals cannot be handled: nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    global _stop_signal
    STOP_REQUESTED.clear()  # a command of its own (the tests run several in one process)
    _stop_signal = signal.SIGINT  # Ctrl-C, unless a handled signal says otherwise
    previous = {number: signal.signal(number, interrupt) for number in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
