"""The run as a list of steps: the :class:`Step` protocol and the :class:`RunContext` each step gets.

``hubsurvey run`` (:func:`hubsurvey.pipeline.run_survey`) takes the run lock, opens the DB, starts
the run's ``runs`` row (:meth:`hubsurvey.core.runs.Runs.recording`) and calls each step's
:meth:`Step.run` in turn with one :class:`RunContext`. A step returns its counts, which the run
records under the step's name, and says what its counts mean: the lines ``run`` prints
(:meth:`Step.summary`, :meth:`Step.errors`), whether they leave the run partial (:meth:`Step.partial`)
and where they sit in the run's row (:attr:`Step.recorded`); the runner names no step. A step lives
in its stage's folder (``crawler/``, ``survey/``, ``analysis/``) and imports only the core and its
own stage (an import contract checks it); a new step is one class there plus one line in the
runner's list (``hubsurvey.pipeline.run_steps``).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, ClassVar, Protocol

from hubsurvey.core.figures import DEFAULT_EXAMPLES
from hubsurvey.core.hub import HubClient
from hubsurvey.core.livestate import LiveRun
from hubsurvey.core.options import (
    BENCHMARKS_HELP,
    COPY_THRESHOLD_HELP,
    DEFAULT_REPORT_DIR,
    DEFAULT_SEMANTIC_THRESHOLD,
    EXAMPLES_HELP,
    MAX_COUNT,
    MAX_HOURS,
    MAX_MB,
    MAX_MODELS_HELP,
    MAX_SECONDS,
    MAX_WORKERS,
    NO_NEAR_HELP,
    ROLES_HELP,
    SEMANTIC_HELP,
    SEMANTIC_MODEL_HELP,
    SEMANTIC_THRESHOLD_HELP,
    flag,
    minimum,
    more_than_zero,
    share,
    zero_or_up_to,
)
from hubsurvey.core.outputs import output_folder
from hubsurvey.core.runs import RunStatus
from hubsurvey.core.settings import Settings
from hubsurvey.core.store import Store

#: what a step returns, and the run records under its name (JSON-ready values); empty: nothing to record
Counts = Mapping[str, Any]
#: the progress callback of the command line (jobs done, failed, total, rows/s)
Progress = Callable[[dict[str, Any]], None]


def _text(_name: str, path: Path | None) -> str | None:
    return str(path) if path else None


def _error_classes(_name: str, values: list[str] | None) -> tuple[str, ...] | None:
    """``--retry-failed``: None (not given), () for every class ('all'), else the classes."""
    if values is None:
        return None
    return () if "all" in values else tuple(values)


def _output_folder(name: str, value: Path | None) -> Path | None:
    """A folder the run writes into: checked when the command line is read, not after the whole crawl."""
    return None if value is None else output_folder(value, name)


@dataclass(frozen=True)
class RunOptions:
    """A run's options (``hubsurvey run``), one field each; recorded with the run (:meth:`as_json`).

    A field that ``run`` takes from the command line declares its flag here (:func:`flag`): a new
    option is its field and the code that reads it. An executor declares its own options
    (``hubsurvey.survey.executors``); the chosen one's land in ``executor_options``.
    """

    workers: int | None = field(default=None, metadata=flag(
        "--workers", "Local worker processes (default: one per core)", parse=minimum(1, MAX_WORKERS)))
    max_hours: float | None = field(default=None, metadata=flag(
        "--max-hours", "Stop taking new jobs after this long (0: no limit)", parse=zero_or_up_to(MAX_HOURS)))
    # where jobs run: a name of hubsurvey.survey.executors.EXECUTORS (the command line's default:
    # the executor whose option is given, else local; checked there)
    executor: str = field(default="local", metadata=flag(
        "--executor", "Where jobs run: local (worker processes here) or dask (a cluster: give --dask) "
        "[default: local, or dask with --dask]", type=str | None, default=None))
    # the chosen executor's options, by name (``--dask ADDR``: {"dask": ADDR}); declared by each executor
    executor_options: Mapping[str, Any] = field(default_factory=dict)
    job_timeout: float = field(default=1800.0, metadata=flag(
        "--job-timeout", "Seconds one job may take, its download included (locally and on Dask)", parse=more_than_zero(MAX_SECONDS)))
    memory_mb: int = field(default=4096, metadata=flag(
        "--memory-mb", "Memory ceiling of the process measuring one job, MB (locally and on Dask)", parse=more_than_zero(MAX_MB)))
    max_attempts: int = 3  # attempts of one job in one run (not on the command line)
    report_dir: Path | None = field(default=None, metadata=flag(
        "--report-dir", "Where the refreshed report goes", type=Path, default=DEFAULT_REPORT_DIR, parse=_output_folder))
    roles_file: str | None = field(default=None, metadata=flag(
        "--roles", ROLES_HELP, type=Path | None, parse=_text))
    crawl: bool = True  # list the Hub first (False: measure what is queued; not on the command line)
    measure_during_crawl: bool = field(default=False, metadata=flag(
        "--measure-during-crawl", "Measure each page's eligible datasets while the crawl goes on listing the Hub, "
        "instead of after the whole crawl (a first survey: the workers measure while the crawl waits for its quota)"))
    # failed jobs to queue again: None none (transient failures are always retried), () every
    # class, else the error classes given (``run --retry-failed CLASS``; 'all': every class)
    retry_failed: tuple[str, ...] | None = field(default=None, metadata=flag(
        "--retry-failed", "Queue failed jobs of this error class again (repeatable; 'all' for every class)",
        type=list[str] | None, parse=_error_classes))
    cache_dir: Path | None = field(default=None, metadata=flag(
        "--cache-dir", "The survey's download cache [default: $HUBSURVEY_CACHE_DIR or ~/.cache/hubsurvey/hub]"))
    max_cache_gb: float = field(default=20.0, metadata=flag(
        "--max-cache-gb", "The cache never holds more than this many GB; a larger job fails (too_large_for_cache)",
        parse=more_than_zero(MAX_MB)))
    keep_cache: bool = field(default=False, metadata=flag(
        "--keep-cache", "Keep each job's downloaded files after measuring"))
    examples: int = field(default=DEFAULT_EXAMPLES, metadata=flag("--examples", EXAMPLES_HELP, parse=minimum(0, MAX_COUNT)))
    near: bool = field(default=True, metadata=flag("--no-near", NO_NEAR_HELP, negated=True))
    semantic: bool = field(default=False, metadata=flag("--semantic", SEMANTIC_HELP))
    semantic_threshold: float = field(default=DEFAULT_SEMANTIC_THRESHOLD, metadata=flag(
        "--semantic-threshold", SEMANTIC_THRESHOLD_HELP, parse=share))
    semantic_model: str | None = field(default=None, metadata=flag(
        "--semantic-model", SEMANTIC_MODEL_HELP, metavar="PATH"))
    crossleaks: bool = field(default=True, metadata=flag(
        "--no-crossleaks", "Skip the leaks-across-datasets step at the end (`hubsurvey crossleaks` runs it alone)",
        negated=True))
    copy_threshold: float = field(default=0.8, metadata=flag("--copy-threshold", COPY_THRESHOLD_HELP, parse=share))
    # a benchmarks file (TOML; 'default': the shipped one): check contamination too
    benchmarks: str | None = field(default=None, metadata=flag("--benchmarks", BENCHMARKS_HELP, metavar="FILE"))
    exposure: bool = field(default=True, metadata=flag(
        "--no-exposure", "Skip listing the models that declare the contaminated datasets (`hubsurvey exposure` runs it alone)",
        negated=True))
    max_models: int = field(default=100, metadata=flag("--max-models", MAX_MODELS_HELP, parse=minimum(1, MAX_COUNT)))
    scores: bool = field(default=True, metadata=flag(
        "--no-scores", "Skip reading the scores the surveyed datasets' models report (`hubsurvey scores` runs it alone)",
        negated=True))

    def as_json(self) -> dict[str, Any]:
        """Every option, JSON-ready (paths as text, tuples as lists)."""
        out = {f.name: _json_value(getattr(self, f.name)) for f in fields(self) if f.name != "executor_options"}
        return {**out, **{name: _json_value(value) for name, value in self.executor_options.items()}}


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

    @contextlib.contextmanager
    def bounded(self) -> Iterator[None]:
        """Inside the block, no Hub call of the run goes on past ``max_hours``: requests in flight,
        retries and every wait for the quota stop there (:class:`~hubsurvey.core.errors.OutOfTimeError`)."""
        deadline = self.deadline
        if deadline is None:
            yield
            return
        self.client.stop_after(max(1e-3, deadline - time.perf_counter()))
        try:
            yield
        finally:
            self.client.stop_after(None)  # the steps after (contamination, report) are not bounded by it

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


@dataclass(frozen=True)
class Recorded:
    """Where a step's counts sit in the run's row (``runs.counts``).

    The row keeps the layout it had before steps had names, which ``status`` prints: the counts
    steps record at the top (``top``, with the value each has when its step did not count it),
    then the steps recorded even when they had nothing to record (``always``: null), the run's
    ``seconds`` and the steps' times (``times``, at the top too), then every other step that
    counted something, under its name. A step with top or times is not recorded under its name.
    """

    top: Mapping[str, Any] = field(default_factory=dict)
    times: Mapping[str, Any] = field(default_factory=dict)
    always: bool = False

    @property
    def flat(self) -> bool:
        return bool(self.top or self.times)


@dataclass(frozen=True)
class RunEnd:
    """How a run ended, for its steps' summary lines: its id, status, time and the files it wrote."""

    run_id: str
    status: str
    seconds: float
    files: tuple[str, ...] = ()


