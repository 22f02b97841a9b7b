"""Where a secret could leak, and a scan of each: no token in the DB, files, logs or reports.

Grepping the raw bytes of a DuckDB file proves nothing on a real-sized DB: DuckDB compresses the
strings of a table once it grows (seen at about 5,000 rows), so a stored token need not appear in
the file's bytes. The DB is scanned with SQL instead: every VARCHAR, VARCHAR[] and JSON column (and
any other type holding text: structs, maps, lists of them) of every table. Parquet is compressed
too, so it is read with pyarrow and its string values are scanned. Every other file is scanned as
bytes (text formats: CSV, Markdown, HTML, JSON, YAML, logs).

    hits = secret_hits(TOKEN, db=db, texts={"crawl": out}, paths=[report_dir, export_dir])
    assert not hits, hits
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

#: column types scanned in the DB: anything whose type name holds one of these
TEXT_TYPES = ("VARCHAR", "JSON", "STRUCT", "MAP", "UNION")


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def db_hits(db: str | Path, secret: str) -> list[str]:
    """``schema.table.column`` of every DB column holding ``secret`` in some row (SQL scan).

    Opened read-only; views are skipped (they only show table data)."""
    hits: list[str] = []
    con = duckdb.connect(str(db), read_only=True)
    try:
        columns = con.execute(
            "SELECT c.table_schema, c.table_name, c.column_name, c.data_type FROM information_schema.columns c "
            "JOIN information_schema.tables t USING (table_catalog, table_schema, table_name) "
            "WHERE t.table_type = 'BASE TABLE' ORDER BY 1, 2, c.ordinal_position"
        ).fetchall()
        for schema, table, column, data_type in columns:
            if not any(t in data_type.upper() for t in TEXT_TYPES):
                continue
            sql = (f"SELECT count(*) FROM {_quote(schema)}.{_quote(table)} "
                   f"WHERE contains(CAST({_quote(column)} AS VARCHAR), ?)")
            (n,) = con.execute(sql, [secret]).fetchone()
            if n:
                hits.append(f"{schema}.{table}.{column} ({n} rows)")
    finally:
        con.close()
    return hits


def db_text_columns(db: str | Path) -> int:
    """How many text columns :func:`db_hits` scans (a scan of nothing would prove nothing)."""
    con = duckdb.connect(str(db), read_only=True)
    try:
        types = con.execute(
            "SELECT data_type FROM information_schema.columns c JOIN information_schema.tables t "
            "USING (table_catalog, table_schema, table_name) WHERE t.table_type = 'BASE TABLE'"
        ).fetchall()
    finally:
        con.close()
    return sum(any(t in d.upper() for t in TEXT_TYPES) for (d,) in types)


def _arrow_hits(table: pa.Table, secret: str) -> list[str]:
    """Columns of an Arrow table whose values, as text, hold ``secret`` (nested values included)."""
    hits = []
    for name, column in zip(table.column_names, table.columns):
        if any(secret in repr(v) for v in column.to_pylist()):
            hits.append(name)
    return hits


def file_hits(path: Path, secret: str) -> list[str]:
    """Where ``secret`` is in one file: Parquet is read and its values scanned, the rest as bytes."""
    if path.suffix == ".parquet":
        table = pq.read_table(path)
        meta = pq.read_metadata(path).metadata or {}
        hits = [f"{path}: column {c}" for c in _arrow_hits(table, secret)]
        hits += [f"{path}: metadata" for v in meta.values() if secret.encode() in v]
        return hits
    if path.suffix in (".duckdb", ".db"):
        return [f"{path}: {h}" for h in db_hits(path, secret)]
    return [str(path)] if secret.encode() in path.read_bytes() else []


def files_of(paths: Iterable[str | Path]) -> list[Path]:
    """Every file of the given files and folders (recursively)."""
    out: list[Path] = []
    for p in map(Path, paths):
        out += sorted(f for f in p.rglob("*") if f.is_file()) if p.is_dir() else [p] if p.is_file() else []
    return out


def secret_hits(
    secret: str,
    *,
    db: str | Path | None = None,
    texts: Mapping[str, str] | None = None,
    paths: Iterable[str | Path] = (),
    blobs: Mapping[str, bytes] | None = None,
) -> list[str]:
    """Every place ``secret`` occurs: DB columns (SQL), captured texts (logs, stdout, stderr), files
    and folders (reports, exports, a publish folder), and named blobs (e.g. what a Hub received)."""
    assert len(secret) >= 8, "scan for a distinctive secret"
    hits = [f"db {h}" for h in db_hits(db, secret)] if db is not None else []
    hits += [f"text {name}" for name, text in (texts or {}).items() if secret in (text or "")]
    for f in files_of(paths):
        hits += file_hits(f, secret)
    for name, data in (blobs or {}).items():
        if name.endswith(".parquet"):  # compressed: read it (from a buffer, never a BytesIO)
            hits += [f"blob {name}: column {c}" for c in _arrow_hits(pq.read_table(pa.BufferReader(data)), secret)]
        if secret.encode() in data:
            hits.append(f"blob {name}")
    return hits
