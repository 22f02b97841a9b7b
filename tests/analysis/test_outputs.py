"""Outputs that leave nothing stale and can be trusted: a report without matplotlib, plain-text chart
labels, CSV cells that cannot run as formulas, exports that refuse or clean a used folder, and the
per-dataset verdict table."""

from __future__ import annotations

import csv
import io
import json
import logging
import re
import sys
from datetime import UTC, datetime

import pyarrow.parquet as pq
import pytest
from test_analysis_fixtures import DATASETS, T0, audit_folder, build_planted_db, write_folder
from typer.testing import CliRunner

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


@pytest.mark.slow
def test_report_without_matplotlib_is_written_with_one_warning(planted_db, tmp_path, monkeypatch, caplog):
    _no_matplotlib(monkeypatch)
    with caplog.at_level(logging.WARNING), Store(planted_db, read_only=True) as store:
        md_path, html_path = render_report(store, tmp_path)
    warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1 and "matplotlib" in warnings[0].getMessage()
    assert "\n" not in warnings[0].getMessage()
    html = html_path.read_text()
    assert "<img" not in html and "## 1. Leaks" in md_path.read_text()
    assert "1. Leaks and duplicates per split" in html


@pytest.mark.slow
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
@pytest.mark.slow
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


# --- 2. export: refuse a used folder, or replace exactly what hubsurvey wrote ------------------------------


@pytest.mark.slow
def test_export_refuses_a_non_empty_folder(planted_db, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    r = runner.invoke(app, ["export", "--out", str(out), "--db", str(planted_db)])
    assert r.exit_code == 2, r.output
    assert len(r.stderr.strip().splitlines()) == 1 and "--overwrite" in r.stderr
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt"]


@pytest.mark.slow
def test_export_error_is_a_hubsurvey_error_with_exit_2(planted_db, tmp_path):
    from hubsurvey.analysis.export import export_results
    from hubsurvey.core.errors import ExitCode, HubsurveyError

    (tmp_path / "x").write_text("x")
    with Store(planted_db, read_only=True) as store, pytest.raises(HubsurveyError) as info:
        export_results(store, tmp_path)
    assert info.value.exit_code == ExitCode.BAD_INPUT


@pytest.mark.slow
def test_overwrite_removes_the_files_hubsurvey_wrote_and_only_them(planted_db, tmp_path):
    from hubsurvey.analysis.export import MANIFEST_PATH

    out = tmp_path / "out"
    r = runner.invoke(app, ["export", "--out", str(out), "--db", str(planted_db), "--lle-compat"])
    assert r.exit_code == 0, r.output
    manifest = json.loads((out / MANIFEST_PATH).read_text())
    assert manifest["files"] == ["data/train-00000-of-00001.parquet", "lle.csv", "results.csv"]
    # a stray shard hubsurvey wrote earlier (listed in the manifest) and a file of the user's
    (out / "data" / "train-00001-of-00002.parquet").write_bytes(b"old shard")
    manifest["files"].append("data/train-00001-of-00002.parquet")
    manifest["files"].append("../outside.txt")  # a hostile manifest cannot reach outside the folder
    (out / MANIFEST_PATH).write_text(json.dumps(manifest))
    (tmp_path / "outside.txt").write_text("keep")
    (out / "notes.txt").write_text("mine")

    r = runner.invoke(app, ["export", "--out", str(out), "--db", str(planted_db)])  # refused: not empty
    assert r.exit_code == 2
    r = runner.invoke(app, ["export", "--out", str(out), "--db", str(planted_db), "--overwrite"])
    assert r.exit_code == 0, r.output
    files = sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file())
    assert files == [MANIFEST_PATH, "data/train-00000-of-00001.parquet", "notes.txt", "results.csv"]
    assert not (out / "lle.csv").exists()  # an old lle.csv does not survive an export without it
    assert (tmp_path / "outside.txt").read_text() == "keep"
    assert json.loads((out / MANIFEST_PATH).read_text())["files"] == ["data/train-00000-of-00001.parquet", "results.csv"]
    # the folder loads as one dataset again: one shard, the current rows
    assert pq.read_table(out / "data").num_rows == 4


@pytest.mark.slow
def test_overwrite_of_a_folder_from_before_manifests(planted_db, tmp_path):
    from hubsurvey.analysis.export import export_results

    (tmp_path / "lle.csv").write_text("old")
    (tmp_path / "keep.md").write_text("mine")
    with Store(planted_db, read_only=True) as store:
        export_results(store, tmp_path, overwrite=True)
    assert not (tmp_path / "lle.csv").exists() and (tmp_path / "keep.md").exists()


