"""The unattended survey: crawl → queue → measure → store → report, resumable at any point.

``hubsurvey run`` is a thin layer over :func:`run_survey`. Guarantees:

- **One run per DB**: a lock file beside the DB (``<db>.lock``); a second run is refused.
- **Single writer**: only this coordinator writes DuckDB; executors return plain data.
- **Resumable**: a job's measurement rows and its ``done`` status are written in one transaction,
  so a run killed at any moment (even ``kill -9``) leaves every job either done with all its rows
  or not done with none; the next run re-queues what was pending or running (without costing the
  killed attempt) and marks the killed run ``interrupted``.
- **Recorded**: every run has a ``runs`` row (:class:`hubsurvey.core.runs.Runs`); job transitions
  all go through :class:`hubsurvey.core.queue.JobQueue`.
- **Incremental**: a job is ``dataset@sha/config``; a dataset whose sha changed gets new jobs,
  the others are skipped.
- **Bounded**: ``max_hours`` stops taking new jobs in time; what is left stays pending. The disk
  too: downloads go to the survey's own cache (``cache_dir``), which never holds more than
  ``max_cache_gb`` (:class:`hubsurvey.survey.cache.CacheBudget`; local executor), and a job's
  files are deleted once it is measured unless ``keep_cache``.
- **Watchable**: while it runs, the coordinator keeps its live progress in ``<db>.run.json`` and a
  read snapshot of the DB in ``<db>.snapshot`` (:class:`hubsurvey.core.livestate.LiveRun`), which
  ``status``, ``sql``, ``report`` and ``export`` read while the run holds the DB.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
import time
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, wait
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from filelock import FileLock, Timeout

from hubsurvey.core import livestate
from hubsurvey.core.errors import DbLockedError, one_line
from hubsurvey.core.figures import DEFAULT_EXAMPLES, methods_measured
from hubsurvey.core.hub import HubClient
from hubsurvey.core.queue import JobOutcome, JobQueue, JobStatus, QueuedJob
from hubsurvey.core.runs import Runs, RunStatus, new_run_id
from hubsurvey.core.store import Store, StoreError, now
from hubsurvey.survey.jobs import JobSpec

log = logging.getLogger(__name__)


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
    # failed jobs to queue again: None none (transient failures are always retried), () every
    # class, else the error classes given (``run --retry-failed CLASS``)
    retry_failed: tuple[str, ...] | None = None
    cache_dir: Path | None = None  # the survey's download cache (None: the Hub client's, HUBSURVEY_CACHE_DIR)
    max_cache_gb: float = 20.0  # the cache never holds more; a job larger than this fails (too_large_for_cache)
    keep_cache: bool = False  # keep each job's files after measuring (default: delete them)
    examples: int = DEFAULT_EXAMPLES  # examples stored per kind, profile and label column
    near: bool = True  # measure the near-duplicate figures (run --no-near: False)
    crossleaks: bool = True  # join the fingerprints across datasets at the end (run --no-crossleaks: False)
    copy_threshold: float = 0.8  # crossleaks: the share of A's test (and train) rows in B's that makes A a copy
    benchmarks: str | None = None  # a benchmarks file (TOML; 'default': the shipped one): check contamination too

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
            "retry_failed": list(self.retry_failed) if self.retry_failed is not None else None,
            "cache_dir": str(self.cache_dir) if self.cache_dir else None,
            "max_cache_gb": self.max_cache_gb,
            "keep_cache": self.keep_cache,
            "examples": self.examples,
            "near": self.near,
            "crossleaks": self.crossleaks,
            "copy_threshold": self.copy_threshold,
            "benchmarks": self.benchmarks,
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
    rows: int = 0  # result rows stored (one per dataset, config, label column)
    data_rows: int = 0  # dataset rows measured (train + validation + test of each config done)
    seconds: float = 0.0
    measure_seconds: float = 0.0
    job_seconds: float = 0.0
    report: list[str] = field(default_factory=list)
    crossleaks: dict[str, Any] | None = None  # what the crossleaks step found (CrossSummary.as_json)
    contamination: dict[str, Any] | None = None  # the check of configs the jobs did not cover (run --benchmarks)

    def counts(self) -> dict[str, Any]:
        return {
            "queued": self.queued,
            "done": self.done,
            "failed": self.failed,
            "retried": self.retried,
            "left_pending": self.left_pending,
            "rows": self.rows,
            "data_rows": self.data_rows,
            "crawl": self.crawl,
            "crossleaks": self.crossleaks,
            "seconds": round(self.seconds, 3),
            "measure_seconds": round(self.measure_seconds, 3),
            "job_seconds": round(self.job_seconds, 3),
            **({"contamination": self.contamination} if self.contamination is not None else {}),
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
    except OSError as e:  # a read-only folder, a missing one
        raise StoreError(f"cannot create the run lock {db}.lock: {e.strerror or e}") from None
    return lock


def _start_live(db: str | Path, run_id: str) -> livestate.LiveRun:
    """The holder file (who holds the lock, and the run's live progress) and the read snapshot."""
    live = livestate.LiveRun(db, run_id)
    try:
        live.start()
    except OSError as e:
        raise StoreError(f"cannot write {livestate.holder_path(db)}: {e.strerror or e}") from None
    return live


def _read_holder(db: str | Path) -> str:
    info = livestate.read_holder(db)
    return f" ({livestate.describe_holder(info)})" if info else ""


# --- the queue --------------------------------------------------------------------------------------

def enqueue(store: Store, run_id: str, max_attempts: int, retry_failed: tuple[str, ...] | None = None) -> list[JobSpec]:
    """Queue every eligible (dataset, config) not yet measured at its current sha; return the jobs."""
    queue = JobQueue(store, max_attempts=max_attempts)
    return [_spec(job, run_id) for job in queue.enqueue(run_id, retry_failed)]


def _spec(job: QueuedJob, run_id: str) -> JobSpec:
    return JobSpec(job.job_id, job.dataset_id, job.revision_sha, job.config, job.n_configs, job.files, run_id=run_id,
                   parquet_sha=job.parquet_sha, bytes=job.bytes)


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
    if options.cache_dir is not None:
        client.cache_dir = Path(options.cache_dir)  # the client downloads (prefetch) into the run's cache
    started = time.perf_counter()
    deadline = started + options.max_hours * 3600 if options.max_hours else None
    run_id = new_run_id("run")
    summary = RunSummary(run_id)
    lock = acquire_lock(db)
    live = None
    try:
        live = _start_live(db, run_id)
        with _open_writer(db) as store:
            runs = Runs(store)
            runs.mark_interrupted()  # runs that were killed: their process is gone
            runs.start("run", args or {}, run_id=run_id)
            live.progress(phase="crawling" if options.crawl else "queueing")
            live.snapshot(store.con, force=True)  # readers can read the DB at once
            queue = JobQueue(store, max_attempts=options.max_attempts, methods=methods_measured(near=options.near))
            failure: BaseException | None = None
            try:
                if options.crawl:
                    summary.crawl = crawl(store, client, filters, run_id=run_id).as_json()
                specs = [_spec(job, run_id) for job in queue.enqueue(run_id, options.retry_failed)]
                summary.queued = len(specs)
                with _benchmark_index(store, client, options, run_id) as index_dir:  # indexed once, read by every job
                    for spec in specs:
                        spec.benchmarks_index = index_dir
                    live.progress(phase="measuring", pending=len(specs), force=True)
                    live.snapshot(store.con, force=True)
                    _execute(queue, client, specs, options, summary, deadline, progress, started, live=live)
                    if index_dir is not None and not summary.left_pending:
                        # configs measured before this run, or by a run without these benchmarks
                        live.progress(phase="contamination", force=True)
                        summary.contamination = check_contamination(store, client, index_dir, run_id=run_id,
                                                                    workers=options.workers).counts()
                if options.crossleaks:
                    live.progress(phase="crossleaks", force=True)
                    summary.crossleaks = cross_step(store, options, run_id)
                    live.snapshot(store.con, force=True)
                live.progress(phase="reporting", force=True)
                summary.status = (RunStatus.TIMED_OUT if summary.left_pending else RunStatus.DONE).value
                if options.report_dir is not None:
                    final_run = {"run_id": run_id, "status": summary.status, "finished_at": now()}  # the report shows how the run ended
                    summary.report = [str(p) for p in _refresh_report(store, options.report_dir, final_run)]
            except BaseException as e:
                summary.status = (RunStatus.INTERRUPTED if isinstance(e, KeyboardInterrupt) else RunStatus.FAILED).value
                failure = e  # recorded with the run: its error class and one line
                raise
            finally:
                summary.seconds = time.perf_counter() - started
                with store.transaction():
                    queue.requeue_stale()
                    runs.finish(run_id, summary.status, summary.counts(), error=failure)
    finally:
        if live is not None:
            live.close()  # after the DB is closed: a reader that finds no snapshot then opens the DB
        lock.release()
    return summary


def _open_writer(db: str | Path, wait_s: float = 30.0) -> Store:
    """The DB read-write, waiting up to ``wait_s`` for readers that hold it (a ``status`` or a
    ``sql`` that opened it just before the run started) to let go."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            return Store(db)
        except DbLockedError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def _execute(queue: JobQueue, client, specs, options, summary, deadline, progress, started,
             live: livestate.LiveRun | None = None) -> None:
    from hubsurvey.survey.cache import GB, CacheBudget
    from hubsurvey.survey.executors import make_executor

    if not specs:
        return
    engine_threads = max(1, (os.cpu_count() or 1) // max(1, options.workers or os.cpu_count() or 1))
    todo: deque[JobSpec] = deque()
    for spec in specs:
        spec.roles_file = options.roles_file
        spec.endpoint = client.endpoint
        spec.cache_dir = str(client.cache_dir) if client.cache_dir else None
        spec.keep_cache = options.keep_cache
        spec.examples = options.examples
        spec.near = options.near
        spec.engine_options = {"threads": engine_threads, "memory_limit": f"{int(options.memory_mb * 0.6)}MB"}
        todo.append(spec)
    budget = CacheBudget(client.cache_dir, int(options.max_cache_gb * GB))
    executor = make_executor(client, dask=options.dask, workers=options.workers, job_timeout=options.job_timeout,
                             memory_mb=options.memory_mb, budget=budget)
    inflight: dict[Future, JobSpec] = {}
    try:
        while todo or inflight:
            while todo and len(inflight) < executor.capacity and not (deadline and time.perf_counter() > deadline):
                spec = todo.popleft()
                queue.mark_running(spec.job_id, summary.run_id)
                inflight[executor.submit(spec)] = spec
            if not inflight:
                break  # out of time: the rest stays pending
            done, _ = wait(list(inflight), timeout=1.0, return_when=FIRST_COMPLETED)
            for future in done:
                spec = inflight.pop(future)
                outcome: JobOutcome = future.result()
                status = queue.record(spec, outcome)
                if status is JobStatus.DONE:
                    summary.done += 1
                    summary.rows += len(outcome.rows)
                    if outcome.rows:  # a config's rows per split are on each of its result rows
                        summary.data_rows += sum(outcome.rows[0].get(f"rows_{s}") or 0 for s in ("train", "validation", "test"))
                    summary.measure_seconds += outcome.measure_seconds
                    summary.job_seconds += outcome.seconds
                elif status is JobStatus.PENDING:
                    summary.retried += 1
                    todo.append(spec)
                else:
                    summary.failed += 1
                if progress:
                    elapsed = time.perf_counter() - started
                    progress({"done": summary.done + summary.failed, "ok": summary.done, "failed": summary.failed,
                              "total": summary.queued, "rows_per_s": round(summary.data_rows / elapsed, 2) if elapsed else 0})
            if live:  # between transactions: at most once a second (progress), every few (snapshot)
                live.tick(queue.store.con, done=summary.done, failed=summary.failed, rows=summary.data_rows,
                          pending=len(todo) + len(inflight))
    finally:
        executor.close()
    summary.left_pending = len(todo)
    if live:  # the last job's results, for readers while the report renders
        live.progress(done=summary.done, failed=summary.failed, rows=summary.data_rows, pending=len(todo), force=True)
        live.snapshot(queue.store.con, force=True)


def cross_step(store: Store, options: RunOptions, run_id: str | None = None) -> dict[str, Any]:
    """The crossleaks step of a run: every test split against every other dataset's splits
    (:func:`hubsurvey.analysis.crossleaks.crossleaks`), within 60% of a worker's memory ceiling.

    The measurements are stored by then: a failure here is logged and kept in the run's counts
    (``{"error": one line}``), and the run goes on to its report; `hubsurvey crossleaks` retries it.
    """
    from hubsurvey.analysis.crossleaks import crossleaks

    try:
        return crossleaks(store, copy_threshold=options.copy_threshold,
                          memory_limit=f"{int(options.memory_mb * 0.6)}MB", run_id=run_id).as_json()
    except StoreError as e:
        log.warning("crossleaks failed: %s", one_line(e))
        return {"error": one_line(e)}


def _refresh_report(store: Store, out_dir: Path, final_run: dict[str, Any] | None = None) -> list[Path]:
    from hubsurvey.analysis.report import render_report

    return render_report(store, out_dir, final_run=final_run)


# --- contamination with benchmarks (bench-2026) ----------------------------------------------------

@contextmanager
def _benchmark_index(store: Store, client: HubClient, options: RunOptions, run_id: str) -> Iterator[str | None]:
    """The run's benchmark index, saved in a temporary folder that the jobs load (None: no
    benchmarks file). Indexing records each benchmark's revision (table ``benchmarks``)."""
    if not options.benchmarks:
        yield None
        return
    with tempfile.TemporaryDirectory(prefix="hubsurvey-benchmarks-") as tmp:
        index = index_benchmarks(store, client, options.benchmarks, run_id=run_id)
        yield str(index.save(Path(tmp) / "index"))


