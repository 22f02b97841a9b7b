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
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import ROOT
from typer.testing import CliRunner

from hubsurvey import __version__
from hubsurvey.cli import COMMANDS, app
from hubsurvey.core.errors import ExitCode, UsageError
from hubsurvey.core.store import Store
from hubsurvey.survey.sample import write_sample

REPO = ROOT
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


def test_the_command_table_names_each_function_and_its_docstrings_first_line():
    """``hubsurvey --help`` lists the table's lines without importing the commands: each must be
    the first line of the docstring of the function the command runs."""
    for command in COMMANDS:
        function = command.function()
        assert function.__name__ == command.name
        assert (function.__doc__ or "").strip().splitlines()[0] == command.summary, command.name


@pytest.mark.slow
def test_help_and_a_light_command_import_no_other_command():
    """The commands' modules (and the stages behind them) are imported when their command runs:
    ``--help`` imports none, ``status`` only its own."""
    script = ("import sys; from typer.testing import CliRunner; from hubsurvey.cli import app; "
              "r = CliRunner().invoke(app, sys.argv[1:]); assert r.exit_code == 0, r.output; "
              "print(sorted(m for m in sys.modules if m.startswith('hubsurvey.commands.')))")
    listed = subprocess.run([sys.executable, "-c", script, "--help"], capture_output=True, text=True, timeout=60)
    assert listed.returncode == 0 and listed.stdout.strip() == "[]", listed.stderr
    status = subprocess.run([sys.executable, "-c", script, "status", "--help"], capture_output=True, text=True, timeout=60)
    assert status.returncode == 0, status.stderr
    assert status.stdout.strip() == str(["hubsurvey.commands.common", "hubsurvey.commands.options", "hubsurvey.commands.survey"])


@pytest.mark.slow
def test_a_folder_audit_loads_no_hub_client(tmp_path):
    """A local folder is audited without the Hub's HTTP stack (huggingface_hub, httpx2): its
    imports were a tenth of the 1M-row benchmark's audit, on the one core start-up has."""
    folder = write_sample(tmp_path / "owner__sample")
    script = ("import sys; from typer.testing import CliRunner; from hubsurvey.cli import app; "
              "r = CliRunner().invoke(app, sys.argv[1:]); assert r.exit_code == 0, r.output; "
              "print(sorted({m.split('.')[0] for m in sys.modules} & {'huggingface_hub', 'httpx2'}))")
    audited = subprocess.run([sys.executable, "-c", script, "audit", str(folder), "--json", "--no-near",
                              "--db", str(tmp_path / "r.duckdb")], capture_output=True, text=True, timeout=120)
    assert audited.returncode == 0, audited.stderr
    assert audited.stdout.strip().splitlines()[-1] == "[]"


