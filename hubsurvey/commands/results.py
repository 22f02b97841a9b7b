"""``hubsurvey report`` and ``export``: the results as files.

Thin layers over :func:`hubsurvey.analysis.report.render_report` and
:func:`hubsurvey.analysis.export.export_results`. They read the results DB only. ``publish`` has a
module of its own (``hubsurvey.commands.publish``): a report never imports the Hub client.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from hubsurvey.analysis.export import export_results
from hubsurvey.analysis.report import render_report
from hubsurvey.commands.common import open_results, writing_into
from hubsurvey.commands.options import DEFAULT_REPORT_DIR, MAX_COUNT, ReadDb, at_least
from hubsurvey.core.outputs import output_folder
from hubsurvey.core.store import DEFAULT_DB


def report(
    out: Annotated[Path, typer.Option("--out", help="Folder for REPORT.md and report.html")] = DEFAULT_REPORT_DIR,
    db: ReadDb = Path(DEFAULT_DB),
    top: Annotated[int, typer.Option("--top", help="How many rows the 'top test bias' table lists")] = 20,
) -> None:
    """Render the findings as REPORT.md and a self-contained report.html."""
    at_least("--top", top, 1, MAX_COUNT)
    output_folder(out)  # before the DB: a file named as the folder is refused first
    with open_results(db) as store, writing_into(out):
        paths = render_report(store, out, top_n=top)
    for path in paths:
        typer.echo(f"wrote {path}")


def export(
    out: Annotated[Path, typer.Option("--out", help="Folder to write the results dataset into")],
    db: ReadDb = Path(DEFAULT_DB),
    lle_compat: Annotated[bool, typer.Option("--lle-compat", help="Also write lle.csv in the published LLE format")] = False,
    overwrite: Annotated[bool, typer.Option(
        "--overwrite", help="Use a non-empty folder: first remove the files hubsurvey wrote there")] = False,
) -> None:
    """Export the results as Parquet (NULL stays null) and CSV (NULL written NR)."""
    output_folder(out)  # before the DB: a file named as the folder is refused first
    with open_results(db) as store, writing_into(out):
        paths = export_results(store, out, lle_compat=lle_compat, overwrite=overwrite)
    for path in paths:
        typer.echo(f"wrote {path} ({path.stat().st_size} bytes)")
