"""hubsurvey's settings, read once.

One frozen :class:`Settings` is built at start (:meth:`Settings.from_env`) from the environment
and the command line, then passed down: to the Hub client, the run's steps and the workers. No
other product module reads ``os.environ``; a test checks that.

The environment variables (the command line wins over each):

- ``HF_ENDPOINT`` (default https://huggingface.co) and ``HF_TOKEN`` (or ``HUGGING_FACE_HUB_TOKEN``);
- ``HUBSURVEY_CONNECT_TIMEOUT`` (10 s), ``HUBSURVEY_READ_TIMEOUT`` (60 s), ``HUBSURVEY_MAX_ATTEMPTS`` (6);
- ``HUBSURVEY_CACHE_DIR`` (default ``$XDG_CACHE_HOME/hubsurvey/hub`` or ``~/.cache/hubsurvey/hub``);
- ``HUBSURVEY_DEADLINE`` (60 s): one deadline per request, over its connect, every read and every
  retry; a file download's body then runs on the drip floor and the job's own deadline;
- ``HUBSURVEY_DRIP_FLOOR`` (1024 bytes/s) averaged over ``HUBSURVEY_DRIP_WINDOW`` (10 s): a body
  that arrives slower is a timeout;
- ``HUBSURVEY_BREAKER`` (5): after this many consecutive requests that timed out (across jobs),
  the Hub is taken to have stopped answering and the run ends with exit 4;
- ``HUBSURVEY_PLAN`` (``anonymous`` without a token, ``free`` with one; or ``pro``): the Hub's quota
  per 5-minute window that pacing starts from; ``HUBSURVEY_API_QUOTA`` / ``HUBSURVEY_RESOLVER_QUOTA``
  set the two buckets explicitly. The Hub's ``RateLimit`` headers, when sent, win over both;
- ``HUBSURVEY_MAX_RESPONSE_MB`` (64): what one API answer may hold, after decompression;
- ``HUBSURVEY_CLOCK_SCALE`` (1): real seconds per second of the Hub's quota windows; only a Hub
  on a compressed clock (the stand-in's, 0.01) needs another value.
"""

from __future__ import annotations

import contextlib
import ipaddress
import math
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from hubsurvey.core.errors import UsageError, register_secret

DEFAULT_ENDPOINT = "https://huggingface.co"
DEFAULT_CONNECT_TIMEOUT = 10.0
DEFAULT_READ_TIMEOUT = 60.0
DEFAULT_MAX_ATTEMPTS = 6
DEFAULT_DEADLINE = 60.0  # seconds, for one request over connect, reads and retries
DEFAULT_DRIP_FLOOR = 1024.0  # bytes per second, averaged over DEFAULT_DRIP_WINDOW
DEFAULT_DRIP_WINDOW = 10.0
DEFAULT_BREAKER = 5  # consecutive timed-out requests before the run gives up on the Hub
DEFAULT_MAX_RESPONSE_MB = 64.0
DEFAULT_MAX_WAIT = 60.0  # the longest backoff between two attempts
#: The Hub's documented quotas per fixed window of QUOTA_WINDOW seconds: (API calls, resolver calls).
#: Resolvers are file downloads and ranged reads of files.
QUOTA_WINDOW = 300.0
PLANS: dict[str, tuple[int, int]] = {
    "anonymous": (500, 3000),
    "free": (1000, 5000),
    "pro": (2500, 12000),
}


class SettingsError(UsageError):
    """A setting in the environment that cannot be used (exit code 2, as a bad option)."""

    error_class = "settings"


def _positive_float(environ: Mapping[str, str], name: str, default: float) -> float:
    value = environ.get(name)
    if not value:
        return default
    try:
        number = float(value)
    except ValueError:
        raise SettingsError(f"{name}={value!r}: not a number") from None
    if not math.isfinite(number):
        raise SettingsError(f"{name}={value!r}: must be a finite number")
    if number <= 0:
        raise SettingsError(f"{name}={value!r}: must be more than 0")
    return number


def _positive_int(environ: Mapping[str, str], name: str, default: int | None) -> int | None:
    value = environ.get(name)
    if not value:
        return default
    if not value.strip().isdigit() or int(value) <= 0:
        raise SettingsError(f"{name}={value!r}: must be a whole number more than 0")
    return int(value)


def register_token(environ: Mapping[str, str] | None = None) -> None:
    """Give the environment's token to the scrubber, without reading (or refusing) other settings:
    every command does this first, so even one that never talks to the Hub scrubs it."""
    env = os.environ if environ is None else environ
    register_secret(env.get("HF_TOKEN") or env.get("HUGGING_FACE_HUB_TOKEN"))


#: the variables that put huggingface_hub (and datasets) in offline mode: no request at all
OFFLINE_VARIABLES = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE")


