"""Findings, the sql command and the export, on DBs built by auditing datasets with planted figures."""

from __future__ import annotations

import csv
import json
import math

import pyarrow.parquet as pq
import pytest
from leaks import secret_hits
from test_analysis_fixtures import PLANTED, SECRET, build_planted_db
from typer.testing import CliRunner

from hubsurvey.analysis.export import LLE_PUBLISHED_HEADER, columns, export_results
from hubsurvey.analysis.findings import FINDINGS, create_views, findings, load_sql, parse_sql
from hubsurvey.cli import app
from hubsurvey.core.figures import LLE_METHOD, figure_names
from hubsurvey.core.store import Store

FIGURE_COLUMNS = figure_names(LLE_METHOD)  # the hand-computed planted figures
from hubsurvey.survey.audit import audit

runner = CliRunner()


@pytest.fixture(scope="module")
def planted_db(tmp_path_factory):
    return build_planted_db(tmp_path_factory.mktemp("planted"))


@pytest.fixture(scope="module")
def found(planted_db):
    with Store(planted_db, read_only=True) as store:
        return findings(store, top_n=2)


@pytest.mark.slow
def test_planted_figures(planted_db):
    """The inputs really have the hand-computed figures (else every expectation below is moot)."""
    with Store(planted_db, read_only=True) as store:
        rows = store.records("SELECT * FROM current_measurements ORDER BY dataset_id")
        assert store.query("SELECT count(*) FROM measurements")[1][0][0] == 5  # alpha's old revision kept
    assert [r["dataset_id"] for r in rows] == sorted(PLANTED)
    for row in rows:
        for column in FIGURE_COLUMNS:
            expected = PLANTED[row["dataset_id"]][column]
            if expected is None:
                assert row[column] is None, (row["dataset_id"], column)
            else:
                assert row[column] == pytest.approx(expected), (row["dataset_id"], column)
    assert {r["dataset_id"]: r["label_column"] for r in rows}["acme/gamma"] is None


@pytest.mark.slow
def test_findings_has_every_view(found):
    assert set(found) == set(FINDINGS)
    _, views = load_sql()
    assert set(FINDINGS.values()) == set(views)


@pytest.mark.slow
def test_overview(found):
    assert found["overview"] == [{
        **found["overview"][0],
        "measurement_rows": 4, "datasets": 4, "configs": 4, "rows_with_label": 3,
        "rows_with_train": 4, "rows_with_validation": 3,
        "crawled_datasets": 6, "eligible_datasets": 3, "excluded_datasets": 3,
        "jobs": 6, "jobs_done": 3, "jobs_failed": 3,
        # every planted row is measured by every method (the exact findings: test_analysis_exact.py)
        "methods": "exact-2026 v1, groups-2026 v1, lle-2024 v1, near-2026 v1, rows-2026 v1, time-2026 v1", "rows_exact": 4, "datasets_exact": 4,
    }]


@pytest.mark.slow
def test_splits(found):
    # (split, key): (with_leak, leak_denominator, pct, with_duplicate, duplicate_denominator, pct)
    expected = {
        # leaks: alpha 2, gamma 1 (beta, delta 0); duplicates: alpha 1, gamma 2
        ("train", "text"): (2, 4, 50.0, 2, 4, 50.0),
        # gamma has no label: NR, out of the denominator
        ("train", "text_and_label"): (1, 3, 33.33, 1, 3, 33.33),
        # beta has no validation: NR
        ("validation", "text"): (2, 3, 66.67, 0, 3, 0.0),
        ("validation", "text_and_label"): (1, 2, 50.0, 0, 2, 0.0),
        # test shares a key with train or validation: alpha, gamma; beta's NR validation term is 0
        ("test", "text"): (2, 4, 50.0, 2, 4, 50.0),
        # beta's test duplicate u0 has two labels: not a text+label duplicate
        ("test", "text_and_label"): (1, 3, 33.33, 0, 3, 0.0),
    }
    got = {
        (r["split"], r["key"]): (r["with_leak"], r["leak_denominator"], r["pct_with_leak"],
                                 r["with_duplicate"], r["duplicate_denominator"], r["pct_with_duplicate"])
        for r in found["splits"]
    }
    assert got == expected
    assert [(r["split"], r["key"]) for r in found["splits"]] == list(expected)


