"""The :class:`Executor` protocol, and the bookkeeping every executor shares (:class:`Inflight`)."""

from __future__ import annotations

from collections.abc import Mapping
from concurrent.futures import FIRST_COMPLETED, Future, wait
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

from hubsurvey.core.queue import JobOutcome
from hubsurvey.core.steps import RunContext
from hubsurvey.survey.jobs import MEMORY_EXIT_CODE, JobSpec, error_outcome


class Executor(Protocol):
    """Where a run's jobs run. The measure step submits up to ``capacity`` jobs, takes their
    results as they complete, and closes the executor when the run is done with it."""

    name: ClassVar[str]  # its ``run --executor`` name
    # its own options: a dataclass whose fields declare their flags (hubsurvey.core.options.flag);
    # ``run`` offers them and the run's ``options.executor_options`` holds their values
    options: ClassVar[type]

    @classmethod
    def check(cls, options: Mapping[str, Any]) -> None:
        """Refuse, with one line (UsageError), options this executor cannot run with."""
        ...

    @classmethod
    def for_run(cls, ctx: RunContext) -> Executor:
        """The executor a run's options ask for."""
        ...

    @classmethod
    def preflight(cls, options: Mapping[str, Any]) -> None:
        """Check, before any step of the run, that the executor can be used (a cluster answers)."""
        ...

    @property
    def capacity(self) -> int:
        """Jobs to keep in flight."""
        ...

    @property
    def inflight(self) -> int:
        """Jobs submitted whose result has not been taken yet."""
        ...

    def submit(self, spec: JobSpec) -> Future[JobOutcome]:
        """Start one job; its future never raises (a failure is a failed outcome)."""
        ...

    def completed(self, timeout: float) -> list[tuple[JobSpec, JobOutcome]]:
        """The jobs that completed, waiting up to ``timeout`` seconds for the first one."""
        ...

    def close(self, *, cancel: bool = False) -> None:
        """Release the executor once its jobs are taken; with ``cancel`` (the run was interrupted)
        without waiting for the jobs in flight, which stay pending."""
        ...


@dataclass(frozen=True)
class NoOptions:
    """The options of an executor that has none of its own."""


class Inflight:
    """Jobs in flight, by future: ``submit`` and ``completed`` over each executor's ``start``
    (and no options of its own, unless the executor declares them)."""

    workers: int
    options: ClassVar[type] = NoOptions

    @classmethod
    def check(cls, options: Mapping[str, Any]) -> None:
        pass

    @classmethod
    def preflight(cls, options: Mapping[str, Any]) -> None:
        return None

    def __init__(self) -> None:
        self._inflight: dict[Future[JobOutcome], JobSpec] = {}

    def start(self, spec: JobSpec) -> Future[JobOutcome]:
        raise NotImplementedError

    @property
    def capacity(self) -> int:
        """One job running per worker, and one more waiting (or downloading)."""
        return self.workers * 2

    @property
    def inflight(self) -> int:
        return len(self._inflight)

    def submit(self, spec: JobSpec) -> Future[JobOutcome]:
        future = self.start(spec)
        self._inflight[future] = spec
        return future

    def completed(self, timeout: float) -> list[tuple[JobSpec, JobOutcome]]:
        done, _ = wait(list(self._inflight), timeout=timeout, return_when=FIRST_COMPLETED)
        return [(self._inflight.pop(future), future.result()) for future in done]


def settle(outer: Future[JobOutcome], result: JobOutcome) -> None:
    """Give a job's future its outcome, once (the first of a result and a failure wins)."""
    if not outer.done():
        outer.set_result(result)


def measured_outcome(inner: Future[JobOutcome], where: str, job_timeout: float | None, memory_mb: int | None) -> JobOutcome:
    """The outcome of a job measured in a child process (a pebble pool's future): its own, or the
    child's end as an outcome, with the same error class whichever executor ran it."""
    from concurrent.futures import CancelledError
    from concurrent.futures import TimeoutError as FutureTimeout

    from pebble import ProcessExpired

    try:
        return inner.result()
    except CancelledError:  # the pool was stopped (an interrupted run): the job stays pending
        return JobOutcome.failure("interrupted", f"{where}: the run was interrupted", transient=True)
    except FutureTimeout:
        return JobOutcome.failure("timeout", f"{where}: took longer than {job_timeout:g} s")
    except ProcessExpired as e:
        if e.exitcode == MEMORY_EXIT_CODE:
            return JobOutcome.failure("memory_limit", f"{where}: worker passed its memory ceiling of {memory_mb} MB")
        return JobOutcome.failure("worker_died", f"{where}: worker process died (exit code {e.exitcode})", transient=True)
    except Exception as e:  # pragma: no cover - pebble's own failures
        return error_outcome(e, where)