def is_loopback(endpoint: str) -> bool:
    """Whether ``endpoint``'s host is this machine: ``localhost`` or a loopback address (127.0.0.0/8, ::1)."""
    host = urlsplit(endpoint).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:  # a name: only localhost is known to be this machine
        return False


@contextlib.contextmanager
def online_on_loopback(endpoint: str) -> Iterator[None]:
    """Inside the block, offline mode is lifted for this process and the processes it starts, for a
    Hub served on this machine (``endpoint`` on loopback): offline mode means no network, and a Hub
    on loopback is none. The demo's Hub is the stand-in it serves itself. Another endpoint is
    refused (:class:`SettingsError`, exit 2) before anything is done."""
    if not is_loopback(endpoint):
        raise SettingsError(f"{endpoint}: not on loopback; offline mode cannot be lifted for it")
    # lazy: reading the settings never imports huggingface_hub; only the demo lifts offline mode
    from huggingface_hub import constants

    offline = constants.HF_HUB_OFFLINE
    constants.HF_HUB_OFFLINE = False  # this process read it when it imported huggingface_hub
    try:
        # worker processes read it when they import huggingface_hub
        with _environment(dict.fromkeys(OFFLINE_VARIABLES)):
            yield
    finally:
        constants.HF_HUB_OFFLINE = offline


def default_cache_dir(environ: Mapping[str, str]) -> Path:
    """``HUBSURVEY_CACHE_DIR``, else ``$XDG_CACHE_HOME/hubsurvey/hub``: never the user's own HF cache."""
    configured = environ.get("HUBSURVEY_CACHE_DIR")
    if configured:
        return Path(configured)
    base = environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "hubsurvey" / "hub"


