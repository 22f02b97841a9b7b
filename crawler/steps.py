"""The crawl as a step of a run: list the Hub, decide each dataset's eligibility, record it."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from hubsurvey.core.errors import OutOfTimeError
from hubsurvey.core.steps import Counts, RunContext
from hubsurvey.crawler.crawl import crawl
from hubsurvey.crawler.rules import CrawlFilters

log = logging.getLogger(__name__)


@dataclass
class CrawlStep:
    """``run`` lists and resolves the datasets its filters keep (skipped by ``crawl=False``);
    its counts are the crawl's (:meth:`CrawlSummary.as_json`)."""

    filters: CrawlFilters | None = None
    name: str = "crawl"

    def run(self, ctx: RunContext) -> Counts:
        if not ctx.options.crawl:
            return {}
        ctx.phase("crawling")
        with ctx.bounded():
            try:
                return crawl(ctx.store, ctx.client, self.filters, run_id=ctx.run_id).as_json()
            except OutOfTimeError as e:  # --max-hours: what was listed is kept; the next run resumes the listing
                log.warning("crawl: stopped at the run's end (--max-hours): %s", e)
                return {"out_of_time": True, "left_pending": 1}
