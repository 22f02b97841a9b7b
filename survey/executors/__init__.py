"""Executors: where a run's jobs run. Each turns a :class:`~hubsurvey.survey.jobs.JobSpec` into a
:class:`~hubsurvey.core.queue.JobOutcome`; results always come back to the coordinator, the only
process that writes to DuckDB.

An executor is one module here plus one entry in :data:`EXECUTORS` (``run --executor NAME``); it
declares its own options (its class's ``options``, offered by ``run``), so neither the command line
nor ``RunOptions`` names an executor:

- ``local`` (:mod:`.local`): worker processes on this machine, with prefetching downloads;
- ``dask`` (:mod:`.dask`): a dask.distributed cluster (``--dask tcp://scheduler:8786``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields
from typing import Any

from hubsurvey.core.errors import UsageError
from hubsurvey.core.options import declared, field_default
from hubsurvey.core.steps import RunContext, RunOptions
from hubsurvey.survey.executors.base import Executor
from hubsurvey.survey.executors.dask import DaskExecutor
from hubsurvey.survey.executors.local import LocalExecutor

#: name (``run --executor NAME``) -> the executor class
EXECUTORS: dict[str, type[Executor]] = {
    LocalExecutor.name: LocalExecutor,
    DaskExecutor.name: DaskExecutor,
}

__all__ = ["EXECUTORS", "DaskExecutor", "Executor", "LocalExecutor", "chosen_executor", "open_executor", "preflight"]

#: the executor run when none is named and none's options are given
DEFAULT_EXECUTOR = LocalExecutor.name


def option_classes() -> list[type]:
    """Every executor's options (dataclasses whose fields declare their flags), in registry order."""
    return [executor.options for executor in EXECUTORS.values()]


def chosen_executor(name: str | None, given: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    """The executor a run names (None: the one whose options are given, else local) and its
    options, checked: one line (UsageError, exit 2) for an unknown name, an option of another
    executor, or options the executor cannot run with.

    ``given`` holds every executor's options by field name, those not given at their defaults.
    """
    owner = {f.name: executor for executor in EXECUTORS.values() for f in fields(executor.options)}
    set_here = {f.name: how.flag for executor in EXECUTORS.values() for f, how in declared(executor.options)
                if given.get(f.name, field_default(f)) != field_default(f)}
    if name is None:
        name = owner[next(iter(set_here))].name if set_here else DEFAULT_EXECUTOR
    executor = EXECUTORS.get(name)
    if executor is None:
        raise UsageError(f"--executor must be one of {', '.join(EXECUTORS)}, not {name!r}")
    for option, shown in set_here.items():
        if owner[option] is not executor:
            raise UsageError(f"{shown} is an option of --executor {owner[option].name}; it contradicts --executor {name}")
    options = {f.name: given.get(f.name, field_default(f)) for f in fields(executor.options)}
    executor.check(options)
    return name, options


def open_executor(ctx: RunContext) -> Executor:
    """The executor a run's options name (``run --executor``), checked as the command line checks it."""
    name, _ = chosen_executor(ctx.options.executor, ctx.options.executor_options)
    return EXECUTORS[name].for_run(ctx)


def preflight(options: RunOptions) -> None:
    """Before a run's first step: the executor its options name can be used (a cluster answers),
    so that a run never crawls for a cluster it cannot reach."""
    name, executor_options = chosen_executor(options.executor, options.executor_options)
    EXECUTORS[name].preflight(executor_options)
