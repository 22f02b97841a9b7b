"""What a running survey shows to the outside: its live progress and a read snapshot of its DB.

DuckDB lets one process hold a file read-write, and while it does no other process can open the
file, not even read-only. A survey run holds its DB for hours, so it publishes two things beside it:

- ``<db>.run.json``, the **holder file**: who holds the DB (run id, pid, process start time, host,
  started) and its live progress (phase, jobs done, failed and pending, dataset rows measured, jobs/s, rows/s, ETA,
  updated_at). It is rewritten atomically (a temp file, then ``os.replace``) at most once a second.
  A holder whose process is gone (``kill -9``) is reported as interrupted, never as running.
- ``<db>.snapshot``, the **read snapshot**: a copy of the DB made by DuckDB between two of the
  coordinator's transactions (``ATTACH`` + ``COPY FROM DATABASE``: one consistent state), written to
  a temp file and moved into place with ``os.replace``. It is refreshed at most every few seconds while results come in (more rarely when
  the DB is so large that copying it takes long) and once after the last job; a normal end of the run
  (done, timed out, failed, Ctrl-C) removes it. A run killed with ``kill -9`` leaves both files;
  readers then ignore them (the holder's process is gone) and the next run replaces them.

Readers (``status``, ``sql``, ``report``, ``export``, ``publish``) go through
:meth:`hubsurvey.core.store.Store.open_for_reading`: the DB itself when it can be opened, else the
snapshot of the live run that holds it. Reading never writes to either file.

This module is the writing side, used by the run's coordinator (:mod:`hubsurvey.pipeline`), and the
helpers both sides share. It imports nothing from the store (the store imports it).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import socket
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb

from hubsurvey.core.processes import process_alive
from hubsurvey.core.signals import is_interruption

if TYPE_CHECKING:
    import duckdb

log = logging.getLogger(__name__)

#: the holder file is rewritten at most this often (seconds)
HOLDER_EVERY_S = 1.0
#: a snapshot is taken at most this often (seconds) ...
SNAPSHOT_EVERY_S = 2.0
#: ... and at most this share of the coordinator's time goes to copying the DB
SNAPSHOT_SHARE = 0.1


def holder_path(db: str | Path) -> Path:
    return Path(f"{db}.run.json")


def snapshot_path(db: str | Path) -> Path:
    return Path(f"{db}.snapshot")


def _now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _write_atomically(path: Path, data: bytes) -> None:
    """Write ``path`` so that a reader sees the old content or the new one, never half of it."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


# --- the reading side (status, the store's fallback) -----------------------------------------------

def read_holder(db: str | Path) -> dict[str, Any] | None:
    """The holder file's content, or None when there is none (or it cannot be read)."""
    try:
        info = json.loads(holder_path(db).read_text())
    except (OSError, ValueError):
        return None
    return info if isinstance(info, dict) and info.get("run_id") else None


def holder_alive(info: dict[str, Any] | None) -> bool:
    """Whether the process named in a holder file still runs (``kill -9`` leaves the file behind).

    A pid reused by a process started after the run is not it. A holder of another host cannot be
    checked from here: it is believed.
    """
    if not info or not info.get("pid"):
        return False
    if info.get("host") != socket.gethostname():
        return True
    created = info.get("process_started")
    return process_alive(int(info["pid"]), created_at=float(created) if created is not None else None)


def describe_holder(info: dict[str, Any]) -> str:
    """``run-... (pid 123 on host, since 2026-...)``: who holds the DB, for one-line messages."""
    return f"{info.get('run_id')} (pid {info.get('pid')} on {info.get('host')}, since {info.get('started_at')})"


def live_snapshot(db: str | Path) -> tuple[Path, dict[str, Any]] | None:
    """The snapshot of the live run holding ``db`` and that run's holder info, if there is one.

    A snapshot left by a killed run (its process is gone) is not offered: it may be far behind.
    """
    info = read_holder(db)
    path = snapshot_path(db)
    if not holder_alive(info) or not (info or {}).get("snapshot_at") or not path.is_file():
        return None
    assert info is not None
    return path, info


# --- the writing side (the run's coordinator) -------------------------------------------------------

_SNAPSHOT_ALIAS = "hubsurvey_read_snapshot"


def _copy_database(con: duckdb.DuckDBPyConnection, target: Path) -> None:
    """Copy the connection's DB (tables, views, data) into a new DuckDB file ``target``.

    DuckDB's own ``COPY FROM DATABASE``, not a copy of the file: DuckDB holds its file with a POSIX
    (fcntl) lock, and *any* close of that file by this process, such as ``shutil.copyfile``
    reading it, would silently drop the lock and let another process open the DB meanwhile.
    """
    source = con.execute("SELECT current_database()").fetchone()[0]  # type: ignore[index]
    path = str(target).replace("'", "''")
    con.execute(f"ATTACH '{path}' AS {_SNAPSHOT_ALIAS}")
    try:
        con.execute(f'COPY FROM DATABASE "{source.replace(chr(34), chr(34) * 2)}" TO {_SNAPSHOT_ALIAS}')
        con.execute(f"CHECKPOINT {_SNAPSHOT_ALIAS}")  # the file alone holds everything: no WAL beside it
    finally:
        con.execute(f"DETACH DATABASE {_SNAPSHOT_ALIAS}")

