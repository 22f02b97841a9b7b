"""hubsurvey's settings, read once.

One frozen :class:`Settings` is built at start (:meth:`Settings.from_env`) from the environment
and the command line, then passed down: to the Hub client, the run's steps and the workers. No
other product module reads ``os.environ``; a test checks that.

The environment variables (the command line wins over each):

- ``HF_ENDPOINT`` (default https://huggingface.co) and ``HF_TOKEN`` (or ``HUGGING_FACE_HUB_TOKEN``);
- ``HUBSURVEY_CONNECT_TIMEOUT`` (10 s), ``HUBSURVEY_READ_TIMEOUT`` (60 s), ``HUBSURVEY_MAX_ATTEMPTS`` (6);
- ``HUBSURVEY_CACHE_DIR`` (default ``$XDG_CACHE_HOME/hubsurvey/hub`` or ``~/.cache/hubsurvey/hub``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from hubsurvey.core.errors import UsageError

DEFAULT_ENDPOINT = "https://huggingface.co"
DEFAULT_CONNECT_TIMEOUT = 10.0
DEFAULT_READ_TIMEOUT = 60.0
DEFAULT_MAX_ATTEMPTS = 6
# Anonymous Hub limits per 5 minutes: 500 API calls and 3,000 file (resolver) requests; stay under.
DEFAULT_RATE = 1.5
DEFAULT_FILE_RATE = 9.0


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
    if number <= 0:
        raise SettingsError(f"{name}={value!r}: must be more than 0")
    return number


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
    ``rate`` / ``file_rate``: API / file requests per second (``None``: unpaced).
    """

    endpoint: str = DEFAULT_ENDPOINT
    token: str | None = field(default=None, repr=False)
    connect_timeout: float = DEFAULT_CONNECT_TIMEOUT
    read_timeout: float = DEFAULT_READ_TIMEOUT
    max_attempts: int = DEFAULT_MAX_ATTEMPTS
    rate: float | None = DEFAULT_RATE
    file_rate: float | None = DEFAULT_FILE_RATE
    cache_dir: Path = field(default_factory=lambda: default_cache_dir({}))

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> Settings:
        """The settings from ``environ`` (default: the process environment), then ``overrides``.

        An override of ``None`` means "not given on the command line": the environment's value stays.
        """
        env = os.environ if environ is None else environ
        token = env.get("HF_TOKEN") or env.get("HUGGING_FACE_HUB_TOKEN") or None
        read = cls(
            endpoint=(env.get("HF_ENDPOINT") or DEFAULT_ENDPOINT).rstrip("/"),
            token=token,
            connect_timeout=_positive_float(env, "HUBSURVEY_CONNECT_TIMEOUT", DEFAULT_CONNECT_TIMEOUT),
            read_timeout=_positive_float(env, "HUBSURVEY_READ_TIMEOUT", DEFAULT_READ_TIMEOUT),
            max_attempts=int(_positive_float(env, "HUBSURVEY_MAX_ATTEMPTS", DEFAULT_MAX_ATTEMPTS)),
            cache_dir=default_cache_dir(env),
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
        return replace(read, **given)

    @property
    def has_token(self) -> bool:
        return bool(self.token)

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
