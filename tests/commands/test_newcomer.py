"""What a newcomer meets first: a run that says what it is doing (the one-time compile announced and
kept out of the ETA, no third-party bars in the output), and the small things that failed as written
(status, publish, show, check's percentages, notify's commands)."""

from __future__ import annotations

import io
import json
import logging
import shlex
import signal

import pytest
import typer
from typer.testing import CliRunner

from hubsurvey.cli import app
from hubsurvey.core.runs import Runs, RunStatus
from hubsurvey.core.store import Store

runner = CliRunner()


# --- the compile, the ETA, the bars ----------------------------------------------------------------

def test_the_eta_counts_from_the_first_job_not_from_the_compile_before_it(caplog):
    from hubsurvey.progress import SurveyProgress

    caplog.set_level(logging.INFO, logger="hubsurvey.progress")
    with SurveyProgress(every_s=0, stream=io.StringIO()) as bar:
        bar._started -= 600  # ten minutes went to compiling before the first job
        bar({"done": 1, "ok": 1, "failed": 0, "total": 11, "elapsed_s": 2.0, "rows_per_s": 10})
    assert caplog.records[0].getMessage().endswith("eta 0:00:20")  # 2 s a job, 10 jobs left


def test_the_groups_a_run_compiles_are_those_its_jobs_use():
    from hubsurvey.survey.kernels import GROUPS, groups_for

    assert groups_for(near=True, benchmarks=False) == ("fingerprint", "near")
    assert groups_for(near=False, benchmarks=True) == ("fingerprint", "contamination")
    assert set(groups_for(near=True, benchmarks=True)) == set(GROUPS)


def test_a_compiled_group_is_not_compiled_or_announced_again(tmp_path, monkeypatch):
    from hubsurvey.survey import kernels

    marks = {g: tmp_path / f"{g}.done" for g in kernels.GROUPS}
    monkeypatch.setattr(kernels, "_mark", lambda group: marks[group])
    started: list[list[str]] = []
    monkeypatch.setattr(kernels.subprocess, "Popen", lambda args, **_: started.append(args) or _Done(args))
    said: list[str] = []
    kernels.compile_groups(["fingerprint", "near"], say=said.append)
    assert [a[-1] for a in started] == ["fingerprint", "near"]
    assert said == ["compiling the fingerprint and near-duplicate kernels once for this install, "
                    f"about {kernels.TYPICAL_SECONDS} s"]
    for group in ("fingerprint", "near"):  # the children mark what they compiled
        marks[group].touch()
    started.clear()
    said.clear()
    assert kernels.compile_groups(["fingerprint", "near"], say=said.append) == 0.0
    assert started == [] and said == []
    # without a cache folder it can write, a process compiles what it uses: nothing is started
    monkeypatch.setattr(kernels, "_mark", lambda group: None)
    assert kernels.to_compile(["contamination"]) == []


class _Done:
    returncode = 0

    def __init__(self, args):
        self.args = args

    def communicate(self):
        return b"", b""

    def poll(self):
        return 0


def test_a_groups_mark_changes_when_its_kernels_source_changes(tmp_path, monkeypatch):
    import importlib.util

    from hubsurvey.survey import kernels

    source = tmp_path / "fake_kernels.py"
    source.write_text("x = 1\n")
    monkeypatch.setitem(kernels.GROUPS, "fake", ("fake_kernels",))
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: type("S", (), {"origin": str(source)}))
    before = kernels._mark("fake")
    source.write_text("x = 22\n")
    assert before is not None and kernels._mark("fake") != before


@pytest.mark.slow
def test_duckdb_draws_no_progress_bar_on_any_connection(tmp_path):
    from hubsurvey.core import duck

    def bar(con) -> bool:
        return con.execute("SELECT current_setting('enable_progress_bar')").fetchone()[0]

    assert bar(duck.connect()) is False
    with Store(tmp_path / "r.duckdb") as store:
        assert bar(store.con) is False
    with Store(tmp_path / "r.duckdb", read_only=True) as store:
        assert bar(store.con) is False


# --- Ctrl-C and SIGTERM, in the process ------------------------------------------------------------

