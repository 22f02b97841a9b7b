"""``hubsurvey run``, ``status`` and ``demo``: thin layers over :mod:`hubsurvey.pipeline`."""

from __future__ import annotations

import json
import logging
import tempfile
from pathlib import Path
from typing import Annotated, Any

import typer

from hubsurvey.commands.crawl import filters_from_options, hub_client
from hubsurvey.commands.options import (
    DEFAULT_REPORT_DIR,
    AllowGated,
    Authors,
    Benchmarks,
    CacheDir,
    CopyThreshold,
    Dask,
    Db,
    Deadline,
    DenyAuthors,
    Examples,
    Executor,
    FileRate,
    Format,
    JobTimeout,
    Json,
    KeepCache,
    Languages,
    Limit,
    MaxCacheGb,
    MaxHours,
    MaxModels,
    MaxRows,
    MemoryMb,
    NoCrossleaks,
    NoExposure,
    NoNear,
    Plan,
    Rate,
    ReadDb,
    ReportDir,
    Roles,
    Search,
    Tasks,
    Workers,
    at_least,
    output_format,
    positive,
    say_snapshot,
    unlimited_if_zero,
)
from hubsurvey.core.errors import ExitCode, UsageError
from hubsurvey.core.safety import json_text
from hubsurvey.core.steps import RunOptions
from hubsurvey.core.store import DEFAULT_DB
from hubsurvey.crawler.rules import CrawlFilters

log = logging.getLogger(__name__)

#: where ``hubsurvey demo`` writes, unless --db / --report-dir say otherwise: never the real results
DEMO_DIR = Path("hubsurvey-demo")


def _summary_lines(summary) -> list[str]:
    lines = []
    if summary.crawl:
        c = summary.crawl
        lines.append(f"crawl: listed {c['listed']}, eligible {c['eligible']}, excluded {sum(c['excluded'].values())} {json.dumps(c['excluded'], sort_keys=True)}")
    lines.append(summary.line())
    if summary.crossleaks and "error" in summary.crossleaks:
        lines.append(f"crossleaks failed: {summary.crossleaks['error']} (run `hubsurvey crossleaks` again)")
    elif summary.crossleaks:
        from hubsurvey.analysis.crossleaks import CrossSummary

        lines.append(CrossSummary(**summary.crossleaks).line())
    if summary.contamination and any(summary.contamination.values()):  # configs the jobs did not check
        lines.append("contamination: " + json.dumps(summary.contamination, sort_keys=True))
    if summary.of("exposure"):  # the models declaring the contaminated datasets
        from hubsurvey.survey.exposure import counts_line

        lines.append(counts_line(summary.steps["exposure"]))
    if summary.report:
        lines.append("report: " + ", ".join(summary.report))
    lines += [f"error: {line}" for line in (summary.of("benchmarks") or {}).get("not_indexed", [])]
    return lines


RetryFailed = Annotated[list[str] | None, typer.Option(
    "--retry-failed", help="Queue failed jobs of this error class again (repeatable; 'all' for every class)")]


def _retry_classes(values: list[str] | None) -> tuple[str, ...] | None:
    """``--retry-failed``: None (not given), () for every class ('all'), else the classes."""
    if values is None:
        return None
    return () if "all" in values else tuple(values)


def executor_name(executor: str | None, dask: str | None) -> str:
    """``--executor`` (default: dask with ``--dask ADDR``, else local), checked against ``--dask``."""
    from hubsurvey.survey.executors import EXECUTORS

    name = executor or ("dask" if dask else "local")
    if name not in EXECUTORS:
        raise UsageError(f"--executor must be one of {', '.join(EXECUTORS)}, not {name!r}")
    if name == "dask" and not dask:
        raise UsageError("--executor dask needs the scheduler's address: --dask tcp://scheduler:8786")
    if dask and name != "dask":
        raise UsageError(f"--dask runs jobs on a Dask cluster; it contradicts --executor {name}")
    return name


