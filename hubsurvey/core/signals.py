"""SIGTERM stops a command as Ctrl-C does (what ``systemctl stop`` and ``kill`` send).

Either signal sets :data:`STOP_REQUESTED` and raises KeyboardInterrupt, so that the run is
recorded interrupted and its lock, holder file, snapshot and WAL are cleaned up.

This module imports nothing of hubsurvey's, so that every layer (the store's helpers too) can ask
whether a stop was asked for.
"""

from __future__ import annotations

import contextlib
import signal
import socket
import threading
import weakref
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
    _ask_to_stop(signum)
    raise KeyboardInterrupt(f"signal {signal.Signals(signum).name}")


#: What a stop interrupts the moment the signal arrives: every open DuckDB connection
#: (``hubsurvey.core.duck`` adds each one). A Python handler runs only once the main thread runs
#: Python again, and DuckDB's client looks for a signal only between the tasks of a query: a query
#: whose task was long ran to its end (8-20 s measured) before the stop reached it.
#: Weak references without a callback: a callback is Python code run by the garbage collector, where
#: the handler's KeyboardInterrupt would be printed and ignored.
_INTERRUPTIBLE: list[weakref.ref[Any]] = []
_INTERRUPTIBLE_LOCK = threading.Lock()


def interrupt_on_stop(connection: Any) -> None:
    """Have a stop interrupt ``connection``'s running query at once (its ``interrupt()``); an idle
    connection is unaffected. Held weakly: a dropped connection is forgotten."""
    with _INTERRUPTIBLE_LOCK:
        _INTERRUPTIBLE[:] = [held for held in _INTERRUPTIBLE if held() is not None]
        _INTERRUPTIBLE.append(weakref.ref(connection))


def _ask_to_stop(signum: int) -> None:
    global _stop_signal
    _stop_signal = signal.Signals(signum)
    STOP_REQUESTED.set()


def _watch(reader: socket.socket) -> None:
    """The stop watcher: the interpreter writes each handled signal's number to ``reader``'s pair as
    it arrives (``signal.set_wakeup_fd``), whatever the main thread is doing; a stop is asked for and
    the queries interrupted there, before the handler runs. It ends when the pair is closed."""
    while data := reader.recv(64):
        for signum in data:
            if signum in (signal.SIGTERM, signal.SIGINT):
                _ask_to_stop(signum)
                with _INTERRUPTIBLE_LOCK:
                    connections = [held() for held in _INTERRUPTIBLE]
                for connection in connections:
                    with contextlib.suppress(Exception):  # closed since: nothing to interrupt
                        if connection is not None:
                            connection.interrupt()


@contextlib.contextmanager
def sigterm_as_ctrl_c() -> Iterator[None]:
    """Within the block, SIGTERM and SIGINT stop the command (:func:`interrupt`), and interrupt its
    DuckDB queries the moment they arrive (:func:`interrupt_on_stop`); the previous handlers come
    back after it. Off the main thread signals cannot be handled: nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    global _stop_signal
    STOP_REQUESTED.clear()  # a command of its own (the tests run several in one process)
    _stop_signal = signal.SIGINT  # Ctrl-C, unless a handled signal says otherwise
    previous = {number: signal.signal(number, interrupt) for number in (signal.SIGTERM, signal.SIGINT)}
    reader, writer = socket.socketpair()
    writer.setblocking(False)
    previous_fd = signal.set_wakeup_fd(writer.fileno(), warn_on_full_buffer=False)
    watcher = threading.Thread(target=_watch, args=(reader,), name="stop-watcher", daemon=True)
    watcher.start()
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
        signal.set_wakeup_fd(previous_fd)
        writer.shutdown(socket.SHUT_WR)  # the watcher reads the end and returns
        watcher.join()
        writer.close()
        reader.close()
