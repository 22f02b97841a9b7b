"""Hostile names in human-facing output, and JSON that jq accepts.

Control characters from a dataset (a config named with ``ESC ] 0 ; title BEL``, a clear-screen CSI,
an 8-bit CSI, a right-to-left override) are shown as text on the terminal, in error and log lines
and in the reports; the data keeps them exactly (DB, CSV and Parquet files, decoded JSON). NaN and
infinities are ``null`` in every JSON output."""

from __future__ import annotations

import json
import logging
import math
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from hubsurvey.cli import app
from hubsurvey.core.safety import has_control, json_text, visible

runner = CliRunner()

HOSTILE = "cfg\x1b]0;pwned\x07\x1b[2J\x9b31m\u202eevil\x7f\rend"
SHOWN = "cfg\\x1b]0;pwned\\x07\\x1b[2J\\x9b31m\\u202eevil\\x7f\\rend"
RAW = ("\x1b", "\x07", "\x9b", "\u202e", "\x00", "\x7f", "\r")


def _no_raw_control(text: str) -> None:
    for ch in RAW:
        assert ch not in text, repr(ch)


@pytest.mark.parametrize("raw,shown", [
    ("\x1b]0;title\x07", "\\x1b]0;title\\x07"),  # OSC ... BEL: sets the window title
    ("\x1b[2J", "\\x1b[2J"),  # CSI: clears the screen
    ("\x9b2J", "\\x9b2J"),  # the 8-bit CSI
    ("a\u202eb\u2066c", "a\\u202eb\\u2066c"),  # bidi override and isolate
    ("tab\there\nnew", "tab\there\nnew"),  # kept in multi-line text
    ("plain ÜñÎ 文字 😀", "plain ÜñÎ 文字 😀"),  # printable text is untouched
])
def test_visible_writes_control_characters_out(raw, shown):
    assert visible(raw) == shown
    assert not has_control(visible(raw, one_line=True))
    assert visible(visible(raw)) == visible(raw)  # what it writes holds no control character


def test_visible_one_line_escapes_newlines_too():
    assert visible("a\nb\tc", one_line=True) == "a\\nb\\tc"


def test_json_text_is_valid_json_and_decodes_to_the_exact_value():
    value = {"name": HOSTILE, "x": math.nan, "y": [math.inf, -math.inf, 1.5]}
    text = json_text(value)
    _no_raw_control(text)
    decoded = json.loads(text, parse_constant=_refuse_constant)
    assert decoded == {"name": HOSTILE, "x": None, "y": [None, None, 1.5]}


def _refuse_constant(name: str) -> None:
    raise AssertionError(f"not JSON: {name}")


def test_log_lines_show_control_characters_as_text():
    from hubsurvey.logs import VisibleFormatter

    record = logging.LogRecord("hubsurvey.x", logging.INFO, __file__, 1, "measuring %s", (HOSTILE,), None)
    line = VisibleFormatter("%(message)s").format(record)
    assert line == f"measuring {SHOWN}"


# --- end to end, through the commands ------------------------------------------------------------

@pytest.fixture(scope="module")
def hostile_db(tmp_path_factory) -> Path:
    """A folder dataset whose config and column names hold control characters, audited into a DB."""
    tmp = tmp_path_factory.mktemp("hostile-names")
    root = tmp / "hostile__names"
    for split, texts in (("train", ["a", "b", "b"]), ("test", ["b", "c"])):
        (root / HOSTILE / split).mkdir(parents=True)
        pq.write_table(pa.table({"text": texts, "label": [0, 1, 1][: len(texts)]}), root / HOSTILE / split / "0.parquet")
    db = tmp / "r.duckdb"
    result = runner.invoke(app, ["audit", str(root), "--db", str(db)])
    assert result.exit_code == 0, result.output
    _no_raw_control(result.stdout)
    assert f"config={SHOWN}" in result.stdout
    return db


@pytest.mark.slow
def test_sql_table_and_csv_on_the_terminal_show_the_name_as_text(hostile_db):
    for fmt in ("table", "csv"):
        result = runner.invoke(app, ["sql", "SELECT DISTINCT config FROM measurements", "--db", str(hostile_db), "--format", fmt])
        assert result.exit_code == 0, result.output
        _no_raw_control(result.stdout)
        assert SHOWN in result.stdout


@pytest.mark.slow
def test_sql_json_keeps_the_exact_name_and_is_terminal_safe(hostile_db):
    result = runner.invoke(app, ["sql", "SELECT DISTINCT config FROM measurements", "--db", str(hostile_db), "--format", "json"])
    assert result.exit_code == 0, result.output
    _no_raw_control(result.stdout)
    assert json.loads(result.stdout) == [{"config": HOSTILE}]


@pytest.mark.slow
def test_the_db_keeps_the_exact_name(hostile_db):
    from hubsurvey.core.store import Store

    with Store(hostile_db, read_only=True) as store:
        assert store.query("SELECT DISTINCT config FROM measurements")[1] == [(HOSTILE,)]


