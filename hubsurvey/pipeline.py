"""The unattended survey: crawl → queue → measure → store → report, resumable at any point.

``hubsurvey run`` is a thin layer over :func:`run_survey`. Guarantees:

- **One run per DB**: a lock file beside the DB (``<db>.lock``); a second run is refused.
- **Single writer**: only this coordinator writes DuckDB; executors return plain data.
- **Resumable**: a job's measurement rows and its ``done`` status are written in one transaction,
  so a run killed at any moment (even ``kill -9``) leaves every job either done with all its rows
  or not done with none; the next run re-queues what was pending or running.
- **Incremental**: a job is ``dataset@sha/config``; a dataset whose sha changed gets new jobs,
  the others are skipped.
- **Bounded**: ``max_hours`` stops taking new jobs in time; what is left stays pending.
"""

from __future__ import annotations

import json
import os
import socket
import time
import uuid
from collections import deque
from concurrent.futures import FIRST_COMPLETED, Future, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from filelock import FileLock, Timeout

from hubsurvey import __version__
from hubsurvey.core.hub import HubClient
from hubsurvey.core.store import Store, StoreError, insert, now
from hubsurvey.survey.jobs import JobSpec
from hubsurvey.core.splits import SPLIT_ALIASES

TRANSIENT_CLASSES = {"worker_died"}  # besides errors the Hub client classifies as transient


class RunLockedError(StoreError):
    """Another run holds the DB."""


@dataclass
class RunOptions:
    workers: int | None = None  # local worker processes (default: one per core)
    max_hours: float | None = None
    dask: Any = None  # a scheduler address (tcp://host:8786) or a distributed.Client
    job_timeout: float = 1800.0
    memory_mb: int = 4096
    max_attempts: int = 3
    roles_file: str | None = None
    report_dir: Path | None = None
    crawl: bool = True

    def as_json(self) -> dict[str, Any]:
        return {
            "workers": self.workers,
            "max_hours": self.max_hours,
            "dask": str(self.dask) if isinstance(self.dask, str) else ("client" if self.dask else None),
            "job_timeout": self.job_timeout,
            "memory_mb": self.memory_mb,
            "max_attempts": self.max_attempts,
            "roles_file": self.roles_file,
            "report_dir": str(self.report_dir) if self.report_dir else None,
            "crawl": self.crawl,
        }


@dataclass
class RunSummary:
    run_id: str
    status: str = "running"
    crawl: dict[str, Any] | None = None
    queued: int = 0
    done: int = 0
    failed: int = 0
    retried: int = 0
    left_pending: int = 0
    rows: int = 0
    seconds: float = 0.0
    measure_seconds: float = 0.0
    job_seconds: float = 0.0
    report: list[str] = field(default_factory=list)

    def counts(self) -> dict[str, Any]:
        return {
            "queued": self.queued,
            "done": self.done,
            "failed": self.failed,
            "retried": self.retried,
            "left_pending": self.left_pending,
            "rows": self.rows,
            "crawl": self.crawl,
            "seconds": round(self.seconds, 3),
            "measure_seconds": round(self.measure_seconds, 3),
            "job_seconds": round(self.job_seconds, 3),
        }

    def line(self) -> str:
        return (
            f"run {self.run_id} {self.status}: {self.done} job(s) done, {self.failed} failed, "
            f"{self.left_pending} left pending, {self.rows} row(s) stored in {self.seconds:.1f} s"
        )


def acquire_lock(db: str | Path) -> FileLock:
    """The run lock; refused at once (no waiting) when another run holds it."""
    lock = FileLock(f"{db}.lock", timeout=0)
    try:
        lock.acquire()
    except Timeout:
        holder = _read_holder(db)
        raise RunLockedError(f"{db} is in use by another run{holder}; refusing to start a second one") from None
    return lock


def _holder_file(db: str | Path) -> Path:
    return Path(f"{db}.run.json")


def _read_holder(db: str | Path) -> str:
    try:
        info = json.loads(_holder_file(db).read_text())
        return f" ({info['run_id']}, pid {info['pid']} on {info['host']}, since {info['started_at']})"
    except (OSError, ValueError, KeyError):
        return ""


# --- the queue --------------------------------------------------------------------------------------

