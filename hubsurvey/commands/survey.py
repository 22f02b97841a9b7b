"""``hubsurvey run``, ``status`` and ``demo``: thin layers over :mod:`hubsurvey.pipeline`."""

from __future__ import annotations

import json
import logging
import tempfile
from datetime import timedelta
from pathlib import Path
from typing import Annotated, Any

import typer

from hubsurvey.commands.common import hub_client, results_file
from hubsurvey.commands.options import (
    FILTERS,
    HUB,
    Db,
    Format,
    Json,
    OptionGroup,
    ReadDb,
    output_format,
    say_snapshot,
    takes,
)
from hubsurvey.core.errors import ExitCode, UsageError
from hubsurvey.core.hub import HubClient
from hubsurvey.core.options import HubOptions
from hubsurvey.core.outputs import output_folder
from hubsurvey.core.safety import json_text
from hubsurvey.core.settings import online_on_loopback
from hubsurvey.core.status import status as db_status
from hubsurvey.core.steps import RunOptions
from hubsurvey.core.store import DEFAULT_DB
from hubsurvey.crawler.rules import CrawlFilters
from hubsurvey.survey.executors import chosen_executor, option_classes

log = logging.getLogger(__name__)

#: where ``hubsurvey demo`` writes, unless --db / --report-dir say otherwise: never the real results
DEMO_DIR = Path("hubsurvey-demo")


def run_options(values: dict[str, Any]) -> RunOptions:
    """RunOptions from the command line's values (by field; each already checked), the executor
    and its options checked together, and a benchmarks file and a --semantic model checked before
    the DB is touched."""
    executor, executor_options = chosen_executor(values.get("executor"), values.get("executor_options", {}))
    options = RunOptions(**{**values, "executor": executor, "executor_options": executor_options})
    if options.benchmarks:  # a bad benchmarks file is refused before the DB is touched
        from hubsurvey.survey.contamination_check import check_benchmarks_file  # lazy: keeps `hubsurvey --help` fast

        check_benchmarks_file(options.benchmarks, options.executor)
    if options.semantic:  # a model that cannot be loaded is refused before the DB is touched
        from hubsurvey.survey.semantic import check_model  # lazy: keeps `hubsurvey --help` fast

        check_model(options.semantic_model)
    elif options.semantic_model is not None or options.semantic_threshold != RunOptions.semantic_threshold:
        raise UsageError("--semantic-threshold and --semantic-model need --semantic")
    return options


#: run's options, declared on RunOptions' fields, with every executor's own options in the place of
#: ``executor_options`` (``--dask``)
RUN = OptionGroup(RunOptions, run_options, insert={"executor_options": option_classes})


def _survey(db: Path, client, filters, options: RunOptions, args: dict[str, Any]):
    """Run the survey with its progress on stderr and print its summary; return the summary."""
    # lazy: keeps `hubsurvey --help` fast (the runner and every step; the progress bars)
    from hubsurvey.pipeline import run_survey
    from hubsurvey.progress import SurveyProgress, quiet_hub_bars

    with quiet_hub_bars(), SurveyProgress() as bar:
        summary = run_survey(db, client, filters, options, progress=bar, args=args)
    for line in summary.lines():
        typer.echo(line)
    return summary


def _exit_code(summary) -> None:
    """Exit 1 (partial) when a step's counts say so: a job failed, a benchmark could not be indexed."""
    if summary.partial:
        raise typer.Exit(ExitCode.PARTIAL)


@takes(filters=FILTERS, options=RUN, hub=HUB)
def run(
    filters: CrawlFilters = CrawlFilters(),
    options: RunOptions = RunOptions(),
    hub: HubOptions = HubOptions(),
    db: Db = Path(DEFAULT_DB),
) -> None:
    """Crawl, measure every eligible config not measured at its current sha, refresh the report."""
    client = hub_client(hub)
    args = {"filters": filters.as_json(), "db": str(db), **hub.overrides(), **options.as_json()}
    _exit_code(_survey(db, client, filters, options, args))