@dataclass(frozen=True)
class Settings:
    """Everything configurable about talking to the Hub and caching its files.

    ``token`` never appears in ``repr`` or :meth:`as_json`; ask :attr:`has_token` instead.
    ``rate`` / ``file_rate``: a fixed pace of API / file requests per second that overrides the
    quota (``None``: follow the quota; ``0``: unpaced).
    ``plan`` (``None``: ``free`` with a token, else ``anonymous``), ``api_quota`` and
    ``resolver_quota`` (``None``: the plan's): the quota per ``quota_window`` seconds that pacing
    starts from, until the Hub's own ``RateLimit`` headers say otherwise.
    """

    endpoint: str = DEFAULT_ENDPOINT
    token: str | None = field(default=None, repr=False)
    connect_timeout: float = DEFAULT_CONNECT_TIMEOUT
    read_timeout: float = DEFAULT_READ_TIMEOUT
    max_attempts: int = DEFAULT_MAX_ATTEMPTS
    rate: float | None = None
    file_rate: float | None = None
    cache_dir: Path = field(default_factory=lambda: default_cache_dir({}))
    deadline: float = DEFAULT_DEADLINE
    drip_floor: float = DEFAULT_DRIP_FLOOR
    drip_window: float = DEFAULT_DRIP_WINDOW
    breaker: int = DEFAULT_BREAKER
    plan: str | None = None
    api_quota: int | None = None
    resolver_quota: int | None = None
    quota_window: float = QUOTA_WINDOW
    max_wait: float = DEFAULT_MAX_WAIT
    max_response_mb: float = DEFAULT_MAX_RESPONSE_MB
    clock_scale: float = 1.0  # real seconds per Hub second: 1 for the Hub, 0.01 for the stand-in's compressed clock

    def __post_init__(self) -> None:
        if self.plan is not None and self.plan not in PLANS:
            raise SettingsError(f"plan {self.plan!r}: must be one of {', '.join(PLANS)}")
        for name in ("rate", "file_rate"):
            value = getattr(self, name)
            if value is not None and value < 0:
                raise SettingsError(f"{name} must be at least 0, not {value}")
        for name in ("deadline", "drip_window", "quota_window", "max_response_mb", "connect_timeout", "read_timeout",
                     "clock_scale"):
            if getattr(self, name) <= 0:
                raise SettingsError(f"{name} must be more than 0, not {getattr(self, name)}")
        if self.drip_floor < 0:
            raise SettingsError(f"drip_floor must be at least 0, not {self.drip_floor}")
        for name in ("breaker", "max_attempts", "api_quota", "resolver_quota"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise SettingsError(f"{name} must be at least 1, not {value}")

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> Settings:
        """The settings from ``environ`` (default: the process environment), then ``overrides``.

        An override of ``None`` means "not given on the command line": the environment's value stays.
        """
        env = os.environ if environ is None else environ
        token = env.get("HF_TOKEN") or env.get("HUGGING_FACE_HUB_TOKEN") or None
        if overrides.get("token") is False:  # "no token", whatever the environment holds
            overrides = {**overrides, "token": None}
            token = None
        register_secret(token)  # the scrubber removes it from every message from now on
        read = cls(
            endpoint=(env.get("HF_ENDPOINT") or DEFAULT_ENDPOINT).rstrip("/"),
            token=token,
            connect_timeout=_positive_float(env, "HUBSURVEY_CONNECT_TIMEOUT", DEFAULT_CONNECT_TIMEOUT),
            read_timeout=_positive_float(env, "HUBSURVEY_READ_TIMEOUT", DEFAULT_READ_TIMEOUT),
            max_attempts=int(_positive_float(env, "HUBSURVEY_MAX_ATTEMPTS", DEFAULT_MAX_ATTEMPTS)),
            cache_dir=default_cache_dir(env),
            deadline=_positive_float(env, "HUBSURVEY_DEADLINE", DEFAULT_DEADLINE),
            drip_floor=_positive_float(env, "HUBSURVEY_DRIP_FLOOR", DEFAULT_DRIP_FLOOR),
            drip_window=_positive_float(env, "HUBSURVEY_DRIP_WINDOW", DEFAULT_DRIP_WINDOW),
            breaker=_positive_int(env, "HUBSURVEY_BREAKER", DEFAULT_BREAKER) or DEFAULT_BREAKER,
            plan=(env.get("HUBSURVEY_PLAN") or "").strip().lower() or None,
            api_quota=_positive_int(env, "HUBSURVEY_API_QUOTA", None),
            resolver_quota=_positive_int(env, "HUBSURVEY_RESOLVER_QUOTA", None),
            max_response_mb=_positive_float(env, "HUBSURVEY_MAX_RESPONSE_MB", DEFAULT_MAX_RESPONSE_MB),
            clock_scale=_positive_float(env, "HUBSURVEY_CLOCK_SCALE", 1.0),
        )
        known = {f.name for f in fields(cls)}
        unknown = set(overrides) - known
        if unknown:
            raise TypeError(f"unknown settings: {sorted(unknown)}")
        given = {k: v for k, v in overrides.items() if v is not None}
        if "endpoint" in given:
            given["endpoint"] = str(given["endpoint"]).rstrip("/")
        if "cache_dir" in given:
            given["cache_dir"] = Path(given["cache_dir"])
        if given.get("token"):
            register_secret(given["token"])
        return replace(read, **given)

    def __getstate__(self) -> dict[str, Any]:
        """Pickled (a job's settings crossing to a worker, a process or a host) without the token:
        a worker takes its own from its environment (:meth:`with_worker_token`)."""
        return {**self.__dict__, "token": None}

    def with_worker_token(self, environ: Mapping[str, str] | None = None) -> Settings:
        """These settings with the token of this process's environment (``HF_TOKEN``): how a worker
        makes the client of a job whose settings crossed the wire without one."""
        env = os.environ if environ is None else environ
        token = env.get("HF_TOKEN") or env.get("HUGGING_FACE_HUB_TOKEN") or None
        register_secret(token)
        return replace(self, token=token)

    @property
    def has_token(self) -> bool:
        return bool(self.token)

    @property
    def effective_plan(self) -> str:
        """The plan pacing starts from: the one set, else ``free`` with a token and ``anonymous`` without."""
        return self.plan or ("free" if self.has_token else "anonymous")

    @property
    def quotas(self) -> tuple[int, int]:
        """(API calls, resolver calls) per ``quota_window``: the explicit quotas, else the plan's."""
        api, resolvers = PLANS[self.effective_plan]
        return self.api_quota or api, self.resolver_quota or resolvers

    @property
    def max_response_bytes(self) -> int:
        return int(self.max_response_mb * 2**20)

    @property
    def secrets(self) -> tuple[str, ...]:
        """What the scrubber removes from every message."""
        return (self.token,) if self.token else ()

    def as_json(self) -> dict[str, Any]:
        """The settings as recorded with a run: no token, only whether one was set."""
        out: dict[str, Any] = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "token"}
        out["cache_dir"] = str(self.cache_dir)
        out["has_token"] = self.has_token
        return out


@contextlib.contextmanager
def hub_offline() -> Iterator[None]:
    """Hugging Face libraries stay offline inside (a static model read from disk, never downloaded):
    the process environment is the libraries' only switch, set here and restored after."""
    with _environment(dict.fromkeys(("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"), "1")):
        yield


@contextlib.contextmanager
def safe_import_path() -> Iterator[None]:
    """A Python started inside (the workers' fork server, ``python -c``) leaves the working folder
    off its import path (``PYTHONSAFEPATH``): the environment is its only switch, set here and
    restored after."""
    with _environment({"PYTHONSAFEPATH": "1"}):
        yield


@contextlib.contextmanager
def _environment(values: Mapping[str, str | None]) -> Iterator[None]:
    """The process environment with ``values`` inside the block (None: unset), as it was after."""
    def put(settings: Mapping[str, str | None]) -> None:
        for name, value in settings.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value

    before = {name: os.environ.get(name) for name in values}
    put(values)
    try:
        yield
    finally:
        put(before)
