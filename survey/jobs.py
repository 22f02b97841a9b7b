"""One survey job: download (when needed) and measure one (dataset, revision, config).

This is the function every executor runs: a local worker process or a Dask worker. It takes a
:class:`JobSpec` (plain data) and returns a :class:`~hubsurvey.core.queue.JobOutcome` (rows or an error); it never touches the results
DB and never receives a token (workers read ``HF_TOKEN`` from their own environment).
"""

from __future__ import annotations

import multiprocessing
import os
import threading
import time
import traceback
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from huggingface_hub.errors import RevisionNotFoundError

from hubsurvey.core.errors import HubsurveyError, InternalError, ParquetMovedError, scrub
from hubsurvey.core.figures import methods_measured
from hubsurvey.core.hub import HubClient, delete_files, is_transient
from hubsurvey.core.pacing import HubLimits
from hubsurvey.core.queue import JobOutcome, JobSettings, QueuedJob
from hubsurvey.core.roles import RoleOverrides
from hubsurvey.core.settings import Settings
from hubsurvey.core.splits import branch_layouts, refuse_two_layouts
from hubsurvey.survey.measure import measure_config, with_contamination_check
from hubsurvey.survey.semantic import SemanticRequest
from hubsurvey.survey.sources import config_from_files

MEMORY_EXIT_CODE = 86  # a worker that passed its memory ceiling exits with this code


@dataclass(frozen=True)
class JobSpec:
    """What a worker needs to measure one config: the job, its run's settings, and (once fetched)
    its files on disk. Plain data: it crosses process and host borders."""

    job: QueuedJob
    settings: JobSettings = field(default_factory=JobSettings)
    local_files: dict[str, list[str]] | None = None  # job.files, downloaded (after prefetch)

    @property
    def where(self) -> str:
        """``dataset [config]``: how messages name the job."""
        return f"{self.job.dataset_id} [{self.job.config}]"


def worker_started() -> None:
    """First thing in every worker process of a pool that runs :func:`run_job` (the local
    executor's, a Dask worker's child): its default start method becomes 'spawn'.

    A process forked by the forkserver inherits 'forkserver' as its default, and under any "fork"
    method numba guards the launch of its threads with a multiprocessing lock: a named semaphore,
    registered with the run's resource tracker and released only by the process's exit hooks. A
    worker that the pool ends hard (a job past its timeout, a pool stopped) never releases it, and
    the tracker then printed a leaked-semaphore warning at the run's end (seen after a first demo).
    A worker starts no process of its own, so nothing else depends on its default."""
    multiprocessing.set_start_method("spawn", force=True)


def download(spec: JobSpec, client: HubClient) -> JobSpec:
    """Fetch the job's files into the survey's cache, all from one commit of the Parquet branch.

    The commit is the job's ``parquet_sha`` when the crawl recorded it, else the branch's commit now
    (one call); either way every file of the job comes from that commit, which the returned spec keeps.
    """
    if spec.local_files is not None:  # already on disk
        return spec
    job = spec.job
    sha = job.parquet_sha or client.parquet_sha(job.dataset_id)

    def fetch(commit: str) -> dict[str, list[str]]:
        return {split: [str(client.download(job.dataset_id, path, commit)) for path in paths]
                for split, paths in job.files.items()}

    try:
        local = fetch(sha)
    except RevisionNotFoundError:
        if not job.parquet_sha:
            raise
        # The converter rewrote the branch since the crawl and the Hub no longer serves its commit:
        # the job's files are read at the branch's new commit (one API call), which the rows then
        # name, when it still holds them all
        sha, files = client.parquet_files(job.dataset_id)
        held = {f.path for f in files}
        missing = [path for paths in job.files.values() for path in paths if path not in held]
        if missing:
            raise ParquetMovedError(f"{spec.where}: the Parquet branch was rewritten since the crawl and no longer "
                                    f"holds {missing[0]!r}; the next crawl that lists it resolves it again") from None
        local = fetch(sha)
    return replace(spec, job=replace(job, parquet_sha=sha), local_files=local)


def job_bytes(spec: JobSpec, client: HubClient) -> int:
    """The job's files' total size: from the crawl, else from one tree listing of its commit
    (a dataset resolved by an older hubsurvey, which did not keep sizes)."""
    job = spec.job
    if job.bytes is not None:
        return job.bytes
    sha = job.parquet_sha or client.parquet_sha(job.dataset_id)
    sizes = {f.path: f.size for f in client.parquet_tree(job.dataset_id, revision=sha)}
    return sum(sizes.get(path, 0) for paths in job.files.values() for path in paths)


def job_client(settings: JobSettings, limits: HubLimits | None = None) -> HubClient:
    """The Hub client a job makes where it runs: the run's Hub settings whole, with this process's own
    token (none crosses the wire), stopping at the run's end, drawing on ``limits`` when the cluster
    shares them."""
    client = HubClient(settings.hub.with_worker_token()) if settings.hub is not None else HubClient()
    if settings.run_ends_at is not None:
        client.stop_after(max(1e-3, settings.run_ends_at - time.time()))
    client.share_limits(limits)
    return client