def test_a_command_stopped_by_a_signal_ends_in_one_line_with_its_exit_code(tmp_path, monkeypatch):
    from hubsurvey.cli import handled
    from hubsurvey.core.runs import Interrupted
    from hubsurvey.core.signals import interrupt as _interrupt

    def stopped(signum: int, detail: str | None = None):
        def command() -> None:
            try:
                _interrupt(signum, None)
            except KeyboardInterrupt:
                if detail is None:
                    raise
                raise Interrupted(detail) from None
        return command

    monkeypatch.setattr("sys.argv", ["/venv/bin/hubsurvey", "run", "--db", "my db.duckdb"])
    for signum, code in ((signal.SIGINT, 130), (signal.SIGTERM, 143)):
        with pytest.raises(typer.Exit) as ended:
            handled(stopped(signum, "3 jobs left pending"))()
        assert ended.value.exit_code == code
    from hubsurvey.cli import interrupted_line

    assert interrupted_line(Interrupted("3 jobs left pending")) == (
        "interrupted: 3 jobs left pending, resume with `hubsurvey run --db 'my db.duckdb'`")
    assert interrupted_line(KeyboardInterrupt()) == "interrupted: run again with `hubsurvey run --db 'my db.duckdb'`"


@pytest.mark.slow
def test_status_names_the_survey_as_the_last_run_and_a_later_command_beside_it(tmp_path):
    db = tmp_path / "r.duckdb"
    with Store(db) as store:
        runs = Runs(store)
        survey = runs.start("run", {})
        runs.finish(survey, RunStatus.DONE, {"done": 16})
        dry = runs.start("notify", {"post": False})
        runs.finish(dry, RunStatus.DONE, {"drafted": 4})
    result = runner.invoke(app, ["status", "--db", str(db)])
    assert result.exit_code == 0, result.output
    assert f"last run: {survey} done" in result.stdout
    assert f"latest command: notify {dry} done" in result.stdout
    info = json.loads(runner.invoke(app, ["status", "--db", str(db), "--json"]).stdout)
    assert info["last_run"]["run_id"] == survey and info["latest_command"]["run_id"] == dry


def test_status_on_a_missing_db_is_the_one_line_every_read_command_gives(tmp_path):
    db = tmp_path / "missing.duckdb"
    lines = {command: runner.invoke(app, [*args, "--db", str(db)]) for command, args in
             (("status", ["status"]), ("sql", ["sql", "SELECT 1"]))}
    for result in lines.values():
        assert result.exit_code == 3 and result.stderr.strip().splitlines() == [
            f"error: {db}: no such results DB (run `hubsurvey run` or `hubsurvey audit` first)"]
    assert not db.exists()


# --- check's percentages, show's lists -------------------------------------------------------------

@pytest.mark.parametrize("written, value", [("5", 5.0), ("5%", 5.0), ("0.5 %", 0.5), (" 12.5%", 12.5)])
def test_a_percentage_limit_may_end_with_a_percent_sign(written, value):
    from hubsurvey.commands.check import percent

    assert percent(written) == value


def test_check_takes_a_percent_sign_and_refuses_a_word(tmp_path):
    missing = str(tmp_path / "nowhere")
    took = runner.invoke(app, ["check", missing, "--max-contaminated", "5%", "--max-near", "1%"])
    assert took.exit_code == 2 and "neither a folder nor a Hub id" in took.stderr  # the target, not the option
    refused = runner.invoke(app, ["check", missing, "--max-contaminated", "five"])
    assert refused.exit_code == 2 and "is not a percentage" in refused.output


def test_a_label_list_is_shortened_by_whole_items_never_mid_item():
    from hubsurvey.analysis.examples import short_list

    labels = [[7, 8], [1], [12, 13, 14], [0], [5, 5], [9], [10, 11], [3], [4], [6], [2]]
    shown = short_list(labels, width=30)
    assert shown.startswith("[[7, 8], [1], [12, 13, 14]") and shown.endswith(" more]")
    kept = json.loads(shown.split(", …")[0] + "]")
    assert kept == labels[:len(kept)]  # whole items, in order
    assert shown.endswith(f"… {len(labels) - len(kept)} more]")
    assert short_list([[7, 8]], width=3) == "[[7, 8]]"  # one item longer than the width: whole
    assert short_list(3) == "3" and short_list({"a": 1}) == '{"a": 1}'


