"""Outputs that leave nothing stale and can be trusted: a report without matplotlib, plain-text chart
labels, CSV cells that cannot run as formulas, exports that refuse or clean a used folder, and the
per-dataset verdict table."""

from __future__ import annotations

import csv
import io
import json
import logging
import sys

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

try:
    from test_analysis_fixtures import DATASETS, T0, audit_folder, build_planted_db, write_folder
except ImportError:  # tests/ imported as a package
    from tests.test_analysis_fixtures import DATASETS, T0, audit_folder, build_planted_db, write_folder

from hubsurvey.analysis.report import render_report
from hubsurvey.cli import app
from hubsurvey.core.store import Store, insert

runner = CliRunner()


@pytest.fixture(scope="module")
def planted_db(tmp_path_factory):
    return build_planted_db(tmp_path_factory.mktemp("planted"))


def _no_matplotlib(monkeypatch):
    """Make `import matplotlib` fail as on a bare install (a None entry in sys.modules does that)."""
    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(ImportError):
        import matplotlib  # noqa: F401


# --- 1. a bare install: no matplotlib --------------------------------------------------------------------


def test_report_without_matplotlib_is_written_with_one_warning(planted_db, tmp_path, monkeypatch, caplog):
    _no_matplotlib(monkeypatch)
    with caplog.at_level(logging.WARNING):
        with Store(planted_db, read_only=True) as store:
            md_path, html_path = render_report(store, tmp_path)
    warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1 and "matplotlib" in warnings[0].getMessage()
    assert "\n" not in warnings[0].getMessage()
    html = html_path.read_text()
    assert "<img" not in html and "## 1. Leaks" in md_path.read_text()
    assert "1. Leaks and duplicates per split" in html


def test_report_command_without_matplotlib_exits_0(planted_db, tmp_path, monkeypatch):
    _no_matplotlib(monkeypatch)
    r = runner.invoke(app, ["report", "--out", str(tmp_path / "r"), "--db", str(planted_db)])
    assert r.exit_code == 0, r.output
    assert (tmp_path / "r" / "report.html").exists() and (tmp_path / "r" / "REPORT.md").exists()


# --- 6. labels from the Hub are plain text -----------------------------------------------------------------


def _db_with_tag(root, tag: str):
    db = root / "results.duckdb"
    audit_folder(write_folder(root, "acme/alpha", DATASETS["acme/alpha"]), db, dataset_id="acme/alpha")
    with Store(db) as store:
        insert(store.con, "datasets", {"dataset_id": "acme/alpha", "tags": [tag],
                                       "status": "eligible", "first_seen": T0, "last_seen": T0})
    return db


@pytest.mark.parametrize("tag", ["task_categories:$x^$", "task_categories:a$b", "task_categories:$\\frac{$", "task_categories:\\$x^$"])
def test_a_math_like_tag_does_not_break_the_report(tmp_path, tag):
    pytest.importorskip("matplotlib")
    db = _db_with_tag(tmp_path, tag)
    with Store(db, read_only=True) as store:
        _, html_path = render_report(store, tmp_path / "out")
    html = html_path.read_text()
    assert 'id="chart-task"' in html  # the task chart was drawn, with that label


def test_plain_escapes_every_dollar():
    from hubsurvey.analysis.charts import plain

    assert plain("$x^$") == r"\$x^\$" and plain("no math") == "no math"
