"""One quota, one breaker and one cache budget for a whole cluster.

The Hub's quota belongs to the token, not to a process: K workers pacing alone spend K times it.
So a cluster's run keeps the token's :class:`~hubsurvey.core.pacing.HubLimits` in one place, a
:class:`LimitsService` (on Dask, an actor the coordinator starts), and every Hub client of the run,
the coordinator's and each worker's, draws on it through :func:`remote_limits`:

- before each request, a client asks the service for a permit (:meth:`LimitsService.reserve`,
  which never blocks: it says how long to wait) and waits on its own side;
- every answer's ``RateLimit`` headers go to the service (:meth:`LimitsService.observe`), so what
  any worker learns of the quota paces them all;
- timeouts and answers are counted by the service's one breaker: N consecutive timeouts across all
  jobs open it for every client, and the coordinator ends the run (exit 4).

The service only ever holds plain numbers; it never sees the token or a request.
"""

from __future__ import annotations

from typing import Any

from hubsurvey.core.errors import ClusterUnreachableError, HubStoppedAnsweringError, one_line
from hubsurvey.core.pacing import Breaker, HubLimits, Pace, QuotaState
from hubsurvey.core.settings import Settings


class LimitsService:
    """The run's pacers and breaker, asked by every client of the run. Each method takes and gives
    plain data and returns at once (a Dask actor serves its calls one at a time)."""

    def __init__(self, settings: Settings, spent: dict[str, QuotaState] | None = None):
        """``spent``: where the coordinator's own buckets stand (its crawl spent part of the window)."""
        self._limits = HubLimits.of(
            rate=settings.rate, file_rate=settings.file_rate, quotas=settings.quotas, window=settings.quota_window,
            clock_scale=settings.clock_scale, breaker=settings.breaker)
        self._limits.seed(spent or {})
        self.permits = dict.fromkeys(self._limits.pacers, 0)  # permits granted, per bucket

    def kinds(self) -> dict[str, bool]:
        """Per bucket: whether it follows the Hub's quota (its 429s carry the wait)."""
        return {name: pacer.follows_quota for name, pacer in self._limits.pacers.items()}

    def reserve(self, bucket: str) -> tuple[bool, float, str | None]:
        """A permit for one request on ``bucket``: (granted, seconds to wait, the breaker's message
        when it is open)."""
        granted, delay = self._limits.pacers[bucket].reserve()
        if granted:
            self.permits[bucket] += 1
        return granted, delay, self._limits.breaker.opened_by

    def observe(self, bucket: str, remaining: int | None, reset_in: float | None, quota: int | None,
                window: float | None) -> None:
        pacer = self._limits.pacers.get(bucket)
        if pacer is not None:
            pacer.observe(QuotaState(bucket, remaining, reset_in, quota, window))

    def timed_out(self, what: str) -> str | None:
        self._limits.breaker.timed_out(what)
        return self._limits.breaker.opened_by

    def answered(self) -> str | None:
        self._limits.breaker.answered()
        return self._limits.breaker.opened_by

    def opened_by(self) -> str | None:
        return self._limits.breaker.opened_by

    def granted(self) -> dict[str, int]:
        return dict(self.permits)

    def snapshot(self) -> dict[str, QuotaState]:
        """Where the buckets stand, for the coordinator's own client once the cluster is done."""
        return self._limits.snapshot()


#: seconds a client waits for the service's answer: it answers at once, so this bounds only a job
#: whose run has ended (its service went with the run's Dask client) or whose service's worker is gone
SERVICE_TIMEOUT = 10.0


def _value(result: Any) -> Any:
    """A service call's value: a Dask actor's calls give a future, a local service its value."""
    if not hasattr(result, "result"):
        return result
    try:
        return result.result(timeout=SERVICE_TIMEOUT)
    except Exception as e:  # a timeout, a closed connection: either way no service to pace on
        raise ClusterUnreachableError(
            f"the run's quota and breaker service did not answer within {SERVICE_TIMEOUT:g} s ({one_line(e)}): "
            "its run has ended or the worker holding it is gone") from None


class RemotePace(Pace):
    """One bucket of a :class:`LimitsService`, paced on the caller's side."""

    def __init__(self, service: Any, bucket: str, follows_quota: bool, breaker: RemoteBreaker):
        self._service = service
        self._bucket = bucket
        self.follows_quota = follows_quota
        self._breaker = breaker

    def reserve(self) -> tuple[bool, float]:
        granted, delay, opened_by = _value(self._service.reserve(self._bucket))
        self._breaker.opened_by = opened_by
        return granted, delay

    def observe(self, state: QuotaState) -> None:
        _value(self._service.observe(self._bucket, state.remaining, state.reset_in, state.quota, state.window))


class RemoteBreaker(Breaker):
    """The service's breaker, as a client sees it: every count goes to the service, and its state
    comes back with each answer (and on :meth:`check`, asked afresh)."""

    def __init__(self, service: Any, threshold: int):
        super().__init__(threshold)
        self._service = service

    def check(self) -> None:
        self.opened_by = _value(self._service.opened_by())
        if self.opened_by is not None:
            raise HubStoppedAnsweringError(self.message())

    def answered(self) -> None:
        self.opened_by = _value(self._service.answered())

    def timed_out(self, what: str) -> None:
        self.opened_by = _value(self._service.timed_out(what))


def remote_limits(service: Any, breaker_threshold: int) -> HubLimits:
    """The :class:`HubLimits` of a client that draws on ``service`` (a :class:`LimitsService`, or a
    Dask actor of one)."""
    breaker = RemoteBreaker(service, breaker_threshold)
    kinds = _value(service.kinds())
    return HubLimits(pacers={name: RemotePace(service, name, follows, breaker) for name, follows in kinds.items()},
                     breaker=breaker)
