"""``hubsurvey clean``: a test split without its contaminated rows (``hubsurvey.survey.clean.clean``)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from hubsurvey.commands.options import Roles
from hubsurvey.core.hub import HubClient
from hubsurvey.core.safety import visible
from hubsurvey.core.settings import Settings
from hubsurvey.survey.clean import DEFAULT_PROFILE, MANIFEST, PROFILES, REASONS
from hubsurvey.survey.clean import clean as run_clean


def clean(
    target: Annotated[str, typer.Argument(help="Hub id (owner/name) or local folder")],
    out: Annotated[Path, typer.Option("--out", help="Folder to write <config>/test/0000.parquet and manifest.json into")],
    config: Annotated[str | None, typer.Option("--config", help="Clean only this config")] = None,
    profile: Annotated[str, typer.Option("--profile", help=f"Whose rule drops a row: {', '.join(PROFILES)}")] = DEFAULT_PROFILE,
    db: Annotated[Path | None, typer.Option("--db", help="Also record the kept row positions in this results DB "
                                                         "(table clean_test, which publish exports)")] = None,
    roles: Roles = None,
) -> None:
    """Write each config's test split without its contaminated rows (in train or validation, or repeated).

    A row goes when its text key (under --profile: raw values, normalized values, or near-duplicates
    at the near method's threshold) is in train or validation, or repeats an earlier test row. The
    schema and HF features are kept, so `hubsurvey audit OUT` reads the folder; manifest.json says
    what was dropped, why, and the clean split's fingerprint.
    """
    outcome = run_clean(target, out=out, config=config, profile=profile, db=db, roles_file=roles,
                        client=HubClient(Settings.from_env()))
    for name, entry in outcome.configs.items():
        dropped = ", ".join(f"{reason} {entry['dropped'][reason]}" for reason in REASONS)
        typer.echo(f"{visible(outcome.dataset_id, one_line=True)} [{visible(name, one_line=True)}] {profile}: "
                   f"kept {entry['rows_kept']} of {entry['rows_test']} test rows (dropped: {dropped})")
        typer.echo(f"  {out / entry['path']}  {entry['fingerprint']}")
    if outcome.configs:
        typer.echo(f"manifest: {out / MANIFEST}" + (f"; kept positions recorded in {db}" if db else ""))
    for error in outcome.errors:
        typer.echo(f"error: {visible(str(error), one_line=True)}", err=True)
    if outcome.errors:
        raise typer.Exit(outcome.exit_code)