def status(db: ReadDb = Path(DEFAULT_DB), fmt: Format = None, as_json: Json = False) -> None:
    """Summarise the DB: last run, queue, failures by class."""
    fmt = output_format(fmt, as_json)
    if fmt == "csv":
        raise UsageError("status prints --format table or json (its summary is not one table)")
    info = db_status(results_file(db))
    last = info["last_run"]
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
    if later := info["latest_command"]:
        typer.echo(f"latest command: {later['command']} {later['run_id']} {later['status']}, started {later['started_at']}")
    typer.echo("datasets: " + (", ".join(f"{k} {v}" for k, v in sorted(info["datasets"].items())) or "none crawled"))
    typer.echo("queue: " + (", ".join(f"{k} {v}" for k, v in sorted(info["queue"].items())) or "empty"))
    typer.echo(f"measurements: {info['measurements']['rows']} row(s) over {info['measurements']['datasets']} dataset(s)")
    if info["failures"]:
        typer.echo("failures by class:")
        for f in info["failures"]:
            typer.echo(f"  {f['error_class']}: {f['jobs']}  e.g. {f['example']}")


def live_line(live: dict[str, Any]) -> str:
    """A running survey's progress in one line: phase, done, failed, pending, rates, ETA."""
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
    workers: Annotated[int | None, RUN.option("workers")] = RunOptions.workers,
    hub_dir: Annotated[Path | None, typer.Option("--hub-dir", help="Where to generate the mini-hub (default: a temp folder, removed at the end)")] = None,
) -> None:
    """Generate a mini-hub, serve it on loopback and survey it (no network; never touches real results).

    The demo writes its own DB and report under ./hubsurvey-demo/ unless --db / --report-dir are given.
    """
    from hubsurvey_standin import StandinHub, generate_minihub  # the stand-in: only the demo uses it

    db = db or DEMO_DIR / "results.duckdb"
    report_dir = report_dir or DEMO_DIR / "report"
    # every option is checked before anything is generated, served or written
    output_folder(db.parent, "--db")
    if hub_dir is not None:
        output_folder(hub_dir, "--hub-dir")
    RUN.value({"workers": workers, "report_dir": report_dir})
    db.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="hubsurvey-demo-") as tmp:
        root = generate_minihub((hub_dir or Path(tmp)) / "hub", seed=0, score_models=True)
        # contamination with benchmarks: two of the mini-hub's test splits are the benchmarks
        from hubsurvey_standin.minihub import BENCHMARKS

        bench_file = Path(tmp) / "benchmarks.toml"
        bench_file.write_text("".join(
            f"[[benchmark]]\nid = {json.dumps(b['id'])}\nconfig = {json.dumps(b['config'])}\n"
            f"split = {json.dumps(b['split'])}\ntext_columns = {json.dumps(b['text_columns'])}\n\n" for b in BENCHMARKS))
        options = RUN.value({"workers": workers, "report_dir": report_dir, "benchmarks": str(bench_file)})
        # HF_HUB_OFFLINE forbids the network; the stand-in is served on loopback, which is none
        with StandinHub(root) as hub, online_on_loopback(hub.url):
            typer.echo(f"mini-hub generated at {root} and served at {hub.url}")
            # The stand-in is local: no pacing needed. Its files go to a cache of their own, removed at the end.
            client = HubClient(endpoint=hub.url, token=False, rate=0, file_rate=0, cache_dir=Path(tmp) / "hf-cache")
            args = {"demo": True, "db": str(db), "report_dir": str(report_dir), "workers": workers}
            summary = _survey(db, client, None, options, args)
    # only what this run wrote: an interrupted or failed demo ends before this line
    typer.echo(f"demo results: {db}" + (f"  report: {report_dir}/" if summary.report else ""))
    typer.echo(f"try: hubsurvey sql \"SELECT * FROM lle\" --db {db}")
    _exit_code(summary)
