"""The job queue: every job transition, one method each, over the store's ``jobs`` table.

A job is one ``dataset@sha/config``. Its life (the model is the Hugging Face dataset-viewer queue):

    pending ──mark_running──▶ running ──record──▶ done
       ▲                         │       └──────▶ failed ──(transient, or --retry-failed)──▶ pending
       └──── requeue_stale ──────┘ (a run that stopped, or was killed, with the job in flight)
    pending ──supersede──▶ superseded (the dataset moved to a newer sha before it ran)

Attempts are counted when an attempt *ends* (``record``), so a job killed with its run does not
lose one. ``max_attempts`` bounds the attempts of one run; a transient failure that used them up is
retried by the next run, and ``retry_failed`` puts failures of the given classes back in the queue.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from hubsurvey.core import figures
from hubsurvey.core.errors import ParquetMovedError
from hubsurvey.core.options import DEFAULT_SEMANTIC_THRESHOLD
from hubsurvey.core.settings import Settings
from hubsurvey.core.splits import SPLIT_ALIASES
from hubsurvey.core.store import FINGERPRINT_HASH, Store, insert, now

#: error classes that are transient whatever the error said (a worker process that died)
TRANSIENT_CLASSES = frozenset({"worker_died"})


class JobStatus(StrEnum):
    """A job's status; the values are the strings stored in ``jobs.status``."""

    PENDING = "pending"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"
    SUPERSEDED = "superseded"

    def __str__(self) -> str:
        return self.value


@dataclass
class JobOutcome:
    """What one attempt of a job gave: its rows, or why it failed. Plain data (crosses processes)."""

    ok: bool
    rows: list[dict[str, Any]] = field(default_factory=list)
    error_class: str | None = None
    message: str | None = None
    transient: bool = False
    traceback: str | None = None
    seconds: float = 0.0  # wall time of the attempt
    measure_seconds: float = 0.0
    download_seconds: float = 0.0
    parquet_sha: str | None = None  # the Parquet-branch commit every file was downloaded from
    examples: list[dict[str, Any]] = field(default_factory=list)  # rows of the examples table
    #: per canonical split, a pyarrow table (row int64, hash uint64): each row's normalized text key
    #: hash, written as Parquet by the store (``Store.replace_measurements``); None: not measured
    fingerprints: dict[str, Any] | None = None
    # contamination with benchmarks: rows of the contamination table, and the benchmarks checked
    # ((id, config, split) each) when the run has a benchmarks file
    contamination: list[dict[str, Any]] = field(default_factory=list)
    benchmarks_checked: list[tuple[str, str, str]] = field(default_factory=list)

    @classmethod
    def success(cls, rows: list[dict[str, Any]], *, seconds: float, measure_seconds: float = 0.0,
                download_seconds: float = 0.0, parquet_sha: str | None = None,
                examples: list[dict[str, Any]] | None = None, fingerprints: dict[str, Any] | None = None,
                contamination: list[dict[str, Any]] | None = None,
                benchmarks_checked: list[tuple[str, str, str]] | None = None) -> JobOutcome:
        return cls(True, rows, seconds=seconds, measure_seconds=measure_seconds, download_seconds=download_seconds,
                   parquet_sha=parquet_sha, examples=examples or [], fingerprints=fingerprints,
                   contamination=contamination or [], benchmarks_checked=benchmarks_checked or [])

    @classmethod
    def failure(cls, error_class: str, message: str, *, transient: bool = False, traceback: str | None = None) -> JobOutcome:
        return cls(False, error_class=error_class, message=message, transient=transient, traceback=traceback)

    @property
    def retryable(self) -> bool:
        """Whether another attempt may succeed (network, 5xx, a dead worker)."""
        return not self.ok and (self.transient or self.error_class in TRANSIENT_CLASSES)


@dataclass(frozen=True)
class QueuedJob:
    """A job taken from the queue: what to measure. With the run's :class:`JobSettings` it is all
    a worker needs (``hubsurvey.survey.jobs.JobSpec`` holds the two)."""

    job_id: str
    dataset_id: str
    revision_sha: str
    config: str
    n_configs: int
    files: dict[str, list[str]]  # split (as the dataset names it) -> paths on the Parquet branch
    parquet_sha: str | None = None  # the Parquet-branch commit the crawl resolved: the files to download
    bytes: int | None = None  # the files' total size (None: not known, from a crawl before sizes were kept)


