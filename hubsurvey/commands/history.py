"""``hubsurvey history``: a thin layer over :func:`hubsurvey.analysis.history.history`."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from hubsurvey.analysis.export import csv_document
from hubsurvey.analysis.history import history as dataset_history
from hubsurvey.commands.common import format_json, format_table, open_results
from hubsurvey.commands.options import Format, ReadDb, output_format
from hubsurvey.core.store import DEFAULT_DB

#: The columns the table shows (JSON and CSV give every column of the history view).
TABLE_COLUMNS = ("config", "label_column", "revision_sha", "measured_at", "run_id", "is_current", "verdict",
                 "verdict_basis", "text_test_biased", "normalized_contaminated_test_pct", "near_contaminated_test_pct",
                 "benchmark_contaminated_rows")
#: Shown in the table cut to this many characters (the JSON and CSV keep them whole).
SHORT_SHA = 12


def _table_cell(name: str, value: Any) -> Any:
    if name in ("revision_sha", "parquet_sha") and isinstance(value, str):
        return value[:SHORT_SHA]
    if name == "measured_at" and value is not None:
        return value.strftime("%Y-%m-%d %H:%M:%S")
    return value


def history(
    dataset: Annotated[str, typer.Argument(help="Dataset id (owner/name), or its name when only one measured id has it")],
    config: Annotated[str | None, typer.Option("--config", help="Only this config")] = None,
    fmt: Format = None,
    db: ReadDb = Path(DEFAULT_DB),
) -> None:
    """Print every revision measured of a dataset: when, which run, its verdict and headline figures.

    One row per (config, label column, revision), oldest first (the store's history view). The
    table shows the verdict and one headline figure per method, NR where a figure does not apply
    or was not measured; --format json (null for NR) and csv (NR) give every column.
    """
    fmt = output_format(fmt)
    with open_results(db) as store:
        rows = dataset_history(store, dataset, config=config)
    names = list(rows[0]) if rows else []
    if fmt == "json":
        sys.stdout.write(format_json(names, [[r[n] for n in names] for r in rows]) + "\n")
    elif fmt == "csv":
        sys.stdout.write(csv_document(names, [[r[n] for n in names] for r in rows]))
    else:
        table = [[_table_cell(n, r[n]) for n in TABLE_COLUMNS] for r in rows]
        typer.echo(f"{rows[0]['dataset_id']}: {len({r['revision_sha'] for r in rows})} revision(s) measured")
        typer.echo(format_table(TABLE_COLUMNS, table, null="NR"))
