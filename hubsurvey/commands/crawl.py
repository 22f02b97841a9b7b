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
    Deadline,
    DenyAuthors,
    FileRate,
    Languages,
    Limit,
    MaxRows,
    Plan,
    Rate,
    Search,
    Tasks,
    at_least,
    positive,
    unlimited_if_zero,
)
from hubsurvey.core.errors import UsageError
from hubsurvey.core.hub import HubClient
from hubsurvey.core.settings import PLANS, Settings
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


def hub_client(rate: float | None = None, file_rate: float | None = None, plan: str | None = None,
               deadline: float | None = None) -> HubClient:
    """The Hub client of a command, from the settings built once: the environment, then the
    command line. No rate: follow the quota; a rate of 0 means unpaced."""
    at_least("--rate", rate, 0)
    at_least("--file-rate", file_rate, 0)
    positive("--deadline", deadline)
    if plan is not None and plan not in PLANS:
        raise UsageError(f"--plan must be one of {', '.join(PLANS)}, not {plan!r}")
    return HubClient(Settings.from_env(rate=rate, file_rate=file_rate, plan=plan, deadline=deadline))


def crawl(
    author: Authors = None,
    deny_author: DenyAuthors = None,
    task: Tasks = None,
    language: Languages = None,
    search: Search = None,
    limit: Limit = CrawlFilters.limit,
    max_rows: MaxRows = CrawlFilters.max_rows,
    allow_gated: AllowGated = CrawlFilters.allow_gated,
    rate: Rate = None,
    file_rate: FileRate = None,
    plan: Plan = None,
    deadline: Deadline = None,
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
    client = hub_client(rate, file_rate, plan, deadline)
    with Store(db) as store, quiet_hub_bars(), CrawlProgress() as bar:
        summary = run_crawl(store, client, filters, progress=bar,  # records its own runs row
                            recheck_listing=recheck_listing, since_last=since_last)
    typer.echo(summary.line())
