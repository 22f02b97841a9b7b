"""The results dataset: ``current_measurements`` as Parquet and CSV (and the published LLE format).

Files written by :func:`export_results` into ``out_dir``:

- ``data/train-00000-of-00001.parquet``: one row per (dataset, config, label column); NULL stays null.
- ``results.csv``: the same rows and columns; NULL is written ``NR``; lists as JSON arrays;
  timestamps in ISO 8601 (UTC).
- ``lle.csv`` (``lle_compat=True``): the ``lle`` view under the header of the published
  lbourdois/LLE ``train.csv``, its ``valididation`` spelling kept, ``;``-separated.
- when ``hubsurvey crossleaks`` has found overlaps: ``data/cross_overlaps-00000-of-00001.parquet``
  and ``cross_overlaps.csv`` (the ``cross_overlaps`` table: every test split's rows found in
  another dataset's split, with its relation), and ``dataset_families.csv`` (copies grouped).

- when configs with two text columns or more were measured: ``data/column_measurements-00000-of-00001.parquet``
  and ``column_measurements.csv`` (the ``column_measurements`` table of the exported rows: the exact
  figures of each text column alone, per profile).

- when configs with a group column (a date column) were measured: ``data/group_measurements-00000-of-00001.parquet``
  and ``group_measurements.csv`` (``data/time_measurements-…``, ``time_measurements.csv``): per config
  and column, the groups shared across splits (the time order).

- ``contamination.csv`` (when datasets were checked against benchmarks): one row per dataset, its
  line "checked against K benchmarks at revisions …: clean | contaminated (which)" and its parts
  (the view ``findings_contamination``); and ``contamination_manifest.jsonl``, per dataset the
  benchmark checks it passed and failed, each with the benchmark's revision
  (:mod:`hubsurvey.analysis.checks_manifest`).

- when models declaring contaminated datasets were listed (``hubsurvey exposure``):
  ``data/model_exposure-00000-of-00001.parquet`` and ``model_exposure.csv``: per (benchmark, model),
  the declared datasets holding the benchmark's items (the view ``findings_model_exposure``).

- when the scores Hub models report were read (``hubsurvey scores``):
  ``data/scores_at_risk-00000-of-00001.parquet`` and ``scores_at_risk.csv``: every reported score with
  its status (at_risk, clean, undeclared, not_surveyed) and the evaluated rows found in the declared
  training data (the view ``scores_at_risk``, without the run id).

- when the survey measured some (dataset, config, label column) from the Hub at two revisions or more:
  ``data/history-00000-of-00001.parquet`` and ``history.csv``, the ``history`` view (every revision
  measured, its verdict and headline figures; NR null in Parquet, ``NR`` in the CSV).

- ``data/clean_test-00000-of-00001.parquet`` (when ``hubsurvey clean --db`` recorded clean test
  splits): the ``clean_test`` table, per (dataset, config, revision, profile) the kept row
  positions of the test split, its counts and fingerprints; ``hubsurvey.load_clean_test`` reads it.

- ``.hubsurvey-export.json``: the manifest, the list of files hubsurvey wrote into the folder.

The output depends only on the DB's content (rows sorted, timestamps in UTC), so exporting an
unchanged DB again gives byte-identical files, which lets ``publish`` skip an unchanged upload.

Nothing stale survives: an export refuses a folder that holds anything unless ``overwrite=True``,
and with it first removes exactly the files the folder's manifest lists (what hubsurvey wrote there
before), never any other file, so an old ``lle.csv`` or Parquet shard cannot be loaded with new ones.

CSV cells that come from the Hub (ids, config and column names, dataset_name) and begin with
``=``, ``+``, ``-``, ``@``, a tab or a carriage return are written with a leading ``'`` so that a
spreadsheet shows them as text instead of running them as a formula (:func:`csv_text`). Only the
CSV files do this; Parquet and the DB keep the true value, and numbers are never touched.
"""

from __future__ import annotations

import csv
import io
import json
import logging
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from hubsurvey.analysis.checks_manifest import CHECKS_MANIFEST_PATH, write_checks_manifest
from hubsurvey.analysis.findings import create_views
from hubsurvey.analysis.history import HISTORY_EXPORT_QUERY, has_history
from hubsurvey.core import figures
from hubsurvey.core.errors import OutputExistsError
from hubsurvey.core.outputs import output_folder
from hubsurvey.core.store import CLEAN_TEST_PARQUET_PATH, Store, quote_ident, result_columns

log = logging.getLogger(__name__)

