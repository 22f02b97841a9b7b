"""The results dataset: ``current_measurements`` as Parquet and CSV (and the published LLE format).

Files written by :func:`export_results` into ``out_dir``:

- ``data/train-00000-of-00001.parquet``: one row per (dataset, config, label column); NULL stays null.
- ``results.csv``: the same rows and columns; NULL is written ``NR``; lists as JSON arrays;
  timestamps in ISO 8601 (UTC).
- ``lle.csv`` (``lle_compat=True``): the ``lle`` view under the header of the published
  lbourdois/LLE ``train.csv``, its ``valididation`` spelling kept, ``;``-separated.

The output depends only on the DB's content (rows sorted, timestamps in UTC), so exporting an
unchanged DB again gives byte-identical files, which lets ``publish`` skip an unchanged upload.
"""

from __future__ import annotations

import csv
import io
import json
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from hubsurvey.core import figures
from hubsurvey.core.store import Store, quote_ident, result_columns

PARQUET_PATH = "data/train-00000-of-00001.parquet"
CSV_PATH = "results.csv"
LLE_CSV_PATH = "lle.csv"
NR = figures.NR

#: Header of the published lbourdois/LLE train.csv, spelling kept, in the lle view's column order.
LLE_PUBLISHED_HEADER = figures.lle_published_header()


def columns() -> dict[str, str]:
    """Exported columns, in order, with their meaning (the dataset card's column table uses this)."""
    return result_columns()

ORDER_BY = "dataset_name, dataset_id, config, label_column NULLS FIRST, revision_sha"


def results_query() -> str:
    """The exported rows: ``current_measurements``' columns of :func:`columns`, in a stable order."""
    cols = ", ".join(quote_ident(c) for c in columns())
    return f"SELECT {cols} FROM current_measurements ORDER BY {ORDER_BY}"


def _utc(con: Any) -> None:
    # Timestamps come out in the session time zone: pin it, so files do not depend on the machine.
    con.execute("SET TimeZone = 'UTC'")


def csv_cell(value: Any) -> str:
    """One CSV cell: NULL -> 'NR', lists -> JSON, timestamps -> ISO 8601 UTC, floats -> repr."""
    if value is None:
        return NR
    if isinstance(value, (list, tuple)):
        return json.dumps(list(value), ensure_ascii=False)
    if isinstance(value, datetime):
        if value.tzinfo is not None:
            value = value.astimezone(timezone.utc)
        return value.isoformat()
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def write_parquet(store: Store, path: Path) -> Path:
    _utc(store.con)
    table = store.con.sql(results_query()).to_arrow_table()
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, path, compression="zstd")
    return path


def write_results_csv(store: Store, path: Path) -> Path:
    _utc(store.con)
    names, rows = store.query(results_query())
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(names)
    for row in rows:
        writer.writerow([csv_cell(v) for v in row])
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(buf.getvalue(), encoding="utf-8", newline="")
    return path


def lle_compat_text(store: Store) -> str:
    """The ``lle`` view as the published train.csv: ``;``-separated, published header spelling."""
    # ORDER BY ALL: by dataset_name as the view does, then every other column (a stable order).
    names, rows = store.query("SELECT * FROM lle ORDER BY ALL")
    if len(names) != len(LLE_PUBLISHED_HEADER):  # the lle view is the contract: refuse a mismatch
        raise RuntimeError(f"the lle view has {len(names)} columns, the published table {len(LLE_PUBLISHED_HEADER)}")
    buf = io.StringIO()
    writer = csv.writer(buf, delimiter=";", lineterminator="\n")
    writer.writerow(LLE_PUBLISHED_HEADER)
    for row in rows:
        writer.writerow(["NR" if v is None else v for v in row])
    return buf.getvalue()


def write_lle_csv(store: Store, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(lle_compat_text(store), encoding="utf-8", newline="")
    return path


def export_results(store: Store, out_dir: str | Path, lle_compat: bool = False) -> list[Path]:
    """Write the results dataset into ``out_dir``; return the files written (see module doc)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written = [write_parquet(store, out / PARQUET_PATH), write_results_csv(store, out / CSV_PATH)]
    if lle_compat:
        written.append(write_lle_csv(store, out / LLE_CSV_PATH))
    return written
