"""The runs API: every command that changes the DB records one ``runs`` row.

``start`` writes the row (``running``, with the process id and host); ``finish`` sets the final
status and counts. A process killed with ``kill -9`` cannot finish its row, so
:meth:`Runs.mark_interrupted` (called by the next ``run`` and by ``status``) turns a ``running`` row
whose process is gone from this host into ``interrupted``.
"""

from __future__ import annotations

import json
import os
import socket
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any

from hubsurvey import __version__
from hubsurvey.core.errors import HubsurveyError, one_line
from hubsurvey.core.processes import process_alive
from hubsurvey.core.signals import is_interruption
from hubsurvey.core.store import Store, insert, now


class Interrupted(KeyboardInterrupt):
    """A command stopped by Ctrl-C or SIGTERM, saying what it left behind (``detail``: "3 jobs left
    pending"), which the command's one closing line repeats."""

    def __init__(self, detail: str):
        super().__init__(detail)
        self.detail = detail


class RunStatus(StrEnum):
    """A run's status; the values are the strings stored in ``runs.status``."""

    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"
    INTERRUPTED = "interrupted"
    TIMED_OUT = "timed_out"

    def __str__(self) -> str:
        return self.value


def new_run_id(command: str = "run") -> str:
    """``run-20260101T000000Z-abc123``: sortable by time, unique."""
    return f"{command}-{now().strftime('%Y%m%dT%H%M%SZ')}-{uuid.uuid4().hex[:6]}"


Counts = Mapping[str, Any]


@dataclass
class Recording:
    """A run being recorded (:meth:`Runs.recording`): what its row will say when it ends.

    ``counts`` is a mapping, or a function giving it (read once, when the run ends however it ends);
    ``status`` is the status of a normal end (default ``done``).
    """

    run_id: str
    counts: Counts | Callable[[], Counts] = field(default_factory=dict)
    status: RunStatus = RunStatus.DONE

    def final_counts(self) -> Counts:
        return self.counts() if callable(self.counts) else self.counts


class Runs:
    """The ``runs`` table: start, finish, and repair rows of processes that died."""

    def __init__(self, store: Store):
        self.store = store

    def start(self, command: str, args: Mapping[str, Any] | None = None, *, run_id: str | None = None) -> str:
        """Record a run of ``command`` as running in this process; return its id."""
        run_id = run_id or new_run_id(command)
        with self.store.transaction() as con:
            insert(con, "runs", {"run_id": run_id, "command": command, "args": dict(args or {}), "started_at": now(),
                                 "status": RunStatus.RUNNING.value, "tool_version": __version__,
                                 "pid": os.getpid(), "host": socket.gethostname()})
        return run_id

    def finish(
        self,
        run_id: str,
        status: RunStatus | str,
        counts: Mapping[str, Any] | None = None,
        error: BaseException | None = None,
    ) -> None:
        """Set the final status and counts (stored as one JSON value) of a run, and why it failed."""
        error_class = error_message = None
        if error is not None and not isinstance(error, KeyboardInterrupt):
            error_class = error.error_class if isinstance(error, HubsurveyError) else "internal"
            error_message = one_line(error)[:500]
        with self.store.transaction() as con:
            con.execute(
                "UPDATE runs SET status = $s, finished_at = $t, counts = $c, error_class = $ec, error_message = $em "
                "WHERE run_id = $r",
                {"s": str(status), "t": now(), "c": json.dumps(dict(counts or {}), default=str), "r": run_id,
                 "ec": error_class, "em": error_message},
            )

    @contextmanager
    def recording(self, command: str, args: Mapping[str, Any] | None = None, *, run_id: str | None = None,
                  finishing: Callable[[], object] | None = None) -> Iterator[Recording]:
        """Record one run of ``command``: its row is started here and finished when the block ends,
        ``done`` (or the :class:`Recording`'s status), ``interrupted`` on Ctrl-C, else ``failed`` with
        the error's class and one line; the error goes on. ``finishing`` runs in the same transaction
        as the final write (a run puts its jobs in flight back in the queue there)."""
        recording = Recording(self.start(command, args, run_id=run_id))
        status, failure = RunStatus.FAILED, None
        try:
            yield recording
            status = recording.status
        except BaseException as e:
            status = RunStatus.INTERRUPTED if is_interruption(e) else RunStatus.FAILED
            failure = e
            raise
        finally:
            with self.store.transaction():
                if finishing is not None:
                    finishing()
                self.finish(recording.run_id, status, recording.final_counts(), error=failure)

    def stale(self) -> list[str]:
        """Runs recorded as ``running`` on this host whose process is gone."""
        if not self.store.query(
            "SELECT 1 FROM information_schema.columns WHERE table_name = 'runs' AND column_name = 'pid'"
        )[1]:
            return []  # a DB opened read-only before its migration 3: runs record no process
        rows = self.store.query(
            "SELECT run_id, pid, started_at FROM runs WHERE status = $s AND host = $h AND pid IS NOT NULL",
            {"s": RunStatus.RUNNING.value, "h": socket.gethostname()},
        )[1]
        return [run_id for run_id, pid, started_at in rows if not _alive(pid, started_at)]

    def mark_interrupted(self) -> list[str]:
        """Mark the stale runs (see :meth:`stale`) ``interrupted``; return their ids."""
        stale = self.stale()
        if stale:
            with self.store.transaction() as con:
                con.execute(
                    "UPDATE runs SET status = $s WHERE list_contains($ids, run_id)",
                    {"s": RunStatus.INTERRUPTED.value, "ids": stale},
                )
        return stale


def _alive(pid: int, started_at: datetime | None) -> bool:
    """Whether the process that started a run still exists."""
    return process_alive(pid, started_before=started_at.timestamp() if started_at is not None else None)