PARQUET_PATH = "data/train-00000-of-00001.parquet"
CSV_PATH = "results.csv"
LLE_CSV_PATH = "lle.csv"
CROSS_PARQUET_PATH = "data/cross_overlaps-00000-of-00001.parquet"
CROSS_CSV_PATH = "cross_overlaps.csv"
FAMILIES_CSV_PATH = "dataset_families.csv"
#: The cross tables' exported rows, in a stable order (the run id and time are left out: they
#: change at every run although the content does not, and an unchanged export is not published again).
CROSS_QUERY = ("SELECT * EXCLUDE (run_id, computed_at) FROM cross_overlaps ORDER BY test_dataset, test_config, source_dataset, "
               "source_config, source_split")
FAMILIES_QUERY = "SELECT * EXCLUDE (run_id, computed_at) FROM dataset_families ORDER BY family_id, dataset_id"
CONTAMINATION_CSV_PATH = "contamination.csv"  # contamination with benchmarks: the line per dataset
EXPOSURE_PARQUET_PATH = "data/model_exposure-00000-of-00001.parquet"  # the models declaring contaminated data
EXPOSURE_CSV_PATH = "model_exposure.csv"
SCORES_PARQUET_PATH = "data/scores_at_risk-00000-of-00001.parquet"  # every reported score and its status
SCORES_CSV_PATH = "scores_at_risk.csv"
#: The scores' exported rows (the view's order; the run id left out, as for the cross tables).
SCORES_QUERY = "SELECT * EXCLUDE (run_id) FROM scores_at_risk"
#: The history config: every revision measured (the history view), when a row key has two or more.
HISTORY_PARQUET_PATH = "data/history-00000-of-00001.parquet"
HISTORY_CSV_PATH = "history.csv"
#: The clean test splits' kept row positions (the clean_test table, written by `hubsurvey clean --db`):
#: positions and counts only, never a row's text. The run id is left out, as for the cross tables.
CLEAN_TEST_QUERY = "SELECT * EXCLUDE (run_id) FROM clean_test ORDER BY dataset_id, config, profile, revision_sha"
COLUMN_PARQUET_PATH = "data/column_measurements-00000-of-00001.parquet"
COLUMN_CSV_PATH = "column_measurements.csv"
#: The figures of each text column alone (table column_measurements) of the exported rows: the
#: revisions current_measurements holds, in a stable order (text columns in the key's order).
COLUMN_QUERY = """SELECT c.* FROM column_measurements AS c
SEMI JOIN current_measurements AS m
  ON m.dataset_id = c.dataset_id AND m.revision_sha = c.revision_sha AND m.config = c.config
 AND m.label_column IS NOT DISTINCT FROM c.label_column
ORDER BY c.dataset_id, c.config, c.label_column NULLS FIRST, list_position(c.text_columns, c.text_column), c.profile"""
#: The group columns (table group_measurements) and date columns (time_measurements) of the exported
#: configs' revisions, in a stable order.
GROUP_PARQUET_PATH = "data/group_measurements-00000-of-00001.parquet"
GROUP_CSV_PATH = "group_measurements.csv"
GROUP_QUERY = """SELECT g.* FROM group_measurements AS g
SEMI JOIN current_measurements AS m ON m.dataset_id = g.dataset_id AND m.revision_sha = g.revision_sha AND m.config = g.config
ORDER BY g.dataset_id, g.config, g.group_column"""
TIME_PARQUET_PATH = "data/time_measurements-00000-of-00001.parquet"
TIME_CSV_PATH = "time_measurements.csv"
TIME_QUERY = GROUP_QUERY.replace("group_measurements", "time_measurements").replace("g.group_column", "g.date_column")
NR = figures.NR
MANIFEST_PATH = ".hubsurvey-export.json"
#: Files earlier hubsurvey versions wrote without a manifest: removed on overwrite when it is absent.
LEGACY_PATHS = (PARQUET_PATH, CSV_PATH, LLE_CSV_PATH)
#: Leading characters that make a spreadsheet read a cell as a formula (OWASP "CSV injection").
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")

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


def csv_text(text: str) -> str:
    """A text cell a spreadsheet shows as text: a leading formula character gets a ``'`` before it."""
    return "'" + text if text.startswith(FORMULA_START) else text


def csv_cell(value: Any) -> str:
    """One CSV cell: NULL -> 'NR', lists -> JSON, timestamps -> ISO 8601 UTC, floats -> repr.

    Text values (strings, never numbers) pass through :func:`csv_text`.
    """
    if value is None:
        return NR
    if isinstance(value, str):
        return csv_text(value)
    if isinstance(value, (list, tuple)):
        return json.dumps(list(value), ensure_ascii=False)
    if isinstance(value, datetime):
        if value.tzinfo is not None:
            value = value.astimezone(UTC)
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


