"""``hubsurvey scores``: a thin layer over :func:`hubsurvey.survey.scores.run_scores`."""

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
    "--relookup", help="List every surveyed dataset's models again, also those listed at its revision before")]


@takes(hub=HUB_API)
def scores(
    max_models: MaxModels = RunOptions.max_models,
    relookup: Relookup = False,
    hub: HubOptions = HubOptions(),
    db: Db = Path(DEFAULT_DB),
) -> None:
    """Read the scores Hub models report on the surveyed datasets, and flag those at risk.

    For each surveyed dataset (at its current revision), lists the models whose card declares it
    (filter dataset:<id>), at most --max-models, and stores every score they report (the card's
    model-index, the repo's .eval_results files) in reported_scores. The view scores_at_risk puts
    each beside the rows of its evaluated split that the declared training data holds. A dataset
    is listed again when its revision or the cap changed, its last listing failed, or --relookup.
    """
    from hubsurvey.survey.scores import run_scores  # lazy: keeps `hubsurvey --help` fast

    at_least("--max-models", max_models, 1, MAX_COUNT)  # before the DB: a bad option is refused first
    if not Path(db).is_file():  # nothing surveyed: never create an empty DB
        raise StoreError(f"{db}: no such results DB (run `hubsurvey run` or `hubsurvey audit` first)")
    client = hub_client(hub)
    summary = run_scores(db, client, max_models=max_models, relookup=relookup,
                         progress=lambda dataset_id: typer.echo(f"reading the scores of the models that declare {dataset_id}",
                                                                err=True))
    typer.echo(f"{summary.line()}; hubsurvey sql \"SELECT * FROM scores_at_risk\" --db {db}")
    for line in summary.failed:
        typer.echo(f"error: {line}", err=True)
    if summary.failed:
        raise typer.Exit(ExitCode.PARTIAL)
