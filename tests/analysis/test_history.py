"""The history view and analysis.history on small planted folders measured by the real pipeline:
each row's verdict, a dataset's verdict (equal to the report's findings_dataset_verdict on every
basis and threshold), "since the last run" across two recorded runs, and the command's one lines.
The whole two-night survey through the stand-in is tests/analysis/test_history_nights.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import test_analysis_exact
import test_outputs
from test_analysis_fixtures import write_folder
from test_outputs import VERDICT_CASES
from typer.testing import CliRunner

from hubsurvey.analysis.findings import findings
from hubsurvey.analysis.history import dataset_verdicts, history, since_last_run
from hubsurvey.analysis.report import render_report
from hubsurvey.cli import app
from hubsurvey.core.errors import BadInputError
from hubsurvey.core.history import VERDICT_CAUTION_BELOW, VERDICT_MINOR_BELOW, grade
from hubsurvey.core.runs import Runs
from hubsurvey.core.store import Store
from hubsurvey.survey.audit import audit

exact_db, verdict_db = test_analysis_exact.exact_db, test_outputs.verdict_db  # their modules' fixtures

# The fixtures audit small folders (a few seconds): the fast tier leaves the tests using them out.


def _current_verdicts(db: Path) -> tuple[dict, dict]:
    with Store(db, read_only=True) as store:
        rows = store.records("SELECT * FROM history WHERE is_current")
        report = {r["dataset_id"]: (r["verdict"], r["verdict_basis"]) for r in findings(store)["dataset_verdict"]}
    return {d: (v["verdict"], v["verdict_basis"]) for d, v in dataset_verdicts(rows).items()}, report


@pytest.mark.slow
def test_a_dataset_verdict_equals_the_report_at_every_threshold(verdict_db):
    mine, report = _current_verdicts(verdict_db)
    assert mine == report
    assert {d: v for d, (v, _) in mine.items()} == {d: case[1] for d, case in VERDICT_CASES.items()}


@pytest.mark.slow
def test_a_dataset_verdict_equals_the_report_on_the_exact_and_lle_bases(exact_db):
    mine, report = _current_verdicts(exact_db)
    assert mine == report
    assert {basis for _, basis in mine.values()} == {"near-2026", "exact-2026", "lle-2024"}
    assert mine["x/mixed"] == ("unreliable", "lle-2024")  # a config measured before exact: LLE for the dataset


@pytest.mark.slow
def test_each_row_is_graded_by_its_own_basis(exact_db):
    with Store(exact_db, read_only=True) as store:
        rows = store.records("SELECT * FROM history ORDER BY dataset_id, config, label_column NULLS FIRST")
        plain = store.records("SELECT dataset_id, config, methods, near, round(text_test_biased, 3) AS tb,"
                              " round(normalized_contaminated_test_pct, 3) AS norm FROM measurements"
                              " ORDER BY dataset_id, config, label_column NULLS FIRST")
    assert len(rows) == len(plain)
    for row, stored in zip(rows, plain):
        # the basis: near if measured by it, else exact, else LLE; the verdict from that basis' figure
        methods = json.loads(stored["methods"]) if stored["methods"] else {}
        near = json.loads(stored["near"]) if stored["near"] else {}
        near_measured = "near-2026" in methods and near.get("status") not in (None, "not measured") \
            and not str(near.get("status")).startswith("NR")
        expected_basis = "near-2026" if near_measured else "exact-2026" if "exact-2026" in methods else "lle-2024"
        assert row["verdict_basis"] == expected_basis, row
        measure = {"near-2026": row["near_contaminated_test_pct"], "exact-2026": stored["norm"], "lle-2024": stored["tb"]}
        clean = {"near-2026": not row["test_rows_near_contaminated"],
                 "exact-2026": not row["normalized_test_rows_contaminated"],
                 "lle-2024": not (row["text_leaks_train_wrt_test"] or row["text_leaks_validation_wrt_test"]
                                  or row["text_duplication_test"])}
        assert row["verdict"] == grade(clean[expected_basis], measure[expected_basis]), row
        if expected_basis == "lle-2024":  # exact figures of a row the exact method did not measure: NULL
            assert row["normalized_contaminated_test_pct"] is None
    assert (VERDICT_MINOR_BELOW, VERDICT_CAUTION_BELOW) == (1.0, 5.0)
    assert [grade(False, v) for v in (0.0, 0.999, 1.0, 4.999, 5.0)] == ["minor", "minor", "caution", "caution", "unreliable"]


# --- two recorded runs --------------------------------------------------------------------------------

def _night(store: Store, datasets: list[tuple[Path, str]]) -> str:
    """One survey "run" that stores each (folder, dataset id) as measured from the Hub (the rows
    audit measures, written as the survey's writer writes them); returns its run id."""
    with Runs(store).recording("run", {}) as recording:
        for folder, dataset_id in datasets:
            measured = audit(str(folder), db=None, dataset_id=dataset_id)
            assert not measured.errors
            for result in measured.results:
                rows = [{**row, "source": "hub", "run_id": recording.run_id} for row in result.rows]
                store.replace_measurements(dataset_id, result.revision_sha, result.config, rows, run_id=recording.run_id)
    return recording.run_id


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory):
    root = tmp_path_factory.mktemp("two-runs")
    db = root / "r.duckdb"
    leaky = {"train": [("a", 0), ("b", 0)], "test": [("a", 0), ("c", 0), ("d", 0), ("e", 0)]}  # 25 %
    fixed = {"train": [("a2", 0), ("b", 0)], "test": [("a", 0), ("c", 0), ("d", 0), ("e", 0)]}  # clean
    steady = {"train": [("x", 0)], "test": [("y", 0), ("z", 0)]}
    with Store(db) as store:
        before_any = since_last_run(store)
        first = _night(store, [(write_folder(root / "1", "o/fixed", leaky), "o/fixed")])
        steady_run = _night(store, [(write_folder(root / "1", "o/steady", steady), "o/steady")])
        after_one = since_last_run(store)
        second = _night(store, [(write_folder(root / "2", "o/fixed", fixed), "o/fixed"),
                                (write_folder(root / "2", "o/new", leaky), "o/new")])
    return {"db": db, "root": root, "first": first, "steady": steady_run, "second": second,
            "before_any": before_any, "after_one": after_one}