def _run_options(**options: Any) -> RunOptions:
    """RunOptions from the command line, validated: one line and exit 2 on an out-of-range value."""
    options["executor"] = executor_name(options.get("executor"), options.get("dask"))
    at_least("--workers", options.get("workers"), 1)
    options["max_hours"] = unlimited_if_zero("--max-hours", options.get("max_hours"))
    positive("--job-timeout", options.get("job_timeout"))
    positive("--memory-mb", options.get("memory_mb"))
    positive("--max-cache-gb", options.get("max_cache_gb"))
    at_least("--examples", options.get("examples"), 0)
    copy_threshold_in_range(options.get("copy_threshold"))
    if options.get("benchmarks"):  # a bad benchmarks file is refused before the DB is touched
        from hubsurvey.survey.contamination_check import check_benchmarks_file

        check_benchmarks_file(options["benchmarks"], options["executor"])
    return RunOptions(**options)


def copy_threshold_in_range(value: float | None) -> None:
    """--copy-threshold is a share of rows: in (0, 1]."""
    if value is not None and not 0 < value <= 1:
        raise UsageError(f"--copy-threshold must be greater than 0 and at most 1, not {value}")


def _survey(db: Path, client, filters, options: RunOptions, args: dict[str, Any]) -> None:
    from hubsurvey.pipeline import run_survey
    from hubsurvey.progress import SurveyProgress, quiet_hub_bars

    with quiet_hub_bars(), SurveyProgress() as bar:
        summary = run_survey(db, client, filters, options, progress=bar, args=args)
    for line in _summary_lines(summary):
        typer.echo(line)
    if summary.failed or summary.of("benchmarks"):  # a job, or a benchmark that could not be indexed
        raise typer.Exit(ExitCode.PARTIAL)


def run(
    author: Authors = None,
    deny_author: DenyAuthors = None,
    task: Tasks = None,
    language: Languages = None,
    search: Search = None,
    limit: Limit = CrawlFilters.limit,
    max_rows: MaxRows = CrawlFilters.max_rows,
    allow_gated: AllowGated = CrawlFilters.allow_gated,
    workers: Workers = RunOptions.workers,
    max_hours: MaxHours = RunOptions.max_hours,
    executor: Executor = None,
    dask: Dask = None,
    job_timeout: JobTimeout = RunOptions.job_timeout,
    memory_mb: MemoryMb = RunOptions.memory_mb,
    report_dir: ReportDir = DEFAULT_REPORT_DIR,
    roles: Roles = None,
    retry_failed: RetryFailed = None,
    cache_dir: CacheDir = RunOptions.cache_dir,
    max_cache_gb: MaxCacheGb = RunOptions.max_cache_gb,
    keep_cache: KeepCache = RunOptions.keep_cache,
    examples: Examples = RunOptions.examples,
    no_near: NoNear = not RunOptions.near,
    no_crossleaks: NoCrossleaks = not RunOptions.crossleaks,
    copy_threshold: CopyThreshold = RunOptions.copy_threshold,
    benchmarks: Benchmarks = RunOptions.benchmarks,
    no_exposure: NoExposure = not RunOptions.exposure,
    max_models: MaxModels = RunOptions.max_models,
    rate: Rate = None,
    file_rate: FileRate = None,
    plan: Plan = None,
    deadline: Deadline = None,
    db: Db = Path(DEFAULT_DB),
) -> None:
    """Crawl, measure every eligible config not measured at its current sha, refresh the report."""
    filters = filters_from_options(author, deny_author, task, language, search, limit, max_rows, allow_gated)
    options = _run_options(workers=workers, max_hours=max_hours, executor=executor, dask=dask, job_timeout=job_timeout,
                           memory_mb=memory_mb, report_dir=report_dir, roles_file=str(roles) if roles else None,
                           retry_failed=_retry_classes(retry_failed), cache_dir=cache_dir,
                           max_cache_gb=max_cache_gb, keep_cache=keep_cache, examples=examples,
                           near=not no_near, crossleaks=not no_crossleaks, copy_threshold=copy_threshold,
                           benchmarks=benchmarks, exposure=not no_exposure, max_models=max_models)
    client = hub_client(rate, file_rate, plan, deadline)
    args = {"filters": filters.as_json(), "db": str(db), "rate": rate, "file_rate": file_rate, "plan": plan,
            "deadline": deadline, **options.as_json()}
    _survey(db, client, filters, options, args)


