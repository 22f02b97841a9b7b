"""The unattended survey, a runner of steps: crawl → measure → contamination → exposure → crossleaks → scores → report,
resumable at any point.

``hubsurvey run`` is a thin layer over :func:`run_survey`, which takes the run lock, opens the DB,
records the run and calls each step of :func:`run_steps` with one
:class:`~hubsurvey.core.steps.RunContext` (the steps live in their stages: ``crawler/steps.py``,
``survey/steps.py``, ``survey/contamination_check.py``, ``analysis/steps.py``). Guarantees:

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

import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from filelock import FileLock, Timeout

from hubsurvey.analysis.steps import CrossleaksStep, ReportStep
from hubsurvey.core import livestate
from hubsurvey.core.errors import DbLockedError
from hubsurvey.core.hub import HubClient
from hubsurvey.core.queue import JobQueue
from hubsurvey.core.runs import Interrupted, Runs, RunStatus, new_run_id
from hubsurvey.core.settings import Settings
from hubsurvey.core.signals import is_interruption, raise_if_stopped
from hubsurvey.core.steps import Counts, RunContext, RunEnd, RunOptions, Step
from hubsurvey.core.store import Store, StoreError
from hubsurvey.crawler.rules import CrawlFilters
from hubsurvey.crawler.steps import CrawlStep
from hubsurvey.survey.contamination_check import BenchmarksStep, ContaminationStep
from hubsurvey.survey.executors import preflight
from hubsurvey.survey.exposure import ExposureStep
from hubsurvey.survey.scores import ScoresStep
from hubsurvey.survey.steps import MeasureStep

__all__ = ["RunLockedError", "RunOptions", "RunSummary", "acquire_lock", "run_steps", "run_survey"]


class RunLockedError(StoreError):
    """Another run holds the DB."""


def run_steps(filters: CrawlFilters | None = None) -> list[Step]:
    """The steps of ``hubsurvey run``, in order. A new step: one class in its stage, one line here."""
    crawl = CrawlStep(filters)
    return [
        crawl,
        BenchmarksStep(),  # before the jobs: they check contamination while their files are on disk
        MeasureStep(beside=crawl),  # with --measure-during-crawl the crawl runs beside the jobs
        CrossleaksStep(),  # reads the fingerprints alone: it needs the measurements, nothing after them
        ContaminationStep(),
        ExposureStep(),  # the models declaring the datasets found contaminated
        ScoresStep(),  # the scores the surveyed datasets' models report (after crossleaks, which its view reads)
        ReportStep(),
    ]


@dataclass
class RunSummary:
    """What a run did: its status, each step's counts (by step name) and the files it wrote.

    The steps say what their counts mean (:class:`~hubsurvey.core.steps.Step`): the lines printed
    (:meth:`lines`), the row recorded (:meth:`counts`), whether the run is :attr:`partial`. A count
    recorded at the top of the row reads as an attribute (``summary.done``, ``summary.failed``), and
    so do a step's counts, by its name (``summary.crossleaks``; None: it recorded nothing).
    """

    run_id: str
    status: str = "running"
    steps: dict[str, Counts] = field(default_factory=dict)
    seconds: float = 0.0
    report: list[str] = field(default_factory=list)
    #: the run's steps in order, those a failure kept from running too (None: :func:`run_steps`)
    planned: Sequence[Step] | None = None

    def _planned(self) -> Sequence[Step]:
        return run_steps() if self.planned is None else self.planned

    def _ran(self) -> list[tuple[Step, Counts]]:
        return [(step, self.steps[step.name]) for step in self._planned() if step.name in self.steps]

    def of(self, step: str) -> dict[str, Any] | None:
        """A step's counts (None: it had nothing to record, or did not run)."""
        counts = self.steps.get(step)
        return dict(counts) if counts else None

    def counts(self) -> dict[str, Any]:
        """The run's counts as recorded (``runs.counts``), in the layout of
        :class:`~hubsurvey.core.steps.Recorded`."""
        planned = self._planned()
        out: dict[str, Any] = {}
        for step in planned:
            counts = self.steps.get(step.name, {})
            out.update({k: counts.get(k, v) for k, v in step.recorded.top.items()})
        out.update({step.name: self.of(step.name) for step in planned if step.recorded.always})
        out["seconds"] = round(self.seconds, 3)
        for step in planned:
            counts = self.steps.get(step.name, {})
            out.update({k: counts.get(k, v) for k, v in step.recorded.times.items()})
        out.update({step.name: dict(c) for step, c in self._ran()
                    if c and step.name not in out and not step.recorded.flat})
        return out

    def lines(self) -> list[str]:
        """What ``run`` prints when it ends: each step's summary lines in the order of the steps,
        then their errors."""
        end = RunEnd(self.run_id, self.status, self.seconds, tuple(self.report))
        ran = self._ran()
        return ([line for step, counts in ran for line in step.summary(counts, end)]
                + [f"error: {line}" for step, counts in ran for line in step.errors(counts)])

    @property
    def partial(self) -> bool:
        """Whether a step's counts leave the run partial (a job failed, a benchmark not indexed): exit 1."""
        return any(step.partial(counts) for step, counts in self._ran())

    def __getattr__(self, name: str) -> Any:
        """A count recorded at the top of the run's row, or a step's counts by its name."""
        if name.startswith("_"):  # copy, pickle and the dataclass machinery look these up
            raise AttributeError(name)
        recorded = self.counts()
        if name in recorded:
            return recorded[name]
        if any(step.name == name for step in self._planned()):
            return None
        raise AttributeError(f"{type(self).__name__} has no count or step {name!r}")