def index_benchmarks(store: Store, client: HubClient, benchmarks_file: str | Path | None, *,
                     run_id: str | None = None) -> Any:
    """Index the benchmarks of a file (None or 'default': the shipped one) through the Hub client and
    record them; a benchmark that cannot be indexed is recorded as failed, the others are used."""
    from hubsurvey import __version__
    from hubsurvey.survey import contamination as bench

    path = None if benchmarks_file in (None, "default") else benchmarks_file
    index, failed = bench.index_from_hub(bench.load_benchmarks(path), client, log=log)
    indexed_at = now()
    common = {"method": bench.METHOD, "method_version": bench.METHOD_VERSION, "tool_version": __version__,
              "indexed_at": indexed_at, "run_id": run_id}
    rows = [{"benchmark_id": d["id"], "benchmark_config": d["config"], "benchmark_split": d["split"],
             "text_columns": d["text_columns"], "revision_sha": d["revision_sha"], "parquet_sha": d["parquet_sha"],
             "items": d["items"], "short_items": d["short_items"], "status": "indexed", "error_message": None, **common}
            for d in index.describe()]
    rows += [{"benchmark_id": b.id, "benchmark_config": b.config, "benchmark_split": b.split,
              "text_columns": list(b.text_columns), "revision_sha": None, "parquet_sha": None, "items": None,
              "short_items": None, "status": "failed", "error_message": why, **common} for b, why in failed]
    store.record_benchmarks(rows)
    return index


