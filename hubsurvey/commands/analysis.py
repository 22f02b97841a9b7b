"""``hubsurvey sql``, ``report``, ``export`` and ``publish``: thin layers over :mod:`hubsurvey.analysis`.

They read the results DB only. ``sql`` runs the analyst's query with file access off: DuckDB is
opened with ``enable_external_access=false`` and no extension autoload/autoinstall, so a query can
neither read nor write files nor load code; ``ATTACH``, ``COPY`` and ``EXPORT DATABASE`` are refused
before they run. ``--allow-files`` lifts that for an analyst who means it (the DB stays read-only).
"""

from __future__ import annotations

import csv
import io
import sys
from collections.abc import Sequence
from datetime import date, datetime
from decimal import Decimal
from pathlib import Path
from typing import Annotated, Any

import typer

from hubsurvey.commands.options import (
    DEFAULT_REPORT_DIR,
    MAX_COUNT,
    MAX_MB,
    CopyThreshold,
    Db,
    Format,
    ReadDb,
    at_least,
    output_format,
    positive,
    say_snapshot,
)
from hubsurvey.core.errors import BadInputError, StoreError, UsageError
from hubsurvey.core.options import share
from hubsurvey.core.outputs import output_folder
from hubsurvey.core.safety import json_text
from hubsurvey.core.store import DEFAULT_DB, Store

#: DuckDB settings of the ``sql`` connection: no file reads or writes, no extension install or load
SAFE_CONFIG = {
    "enable_external_access": False,
    "autoload_known_extensions": False,
    "autoinstall_known_extensions": False,
}


def open_results(db: Path, *, safe: bool = False) -> Store:
    """The results DB, read-only; a missing, empty or foreign file is one line and exit 3.

    Never creates the file. With ``safe`` the connection has file access and extensions off. While
    a survey run holds the DB, its read snapshot is opened instead, and one stderr line says so
    (:meth:`Store.open_for_reading`).
    """
    path = Path(db)
    if not path.is_file():
        raise StoreError(f"{db}: no such results DB (run `hubsurvey run` or `hubsurvey audit` first)")
    if path.stat().st_size == 0:
        raise StoreError(f"{db}: empty file, not a results DB (run `hubsurvey run` or `hubsurvey audit` first)")
    store = Store.open_for_reading(path, config=dict(SAFE_CONFIG) if safe else None)
    version = store._check_version()
    if version == 0:
        store.close()
        raise StoreError(f"{db}: holds no hubsurvey results (run `hubsurvey run` or `hubsurvey audit` first)")
    if store.snapshot_of is not None:
        say_snapshot(store.snapshot_of["run_id"], store.snapshot_of["snapshot_at"])
    return store


# --- sql output -------------------------------------------------------------------------------------


def _plain(value: Any) -> Any:
    """A JSON-ready value: timestamps in ISO 8601, decimals as numbers, nested lists/maps kept."""
    if isinstance(value, (datetime, date)):
        return value.isoformat()
    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    return value


def _cell(value: Any, null: str) -> str:
    if value is None:
        return null
    value = _plain(value)
    if isinstance(value, (list, dict)):
        return json_text(value)
    return str(value)


def format_table(names: Sequence[str], rows: Sequence[Sequence[Any]], null: str = "NULL") -> str:
    """Aligned columns with a header rule; numbers right-aligned, NULL shown as ``null``."""
    cells = [[_cell(v, null).replace("\n", "\\n") for v in row] for row in rows]
    widths = [max([len(n)] + [len(r[i]) for r in cells]) for i, n in enumerate(names)]
    numeric = [
        bool(rows) and all((isinstance(r[i], (int, float, Decimal)) and not isinstance(r[i], bool)) or r[i] is None for r in rows)
        for i in range(len(names))
    ]

    def line(values: Sequence[str]) -> str:
        return "  ".join(v.rjust(w) if num else v.ljust(w) for v, w, num in zip(values, widths, numeric)).rstrip()

    out = [line(names), "  ".join("-" * w for w in widths)]
    out += [line(r) for r in cells]
    out.append(f"({len(rows)} row{'s' if len(rows) != 1 else ''})")
    return "\n".join(out)


