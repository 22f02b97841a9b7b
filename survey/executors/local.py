"""``run --executor local`` (the default): worker processes on this machine.

A pool of worker processes (pebble, for per-job timeouts and killing a stuck worker), fed by a
small thread pool in the coordinator that downloads the next jobs' files while the workers measure
(prefetch). With a :class:`~hubsurvey.survey.cache.CacheBudget`, each download first reserves its
room, so the cache never goes over the budget.
"""

from __future__ import annotations

import os
from concurrent.futures import Future, ThreadPoolExecutor
from typing import ClassVar

from hubsurvey.core.hub import HubClient
from hubsurvey.core.queue import JobOutcome
from hubsurvey.core.steps import RunContext
from hubsurvey.survey.cache import GB, CacheBudget
from hubsurvey.survey.executors.base import Inflight, measured_outcome, settle
from hubsurvey.survey.executors.forkserver import start_forkserver
from hubsurvey.survey.jobs import (
    JobSpec,
    discard_downloads,
    download,
    error_outcome,
    job_bytes,
    run_job,
    worker_started,
)


class LocalExecutor(Inflight):
    """Local worker processes, one per core by default, with prefetching downloads."""

    name: ClassVar[str] = "local"

    def __init__(self, client: HubClient, *, workers: int | None = None, job_timeout: float = 1800.0, memory_mb: int = 4096,
                 budget: CacheBudget | None = None):
        from pebble import ProcessPool

        super().__init__()
        self.workers = workers or os.cpu_count() or 1
        self.client = client
        self.job_timeout = job_timeout
        self.memory_mb = memory_mb
        self.budget = budget
        # the workers come from a fork server, not a fork of this process (forkserver.py says why)
        context = start_forkserver(["hubsurvey.survey.jobs"])
        self._pool = ProcessPool(max_workers=self.workers, context=context, initializer=worker_started)
        self._stopping = False  # close(cancel=True) began: jobs still arriving are not started
        # Downloads are I/O: a few threads keep the workers fed; the client paces them.
        self._downloads = ThreadPoolExecutor(max_workers=max(2, self.workers), thread_name_prefix="prefetch")

    @classmethod
    def for_run(cls, ctx: RunContext) -> LocalExecutor:
        o = ctx.options
        budget = CacheBudget(ctx.client.cache_dir, int(o.max_cache_gb * GB))
        return cls(ctx.client, workers=o.workers, job_timeout=o.job_timeout, memory_mb=o.memory_mb, budget=budget)

    def start(self, spec: JobSpec) -> Future[JobOutcome]:
        outer: Future[JobOutcome] = Future()
        where, job_id = spec.where, spec.job.job_id
        fetched: list[JobSpec] = []
        if self.budget is not None:
            # When the job ends, however it ends: its files go (a killed worker could not delete
            # them) unless kept, and its room in the budget is given back.
            def ended(_f: Future) -> None:
                for local in fetched:
                    discard_downloads(local)
                if self.budget is not None:
                    self.budget.release(job_id)

            outer.add_done_callback(ended)

        def fetch(spec: JobSpec) -> JobSpec:
            with self.client.time_limit(self.job_timeout):  # --job-timeout bounds the download too
                if self.budget is None:
                    return download(spec, self.client)
                self.budget.admit(job_id, spec.job.dataset_id, job_bytes(spec, self.client))
                try:
                    local = download(spec, self.client)  # a failed download's partial files are evictable once it ends
                finally:
                    self.budget.downloaded(job_id)
                fetched.append(local)
                return local

        def measured(inner: Future) -> None:
            settle(outer, measured_outcome(inner, where, self.job_timeout, self.memory_mb))

        def downloaded(f: Future) -> None:
            try:
                local = f.result()
            except Exception as e:
                settle(outer, error_outcome(e, where))
                return
            if self._stopping:
                settle(outer, JobOutcome.failure("interrupted", f"{where}: the run was interrupted", transient=True))
                return
            try:
                inner = self._pool.schedule(run_job, args=(local, self.memory_mb), timeout=self.job_timeout)
            except Exception as e:  # a pool stopped or broken under this callback (its thread has no one to tell)
                settle(outer, error_outcome(e, where))
                return
            inner.add_done_callback(measured)

        self._downloads.submit(fetch, spec).add_done_callback(downloaded)
        return outer

    def close(self, *, cancel: bool = False) -> None:
        """Wait for the jobs in flight, or with ``cancel`` (an interrupted run) end them now: the
        downloads in flight stop, the workers are terminated (they are pure: nothing of theirs is
        half-written), and their jobs stay pending for the next run."""
        if not cancel:
            self._downloads.shutdown(wait=True, cancel_futures=True)
            self._pool.close()
            self._pool.join()
            return
        self._stopping = True
        self.client.stop_after(1e-3)  # a download in flight ends as a timeout, at its next read
        self._pool.stop()
        self._end_workers()
        self._downloads.shutdown(wait=True, cancel_futures=True)
        self._pool.join()
        self.client.stop_after(None)  # the client may serve again (the run's bound, if any, is the run's to set)

    def _end_workers(self) -> None:
        """Terminate every worker once the pool has stopped starting new ones, before it closes its
        channels.

        pebble's manager replaces a worker it stopped (a cancelled job's) until it sees the pool
        stopped, and its stop closes the channels before it ends the workers. Closing them frees
        their locks, whose named semaphores a worker still starting opens by name: that worker then
        printed a ``FileNotFoundError`` traceback on the run's stderr after the one-line
        interruption. Ended first, a starting worker dies silently of SIGTERM. (pebble 5's
        attributes; without them pebble's own stop does it, as before.)"""
        loop = getattr(self._pool, "_pool_manager_loop", None)
        manager = getattr(getattr(self._pool, "_pool_manager", None), "worker_manager", None)
        workers = getattr(manager, "workers", None)
        if loop is None or not isinstance(workers, dict):
            return
        loop.join()  # the pool is stopped: its manager starts no worker after its current turn
        started = list(workers.values())
        for worker in started:
            worker.terminate()
        for worker in started:
            worker.join(5)  # whatever is left, pebble's stop kills
