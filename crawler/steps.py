"""The crawl as a step of a run: list the Hub, decide each dataset's eligibility, record it."""

from __future__ import annotations

import json
from dataclasses import dataclass

from hubsurvey.core.steps import Counts, Recorded, RunContext, RunEnd, Step
from hubsurvey.crawler.crawl import crawl
from hubsurvey.crawler.rules import CrawlFilters


@dataclass
class CrawlStep(Step):
    """``run`` lists and resolves the datasets its filters keep (skipped by ``crawl=False``);
    its counts are the crawl's (:meth:`CrawlSummary.as_json`)."""

    filters: CrawlFilters | None = None
    name: str = "crawl"
    recorded = Recorded(always=True)  # null when the run did not crawl

    def run(self, ctx: RunContext) -> Counts:
        if not ctx.options.crawl:
            return {}
        ctx.phase("crawling")
        with ctx.bounded():  # --max-hours: what was listed is kept; the next run resumes the listing
            summary = crawl(ctx.store, ctx.client, self.filters, run_id=ctx.run_id)
        return {**summary.as_json(), "left_pending": 1} if summary.out_of_time else summary.as_json()

    def summary(self, counts: Counts, end: RunEnd) -> list[str]:
        if not counts:
            return []
        excluded = counts["excluded"]
        return [f"crawl: listed {counts['listed']}, eligible {counts['eligible']}, excluded {sum(excluded.values())} "
                f"{json.dumps(excluded, sort_keys=True)}"]