@dataclass
class ContaminationSummary:
    checked: int = 0  # configs checked
    failed: list[str] = field(default_factory=list)  # one line each
    contaminated: int = 0  # (split, benchmark) rows with contaminated rows

    def counts(self) -> dict[str, Any]:
        return {"configs_checked": self.checked, "configs_failed": len(self.failed), "contaminated_pairs": self.contaminated}


def check_contamination(store: Store, client: HubClient, index: Any, *, run_id: str | None = None,
                        only_missing: bool = True, progress: Callable[[str], None] | None = None,
                        workers: int | None = None) -> ContaminationSummary:
    """Check the surveyed configs (``current_measurements`` read from the Hub) against a benchmark
    index (a ``BenchmarkIndex`` or a saved one's folder): each config's files are downloaded again
    through the job download path (pinned to the Parquet commit it was measured at), scanned and
    deleted, ``workers`` configs at a time (default: one per core; threads: the downloads wait on
    the network and the scan releases the GIL), each written by this thread as it is done.
    ``only_missing``: skip configs already checked against every benchmark at its revision."""
    from concurrent.futures import ThreadPoolExecutor

    from hubsurvey.survey import contamination as bench
    from hubsurvey.survey.jobs import error_outcome

    if not isinstance(index, bench.BenchmarkIndex):
        index = bench.load_index(index)
    checked = [(b.benchmark.id, b.benchmark.config, b.benchmark.split) for b in index.benchmarks]
    summary = ContaminationSummary()
    if not checked:
        return summary
    targets = store.records(
        """SELECT m.dataset_id, m.revision_sha, m.config, any_value(m.text_columns) AS text_columns,
                  any_value(m.parquet_sha) AS parquet_sha, any_value(d.configs) AS configs
           FROM current_measurements m JOIN datasets d USING (dataset_id)
           WHERE m.source = 'hub' GROUP BY m.dataset_id, m.revision_sha, m.config ORDER BY ALL""")
    revisions = {(b.benchmark.id, b.benchmark.config, b.benchmark.split): b.revision_sha for b in index.benchmarks}
    todo = []
    for t in targets:
        if only_missing:
            have = store.query(
                "SELECT DISTINCT benchmark_id, benchmark_config, benchmark_split, benchmark_revision FROM contamination "
                "WHERE dataset_id = $d AND revision_sha = $r AND config = $c",
                {"d": t["dataset_id"], "r": t["revision_sha"], "c": t["config"]})[1]
            if {(i, c, s) for i, c, s, rev in have if rev == revisions[(i, c, s)]} >= set(checked):
                continue
        todo.append(t)
    workers = max(1, workers or os.cpu_count() or 1)

    def check(t: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]] | None, str | None]:
        where = f"{t['dataset_id']} [{t['config']}]"
        if progress:
            progress(where)
        try:
            return t, _contamination_rows(t, client, index, run_id, threads=1 if workers > 1 else None), None
        except Exception as e:  # one config that cannot be read never stops the check
            return t, None, error_outcome(e, where).message or where

    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="contamination") as pool:
        for t, rows, error in pool.map(check, todo):  # in order; each config's rows in one write
            if rows is None:
                summary.failed.append(error or t["dataset_id"])
                continue
            store.replace_contamination(t["dataset_id"], t["revision_sha"], t["config"], checked, rows)
            summary.checked += 1
            summary.contaminated += sum(1 for r in rows if r["contaminated_rows"])
    return summary