@pytest.mark.slow
def test_test_bias_thresholds(found):
    thresholds = [r["threshold_pct"] for r in found["test_bias"]]
    assert thresholds == [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1, 1.5, 2, 2.5, 3, 4, 5,
                          10, 20, 30, 40, 50, 60, 70, 80, 90]
    # text: alpha 20.0, beta 25.0, gamma 33.333, delta 0.0 (of 4); text+label: alpha 10.0, beta 0, delta 0 (of 3)
    for r in found["test_bias"]:
        t = r["threshold_pct"]
        text = sum(v >= t for v in (20.0, 25.0, 33.333, 0.0))
        label = sum(v >= t for v in (10.0, 0.0, 0.0))
        assert (r["text_at_least"], r["text_denominator"]) == (text, 4), t
        assert (r["text_and_label_at_least"], r["text_and_label_denominator"]) == (label, 3), t
        assert r["text_pct"] == round(100 * text / 4, 2)
        assert r["text_and_label_pct"] == round(100 * label / 3, 2)
    by_t = {r["threshold_pct"]: r for r in found["test_bias"]}
    assert by_t[20]["text_at_least"] == 3  # >= is inclusive: alpha's 20.0 counts
    assert by_t[30]["text_at_least"] == 1 and by_t[40]["text_at_least"] == 0
    assert by_t[10]["text_and_label_at_least"] == 1 and by_t[10]["text_and_label_pct"] == 33.33


@pytest.mark.slow
def test_annotation(found):
    # alpha 1.0 > 0; beta 0.0; delta 0.0; gamma NR (no label) not in the denominator
    assert found["annotation"] == [{"with_difference": 1, "denominator": 3, "pct_with_difference": 33.33}]


@pytest.mark.slow
def test_top_test_biased(found):
    top = found["top_test_biased"]
    assert [(r["rank"], r["dataset_id"], r["text_test_biased"]) for r in top] == [
        (1, "acme/gamma", 33.333), (2, "acme/beta", 25.0)]
    assert all(r["rows_ranked"] == 4 for r in top)
    assert top[0]["text_and_label_test_biased"] is None and top[1]["text_and_label_test_biased"] == 0.0


@pytest.mark.slow
def test_by_task_category(found):
    got = {r["task_category"]: r for r in found["by_task_category"]}
    assert list(got) == ["text-classification", "token-classification", "unknown", "untagged"]
    tc = got["text-classification"]  # alpha + beta
    assert (tc["rows"], tc["datasets"]) == (2, 2)
    assert (tc["with_text_test_leak"], tc["text_test_leak_denominator"], tc["pct_with_text_test_leak"]) == (1, 2, 50.0)
    assert (tc["with_text_test_duplicate"], tc["text_test_duplicate_denominator"]) == (1, 2)
    assert tc["median_text_test_biased"] == 22.5
    tok = got["token-classification"]  # beta
    assert (tok["rows"], tok["with_text_test_leak"], tok["pct_with_text_test_duplicate"]) == (1, 0, 100.0)
    assert got["untagged"]["rows"] == 1 and got["untagged"]["median_text_test_biased"] == 33.333  # gamma
    assert got["unknown"]["rows"] == 1 and got["unknown"]["with_text_test_leak"] == 0  # delta: no crawl record


@pytest.mark.slow
def test_failures(found):
    assert [(r["kind"], r["reason"], r["count"], r["datasets"], r["denominator"], r["pct"]) for r in found["failures"]] == [
        ("failed job", "unreadable", 2, 2, 6, 33.33),
        ("failed job", "bad_input", 1, 1, 6, 16.67),
        ("excluded dataset", "gated", 2, 2, 6, 33.33),
        ("excluded dataset", "no_test_split", 1, 1, 6, 16.67),
    ]


