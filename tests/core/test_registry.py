"""The method registry: a figure declared once reaches the engine, the store, exports and docs.

The dummy figure below is added the way a new figure is meant to be added: a declaration in
``hubsurvey.core.figures`` with its SQL, and nothing else. Its values are checked against a plain
Python count on the generated sample dataset.
"""

from __future__ import annotations

import csv
import dataclasses

import duckdb
import pyarrow.parquet as pq
import pytest

from hubsurvey.analysis.export import export_results
from hubsurvey.core import figure_docs, figure_sql, figures
from hubsurvey.core.store import Store
from hubsurvey.survey.audit import audit
from hubsurvey.survey.sample import write_sample

DUMMY = figures.KeyFigure(
    "test_rows_in_train",
    "sum(n_test) FILTER (WHERE n_train > 0)",
    "test rows whose key occurs in train",
    "test rows in train",
    needs=("train",),
    method="dummy",  # new figures go beside the LLE figures, under a method of their own
)


@pytest.fixture
def with_dummy_figure(monkeypatch):
    monkeypatch.setattr(figures, "KEY_FIGURES", (*figures.KEY_FIGURES, DUMMY))
    return DUMMY


def _split_rows(folder, split):
    return pq.read_table(folder / "default" / split / "0000.parquet").to_pylist()


@pytest.mark.slow
def test_a_new_figure_is_measured_stored_and_exported(tmp_path, with_dummy_figure):
    folder = write_sample(tmp_path / "org__sample")
    db = tmp_path / "r.duckdb"
    outcome = audit(str(folder), db=db)
    (row,) = outcome.rows

    train, test = _split_rows(folder, "train"), _split_rows(folder, "test")
    train_texts = {r["text"] for r in train}
    train_pairs = {(r["text"], r["label"]) for r in train}
    assert row["text_test_rows_in_train"] == sum(r["text"] in train_texts for r in test)
    assert row["text_and_label_test_rows_in_train"] == sum((r["text"], r["label"]) in train_pairs for r in test)
    assert row["text_test_rows_in_train"] > 0  # the sample plants leaks: the check is not vacuous

    with Store(db, read_only=True) as store:
        stored = store.records("SELECT text_test_rows_in_train, text_and_label_test_rows_in_train FROM measurements")
        lle_columns = store.query("SELECT * FROM lle")[0]
    assert stored == [{k: row[k] for k in stored[0]}]
    assert len(lle_columns) == 14  # the published table does not grow

    written = export_results(Store(db, read_only=True), tmp_path / "out")
    header = next(csv.reader((tmp_path / "out" / "results.csv").open()))
    assert "text_test_rows_in_train" in header and "text_and_label_test_rows_in_train" in header
    assert any(p.suffix == ".parquet" for p in written)
    assert "`text_test_rows_in_train`" in figure_docs.markdown_figure_table()


@pytest.mark.slow
def test_an_existing_db_gains_the_new_figure_column(tmp_path, monkeypatch):
    db = tmp_path / "old.duckdb"
    Store(db).close()  # created without the figure
    monkeypatch.setattr(figures, "KEY_FIGURES", (*figures.KEY_FIGURES, DUMMY))
    Store(db).close()
    con = duckdb.connect(str(db), read_only=True)
    names = {r[0] for r in con.execute("SELECT column_name FROM information_schema.columns WHERE table_name = 'measurements'").fetchall()}
    assert {"text_test_rows_in_train", "text_and_label_test_rows_in_train"} <= names


def test_published_header_and_formats():
    assert figures.lle_published_header()[2] == "text_leaks_valididation_wrt_test"
    assert figures.lle_published_header()[-1] == "difference_annotation_in_train_and_valididation_splits"
    assert figures.published(10.04910315, figures.Format.PERCENT) == "10.049%"
    assert figures.published(0.0, figures.Format.PERCENT) == "0.0%"
    assert figures.published(7, figures.Format.FLOAT) == "7.0"
    assert figures.published(None, figures.Format.COUNT) == "NR"


def test_sql_and_python_formats_agree():
    """The lle view's SQL format and figures.published give the same text for the same value."""
    con = duckdb.connect()
    for value in (10.049103, 0.0, 17.4299999, 2 / 3 * 100, 100.0):
        column = next(c for c in figures.figure_columns() if c.fmt is figures.Format.PERCENT)
        sql = figure_sql._published_sql(column, "$v")
        assert con.execute(f"SELECT {sql}", {"v": value}).fetchone()[0] == figures.published(value, column.fmt)


def test_every_figure_is_declared_once():
    names = figures.figure_names()
    assert len(names) == len(set(names))
    assert all(dataclasses.is_dataclass(c.figure) for c in figures.figure_columns())