def write_table(store: Store, out: Path, parquet_path: str, csv_path: str, query: str) -> list[Path]:
    """The rows of ``query`` as Parquet and as CSV in ``out``."""
    _utc(store.con)
    (out / parquet_path).parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(store.con.sql(query).to_arrow_table(), out / parquet_path, compression="zstd")
    return [out / parquet_path, write_results_csv(store, out / csv_path, query)]


def csv_document(names: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A header and rows as CSV text, each cell through :func:`csv_cell` (NULL -> NR, formulas defused)."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(names)
    for row in rows:
        writer.writerow([csv_cell(v) for v in row])
    return buf.getvalue()


def write_csv(path: Path, names: Sequence[str], rows: Sequence[Sequence[Any]]) -> Path:
    """A header and rows as a CSV file (:func:`csv_document`)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(csv_document(names, rows), encoding="utf-8", newline="")
    return path


def write_results_csv(store: Store, path: Path, query: str | None = None) -> Path:
    _utc(store.con)
    return write_csv(path, *store.query(query or results_query()))


def lle_compat_text(store: Store) -> str:
    """The ``lle`` view as the published train.csv: ``;``-separated, published header spelling."""
    # ORDER BY ALL: by dataset_name as the view does, then every other column (a stable order).
    names, rows = store.query("SELECT * FROM lle ORDER BY ALL")
    if len(names) != len(LLE_PUBLISHED_HEADER):  # the lle view is the contract: refuse a mismatch
        raise RuntimeError(f"the lle view has {len(names)} columns, the published table {len(LLE_PUBLISHED_HEADER)}")
    buf = io.StringIO()
    writer = csv.writer(buf, delimiter=";", lineterminator="\n")
    writer.writerow(LLE_PUBLISHED_HEADER)
    # Only dataset_name is text from the Hub; every other lle column is a figure (text in the view).
    name_at = names.index("dataset_name") if "dataset_name" in names else None
    for row in rows:
        cells = [NR if v is None else v for v in row]
        if name_at is not None and isinstance(cells[name_at], str):
            cells[name_at] = csv_text(cells[name_at])
        writer.writerow(cells)
    return buf.getvalue()


def write_lle_csv(store: Store, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(lle_compat_text(store), encoding="utf-8", newline="")
    return path


# --- contamination with benchmarks ------------------------------------------------------------------

CONTAMINATION_COLUMNS = ("dataset_id", "status", "line", "benchmarks", "revisions", "benchmarks_contaminating",
                         "contaminated_benchmarks", "contaminated_rows", "configs_checked", "configs")


def contamination_rows(store: Store) -> tuple[list[str], list[tuple]]:
    """The per-dataset contamination lines (``findings_contamination``), sorted by dataset."""
    create_views(store)
    cols = ", ".join(quote_ident(c) for c in CONTAMINATION_COLUMNS)
    return store.query(f"SELECT {cols} FROM findings_contamination ORDER BY dataset_id")


def write_contamination_csv(store: Store, path: Path) -> Path | None:
    """``contamination.csv``, or nothing when no dataset was checked against benchmarks."""
    names, rows = contamination_rows(store)
    return write_csv(path, names, rows) if rows else None


def write_exposure(store: Store, out: Path) -> list[Path]:
    """``findings_model_exposure`` as Parquet (the results dataset's config ``model_exposure``) and
    CSV, or nothing when no model declaring a contaminated dataset was listed."""
    create_views(store)
    _utc(store.con)
    table = store.con.sql("SELECT * FROM findings_model_exposure").to_arrow_table()
    if not table.num_rows:
        return []
    (out / EXPOSURE_PARQUET_PATH).parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, out / EXPOSURE_PARQUET_PATH, compression="zstd")
    return [out / EXPOSURE_PARQUET_PATH,
            write_results_csv(store, out / EXPOSURE_CSV_PATH, "SELECT * FROM findings_model_exposure")]
def write_history(store: Store, out: Path) -> list[Path]:
    """The history config (Parquet and CSV), or nothing before the survey measured a dataset again."""
    if not has_history(store):
        return []
    _utc(store.con)
    (out / HISTORY_PARQUET_PATH).parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(store.con.sql(HISTORY_EXPORT_QUERY).to_arrow_table(), out / HISTORY_PARQUET_PATH, compression="zstd")
    return [out / HISTORY_PARQUET_PATH, write_results_csv(store, out / HISTORY_CSV_PATH, HISTORY_EXPORT_QUERY)]


def _manifest_files(out: Path) -> list[str] | None:
    """The files the folder's manifest lists (relative paths), or None without a readable manifest."""
    try:
        data = json.loads((out / MANIFEST_PATH).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    files = data.get("files") if isinstance(data, dict) else None
    return [f for f in files if isinstance(f, str)] if isinstance(files, list) else None


def _inside(out: Path, relative: str) -> Path | None:
    """``out / relative`` when it stays inside ``out`` (a hostile manifest cannot reach elsewhere)."""
    path = (out / relative).resolve()
    root = out.resolve()
    return path if path != root and root in path.parents else None


def prepare_folder(out_dir: str | Path, overwrite: bool = False) -> Path:
    """Make ``out_dir`` ready for a fresh set of files; return it.

    An empty or missing folder is used as it is. A folder that holds anything is refused
    (:class:`OutputExistsError`, exit 2) unless ``overwrite``; with it, the files the manifest lists
    (else, for a folder from before manifests, the fixed export names) are removed, and the folders
    they leave empty; every other file stays.
    """
    out = output_folder(out_dir)
    if not out.exists() or not any(out.iterdir()):
        out.mkdir(parents=True, exist_ok=True)
        return out
    if not overwrite:
        raise OutputExistsError(f"{out}: folder is not empty; pass --overwrite to replace the files hubsurvey wrote there")
    listed = _manifest_files(out)
    for relative in (listed if listed is not None else list(LEGACY_PATHS)) + [MANIFEST_PATH]:
        path = _inside(out, relative)
        if path is None or not path.is_file():
            continue
        path.unlink()
        for parent in path.parents:  # folders the removal left empty (data/), up to out
            if parent == out.resolve() or any(parent.iterdir()):
                break
            parent.rmdir()
    others = sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file())
    if others:
        log.warning("%s: kept %d file(s) hubsurvey did not write: %s", out, len(others), ", ".join(others[:5]))
    return out


def has_cross_overlaps(store: Store) -> bool:
    """Whether ``crossleaks`` has found overlaps (then the results dataset carries its tables)."""
    return bool(store.query("SELECT count(*) FROM cross_overlaps")[1][0][0])


def has_clean_test(store: Store) -> bool:
    """Whether ``hubsurvey clean --db`` recorded clean test splits (then the results carry clean_test)."""
    return bool(store.query("SELECT count(*) FROM clean_test")[1][0][0])


def write_manifest(out_dir: str | Path, files: list[str]) -> Path:
    """Record the files hubsurvey wrote into ``out_dir`` (relative paths), for the next overwrite."""
    path = Path(out_dir) / MANIFEST_PATH
    data = {"written_by": "hubsurvey", "files": sorted(set(files))}
    path.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    return path


def export_results(store: Store, out_dir: str | Path, lle_compat: bool = False, overwrite: bool = False) -> list[Path]:
    """Write the results dataset into ``out_dir``; return the files written (see module doc).

    ``out_dir`` must be empty or missing, unless ``overwrite`` (see :func:`prepare_folder`).
    """
    out = prepare_folder(out_dir, overwrite=overwrite)
    written = [write_parquet(store, out / PARQUET_PATH), write_results_csv(store, out / CSV_PATH)]
    if lle_compat:
        written.append(write_lle_csv(store, out / LLE_CSV_PATH))
    if has_cross_overlaps(store):
        written += [*write_table(store, out, CROSS_PARQUET_PATH, CROSS_CSV_PATH, CROSS_QUERY),
                    write_results_csv(store, out / FAMILIES_CSV_PATH, FAMILIES_QUERY)]
    if store.query(f"SELECT count(*) FROM ({COLUMN_QUERY})")[1][0][0]:  # configs with two text columns or more
        written += write_table(store, out, COLUMN_PARQUET_PATH, COLUMN_CSV_PATH, COLUMN_QUERY)
    for parquet_path, csv_path, query in ((GROUP_PARQUET_PATH, GROUP_CSV_PATH, GROUP_QUERY),
                                          (TIME_PARQUET_PATH, TIME_CSV_PATH, TIME_QUERY)):
        if store.query(f"SELECT count(*) FROM ({query})")[1][0][0]:  # configs with a group (a date) column
            written += write_table(store, out, parquet_path, csv_path, query)
    contamination = write_contamination_csv(store, out / CONTAMINATION_CSV_PATH)
    if contamination is not None:
        written.append(contamination)
    checks = write_checks_manifest(store, out / CHECKS_MANIFEST_PATH)
    if checks is not None:
        written.append(checks)
    written += write_exposure(store, out)
    if store.query("SELECT count(*) FROM reported_scores")[1][0][0]:
        written += write_table(store, out, SCORES_PARQUET_PATH, SCORES_CSV_PATH, SCORES_QUERY)
    written += write_history(store, out)
    if has_clean_test(store):
        _utc(store.con)
        (out / CLEAN_TEST_PARQUET_PATH).parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(store.con.sql(CLEAN_TEST_QUERY).to_arrow_table(), out / CLEAN_TEST_PARQUET_PATH, compression="zstd")
        written.append(out / CLEAN_TEST_PARQUET_PATH)
    write_manifest(out, [p.relative_to(out).as_posix() for p in written])
    return written
