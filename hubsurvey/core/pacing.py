"""Pacing that follows the Hub's quota, and the breaker that gives up on a Hub that stopped answering.

The Hub counts requests in two buckets per fixed window (5 minutes): ``api`` (listings, dataset
info, trees) and ``resolvers`` (file downloads and ranged reads). Each answer may say where the
caller stands:

- ``RateLimit: "api";r=<remaining>;t=<seconds to the window's reset>``
- ``RateLimit-Policy: "fixed window";"api";q=<quota>;w=<window seconds>``

A :class:`QuotaBucket` starts from the documented quota of the caller's plan, spends what is
left of the window at full speed, and when nothing is left waits for the reset instead of asking
(so a 429 storm never starts). Whatever the Hub says in those headers wins over the local count.
:class:`FixedPace` is the ``--rate`` / ``--file-rate`` override: a fixed number of requests a second.

``clock_scale`` maps the Hub's seconds to real ones (1.0 for the Hub; the stand-in's compressed
clock, where a 300-second window passes in 3 real seconds, is 0.01).
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace

from hubsurvey.core.errors import HubStoppedAnsweringError, OutOfTimeError

#: the Hub's bucket names as the headers spell them -> the client's two buckets
API, RESOLVERS = "api", "resolvers"

@dataclass(frozen=True)
class QuotaState:
    """One bucket as an answer's headers describe it (any part may be missing)."""

    bucket: str
    remaining: int | None = None
    reset_in: float | None = None
    quota: int | None = None
    window: float | None = None


#: the largest value each quota parameter may take to be used: a count is a float's whole numbers,
#: a wait no longer than a day (the Hub's window is 5 minutes; a sleep far longer cannot even be asked for)
_COUNT_MAX, _SECONDS_MAX = float(2**53), 86_400.0


def _header_number(text: str, maximum: float) -> float | None:
    """A parameter's value, or None when it is no usable number (malformed, NaN, infinite, negative,
    above ``maximum``): ignored, as if not sent."""
    try:
        number = float(text)
    except ValueError:
        return None
    return number if 0.0 <= number <= maximum else None  # False for NaN


def parse_ratelimit(headers: Mapping[str, str]) -> dict[str, QuotaState]:
    """The buckets named in ``RateLimit`` and ``RateLimit-Policy``, by bucket name.

    Each header is a list of items separated by commas; an item is ``;``-separated quoted names
    and ``key=value`` parameters. The bucket is the item's last quoted name (the policy's leading
    ``"fixed window"`` names the kind of window, not a bucket).
    """
    found: dict[str, dict[str, float]] = {}
    for header, keys in (("RateLimit", {"r": ("remaining", _COUNT_MAX), "t": ("reset_in", _SECONDS_MAX)}),
                         ("RateLimit-Policy", {"q": ("quota", _COUNT_MAX), "w": ("window", _SECONDS_MAX)})):
        for item in (headers.get(header) or "").split(","):
            tokens = [t.strip() for t in item.split(";")]
            names = [t.strip('"') for t in tokens if t.startswith('"') and t.strip('"') != "fixed window"]
            if not names:
                continue
            entry = found.setdefault(names[-1], {})
            for token in tokens:
                key, _, value = token.partition("=")
                if key in keys and (number := _header_number(value, keys[key][1])) is not None:
                    entry[keys[key][0]] = number
    return {
        name: QuotaState(
            name,
            remaining=int(e["remaining"]) if "remaining" in e else None,
            reset_in=e.get("reset_in"),
            quota=int(e["quota"]) if "quota" in e else None,
            window=e.get("window"),
        )
        for name, e in found.items()
    }


class Pace:
    """What every pacer does: say when the next request may go (:meth:`reserve`, which never
    blocks, so that a pacer can live in another process: a cluster shares one), wait for it
    (:meth:`acquire`), and learn from an answer's headers (:meth:`observe`)."""

    def reserve(self) -> tuple[bool, float]:
        """(granted, delay): with ``granted``, the request may go after ``delay`` seconds (its slot is
        taken); without, nothing is taken and the caller asks again after ``delay``."""
        return True, 0.0

    def observe(self, state: QuotaState) -> None:
        return None

    #: whether it follows the Hub's quota (its headers name the wait after a 429, not a backoff)
    follows_quota: bool = False

    _clock: Callable[[], float] = staticmethod(time.monotonic)
    _sleep: Callable[[float], None] = staticmethod(time.sleep)

    def acquire(self, until: float = math.inf) -> float:
        """Wait until a request may go; the seconds waited. A wait that would end after ``until``
        (monotonic: the job's or the run's end) raises :class:`OutOfTimeError` at once."""
        waited = 0.0
        while True:
            granted, delay = self.reserve()
            if delay > 0:
                if self._clock() + delay > until:
                    raise OutOfTimeError(f"the quota's next opening is {delay:.0f} s away, past the time left")
                self._sleep(delay)
                waited += delay
            if granted:
                return waited


class Unpaced(Pace):
    """No pacing at all (``--rate 0``, the stand-in in tests)."""


class FixedPace(Pace):
    """At most ``rate`` requests a second, evenly spaced, whatever the Hub says (thread-safe)."""

    def __init__(self, rate: float, *, clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep):
        self._interval = 1.0 / rate
        self._next = 0.0
        self._lock = threading.Lock()
        self._clock, self._sleep = clock, sleep

    def reserve(self) -> tuple[bool, float]:
        with self._lock:
            now = self._clock()
            delay = self._next - now
            self._next = max(now, self._next) + self._interval
        return True, max(0.0, delay)


