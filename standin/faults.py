"""Deterministic fault injection for the stand-in Hub.

Every switch is driven by request counters, never by randomness, so a test that runs the same
requests sees the same faults. Each switch counts only the requests inside its scope (request
categories and/or a dataset id glob) and fires on every Nth of them.

Switches, in the order the server applies them to one request:

- ``reset_every``: the connection is dropped with a TCP reset and no response;
- ``rate_limit_every``: 429 with ``RateLimit``, ``RateLimit-Policy`` and ``Retry-After`` headers;
- ``error_burst_every`` / ``error_burst_len``: the Nth request starts a burst of K consecutive
  ``error_status`` (500/502/503/504) responses;
- ``truncate_every``: the full ``Content-Length`` is announced but only half the body is sent;
- ``slow_ms``: each matching response is delayed;
- ``hang_every``: the connection is accepted and the request read, but no answer ever comes
  (until the server stops): a client without a read timeout waits forever;
- ``corrupt_parquet``: a permanent fault: the Parquet files of datasets matching these globs are
  served with garbage in place of their footer (same length);
- ``drip_ms``: each matching response's body is sent one byte every ``drip_ms`` milliseconds (the
  headers at once): a client without a floor rate waits for ever on a large body;
- ``hostile_every`` / ``hostile``: every Nth matching request gets a hostile answer of one of
  ``HOSTILE_KINDS`` in place of its real one: ``html`` (a 200 HTML page, a proxy's interstitial),
  ``malformed_json``, ``truncated_json`` (half the JSON, with a matching Content-Length),
  ``json_object`` (an object where a list is expected), ``redirect_loop`` (a 302 to itself),
  ``short_length`` (a Content-Length shorter than the body), ``no_sha`` (the JSON without its
  ``sha``), ``gzip_bomb`` (a small gzip body that inflates to ``bomb_mb`` MB) and ``self_link``
  (the real answer, with a ``Link`` to itself as its next page).

``quota``: a :class:`Quota` makes the server enforce the Hub's fixed-window rate limits (see its
docstring) on every request, before any fault.

``echo_auth``: injected error responses echo the request's ``Authorization`` header in their body
and ``X-Error-Message``, as a careless proxy might (a token-scrubbing test). ``error_status`` may
also be 401 or 403 (refused, not transient).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from fnmatch import fnmatchcase
from typing import Any

CATEGORIES = (
    "list",
    "info",
    "tree",
    "refs",
    "resolve_head",
    "resolve_get",
    "parquet_api",
    "models",
    "create",
    "validate_yaml",
    "preupload",
    "commit",
    "discussions",
    "whoami",
    "other",
)
SWITCHES = ("hang", "reset", "rate_limit", "error_burst", "truncate", "slow", "drip", "hostile")
HOSTILE_KINDS = ("html", "malformed_json", "truncated_json", "json_object", "redirect_loop", "short_length",
                 "no_sha", "gzip_bomb", "self_link")
ERROR_STATUSES = (401, 403, 500, 502, 503, 504)


@dataclass(frozen=True)
class Scope:
    """Which requests a switch sees.

    ``categories``: request categories (see ``CATEGORIES``); empty means all of them.
    ``dataset``: a glob on the dataset id. Requests that concern no dataset (the listing,
    create, validate-yaml) only match the catch-all ``"*"``.
    """

    categories: frozenset[str] = frozenset()
    dataset: str = "*"

    def __post_init__(self) -> None:
        object.__setattr__(self, "categories", frozenset(self.categories))
        unknown = self.categories - set(CATEGORIES)
        if unknown:
            raise ValueError(f"unknown request categories: {sorted(unknown)}")

    def matches(self, category: str, dataset_id: str | None) -> bool:
        if self.categories and category not in self.categories:
            return False
        if self.dataset == "*":
            return True
        return dataset_id is not None and fnmatchcase(dataset_id, self.dataset)

    def to_dict(self) -> dict[str, Any]:
        return {"categories": sorted(self.categories), "dataset": self.dataset}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Scope:
        return cls(categories=frozenset(data.get("categories", ())), dataset=data.get("dataset", "*"))


@dataclass(frozen=True)
class Faults:
    """The fault switches of a stand-in server (all off by default). See the module docstring.

    ``scope`` applies to every switch; ``scopes`` overrides it per switch name (``SWITCHES``).
    """

    rate_limit_every: int = 0
    rate_limit_secs: int = 1
    error_burst_every: int = 0
    error_burst_len: int = 1
    error_status: int = 503
    reset_every: int = 0
    truncate_every: int = 0
    slow_ms: int = 0
    hang_every: int = 0
    echo_auth: bool = False
    corrupt_parquet: tuple[str, ...] = ()
    drip_ms: int = 0
    hostile_every: int = 0
    hostile: str = "html"
    bomb_mb: int = 100
    scope: Scope = Scope()
    scopes: Mapping[str, Scope] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "corrupt_parquet", tuple(self.corrupt_parquet))
        object.__setattr__(self, "scopes", dict(self.scopes))
        ints = ("rate_limit_every", "rate_limit_secs", "error_burst_every", "error_burst_len",
                "reset_every", "truncate_every", "slow_ms", "hang_every", "drip_ms", "hostile_every", "bomb_mb")
        for name in ints:
            if not isinstance(getattr(self, name), int) or getattr(self, name) < 0:
                raise ValueError(f"{name} must be a non-negative int")
        if self.hostile not in HOSTILE_KINDS:
            raise ValueError(f"hostile must be one of {HOSTILE_KINDS}")
        if self.error_status not in ERROR_STATUSES:
            raise ValueError(f"error_status must be one of {ERROR_STATUSES}")
        unknown = set(self.scopes) - set(SWITCHES)
        if unknown:
            raise ValueError(f"unknown fault switches in scopes: {sorted(unknown)}")

    def scope_of(self, switch: str) -> Scope:
        return self.scopes.get(switch, self.scope)

    def corrupts(self, dataset_id: str) -> bool:
        """Whether the Parquet files of ``dataset_id`` are served corrupted."""
        return any(fnmatchcase(dataset_id, glob) for glob in self.corrupt_parquet)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["corrupt_parquet"] = list(self.corrupt_parquet)
        data["scope"] = self.scope.to_dict()
        data["scopes"] = {name: s.to_dict() for name, s in self.scopes.items()}
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Faults:
        """Build from JSON-like data (the ``/_standin/faults`` body); unknown keys are an error."""
        data = dict(data)
        if "scope" in data:
            data["scope"] = Scope.from_dict(data["scope"])
        if "scopes" in data:
            data["scopes"] = {name: Scope.from_dict(s) for name, s in data["scopes"].items()}
        return cls(**data)


@dataclass(frozen=True)
class Decision:
    """What the server does to one request. ``action`` is None, "reset", "rate_limit" or "error"."""

    action: str | None = None
    truncate: bool = False
    delay_s: float = 0.0
    drip_s: float = 0.0
    hostile: str | None = None


class FaultInjector:
    """Thread-safe request counters for the switches of one ``Faults`` value."""

    def __init__(self, faults: Faults | None = None) -> None:
        self._lock = threading.Lock()
        self.set(faults or Faults())

    @property
    def faults(self) -> Faults:
        return self._faults

    def set(self, faults: Faults) -> None:
        """Replace the switches; counters restart so the new faults are repeatable."""
        with self._lock:
            self._faults = faults
            self._counts = dict.fromkeys(SWITCHES, 0)

    def _tick(self, switch: str, category: str, dataset_id: str | None) -> int:
        """Count the request for ``switch`` if in scope; return its 1-based count, 0 if out of scope."""
        if not self._faults.scope_of(switch).matches(category, dataset_id):
            return 0
        self._counts[switch] += 1
        return self._counts[switch]

    def decide(self, category: str, dataset_id: str | None) -> Decision:
        """Count one request and say which faults it gets."""
        with self._lock:
            f = self._faults
            counts = {s: self._tick(s, category, dataset_id) for s in SWITCHES}
        action = None
        if f.hang_every and counts["hang"] and counts["hang"] % f.hang_every == 0:
            action = "hang"
        elif f.reset_every and counts["reset"] and counts["reset"] % f.reset_every == 0:
            action = "reset"
        elif f.rate_limit_every and counts["rate_limit"] and counts["rate_limit"] % f.rate_limit_every == 0:
            action = "rate_limit"
        elif (
            f.error_burst_every
            and counts["error_burst"] >= f.error_burst_every
            and counts["error_burst"] % f.error_burst_every < f.error_burst_len
        ):
            action = "error"
        truncate = bool(f.truncate_every and counts["truncate"] and counts["truncate"] % f.truncate_every == 0)
        delay = f.slow_ms / 1000 if f.slow_ms and counts["slow"] else 0.0
        drip = f.drip_ms / 1000 if f.drip_ms and counts["drip"] else 0.0
        hostile = f.hostile if f.hostile_every and counts["hostile"] and counts["hostile"] % f.hostile_every == 0 else None
        return Decision(action=action, truncate=truncate, delay_s=delay, drip_s=drip, hostile=hostile)


class Quota:
    """The Hub's fixed-window rate limits, on a compressed clock.

    Per bucket (``api``: everything but file reads; ``resolvers``: ``/resolve/`` GETs and HEADs),
    at most ``api`` / ``resolvers`` requests per window of ``window`` Hub seconds (0: that bucket
    is not limited). ``clock_scale`` real seconds make one Hub second: the default 0.01 passes a
    300-second window in 3 real seconds. Windows are fixed, counted from the first request.

    Every answer carries ``RateLimit: "<bucket>";r=<remaining>;t=<Hub seconds to reset>`` and
    ``RateLimit-Policy: "fixed window";"<bucket>";q=<quota>;w=<window>``; a request over the quota
    gets a 429 with them (and ``Retry-After``). :attr:`log` keeps, per (bucket, window), the
    requests served and refused.
    """

    def __init__(self, api: int = 0, resolvers: int = 0, *, window: int = 300, clock_scale: float = 0.01,
                 clock: Any = None):
        import time

        self.quotas = {"api": api, "resolvers": resolvers}
        self.window = window
        self.scale = clock_scale
        self._clock = clock or time.monotonic
        self._start: float | None = None
        self._lock = threading.Lock()
        self.log: dict[tuple[str, int], list[int]] = {}  # (bucket, window) -> [served, refused]

    def _window(self) -> tuple[float, float, int]:
        """(now, a window's length in real seconds, the index of the window now); the first request
        opens window 0. Called with the lock held."""
        now = self._clock()
        if self._start is None:
            self._start = now
        span = self.window * self.scale
        return now, span, int((now - self._start) // span)

    def admit(self, bucket: str) -> tuple[bool, dict[str, str]]:
        """Count one request; (whether it is served, the headers of a 429 sent now)."""
        quota = self.quotas.get(bucket, 0)
        if not quota:
            return True, {}
        with self._lock:
            index = self._window()[2]
            counts = self.log.setdefault((bucket, index), [0, 0])
            used = counts[0]
            served = used < quota
            counts[0 if served else 1] += 1
        headers = self.headers(bucket)
        if not served:
            headers["Retry-After"] = headers["RateLimit"].rpartition("t=")[2]
        return served, headers

    def headers(self, bucket: str) -> dict[str, str]:
        """Where ``bucket`` stands now: the headers of an answer sent at this moment. An answer that
        took a while to build says how long is left of the window when it leaves, as the Hub's
        does, not when its request was counted."""
        import math

        quota = self.quotas.get(bucket, 0)
        if not quota:
            return {}
        with self._lock:
            now, span, index = self._window()
            remaining = max(0, quota - self.log.get((bucket, index), [0, 0])[0])
            reset = max(1, math.ceil((self._start + (index + 1) * span - now) / self.scale))
        return {
            "RateLimit": f'"{bucket}";r={remaining};t={reset}',
            "RateLimit-Policy": f'"fixed window";"{bucket}";q={quota};w={self.window}',
        }