def format_csv(names: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """CSV with a header; NULL is an empty cell."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(names)
    for row in rows:
        writer.writerow([_cell(v, "") for v in row])
    return buf.getvalue()


def format_json(names: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A JSON array of objects; NULL, NaN and infinities are null (valid JSON for jq and JavaScript)."""
    return json_text([{n: _plain(v) for n, v in zip(names, row)} for row in rows], indent=1)


RENDER = {"table": format_table, "csv": format_csv, "json": format_json}


def refuse_file_statements(store: Store, query: str) -> None:
    """Refuse ATTACH, COPY and EXPORT DATABASE before they run: they read or write files."""
    import duckdb

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
    from hubsurvey.analysis.findings import create_views

    create_views(store)
    result = store.con.execute(query)
    if result.description is None:
        return [], []
    return [d[0] for d in result.description], result.fetchall()


# --- commands -----------------------------------------------------------------------------------


def sql(
    query: Annotated[str, typer.Argument(help="SQL to run ('-': read it from stdin); the findings_* views are available")],
    fmt: Format = None,
    allow_files: Annotated[bool, typer.Option("--allow-files", help="Let the query read and write files (ATTACH, COPY, read_csv...)")] = False,
    db: ReadDb = Path(DEFAULT_DB),
) -> None:
    """Run a SQL query over the results DB (read-only, no file access) and print the result."""
    import duckdb

    fmt = output_format(fmt)
    if query == "-":
        query = sys.stdin.read()
    if not query.strip():
        raise UsageError("sql: the query is empty")
    store = open_results(db, safe=not allow_files)
    try:
        if not allow_files:
            refuse_file_statements(store, query)
        names, rows = run_sql(store, query)
    except duckdb.Error as e:
        raise BadInputError(" ".join(str(e).split())) from None
    finally:
        store.close()
    sys.stdout.write(RENDER[fmt](names, rows).rstrip("\n") + "\n")


def crossleaks(
    copy_threshold: CopyThreshold = 0.8,
    memory_mb: Annotated[int, typer.Option("--memory-mb", help="DuckDB's memory limit for the join, MB (it spills beyond)")] = 2048,
    top: Annotated[int, typer.Option("--top", help="How many leaking pairs to print")] = 10,
    db: Db = Path(DEFAULT_DB),
) -> None:
    """Find leaks across datasets: every test split against every other dataset's splits.

    Joins the per-row fingerprints kept beside the DB (one hash of each row's normalized text),
    classifies each overlap (copy, leak, shared_test, family) and replaces the cross_overlaps and
    dataset_families tables. `run` does this at its end unless --no-crossleaks.
    """
    from hubsurvey.analysis.crossleaks import crossleaks as run_crossleaks
    from hubsurvey.core.runs import Runs

    share("--copy-threshold", copy_threshold)
    positive("--memory-mb", memory_mb, MAX_MB)
    at_least("--top", top, 0, MAX_COUNT)
    if not Path(db).is_file():
        raise StoreError(f"{db}: no such results DB (run `hubsurvey run` or `hubsurvey audit` first)")
    with Store(db) as store:
        with Runs(store).recording("crossleaks", {"copy_threshold": copy_threshold, "memory_mb": memory_mb}) as recording:
            summary = run_crossleaks(store, copy_threshold=copy_threshold, memory_limit=f"{memory_mb}MB",
                                     run_id=recording.run_id)
            recording.counts = summary.as_json()
        leaks = store.query(
            "SELECT test_dataset, test_config, source_dataset, source_config, source_split, rows, test_rows, "
            "round(pct, 2) AS pct FROM cross_overlaps WHERE relation = 'leak' ORDER BY rows DESC, pct DESC, "
            "test_dataset, source_dataset, source_split LIMIT $n", {"n": top})
    typer.echo(summary.line())
    if top and leaks[1]:
        typer.echo(format_table(*leaks))


def show(
    dataset: Annotated[str, typer.Argument(help="Dataset id (owner/name), or its name when only one measured id has it")],
    config: Annotated[str | None, typer.Option("--config", help="Only this config")] = None,
    source: Annotated[str | None, typer.Option(
        "--source", help="Leaks across datasets: the rows of DATASET's test split found in this other dataset")] = None,
    source_config: Annotated[str | None, typer.Option("--source-config", help="With --source: only this config of it")] = None,
    kind: Annotated[str | None, typer.Option("--kind", help="leaks, duplicates, conflicts or near (or one kind, e.g. duplicate_test)")] = None,
    profile: Annotated[str | None, typer.Option("--profile", help="raw or normalized [default: both]")] = None,
    label: Annotated[str | None, typer.Option("--label", help="Only this label column (text-key examples are kept)")] = None,
    limit: Annotated[int | None, typer.Option("--limit", help="At most N examples of each kind")] = None,
    fmt: Format = None,
    db: ReadDb = Path(DEFAULT_DB),
) -> None:
    """Print the stored examples behind a dataset's counts (leaks, duplicates, label conflicts).

    Reads the DB only: the examples were stored when the dataset was measured (--examples N on
    audit and run). Every example gives its key (values cut at 200 characters), its rows in each
    split, its first row positions and, for conflicts, the labels.
    """
    from hubsurvey.analysis.examples import find_examples, render_examples

    fmt = output_format(fmt)
    at_least("--limit", limit, 1, MAX_COUNT)
    store = open_results(db)
    try:
        if source is not None:
            _show_pair(store, dataset, source, config, source_config, limit, fmt)
            return
        rows = find_examples(store, dataset, config=config, kind=kind, profile=profile, label_column=label, limit=limit)
    finally:
        store.close()
    if fmt == "table":
        typer.echo(render_examples(rows))
        return
    names = list(rows[0]) if rows else []
    sys.stdout.write(RENDER[fmt](names, [[r[n] for n in names] for r in rows]).rstrip("\n") + "\n")


def _show_pair(store: Store, dataset: str, source: str, config: str | None, source_config: str | None,
               limit: int | None, fmt: str) -> None:
    """``show A --source B``: A's test rows whose normalized text is in B, with their positions in both."""
    from hubsurvey.analysis.crossleaks import find_cross_rows, pair_overlaps, render_cross_rows
    from hubsurvey.analysis.examples import resolve_dataset

    a, b = resolve_dataset(store, dataset), resolve_dataset(store, source)
    rows = find_cross_rows(store, a, b, test_config=config, source_config=source_config, limit=limit or 20)
    if fmt == "table":
        typer.echo(render_cross_rows(a, b, rows, pair_overlaps(store, a, b)))
        return
    names = list(rows[0]) if rows else []
    sys.stdout.write(RENDER[fmt](names, [[r[n] for n in names] for r in rows]).rstrip("\n") + "\n")


def report(
    out: Annotated[Path, typer.Option("--out", help="Folder for REPORT.md and report.html")] = DEFAULT_REPORT_DIR,
    db: ReadDb = Path(DEFAULT_DB),
    top: Annotated[int, typer.Option("--top", help="How many rows the 'top test bias' table lists")] = 20,
) -> None:
    """Render the findings as REPORT.md and a self-contained report.html."""
    from hubsurvey.analysis.report import render_report

    at_least("--top", top, 1, MAX_COUNT)
    output_folder(out)  # before the DB: a file named as the folder is refused first
    store = open_results(db)
    try:
        paths = render_report(store, out, top_n=top)
    except OSError as e:
        raise BadInputError(f"{out}: {e}") from None
    finally:
        store.close()
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
    from hubsurvey.analysis.export import export_results

    output_folder(out)  # before the DB: a file named as the folder is refused first
    store = open_results(db)
    try:
        paths = export_results(store, out, lle_compat=lle_compat, overwrite=overwrite)
    except OSError as e:
        raise BadInputError(f"{out}: {e}") from None
    finally:
        store.close()
    for path in paths:
        typer.echo(f"wrote {path} ({path.stat().st_size} bytes)")


def publish(
    repo: Annotated[str, typer.Option("--repo", help="Target dataset repo, OWNER/NAME")],
    push: Annotated[bool, typer.Option("--push", help="Upload (default: only build the folder and print the plan)")] = False,
    private: Annotated[bool, typer.Option("--private", help="Create the repo private (an existing repo keeps its visibility)")] = False,
    db: ReadDb = Path(DEFAULT_DB),
    out: Annotated[Path | None, typer.Option("--out", help="Folder to build (default: a folder under the temp dir)")] = None,
    with_report: Annotated[bool, typer.Option("--report/--no-report", help="Include REPORT.md")] = True,
    license: Annotated[str | None, typer.Option("--license", help="License of the results in the card [default: cc-by-4.0]")] = None,
    pretty_name: Annotated[str | None, typer.Option("--pretty-name", help="Title of the results dataset in the card")] = None,
    site: Annotated[bool, typer.Option(
        "--site", help="Publish the static site (`hubsurvey site`) to the static Space --repo instead")] = False,
) -> None:
    """Build the results dataset (Parquet, CSV, card) and, with --push, upload it in one commit."""
    from hubsurvey.analysis.publish import PublishError
    from hubsurvey.analysis.publish import publish as run_publish

    if out is not None:
        output_folder(out)  # before the DB: a file named as the folder is refused first
    if site:
        from hubsurvey.commands.site import publish_site

        publish_site(repo, push=push, private=private, db=db, out=out)
        return

    store = open_results(db)
    try:
        card = {k: v for k, v in (("license", license), ("pretty_name", pretty_name)) if v is not None}
        client = None
        if push:
            from hubsurvey.core.hub import HubClient

            client = HubClient()
        result = run_publish(store, repo, out_dir=out, push=push, private=private, report=with_report, client=client,
                             **card)
    except PublishError as e:
        raise BadInputError(" ".join(str(e).split())) from None
    except OSError as e:
        raise BadInputError(f"{type(e).__name__}: {e}") from None
    finally:
        store.close()
    typer.echo(f"target: dataset {result.repo_id}{' (private)' if private else ''}")
    typer.echo(f"folder: {result.folder}")
    for f in result.files:
        typer.echo(f"  {f.path_in_repo:40} {f.size:>10} bytes")
    typer.echo(f"  {'total':40} {result.total_size:>10} bytes in {len(result.files)} files")
    if not push:
        typer.echo("dry run: nothing uploaded; add --push to create the repo and upload these files in one commit")
    elif result.unchanged:
        typer.echo("unchanged: the repo already holds exactly these files; no commit made")
    else:
        typer.echo(f"pushed: one commit with {len(result.files)} files (changed: {', '.join(result.changed)})")
        if result.commit_url:
            typer.echo(f"commit: {result.commit_url}")
