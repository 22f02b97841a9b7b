"""``hubsurvey crawl``: a thin layer over :func:`hubsurvey.crawler.crawl.crawl`.

The crawl filter options are declared once here and shared with ``hubsurvey run``.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Annotated, List, Optional

import typer

from hubsurvey.crawler.rules import CrawlFilters
from hubsurvey.core.store import DEFAULT_DB

Authors = Annotated[Optional[List[str]], typer.Option("--author", help="Only these authors (repeatable)")]
DenyAuthors = Annotated[Optional[List[str]], typer.Option("--deny-author", help="Never these authors (repeatable)")]
Tasks = Annotated[Optional[List[str]], typer.Option("--task", help="task_categories filter (repeatable)")]
Languages = Annotated[Optional[List[str]], typer.Option("--language", help="language filter (repeatable)")]
Search = Annotated[Optional[str], typer.Option("--search", help="Dataset name contains")]
Limit = Annotated[Optional[int], typer.Option("--limit", help="List at most N datasets")]
MaxRows = Annotated[int, typer.Option("--max-rows", help="Keep datasets with fewer rows than this")]
AllowGated = Annotated[bool, typer.Option("--allow-gated", help="Also keep gated datasets (needs HF_TOKEN)")]
Rate = Annotated[float, typer.Option("--rate", help="Max API requests per second (0: unpaced)")]
FileRate = Annotated[float, typer.Option("--file-rate", help="Max file requests per second (0: unpaced)")]
Db = Annotated[Path, typer.Option("--db", help="Results DB")]


def filters_from_options(author, deny_author, task, language, search, limit, max_rows, allow_gated) -> CrawlFilters:
    return CrawlFilters(
        max_rows=max_rows,
        allow_gated=allow_gated,
        authors=list(author or []),
        deny_authors=list(deny_author or []),
        task_categories=list(task or []),
        languages=list(language or []),
        search=search,
        limit=limit,
    )


def register(app: typer.Typer) -> None:
    @app.command()
    def crawl(
        author: Authors = None,
        deny_author: DenyAuthors = None,
        task: Tasks = None,
        language: Languages = None,
        search: Search = None,
        limit: Limit = None,
        max_rows: MaxRows = 1_000_000,
        allow_gated: AllowGated = False,
        rate: Rate = 1.5,
        file_rate: FileRate = 9.0,
        db: Db = Path(DEFAULT_DB),
    ) -> None:
        """List Hub datasets, apply the survey's filters and record every one with its outcome."""
        from hubsurvey.crawler.crawl import crawl as run_crawl
        from hubsurvey.cli import EXIT_STORE, fail, progress_bar
        from hubsurvey.core.hub import HubClient
        from hubsurvey.core.store import Store, StoreError

        filters = filters_from_options(author, deny_author, task, language, search, limit, max_rows, allow_gated)
        client = HubClient(rate=rate or None, file_rate=file_rate or None)
        try:
            store = Store(db)
        except StoreError as e:
            raise fail(str(e), EXIT_STORE)
        from hubsurvey.core.errors import HubsurveyError, one_line

        try:
            with store, progress_bar("crawl", unit="datasets") as bar:
                summary = run_crawl(store, client, filters, run_id=f"crawl-{uuid.uuid4().hex[:12]}", progress=bar.update_to)
        except HubsurveyError as e:  # the Hub unreachable or the listing refused: one line, exit 4
            raise fail(one_line(e), e.exit_code)
        typer.echo(summary.line())