def acquire_lock(db: str | Path) -> FileLock:
    """The run lock; refused at once (no waiting) when another run holds it."""
    lock = FileLock(f"{db}.lock", timeout=0)
    try:
        lock.acquire()
    except Timeout:
        info = livestate.read_holder(db)
        holder = f" ({livestate.describe_holder(info)})" if info else ""
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


def _left_behind(store: Store, step: str | None) -> str:
    """What an interrupted run leaves: its pending jobs, which the next run takes (its jobs in
    flight were put back in the queue when its row was finished)."""
    pending = JobQueue(store).counts().get("pending", 0)
    where = f" (stopped in the {step} step)" if step and step != "measure" else ""
    return f"{pending} job{'' if pending == 1 else 's'} left pending{where}"


def run_survey(
    db: str | Path,
    client: HubClient,
    filters: CrawlFilters | None = None,
    options: RunOptions | None = None,
    *,
    progress: Callable[[dict[str, Any]], None] | None = None,
    args: dict[str, Any] | None = None,
    settings: Settings | None = None,
    steps: Sequence[Step] | None = None,
) -> RunSummary:
    """Run the steps (default: :func:`run_steps`) under the run lock, recorded as one ``run``.
    See the module docstring."""
    options = options or RunOptions()
    preflight(options)  # a cluster that does not answer: one line before anything is crawled
    if options.cache_dir is not None:
        client.cache_dir = Path(options.cache_dir)  # the client downloads (prefetch) into the run's cache
    run_id = new_run_id("run")
    planned = run_steps(filters) if steps is None else list(steps)
    summary = RunSummary(run_id, planned=planned)
    started = time.perf_counter()

    def counts() -> dict[str, Any]:
        summary.seconds = time.perf_counter() - started
        return summary.counts()

    lock = acquire_lock(db)
    live = None
    try:
        live = _start_live(db, run_id)
        with _open_writer(db) as store, tempfile.TemporaryDirectory(prefix="hubsurvey-run-") as scratch:
            runs = Runs(store)
            runs.mark_interrupted()  # runs that were killed: their process is gone
            step_name = None
            try:
                # when the run ends, however: jobs still in flight go back to pending, with the run's row
                with runs.recording("run", args or {}, run_id=run_id, finishing=JobQueue(store).requeue_stale) as recording:
                    recording.counts = counts
                    live.snapshot(store.con, force=True)  # readers can read the DB at once
                    ctx = RunContext(store, client, settings or client.settings, options, run_id, live=live,
                                     progress=progress, scratch=Path(scratch), started=started, counts=summary.steps)
                    try:
                        for step in planned:
                            raise_if_stopped()  # a stop a library call swallowed: no further step starts
                            step_name = step.name
                            summary.steps[step.name] = step.run(ctx)
                    except BaseException as e:
                        summary.status = (RunStatus.INTERRUPTED if is_interruption(e) else RunStatus.FAILED).value
                        raise
                    recording.status = ctx.status
                    summary.status = ctx.status.value
                    summary.report = [str(p) for p in ctx.files]
            except BaseException as e:
                if is_interruption(e) and not isinstance(e, Interrupted):
                    raise Interrupted(_left_behind(store, step_name)) from e
                raise
    finally:
        if live is not None:
            live.close()  # after the DB is closed: a reader that finds no snapshot then opens the DB
        lock.release()
    return summary