def enqueue(store: Store, run_id: str, max_attempts: int) -> list[JobSpec]:
    """Queue every eligible (dataset, config) not yet measured at its current sha; return the jobs."""
    datasets = store.records(
        "SELECT dataset_id, sha, configs FROM datasets WHERE status = 'eligible' AND sha IS NOT NULL ORDER BY dataset_id"
    )
    specs: list[JobSpec] = []
    with store.transaction() as con:
        # Jobs a killed run left running, and transient failures with attempts left, go back in.
        con.execute("UPDATE jobs SET status = 'pending' WHERE status = 'running'")
        con.execute(
            "UPDATE jobs SET status = 'pending' WHERE status = 'failed' AND transient AND attempts < $m",
            {"m": max_attempts},
        )
        existing = {r[0]: r[1] for r in con.execute("SELECT job_id, status FROM jobs").fetchall()}
        for d in datasets:
            configs = json.loads(d["configs"]) if isinstance(d["configs"], str) else (d["configs"] or {})
            for config, splits in sorted(configs.items()):
                files = {s: v["files"] for s, v in splits.items() if SPLIT_ALIASES.get(s.lower())}
                if not any(SPLIT_ALIASES.get(s.lower()) == "test" for s in files):
                    continue
                job_id = f"{d['dataset_id']}@{d['sha']}/{config}"
                status = existing.get(job_id)
                if status is None:
                    insert(con, "jobs", {"job_id": job_id, "dataset_id": d["dataset_id"], "revision_sha": d["sha"],
                                         "config": config, "status": "pending", "attempts": 0, "queued_at": now(),
                                         "run_id": run_id})
                elif status != "pending":
                    continue  # done, or failed for good
                specs.append(JobSpec(job_id, d["dataset_id"], d["sha"], config, len(configs), files, run_id=run_id))
        # Pending jobs of an older revision will never run: the dataset has moved on.
        con.execute(
            """UPDATE jobs SET status = 'superseded'
               WHERE status = 'pending' AND NOT EXISTS (
                   SELECT 1 FROM datasets d WHERE d.dataset_id = jobs.dataset_id AND d.sha = jobs.revision_sha)"""
        )
    return specs


def _mark_running(store: Store, spec: JobSpec, run_id: str) -> None:
    store.con.execute(
        "UPDATE jobs SET status = 'running', attempts = attempts + 1, started_at = $t, run_id = $r WHERE job_id = $j",
        {"t": now(), "r": run_id, "j": spec.job_id},
    )


def _record(store: Store, spec: JobSpec, result: dict[str, Any], final_failure: bool) -> None:
    """Write one job's outcome; rows and 'done' in one transaction."""
    finished = now()
    with store.transaction() as con:
        if result["ok"]:
            con.execute(
                "DELETE FROM measurements WHERE dataset_id = $d AND revision_sha = $r AND config = $c",
                {"d": spec.dataset_id, "r": spec.revision_sha, "c": spec.config},
            )
            for row in result["rows"]:
                insert(con, "measurements", row)
            con.execute(
                "UPDATE jobs SET status = 'done', error_class = NULL, error_message = NULL, transient = NULL, "
                "finished_at = $t, seconds = $s WHERE job_id = $j",
                {"t": finished, "s": result["seconds"], "j": spec.job_id},
            )
        else:
            con.execute(
                "UPDATE jobs SET status = $st, error_class = $c, error_message = $m, transient = $tr, "
                "finished_at = $t WHERE job_id = $j",
                {"st": "failed" if final_failure else "pending", "c": result["error_class"], "m": result["message"],
                 "tr": bool(result.get("transient")), "t": finished, "j": spec.job_id},
            )


# --- the run ----------------------------------------------------------------------------------------

def run_survey(
    db: str | Path,
    client: HubClient,
    filters: Any = None,
    options: RunOptions | None = None,
    *,
    progress: Callable[[dict[str, Any]], None] | None = None,
    args: dict[str, Any] | None = None,
) -> RunSummary:
    """Crawl, queue, measure and store; refresh the report. See the module docstring."""
    from hubsurvey.crawler.crawl import crawl

    options = options or RunOptions()
    started = time.perf_counter()
    deadline = started + options.max_hours * 3600 if options.max_hours else None
    run_id = f"run-{now().strftime('%Y%m%dT%H%M%SZ')}-{uuid.uuid4().hex[:6]}"
    summary = RunSummary(run_id)
    lock = acquire_lock(db)
    holder = _holder_file(db)
    try:
        holder.write_text(json.dumps({"run_id": run_id, "pid": os.getpid(), "host": socket.gethostname(), "started_at": now().isoformat()}))
        with Store(db) as store:
            with store.transaction() as con:
                insert(con, "runs", {"run_id": run_id, "command": "run", "args": args or {}, "started_at": now(),
                                     "status": "running", "tool_version": __version__})
            try:
                if options.crawl:
                    summary.crawl = crawl(store, client, filters, run_id=run_id).as_json()
                specs = enqueue(store, run_id, options.max_attempts)
                summary.queued = len(specs)
                _execute(store, client, specs, options, summary, deadline, progress, started)
                summary.status = "timed_out" if summary.left_pending else "done"
                if options.report_dir is not None:
                    summary.report = [str(p) for p in _refresh_report(store, options.report_dir)]
            except BaseException as e:
                summary.status = "interrupted" if isinstance(e, KeyboardInterrupt) else "failed"
                raise
            finally:
                summary.seconds = time.perf_counter() - started
                with store.transaction() as con:
                    con.execute("UPDATE jobs SET status = 'pending' WHERE status = 'running'")
                    con.execute(
                        "UPDATE runs SET status = $s, finished_at = $t, counts = $c WHERE run_id = $r",
                        {"s": summary.status, "t": now(), "c": json.dumps(summary.counts()), "r": run_id},
                    )
    finally:
        holder.unlink(missing_ok=True)
        lock.release()
    return summary


