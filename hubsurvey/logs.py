"""Logging for the ``hubsurvey`` command: one stderr handler, set up once per invocation.

On a terminal a log line is ``LEVEL message``; off a terminal (cron, a pipe) every line carries a
timestamp and the logger name, so an overnight log explains itself. hubsurvey's own loggers log at
INFO by default (progress lines, what was written where); third-party libraries only at WARNING,
so that ``httpx`` does not log every request. ``-v`` turns hubsurvey's loggers to DEBUG (tracebacks
of internal errors included); ``--log-level`` sets them to any level.
"""

from __future__ import annotations

import logging
import sys

from hubsurvey.core.errors import scrub
from hubsurvey.core.safety import visible

LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
DEFAULT_LEVEL = "INFO"

#: the handler this module installed, so that a second set-up (tests invoke the app many times)
#: replaces it instead of stacking a second one
_HANDLER_ATTR = "_hubsurvey_handler"


class VisibleFormatter(logging.Formatter):
    """Log lines show control characters as text (a config name cannot retitle the terminal), and
    never a secret."""

    def format(self, record: logging.LogRecord) -> str:
        return visible(scrub(super().format(record)))


def setup_logging(*, verbose: int = 0, level: str | None = None, stream=None) -> None:
    """Send log records to ``stream`` (default: the current ``sys.stderr``) at the chosen level."""
    stream = stream if stream is not None else sys.stderr
    chosen = (level or ("DEBUG" if verbose else DEFAULT_LEVEL)).upper()
    if chosen not in LEVELS:
        from hubsurvey.core.errors import UsageError

        raise UsageError(f"--log-level must be one of {', '.join(LEVELS)}, not {level!r}")
    handler = logging.StreamHandler(stream)
    tty = hasattr(stream, "isatty") and stream.isatty()
    fmt = "%(levelname)s %(message)s" if tty else "%(asctime)s %(levelname)s %(name)s: %(message)s"
    handler.setFormatter(VisibleFormatter(fmt, datefmt="%Y-%m-%dT%H:%M:%S%z"))
    root = logging.getLogger()
    for old in [h for h in root.handlers if getattr(h, _HANDLER_ATTR, False)]:
        root.removeHandler(old)
    setattr(handler, _HANDLER_ATTR, True)
    root.addHandler(handler)
    if root.level == logging.NOTSET or root.level > logging.WARNING:
        root.setLevel(logging.WARNING)
    logging.getLogger("hubsurvey").setLevel(chosen)
    # The libraries' own warnings (huggingface_hub's "retrying in 1s" and the like) repeat what our
    # retry loop and its one line say: only their errors get through, unless asked (-vv).
    for library in ("huggingface_hub", "httpx2", "httpcore2", "filelock"):
        logging.getLogger(library).setLevel(logging.ERROR if verbose < 2 else logging.NOTSET)
    # -vv style debugging of libraries is --log-level DEBUG with -v: let everything through
    if verbose > 1:
        root.setLevel(logging.DEBUG)
