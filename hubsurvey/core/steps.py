"""The run as a list of steps: the :class:`Step` protocol and the :class:`RunContext` each step gets.

``hubsurvey run`` (:func:`hubsurvey.pipeline.run_survey`) takes the run lock, opens the DB, starts
the run's ``runs`` row (:meth:`hubsurvey.core.runs.Runs.recording`) and calls each step's
:meth:`Step.run` in turn with one :class:`RunContext`. A step returns its counts, which the run
records under the step's name. A step lives in its stage's folder (``crawler/``, ``survey/``,
``analysis/``) and imports only the core and its own stage (an import contract checks it); a new
step is one class there plus one line in the runner's list (``hubsurvey.pipeline.run_steps``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Protocol

from hubsurvey.core.figures import DEFAULT_EXAMPLES
from hubsurvey.core.hub import HubClient
from hubsurvey.core.livestate import LiveRun
from hubsurvey.core.runs import RunStatus
from hubsurvey.core.settings import Settings
from hubsurvey.core.store import Store

#: what a step returns, and the run records under its name (JSON-ready values); empty: nothing to record
Counts = Mapping[str, Any]
#: the progress callback of the command line (jobs done, failed, total, rows/s)
Progress = Callable[[dict[str, Any]], None]


@dataclass(frozen=True)
class RunOptions:
    """A run's options (``hubsurvey run``), one field each; recorded with the run (:meth:`as_json`)."""

    workers: int | None = None  # local worker processes (default: one per core)
    max_hours: float | None = None
    executor: str = "local"  # where jobs run: a name of hubsurvey.survey.executors.EXECUTORS
    dask: str | None = None  # the Dask scheduler's address (tcp://host:8786), for executor 'dask'
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
    exposure: bool = True  # list the models declaring contaminated datasets (run --no-exposure: False)
    max_models: int = 100  # exposure: models kept per contaminated dataset (run --max-models)

    def as_json(self) -> dict[str, Any]:
        """Every option, JSON-ready (paths as text, tuples as lists)."""
        return {f.name: _json_value(getattr(self, f.name)) for f in fields(self)}


def _json_value(value: Any) -> Any:
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, tuple):
        return list(value)
    return value


@dataclass
class RunContext:
    """What every step of one run gets: the DB, the Hub, the settings and options, the run's id,
    its live state and progress callback, its clock, a scratch folder, and the steps' counts so far."""

    store: Store
    client: HubClient
    settings: Settings
    options: RunOptions
    run_id: str
    live: LiveRun | None = None  # the run's holder file and read snapshot (None: not watchable)
    progress: Progress | None = None
    scratch: Path | None = None  # a folder for files steps hand to later steps; removed when the run ends
    started: float = field(default_factory=time.perf_counter)
    counts: dict[str, Counts] = field(default_factory=dict)  # by step name, the steps run so far
    files: list[Path] = field(default_factory=list)  # files the run wrote for its user (the report)

    @property
    def deadline(self) -> float | None:
        """When to stop taking new work (``time.perf_counter`` time), from ``max_hours``."""
        return self.started + self.options.max_hours * 3600 if self.options.max_hours else None

    def out_of_time(self) -> bool:
        deadline = self.deadline
        return deadline is not None and time.perf_counter() > deadline

    @property
    def left_pending(self) -> int:
        """Work the steps so far left for the next run (their ``left_pending`` counts)."""
        return sum(int(c.get("left_pending") or 0) for c in self.counts.values())

    @property
    def status(self) -> RunStatus:
        """How the run ends if nothing fails from here: ``timed_out`` when work was left pending."""
        return RunStatus.TIMED_OUT if self.left_pending else RunStatus.DONE

    def phase(self, name: str, **counts: int) -> None:
        """Show the run's phase (and counts) to watchers at once."""
        if self.live is not None:
            self.live.progress(phase=name, force=True, **counts)

    def snapshot(self) -> None:
        """Refresh the read snapshot now (between transactions), for readers while the run goes on."""
        if self.live is not None:
            self.live.snapshot(self.store.con, force=True)


class Step(Protocol):
    """One step of a run: crawl, measure, check contamination, join leaks across datasets, report.

    ``run`` does the step's work through the context and returns its counts (empty: nothing to
    record); it decides from ``ctx.options`` whether it has anything to do. A failure that
    leaves the stored results whole is the step's to log and count; anything else propagates and
    fails the run.
    """

    name: str

    def run(self, ctx: RunContext) -> Counts: ...
