"""The analysis commands: ``sql``, ``report``, ``export``, ``publish`` (registered on ``hubsurvey``).

Each is a thin layer over one Python function; exit codes follow hubsurvey.cli:
0 success, 2 bad input (a bad query, a bad repo id, a Hub refusal: one line on stderr),
3 the results DB could not be used (missing, locked, newer schema).
"""

from __future__ import annotations

import csv
import json
import sys
from datetime import date, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any, Optional, Sequence

import typer

from hubsurvey.core.store import DEFAULT_DB, Store, StoreError

EXIT_BAD_INPUT, EXIT_STORE = 2, 3
FORMATS = ("table", "csv", "json")


def _fail(message: str, code: int = EXIT_BAD_INPUT) -> typer.Exit:
    typer.echo(f"error: {' '.join(str(message).split())}", err=True)
    return typer.Exit(code)


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def _open(db: Path) -> Store:
    if not Path(db).exists():
        raise _fail(f"{db}: no such results DB", EXIT_STORE)
    try:
        return Store(db, read_only=True)
    except StoreError as e:
        raise _fail(str(e), EXIT_STORE)


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
        return json.dumps(value, ensure_ascii=False)
    return str(value)


def format_table(names: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """Aligned columns with a header rule; numbers right-aligned, NULL shown as NULL."""
    cells = [[_cell(v, "NULL").replace("\n", "\\n") for v in row] for row in rows]
    widths = [max([len(n)] + [len(r[i]) for r in cells]) for i, n in enumerate(names)]
    numeric = [
        bool(rows) and all(isinstance(r[i], (int, float, Decimal)) and not isinstance(r[i], bool) or r[i] is None for r in rows)
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
    import io

    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(names)
    for row in rows:
        writer.writerow([_cell(v, "") for v in row])
    return buf.getvalue()


def format_json(names: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A JSON array of objects; NULL is null."""
    return json.dumps([{n: _plain(v) for n, v in zip(names, row)} for row in rows], ensure_ascii=False, indent=1)


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
    query: str = typer.Argument(..., help="SQL to run; the findings_* views are available"),
    fmt: str = typer.Option("table", "--format", help="table, csv or json"),
    db: Path = typer.Option(Path(DEFAULT_DB), "--db", help="Results DB (opened read-only)"),
) -> None:
    """Run a SQL query over the results DB (read-only) and print the result."""
    import duckdb

    if fmt not in FORMATS:
        raise _fail(f"--format must be one of {', '.join(FORMATS)}, not {fmt!r}")
    store = _open(db)
    try:
        names, rows = run_sql(store, query)
    except duckdb.Error as e:
        raise _fail(_one_line(e))
    finally:
        store.close()
    render = {"table": format_table, "csv": format_csv, "json": format_json}[fmt]
    sys.stdout.write(render(names, rows).rstrip("\n") + "\n")


def report(
    out: Path = typer.Option(Path("out"), "--out", help="Folder for REPORT.md and report.html"),
    db: Path = typer.Option(Path(DEFAULT_DB), "--db", help="Results DB (opened read-only)"),
    top: int = typer.Option(20, "--top", help="How many rows the 'top test bias' table lists"),
) -> None:
    """Render the findings as REPORT.md and a self-contained report.html."""
    from hubsurvey.analysis.report import render_report

    store = _open(db)
    try:
        paths = render_report(store, out, top_n=top)
    except OSError as e:
        raise _fail(f"{out}: {_one_line(e)}")
    finally:
        store.close()
    for path in paths:
        typer.echo(f"wrote {path}")


def export(
    out: Path = typer.Option(..., "--out", help="Folder to write the results dataset into"),
    db: Path = typer.Option(Path(DEFAULT_DB), "--db", help="Results DB (opened read-only)"),
    lle_compat: bool = typer.Option(False, "--lle-compat", help="Also write lle.csv in the published LLE format"),
    overwrite: bool = typer.Option(False, "--overwrite", help="Use a non-empty folder: first remove the files hubsurvey wrote there"),
) -> None:
    """Export the results as Parquet (NULL stays null) and CSV (NULL written NR)."""
    from hubsurvey.analysis.export import export_results
    from hubsurvey.core.errors import HubsurveyError, one_line

    store = _open(db)
    try:
        paths = export_results(store, out, lle_compat=lle_compat, overwrite=overwrite)
    except HubsurveyError as e:
        raise _fail(one_line(e), int(e.exit_code))
    except OSError as e:
        raise _fail(f"{out}: {_one_line(e)}")
    finally:
        store.close()
    for path in paths:
        typer.echo(f"wrote {path} ({path.stat().st_size} bytes)")


def publish(
    repo: str = typer.Option(..., "--repo", help="Target dataset repo, OWNER/NAME"),
    push: bool = typer.Option(False, "--push", help="Upload (default: only build the folder and print the plan)"),
    private: bool = typer.Option(False, "--private", help="Create the repo private (an existing repo keeps its visibility)"),
    db: Path = typer.Option(Path(DEFAULT_DB), "--db", help="Results DB (opened read-only)"),
    out: Optional[Path] = typer.Option(None, "--out", help="Folder to build (default: a folder under the temp dir)"),
    with_report: bool = typer.Option(True, "--report/--no-report", help="Include REPORT.md"),
    license: Optional[str] = typer.Option(None, "--license", help="License of the results in the card [default: cc-by-4.0]"),
    pretty_name: Optional[str] = typer.Option(None, "--pretty-name", help="Title of the results dataset in the card"),
) -> None:
    """Build the results dataset (Parquet, CSV, card) and, with --push, upload it in one commit."""
    from hubsurvey.analysis.publish import PublishError, publish as run_publish

    store = _open(db)
    try:
        card = {k: v for k, v in (("license", license), ("pretty_name", pretty_name)) if v is not None}
        result = run_publish(store, repo, out_dir=out, push=push, private=private, report=with_report, **card)
    except PublishError as e:
        raise _fail(str(e))
    except OSError as e:
        raise _fail(_one_line(e))
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


def register(app: typer.Typer) -> None:
    """Add the analysis commands to the ``hubsurvey`` app."""
    app.command("sql")(sql)
    app.command("report")(report)
    app.command("export")(export)
    app.command("publish")(publish)