def discard_downloads(spec: JobSpec) -> None:
    """Delete the job's downloaded files (only those inside the survey cache) unless kept."""
    if spec.settings.keep_cache or not spec.local_files:
        return
    cache = Path(spec.settings.cache_dir) if spec.settings.cache_dir else Settings.from_env().cache_dir
    cache = cache.resolve()
    paths = [p for paths in spec.local_files.values() for p in paths if Path(p).resolve().is_relative_to(cache)]
    delete_files(paths)


def error_outcome(exc: BaseException, where: str) -> JobOutcome:
    """A failure as plain data: a stable class, a one-line message, and whether to retry."""
    if isinstance(exc, HubsurveyError):
        error_class, message = exc.error_class, str(exc)
    else:
        text = str(exc).strip().splitlines()
        name = type(exc).__name__
        message = f"{where}: {name}: {text[0] if text else ''}".rstrip(": ")
        # Hub, network and file-system errors keep their type as class; anything else is a bug.
        if isinstance(exc, OSError) or type(exc).__module__.split(".")[0] in ("huggingface_hub", "httpx2"):
            error_class = name
        else:
            error_class, message = "internal", str(InternalError.of(where, exc))
    return JobOutcome.failure(error_class, scrub(message)[:500], transient=is_transient(exc))


def run_job(spec: JobSpec, memory_mb: int | None = None) -> JobOutcome:
    """Measure one job; download first when the executor did not prefetch. ``memory_mb``: the
    worker exits if its resident memory passes this during the job (the local executor's ceiling)."""
    job, settings = spec.job, spec.settings
    started = time.perf_counter()
    watchdog = MemoryWatchdog(memory_mb) if memory_mb else None
    try:
        download_seconds = 0.0
        refuse_two_layouts(job.dataset_id, job.config, branch_layouts(p for ps in job.files.values() for p in ps))
        if spec.local_files is not None and not all(Path(p).exists() for ps in spec.local_files.values() for p in ps):
            # prefetched, then gone (an eviction, a clean-up racing with this download): fetch again
            spec = replace(spec, local_files=None)
        if spec.local_files is None:
            client = job_client(settings)
            with client.time_limit(settings.job_timeout):
                spec = download(spec, client)
            download_seconds = time.perf_counter() - started
        data = config_from_files(job.dataset_id, job.config, job.revision_sha, spec.local_files or {})
        result = measure_config(
            data,
            n_configs=job.n_configs,
            source="hub",
            overrides=RoleOverrides.load(settings.roles_file),
            run_id=settings.run_id,
            engine_options=settings.engine_options,
            examples=settings.examples,
            methods=list(methods_measured(near=settings.near)),
            semantic=SemanticRequest(settings.semantic_threshold, settings.semantic_model) if settings.semantic else None,
        )
        contamination, checked = _contamination(settings, data, result.roles.text_columns)
        with_contamination_check(result.rows, checked)
    except Exception as exc:  # every failure becomes data for the coordinator
        outcome = error_outcome(exc, spec.where)
        if outcome.error_class not in ("bad_input", "unreadable", "schema_mismatch", "gated") and not outcome.transient:
            outcome = replace(outcome, traceback=scrub(traceback.format_exc(limit=8)))  # a bug: where it happened
        return outcome
    finally:
        if watchdog:
            watchdog.stop()
        discard_downloads(spec)
    return JobOutcome.success(
        result.rows,
        examples=result.examples,
        seconds=time.perf_counter() - started,
        measure_seconds=result.seconds,
        download_seconds=download_seconds,
        parquet_sha=spec.job.parquet_sha,
        fingerprints=result.fingerprints,
        contamination=contamination,
        benchmarks_checked=checked,
    )


def _contamination(settings: JobSettings, data: Any, text_columns: Any) -> tuple[list[dict[str, Any]], list[tuple[str, str, str]]]:
    """Contamination with benchmarks, when the run has a benchmarks file: the config's splits,
    already on disk for the measurement, against the run's index."""
    if not settings.benchmarks_index:
        return [], []
    from hubsurvey.survey import contamination

    index = contamination.load_index(settings.benchmarks_index)
    rows = contamination.config_rows(data, text_columns, index, run_id=settings.run_id, threads=settings.engine_threads)
    return rows, [(b.benchmark.id, b.benchmark.config, b.benchmark.split) for b in index.benchmarks]


class MemoryWatchdog:
    """While a job runs, exit the process (code MEMORY_EXIT_CODE) if its RSS passes the ceiling.

    An address-space rlimit does not work here: DuckDB and Arrow reserve gigabytes of virtual
    memory they never touch. Resident memory is what a ceiling is for. The executor sees the
    worker die with that code and records the job as failed with ``memory_limit``.
    """

    def __init__(self, ceiling_mb: int, interval: float = 0.1):
        import psutil

        self._ceiling = ceiling_mb * 2**20
        self._process = psutil.Process()
        self._stopped = threading.Event()
        self._interval = interval
        self._check()
        threading.Thread(target=self._watch, name="memory-watchdog", daemon=True).start()

    def _check(self) -> None:
        if self._process.memory_info().rss > self._ceiling:
            os._exit(MEMORY_EXIT_CODE)

    def _watch(self) -> None:
        while not self._stopped.wait(self._interval):
            self._check()

    def stop(self) -> None:
        self._stopped.set()
