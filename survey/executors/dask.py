"""``run --executor dask --dask tcp://scheduler:8786``: jobs on a dask.distributed cluster.

What a cluster's run shares, and how (docs/operations.md, "Running on a cluster"):

- **Settings travel whole.** Each job carries the run's Hub settings (endpoint, plan, rates, quotas,
  deadline, drip floor, breaker, cache) in its :class:`~hubsurvey.core.queue.JobSettings`; a worker
  takes only its token from its own environment (``HF_TOKEN``): none crosses the wire.
- **One quota, one breaker.** A :class:`~hubsurvey.survey.executors.limits.LimitsService` actor
  holds the token's pacers and breaker; every worker's client and the coordinator's draw on it.
- **One deadline.** The run's end (``--max-hours``) travels as a Unix time; every request a worker
  makes stops there, and its downloads also stop at the job's end (``--job-timeout``).
- **Job timeout and memory ceiling.** A worker downloads the job's files, then measures them in a
  child process of its own (a pebble pool, as the local executor's workers): past ``--job-timeout``
  or ``--memory-mb`` the child is stopped and the job recorded as ``timeout`` or ``memory_limit``,
  as locally; the worker takes the next job.
- **The cache budget per host.** ``--max-cache-gb`` is split between the workers of the busiest
  host; each worker keeps its downloads in a folder of its own under the cache (named after the
  worker: give workers stable names, ``dask worker --name``, so a restarted one reuses its folder).
"""

from __future__ import annotations

import logging
import multiprocessing
import threading
import time
from collections import Counter
from collections.abc import Mapping
from concurrent.futures import Future
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import urlsplit

from hubsurvey.core.errors import ClusterUnreachableError, UsageError, one_line
from hubsurvey.core.options import flag
from hubsurvey.core.queue import JobOutcome
from hubsurvey.core.steps import RunContext
from hubsurvey.survey.cache import GB, CacheBudget
from hubsurvey.survey.executors.base import Inflight, measured_outcome, settle
from hubsurvey.survey.executors.forkserver import start_forkserver
from hubsurvey.survey.executors.limits import LimitsService, remote_limits
from hubsurvey.survey.jobs import (
    JobSpec,
    discard_downloads,
    download,
    error_outcome,
    job_bytes,
    job_client,
    run_job,
    worker_started,
)

log = logging.getLogger(__name__)

#: seconds to reach the scheduler before the run gives up on it (exit 4)
CONNECT_TIMEOUT = 20.0
#: seconds to fetch a finished job's outcome (a few kB) from its worker
RESULT_TIMEOUT = 120.0


def connect(address: str, timeout: float = CONNECT_TIMEOUT) -> Any:
    """A ``distributed.Client`` of the scheduler at ``address``, or one line: a malformed address is a
    usage error (exit 2), a scheduler that does not answer :class:`ClusterUnreachableError` (exit 4)."""
    parts = urlsplit(address if "://" in address else f"tcp://{address}")
    if not parts.hostname or parts.scheme not in ("tcp", "tls", "ws", "wss", "inproc", "ucx"):
        raise UsageError(f"--dask {address!r}: not a scheduler address (tcp://host:8786)")
    from distributed import Client

    try:
        return Client(address, timeout=timeout)
    except ValueError as e:  # distributed's own reading of the address
        close_half_built(e)
        raise UsageError(f"--dask {address!r}: not a scheduler address (tcp://host:8786): {e}") from None
    except Exception as e:  # refused, timed out, or the client's own start failing: no cluster to run on
        close_half_built(e)
        first = (str(e).strip().splitlines() or [type(e).__name__])[0] or type(e).__name__
        raise ClusterUnreachableError(
            f"cannot reach the Dask scheduler at {address} within {timeout:g} s: {first}") from None