@pytest.mark.slow
def test_findings_on_an_empty_store(tmp_path):
    with Store(tmp_path / "empty.duckdb") as store:
        found = findings(store)
    assert [(r["with_leak"], r["leak_denominator"], r["pct_with_leak"]) for r in found["splits"]] == [(0, 0, None)] * 6
    assert len(found["test_bias"]) == 25 and all(r["text_pct"] is None for r in found["test_bias"])
    assert found["annotation"] == [{"with_difference": 0, "denominator": 0, "pct_with_difference": None}]
    assert found["top_test_biased"] == [] and found["failures"] == [] and found["by_task_category"] == []


@pytest.mark.slow
def test_views_leave_the_db_file_unchanged(planted_db):
    with Store(planted_db, read_only=True) as store:
        names = create_views(store)
        assert "findings_splits" in names
    with Store(planted_db, read_only=True) as store:
        tables = {r[0] for r in store.query("SELECT table_name FROM information_schema.tables")[1]}
    assert not {n for n in tables if n.startswith("findings_")}


def test_parse_sql_refuses_two_statements_in_a_view():
    with pytest.raises(ValueError, match="exactly one SELECT"):
        parse_sql("-- view: findings_x\nSELECT 1; SELECT 2;\n")


# --- hubsurvey sql ------------------------------------------------------------------------------------


@pytest.mark.slow
def test_sql_table_csv_json(planted_db):
    q = "SELECT dataset_id, text_leaks_validation_wrt_test AS v FROM current_measurements ORDER BY dataset_id"
    table = runner.invoke(app, ["sql", q, "--db", str(planted_db)])
    assert table.exit_code == 0, table.output
    lines = table.stdout.splitlines()
    assert lines[0].split() == ["dataset_id", "v"] and set(lines[1]) <= {"-", " "}
    assert lines[3].split() == ["acme/beta", "NULL"] and lines[-1] == "(4 rows)"
    as_csv = runner.invoke(app, ["sql", q, "--db", str(planted_db), "--format", "csv"])
    assert list(csv.reader(as_csv.stdout.splitlines())) == [
        ["dataset_id", "v"], ["acme/alpha", "1"], ["acme/beta", ""], ["acme/delta", "0"], ["acme/gamma", "2"]]
    as_json = runner.invoke(app, ["sql", q, "--db", str(planted_db), "--format", "json"])
    assert json.loads(as_json.stdout) == [
        {"dataset_id": "acme/alpha", "v": 1}, {"dataset_id": "acme/beta", "v": None},
        {"dataset_id": "acme/delta", "v": 0}, {"dataset_id": "acme/gamma", "v": 2}]


@pytest.mark.slow
def test_sql_sees_findings_views_and_json_handles_timestamps(planted_db):
    r = runner.invoke(app, ["sql", "SELECT pct_with_leak FROM findings_splits WHERE split = 'validation' AND key = 'text'",
                            "--db", str(planted_db), "--format", "json"])
    assert r.exit_code == 0 and json.loads(r.stdout) == [{"pct_with_leak": 66.67}]
    r = runner.invoke(app, ["sql", "SELECT max(measured_at) AS t, list(dataset_id ORDER BY dataset_id) AS ids FROM current_measurements",
                            "--db", str(planted_db), "--format", "json"])
    out = json.loads(r.stdout)[0]
    assert out["t"].startswith("2026-01-02") and out["ids"][0] == "acme/alpha"


