"""``hubsurvey exposure``: a thin layer over :func:`hubsurvey.survey.exposure.run_exposure`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from hubsurvey.commands.common import hub_client
from hubsurvey.commands.options import HUB_API, MAX_COUNT, Db, MaxModels, at_least, takes
from hubsurvey.core.errors import ExitCode, StoreError
from hubsurvey.core.options import HubOptions
from hubsurvey.core.steps import RunOptions
from hubsurvey.core.store import DEFAULT_DB

Relookup = Annotated[bool, typer.Option(
    "--relookup", help="List every contaminated dataset's models again, also those unchanged since their last listing")]


@takes(hub=HUB_API)
def exposure(
    max_models: MaxModels = RunOptions.max_models,
    relookup: Relookup = False,
    hub: HubOptions = HubOptions(),
    db: Db = Path(DEFAULT_DB),
) -> None:
    """List the Hub models whose cards declare a contaminated dataset as training data.

    For each surveyed dataset the contamination check found holding a benchmark's items (at its
    current revision), lists the models declaring it (filter dataset:<id>), at most --max-models,
    and stores them in the model_exposure table. A dataset is listed again only when its
    contamination, its revision or the cap changed, or its last listing failed. A card's datasets
    are a declaration: a model may have seen part of a dataset only, or more than it declares.
    """
    from hubsurvey.survey.exposure import run_exposure  # lazy: keeps `hubsurvey --help` fast

    at_least("--max-models", max_models, 1, MAX_COUNT)  # before the DB: a bad option is refused first
    if not Path(db).is_file():  # nothing surveyed: never create an empty DB
        raise StoreError(f"{db}: no such results DB (run `hubsurvey run` or `hubsurvey contamination` first)")
    client = hub_client(hub)
    summary = run_exposure(db, client, max_models=max_models, relookup=relookup,
                           progress=lambda dataset_id: typer.echo(f"listing the models that declare {dataset_id}", err=True))
    typer.echo(f"{summary.line()}; hubsurvey sql \"SELECT * FROM findings_model_exposure\" --db {db}")
    for line in summary.failed:
        typer.echo(f"error: {line}", err=True)
    if summary.failed:
        raise typer.Exit(ExitCode.PARTIAL)