def close_half_built(error: BaseException) -> None:
    """Close the ``Client`` whose constructor raised ``error``, now, while its event loop runs.

    Left alone, it is closed by its finalizer whenever the garbage collector reaches it: inside the
    next ``Client``'s start, that deadlocks (distributed's ``LoopRunner`` holds a lock of its class,
    not reentrant, around both start and stop); at the interpreter's exit, its loop gone, it waits
    forever."""
    from distributed import Client

    tb = error.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code is Client.__init__.__code__:
            client = tb.tb_frame.f_locals.get("self")
            if isinstance(client, Client):
                try:
                    client.close(timeout=5)
                except Exception as e:  # a client that never connected closes as it can
                    log.debug("closing a Dask client whose start failed: %s", one_line(e))
            return
        tb = tb.tb_next


@dataclass(frozen=True)
class DaskOptions:
    """``run``'s options of the Dask executor (given alone, they choose it)."""

    dask: str | None = field(default=None, metadata=flag("--dask", "Run jobs on a Dask cluster: tcp://scheduler:8786"))


class DaskExecutor(Inflight):
    """Jobs on the dask.distributed cluster whose scheduler is at ``address``."""

    name: ClassVar[str] = "dask"
    options: ClassVar[type] = DaskOptions
    #: one quota and one breaker for the cluster (False: each worker paces alone, as before they were
    #: shared; kept for the benchmark that measures the difference)
    share_limits: ClassVar[bool] = True

    def __init__(self, address: str, ctx: RunContext | None = None, *, max_cache_gb: float | None = None):
        super().__init__()
        self._client = connect(address)
        info = self._client.scheduler_info().get("workers", {})
        self.workers = len(info) or 1  # worker processes: each measures one job at a time
        per_host = Counter(urlsplit(addr).hostname for addr in info) or Counter({"": 1})
        self._worker_cache_bytes = int(max_cache_gb * GB) // max(per_host.values()) if max_cache_gb else None
        self._hub = ctx.client if ctx is not None else None
        self._closed = False
        self.limits: Any = None
        if ctx is not None and self.share_limits:
            # the token's quota and the breaker, for every client of the run: the workers' and ours
            spent = ctx.client.own_limits.snapshot()  # what the crawl spent of the current windows
            self.limits = self._client.submit(LimitsService, ctx.client.settings, spent, actor=True, pure=False).result()
            ctx.client.share_limits(remote_limits(self.limits, ctx.client.settings.breaker))

    @classmethod
    def preflight(cls, options: Mapping[str, Any]) -> None:
        """Reach the scheduler before any step runs, so that a run never crawls for a cluster it
        cannot use."""
        cls.check(options)
        connect(options["dask"]).close()

    @classmethod
    def check(cls, options: Mapping[str, Any]) -> None:
        if not options.get("dask"):
            raise UsageError("--executor dask needs the scheduler's address: --dask tcp://scheduler:8786")

    @classmethod
    def for_run(cls, ctx: RunContext) -> DaskExecutor:
        return cls(ctx.options.executor_options["dask"], ctx, max_cache_gb=ctx.options.max_cache_gb)

    def start(self, spec: JobSpec) -> Future[JobOutcome]:
        outer: Future[JobOutcome] = Future()

        def done(f: Any) -> None:
            # distributed runs every future's callbacks on one thread of the process: a callback
            # that waits on a closed client's loop (a result asked for after the run let its jobs
            # go) would wait forever, and no later run's job in this process would ever settle
            if self._closed:
                settle(outer, JobOutcome.failure("interrupted", f"{spec.where}: the run ended first", transient=True))
                return
            try:
                settle(outer, f.result(timeout=RESULT_TIMEOUT))
            except Exception as e:  # a lost worker, a cancelled task, a client closed meanwhile
                settle(outer, error_outcome(e, spec.where))

        self._client.submit(run_on_worker, spec, self.limits, self._worker_cache_bytes, pure=False).add_done_callback(done)
        return outer

    def close(self, *, cancel: bool = False) -> None:
        # interrupted or not, the jobs in flight are let go (their results are not taken: they stay
        # pending in the queue)
        self._closed = True
        if self._hub is not None and self.limits is not None:
            try:  # the steps after the jobs pace on what the cluster left of the windows
                self._hub.own_limits.seed(self.limits.snapshot().result())
            except Exception as e:  # a cluster gone: the coordinator's own count stands
                log.warning("the cluster's quota count could not be read back: %s", one_line(e))
            self._hub.share_limits(None)
        self._client.close()


