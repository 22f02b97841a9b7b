"""Measuring as a step of a run: queue the configs not measured at their current sha, run them on
the run's executor, and record each outcome as it comes (the coordinator is the one writer)."""

from __future__ import annotations

import logging
import os
import time
from collections import deque
from dataclasses import asdict, dataclass, replace

from hubsurvey.core.figures import methods_measured
from hubsurvey.core.queue import JobOutcome, JobQueue, JobSettings, JobStatus
from hubsurvey.core.signals import is_interruption, raise_if_stopped
from hubsurvey.core.steps import BesideJobs, Counts, FeedsJobs, Recorded, RunContext, RunEnd, Step
from hubsurvey.survey import kernels
from hubsurvey.survey.contamination_check import saved_index
from hubsurvey.survey.executors import open_executor
from hubsurvey.survey.jobs import JobSpec

log = logging.getLogger(__name__)


@dataclass
class MeasureCounts:
    """What the measure step did; the run records these (``runs.counts``)."""

    queued: int = 0
    done: int = 0
    failed: int = 0
    retried: int = 0
    left_pending: int = 0  # jobs the run had no time for (max_hours): the next run takes them
    rows: int = 0  # result rows stored (one per dataset, config, label column)
    data_rows: int = 0  # dataset rows measured (train + validation + test of each config done)
    measure_seconds: float = 0.0
    job_seconds: float = 0.0

    def add(self, outcome: JobOutcome) -> None:
        """A job done: its rows, and its time."""
        self.done += 1
        self.rows += len(outcome.rows)
        if outcome.rows:  # a config's rows per split are on each of its result rows
            self.data_rows += sum(outcome.rows[0].get(f"rows_{s}") or 0 for s in ("train", "validation", "test"))
        self.measure_seconds += outcome.measure_seconds
        self.job_seconds += outcome.seconds

    def as_json(self) -> dict[str, int | float]:
        out: dict[str, int | float] = asdict(self)
        out["measure_seconds"] = round(self.measure_seconds, 3)
        out["job_seconds"] = round(self.job_seconds, 3)
        return out


#: the counts recorded at the top of the run's row after its seconds (the others come first)
_TIMES = ("measure_seconds", "job_seconds")