# --- notify's commands -----------------------------------------------------------------------------

def test_notifys_clean_command_names_the_folder_clean_needs():
    from hubsurvey.analysis.notify import clean_command

    command = clean_command("acme/x y", "default")
    assert command == "hubsurvey clean 'acme/x y' --config default --out clean/"
    # clean's parser takes it as written (it refused the command without --out)
    parse(shlex.split(command)[1:])
    with pytest.raises(Exception, match="Missing parameter: out"):
        parse(["clean", "acme/x", "--config", "default"])


def parse(argv: list[str]) -> None:
    """Parse ``hubsurvey ARGV`` as the command line does, without running it: an unknown option, a
    missing one or a bad value raises the parser's error."""
    group = typer.main.get_command(app)
    top = group.context_class(group, info_name="hubsurvey")
    command = group.get_command(top, argv[0])  # type: ignore[attr-defined]
    assert command is not None, argv
    command.make_context(argv[0], list(argv[1:]), parent=top).close()


@pytest.mark.slow
def test_publish_without_push_never_prints_a_folder_it_removed(tmp_path):
    from test_analysis_fixtures import build_planted_db

    db = build_planted_db(tmp_path / "db")
    result = runner.invoke(app, ["publish", "--repo", "me/results", "--db", str(db)])
    assert result.exit_code == 0, result.output
    (folder,) = [line for line in result.stdout.splitlines() if line.startswith("folder: ")]
    assert folder == "folder: temporary, removed (--out DIR keeps it)"
    kept = tmp_path / "kept"
    result = runner.invoke(app, ["publish", "--repo", "me/results", "--db", str(db), "--out", str(kept)])
    assert f"folder: {kept}" in result.stdout and (kept / "README.md").is_file()


# What a job of a dataset with two text columns runs after the run's one-time compile: the child
# measures it under numba's compile events and prints each pass numba had to compile.
_MEASURE_TWO_COLUMNS = """
import json, os, sys
import pyarrow as pa, pyarrow.parquet as pq
from numba.core import event
from hubsurvey.core.figures import methods_measured
from hubsurvey.survey.measure import measure_config
from hubsurvey.survey.sources import open_source

root = sys.argv[1]
for split, n in (("train", 3000), ("test", 400)):
    question = [f"what did player {i % 250} say about the {i % 7}th match in season {i % 40}?" for i in range(n)]
    context = [f"In season {i % 40} the club won {i % 11} of its games; player {i % 250} scored twice. Ü{i}" for i in range(n)]
    folder = f"{root}/default/{split}"
    os.makedirs(folder)
    pq.write_table(pa.table({"question": question, "context": context, "label": [i % 3 for i in range(n)]}), f"{folder}/0000.parquet")
source = open_source(root)
data = source.load(source.configs()[0])
with event.install_recorder("numba:compile") as compiled:
    measure_config(data, n_configs=1, source="hub", methods=list(methods_measured(near=True)))
print(json.dumps(sorted({e.data["dispatcher"].py_func.__qualname__ for _, e in compiled.buffer if e.is_start})))
"""


@pytest.mark.slow
def test_after_the_one_time_compile_a_two_text_column_job_compiles_nothing(tmp_path):
    """The run's compile covers the passes' variants a question-and-context dataset uses: a job of
    one in a fresh process, on the compiled cache, loads every pass and compiles none (before, each
    worker compiled four near-duplicate passes inside its first such job, 18 s)."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "numba")}
    compile_run = "from hubsurvey.survey.kernels import compile_groups; compile_groups(['fingerprint', 'near'])"
    subprocess.run([sys.executable, "-c", compile_run], env=env, check=True, timeout=900)
    job = subprocess.run([sys.executable, "-c", _MEASURE_TWO_COLUMNS, str(tmp_path / "qa")], env=env,
                         check=True, timeout=900, capture_output=True, text=True)
    compiled = json.loads(job.stdout.strip().splitlines()[-1])
    assert compiled == [], compiled