@pytest.mark.slow
def test_since_the_last_run_compares_with_the_previous_completed_run(two_runs):
    assert two_runs["before_any"]["latest_run"] is None and two_runs["before_any"]["previous_run"] is None
    # after the second run, the previous completed run is the first: o/steady is new since
    after_one = two_runs["after_one"]
    assert after_one["previous_run"]["run_id"] == two_runs["first"]
    assert [d["dataset_id"] for d in after_one["new_datasets"]] == ["o/steady"] and after_one["verdict_changes"] == []
    with Store(two_runs["db"], read_only=True) as store:
        since = since_last_run(store)
        rows = history(store, "o/fixed")
    assert since["previous_run"]["run_id"] == two_runs["steady"]
    assert since["latest_run"]["run_id"] == two_runs["second"]
    assert [(d["dataset_id"], d["verdict"]) for d in since["new_datasets"]] == [("o/new", "unreliable")]
    (change,) = since["verdict_changes"]
    assert (change["dataset_id"], change["before"], change["after"], change["change"]) == ("o/fixed", "unreliable", "clean", "better")
    assert (change["measure_before"], change["measure_after"]) == (25.0, 0.0)
    assert change["revisions_before"] == [rows[0]["revision_sha"]] and change["revisions_after"] == [rows[1]["revision_sha"]]
    assert [r["verdict"] for r in rows] == ["unreliable", "clean"]
    assert [r["is_current"] for r in rows] == [False, True]
    assert [r["run_id"] for r in rows] == [two_runs["first"], two_runs["second"]]


@pytest.mark.slow
def test_a_run_that_measured_nothing_leaves_nothing_to_report(two_runs, tmp_path):
    db = tmp_path / "r.duckdb"
    db.write_bytes(two_runs["db"].read_bytes())
    with Store(db) as store:
        with Runs(store).recording("run", {}):
            pass
        since = since_last_run(store)
    assert since["previous_run"]["run_id"] == two_runs["second"]
    assert since["new_datasets"] == since["verdict_changes"] == since["new_contamination"] == since["new_cross_leaks"] == []