# --- 5. CSV formula injection ------------------------------------------------------------------------------


HOSTILE = ["=HYPERLINK(\"http://x\")", "+1+1", "-2+3", "@SUM(A1)", "\tTAB", "\rCR"]


@pytest.mark.slow
def test_csv_cells_from_the_hub_cannot_be_formulas(tmp_path):
    from hubsurvey.analysis.export import csv_cell, export_results

    assert [csv_cell(v) for v in HOSTILE] == ["'" + v for v in HOSTILE]
    assert csv_cell(-1) == "-1" and csv_cell(-2.5) == "-2.5" and csv_cell("plain") == "plain"

    db = tmp_path / "results.duckdb"
    for i, dataset_id in enumerate(("=cmd/data", "acme/-owner")):
        audit_folder(write_folder(tmp_path / f"d{i}", f"acme/x{i}", DATASETS["acme/beta"]), db, dataset_id=dataset_id)
    with Store(db, read_only=True) as store:
        export_results(store, tmp_path / "out", lle_compat=True)
        true_ids = sorted(r[0] for r in store.con.execute("SELECT dataset_id FROM current_measurements").fetchall())
    rows = list(csv.DictReader(io.StringIO((tmp_path / "out" / "results.csv").read_text())))
    assert sorted(r["dataset_id"] for r in rows) == ["'=cmd/data", "acme/-owner"]
    assert sorted(r["dataset_name"] for r in rows) == ["'-owner", "data"]
    assert all(r["rows_test"] == "4" for r in rows)
    # Parquet (and the DB) keep the true values
    table = pq.read_table(tmp_path / "out" / "data" / "train-00000-of-00001.parquet")
    assert sorted(table.column("dataset_id").to_pylist()) == true_ids == ["=cmd/data", "acme/-owner"]
    assert sorted(table.column("dataset_name").to_pylist()) == ["-owner", "data"]
    lle = (tmp_path / "out" / "lle.csv").read_text().splitlines()[1:]
    assert sorted(line.split(";")[0] for line in lle) == ["'-owner", "data"]


# --- 7. can I trust this dataset? --------------------------------------------------------------------------


def _test_rows(n: int, dup: int = 0) -> list[tuple]:
    return [(f"q{i}", 0) for i in range(n - dup)] + [("q0", 0)] * dup


VERDICT_CASES = {
    # dataset id: (splits, expected verdict, worst text test_biased (LLE), worst normalized contaminated_test_pct)
    # The verdict is judged on the near-duplicate figure (every case is measured by near-2026), which equals
    # the normalized one here: texts not identical after normalization are shorter than 5 characters, one
    # shingle each, so their Jaccard is 0. The exact and LLE fallback rules are tested in
    # test_analysis_near.py and test_analysis_exact.py.
    "v/clean": ({"train": [("a", 0)], "test": _test_rows(10)}, "clean", 0.0, 0.0),
    # a validation leak is a contaminated test row (1 of 10); LLE's test_biased leaves it out: it was
    # 'minor' under the LLE rule
    "v/val-leak-only": ({"train": [("a", 0)], "validation": [("q1", 0)], "test": _test_rows(10)}, "unreliable", 0.0, 10.0),
    # only the normalized key matches train's "Q0 " to test's "q0": 1 of 200; 'clean' under the LLE rule
    "v/case-only": ({"train": [("Q0 ", 0)], "test": _test_rows(200)}, "minor", 0.0, 0.5),
    "v/half": ({"train": [("a", 0)], "test": _test_rows(200, dup=1)}, "minor", 0.5, 0.5),
    "v/one": ({"train": [("a", 0)], "test": _test_rows(100, dup=1)}, "caution", 1.0, 1.0),
    "v/almost-five": ({"train": [("q1", 0)], "test": _test_rows(1000, dup=48)}, "caution", 4.9, 4.9),
    "v/five": ({"train": [("a", 0)], "test": _test_rows(20, dup=1)}, "unreliable", 5.0, 5.0),
}


@pytest.fixture(scope="module")
def verdict_db(tmp_path_factory):
    root = tmp_path_factory.mktemp("verdicts")
    db = root / "results.duckdb"
    for i, (dataset_id, (splits, *_)) in enumerate(VERDICT_CASES.items()):
        audit_folder(write_folder(root / f"d{i}", dataset_id, splits), db, dataset_id=dataset_id)
    return db


