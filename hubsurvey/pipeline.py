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
from hubsurvey.core.runs import Interrupted, Runs, RunStatus, is_interruption, new_run_id
from hubsurvey.core.settings import Settings
from hubsurvey.core.steps import Counts, RunContext, RunOptions, Step
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
    return [
        CrawlStep(filters),
        BenchmarksStep(),  # before the jobs: they check contamination while their files are on disk
        MeasureStep(),
        ContaminationStep(),
        ExposureStep(),  # the models declaring the datasets found contaminated
        CrossleaksStep(),
        ScoresStep(),  # the scores the surveyed datasets' models report (after crossleaks, which its view reads)
        ReportStep(),
    ]


#: the measure step's counts, recorded at the top level of the run's counts (as before steps had names)
_MEASURE_COUNTS = ("queued", "done", "failed", "retried", "left_pending", "rows", "data_rows")


@dataclass
class RunSummary:
    """What a run did: its status, each step's counts (by step name) and the files it wrote."""

    run_id: str
    status: str = "running"
    steps: dict[str, Counts] = field(default_factory=dict)
    seconds: float = 0.0
    report: list[str] = field(default_factory=list)

    def _measured(self, name: str) -> int:
        return int(self.steps.get("measure", {}).get(name, 0))

    queued = property(lambda self: self._measured("queued"))
    done = property(lambda self: self._measured("done"))
    failed = property(lambda self: self._measured("failed"))
    retried = property(lambda self: self._measured("retried"))
    left_pending = property(lambda self: self._measured("left_pending"))
    rows = property(lambda self: self._measured("rows"))

    def of(self, step: str) -> dict[str, Any] | None:
        """A step's counts (None: it had nothing to record, or did not run)."""
        counts = self.steps.get(step)
        return dict(counts) if counts else None

    @property
    def crawl(self) -> dict[str, Any] | None:
        return self.of("crawl")

    @property
    def crossleaks(self) -> dict[str, Any] | None:
        return self.of("crossleaks")

    @property
    def contamination(self) -> dict[str, Any] | None:
        return self.of("contamination")

    def counts(self) -> dict[str, Any]:
        """The run's counts as recorded (``runs.counts``): the measure step's at the top, then the
        other steps' under their names (those with nothing to record: none, or None for the crawl
        and crossleaks), and the times."""
        measured = self.steps.get("measure", {})
        out: dict[str, Any] = {k: measured.get(k, 0) for k in _MEASURE_COUNTS}
        out["crawl"], out["crossleaks"] = self.crawl, self.crossleaks
        out["seconds"] = round(self.seconds, 3)
        out["measure_seconds"] = measured.get("measure_seconds", 0.0)
        out["job_seconds"] = measured.get("job_seconds", 0.0)
        out.update({name: dict(c) for name, c in self.steps.items() if c and name not in out and name != "measure"})
        return out

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
    summary = RunSummary(run_id)
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
                        for step in run_steps(filters) if steps is None else steps:
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