@pytest.mark.slow
def test_the_report_section_without_and_with_a_previous_run(two_runs, tmp_path):
    with Store(two_runs["db"], read_only=True) as store:
        md = render_report(store, tmp_path)[0].read_text()
    section = md.split("## Since the last run\n")[1].split("\n## ")[0]
    assert f"run {two_runs['steady']} ended" in section
    assert "**1** dataset(s) new to the survey" in section and "**0** verdict(s) worse" in section
    assert "| o/fixed | unreliable | clean | better | 25.0% | 0.0% | near-2026 |" in section
    assert "| o/new | unreliable | near-2026 | 1 |" in section
    db = tmp_path / "audits.duckdb"
    assert not audit(str(write_folder(tmp_path / "a", "o/a", {"train": [("a", 0)], "test": [("b", 0)]})), db=db,
                     dataset_id="o/a").errors
    with Store(db, read_only=True) as store:
        md = render_report(store, tmp_path / "audits")[0].read_text()
    assert "No survey run is recorded in this DB (one-off audits only)" in md


@pytest.mark.slow
def test_history_of_an_unknown_dataset_or_config_is_one_line(two_runs):
    with Store(two_runs["db"], read_only=True) as store:
        with pytest.raises(BadInputError, match=r"^nobody/x: not measured in this DB"):
            history(store, "nobody/x")
        with pytest.raises(BadInputError, match=r"^o/fixed: no config 'other' was measured \(configs: default\)$"):
            history(store, "o/fixed", config="other")
        assert [r["config"] for r in history(store, "fixed", config="default")] == ["default", "default"]


@pytest.mark.slow
def test_a_db_written_before_the_history_view_is_read_without_a_write(two_runs, tmp_path):
    db = tmp_path / "old.duckdb"
    db.write_bytes(two_runs["db"].read_bytes())
    with Store(db) as store:
        store.con.execute("DROP VIEW history")
    before = db.read_bytes()
    result = CliRunner().invoke(app, ["history", "o/fixed", "--format", "json", "--db", str(db)])
    assert result.exit_code == 0, result.output
    assert '"verdict": "clean"' in result.stdout and db.read_bytes() == before


@pytest.mark.slow
def test_control_characters_in_names_are_shown_as_text(tmp_path):
    db = tmp_path / "r.duckdb"
    name = "o/bad\x1b[31mname"
    outcome = audit(str(write_folder(tmp_path, "o/plain", {"train": [("a", 0)], "test": [("a", 0), ("b", 0)]})),
                    db=db, dataset_id=name)
    assert not outcome.errors, outcome.errors
    result = CliRunner().invoke(app, ["history", name, "--db", str(db)])
    assert result.exit_code == 0, result.output
    assert "\x1b" not in result.stdout and "o/bad\\x1b[31mname" in result.stdout


def test_the_command_refuses_a_missing_db_and_a_bad_format_in_one_line(tmp_path):
    runner = CliRunner()
    missing = runner.invoke(app, ["history", "o/x", "--db", str(tmp_path / "none.duckdb")])
    assert missing.exit_code == 3 and missing.stderr.count("\n") == 1 and "no such results DB" in missing.stderr
    assert not (tmp_path / "none.duckdb").exists()
    bad = runner.invoke(app, ["history", "o/x", "--format", "xml", "--db", str(tmp_path / "none.duckdb")])
    assert bad.exit_code == 2 and bad.stderr.strip() == "error: --format must be one of table, json, csv, not 'xml'"


@pytest.mark.slow
def test_the_view_grades_by_the_declared_thresholds():
    from hubsurvey.core.history import history_view_sql

    sql = history_view_sql()
    assert f"< {VERDICT_MINOR_BELOW!r} THEN 'minor'" in sql and f"< {VERDICT_CAUTION_BELOW!r} THEN 'caution'" in sql
    with Store(":memory:") as store:  # the view exists in a fresh DB, with the documented columns
        from hubsurvey.core.history import history_columns

        assert store.query("SELECT * FROM history")[0] == list(history_columns())
