"""The runner of steps: a new step is one class plus one line in the list, and it runs and is recorded
like the others; a step that fails fails the run, recorded; executors come from their registry;
``Runs.recording`` records every end of a command."""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass

import pytest

from hubsurvey.core.errors import BadInputError, UsageError
from hubsurvey.core.hub import HubClient
from hubsurvey.core.runs import Runs, RunStatus
from hubsurvey.core.settings import Settings
from hubsurvey.core.steps import Counts, RunContext, RunEnd, RunOptions, Step
from hubsurvey.core.store import Store
from hubsurvey.pipeline import run_steps, run_survey

#: a client that is never called: these runs have nothing to crawl or download
OFFLINE = dict(endpoint="http://127.0.0.1:9", token=False, rate=None, file_rate=None)


@dataclass
class ShareOfConfigsMeasured(Step):
    """A dummy step, as a new one would be written: it reads what the steps before it stored, and
    says what its counts mean (the line ``run`` prints)."""

    name: str = "configs_measured"

    def run(self, ctx: RunContext) -> Counts:
        measured = ctx.store.query("SELECT count(DISTINCT dataset_id || '/' || config) FROM current_measurements")[1][0][0]
        ctx.phase("counting")
        return {"configs": measured, "queued_before": ctx.counts["measure"]["queued"]}

    def summary(self, counts: Counts, end: RunEnd) -> list[str]:
        return [f"configs measured: {counts['configs']}"]


@dataclass
class Broken(Step):
    name: str = "broken"

    def run(self, ctx: RunContext) -> Counts:
        raise BadInputError("planted: a step that cannot go on")


def _runs(db) -> list[dict]:
    with Store(db) as store:
        return store.records("SELECT command, status, counts, error_class, error_message FROM runs ORDER BY started_at")


@pytest.fixture(scope="module")
def audited(tmp_path_factory, shared_datasets):
    """A DB holding one config measured by an audit of real data (CogComp/trec); nothing crawled, so
    the runs on it queue no job and never call the Hub."""
    from hubsurvey.survey.audit import audit

    db = tmp_path_factory.mktemp("audited") / "s.duckdb"
    audit(str(shared_datasets / "CogComp__trec"), db=db, dataset_id="CogComp/trec", near=False, examples=0)
    return db


def _measured_db(tmp_path, audited):
    """A copy of the audited DB (its file; the runs here never read the fingerprints)."""
    db = tmp_path / "s.duckdb"
    shutil.copyfile(audited, db)
    return db


@pytest.mark.slow
def test_a_new_step_is_one_class_and_one_line_and_runs_recorded(tmp_path, audited):
    db = _measured_db(tmp_path, audited)
    steps = [*run_steps(), ShareOfConfigsMeasured()]  # the one line a new step adds to the list
    options = RunOptions(crawl=False, crossleaks=False, workers=1)
    summary = run_survey(db, HubClient(**OFFLINE), None, options, steps=steps)
    assert summary.status == "done" and summary.queued == 0
    assert summary.steps["configs_measured"] == {"configs": 1, "queued_before": 0}
    (audited, run) = _runs(db)
    assert audited["command"] == "audit" and run["command"] == "run" and run["status"] == "done"
    counts = json.loads(run["counts"])
    assert counts["configs_measured"] == {"configs": 1, "queued_before": 0}
    # the counts the runs row held before steps had names keep their places
    assert list(counts)[:12] == ["queued", "done", "failed", "retried", "left_pending", "rows", "data_rows", "crawl",
                                 "crossleaks", "seconds", "measure_seconds", "job_seconds"]
    assert counts["crawl"] is None and counts["crossleaks"] is None
    # the step's own line, after the run's (the measure step's) and before the report's (none here)
    lines = summary.lines()
    assert lines[-1] == "configs measured: 1" and lines[0].startswith(f"run {summary.run_id} done: 0 job(s) done")
    assert not summary.partial


@pytest.mark.slow
def test_a_step_that_fails_fails_the_run_recorded_and_the_steps_after_it_do_not_run(tmp_path, audited):
    db = _measured_db(tmp_path, audited)
    after = ShareOfConfigsMeasured()
    with pytest.raises(BadInputError, match="planted"):
        run_survey(db, HubClient(**OFFLINE), None, RunOptions(crawl=False, crossleaks=False),
                   steps=[*run_steps(), Broken(), after])
    run = _runs(db)[-1]
    assert run["status"] == "failed" and run["error_class"] == "bad_input" and "planted" in run["error_message"]
    assert "configs_measured" not in json.loads(run["counts"])
    # the lock and the live state are released: the next run starts
    assert run_survey(db, HubClient(**OFFLINE), None, RunOptions(crawl=False, crossleaks=False), steps=[]).status == "done"
    assert not (tmp_path / "s.duckdb.run.json").exists()


def test_recording_records_done_a_chosen_status_failed_and_interrupted(tmp_path):
    with Store(tmp_path / "r.duckdb") as store:
        runs = Runs(store)
        with runs.recording("crawl", {"x": 1}) as ok:
            ok.counts = {"listed": 3}
        with runs.recording("run") as timed_out:
            timed_out.status = RunStatus.TIMED_OUT
        with pytest.raises(BadInputError), runs.recording("audit") as failed:  # noqa: PT012
            failed.counts = lambda: {"configs": 2}  # read when the run ends
            raise BadInputError("a planted failure")
        with pytest.raises(KeyboardInterrupt), runs.recording("crossleaks"):
            raise KeyboardInterrupt
        got = store.records("SELECT command, status, counts, error_class, args FROM runs ORDER BY started_at, run_id")
    by_command = {r["command"]: r for r in got}
    assert by_command["crawl"]["status"] == "done" and json.loads(by_command["crawl"]["counts"]) == {"listed": 3}
    assert json.loads(by_command["crawl"]["args"]) == {"x": 1}
    assert by_command["run"]["status"] == "timed_out"
    assert by_command["audit"]["status"] == "failed" and by_command["audit"]["error_class"] == "bad_input"
    assert json.loads(by_command["audit"]["counts"]) == {"configs": 2}
    assert by_command["crossleaks"]["status"] == "interrupted" and by_command["crossleaks"]["error_class"] is None
    assert all(r["status"] != "running" for r in got)


