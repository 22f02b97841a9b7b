"""Executors: where a run's jobs run. Each turns a :class:`~hubsurvey.survey.jobs.JobSpec` into a
:class:`~hubsurvey.core.queue.JobOutcome`; results always come back to the coordinator, the only
process that writes to DuckDB.

An executor is one module here plus one entry in :data:`EXECUTORS` (``run --executor NAME``):

- ``local`` (:mod:`.local`): worker processes on this machine, with prefetching downloads;
- ``dask`` (:mod:`.dask`): a dask.distributed cluster (``--dask tcp://scheduler:8786``).
"""

from __future__ import annotations

from hubsurvey.core.errors import UsageError
from hubsurvey.core.steps import RunContext
from hubsurvey.survey.executors.base import Executor
from hubsurvey.survey.executors.dask import DaskExecutor
from hubsurvey.survey.executors.local import LocalExecutor

#: name (``run --executor NAME``) -> the executor class
EXECUTORS: dict[str, type[Executor]] = {
    LocalExecutor.name: LocalExecutor,
    DaskExecutor.name: DaskExecutor,
}

__all__ = ["EXECUTORS", "DaskExecutor", "Executor", "LocalExecutor", "open_executor"]


def open_executor(ctx: RunContext) -> Executor:
    """The executor a run's options name (``run --executor``)."""
    executor = EXECUTORS.get(ctx.options.executor)
    if executor is None:
        raise UsageError(f"--executor must be one of {', '.join(EXECUTORS)}, not {ctx.options.executor!r}")
    return executor.for_run(ctx)