def _execute(store, client, specs, options, summary, deadline, progress, started) -> None:
    from hubsurvey.survey.executors import make_executor

    if not specs:
        return
    engine_threads = max(1, (os.cpu_count() or 1) // max(1, options.workers or os.cpu_count() or 1))
    queue = deque()
    for spec in specs:
        spec.roles_file = options.roles_file
        spec.endpoint = client.endpoint
        spec.cache_dir = str(client.cache_dir) if client.cache_dir else None
        spec.engine_options = {"threads": engine_threads, "memory_limit": f"{int(options.memory_mb * 0.6)}MB"}
        queue.append(spec)
    attempts = {r[0]: r[1] for r in store.con.execute("SELECT job_id, attempts FROM jobs").fetchall()}
    executor = make_executor(client, dask=options.dask, workers=options.workers, job_timeout=options.job_timeout, memory_mb=options.memory_mb)
    inflight: dict[Future, JobSpec] = {}
    try:
        while queue or inflight:
            while queue and len(inflight) < executor.capacity and not (deadline and time.perf_counter() > deadline):
                spec = queue.popleft()
                _mark_running(store, spec, summary.run_id)
                attempts[spec.job_id] = attempts.get(spec.job_id, 0) + 1
                inflight[executor.submit(spec)] = spec
            if not inflight:
                break  # out of time: the rest stays pending
            done, _ = wait(list(inflight), timeout=1.0, return_when=FIRST_COMPLETED)
            for future in done:
                spec = inflight.pop(future)
                result = future.result()
                retry = not result["ok"] and (result.get("transient") or result["error_class"] in TRANSIENT_CLASSES) and attempts[spec.job_id] < options.max_attempts
                _record(store, spec, result, final_failure=not retry)
                if result["ok"]:
                    summary.done += 1
                    summary.rows += len(result["rows"])
                    summary.measure_seconds += result.get("measure_seconds", 0.0)
                    summary.job_seconds += result.get("seconds", 0.0)
                elif retry:
                    summary.retried += 1
                    queue.append(spec)
                else:
                    summary.failed += 1
                if progress:
                    elapsed = time.perf_counter() - started
                    progress({"done": summary.done + summary.failed, "ok": summary.done, "failed": summary.failed,
                              "total": summary.queued, "rows_per_s": round(summary.rows / elapsed, 2) if elapsed else 0})
    finally:
        executor.close()
    summary.left_pending = len(queue)


def _refresh_report(store: Store, out_dir: Path) -> list[Path]:
    try:
        from hubsurvey.analysis.report import render_report
    except ImportError:  # analysis not installed: nothing to refresh
        return []
    return render_report(store, out_dir)


# --- status -------------------------------------------------------------------------------------------

def status(db: str | Path) -> dict[str, Any]:
    """A summary of the DB: last run, queue by status, failures by class, measured rows."""
    holder = _read_holder(db)
    try:
        store = Store(db, read_only=True)
    except StoreError as e:
        if holder:
            raise StoreError(f"{db} is in use by a running survey{holder}") from None
        raise
    with store:
        last = store.records("SELECT run_id, command, status, started_at, finished_at, counts FROM runs ORDER BY started_at DESC LIMIT 1")
        queue = dict(store.query("SELECT status, count(*) FROM jobs GROUP BY status ORDER BY status")[1])
        failures = store.records(
            "SELECT error_class, count(*) AS jobs, any_value(error_message) AS example FROM jobs "
            "WHERE status = 'failed' GROUP BY error_class ORDER BY jobs DESC, error_class"
        )
        datasets = dict(store.query("SELECT status, count(*) FROM datasets GROUP BY status")[1])
        measured = store.query("SELECT count(*), count(DISTINCT dataset_id) FROM current_measurements")[1][0]
    return {
        "db": str(db),
        "running": holder or None,
        "last_run": last[0] if last else None,
        "queue": queue,
        "failures": failures,
        "datasets": datasets,
        "measurements": {"rows": measured[0], "datasets": measured[1]},
    }
