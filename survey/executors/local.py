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
from hubsurvey.survey.jobs import (
    JobSpec,
    discard_downloads,
    download,
    error_outcome,
    job_bytes,
    run_job,
)


class LocalExecutor(Inflight):
    """Local worker processes, one per core by default, with prefetching downloads."""

    name: ClassVar[str] = "local"

    def __init__(self, client: HubClient, *, workers: int | None = None, job_timeout: float = 1800.0, memory_mb: int = 4096,
                 budget: CacheBudget | None = None):
        import multiprocessing

        from pebble import ProcessPool

        super().__init__()
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
            self._pool.schedule(run_job, args=(local, self.memory_mb), timeout=self.job_timeout).add_done_callback(measured)

        self._downloads.submit(fetch, spec).add_done_callback(downloaded)
        return outer

    def close(self) -> None:
        self._downloads.shutdown(wait=True, cancel_futures=True)
        self._pool.close()
        self._pool.join()