def test_a_report_loads_neither_the_hub_client_nor_the_compiled_passes(tmp_path):
    """``report`` and ``export`` read the DB only: publish's module (the Hub's HTTP stack, and numba
    through the card's fingerprint version) was 0.7 s of a report's start-up."""
    db = tmp_path / "r.duckdb"
    Store(db).close()
    script = ("import sys; from typer.testing import CliRunner; from hubsurvey.cli import app; "
              "runs = [CliRunner().invoke(app, [c, '--out', sys.argv[2] + '/' + c, '--db', sys.argv[1]]) for c in ('report', 'export')]; "
              "assert all(r.exit_code == 0 for r in runs), [r.output for r in runs]; "
              "print(sorted({m.split('.')[0] for m in sys.modules} & {'huggingface_hub', 'httpx2', 'numba'}))")
    done = subprocess.run([sys.executable, "-c", script, str(db), str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "report" / "REPORT.md").is_file() and any((tmp_path / "export").iterdir())
    assert done.stdout.strip().splitlines()[-1] == "[]"


@pytest.mark.parametrize("command", [c.name for c in COMMANDS])
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
    from hubsurvey.commands.options import FILTERS
    from hubsurvey.commands.survey import RUN

    assert FILTERS.value({"limit": 0, "max_rows": 10}).limit is None and FILTERS.value({"limit": 7}).limit == 7
    assert RUN.value({"max_hours": 0}).max_hours is None and RUN.value({"max_hours": 0.5}).max_hours == 0.5


# --- options declared once: on their fields, shared as groups ------------------------------------------

def _options_of(command: str) -> dict[str, Any]:
    """A command's options as click sees them, by flag."""
    import typer.main

    group = typer.main.get_command(app)
    found = group.get_command(group.context_class(group, info_name="hubsurvey"), command)  # type: ignore[attr-defined]
    return {p.opts[0]: p for p in found.params if p.param_type_name == "option"}


def _help_entries(command: str) -> dict[str, str]:
    """Each option's entry in ``hubsurvey COMMAND -h``, by flag, whitespace normalized (the column
    widths differ between commands)."""
    entries: dict[str, list[str]] = {}
    current = None
    for line in runner.invoke(app, [command, "-h"]).stdout.split("Options:", 1)[1].splitlines():
        if match := re.match(r"^  (-\w, )?(--[\w-]+)", line):
            current = entries.setdefault(match[2], [])
        if current is not None:
            current.append(line)
    return {flag: " ".join(" ".join(lines).split()) for flag, lines in entries.items()}


def test_every_run_option_is_reachable_from_run_with_its_default():
    """Every RunOptions field is set by a flag of `run` (or an executor's: `executor_options`), and
    `run` with no option gives RunOptions' defaults; a field the command line never sets says so."""
    from dataclasses import fields

    from hubsurvey.commands.survey import RUN
    from hubsurvey.core.options import declared, field_default
    from hubsurvey.core.steps import RunOptions
    from hubsurvey.survey.executors import EXECUTORS

    flags = _options_of("run")
    not_on_the_command_line = {"max_attempts", "crawl"}  # set by library callers and tests only
    for f in fields(RunOptions):
        if f.name == "executor_options":
            for executor in EXECUTORS.values():
                assert all(how.flag in flags for _f, how in declared(executor.options)), executor.name
        elif f.name not in not_on_the_command_line:
            assert f.metadata["cli"].flag in flags, f.name
    # the defaults: what run builds from its options when none is given, against RunOptions' own
    built = RUN.value({})
    for f in fields(RunOptions):
        expected = {"report_dir": Path("out")}.get(f.name, field_default(f))  # run writes its report to out/
        assert getattr(built, f.name) == expected, f.name
    # each flag reaches its field: a value other than the default, given on the command line
    given = {"workers": 3, "max_hours": 2.0, "job_timeout": 60.0, "memory_mb": 512, "report_dir": Path("r"),
             "roles": Path("roles.toml"), "retry_failed": ["all"], "cache_dir": Path("c"), "max_cache_gb": 1.5,
             "keep_cache": True, "examples": 0, "no_near": True, "no_crossleaks": True, "copy_threshold": 0.5,
             "no_exposure": True, "max_models": 7, "dask": "tcp://h:8786"}
    options = RUN.value(given)
    assert (options.workers, options.max_hours, options.job_timeout, options.memory_mb) == (3, 2.0, 60.0, 512)
    assert (options.report_dir, options.roles_file, options.retry_failed, options.cache_dir) == (Path("r"), "roles.toml", (), Path("c"))
    assert (options.max_cache_gb, options.keep_cache, options.examples, options.copy_threshold) == (1.5, True, 0, 0.5)
    assert (options.near, options.crossleaks, options.exposure, options.max_models) == (False, False, False, 7)
    assert options.executor == "dask" and options.executor_options == {"dask": "tcp://h:8786"}
    assert options.as_json()["dask"] == "tcp://h:8786"  # recorded with the run as before
    assert RUN.value({"retry_failed": ["timeout"]}).retry_failed == ("timeout",)
    assert set(flags) - {"--db"} == {p.opts[0] for p in _cli_params(RUN)} | _group_flags("FILTERS") | _group_flags("HUB")


def _cli_params(group) -> list[Any]:
    """A group's options as click sees them, on a command that takes the group alone."""
    import typer
    import typer.main

    from hubsurvey.commands.options import takes

    def alone(value=None) -> None:
        pass

    only = typer.Typer(add_completion=False)
    only.command()(takes(value=group)(alone))
    return [p for p in typer.main.get_command(only).params if p.param_type_name == "option"]


def _group_flags(name: str) -> set[str]:
    from hubsurvey.commands import crawl, options

    return {p.opts[0] for p in _cli_params(getattr(options, name, None) or getattr(crawl, name))}


@pytest.mark.slow
@pytest.mark.parametrize("group, commands", [
    ("HUB", ["crawl", "run", "contamination"]),
    ("HUB_API", ["exposure"]),
    ("FILTERS", ["crawl", "run"]),
])
def test_each_option_group_appears_identically_on_every_command_taking_it(group, commands):
    from hubsurvey.commands import crawl, options

    declared = _cli_params(getattr(options, group, None) or getattr(crawl, group))
    assert declared
    entries = {command: _help_entries(command) for command in commands}
    for option in declared:
        flag = option.opts[0]
        shown = {command: entries[command][flag] for command in commands}
        assert len(set(shown.values())) == 1 and flag in shown[commands[0]], shown
        assert {_options_of(command)[flag].default for command in commands} == {option.default}, flag
    # the Hub options build the overrides of Settings, and nothing else
    if group == "HUB":
        from hubsurvey.commands.options import HUB
        from hubsurvey.core.settings import Settings

        hub = HUB.value({"rate": 2.0, "plan": "pro"})
        assert hub.overrides() == {"rate": 2.0, "file_rate": None, "plan": "pro", "deadline": None}
        settings = hub.settings()
        assert isinstance(settings, Settings) and settings.rate == 2.0 and settings.plan == "pro"


def test_the_executor_check_is_one_and_each_executor_declares_its_options():
    from hubsurvey.survey.executors import chosen_executor

    assert chosen_executor(None, {}) == ("local", {})
    assert chosen_executor(None, {"dask": "tcp://h:8786"}) == ("dask", {"dask": "tcp://h:8786"})
    assert chosen_executor("dask", {"dask": "tcp://h:8786"}) == ("dask", {"dask": "tcp://h:8786"})
    for name, given, message in [
        ("dask", {}, "--executor dask needs the scheduler's address: --dask tcp://scheduler:8786"),
        ("ray", {}, "--executor must be one of local, dask, not 'ray'"),
        ("local", {"dask": "tcp://h:1"}, "--dask is an option of --executor dask; it contradicts --executor local"),
    ]:
        with pytest.raises(UsageError) as raised:
            chosen_executor(name, given)
        assert str(raised.value) == message


# --- errors: one line, the right code --------------------------------------------------------------------

def test_an_unexpected_exception_is_reported_as_a_bug(tmp_path, good, monkeypatch):
    import hubsurvey.commands.audit

    def broken(*args, **kwargs):
        raise ZeroDivisionError("division by zero")

    monkeypatch.setattr(hubsurvey.commands.audit, "run_audit", broken)
    result = runner.invoke(app, ["audit", str(good), "--db", str(tmp_path / "r.duckdb")])
    line = one_error_line(result, 5)
    assert line == "internal error (a bug in hubsurvey): ZeroDivisionError: division by zero"
    verbose = runner.invoke(app, ["-v", "audit", str(good), "--db", str(tmp_path / "r.duckdb")])
    assert verbose.exit_code == 5 and "Traceback" in verbose.stderr  # the traceback at debug level


@pytest.mark.slow
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
    result = runner.invoke(app, [*command, "--db", str(db)])
    assert one_error_line(result, 3).startswith("error: ")
    assert "Traceback" not in result.output
    assert db.exists() == (kind != "missing")  # never created
    assert not (tmp_path / "rep").exists() and not (tmp_path / "exp").exists()


# --- sql ------------------------------------------------------------------------------------------------

@pytest.mark.slow
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


@pytest.mark.slow
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


def test_survey_progress_during_the_crawl_says_what_it_listed_instead_of_an_eta(caplog):
    """While the crawl runs beside the jobs the total grows as it lists: no ETA is made up from it."""
    from hubsurvey.progress import SurveyProgress

    caplog.set_level(logging.INFO, logger="hubsurvey.progress")
    with SurveyProgress(every_s=0, stream=io.StringIO()) as bar:
        bar({"done": 4, "ok": 4, "failed": 0, "total": 4, "rows_per_s": 2.5, "listed": 1200})
    assert caplog.records[0].getMessage() == "survey: done 4, failed 0, pending 0, rows/s 2.5, crawling 1200 listed"


# --- demo ----------------------------------------------------------------------------------------------

@pytest.mark.slow
def test_demo_writes_only_into_its_own_folder(tmp_path):
    # a TMPDIR too deep for the fork server's Unix socket under it (over 104 bytes with its names)
    work, tmp = tmp_path / "survey", tmp_path / ("deep-" * 16) / "tmp"
    work.mkdir()
    tmp.mkdir(parents=True)
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


@pytest.mark.slow
def test_the_console_command_ends_with_its_code_its_output_whole_and_its_exit_hooks_run(results_db, tmp_path):
    """The console command skips the interpreter's teardown (``cli.main``): what the command wrote
    still reaches a file whole, its exit code is the command's, and the exit hooks still run (here
    one a ``sitecustomize`` registers, writing a file)."""
    hooks = tmp_path / "site"
    hooks.mkdir()
    marker = tmp_path / "hook-ran"
    (hooks / "sitecustomize.py").write_text(
        f"import atexit, pathlib\natexit.register(lambda: pathlib.Path({str(marker)!r}).write_text('ran'))\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(hooks), os.environ.get("PYTHONPATH")]))}
    out = tmp_path / "rows.csv"
    with out.open("wb") as sink:
        done = subprocess.run([sys.executable, "-m", "hubsurvey.cli", "sql", "--db", str(results_db), "--format", "csv",
                               "SELECT range AS n FROM range(300000)"], stdout=sink, stderr=subprocess.PIPE, env=env,
                              timeout=120)
    assert done.returncode == 0 and done.stderr == b""
    lines = out.read_text().splitlines()
    assert lines[0] == "n" and lines[1:] == [str(n) for n in range(300000)]
    assert marker.read_text() == "ran"
    marker.unlink()
    missing = subprocess.run([sys.executable, "-m", "hubsurvey.cli", "sql", "--db", str(tmp_path / "none.duckdb"), "SELECT 1"],
                             capture_output=True, text=True, env=env, timeout=120)
    assert missing.returncode == int(ExitCode.STORE) and len(missing.stderr.strip().splitlines()) == 1, missing.stderr
    assert marker.read_text() == "ran"
