"""``hubsurvey crawl``: a thin layer over :func:`hubsurvey.crawler.crawl.crawl`."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Annotated

import typer

from hubsurvey.commands.common import hub_client
from hubsurvey.commands.options import FILTERS, HUB, Db, takes
from hubsurvey.core.options import MAX_HOURS, HubOptions, unlimited_if_zero
from hubsurvey.core.store import DEFAULT_DB, Store
from hubsurvey.crawler.rules import CrawlFilters

log = logging.getLogger(__name__)

@takes(filters=FILTERS, hub=HUB)
def crawl(
    filters: CrawlFilters = CrawlFilters(),
    hub: HubOptions = HubOptions(),
    db: Db = Path(DEFAULT_DB),
    recheck_listing: Annotated[bool, typer.Option(
        "--recheck-listing",
        help="Resolve against the Parquet files every dataset that only its card or tags excluded "
             "(one API call each: a stale card cannot keep a dataset out).")] = False,
    since_last: Annotated[bool, typer.Option(
        "--since-last",
        help="List only the datasets modified since the last completed listing (newest first, down to its "
             "lastModified high-water mark, less an hour), then ask by id for those an earlier crawl left "
             "pending (a Hub fault, a dropped decision).")] = False,
    max_hours: Annotated[float | None, typer.Option(
        "--max-hours", help="Stop after this long, every request and wait for the quota included; "
                            "the next crawl resumes the listing (0: no limit)")] = None,
) -> None:
    """List Hub datasets, apply the survey's filters and record every one with its outcome.

    An interrupted listing resumes from its stored cursor on the next crawl."""
    # lazy: keeps `hubsurvey --help` fast (the crawler and the progress bars)
    from hubsurvey.crawler.crawl import crawl as run_crawl
    from hubsurvey.progress import CrawlProgress, quiet_hub_bars

    max_hours = unlimited_if_zero("--max-hours", max_hours, MAX_HOURS)
    client = hub_client(hub)
    with Store(db) as store, quiet_hub_bars(), CrawlProgress() as bar:
        summary = run_crawl(store, client, filters, progress=bar,  # records its own runs row
                            recheck_listing=recheck_listing, since_last=since_last, max_hours=max_hours)
    typer.echo(summary.line())