def status(db: ReadDb = Path(DEFAULT_DB), fmt: Format = None, as_json: Json = False) -> None:
    """Summarise the DB: last run, queue, failures by class."""
    from hubsurvey.core.status import status as db_status

    fmt = output_format(fmt, as_json)
    if fmt == "csv":
        raise UsageError("status prints --format table or json (its summary is not one table)")
    info = db_status(db)
    last = info["last_run"]
    if last and isinstance(last.get("counts"), str):
        last["counts"] = json.loads(last["counts"])  # a JSON column: print it as an object, not a string
    if info["snapshot"]:
        say_snapshot(info["snapshot"]["run_id"], info["snapshot"]["taken_at"])
    if fmt == "json":
        typer.echo(json_text(info, default=str, indent=1))
        return
    typer.echo(f"db: {info['db']}" + (f"  (a run is in progress{info['running']})" if info["running"] else ""))
    if info["live"]:
        typer.echo("progress: " + live_line(info["live"]))
    if info["interrupted"]:
        gone = info["interrupted"]
        typer.echo(f"interrupted: run {gone.get('run_id')} (pid {gone.get('pid')} on {gone.get('host')}) is no longer "
                   f"running; its process is gone (killed?). The next run resumes its pending jobs.")
    if last:
        counts = last["counts"] or {}
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


def live_line(live: dict[str, Any]) -> str:
    """A running survey's progress in one line: phase, done, failed, pending, rates, ETA."""
    from datetime import timedelta

    parts = [f"{live.get('run_id')} {live.get('phase')}", f"done {live.get('done')}", f"failed {live.get('failed')}",
             f"pending {'?' if live.get('pending') is None else live['pending']}", f"rows {live.get('rows')}"]
    if live.get("jobs_per_s"):
        parts.append(f"{live['jobs_per_s'] * 60:.1f} jobs/min, {live.get('rows_per_s') or 0:.1f} rows/s")
    if live.get("eta_s") is not None:
        parts.append(f"ETA {timedelta(seconds=int(live['eta_s']))}")
    parts.append(f"updated {live.get('updated_at')}")
    return ", ".join(parts)


def demo(
    db: Annotated[Path | None, typer.Option("--db", help=f"Results DB [default: {DEMO_DIR / 'results.duckdb'}]")] = None,
    report_dir: Annotated[Path | None, typer.Option("--report-dir", help=f"Report folder [default: {DEMO_DIR / 'report'}]")] = None,
    workers: Workers = RunOptions.workers,
    hub_dir: Annotated[Path | None, typer.Option("--hub-dir", help="Where to generate the mini-hub (default: a temp folder, removed at the end)")] = None,
) -> None:
    """Generate a mini-hub, serve it on loopback and survey it (no network; never touches real results).

    The demo writes its own DB and report under ./hubsurvey-demo/ unless --db / --report-dir are given.
    """
    from hubsurvey.core.hub import HubClient
    from hubsurvey_standin import StandinHub, generate_minihub  # the stand-in: only the demo uses it

    db = db or DEMO_DIR / "results.duckdb"
    report_dir = report_dir or DEMO_DIR / "report"
    db.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="hubsurvey-demo-") as tmp:
        root = generate_minihub((hub_dir or Path(tmp)) / "hub", seed=0)
        # contamination with benchmarks: two of the mini-hub's test splits are the benchmarks
        from hubsurvey_standin.minihub import BENCHMARKS

        bench_file = Path(tmp) / "benchmarks.toml"
        bench_file.write_text("".join(
            f"[[benchmark]]\nid = {json.dumps(b['id'])}\nconfig = {json.dumps(b['config'])}\n"
            f"split = {json.dumps(b['split'])}\ntext_columns = {json.dumps(b['text_columns'])}\n\n" for b in BENCHMARKS))
        options = _run_options(workers=workers, report_dir=report_dir, benchmarks=str(bench_file))
        with StandinHub(root) as hub:
            typer.echo(f"mini-hub generated at {root} and served at {hub.url}")
            # The stand-in is local: no pacing needed. Its files go to a cache of their own, removed at the end.
            client = HubClient(endpoint=hub.url, token=False, rate=0, file_rate=0, cache_dir=Path(tmp) / "hf-cache")
            args = {"demo": True, "db": str(db), "report_dir": str(report_dir), "workers": workers}
            try:
                _survey(db, client, None, options, args)
            finally:
                typer.echo(f"demo results: {db}  report: {report_dir}/")
    typer.echo(f"try: hubsurvey sql \"SELECT * FROM lle\" --db {db}")