class QuotaBucket(Pace):
    """A fixed-window quota: ``quota`` requests per ``window`` Hub seconds (thread-safe).

    The first request opens a local window; the Hub's headers then set the window's end and what
    is left of it. Once an answer has aligned the window, answers are told apart by their reset,
    whatever their delay on a loaded machine or a cluster's network:

    - within half a window of ours: the window we count in. Requests in flight were already counted
      here and not yet by the Hub, so its ``r`` only lowers the local count;
    - later than that: a window the Hub has opened since; its count replaces ours;
    - earlier than that: a late answer from a window already over; it says nothing of this one.
    """

    follows_quota = True

    def __init__(self, quota: int, window: float, *, clock_scale: float = 1.0,
                 clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep):
        self.quota = quota
        self.window = window
        self.scale = clock_scale
        self._remaining = quota
        self._reset_at: float | None = None
        self._aligned = False  # whether an answer has set the window's end (until then it is a guess)
        self._lock = threading.Lock()
        self._clock, self._sleep = clock, sleep
        self.waited = 0.0  # seconds callers were told to wait for a reset, for the log and the tests

    def reserve(self) -> tuple[bool, float]:
        with self._lock:
            now = self._clock()
            if self._reset_at is None:
                self._reset_at = now + self.window * self.scale
            if now >= self._reset_at:  # a new window: the whole quota again
                self._remaining = self.quota
                self._reset_at = now + self.window * self.scale
            if self._remaining > 0:
                self._remaining -= 1
                return True, 0.0
            delay = self._reset_at - now
            self.waited += delay
            return False, delay

    def observe(self, state: QuotaState) -> None:
        with self._lock:
            now = self._clock()
            if state.quota:
                self.quota = state.quota
            if state.window:
                self.window = state.window
            if state.reset_in is None:
                return
            reset_at = now + state.reset_in * self.scale
            half = 0.5 * self.window * self.scale
            if self._aligned and self._reset_at is not None and reset_at < self._reset_at - half:
                return  # from a window already over
            self._aligned = True
            ours = self._reset_at is not None and reset_at <= self._reset_at + half
            if state.remaining is not None:
                self._remaining = min(self._remaining, state.remaining) if ours else state.remaining
            self._reset_at = reset_at

    @property
    def remaining(self) -> int:
        return self._remaining

    def snapshot(self) -> QuotaState | None:
        """Where this bucket stands, as an answer's headers would say it (None: nothing spent yet):
        how a bucket hands its window to another (a cluster's, then back)."""
        with self._lock:
            if self._reset_at is None:
                return None
            left = max(0.0, self._reset_at - self._clock()) / self.scale
            return QuotaState("", remaining=self._remaining, reset_in=left, quota=self.quota, window=self.window)


class Breaker:
    """Counts consecutive requests that timed out, across jobs; at ``threshold`` it opens: every
    later request fails at once with :class:`HubStoppedAnsweringError` (exit code 4), and the run
    ends, leaving what is left pending. Any answer closes the count again."""

    def __init__(self, threshold: int):
        self.threshold = threshold
        self._consecutive = 0
        self._lock = threading.Lock()
        self.opened_by: str | None = None  # the last timeout's message, once open

    @property
    def open(self) -> bool:
        return self.opened_by is not None

    def check(self) -> None:
        if self.opened_by is not None:
            raise HubStoppedAnsweringError(self.message())

    def message(self) -> str:
        return (f"the Hub stopped answering: {self.threshold} requests in a row timed out "
                f"(last: {self.opened_by}); what is left stays pending for the next run")

    def answered(self) -> None:
        with self._lock:
            if self.opened_by is None:
                self._consecutive = 0

    def timed_out(self, what: str) -> None:
        with self._lock:
            self._consecutive += 1
            if self._consecutive >= self.threshold and self.opened_by is None:
                self.opened_by = what


def pacer_for(rate: float | None, quota: int, window: float, clock_scale: float) -> Pace:
    """A fixed pace when ``rate`` is given (0: unpaced), else the quota's bucket."""
    if rate is None:
        return QuotaBucket(quota, window, clock_scale=clock_scale)
    return FixedPace(rate) if rate > 0 else Unpaced()


@dataclass
class HubLimits:
    """What every request to the Hub from one token draws on: a pacer per bucket and the breaker.

    One process has one (its Hub client's); a cluster shares one, held by one service that every
    worker's client asks (``hubsurvey.survey.executors.dask``), since the quota belongs to the
    token, not to a process.
    """

    pacers: dict[str, Pace]
    breaker: Breaker

    def snapshot(self) -> dict[str, QuotaState]:
        """Where each quota bucket stands (see :meth:`QuotaBucket.snapshot`)."""
        states = {name: pacer.snapshot() for name, pacer in self.pacers.items() if isinstance(pacer, QuotaBucket)}
        return {name: replace(state, bucket=name) for name, state in states.items() if state is not None}

    def seed(self, states: dict[str, QuotaState]) -> None:
        """Take over what another set of limits spent of the current windows."""
        for name, state in states.items():
            pacer = self.pacers.get(name)
            if pacer is not None:
                pacer.observe(state)

    @classmethod
    def of(cls, *, rate: float | None, file_rate: float | None, quotas: tuple[int, int], window: float,
           clock_scale: float, breaker: int) -> HubLimits:
        api_quota, resolver_quota = quotas
        return cls(
            pacers={API: pacer_for(rate, api_quota, window, clock_scale),
                    RESOLVERS: pacer_for(file_rate, resolver_quota, window, clock_scale)},
            breaker=Breaker(breaker),
        )