def _contamination_rows(t: dict[str, Any], client: HubClient, index: Any, run_id: str | None,
                        threads: int | None) -> list[dict[str, Any]]:
    """One surveyed config's contamination rows: download its splits (the job path), scan, delete."""
    from hubsurvey.survey import contamination as bench
    from hubsurvey.survey.jobs import JobSpec, discard_downloads, download
    from hubsurvey.survey.sources import config_from_files

    configs = json.loads(t["configs"]) if isinstance(t["configs"], str) else (t["configs"] or {})
    files = {s: v["files"] for s, v in configs.get(t["config"], {}).items()}
    spec = JobSpec(f"{t['dataset_id']}@{t['revision_sha']}/{t['config']}", t["dataset_id"], t["revision_sha"],
                   t["config"], len(configs), files, endpoint=client.endpoint,
                   cache_dir=str(client.cache_dir) if client.cache_dir else None, parquet_sha=t["parquet_sha"])
    local = spec
    try:
        local = download(spec, client)
        data = config_from_files(spec.dataset_id, spec.config, spec.revision_sha, local.local_files or {})
        return bench.config_rows(data, list(t["text_columns"]), index, run_id=run_id, threads=threads)
    finally:
        discard_downloads(local)


def run_contamination(db: str | Path, client: HubClient, benchmarks_file: str | Path | None = None, *,
                      recheck: bool = False, progress: Callable[[str], None] | None = None,
                      workers: int | None = None) -> tuple[Any, ContaminationSummary]:
    """``hubsurvey contamination``: index the benchmarks, check every surveyed config (those not yet
    checked against them at their revisions, unless ``recheck``); recorded as a ``contamination`` run.
    Returns (the index, the summary)."""
    with Store(db) as store:
        runs = Runs(store)
        run_id = runs.start("contamination", {"benchmarks": str(benchmarks_file) if benchmarks_file else "default",
                                              "recheck": recheck})
        summary = ContaminationSummary()
        try:
            index = index_benchmarks(store, client, benchmarks_file, run_id=run_id)
            summary = check_contamination(store, client, index, run_id=run_id, only_missing=not recheck,
                                          progress=progress, workers=workers)
        except BaseException as e:
            runs.finish(run_id, RunStatus.INTERRUPTED if isinstance(e, KeyboardInterrupt) else RunStatus.FAILED,
                        summary.counts(), error=e)
            raise
        runs.finish(run_id, RunStatus.DONE, summary.counts())
    return index, summary


