"""Executors: where jobs run. Interchangeable; each turns a JobSpec into a Future of a JobOutcome.

- ``LocalExecutor``: a pool of worker processes on this machine (pebble, for per-job timeouts and
  killing a stuck worker), fed by a small thread pool in the coordinator that downloads the next
  jobs' files while the workers measure (prefetch). With a :class:`~hubsurvey.survey.cache.CacheBudget`,
  each download first reserves its room, so the cache never goes over the budget.
- ``DaskExecutor``: a dask.distributed cluster; its workers download and measure themselves (each
  job deletes its files after measuring unless ``keep_cache``; the budget is not coordinated there).

Results always come back to the coordinator, the only process that writes to DuckDB.
"""

from __future__ import annotations

import os
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from hubsurvey.core.hub import HubClient
from hubsurvey.core.queue import JobOutcome
from hubsurvey.survey.cache import CacheBudget
from hubsurvey.survey.jobs import (
    MEMORY_EXIT_CODE,
    JobSpec,
    discard_downloads,
    download,
    error_outcome,
    job_bytes,
    run_job,
)


def _set(outer: Future, result: JobOutcome) -> None:
    if not outer.done():
        outer.set_result(result)


class _Executor:
    workers: int

    @property
    def capacity(self) -> int:
        """Jobs kept in flight: one running per worker, and one more waiting (or downloading)."""
        return self.workers * 2


class LocalExecutor(_Executor):
    """Local worker processes, one per core by default, with prefetching downloads."""

    name = "local"

    def __init__(self, client: HubClient, *, workers: int | None = None, job_timeout: float = 1800.0, memory_mb: int = 4096,
                 budget: CacheBudget | None = None):
        import multiprocessing

        from pebble import ProcessPool

        self.workers = workers or os.cpu_count() or 1
        self.client = client
        self.job_timeout = job_timeout
        self.memory_mb = memory_mb
        self.budget = budget
        # forkserver, not fork: forking a coordinator that runs threads (downloads, a Dask client,
        # tqdm) can hand the child a lock held by a thread that does not exist there, and hang it.
        # The server preloads the job module once, so workers start without re-importing DuckDB.
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload(["hubsurvey.survey.jobs"])
        self._pool = ProcessPool(max_workers=self.workers, context=context)
        # Downloads are I/O: a few threads keep the workers fed; the client paces them.
        self._downloads = ThreadPoolExecutor(max_workers=max(2, self.workers), thread_name_prefix="prefetch")

    def submit(self, spec: JobSpec) -> Future:
        outer: Future = Future()
        where = f"{spec.dataset_id} [{spec.config}]"
        fetched: list[JobSpec] = []
        if self.budget is not None:
            # When the job ends, however it ends: its files go (a killed worker could not delete
            # them) unless kept, and its room in the budget is given back.
            def ended(_f: Future) -> None:
                for local in fetched:
                    discard_downloads(local)
                if self.budget is not None:
                    self.budget.release(spec.job_id)

            outer.add_done_callback(ended)

        def fetch(spec: JobSpec) -> JobSpec:
            with self.client.time_limit(self.job_timeout):  # --job-timeout bounds the download too
                if self.budget is None:
                    return download(spec, self.client)
                self.budget.admit(spec.job_id, spec.dataset_id, job_bytes(spec, self.client))
                try:
                    local = download(spec, self.client)  # a failed download's partial files are evictable once it ends
                finally:
                    self.budget.downloaded(spec.job_id)
                fetched.append(local)
                return local

        def measured(inner: Future) -> None:
            from concurrent.futures import TimeoutError as FutureTimeout

            from pebble import ProcessExpired

            try:
                _set(outer, inner.result())
            except FutureTimeout:
                _set(outer, JobOutcome.failure("timeout", f"{where}: took longer than {self.job_timeout:g} s"))
            except ProcessExpired as e:
                if e.exitcode == MEMORY_EXIT_CODE:
                    _set(outer, JobOutcome.failure(
                        "memory_limit", f"{where}: worker passed its memory ceiling of {self.memory_mb} MB"))
                else:
                    _set(outer, JobOutcome.failure(
                        "worker_died", f"{where}: worker process died (exit code {e.exitcode})", transient=True))
            except Exception as e:  # pragma: no cover - pebble's own failures
                _set(outer, error_outcome(e, where))

        def downloaded(f: Future) -> None:
            try:
                local = f.result()
            except Exception as e:
                _set(outer, error_outcome(e, where))
                return
            job = {**local.as_dict(), "memory_mb": self.memory_mb}
            self._pool.schedule(run_job, args=(job,), timeout=self.job_timeout).add_done_callback(measured)

        self._downloads.submit(fetch, spec).add_done_callback(downloaded)
        return outer

    def close(self) -> None:
        self._downloads.shutdown(wait=True, cancel_futures=True)
        self._pool.close()
        self._pool.join()


class DaskExecutor(_Executor):
    """Jobs on a dask.distributed cluster: the workers download and measure.

    Dask cannot kill a running task, so the per-job timeout and memory ceiling are left to the
    cluster's own worker settings (``--memory-limit`` of dask workers).
    """

    name = "dask"

    def __init__(self, address: Any):
        from distributed import Client

        self._client = address if hasattr(address, "submit") else Client(address)
        self._owns_client = not hasattr(address, "submit")
        self.workers = len(self._client.scheduler_info().get("workers", {})) or 1

    def submit(self, spec: JobSpec) -> Future:
        outer: Future = Future()
        where = f"{spec.dataset_id} [{spec.config}]"
        future = self._client.submit(run_job, spec.as_dict(), pure=False)

        def done(f: Any) -> None:
            try:
                _set(outer, f.result())
            except Exception as e:  # a lost worker, a cancelled task
                _set(outer, error_outcome(e, where))

        future.add_done_callback(done)
        return outer

    def close(self) -> None:
        if self._owns_client:
            self._client.close()


def make_executor(client: HubClient, *, dask: Any = None, workers: int | None = None, job_timeout: float = 1800.0,
                  memory_mb: int = 4096, budget: CacheBudget | None = None) -> LocalExecutor | DaskExecutor:
    if dask:
        return DaskExecutor(dask)
    return LocalExecutor(client, workers=workers, job_timeout=job_timeout, memory_mb=memory_mb, budget=budget)

