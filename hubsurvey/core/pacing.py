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

import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from hubsurvey.core.errors import HubStoppedAnsweringError

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


def parse_ratelimit(headers: Mapping[str, str]) -> dict[str, QuotaState]:
    """The buckets named in ``RateLimit`` and ``RateLimit-Policy``, by bucket name.

    Each header is a list of items separated by commas; an item is ``;``-separated quoted names
    and ``key=value`` parameters. The bucket is the item's last quoted name (the policy's leading
    ``"fixed window"`` names the kind of window, not a bucket).
    """
    found: dict[str, dict[str, float]] = {}
    for header, keys in (("RateLimit", {"r": "remaining", "t": "reset_in"}),
                         ("RateLimit-Policy", {"q": "quota", "w": "window"})):
        for item in (headers.get(header) or "").split(","):
            tokens = [t.strip() for t in item.split(";")]
            names = [t.strip('"') for t in tokens if t.startswith('"') and t.strip('"') != "fixed window"]
            if not names:
                continue
            entry = found.setdefault(names[-1], {})
            for token in tokens:
                key, _, value = token.partition("=")
                if key in keys:
                    try:
                        entry[keys[key]] = float(value)
                    except ValueError:  # a malformed parameter is ignored, as if not sent
                        continue
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
    """What every pacer does: wait before a request (returning the seconds waited), and learn
    from an answer's headers."""

    def acquire(self) -> float:
        return 0.0

    def observe(self, state: QuotaState) -> None:
        return None


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

    def acquire(self) -> float:
        with self._lock:
            now = self._clock()
            delay = self._next - now
            self._next = max(now, self._next) + self._interval
        if delay > 0:
            self._sleep(delay)
            return delay
        return 0.0


class QuotaBucket(Pace):
    """A fixed-window quota: ``quota`` requests per ``window`` Hub seconds (thread-safe).

    The first request opens a local window; the Hub's headers then set the window's end and what
    is left of it. Requests in flight were already counted here, so an answer's ``r`` only lowers
    the local count within one window, also when the Hub's window ends earlier than the local
    guess; an answer from a window that ends later (the Hub has opened a new one) replaces it.
    """

    def __init__(self, quota: int, window: float, *, clock_scale: float = 1.0,
                 clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep):
        self.quota = quota
        self.window = window
        self.scale = clock_scale
        self._remaining = quota
        self._reset_at: float | None = None
        self._lock = threading.Lock()
        self._clock, self._sleep = clock, sleep
        self.waited = 0.0  # seconds spent waiting for a reset, for the log and the tests

    def acquire(self) -> float:
        waited = 0.0
        while True:
            with self._lock:
                now = self._clock()
                if self._reset_at is None:
                    self._reset_at = now + self.window * self.scale
                if now >= self._reset_at:  # a new window: the whole quota again
                    self._remaining = self.quota
                    self._reset_at = now + self.window * self.scale
                if self._remaining > 0:
                    self._remaining -= 1
                    self.waited += waited
                    return waited
                delay = self._reset_at - now
            self._sleep(delay)
            waited += delay

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
            # A reset no later than ours (within the headers' rounding) is the window we count in, even when
            # we opened it late and guessed its end too far: the Hub's r does not yet count our requests in
            # flight, so it only lowers. A later reset is a window the Hub has opened since: its r replaces.
            ours = self._reset_at is not None and reset_at <= self._reset_at + 2.0 * self.scale
            if state.remaining is not None:
                self._remaining = min(self._remaining, state.remaining) if ours else state.remaining
            self._reset_at = reset_at

    @property
    def remaining(self) -> int:
        return self._remaining


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
