"""``hubsurvey sql`` and ``show``: read the results DB, over :mod:`hubsurvey.analysis`.

``sql`` runs the analyst's query with file access off: DuckDB is opened with
``enable_external_access=false`` and no extension autoload/autoinstall, so a query can neither read
nor write files nor load code; ``ATTACH``, ``COPY`` and ``EXPORT DATABASE`` are refused before they
run. ``--allow-files`` lifts that for an analyst who means it (the DB stays read-only).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import duckdb
import typer

from hubsurvey.analysis.crossleaks import find_cross_rows, pair_overlaps, render_cross_rows
from hubsurvey.analysis.examples import find_examples, render_examples, resolve_dataset
from hubsurvey.analysis.findings import create_views
from hubsurvey.commands.common import open_results, write_records, write_rows
from hubsurvey.commands.options import MAX_COUNT, Format, ReadDb, at_least, output_format
from hubsurvey.core.errors import BadInputError, UsageError
from hubsurvey.core.store import DEFAULT_DB, Store

#: ``show``'s examples of each kind unless --limit says otherwise: a screen, not every stored one
SHOW_LIMIT = 3


def sql(
    query: Annotated[str, typer.Argument(help="SQL to run ('-': read it from stdin); the findings_* views are available")],
    fmt: Format = None,
    allow_files: Annotated[bool, typer.Option("--allow-files", help="Let the query read and write files (ATTACH, COPY, read_csv...)")] = False,
    db: ReadDb = Path(DEFAULT_DB),
) -> None:
    """Run a SQL query over the results DB (read-only, no file access) and print the result."""
    fmt = output_format(fmt)
    if query == "-":
        query = sys.stdin.read()
    if not query.strip():
        raise UsageError("sql: the query is empty")
    with open_results(db, safe=not allow_files) as store:
        try:
            if not allow_files:
                refuse_file_statements(store, query)
            names, rows = run_sql(store, query)
        except duckdb.Error as e:
            raise BadInputError(" ".join(str(e).split())) from None
    write_rows(fmt, names, rows)


def show(
    dataset: Annotated[str, typer.Argument(help="Dataset id (owner/name), or its name when only one measured id has it")],
    config: Annotated[str | None, typer.Option("--config", help="Only this config")] = None,
    source: Annotated[str | None, typer.Option(
        "--source", help="Leaks across datasets: the rows of DATASET's test split found in this other dataset")] = None,
    source_config: Annotated[str | None, typer.Option("--source-config", help="With --source: only this config of it")] = None,
    kind: Annotated[str | None, typer.Option("--kind", help="leaks, duplicates, conflicts or near (or one kind, e.g. duplicate_test)")] = None,
    profile: Annotated[str | None, typer.Option("--profile", help="raw or normalized [default: both]")] = None,
    label: Annotated[str | None, typer.Option("--label", help="Only this label column (text-key examples are kept)")] = None,
    limit: Annotated[int | None, typer.Option(
        "--limit", help=f"At most N examples of each kind (0: all stored) [default: {SHOW_LIMIT}; with --source, 20 rows]")] = None,
    fmt: Format = None,
    db: ReadDb = Path(DEFAULT_DB),
) -> None:
    """Print the stored examples behind a dataset's counts (leaks, duplicates, label conflicts).

    Reads the DB only: the examples were stored when the dataset was measured (--examples N on
    audit and run). Every example gives its key (values cut at 200 characters), its rows in each
    split, its first row positions and, for conflicts, the labels.
    """
    fmt = output_format(fmt)
    at_least("--limit", limit, 0, MAX_COUNT)
    shown = limit or None  # 0: every stored example
    with open_results(db) as store:
        if source is not None:
            _show_pair(store, dataset, source, config, source_config, 20 if limit is None else shown, fmt)
            return
        shown = SHOW_LIMIT if limit is None else shown
        # one more than shown, to tell whether more are stored
        rows = find_examples(store, dataset, config=config, kind=kind, profile=profile, label_column=label,
                             limit=shown + 1 if shown else None)
    more = shown is not None and any(r["rank"] > shown for r in rows)
    rows = [r for r in rows if shown is None or r["rank"] <= shown]
    if fmt == "table":
        typer.echo(render_examples(rows))
        if more:
            typer.echo(f"(at most {shown} of each kind shown, and more are stored: --limit N shows N, --limit 0 all)")
        return
    write_records(fmt, rows)


def _show_pair(store: Store, dataset: str, source: str, config: str | None, source_config: str | None,
               limit: int | None, fmt: str) -> None:
    """``show A --source B``: A's test rows whose normalized text is in B, with their positions in both."""
    a, b = resolve_dataset(store, dataset), resolve_dataset(store, source)
    rows = find_cross_rows(store, a, b, test_config=config, source_config=source_config,
                           limit=2**62 if limit is None else limit)  # None: every row (--limit 0)
    if fmt == "table":
        typer.echo(render_cross_rows(a, b, rows, pair_overlaps(store, a, b)))
        return
    write_records(fmt, rows)


def refuse_file_statements(store: Store, query: str) -> None:
    """Refuse ATTACH, COPY and EXPORT DATABASE before they run: they read or write files."""
    try:
        statements = store.con.extract_statements(query)
    except duckdb.Error:
        return  # a parse error: the query itself reports it
    refused = {duckdb.StatementType.ATTACH: "ATTACH", duckdb.StatementType.COPY: "COPY",
               duckdb.StatementType.EXPORT: "EXPORT DATABASE", duckdb.StatementType.COPY_DATABASE: "COPY FROM DATABASE"}
    for statement in statements:
        if statement.type in refused:
            raise UsageError(f"sql: {refused[statement.type]} is refused (it reads or writes files); "
                             "use --allow-files if you mean it")


def run_sql(store: Store, query: str) -> tuple[list[str], list[tuple]]:
    """Run ``query`` on the store's connection, with the findings TEMP views available."""
    create_views(store)
    result = store.con.execute(query)
    if result.description is None:
        return [], []
    return [d[0] for d in result.description], result.fetchall()
