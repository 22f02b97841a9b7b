"""``hubsurvey run``, ``status`` and ``demo``: thin layers over :mod:`hubsurvey.pipeline`."""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Annotated, Optional

import typer

from hubsurvey.crawler.cli import AllowGated, Authors, Db, DenyAuthors, FileRate, Languages, Limit, MaxRows, Rate, Search, Tasks, filters_from_options
from hubsurvey.core.store import DEFAULT_DB

Workers = Annotated[Optional[int], typer.Option("--workers", help="Local worker processes (default: one per core)")]
MaxHours = Annotated[Optional[float], typer.Option("--max-hours", help="Stop taking new jobs after this long")]
Dask = Annotated[Optional[str], typer.Option("--dask", help="Run jobs on a Dask cluster: tcp://scheduler:8786")]
JobTimeout = Annotated[float, typer.Option("--job-timeout", help="Seconds one job may take (local workers)")]
MemoryMb = Annotated[int, typer.Option("--memory-mb", help="Memory ceiling of one local worker, MB")]
ReportDir = Annotated[Path, typer.Option("--report-dir", help="Where the refreshed report goes")]
Roles = Annotated[Optional[Path], typer.Option("--roles", help="Roles override file (TOML), as for audit")]


def _summary_lines(summary) -> list[str]:
    lines = []
    if summary.crawl:
        c = summary.crawl
        lines.append(f"crawl: listed {c['listed']}, eligible {c['eligible']}, excluded {sum(c['excluded'].values())} {json.dumps(c['excluded'], sort_keys=True)}")
    lines.append(summary.line())
    if summary.report:
        lines.append("report: " + ", ".join(summary.report))
    return lines


def register(app: typer.Typer) -> None:
    @app.command()
    def run(
        author: Authors = None,
        deny_author: DenyAuthors = None,
        task: Tasks = None,
        language: Languages = None,
        search: Search = None,
        limit: Limit = None,
        max_rows: MaxRows = 1_000_000,
        allow_gated: AllowGated = False,
        workers: Workers = None,
        max_hours: MaxHours = None,
        dask: Dask = None,
        job_timeout: JobTimeout = 1800.0,
        memory_mb: MemoryMb = 4096,
        report_dir: ReportDir = Path("out"),
        roles: Roles = None,
        rate: Rate = 1.5,
        file_rate: FileRate = 9.0,
        db: Db = Path(DEFAULT_DB),
    ) -> None:
        """Crawl, measure every eligible config not measured at its current sha, refresh the report."""
        from hubsurvey.core.hub import HubClient

        filters = filters_from_options(author, deny_author, task, language, search, limit, max_rows, allow_gated)
        client = HubClient(rate=rate or None, file_rate=file_rate or None)
        args = {"filters": filters.as_json(), "workers": workers, "max_hours": max_hours, "dask": dask,
                "job_timeout": job_timeout, "memory_mb": memory_mb, "report_dir": str(report_dir), "db": str(db),
                "roles": str(roles) if roles else None, "rate": rate, "file_rate": file_rate}
        _run(db, client, filters, args, workers=workers, max_hours=max_hours, dask=dask, job_timeout=job_timeout,
             memory_mb=memory_mb, report_dir=report_dir, roles_file=str(roles) if roles else None)

    @app.command()
    def status(db: Db = Path(DEFAULT_DB), as_json: Annotated[bool, typer.Option("--json")] = False) -> None:
        """Summarise the DB: last run, queue, failures by class."""
        from hubsurvey.cli import EXIT_STORE, fail
        from hubsurvey.core.store import StoreError
        from hubsurvey.pipeline import status as db_status

        try:
            info = db_status(db)
        except StoreError as e:
            raise fail(str(e), EXIT_STORE)
        if as_json:
            typer.echo(json.dumps(info, default=str, indent=1))
            return
        typer.echo(f"db: {info['db']}" + (f"  (a run is in progress{info['running']})" if info["running"] else ""))
        last = info["last_run"]
        if last:
            counts = json.loads(last["counts"]) if isinstance(last["counts"], str) else (last["counts"] or {})
            typer.echo(f"last run: {last['run_id']} {last['status']}, started {last['started_at']}, finished {last['finished_at']}")
            typer.echo("  " + ", ".join(f"{k} {v}" for k, v in counts.items() if not isinstance(v, dict)))
        else:
            typer.echo("last run: none")
        typer.echo("datasets: " + (", ".join(f"{k} {v}" for k, v in sorted(info["datasets"].items())) or "none crawled"))
        typer.echo("queue: " + (", ".join(f"{k} {v}" for k, v in sorted(info["queue"].items())) or "empty"))
        typer.echo(f"measurements: {info['measurements']['rows']} row(s) over {info['measurements']['datasets']} dataset(s)")
        if info["failures"]:
            typer.echo("failures by class:")
            for f in info["failures"]:
                typer.echo(f"  {f['error_class']}: {f['jobs']}  e.g. {f['example']}")

    @app.command()
    def demo(
        db: Db = Path(DEFAULT_DB),
        report_dir: ReportDir = Path("out"),
        workers: Workers = None,
        hub_dir: Annotated[Optional[Path], typer.Option("--hub-dir", help="Where to generate the mini-hub")] = None,
    ) -> None:
        """Generate a mini-hub, serve it on loopback and run the whole survey against it (no network)."""
        from hubsurvey.core.hub import HubClient
        from hubsurvey_standin import StandinHub, generate_minihub

        root = generate_minihub((hub_dir or Path(tempfile.mkdtemp(prefix="hubsurvey-demo-"))) / "hub", seed=0)
        with StandinHub(root) as hub:
            typer.echo(f"mini-hub generated at {root} and served at {hub.url}")
            # The stand-in is local: no pacing needed. Its files go to a cache of their own.
            client = HubClient(endpoint=hub.url, token=False, rate=None, file_rate=None, cache_dir=root.parent / "hf-cache")
            args = {"demo": True, "db": str(db), "report_dir": str(report_dir), "workers": workers}
            _run(db, client, None, args, workers=workers, report_dir=report_dir)
        typer.echo(f"results: {db}  (try: hubsurvey sql \"SELECT * FROM lle\" --db {db})")


def _run(db, client, filters, args, **options) -> None:
    from hubsurvey.cli import EXIT_PARTIAL, EXIT_STORE, fail, progress_bar
    from hubsurvey.core.errors import HubsurveyError, one_line
    from hubsurvey.core.store import StoreError
    from hubsurvey.pipeline import RunOptions, run_survey

    try:
        with progress_bar("survey", unit="jobs", every=10) as bar:
            summary = run_survey(db, client, filters, RunOptions(**options), progress=bar.update_to, args=args)
    except StoreError as e:
        raise fail(str(e), EXIT_STORE)
    except HubsurveyError as e:  # the Hub unreachable or the listing refused: one line, exit 4
        raise fail(one_line(e), e.exit_code)
    for line in _summary_lines(summary):
        typer.echo(line)
    if summary.failed:
        raise typer.Exit(EXIT_PARTIAL)