@pytest.mark.slow
def test_show_prints_the_name_as_text(hostile_db):
    result = runner.invoke(app, ["show", "hostile/names", "--db", str(hostile_db)])
    assert result.exit_code == 0, result.output
    _no_raw_control(result.stdout)
    assert "\\x1b]0;pwned\\x07" in result.stdout


@pytest.mark.slow
def test_an_error_line_naming_a_hostile_config_is_one_visible_line(tmp_path):
    root = tmp_path / "bad__names"
    (root / HOSTILE / "train").mkdir(parents=True)  # no test split: refused, with the config named
    pq.write_table(pa.table({"text": ["a"]}), root / HOSTILE / "train" / "0.parquet")
    result = runner.invoke(app, ["audit", str(root), "--db", str(tmp_path / "r.duckdb")])
    assert result.exit_code == 2
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("error: ") and "no test split" in line and "\\x1b]0;pwned\\x07" in line
    _no_raw_control(result.stderr)


@pytest.mark.slow
def test_report_markdown_and_html_show_the_name_as_text(hostile_db, tmp_path):
    out = tmp_path / "report"
    result = runner.invoke(app, ["report", "--db", str(hostile_db), "--out", str(out), "--top", "5"])
    assert result.exit_code == 0, result.output
    for name in ("REPORT.md", "report.html"):
        text = (out / name).read_text(encoding="utf-8")
        _no_raw_control(text)
    assert "\\x1b" in (out / "REPORT.md").read_text(encoding="utf-8")


@pytest.mark.slow
def test_exported_csv_and_parquet_keep_the_exact_name(hostile_db, tmp_path):
    """CSV files are data: the value is kept as it is (a spreadsheet does not interpret ESC)."""
    out = tmp_path / "export"
    result = runner.invoke(app, ["export", "--db", str(hostile_db), "--out", str(out)])
    assert result.exit_code == 0, result.output
    csv_files = sorted(out.rglob("*.csv"))
    assert csv_files and any(HOSTILE in f.read_bytes().decode("utf-8") for f in csv_files)
    tables = [pq.read_table(f) for f in out.rglob("*.parquet")]
    assert any("config" in t.column_names and HOSTILE in t.column("config").to_pylist() for t in tables)


# --- NaN in JSON output ------------------------------------------------------------------------

@pytest.fixture(scope="module")
def nan_db(tmp_path_factory) -> Path:
    """A float label column holding NaN (the roles file makes it the label)."""
    tmp = tmp_path_factory.mktemp("nan-labels")
    root = tmp / "o__nan"
    for split, texts, labels in (("train", ["a", "a", "b"], [math.nan, 0.5, 1.0]), ("test", ["a", "b"], [math.nan, math.inf])):
        (root / "default" / split).mkdir(parents=True)
        pq.write_table(pa.table({"text": texts, "label": labels}), root / "default" / split / "0.parquet")
    roles = tmp / "roles.toml"
    roles.write_text('["o/nan".default]\ntext = ["text"]\nlabels = ["label"]\n', encoding="utf-8")
    db = tmp / "r.duckdb"
    result = runner.invoke(app, ["audit", str(root), "--db", str(db), "--roles", str(roles), "--json"])
    assert result.exit_code == 0, result.output
    json.loads(result.stdout, parse_constant=_refuse_constant)  # audit --json: valid
    return db


@pytest.mark.slow
def test_show_json_with_nan_labels_is_valid_json_with_null(nan_db):
    result = runner.invoke(app, ["show", "o/nan", "--db", str(nan_db), "--format", "json"])
    assert result.exit_code == 0, result.output
    examples = json.loads(result.stdout, parse_constant=_refuse_constant)
    labels = [e["labels"] for e in examples if e["labels"]]
    assert labels and any(None in side for e in labels for side in e.values())


@pytest.mark.slow
@pytest.mark.parametrize("expression", ["'nan'::DOUBLE", "'inf'::DOUBLE", "'-inf'::FLOAT", "[1.0, 'nan'::DOUBLE]"])
def test_sql_json_of_non_finite_floats_is_null(nan_db, expression):
    result = runner.invoke(app, ["sql", f"SELECT {expression} AS x, 1 AS one", "--db", str(nan_db), "--format", "json"])
    assert result.exit_code == 0, result.output
    (row,) = json.loads(result.stdout, parse_constant=_refuse_constant)
    assert row["one"] == 1 and row["x"] in (None, [1.0, None])


@pytest.mark.slow
def test_status_json_is_valid_json(nan_db):
    result = runner.invoke(app, ["status", "--db", str(nan_db), "--format", "json"])
    assert result.exit_code == 0, result.output
    json.loads(result.stdout, parse_constant=_refuse_constant)


@pytest.mark.slow
def test_off_a_terminal_every_control_sequence_is_shown_as_text(hostile_db):
    """A real process with its output piped: click would drop CSI there and keep OSC; both are text."""
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "hubsurvey.cli", "sql", "SELECT DISTINCT config FROM measurements",
                           "--db", str(hostile_db)], capture_output=True, timeout=120)
    out = done.stdout.decode()
    assert done.returncode == 0, done.stderr.decode()
    _no_raw_control(out)
    assert SHOWN in out
