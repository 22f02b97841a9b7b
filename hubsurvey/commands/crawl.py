"""``hubsurvey crawl``: a thin layer over :func:`hubsurvey.crawler.crawl.crawl`."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Annotated

import typer

from hubsurvey.commands.options import (
    AllowGated,
    Authors,
    Db,
    DenyAuthors,
    FileRate,
    Languages,
    Limit,
    MaxRows,
    Rate,
    Search,
    Tasks,
    at_least,
    positive,
    unlimited_if_zero,
)
from hubsurvey.core.hub import DEFAULT_FILE_RATE, DEFAULT_RATE, HubClient
from hubsurvey.core.store import DEFAULT_DB
from hubsurvey.crawler.rules import CrawlFilters

log = logging.getLogger(__name__)


def filters_from_options(author, deny_author, task, language, search, limit, max_rows, allow_gated) -> CrawlFilters:
    """The crawl filters from the command line, validated (exit 2 on an out-of-range value)."""
    positive("--max-rows", max_rows)
    return CrawlFilters(
        max_rows=max_rows,
        allow_gated=allow_gated,
        authors=list(author or []),
        deny_authors=list(deny_author or []),
        task_categories=list(task or []),
        languages=list(language or []),
        search=search,
        limit=None if (lim := unlimited_if_zero("--limit", limit)) is None else int(lim),
    )


def hub_client(rate: float, file_rate: float) -> HubClient:
    """The Hub client of crawl and run; a rate of 0 means unpaced."""
    at_least("--rate", rate, 0)
    at_least("--file-rate", file_rate, 0)
    return HubClient(rate=rate or None, file_rate=file_rate or None)


def crawl(
    author: Authors = None,
    deny_author: DenyAuthors = None,
    task: Tasks = None,
    language: Languages = None,
    search: Search = None,
    limit: Limit = CrawlFilters.limit,
    max_rows: MaxRows = CrawlFilters.max_rows,
    allow_gated: AllowGated = CrawlFilters.allow_gated,
    rate: Rate = DEFAULT_RATE,
    file_rate: FileRate = DEFAULT_FILE_RATE,
    db: Db = Path(DEFAULT_DB),
    recheck_listing: Annotated[bool, typer.Option(
        "--recheck-listing",
        help="Resolve against the Parquet files every dataset that only its card or tags excluded "
             "(one API call each: a stale card cannot keep a dataset out).")] = False,
    since_last: Annotated[bool, typer.Option(
        "--since-last",
        help="List only the datasets modified since the last completed listing (newest first, down to its "
             "lastModified high-water mark, less an hour).")] = False,
) -> None:
    """List Hub datasets, apply the survey's filters and record every one with its outcome.

    An interrupted listing resumes from its stored cursor on the next crawl."""
    from hubsurvey.core.store import Store
    from hubsurvey.crawler.crawl import crawl as run_crawl
    from hubsurvey.progress import CrawlProgress, quiet_hub_bars

    filters = filters_from_options(author, deny_author, task, language, search, limit, max_rows, allow_gated)
    client = hub_client(rate, file_rate)
    with Store(db) as store, quiet_hub_bars(), CrawlProgress() as bar:
        summary = run_crawl(store, client, filters, progress=bar,  # records its own runs row
                            recheck_listing=recheck_listing, since_last=since_last)
    typer.echo(summary.line())