@pytest.mark.slow
def test_verdict_view_applies_the_stated_thresholds(verdict_db):
    from hubsurvey.analysis.findings import create_views

    with Store(verdict_db, read_only=True) as store:
        create_views(store)
        rows = store.records("SELECT dataset_id, verdict, verdict_basis, worst_text_test_biased,"
                             " worst_normalized_contaminated_test_pct FROM findings_dataset_verdict")
        rules = store.records("SELECT basis, verdict, at_least_pct, below_pct FROM findings_verdict_rules")
    got = {r["dataset_id"]: (r["verdict"], r["worst_text_test_biased"], r["worst_normalized_contaminated_test_pct"])
           for r in rows}
    assert got == {k: tuple(v[1:]) for k, v in VERDICT_CASES.items()}
    assert {r["verdict_basis"] for r in rows} == {"near-2026"}
    assert rules == [
        {"basis": basis, "verdict": "clean", "at_least_pct": None, "below_pct": None}
        if verdict == "clean" else {"basis": basis, "verdict": verdict, "at_least_pct": low, "below_pct": high}
        for basis in ("near-2026", "exact-2026", "lle-2024")
        for verdict, low, high in (("clean", None, None), ("minor", None, 1.0), ("caution", 1.0, 5.0),
                                   ("unreliable", 5.0, None))
    ]


@pytest.mark.slow
def test_report_has_a_verdict_for_every_dataset_with_the_rule_and_no_link_it_does_not_write(verdict_db, planted_db, tmp_path):
    with Store(verdict_db, read_only=True) as store:
        md_path, html_path = render_report(store, tmp_path / "v")
    md, html = md_path.read_text(), html_path.read_text()
    section = md.split("## 7. Can I trust this dataset?")[1].split("\n## ")[0]
    for dataset_id, (_, verdict, *_) in VERDICT_CASES.items():
        assert re.search(rf"^\| {re.escape(dataset_id)} \| {verdict} \| near-2026 \|", section, re.MULTILINE), dataset_id
    exact_rules, fallback_rules = section.split("falls back to the LLE rule")
    assert "- **minor**: not clean, worst normalized contaminated_test_pct below 1%" in exact_rules
    assert "- **caution**: not clean, worst normalized contaminated_test_pct ≥ 1% and below 5%" in exact_rules
    assert "- **unreliable**: not clean, worst normalized contaminated_test_pct ≥ 5%" in exact_rules
    assert "- **clean**: 0 contaminated test rows (normalized profile" in exact_rules
    assert "- **minor**: not clean, worst text test_biased below 1%" in fallback_rules
    assert "- **caution**: not clean, worst text test_biased ≥ 1% and below 5%" in fallback_rules
    assert "- **unreliable**: not clean, worst text test_biased ≥ 5%" in fallback_rules
    assert "- **clean**: 0 text leaks from train or validation to test and 0 text duplicates in test" in fallback_rules
    assert "| unreliable | near-2026 | 2 | 7 | 28.57% |" in section  # the verdict counts
    assert "`results.csv`, which `hubsurvey export` and `hubsurvey publish`" in section and "Denominator" in section
    assert "v/almost-five" in html
    # every local link of report.html names an anchor of the report itself: it links no file it does not write
    links = re.findall(r'href="([^"]*)"', html)
    ids = set(re.findall(r' id="([^"]*)"', html))
    assert links and all(link.startswith(("http://", "https://")) or link[1:] in ids for link in links), links
    # the verdicts near the top: at a glance, before the first numbered section, each naming its config
    from hubsurvey.analysis.verdicts import dataset_verdicts

    assert md.index("## At a glance: a verdict per dataset") < md.index("## 1. ")
    glance = md.split("## At a glance: a verdict per dataset")[1].split("\n## ")[0]
    with Store(verdict_db, read_only=True) as store:
        judged = dataset_verdicts(store.records("SELECT * FROM current_measurements"))
    for dataset_id, j in judged.items():
        config = j.decided_by.config if j.verdict != "clean" else "every config clean"
        assert re.search(rf"^\| {re.escape(dataset_id)} \| {j.verdict} \| {re.escape(config)} \| {j.decided_by.figure} \|",
                         glance, re.MULTILINE), dataset_id

    with Store(planted_db, read_only=True) as store:
        md = render_report(store, tmp_path / "p")[0].read_text()
    # dataset | verdict | basis | worst near | in config | near-contaminated rows | worst normalized | worst raw |
    # in config | contaminated normalized | raw | worst text test_biased | in config | configs | near | exact |
    # test rows | text leaks train, validation | duplicates
    # (near = normalized: the planted texts are 2 characters, one shingle each, Jaccard 0 unless identical)
    # gamma: w0 in train, w1 w2 in validation, the second w4 a repeat: 4 of 6 test rows (LLE: 2 of 6)
    assert ("| acme/gamma | unreliable | near-2026 | 66.667% | default | 4 | 66.667% | 66.667% | default | 4 | 4 "
            "| 33.333% | default | 1 | 1 | 1 | 6 | 1 | 2 | 1 |") in md
    assert ("| acme/beta | unreliable | near-2026 | 25.0% | default | 1 | 25.0% | 25.0% | default | 1 | 1 | 25.0% "
            "| default | 1 | 1 | 1 | 4 | 0 | NR | 1 |") in md
    # alpha: t0 t1 in train, t2 in validation: 3 of 10 (LLE's test_biased leaves the validation leak out)
    assert ("| acme/alpha | unreliable | near-2026 | 30.0% | default | 3 | 30.0% | 30.0% | default | 3 | 3 | 20.0% "
            "| default | 1 | 1 | 1 | 10 | 2 | 1 | 0 |") in md
    assert ("| acme/delta | clean | near-2026 | 0.0% | default | 0 | 0.0% | 0.0% | default | 0 | 0 | 0.0% | default "
            "| 1 | 1 | 1 | 2 | 0 | 0 | 0 |") in md