# --- on the worker -------------------------------------------------------------------------------

_POOL_LOCK = threading.Lock()
_POOLS: dict[str, Any] = {}
_BUDGETS: dict[str, CacheBudget] = {}


def _child_pool() -> Any:
    """This worker's child process, made once: it measures one job at a time (a worker process is
    one core's worth of measuring), while the worker's other threads download the next jobs' files.

    A Dask worker under a nanny is a daemonic process, and multiprocessing refuses children to one
    (so that none outlives it). The child is what lets a job past its timeout or memory ceiling be
    stopped without stopping the worker, and pebble's children are daemonic themselves and end with
    the worker; so this process is allowed children, once, here.
    """
    from pebble import ProcessPool

    with _POOL_LOCK:
        pool = _POOLS.get("measure")
        if pool is None:
            multiprocessing.current_process()._config["daemon"] = False  # type: ignore[attr-defined]
            context = start_forkserver(["hubsurvey.survey.jobs"])
            pool = _POOLS["measure"] = ProcessPool(max_workers=1, context=context, initializer=worker_started)
        return pool


def _worker_name() -> str:
    """This worker's name, or a stand-in name outside a worker (tests)."""
    try:
        from distributed import get_worker

        worker = get_worker()
    except (ImportError, ValueError):
        return "local"
    return str(worker.name)


def _budget(cache: Path, max_bytes: int) -> CacheBudget:
    key = f"{cache}:{max_bytes}"
    with _POOL_LOCK:
        budget = _BUDGETS.get(key)
        if budget is None:
            budget = _BUDGETS[key] = CacheBudget(cache, max_bytes)
        return budget


def run_on_worker(spec: JobSpec, limits: Any = None, cache_bytes: int | None = None) -> JobOutcome:
    """One job on a Dask worker: download under the run's shared limits and the job's end, then
    measure in a child process bounded by what is left of ``--job-timeout`` and by ``--memory-mb``."""
    settings = spec.settings
    started = time.monotonic()
    name = _worker_name()
    if settings.hub is not None and cache_bytes is not None:
        # a folder of this worker's own, within its share of the host's budget
        folder = Path(settings.hub.cache_dir) / "workers" / "".join(c if c.isalnum() else "-" for c in name)
        settings = replace(settings, hub=replace(settings.hub, cache_dir=folder))
        spec = replace(spec, settings=settings)
    client = job_client(settings, remote_limits(limits, settings.hub.breaker if settings.hub else 5) if limits else None)
    budget = _budget(client.cache_dir, cache_bytes) if cache_bytes is not None else None
    job_id = spec.job.job_id
    local = spec
    try:
        try:
            with client.time_limit(settings.job_timeout):
                if budget is not None:
                    budget.admit(job_id, spec.job.dataset_id, job_bytes(spec, client))
                try:
                    local = download(spec, client)
                finally:
                    if budget is not None:
                        budget.downloaded(job_id)
        except Exception as e:
            return error_outcome(e, spec.where)
        left = settings.job_timeout - (time.monotonic() - started) if settings.job_timeout else None
        if left is not None and left <= 0:
            return JobOutcome.failure("timeout", f"{spec.where}: took longer than {settings.job_timeout:g} s")
        inner = _child_pool().schedule(run_job, args=(local, settings.memory_mb), timeout=left)
        return measured_outcome(inner, spec.where, settings.job_timeout, settings.memory_mb)
    finally:
        discard_downloads(local)
        if budget is not None:
            budget.release(job_id)
