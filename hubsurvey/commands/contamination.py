"""``hubsurvey contamination``: a thin layer over :func:`hubsurvey.survey.contamination_check.run_contamination`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from hubsurvey.commands.common import hub_client
from hubsurvey.commands.options import HUB, MAX_WORKERS, Benchmarks, Db, at_least, takes
from hubsurvey.core.errors import ExitCode, StoreError
from hubsurvey.core.options import HubOptions
from hubsurvey.core.store import DEFAULT_DB

Recheck = Annotated[bool, typer.Option(
    "--recheck", help="Check every surveyed config again, also those already checked against these benchmarks")]
ConfigWorkers = Annotated[int | None, typer.Option(
    "--workers", help="Configs downloaded and checked at a time (default: one per core)")]


@takes(hub=HUB)
def contamination(
    benchmarks: Benchmarks = None,
    recheck: Recheck = False,
    hub: HubOptions = HubOptions(),
    workers: ConfigWorkers = None,
    db: Db = Path(DEFAULT_DB),
) -> None:
    """Check the surveyed datasets against benchmark test sets (13-gram contamination), alone.

    Indexes the benchmarks of --benchmarks (default: the shipped list of widely used benchmarks),
    downloads each surveyed config's splits again through the survey's download path, and stores
    the contaminated rows per (split, benchmark) in the contamination table.
    """
    from hubsurvey.survey.contamination_check import run_contamination  # lazy: keeps `hubsurvey --help` fast

    at_least("--workers", workers, 1, MAX_WORKERS)  # before the DB: a bad option is refused first
    if not Path(db).is_file():  # nothing surveyed: never create an empty DB
        raise StoreError(f"{db}: no such results DB (run `hubsurvey run` or `hubsurvey audit` first)")
    client = hub_client(hub)
    index, summary = run_contamination(db, client, benchmarks, recheck=recheck, workers=workers,
                                       progress=lambda where: typer.echo(f"checking {where}", err=True))
    described = index.describe()
    typer.echo(f"benchmarks indexed: {len(described)}" + "".join(
        f"\n  {d['id']} [{d['config']}/{d['split']}] @ {(d['revision_sha'] or '?')[:12]}: {d['items']} items "
        f"({d['short_items']} shorter than 13 words)" for d in described))
    typer.echo(f"contamination: {summary.checked} config(s) checked, {len(summary.failed)} failed, "
               f"{summary.contaminated} (split, benchmark) pair(s) contaminated; "
               f"hubsurvey sql \"SELECT * FROM findings_contamination\" --db {db}")
    for line in summary.not_indexed + summary.failed:
        typer.echo(f"error: {line}", err=True)
    if summary.failed or summary.not_indexed or not described:
        raise typer.Exit(ExitCode.PARTIAL)
