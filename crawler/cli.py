"""``hubsurvey crawl``: a thin layer over :func:`crawler.crawl.crawl`."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any, List, Optional

import typer

from hubsurvey.store import DEFAULT_DB


def crawl_filters(
    author: Optional[List[str]] = typer.Option(None, "--author", help="Only these authors (repeatable)"),
    deny_author: Optional[List[str]] = typer.Option(None, "--deny-author", help="Never these authors (repeatable)"),
    task: Optional[List[str]] = typer.Option(None, "--task", help="task_categories filter (repeatable)"),
    language: Optional[List[str]] = typer.Option(None, "--language", help="language filter (repeatable)"),
    search: Optional[str] = typer.Option(None, "--search", help="Dataset name contains"),
    limit: Optional[int] = typer.Option(None, "--limit", help="List at most N datasets"),
    max_rows: int = typer.Option(1_000_000, "--max-rows", help="Keep datasets with fewer rows than this"),
    allow_gated: bool = typer.Option(False, "--allow-gated", help="Also keep gated datasets (needs HF_TOKEN)"),
) -> Any:
    from crawler.rules import CrawlFilters

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
        author: Optional[List[str]] = typer.Option(None, "--author", help="Only these authors (repeatable)"),
        deny_author: Optional[List[str]] = typer.Option(None, "--deny-author", help="Never these authors (repeatable)"),
        task: Optional[List[str]] = typer.Option(None, "--task", help="task_categories filter (repeatable)"),
        language: Optional[List[str]] = typer.Option(None, "--language", help="language filter (repeatable)"),
        search: Optional[str] = typer.Option(None, "--search", help="Dataset name contains"),
        limit: Optional[int] = typer.Option(None, "--limit", help="List at most N datasets"),
        max_rows: int = typer.Option(1_000_000, "--max-rows", help="Keep datasets with fewer rows than this"),
        allow_gated: bool = typer.Option(False, "--allow-gated", help="Also keep gated datasets (needs HF_TOKEN)"),
        rate: float = typer.Option(1.5, "--rate", help="Max API requests per second (0: unpaced)"),
        file_rate: float = typer.Option(9.0, "--file-rate", help="Max file requests per second (0: unpaced)"),
        db: Path = typer.Option(Path(DEFAULT_DB), "--db", help="Results DB"),
    ) -> None:
        """List Hub datasets, apply the survey's filters and record every one with its outcome."""
        from crawler.crawl import crawl as run_crawl
        from hubsurvey.cli import EXIT_STORE, fail, progress_bar
        from hubsurvey.hub import HubClient
        from hubsurvey.store import Store, StoreError

        filters = crawl_filters(author, deny_author, task, language, search, limit, max_rows, allow_gated)
        client = HubClient(rate=rate or None, file_rate=file_rate or None)
        try:
            store = Store(db)
        except StoreError as e:
            raise fail(str(e), EXIT_STORE)
        with store, progress_bar("crawl", unit="datasets") as bar:
            summary = run_crawl(store, client, filters, run_id=f"crawl-{uuid.uuid4().hex[:12]}", progress=bar.update_to)
        typer.echo(summary.line())