# --- status -------------------------------------------------------------------------------------------

def status(db: str | Path) -> dict[str, Any]:
    """A summary of the DB: last run, queue by status, failures by class, measured rows, and the
    live progress of a run in progress.

    While a run holds the DB, the figures come from its read snapshot (``snapshot`` says which run
    and when) and ``live`` holds its progress from the holder file (at most a second old). A run
    left ``running`` by a process that is gone (``kill -9``) is marked ``interrupted`` first, and
    its leftover holder file is reported under ``interrupted``, never as a run in progress.
    """
    info = livestate.read_holder(db)
    alive = livestate.holder_alive(info)
    store = Store.open_for_reading(db)
    if store.snapshot_of is None and Runs(store).stale():
        store.close()  # repair needs a write: the DB is free, since a read-only open of it succeeded
        with Store(db) as writer:
            Runs(writer).mark_interrupted()
        store = Store.open_for_reading(db)
    with store:
        snapshot = store.snapshot_of
        last = store.records("SELECT run_id, command, status, started_at, finished_at, counts FROM runs ORDER BY started_at DESC LIMIT 1")
        queue = dict(store.query("SELECT status, count(*) FROM jobs GROUP BY status ORDER BY status")[1])
        failures = store.records(
            "SELECT error_class, count(*) AS jobs, any_value(error_message) AS example FROM jobs "
            "WHERE status = 'failed' GROUP BY error_class ORDER BY jobs DESC, error_class"
        )
        datasets = dict(store.query("SELECT status, count(*) FROM datasets GROUP BY status")[1])
        measured = store.query("SELECT count(*), count(DISTINCT dataset_id) FROM current_measurements")[1][0]
    if last and isinstance(last[0]["counts"], str):  # a JSON column reads back as text: decode it once
        last[0]["counts"] = json.loads(last[0]["counts"])
    live = livestate.read_holder(db) if alive else None  # the freshest progress, read last
    return {
        "db": str(db),
        "running": f" ({livestate.describe_holder(live)})" if live else None,
        "live": live,
        "interrupted": info if info and not alive else None,
        "snapshot": {"run_id": snapshot["run_id"], "taken_at": snapshot["snapshot_at"]} if snapshot else None,
        "last_run": last[0] if last else None,
        "queue": queue,
        "failures": failures,
        "datasets": datasets,
        "measurements": {"rows": measured[0], "datasets": measured[1]},
    }

