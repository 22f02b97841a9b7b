"""The ``hubsurvey`` command as a user meets it: help, version, validation, errors, sql safety, demo."""

from __future__ import annotations

import io
import json
import logging
import os
import re
import subprocess
import sys
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from hubsurvey import __version__
from hubsurvey.cli import COMMANDS, app

REPO = Path(__file__).resolve().parents[1]
runner = CliRunner()
FEATURES = {"text": {"dtype": "string", "_type": "Value"}, "label": {"names": ["a", "b"], "_type": "ClassLabel"}}


def _split(folder: Path, texts: list[str]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    table = pa.table({"text": pa.array(texts, pa.string()), "label": pa.array([0] * len(texts), pa.int64())})
    table = table.replace_schema_metadata({b"huggingface": json.dumps({"info": {"features": FEATURES}}).encode()})
    pq.write_table(table, folder / "0000.parquet")


@pytest.fixture
def good(tmp_path) -> Path:
    root = tmp_path / "org__good"
    _split(root / "default" / "train", ["a", "b", "b"])
    _split(root / "default" / "test", ["a", "c"])
    return root


@pytest.fixture
def results_db(tmp_path, good) -> Path:
    db = tmp_path / "r.duckdb"
    assert runner.invoke(app, ["audit", str(good), "--db", str(db)]).exit_code == 0
    return db


def one_error_line(result, code: int) -> str:
    assert result.exit_code == code, (result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


# --- help and version -------------------------------------------------------------------------------

def test_short_help_and_version():
    short, long = runner.invoke(app, ["-h"]), runner.invoke(app, ["--help"])
    assert short.exit_code == 0 and short.stdout == long.stdout
    for command in ("audit", "crawl", "run", "status", "demo", "sql", "report", "export", "publish"):
        assert re.search(rf"^\s+{command}\s", short.stdout, re.M), command
    assert "Exit codes:" in short.stdout and "5  internal error" in short.stdout
    version = runner.invoke(app, ["--version"])
    assert version.exit_code == 0 and version.stdout.strip() == f"hubsurvey {__version__}"


@pytest.mark.parametrize("command", [c.__name__ for c in COMMANDS])
def test_every_command_has_help_without_bool_tags(command):
    result = runner.invoke(app, [command, "-h"])
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("Usage: ") and f" {command} [OPTIONS]" in result.stdout.splitlines()[0]
    assert "<bool>" not in result.stdout
    # no automatic --x/--no-x pair: a flag is one name (--no-near is the documented name of its flag)
    assert "/ --no-" not in result.stdout or command == "publish"  # --report/--no-report is meaningful
    assert "--no-no-" not in result.stdout


def test_stages_keep_no_cli_code():
    for stage in ("crawler", "survey", "analysis"):
        for path in (REPO / stage).glob("*.py"):
            text = path.read_text()
            assert "import typer" not in text and "hubsurvey.cli" not in text, path


# --- validation: one line, exit 2, nothing done -------------------------------------------------------

@pytest.mark.parametrize("args", [
    ["run", "--workers", "-2"], ["run", "--workers", "0"], ["run", "--max-hours", "-1"], ["run", "--limit", "-1"],
    ["run", "--job-timeout", "0"], ["run", "--memory-mb", "-5"], ["run", "--rate", "-1"], ["run", "--max-rows", "0"],
    ["crawl", "--limit", "-3"], ["audit", "--examples", "-1"], ["report", "--top", "0"], ["sql", "SELECT 1", "--format", "xml"],
    ["status", "--format", "yaml"], ["--log-level", "LOUD", "status"],
])
@pytest.mark.slow
def test_out_of_range_values_are_one_line_exit_2(tmp_path, args):
    db = tmp_path / "r.duckdb"
    result = runner.invoke(app, [*args, "--db", str(db)])
    assert one_error_line(result, 2).startswith("error: ")
    assert not db.exists()


def test_zero_means_unlimited():
    from hubsurvey.commands.crawl import filters_from_options
    from hubsurvey.commands.survey import _run_options

    assert filters_from_options(None, None, None, None, None, 0, 10, False).limit is None
    assert _run_options(max_hours=0).max_hours is None and _run_options(max_hours=0.5).max_hours == 0.5


# --- errors: one line, the right code --------------------------------------------------------------------

def test_an_unexpected_exception_is_reported_as_a_bug(tmp_path, good, monkeypatch):
    import hubsurvey.survey.audit

    def broken(*args, **kwargs):
        raise ZeroDivisionError("division by zero")

    monkeypatch.setattr(hubsurvey.survey.audit, "audit", broken)
    result = runner.invoke(app, ["audit", str(good), "--db", str(tmp_path / "r.duckdb")])
    line = one_error_line(result, 5)
    assert line == "internal error (a bug in hubsurvey): ZeroDivisionError: division by zero"
    verbose = runner.invoke(app, ["-v", "audit", str(good), "--db", str(tmp_path / "r.duckdb")])
    assert verbose.exit_code == 5 and "Traceback" in verbose.stderr  # the traceback at debug level


@pytest.mark.parametrize("target", ["eriktks__conll2003", "./mydata", "../mydata", "/no/such/folder"])
def test_a_folder_typo_is_one_line_and_never_goes_to_the_hub(tmp_path, monkeypatch, target):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # any Hub request would fail differently
    result = runner.invoke(app, ["audit", target, "--db", str(tmp_path / "r.duckdb")])
    assert one_error_line(result, 2) == f"error: {target}: neither a folder nor a Hub id"


@pytest.mark.parametrize("command", [["sql", "SELECT 1"], ["report", "--out", "rep"], ["export", "--out", "exp"],
                                     ["site", "--out", "st"], ["status"]])
@pytest.mark.parametrize("kind", ["missing", "zero bytes", "empty duckdb"])
@pytest.mark.slow
def test_an_empty_or_missing_db_is_one_line_exit_3(tmp_path, monkeypatch, command, kind):
    monkeypatch.chdir(tmp_path)
    db = tmp_path / "e.duckdb"
    if kind == "zero bytes":
        db.touch()
    elif kind == "empty duckdb":
        duckdb.connect(str(db)).close()
    if command == ["status"] and kind != "missing":
        pytest.skip("status on an existing file is the pipeline's")
    result = runner.invoke(app, [*command, "--db", str(db)])
    assert one_error_line(result, 3).startswith("error: ")
    assert "Traceback" not in result.output
    assert db.exists() == (kind != "missing")  # never created
    assert not (tmp_path / "rep").exists() and not (tmp_path / "exp").exists()


# --- sql ------------------------------------------------------------------------------------------------

def test_sql_reads_the_query_from_stdin(results_db):
    result = runner.invoke(app, ["sql", "-", "--db", str(results_db), "--format", "json"],
                           input="SELECT count(*) AS n FROM measurements")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == [{"n": 1}]


@pytest.mark.parametrize("query", [
    "COPY (SELECT 1) TO '{tmp}/x.csv'",
    "SELECT * FROM read_csv('/etc/passwd')",
    "ATTACH '{tmp}/other.duckdb' AS o",
    "EXPORT DATABASE '{tmp}/dump'",
    "INSTALL httpfs",
    "LOAD httpfs",
    "SELECT 1; COPY measurements TO '{tmp}/x.csv'",
])
@pytest.mark.slow
def test_sql_cannot_touch_files(results_db, tmp_path, query):
    result = runner.invoke(app, ["sql", query.format(tmp=tmp_path), "--db", str(results_db)])
    assert one_error_line(result, 2).startswith("error: ")
    assert result.stdout == ""
    assert not (tmp_path / "x.csv").exists() and not (tmp_path / "other.duckdb").exists() and not (tmp_path / "dump").exists()


@pytest.mark.slow
def test_sql_allow_files_lifts_the_restriction(results_db, tmp_path):
    out = tmp_path / "x.csv"
    result = runner.invoke(app, ["sql", f"COPY (SELECT 42 AS answer) TO '{out}'", "--db", str(results_db), "--allow-files"])
    assert result.exit_code == 0, result.output
    assert out.read_text().split() == ["answer", "42"]


# --- audit output --------------------------------------------------------------------------------------

@pytest.mark.slow
def test_audit_json_is_the_same_with_examples_which_show_prints_from_the_db(tmp_path, good):
    plain = runner.invoke(app, ["audit", str(good), "--json", "--examples", "0", "--db", str(tmp_path / "a.duckdb")])
    with_examples = runner.invoke(app, ["audit", str(good), "--json", "--examples", "2", "--db", str(tmp_path / "b.duckdb")])
    as_format = runner.invoke(app, ["audit", str(good), "--format", "json", "--db", str(tmp_path / "c.duckdb")])
    assert plain.exit_code == with_examples.exit_code == as_format.exit_code == 0
    assert as_format.stdout == plain.stdout == with_examples.stdout  # examples go to the DB, not the JSON
    shown = runner.invoke(app, ["show", "org/good", "--kind", "leaks", "--profile", "raw", "--format", "json",
                                "--db", str(tmp_path / "b.duckdb")])
    assert shown.exit_code == 0, shown.output
    (leak,) = json.loads(shown.stdout)
    assert (leak["kind"], leak["key"], leak["rows_train"], leak["rows_test"]) == ("leak_train_test", {"text": "a"}, 1, 1)
    assert leak["positions"] == {"test": [0], "train": [0]}
    none = runner.invoke(app, ["show", "org/good", "--db", str(tmp_path / "a.duckdb")])
    assert none.exit_code == 0 and "no examples" in none.stdout
    missing = runner.invoke(app, ["show", "org/other", "--db", str(tmp_path / "b.duckdb")])
    assert missing.exit_code == 2 and "org/other: not measured" in missing.stderr


def test_audit_csv(tmp_path, good):
    result = runner.invoke(app, ["audit", str(good), "--format", "csv", "--db", str(tmp_path / "a.duckdb")])
    assert result.exit_code == 0, result.output
    header, row = result.stdout.strip().splitlines()
    assert header.startswith("dataset_name,text_leaks_train_wrt_test,") and row.startswith("good,1,")


# --- logs and progress --------------------------------------------------------------------------------

def test_logs_off_a_tty_carry_timestamps():
    from hubsurvey.logs import setup_logging

    stream = io.StringIO()
    setup_logging(stream=stream)
    logging.getLogger("hubsurvey.test").info("hello")
    logging.getLogger("httpx").info("a request")  # third-party INFO stays quiet
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d{4} INFO hubsurvey\.test: hello\n", stream.getvalue())


def test_survey_progress_off_a_tty_logs_done_failed_pending_rate_and_eta(caplog):
    from hubsurvey.progress import SurveyProgress

    caplog.set_level(logging.INFO, logger="hubsurvey.progress")
    with SurveyProgress(every_s=0, stream=io.StringIO()) as bar:
        bar({"done": 4, "ok": 3, "failed": 1, "total": 10, "rows_per_s": 2.5})
    line = caplog.records[0].getMessage()
    assert line.startswith("survey: done 3, failed 1, pending 6, rows/s 2.5, eta ")


# --- demo ----------------------------------------------------------------------------------------------

@pytest.mark.slow
def test_demo_writes_only_into_its_own_folder(tmp_path):
    work, tmp = tmp_path / "survey", tmp_path / "tmp"
    work.mkdir()
    tmp.mkdir()
    env = {**os.environ, "TMPDIR": str(tmp), "HF_HUB_OFFLINE": "0"}
    env.pop("HF_ENDPOINT", None)
    proc = subprocess.run([sys.executable, "-m", "hubsurvey.cli", "demo", "--workers", "1"], cwd=work, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert not (work / "results.duckdb").exists() and not (work / "out").exists()
    assert (work / "hubsurvey-demo" / "results.duckdb").is_file()
    assert (work / "hubsurvey-demo" / "report" / "REPORT.md").is_file()
    assert str(Path("hubsurvey-demo") / "results.duckdb") in proc.stdout
    assert list(tmp.iterdir()) == []  # the mini-hub and its cache are gone
    assert "it/s]" not in proc.stderr  # no per-file download bars


@pytest.mark.slow
def test_a_reader_that_stops_reading_is_not_an_error(results_db):
    """`hubsurvey sql ... | head -1`: the closed pipe ends the command quietly, exit 0, as a Unix filter."""
    query = "SELECT * FROM range(500000)"
    proc = subprocess.Popen([sys.executable, "-m", "hubsurvey.cli", "sql", "--db", str(results_db), query],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    first = proc.stdout.readline()
    proc.stdout.close()  # what `head -1` does once it has its line
    code = proc.wait(timeout=120)
    assert first.strip() and code == 0
    assert proc.stderr.read() == b""