def _figure_of(monkeypatch, draw, *args):
    """The matplotlib figure a chart function draws (instead of its PNG)."""
    pytest.importorskip("matplotlib")
    from hubsurvey.analysis import charts

    monkeypatch.setattr(charts, "_png", lambda fig: fig)
    return draw(*args)


@pytest.mark.slow
def test_bias_chart_draws_thresholds_at_their_values(planted_db, monkeypatch):
    from hubsurvey.analysis import charts
    from hubsurvey.analysis.findings import findings

    with Store(planted_db, read_only=True) as store:
        test_bias = findings(store)["test_bias"]
    fig = _figure_of(monkeypatch, charts.bias_chart, test_bias)
    ax = fig.axes[0]
    assert ax.get_xscale() == "log"
    thresholds = [r["threshold_pct"] for r in test_bias]
    drawn = [list(line.get_xdata()) for line in ax.get_lines()]
    assert drawn and all(xs == thresholds for xs in drawn)  # at 0.1 … 90, not at 0, 1, 2 …


@pytest.mark.slow
def test_leak_panel_has_no_test_bar(planted_db, monkeypatch):
    from hubsurvey.analysis import charts
    from hubsurvey.analysis.findings import findings

    with Store(planted_db, read_only=True) as store:
        splits = findings(store)["splits"]
    fig = _figure_of(monkeypatch, charts.splits_chart, splits)
    leak, dup = fig.axes
    assert [t.get_text() for t in leak.get_xticklabels()] == ["train", "validation"]
    assert [t.get_text() for t in dup.get_xticklabels()] == ["train", "validation", "test"]


# --- 8. a report written by a run shows the run's final state ---------------------------------------------


@pytest.mark.slow
def test_report_written_at_the_end_of_a_run_shows_its_final_state(tmp_path):
    from datetime import timedelta

    db = build_planted_db(tmp_path)
    started = datetime.now(UTC) + timedelta(days=1)  # newer than the planted DB's own (real) run
    with Store(db) as store:  # the run writing the report is still 'running' in the DB
        insert(store.con, "runs", {"run_id": "run-9", "command": "run", "args": {}, "started_at": started,
                                   "status": "running", "tool_version": "0.1.0"})
    with Store(db, read_only=True) as store:
        md = render_report(store, tmp_path / "a")[0].read_text()
        assert "(running)" in md  # what the DB says
        final = {"run_id": "run-9", "status": "done", "finished_at": started + timedelta(hours=2)}
        md_path, html_path = render_report(store, tmp_path / "b", final_run=final)
        other = render_report(store, tmp_path / "c", final_run={**final, "run_id": "run-other"})[0].read_text()
    md, html = md_path.read_text(), html_path.read_text()
    assert "(running)" not in md and "| latest run | run (done)" in md and f"finished {started + timedelta(hours=2):%Y-%m-%d %H:%M} UTC" in md
    assert "(done)" in html and "(running)" not in html
    assert "(running)" in other  # another run's state is never applied
