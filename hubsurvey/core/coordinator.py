"""Calls a background thread hands to the run's coordinator thread, the one that writes the DB.

A step that works beside another (the crawl listing the Hub while the measure step runs jobs)
runs in a thread of its own, but the DB keeps one writer: every call the background thread makes
on the store is queued here and run by the coordinator between its own transactions
(:meth:`OnCoordinator.run_pending`); the background thread waits for its result.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any


class CoordinatorGone(RuntimeError):
    """The coordinator stopped taking calls (its run is ending): the background work stops here."""


class OnCoordinator:
    """A queue of calls from background threads, run on the coordinator's thread."""

    def __init__(self) -> None:
        self._calls: queue.SimpleQueue[tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any], Future]] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._closed = False

    def call(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """From a background thread: run ``fn`` on the coordinator and return its result (or raise
        its exception). Raises :class:`CoordinatorGone` once the coordinator is closed."""
        done: Future = Future()
        with self._lock:  # closed-or-queued, never a call queued after close drained the queue
            if self._closed:
                raise CoordinatorGone("the run's coordinator stopped")
            self._calls.put((fn, args, kwargs, done))
        return done.result()

    def run_pending(self, timeout: float = 0.0) -> int:
        """On the coordinator: run the calls queued, waiting up to ``timeout`` for the first one.
        Returns how many ran."""
        ran = 0
        wait: float | None = timeout
        while True:
            try:
                fn, args, kwargs, done = self._calls.get(timeout=wait) if wait else self._calls.get_nowait()
            except queue.Empty:
                return ran
            wait = None  # the first call came: take the others queued, without waiting
            if done.set_running_or_notify_cancel():
                try:
                    done.set_result(fn(*args, **kwargs))
                except BaseException as e:  # handed back to the thread that made the call
                    done.set_exception(e)
                    if not isinstance(e, Exception):
                        raise
            ran += 1

    def close(self) -> None:
        """Take no more calls; every call still queued raises :class:`CoordinatorGone` in its thread."""
        with self._lock:
            self._closed = True
        while True:
            try:
                *_, done = self._calls.get_nowait()
            except queue.Empty:
                return
            if done.set_running_or_notify_cancel():
                done.set_exception(CoordinatorGone("the run's coordinator stopped"))


class Coordinated:
    """An object (the store) whose every method, called from a background thread, runs on the
    coordinator (:class:`OnCoordinator`)."""

    def __init__(self, target: Any, coordinator: OnCoordinator):
        self._target, self._coordinator = target, coordinator

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self._target, name)
        if not callable(attribute):
            raise AttributeError(f"{name}: only the methods of a coordinated object are reachable from another thread")

        def on_coordinator(*args: Any, **kwargs: Any) -> Any:
            return self._coordinator.call(attribute, *args, **kwargs)

        return on_coordinator