@dataclass(frozen=True)
class JobSettings:
    """How every job of one run is measured: built once per run, from its options, shared by its jobs.

    Plain data: it crosses process and host borders with each job.
    """

    run_id: str | None = None
    #: the run's Hub settings (endpoint, plan, rates, quotas, deadline, drip floor, breaker, cache), whole;
    #: pickled without the token, which each worker takes from its own environment (None: the worker's
    #: environment alone, as a command run on the worker would read it)
    hub: Settings | None = None
    run_ends_at: float | None = None  # the run's end (--max-hours), as a Unix time: every worker's requests stop there
    job_timeout: float | None = None  # seconds one job may take, its downloads included (None: no limit)
    memory_mb: int | None = None  # one job's memory ceiling where the executor runs it in a child process
    keep_cache: bool = False  # keep the downloaded files after measuring (default: delete them)
    roles_file: str | None = None
    examples: int = figures.DEFAULT_EXAMPLES  # examples stored per kind, profile and label column
    near: bool = True  # measure the near-duplicate figures (False: run --no-near)
    semantic: bool = False  # list paraphrase candidates too (run --semantic)
    semantic_threshold: float = DEFAULT_SEMANTIC_THRESHOLD  # their cosine threshold (run --semantic-threshold)
    semantic_model: str | None = None  # a model2vec folder or cached model id (None: wordllama's own weights)
    engine_threads: int | None = None  # threads of one job's engine (None: DuckDB's default)
    engine_memory_limit: str | None = None  # one job's engine memory limit, e.g. '2457MB'
    benchmarks_index: str | None = None  # a saved benchmark index (run --benchmarks): check contamination too

    @property
    def cache_dir(self) -> str | None:
        """The survey's download cache (None: the environment's default)."""
        return str(self.hub.cache_dir) if self.hub is not None else None

    @property
    def engine_options(self) -> dict[str, Any]:
        """The engine's keyword arguments (``Engine(data, **engine_options)``)."""
        options: dict[str, Any] = {}
        if self.engine_threads is not None:
            options["threads"] = self.engine_threads
        if self.engine_memory_limit is not None:
            options["memory_limit"] = self.engine_memory_limit
        return options


