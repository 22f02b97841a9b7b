"""Progress of a survey and of a crawl: a tqdm bar on a terminal, periodic log lines otherwise.

The survey bar shows jobs done, failed and pending, rows per second and the ETA (while the crawl
runs beside the jobs, the datasets it has listed instead); the crawl bar shows
datasets listed and resolved. Off a terminal (cron) the same figures go to the log every
``every_s`` seconds and once at the end, so an overnight log stays short.
"""

from __future__ import annotations

import contextlib
import logging
import sys
import time
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

from huggingface_hub.utils import are_progress_bars_disabled, disable_progress_bars, enable_progress_bars
from tqdm import tqdm

from hubsurvey.core.safety import unfiltered

log = logging.getLogger("hubsurvey.progress")


def _eta(seconds: float | None) -> str:
    return "?" if seconds is None else str(timedelta(seconds=int(seconds)))


class Progress:
    """A progress callback for :func:`hubsurvey.pipeline.run_survey` or the crawl."""

    kind = "progress"

    def __init__(self, *, every_s: float = 30.0, stream=None):
        self.stream = stream if stream is not None else sys.stderr
        self.every_s = every_s
        self._bar: Any = None
        self._last_log = 0.0
        self._last: dict[str, Any] | None = None
        self._started = time.monotonic()

    def __enter__(self) -> Progress:
        if hasattr(self.stream, "isatty") and self.stream.isatty():
            # the bar moves the cursor on purpose: it writes below the command's visible-text filter
            self._bar = tqdm(desc=self.kind, unit=self.unit, file=unfiltered(self.stream), dynamic_ncols=True)
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._bar is not None:
            self._bar.close()
        elif self._last is not None:
            log.info("%s: %s", self.kind, self.describe(self._last))

    # subclasses say what one unit is, how far along a counts dict is, and how to describe it
    unit = "it"

    def position(self, counts: dict[str, Any]) -> tuple[int, int | None]:
        raise NotImplementedError

    def postfix(self, counts: dict[str, Any]) -> dict[str, Any]:
        raise NotImplementedError

    def describe(self, counts: dict[str, Any]) -> str:
        return ", ".join(f"{k} {v}" for k, v in self.postfix(counts).items())

    def __call__(self, counts: dict[str, Any]) -> None:
        self._last = counts
        n, total = self.position(counts)
        if self._bar is not None:
            if total is not None and self._bar.total != total:
                self._bar.total = total
            self._bar.set_postfix(self.postfix(counts), refresh=False)
            self._bar.update(n - self._bar.n)
            return
        now = time.monotonic()
        if now - self._last_log >= self.every_s:
            self._last_log = now
            log.info("%s: %s", self.kind, self.describe(counts))


class SurveyProgress(Progress):
    """Jobs done, failed and pending, rows per second, ETA."""

    kind, unit = "survey", " jobs"

    def position(self, counts: dict[str, Any]) -> tuple[int, int | None]:
        return int(counts.get("done", 0)), counts.get("total")

    def postfix(self, counts: dict[str, Any]) -> dict[str, Any]:
        finished = int(counts.get("done", 0))
        failed = int(counts.get("failed", 0))
        total = counts.get("total")
        pending = max(0, total - finished) if total is not None else None
        # since the jobs began (the run says; a one-time compile before them is not in it)
        elapsed = counts.get("elapsed_s", time.monotonic() - self._started)
        eta = elapsed / finished * pending if finished and pending is not None else None
        if counts.get("listed") is not None:  # measuring during the crawl: more jobs come as it lists
            return {"done": finished - failed, "failed": failed, "pending": pending,
                    "rows/s": counts.get("rows_per_s", 0), "crawling": f"{counts['listed']} listed"}
        return {"done": finished - failed, "failed": failed, "pending": pending,
                "rows/s": counts.get("rows_per_s", 0), "eta": _eta(eta)}


class CrawlProgress(Progress):
    """Datasets listed and resolved."""

    kind, unit = "crawl", " datasets"

    def position(self, counts: dict[str, Any]) -> tuple[int, int | None]:
        return int(counts.get("listed", 0)), None

    def postfix(self, counts: dict[str, Any]) -> dict[str, Any]:
        return {"listed": counts.get("listed", 0), "resolved": counts.get("resolved", 0),
                "eligible": counts.get("eligible", 0)}


@contextlib.contextmanager
def quiet_hub_bars() -> Iterator[None]:
    """Turn off huggingface_hub's own progress bars in this process while a command runs.

    Files are downloaded by the survey's Hub client (``hubsurvey.core.hub``), which draws no bar;
    this only quiets the library's bars on the calls that still go through it (publishing).
    """
    was_disabled = are_progress_bars_disabled()
    disable_progress_bars()
    try:
        yield
    finally:
        if not was_disabled:
            enable_progress_bars()