@pytest.mark.parametrize("query", ["SELECT * FROM no_such_table", "DELETE FROM measurements", "SELEC 1"])
@pytest.mark.slow
def test_sql_errors_are_one_line_exit_2(planted_db, query):
    r = runner.invoke(app, ["sql", query, "--db", str(planted_db)])
    assert r.exit_code == 2
    assert r.stdout == "" and len(r.stderr.strip().splitlines()) == 1 and r.stderr.startswith("error: ")
    with Store(planted_db, read_only=True) as store:  # read-only: nothing was deleted
        assert store.query("SELECT count(*) FROM measurements")[1][0][0] == 5


@pytest.mark.slow
def test_sql_bad_format_and_missing_db(planted_db, tmp_path):
    r = runner.invoke(app, ["sql", "SELECT 1", "--db", str(planted_db), "--format", "xml"])
    assert r.exit_code == 2 and "--format" in r.stderr
    r = runner.invoke(app, ["sql", "SELECT 1", "--db", str(tmp_path / "absent.duckdb")])
    assert r.exit_code == 3 and len(r.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "absent.duckdb").exists()


# --- export ---------------------------------------------------------------------------------------


@pytest.mark.slow
def test_export_parquet_and_csv(planted_db, tmp_path):
    r = runner.invoke(app, ["export", "--out", str(tmp_path / "out"), "--db", str(planted_db)])
    assert r.exit_code == 0, r.output
    table = pq.read_table(tmp_path / "out" / "data" / "train-00000-of-00001.parquet")
    assert table.column_names == list(columns())
    rows = {r["dataset_id"]: r for r in table.to_pylist()}
    assert set(rows) == set(PLANTED)
    for dataset_id, figures in PLANTED.items():
        for column, value in figures.items():
            if value is None:
                assert rows[dataset_id][column] is None, (dataset_id, column)  # NULL stays null
            else:
                assert rows[dataset_id][column] == pytest.approx(value)
    assert rows["acme/gamma"]["text_columns"] == ["text"] and rows["acme/gamma"]["label_column"] is None
    assert rows["acme/alpha"]["rows_test"] == 10  # the newest revision only
    assert all(len(r["revision_sha"]) >= 12 and r["tool_version"] and r["method"] == "lle-2024" for r in rows.values())

    with open(tmp_path / "out" / "results.csv", newline="") as fh:
        records = list(csv.DictReader(fh))
    assert list(records[0]) == list(columns()) and len(records) == 4
    by_id = {r["dataset_id"]: r for r in records}
    assert by_id["acme/beta"]["text_leaks_validation_wrt_test"] == "NR"
    assert by_id["acme/gamma"]["text_and_label_test_biased"] == "NR" and by_id["acme/gamma"]["label_column"] == "NR"
    assert by_id["acme/alpha"]["text_leaks_train_wrt_test"] == "2"
    assert math.isclose(float(by_id["acme/gamma"]["text_test_biased"]), 100 * 2 / 6)
    assert json.loads(by_id["acme/alpha"]["text_columns"]) == ["text"]
    assert by_id["acme/alpha"]["measured_at"] == "2026-01-02T03:04:05+00:00"
    assert not (tmp_path / "out" / "lle.csv").exists()


@pytest.mark.slow
def test_export_is_byte_identical_when_repeated(planted_db, tmp_path):
    with Store(planted_db, read_only=True) as store:
        first = export_results(store, tmp_path / "a", lle_compat=True)
        second = export_results(store, tmp_path / "b", lle_compat=True)
    assert [p.read_bytes() for p in first] == [p.read_bytes() for p in second]


@pytest.mark.slow
def test_lle_compat_of_planted(planted_db, tmp_path):
    with Store(planted_db, read_only=True) as store:
        export_results(store, tmp_path, lle_compat=True)
    lines = (tmp_path / "lle.csv").read_text().splitlines()
    assert lines[0].split(";") == list(LLE_PUBLISHED_HEADER) and "valididation" in lines[0]
    assert lines[1:] == [
        "alpha;2;1;1;0;0;20.0%;1;1;1;0;0;10.0%;1.0",
        "beta;0;NR;0;NR;1;25.0%;0;NR;0;NR;0;0.0%;0.0",
        "delta;0;0;0;0;0;0.0%;0;0;0;0;0;0.0%;0.0",
        "gamma;1;2;2;0;1;33.333%;NR;NR;NR;NR;NR;NR;NR",
    ]