class LiveRun:
    """The holder file and the read snapshot of one run, kept by its coordinator.

    ``start()`` once the run holds the lock; ``progress(...)`` whenever counts change or time passes
    (cheap: it writes at most once a second); ``snapshot(con)`` whenever new results may have been
    committed (cheap too: it copies at most every few seconds); ``close()`` at a normal end.
    """

    def __init__(self, db: str | Path, run_id: str):
        self.db = Path(db)
        self.run_id = run_id
        self.info: dict[str, Any] = {}
        self._written = 0.0
        self._snapshot_due = 0.0
        self._dirty = True  # results may have changed since the last snapshot
        self._measure_started: float | None = None

    def start(self) -> None:
        """Write the holder file: this process holds the DB (before anything else is done)."""
        import psutil

        self.info = {
            "run_id": self.run_id, "pid": os.getpid(), "host": socket.gethostname(),
            "process_started": psutil.Process().create_time(), "started_at": _now_iso(),
            "phase": "starting", "done": 0, "failed": 0, "pending": None, "rows": 0,
            "jobs_per_s": None, "rows_per_s": None, "eta_s": None, "snapshot_at": None, "updated_at": None,
        }
        self._write(force=True)

    def progress(self, *, phase: str | None = None, done: int | None = None, failed: int | None = None,
                 pending: int | None = None, rows: int | None = None, force: bool = False) -> None:
        """Record the run's counts; rewrite the holder file if a second has passed (or ``force``)."""
        changed = {k: v for k, v in (("phase", phase), ("done", done), ("failed", failed), ("pending", pending),
                                     ("rows", rows)) if v is not None}
        if any(self.info.get(k) != v for k, v in changed.items()):
            self._dirty = True
        self.info.update(changed)
        if phase == "measuring" and self._measure_started is None:
            self._measure_started = time.monotonic()
        if self._measure_started is not None:
            elapsed = time.monotonic() - self._measure_started
            finished = self.info["done"] + self.info["failed"]
            jobs_per_s = finished / elapsed if elapsed > 0 and finished else None
            self.info["jobs_per_s"] = round(jobs_per_s, 4) if jobs_per_s else None
            self.info["rows_per_s"] = round(self.info["rows"] / elapsed, 2) if elapsed > 0 else None
            pending_now = self.info.get("pending")
            self.info["eta_s"] = round(pending_now / jobs_per_s, 1) if jobs_per_s and pending_now is not None else None
        self._write(force=force)

    def _write(self, *, force: bool = False) -> None:
        if not force and time.monotonic() - self._written < HOLDER_EVERY_S:
            return
        self.info["updated_at"] = _now_iso()
        try:
            _write_atomically(holder_path(self.db), json.dumps(self.info).encode())
        except OSError as e:  # progress is a courtesy: a full disk must not stop the run for it
            log.warning("cannot write %s: %s", holder_path(self.db), e.strerror or e)
        self._written = time.monotonic()

    def snapshot(self, con: duckdb.DuckDBPyConnection, *, force: bool = False) -> None:
        """Checkpoint the DB and copy it to ``<db>.snapshot`` if results changed and it is time.

        Call it between transactions only (the coordinator is the single writer, so the copy is
        one committed state). The copy goes to a temp file first: a reader opens either the old
        snapshot or the new one.
        """
        if not self._dirty and not force:
            return
        if not force and time.monotonic() < self._snapshot_due:
            return
        began = time.monotonic()
        target = snapshot_path(self.db)
        tmp = target.with_name(target.name + ".tmp")
        try:
            for stale in (tmp, Path(f"{tmp}.wal")):
                stale.unlink(missing_ok=True)
            _copy_database(con, tmp)
            os.replace(tmp, target)
        except Exception as e:  # a read snapshot is a courtesy: never stop the run for it
            # Ctrl-C or SIGTERM, turned by DuckDB into its own error (a RuntimeError inside COPY FROM DATABASE)
            interrupted = isinstance(e, duckdb.InterruptException) or is_interruption(e)
            if not interrupted:
                log.warning("cannot write the read snapshot %s: %s", target, str(e).splitlines()[0] if str(e) else e)
            with contextlib.suppress(Exception):
                con.execute(f"DETACH DATABASE IF EXISTS {_SNAPSHOT_ALIAS}")
            tmp.unlink(missing_ok=True)
            if interrupted:  # the run stops as the signal asked, not after its last job
                raise KeyboardInterrupt("interrupted while writing the read snapshot") from e
            self._snapshot_due = time.monotonic() + 60
            return
        took = time.monotonic() - began
        self._dirty = False
        self._snapshot_due = time.monotonic() + max(SNAPSHOT_EVERY_S, took / SNAPSHOT_SHARE)
        self.info["snapshot_at"] = _now_iso()
        self._write(force=True)  # readers learn of the snapshot (and its time) at once

    def tick(self, con: duckdb.DuckDBPyConnection, **counts: Any) -> None:
        """``progress(**counts)`` then ``snapshot(con)``: the coordinator's one call per loop."""
        self.progress(**counts)
        self.snapshot(con)

    def close(self) -> None:
        """A normal end: remove the snapshot, then the holder file (readers then open the DB)."""
        for path in (snapshot_path(self.db), snapshot_path(self.db).with_name(snapshot_path(self.db).name + ".tmp")):
            path.unlink(missing_ok=True)
        holder_path(self.db).unlink(missing_ok=True)