def test_executors_come_from_the_registry_by_name(tmp_path):
    from hubsurvey.survey.executors import EXECUTORS, DaskExecutor, LocalExecutor, open_executor

    assert dict(EXECUTORS) == {"local": LocalExecutor, "dask": DaskExecutor}
    with Store(tmp_path / "e.duckdb") as store:
        ctx = RunContext(store, HubClient(**OFFLINE, cache_dir=tmp_path / "cache"), Settings(),
                         RunOptions(executor="ray"), "run-x")
        with pytest.raises(UsageError, match="ray"):
            open_executor(ctx)
        with pytest.raises(UsageError, match="needs the scheduler's address"):  # the command line's check, the same
            open_executor(RunContext(store, ctx.client, Settings(), RunOptions(executor="dask"), "run-x"))
        local = open_executor(RunContext(store, ctx.client, Settings(), RunOptions(workers=1), "run-x"))
        try:
            assert isinstance(local, LocalExecutor) and local.capacity == 2 and local.inflight == 0
            assert local.completed(timeout=0.01) == []
        finally:
            local.close()


def test_run_options_are_recorded_from_their_fields():
    options = RunOptions(workers=2, retry_failed=("timeout",), report_dir=None, executor="local")
    recorded = options.as_json()
    assert recorded["workers"] == 2 and recorded["retry_failed"] == ["timeout"] and recorded["executor"] == "local"
    assert json.loads(json.dumps(recorded)) == recorded


def test_each_step_prints_its_own_line_as_the_readme_shows_a_demo_run():
    """The lines `run` prints come from the steps, in their order, errors last: the counts of the
    README's demo run give its lines exactly, and its runs row keeps the layout `status` prints."""
    from hubsurvey.pipeline import RunSummary

    counts = {
        "crawl": {"listed": 24, "eligible": 15, "excluded": {"disabled": 1, "error:ArrowInvalid": 1, "gated": 2,
                  "no_parquet_export": 1, "no_test_split": 1, "not_text": 2, "too_many_rows": 1}},
        "benchmarks": {},
        "measure": {"queued": 16, "done": 16, "failed": 0, "retried": 0, "left_pending": 0, "rows": 18, "data_rows": 9616,
                    "measure_seconds": 16.433, "job_seconds": 20.915},
        "crossleaks": {"test_splits": 16, "files": 44, "rows": 9616, "missing": 0, "pairs": 13, "copies": 2, "leaks": 7,
                       "families": 1, "seconds": 0.92},
        "contamination": {"checked": 0, "failed": 0},
        "exposure": {"datasets_contaminated": 8, "datasets_looked_up": 8, "datasets_unchanged": 0, "datasets_capped": 0,
                     "models": 17, "datasets_failed": 0, "datasets_left": 0, "datasets_cleared": 0},
        "scores": {"datasets_surveyed": 15, "datasets_looked_up": 15, "datasets_capped": 0, "datasets_unchanged": 0,
                   "models": 18, "scores": 11, "split_unknown": 1, "api_calls": 15, "file_calls": 4, "failed": 0},
        "report": {},
    }
    summary = RunSummary("run-20261206T032344Z-d287df", "done", steps=counts, seconds=114.1,
                         report=["hubsurvey-demo/report/REPORT.md", "hubsurvey-demo/report/report.html"])
    assert summary.lines() == [
        'crawl: listed 24, eligible 15, excluded 9 {"disabled": 1, "error:ArrowInvalid": 1, "gated": 2, '
        '"no_parquet_export": 1, "no_test_split": 1, "not_text": 2, "too_many_rows": 1}',
        "run run-20261206T032344Z-d287df done: 16 job(s) done, 0 failed, 0 left pending, 18 row(s) stored in 114.1 s",
        "crossleaks: 16 test split(s) against 44 fingerprint file(s) (9616 rows): 13 overlap(s), 7 leak(s), "
        "2 copy relation(s), 1 family in 0.9 s",
        "exposure: 8 contaminated dataset(s), 8 listed on the Hub (0 at the cap), 0 unchanged since their last "
        "listing, 17 model(s) found, 0 failed",
        "scores: 15 surveyed dataset(s), 15 listed on the Hub (0 at the cap), 0 unchanged since their last listing, "
        "18 model(s) read, 11 score(s) stored (1 split unknown), 15 API and 4 file call(s), 0 failed",
        "report: hubsurvey-demo/report/REPORT.md, hubsurvey-demo/report/report.html",
    ]
    assert not summary.partial and summary.done == 16 and summary.crossleaks["leaks"] == 7
    recorded = summary.counts()
    assert list(recorded) == ["queued", "done", "failed", "retried", "left_pending", "rows", "data_rows", "crawl",
                              "crossleaks", "seconds", "measure_seconds", "job_seconds", "contamination", "exposure",
                              "scores"]
    # one job failed and a benchmark not indexed: the error comes last, and the run is partial
    failed = RunSummary("run-x", "done", steps={**counts, "measure": {**counts["measure"], "failed": 1},
                                                "benchmarks": {"not_indexed": ["benchmark a/b/test: gone"]}})
    assert failed.lines()[-1] == "error: benchmark a/b/test: gone" and failed.partial and failed.failed == 1