@pytest.mark.slow
def test_lle_compat_reproduces_published_conll2003(shared_datasets, tmp_path):
    db = tmp_path / "conll.duckdb"
    outcome = audit(str(shared_datasets / "eriktks__conll2003"), db=db)
    assert not outcome.errors
    r = runner.invoke(app, ["export", "--out", str(tmp_path / "out"), "--db", str(db), "--lle-compat"])
    assert r.exit_code == 0, r.output
    text = (tmp_path / "out" / "lle.csv").read_text()
    lines = text.splitlines()
    assert lines[0] == (
        "dataset_name;text_leaks_train_wrt_test;text_leaks_valididation_wrt_test;text_duplication_train;"
        "text_duplication_valididation;text_duplication_test;text_test_biased;text_and_label_leaks_train_wrt_test;"
        "text_and_label_leaks_valididation_wrt_test;text_and_label_duplication_train;"
        "text_and_label_duplication_valididation;text_and_label_duplication_test;text_and_label_test_biased;"
        "difference_annotation_in_train_and_valididation_splits"
    )
    assert "conll2003(ner_tags);78;25;1350;180;269;10.049%;73;23;1348;179;266;9.818%;7.0" in lines
    assert len(lines) == 4  # pos_tags, chunk_tags, ner_tags


@pytest.mark.slow
def test_secret_in_run_args_is_not_in_exports(planted_db, tmp_path):
    with Store(planted_db, read_only=True) as store:
        paths = export_results(store, tmp_path, lle_compat=True)
    assert not secret_hits(SECRET, db=planted_db, paths=paths)  # Parquet read, the DB scanned with SQL


# --- the report: one list of sections ------------------------------------------------------------------


def test_findings_sql_spells_no_method_name():
    """The method names come from the registry (the macros findings.py defines), never retyped in SQL."""
    from hubsurvey.analysis.findings import METHOD_MACROS, SQL_FILE, _strip_comments
    from hubsurvey.core.figures import registered_methods

    sql = _strip_comments(SQL_FILE.read_text(encoding="utf-8"))
    assert set(METHOD_MACROS.values()) <= set(registered_methods())
    for method in registered_methods():
        assert method not in sql, method
    for macro in METHOD_MACROS:
        assert f"{macro}()" in sql, macro  # every macro is used


@pytest.mark.slow
def test_a_new_report_section_is_one_view_and_one_entry(tmp_path, monkeypatch):
    """A findings view added to findings.sql and one Section added to the list: REPORT.md and report.html
    both show it, numbered in its place, with its prose and its table; the sections after it renumber."""
    from hubsurvey.analysis import charts, report
    from hubsurvey.analysis import findings as findings_module
    from hubsurvey.analysis.render import Table

    sql = tmp_path / "findings.sql"
    sql.write_text(findings_module.SQL_FILE.read_text(encoding="utf-8") + (
        "\n\n-- view: findings_label_columns\n-- distinct label columns among the current rows\n"
        "SELECT count(DISTINCT label_column) AS label_columns FROM current_measurements;\n"), encoding="utf-8")
    monkeypatch.setattr(findings_module, "SQL_FILE", sql)
    section = report.Section(
        "label_columns", "Label columns <seen>", views=("label_columns",),
        prose="{{ f.label_columns[0].label_columns }} label columns *seen*.\n\n{{ table(tables.count) }}\n",
        tables={"count": lambda c: Table(("label columns", "of"), [(str(c["f"]["label_columns"][0]["label_columns"]),
                                                                  str(c["o"]["measurement_rows"]))], (True, True))})
    monkeypatch.setattr(charts, "available", lambda: False)  # the charts are not what this test is about
    at = next(i for i, s in enumerate(report.SECTIONS) if s.key == "contamination")
    monkeypatch.setattr(report, "SECTIONS", (*report.SECTIONS[:at], section, *report.SECTIONS[at:]))

    with Store(tmp_path / "empty.duckdb") as store:
        md_path, html_path = report.render_report(store, tmp_path / "out")
    md, html = md_path.read_text(), html_path.read_text()
    assert "\n## 11. Label columns &lt;seen&gt;\n\n0 label columns *seen*.\n\n| label columns | of |\n|---:|---:|\n| 0 | 0 |\n" in md
    assert "\n## 12. Contamination with benchmarks\n" in md and "\n## 10. Leaks across datasets\n" in md
    assert '<section id="label_columns">\n<h2>11. Label columns &lt;seen&gt;</h2>' in html
    assert "<p>0 label columns <em>seen</em>.</p>" in html and "<h2>12. Contamination with benchmarks</h2>" in html
    assert '<td style="text-align:right">0</td>' in html


