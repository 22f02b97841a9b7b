"""``run --executor dask --dask tcp://scheduler:8786``: jobs on a dask.distributed cluster.

Its workers download and measure themselves (each job deletes its files after measuring unless
``keep_cache``; the cache budget is not coordinated there). Dask cannot kill a running task, so
the per-job timeout and memory ceiling are left to the cluster's own worker settings
(``--memory-limit`` of dask workers).
"""

from __future__ import annotations

from collections.abc import Mapping
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, ClassVar

from hubsurvey.core.errors import UsageError
from hubsurvey.core.options import flag
from hubsurvey.core.queue import JobOutcome
from hubsurvey.core.steps import RunContext
from hubsurvey.survey.executors.base import Inflight, settle
from hubsurvey.survey.jobs import JobSpec, error_outcome, run_job


@dataclass(frozen=True)
class DaskOptions:
    """``run``'s options of the Dask executor (given alone, they choose it)."""

    dask: str | None = field(default=None, metadata=flag("--dask", "Run jobs on a Dask cluster: tcp://scheduler:8786"))


class DaskExecutor(Inflight):
    """Jobs on the dask.distributed cluster whose scheduler is at ``address``."""

    name: ClassVar[str] = "dask"
    options: ClassVar[type] = DaskOptions

    def __init__(self, address: str):
        from distributed import Client

        super().__init__()
        self._client = Client(address)
        self.workers = len(self._client.scheduler_info().get("workers", {})) or 1

    @classmethod
    def check(cls, options: Mapping[str, Any]) -> None:
        if not options.get("dask"):
            raise UsageError("--executor dask needs the scheduler's address: --dask tcp://scheduler:8786")

    @classmethod
    def for_run(cls, ctx: RunContext) -> DaskExecutor:
        return cls(ctx.options.executor_options["dask"])

    def start(self, spec: JobSpec) -> Future[JobOutcome]:
        outer: Future[JobOutcome] = Future()

        def done(f: Any) -> None:
            try:
                settle(outer, f.result())
            except Exception as e:  # a lost worker, a cancelled task
                settle(outer, error_outcome(e, spec.where))

        self._client.submit(run_job, spec, pure=False).add_done_callback(done)
        return outer

    def close(self) -> None:
        self._client.close()