def job_settings(ctx: RunContext) -> JobSettings:
    """The settings every job of this run shares, built once."""
    o = ctx.options
    cores = os.cpu_count() or 1
    deadline = ctx.deadline
    return JobSettings(
        run_id=ctx.run_id,
        hub=replace(ctx.client.settings, cache_dir=ctx.client.cache_dir),  # whole; pickled without its token
        run_ends_at=time.time() + (deadline - time.perf_counter()) if deadline is not None else None,
        job_timeout=o.job_timeout,
        memory_mb=o.memory_mb,
        keep_cache=o.keep_cache,
        roles_file=o.roles_file,
        examples=o.examples,
        near=o.near,
        semantic=o.semantic,
        semantic_threshold=o.semantic_threshold,
        semantic_model=o.semantic_model,
        engine_threads=max(1, cores // max(1, o.workers or cores)),  # the cores shared by the workers
        engine_memory_limit=f"{int(o.memory_mb * 0.6)}MB",
        benchmarks_index=saved_index(ctx),
    )


@dataclass
class MeasureStep(Step):
    """Queue, then run every job to its end: done, failed, or (out of ``max_hours``) left pending.
    Its counts are the run's headline: at the top of the run's row, and in the line naming the run.

    With ``measure_during_crawl``, ``beside`` (the crawl step) runs beside the jobs: each page's
    eligible datasets are queued as the crawl writes them, and its counts are recorded under its
    own name when it ends."""

    beside: FeedsJobs | None = None
    name: str = "measure"
    recorded = Recorded(top={k: v for k, v in MeasureCounts().as_json().items() if k not in _TIMES},
                        times={k: v for k, v in MeasureCounts().as_json().items() if k in _TIMES})

    def summary(self, counts: Counts, end: RunEnd) -> list[str]:
        done, failed, pending, rows = (int(counts.get(k, 0)) for k in ("done", "failed", "left_pending", "rows"))
        return [f"run {end.run_id} {end.status}: {done} job(s) done, {failed} failed, {pending} left pending, "
                f"{rows} row(s) stored in {end.seconds:.1f} s"]

    def partial(self, counts: Counts) -> bool:
        return bool(counts.get("failed"))

    def run(self, ctx: RunContext) -> Counts:
        o = ctx.options
        queue = JobQueue(ctx.store, max_attempts=o.max_attempts, methods=methods_measured(near=o.near, semantic=o.semantic))
        ctx.phase("queueing")
        settings = job_settings(ctx)
        todo = deque(JobSpec(job, settings) for job in queue.enqueue(ctx.run_id, o.retry_failed))
        counts = MeasureCounts(queued=len(todo))
        feeder = (_Feeder(self.beside, ctx, queue, settings)
                  if self.beside is not None and o.crawl and o.measure_during_crawl else None)
        try:
            if (todo or feeder is not None) and o.executor == "local":  # a cluster's workers compile on their own hosts
                ctx.phase("compiling", pending=len(todo))
                # before the first job, and before the ETA's clock starts (the phase "measuring")
                kernels.compile_groups(kernels.groups_for(near=o.near, benchmarks=settings.benchmarks_index is not None),
                                       say=log.info)
            ctx.phase("measuring", pending=len(todo))
            ctx.snapshot()
            if todo or feeder is not None:
                self._execute(ctx, queue, todo, counts, feeder)
        finally:
            if feeder is not None:
                feeder.stop()  # ended early (an error, Ctrl-C, the breaker): what it wrote stays
        return counts.as_json()

    @staticmethod
    def _execute(ctx: RunContext, queue: JobQueue, todo: deque[JobSpec], counts: MeasureCounts,
                 feeder: _Feeder | None = None) -> None:
        executor = open_executor(ctx)
        if feeder is not None:  # once the executor is open: on a cluster, the crawl draws on the cluster's one quota
            feeder.start(todo)
        measuring_since = time.perf_counter()  # the rates and the ETA count from here
        interrupted = False
        with ctx.bounded():  # --max-hours stops the downloads in flight too, not only the taking of new jobs
            try:
                while todo or executor.inflight or feeder is not None:
                    raise_if_stopped()  # a stop whose KeyboardInterrupt a library call swallowed still stops the run
                    if feeder is not None:  # its writes, and the jobs of the datasets they made eligible
                        ended = not feeder.running  # asked first: its last writes are then run below
                        counts.queued += feeder.pump(todo, wait=not (todo or executor.inflight))
                        if ended:
                            feeder.finish(todo)
                            feeder = None
                    while todo and executor.inflight < executor.capacity and not ctx.out_of_time():
                        spec = todo.popleft()
                        if not queue.mark_running(spec.job.job_id, ctx.run_id):
                            counts.queued -= 1  # superseded since it was queued: the crawl found a newer revision
                            continue
                        executor.submit(spec)
                    if not executor.inflight:
                        if feeder is not None:
                            continue  # the crawl goes on, and may find more
                        break  # out of time: the rest stays pending
                    for spec, outcome in executor.completed(timeout=0.05 if feeder is not None else 1.0):
                        if not outcome.ok and (outcome.error_class == "hub_stopped" or ctx.client.breaker.open):  # pending for the next run
                            continue
                        status = queue.record(spec.job, outcome, run_id=ctx.run_id)
                        if status is JobStatus.DONE:
                            counts.add(outcome)
                        elif status is JobStatus.PENDING:
                            counts.retried += 1
                            todo.append(spec)
                        else:
                            counts.failed += 1
                        if ctx.progress:
                            elapsed = time.perf_counter() - measuring_since
                            ctx.progress({"done": counts.done + counts.failed, "ok": counts.done, "failed": counts.failed,
                                          "total": counts.queued, "elapsed_s": elapsed,
                                          "rows_per_s": round(counts.data_rows / elapsed, 2) if elapsed else 0,
                                          **({"listed": feeder.listed} if feeder is not None else {})})
                    ctx.client.breaker.check()  # the Hub stopped answering: end the run (exit 4), the rest stays pending
                    if ctx.live:  # between transactions: at most once a second (progress), every few (snapshot)
                        ctx.live.tick(ctx.store.con, done=counts.done, failed=counts.failed, rows=counts.data_rows,
                                      pending=len(todo) + executor.inflight)
            except BaseException as e:
                interrupted = is_interruption(e)
                raise
            finally:
                if feeder is not None:  # ended early: the crawl stops before the executor (and a cluster's quota) goes
                    feeder.stop()
                executor.close(cancel=interrupted)  # interrupted: the jobs in flight are ended, not waited for
        counts.left_pending = len(todo)
        if ctx.live:  # the last job's results, for readers while the report renders
            ctx.live.progress(done=counts.done, failed=counts.failed, rows=counts.data_rows, pending=len(todo),
                              force=True)
            ctx.snapshot()


class _Feeder:
    """The measure step's side of work running beside its jobs (the crawl): it runs that work's
    DB writes, queues the jobs of each dataset it makes eligible, and records its counts.

    Jobs queued before it started (left pending by an earlier run) are held until it has written
    their dataset again, or has ended: a dataset it finds at a newer revision then supersedes them,
    so every job is measured at the revision this crawl confirms, as when the crawl runs first."""

    def __init__(self, step: FeedsJobs, ctx: RunContext, queue: JobQueue, settings: JobSettings):
        self._step, self._ctx, self._queue, self._settings = step, ctx, queue, settings
        self._work: BesideJobs | None = None
        self._queued: set[str] = set()
        self._held: dict[str, list[JobSpec]] = {}
        #: the datasets it has written so far (eligible or not)
        self.listed = 0

    def start(self, todo: deque[JobSpec]) -> None:
        self._queued.update(spec.job.job_id for spec in todo)
        for spec in todo:
            self._held.setdefault(spec.job.dataset_id, []).append(spec)
        todo.clear()
        self._work = self._step.beside(self._ctx)

    @property
    def running(self) -> bool:
        return self._work is not None and self._work.running

    def pump(self, todo: deque[JobSpec], *, wait: bool) -> int:
        """Run the work's DB calls (waiting a moment for one when the workers are idle); queue the
        jobs of the datasets they wrote (and release the held ones). Returns how many jobs were
        queued anew."""
        if self._work is None:
            return 0
        written = self._work.pump(0.2 if wait else 0.0)
        if not written:
            return 0
        self.listed += len(written)
        fresh = [job for job in self._queue.enqueue(self._ctx.run_id, datasets=written) if job.job_id not in self._queued]
        for dataset in written:
            todo.extend(self._held.pop(dataset, ()))
        self._queued.update(job.job_id for job in fresh)
        todo.extend(JobSpec(job, self._settings) for job in fresh)
        return len(fresh)

    def finish(self, todo: deque[JobSpec]) -> None:
        """Its counts, recorded under its step's name, once it has ended (what it raised is raised);
        the jobs still held are released."""
        if self._work is not None:
            work, self._work = self._work, None
            self._ctx.counts[self._step.name] = work.finish()
        for held in self._held.values():
            todo.extend(held)
        self._held.clear()

    def stop(self) -> None:
        if self._work is not None:
            work, self._work = self._work, None
            work.stop()
