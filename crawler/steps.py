"""The crawl as a step of a run: list the Hub, decide each dataset's eligibility, record it.

With ``--measure-during-crawl`` the crawl runs beside the measure step's jobs instead
(:class:`CrawlBeside`): in a thread of its own, its writes run on the coordinator, and each page's
eligible datasets are queued at once, so the workers measure while the crawl waits for its quota.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from hubsurvey.core.coordinator import Coordinated, OnCoordinator
from hubsurvey.core.steps import Counts, Recorded, RunContext, RunEnd, Step
from hubsurvey.core.store import Store
from hubsurvey.crawler.crawl import CrawlSummary, crawl
from hubsurvey.crawler.rules import CrawlFilters


def _counts(summary: CrawlSummary) -> Counts:
    return {**summary.as_json(), "left_pending": 1} if summary.out_of_time else summary.as_json()


@dataclass
class CrawlStep(Step):
    """``run`` lists and resolves the datasets its filters keep (skipped by ``crawl=False``);
    its counts are the crawl's (:meth:`CrawlSummary.as_json`). Beside the jobs
    (``measure_during_crawl``) the measure step runs it (:meth:`beside`) and records its counts."""

    filters: CrawlFilters | None = None
    name: str = "crawl"
    recorded = Recorded(always=True)  # null when the run did not crawl

    def run(self, ctx: RunContext) -> Counts:
        if not ctx.options.crawl or ctx.options.measure_during_crawl:
            return {}
        ctx.phase("crawling")
        with ctx.bounded():  # --max-hours: what was listed is kept; the next run resumes the listing
            summary = crawl(ctx.store, ctx.client, self.filters, run_id=ctx.run_id)
        return _counts(summary)

    def beside(self, ctx: RunContext) -> CrawlBeside | None:
        """The crawl started beside the jobs (None: this run crawls first, or not at all)."""
        if not (ctx.options.crawl and ctx.options.measure_during_crawl):
            return None
        return CrawlBeside(self, ctx)

    def summary(self, counts: Counts, end: RunEnd) -> list[str]:
        if not counts:
            return []
        excluded = counts["excluded"]
        return [f"crawl: listed {counts['listed']}, eligible {counts['eligible']}, excluded {sum(excluded.values())} "
                f"{json.dumps(excluded, sort_keys=True)}"]


class _NotingWritten:
    """The store, noting the datasets each page writes (on the coordinator's thread)."""

    def __init__(self, store: Store, written: list[str]):
        self._store, self._written = store, written

    def upsert_datasets(self, rows: Any, listing: Mapping[str, Any] | None = None) -> None:
        self._store.upsert_datasets(rows, listing)
        self._written.extend(r["dataset_id"] for r in rows)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)


class CrawlBeside:
    """The crawl in a thread of its own while the measure step runs jobs. Its store calls wait for
    the coordinator (:meth:`pump`), which stays the DB's one writer; the step's counts are
    :meth:`finish`'s."""

    def __init__(self, step: CrawlStep, ctx: RunContext):
        self._coordinator = OnCoordinator()
        self._written: list[str] = []
        self._summary: CrawlSummary | None = None
        self._error: BaseException | None = None
        store = Coordinated(_NotingWritten(ctx.store, self._written), self._coordinator)
        # daemon: a run ended by Ctrl-C never waits for a crawl blocked on the quota
        self._thread = threading.Thread(target=self._crawl, args=(store, ctx, step.filters),
                                        name="hubsurvey-crawl", daemon=True)
        self._thread.start()

    def _crawl(self, store: Any, ctx: RunContext, filters: CrawlFilters | None) -> None:
        try:
            self._summary = crawl(store, ctx.client, filters, run_id=ctx.run_id)
        except BaseException as e:  # raised on the coordinator by finish()
            self._error = e

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

    def pump(self, timeout: float = 0.0) -> list[str]:
        """Run the crawl's queued store calls (waiting up to ``timeout`` for one); return the
        datasets written since the last pump (eligible or not), in the order written."""
        self._coordinator.run_pending(timeout)
        found, self._written[:] = list(self._written), []
        return found

    def finish(self) -> Counts:
        """The crawl's counts, once its thread has ended; what it raised is raised here."""
        self._thread.join()
        self._coordinator.close()
        if self._error is not None:
            raise self._error
        assert self._summary is not None
        return _counts(self._summary)

    def stop(self, wait_s: float = 5.0) -> None:
        """End the crawl early (the run is ending): its next store call raises, what it wrote stays,
        and its listing resumes from its last page written on the next run."""
        self._coordinator.close()
        self._thread.join(wait_s)
