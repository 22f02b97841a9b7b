"""One survey job: download (when needed) and measure one (dataset, revision, config).

This is the function every executor runs: a local worker process or a Dask worker. It takes a
plain dict (the job spec) and returns a :class:`~hubsurvey.core.queue.JobOutcome` (rows or an error); it never touches the results
DB and never receives a token (workers read ``HF_TOKEN`` from their own environment).
"""

from __future__ import annotations

import os
import threading
import time
import traceback
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from hubsurvey.core.errors import HubsurveyError, InternalError, scrub
from hubsurvey.core.figures import DEFAULT_EXAMPLES, methods_measured
from hubsurvey.core.hub import HubClient, default_cache_dir, delete_files, is_transient
from hubsurvey.core.queue import JobOutcome
from hubsurvey.core.roles import RoleOverrides
from hubsurvey.survey.measure import measure_config
from hubsurvey.survey.sources import config_from_files

MEMORY_EXIT_CODE = 86  # a worker that passed its memory ceiling exits with this code


@dataclass
class JobSpec:
    """What a worker needs to measure one config. Plain data: it crosses process and host borders."""

    job_id: str
    dataset_id: str
    revision_sha: str
    config: str
    n_configs: int
    files: dict[str, list[str]]  # split (as the dataset names it) -> paths on the Parquet branch
    local_files: dict[str, list[str]] | None = None  # the same, downloaded (after prefetch)
    endpoint: str | None = None
    cache_dir: str | None = None  # the survey's download cache (None: HubClient's default)
    parquet_sha: str | None = None  # the Parquet branch commit to download (None: resolved once, at download)
    keep_cache: bool = False  # keep the downloaded files after measuring (default: delete them)
    bytes: int | None = None  # the files' total size, from the crawl (None: unknown; see job_bytes)
    roles_file: str | None = None
    run_id: str | None = None
    memory_mb: int | None = None  # the worker exits if its resident memory passes this during the job
    engine_options: dict[str, Any] = field(default_factory=dict)
    examples: int = DEFAULT_EXAMPLES  # examples stored per kind, profile and label column
    near: bool = True  # measure the near-duplicate figures (False: run --no-near)
    benchmarks_index: str | None = None  # a saved benchmark index (run --benchmarks): check contamination too

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def download(spec: JobSpec, client: HubClient) -> JobSpec:
    """Fetch the job's files into the survey's cache, all from one commit of the Parquet branch.

    The commit is ``spec.parquet_sha`` when the crawl recorded it, else the branch's commit now
    (one call); either way every file of the job comes from that commit, which is kept in the spec.
    """
    if spec.local_files is not None:  # already on disk
        return spec
    sha = spec.parquet_sha or client.parquet_sha(spec.dataset_id)
    local = {
        split: [str(client.download(spec.dataset_id, path, sha)) for path in paths]
        for split, paths in spec.files.items()
    }
    return JobSpec(**{**spec.as_dict(), "local_files": local, "parquet_sha": sha})


def job_bytes(spec: JobSpec, client: HubClient) -> int:
    """The job's files' total size: from the crawl, else from one tree listing of its commit
    (a dataset resolved by an older hubsurvey, which did not keep sizes)."""
    if spec.bytes is not None:
        return spec.bytes
    sha = spec.parquet_sha or client.parquet_sha(spec.dataset_id)
    sizes = {f.path: f.size for f in client.parquet_tree(spec.dataset_id, revision=sha)}
    return sum(sizes.get(path, 0) for paths in spec.files.values() for path in paths)


def discard_downloads(spec: JobSpec) -> None:
    """Delete the job's downloaded files (only those inside the survey cache) unless kept."""
    if spec.keep_cache or not spec.local_files:
        return
    cache = Path(spec.cache_dir) if spec.cache_dir else default_cache_dir()
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


def run_job(spec_dict: dict[str, Any]) -> JobOutcome:
    """Measure one job spec; download first when the executor did not prefetch."""
    spec = JobSpec(**spec_dict)
    where = f"{spec.dataset_id} [{spec.config}]"
    started = time.perf_counter()
    watchdog = MemoryWatchdog(spec.memory_mb) if spec.memory_mb else None
    try:
        download_seconds = 0.0
        if spec.local_files is None:
            spec = download(spec, HubClient(endpoint=spec.endpoint, cache_dir=spec.cache_dir))
            download_seconds = time.perf_counter() - started
        data = config_from_files(spec.dataset_id, spec.config, spec.revision_sha, spec.local_files or {})
        result = measure_config(
            data,
            n_configs=spec.n_configs,
            source="hub",
            overrides=RoleOverrides.load(spec.roles_file),
            run_id=spec.run_id,
            engine_options=spec.engine_options,
            examples=spec.examples,
            methods=list(methods_measured(near=spec.near)),
        )
        contamination, checked = _contamination(spec, data, result.roles.text_columns)
    except Exception as exc:  # every failure becomes data for the coordinator
        outcome = error_outcome(exc, where)
        if outcome.error_class not in ("bad_input", "unreadable", "schema_mismatch", "gated") and not outcome.transient:
            outcome.traceback = scrub(traceback.format_exc(limit=8))
        return outcome
    finally:
        if watchdog:
            watchdog.stop()
        discard_downloads(spec)
    outcome = JobOutcome.success(
        result.rows,
        examples=result.examples,
        seconds=time.perf_counter() - started,
        measure_seconds=result.seconds,
        download_seconds=download_seconds,
        parquet_sha=spec.parquet_sha,
        fingerprints=result.fingerprints,
    )
    outcome.contamination, outcome.benchmarks_checked = contamination, checked
    return outcome


def _contamination(spec: JobSpec, data: Any, text_columns: Any) -> tuple[list[dict[str, Any]], list[tuple[str, str, str]]]:
    """Contamination with benchmarks, when the run has a benchmarks file: the config's
    splits, already on disk for the measurement, against the run's index."""
    if not spec.benchmarks_index:
        return [], []
    from hubsurvey.survey import contamination

    index = contamination.load_index(spec.benchmarks_index)
    rows = contamination.config_rows(data, text_columns, index, run_id=spec.run_id,
                                     threads=spec.engine_options.get("threads"))
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