def test_every_section_names_views_that_exist_and_has_prose():
    from hubsurvey.analysis import report
    from hubsurvey.analysis.render import environment

    blocks = environment().get_template(report.SECTIONS_TEMPLATE).blocks
    assert len({s.key for s in report.SECTIONS}) == len(report.SECTIONS)
    for section in report.SECTIONS:
        assert set(section.views) <= set(FINDINGS), section.key
        assert (section.key in blocks) != (section.prose is not None), section.key
    assert set(blocks) == {report.INTRO} | {s.key for s in report.SECTIONS if s.prose is None}  # no stale prose
    assert report.section_numbers()["near"] == 9 and report.section_numbers()["exact"] == 8


def test_markdown_html_passes_no_markup_through():
    """report.html's prose is the report's Markdown converted: raw HTML and script links stay text."""
    from hubsurvey.analysis.render import markdown_html, md

    html = markdown_html("<script>alert(1)</script> <img src=x onerror=alert(2)> [a](javascript:alert(3))\n\n"
                         f"| {md('<b>|x')} |\n|---|\n| {md('[y](javascript:alert(4))')} |\n")
    assert "<script" not in html and "<img" not in html and "<b>" not in html
    assert 'href="javascript' not in html and "<a " not in html  # a script link is not made a link
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html and "<th>&lt;b&gt;|x</th>" in html
    assert "<td>[y](javascript:alert(4))</td>" in html  # an escaped value is never a link


def test_a_connection_keeps_its_views_until_findings_sql_changes(tmp_path, monkeypatch):
    """Every output asks for the views: a connection that has them from the same findings.sql keeps
    them (they are not bound again); a changed findings.sql creates them again on that connection."""
    from hubsurvey.analysis import findings as findings_module

    with Store(tmp_path / "r.duckdb") as store:
        names = create_views(store)
        store.con.execute("DROP VIEW findings_overview")  # a view created again would be back
        assert create_views(store) == names
        views = {r[0] for r in store.con.execute("SELECT view_name FROM duckdb_views() WHERE temporary").fetchall()}
        assert "findings_overview" not in views and set(names) - {"findings_overview"} <= views

        sql = tmp_path / "findings.sql"
        sql.write_text(findings_module.SQL_FILE.read_text(encoding="utf-8")
                       + "\n\n-- view: findings_seven\nSELECT 7 AS seven;\n", encoding="utf-8")
        monkeypatch.setattr(findings_module, "SQL_FILE", sql)
        assert create_views(store) == [*names, "findings_seven"]
        assert store.con.execute("SELECT count(*) FROM findings_overview").fetchone() == (1,)
        assert store.con.execute("SELECT seven FROM findings_seven").fetchone() == (7,)

    with Store(tmp_path / "r.duckdb", read_only=True) as store:  # a new connection has none until asked
        assert create_views(store) == [*names, "findings_seven"]
        assert store.con.execute("SELECT seven FROM findings_seven").fetchone() == (7,)