class JobQueue:
    """Every transition of the ``jobs`` table. Only the coordinator of a run uses it."""

    def __init__(self, store: Store, *, max_attempts: int = 3, methods: dict[str, int] | None = None):
        self.store = store
        self.max_attempts = max_attempts
        self.methods = figures.registered_methods() if methods is None else methods  # what this run measures
        self._run_attempts: dict[str, int] = {}  # attempts ended in this run, per job

    # --- filling the queue -------------------------------------------------------------------------

    def enqueue(self, run_id: str, retry_failed: Iterable[str] | None = None, *,
                datasets: Sequence[str] | None = None) -> list[QueuedJob]:
        """Queue every eligible (dataset, config) not yet measured at its current sha; return the
        pending jobs, in dataset order.

        Also puts back: jobs a stopped run left running (``requeue_stale``), transient failures,
        and, with ``retry_failed``, failures of those classes (an empty collection: every class).

        ``datasets``: only these, just written by a crawl running beside the jobs; nothing is put
        back (the run's own jobs may be running).
        """
        where, bound = "", {}
        if datasets is not None:
            where, bound = " AND dataset_id IN (SELECT unnest($ids::VARCHAR[]))", {"ids": list(datasets)}
        records = self.store.records(
            "SELECT dataset_id, sha, configs, parquet_sha FROM datasets WHERE status = 'eligible' AND sha IS NOT NULL"
            f"{where} ORDER BY dataset_id", bound or None)
        jobs: list[QueuedJob] = []
        with self.store.transaction() as con:
            if datasets is None:
                self.requeue_stale()
                self.requeue_failed(retry_failed)
                self.requeue_outdated()
                self.requeue_moved()
                existing = {r[0]: r[1] for r in con.execute("SELECT job_id, status FROM jobs").fetchall()}
            else:
                existing = {r[0]: r[1] for r in con.execute(
                    "SELECT job_id, status FROM jobs WHERE dataset_id IN (SELECT unnest($ids::VARCHAR[]))", bound).fetchall()}
            for d in records:
                configs = json.loads(d["configs"]) if isinstance(d["configs"], str) else (d["configs"] or {})
                for config, splits in sorted(configs.items()):
                    kept = {s: v for s, v in splits.items() if SPLIT_ALIASES.get(s.lower())}
                    files = {s: v["files"] for s, v in kept.items()}
                    sizes = [v.get("bytes") for v in kept.values()]
                    size = sum(sizes) if all(isinstance(b, int) for b in sizes) else None
                    if not any(SPLIT_ALIASES.get(s.lower()) == "test" for s in files):
                        continue
                    job_id = f"{d['dataset_id']}@{d['sha']}/{config}"
                    status = existing.get(job_id)
                    if status is None:
                        insert(con, "jobs", {"job_id": job_id, "dataset_id": d["dataset_id"], "revision_sha": d["sha"],
                                             "config": config, "status": JobStatus.PENDING.value, "attempts": 0,
                                             "queued_at": now(), "run_id": run_id, "parquet_sha": d["parquet_sha"]})
                    elif status != JobStatus.PENDING:
                        continue  # done, or failed for good
                    jobs.append(QueuedJob(job_id, d["dataset_id"], d["sha"], config, len(configs), files,
                                          d["parquet_sha"], size))
            self.supersede(datasets)
        return jobs

    def requeue_stale(self) -> int:
        """Jobs left ``running`` by a run that stopped go back to pending. Their attempt was never
        counted (attempts count when they end), so none is lost."""
        return self._set_status(JobStatus.PENDING, "status = $from", {"from": JobStatus.RUNNING.value})

    def requeue_outdated(self) -> int:
        """Done jobs whose rows lack a method this run measures, or hold an older version of it
        (measured before a method was added or changed), go back to pending, so a rerun fills the
        new figures. Rows holding more methods than asked (``--no-near`` after a full run) stay.
        So do jobs whose test split has no fingerprint file at their revision (measured before
        fingerprints were kept, or under another hash scheme): leaks across datasets need them."""
        wanted = self.methods
        outdated = [
            job_id
            for job_id, methods in self.store.query(
                "SELECT DISTINCT dataset_id || '@' || revision_sha || '/' || config, methods::VARCHAR "
                "FROM measurements WHERE source = 'hub'"
            )[1]
            if methods is None or any(json.loads(methods).get(m) != v for m, v in wanted.items())
        ]
        if self.store.path != ":memory:" and figures.EXACT_METHOD in wanted:
            outdated += [r[0] for r in self.store.query(
                "SELECT DISTINCT m.dataset_id || '@' || m.revision_sha || '/' || m.config FROM measurements m "
                "WHERE m.source = 'hub' AND NOT EXISTS (SELECT 1 FROM fingerprints f WHERE f.dataset_id = m.dataset_id "
                "AND f.config = m.config AND f.revision_sha = m.revision_sha AND f.split = 'test' AND f.hash = $h)",
                {"h": FINGERPRINT_HASH})[1]]
        if not outdated:
            return 0
        return self._set_status(JobStatus.PENDING, "status = $from AND list_contains($ids, job_id)",
                                {"from": JobStatus.DONE.value, "ids": outdated})

    def requeue_failed(self, retry_failed: Iterable[str] | None = None) -> int:
        """Failed jobs back to pending: transient ones always (the next run retries them), and
        those whose class is in ``retry_failed`` (empty: every class)."""
        where = "status = $from AND (transient"
        params: dict[str, Any] = {"from": JobStatus.FAILED.value}
        if retry_failed is not None:
            classes = list(retry_failed)
            if classes:
                where += " OR list_contains($classes, error_class)"
                params["classes"] = classes
            else:
                where += " OR true"
        return self._set_status(JobStatus.PENDING, where + ")", params)

    def requeue_moved(self) -> int:
        """Jobs that failed because the Parquet branch was rewritten without the files they were
        queued with (``parquet_moved``) go back to pending once a crawl has resolved the dataset at
        another commit: they download its files now."""
        return self._set_status(JobStatus.PENDING, "status = $from AND error_class = $moved AND EXISTS (SELECT 1 FROM datasets d "
                                "WHERE d.dataset_id = jobs.dataset_id AND d.sha = jobs.revision_sha AND d.resolved_sha IS NOT NULL "
                                "AND d.parquet_sha IS DISTINCT FROM jobs.parquet_sha)",
                                {"from": JobStatus.FAILED.value, "moved": ParquetMovedError.error_class})

    def supersede(self, datasets: Sequence[str] | None = None) -> int:
        """Pending jobs of an older revision will never run: the dataset has moved on. ``datasets``:
        only theirs (a crawl beside the jobs wrote just these)."""
        where = "status = $from AND NOT EXISTS (SELECT 1 FROM datasets d WHERE d.dataset_id = jobs.dataset_id AND d.sha = jobs.revision_sha)"
        params: dict[str, Any] = {"from": JobStatus.PENDING.value}
        if datasets is not None:
            where += " AND dataset_id IN (SELECT unnest($ids::VARCHAR[]))"
            params["ids"] = list(datasets)
        return self._set_status(JobStatus.SUPERSEDED, where, params)

    # --- running -----------------------------------------------------------------------------------

    def mark_running(self, job_id: str, run_id: str) -> bool:
        """Take a pending job; False when it is no longer pending (superseded by a newer revision
        that a crawl running beside the jobs found since it was queued)."""
        with self.store.transaction() as con:
            taken = con.execute(
                "UPDATE jobs SET status = $s, started_at = $t, run_id = $r WHERE job_id = $j AND status = $p RETURNING job_id",
                {"s": JobStatus.RUNNING.value, "t": now(), "r": run_id, "j": job_id, "p": JobStatus.PENDING.value},
            ).fetchall()
        return bool(taken)

    def record(self, job: QueuedJob, outcome: JobOutcome, *, run_id: str | None = None) -> JobStatus:
        """Write one attempt's outcome (of run ``run_id``): its rows, fingerprints and contamination
        rows (one write each) and ``done`` in one transaction, or the failure.

        Returns the job's new status: ``pending`` when a transient failure has attempts left in this
        run (the caller submits it again), else ``done`` or ``failed``.
        """
        tries = self._run_attempts[job.job_id] = self._run_attempts.get(job.job_id, 0) + 1
        finished = now()
        with self.store.transaction() as con:
            if outcome.ok:
                # every row says which Parquet-branch commit it measured (the one the files came from)
                rows = [{**row, "parquet_sha": outcome.parquet_sha} for row in outcome.rows] if outcome.parquet_sha else outcome.rows
                self.store.replace_measurements(job.dataset_id, job.revision_sha, job.config, rows, outcome.examples,
                                                fingerprints=outcome.fingerprints, run_id=run_id)
                if outcome.benchmarks_checked:  # contamination with benchmarks: in the same transaction
                    self.store.replace_contamination(job.dataset_id, job.revision_sha, job.config,
                                                     outcome.benchmarks_checked, outcome.contamination)
                con.execute(
                    "UPDATE jobs SET status = $st, attempts = attempts + 1, error_class = NULL, error_message = NULL, "
                    "transient = NULL, finished_at = $t, seconds = $s, parquet_sha = coalesce($p, parquet_sha) WHERE job_id = $j",
                    {"st": JobStatus.DONE.value, "t": finished, "s": outcome.seconds, "p": outcome.parquet_sha, "j": job.job_id},
                )
                return JobStatus.DONE
            status = JobStatus.PENDING if outcome.retryable and tries < self.max_attempts else JobStatus.FAILED
            if outcome.error_class == ParquetMovedError.error_class:
                # the files the crawl resolved are gone from the branch: the next crawl that lists the
                # dataset resolves it again (as if its sha had changed), and the job is queued anew
                con.execute("UPDATE datasets SET resolved_sha = NULL WHERE dataset_id = $d AND sha = $s",
                            {"d": job.dataset_id, "s": job.revision_sha})
            con.execute(
                "UPDATE jobs SET status = $st, attempts = attempts + 1, error_class = $c, error_message = $m, "
                "transient = $tr, finished_at = $t WHERE job_id = $j",
                {"st": status.value, "c": outcome.error_class, "m": outcome.message,
                 "tr": outcome.retryable, "t": finished, "j": job.job_id},
            )
        return status

    # --- reading -----------------------------------------------------------------------------------

    def counts(self) -> dict[str, int]:
        return dict(self.store.query("SELECT status, count(*) FROM jobs GROUP BY status ORDER BY status")[1])

    def _set_status(self, status: JobStatus, where: str, params: dict[str, Any]) -> int:
        with self.store.transaction() as con:
            changed = con.execute(f"UPDATE jobs SET status = $to WHERE {where}", {"to": status.value, **params}).fetchone()
        return int(changed[0]) if changed else 0