class BesideJobs(Protocol):
    """Work running beside the measure step's jobs that finds datasets to measure (the crawl, with
    ``measure_during_crawl``): in a thread of its own, its DB writes run on the coordinator when
    the measure step pumps it (:meth:`pump`), so the DB keeps one writer."""

    @property
    def running(self) -> bool: ...

    def pump(self, timeout: float = 0.0) -> list[str]:
        """Run its queued DB calls (waiting up to ``timeout`` for one); the datasets it wrote since
        the last pump (eligible or not)."""
        ...

    def finish(self) -> Counts:
        """Its step's counts, once it has ended; what it raised is raised here."""
        ...

    def stop(self, wait_s: float = 5.0) -> None:
        """End it early: the run is ending."""
        ...


class FeedsJobs(Protocol):
    """A step that can run beside the measure step's jobs (:class:`BesideJobs`)."""

    name: str

    def beside(self, ctx: RunContext) -> BesideJobs | None:
        """Start it beside the jobs (None: not in this run)."""
        ...


class Step(Protocol):
    """One step of a run: crawl, measure, check contamination, join leaks across datasets, report.

    ``run`` does the step's work through the context and returns its counts (empty: nothing to
    record); it decides from ``ctx.options`` whether it has anything to do. A failure that
    leaves the stored results whole is the step's to log and count; anything else propagates and
    fails the run.

    The rest says what the counts mean; a step that subclasses ``Step`` gets the defaults: no line
    printed, not partial, recorded under its name when it counted something.
    """

    name: str
    #: where its counts sit in the run's row
    recorded: ClassVar[Recorded] = Recorded()

    def run(self, ctx: RunContext) -> Counts: ...

    def summary(self, counts: Counts, end: RunEnd) -> list[str]:
        """The lines ``run`` prints for these counts, in the order of the steps (none: nothing to say)."""
        return []

    def errors(self, counts: Counts) -> list[str]:
        """What went wrong, one line each: ``run`` prints them after every step's summary, as
        ``error: <line>``."""
        return []

    def partial(self, counts: Counts) -> bool:
        """Whether these counts leave the run partial (``run`` exits 1): by default, when there are errors."""
        return bool(self.errors(counts))
