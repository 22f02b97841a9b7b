"""The survey runner end to end against the stand-in: truth, kill -9 and resume, faults, Dask,
increments, the lock, max-hours, status."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import standin_client
from leaks import secret_hits
from typer.testing import CliRunner

from hubsurvey.cli import app
from hubsurvey.core.figures import figure_names
from hubsurvey.core.hub import HubClient
from hubsurvey.core.store import Store
from hubsurvey.crawler.crawl import crawl
from hubsurvey_standin import Faults, Scope, StandinHub

FIGURE_COLUMNS = figure_names()
from hubsurvey.pipeline import RunLockedError, RunOptions, acquire_lock, run_survey

ROW_COLUMNS = "measurement_id, dataset_id, revision_sha, config, label_column, text_columns, rows_train, rows_validation, rows_test, " + ", ".join(FIGURE_COLUMNS)


def rows(db: Path) -> list[tuple]:
    with Store(db) as store:
        return store.query(f"SELECT {ROW_COLUMNS} FROM measurements ORDER BY measurement_id")[1]


def survey(hub: StandinHub, db: Path, tmp_path: Path, **options):
    options.setdefault("workers", 2)
    return run_survey(db, standin_client(hub, tmp_path / "cache"), None, RunOptions(**options))


@pytest.fixture(scope="module")
def clean_run(minihub, tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("clean")
    with StandinHub(minihub) as hub:
        summary = survey(hub, tmp / "clean.duckdb", tmp)
    assert summary.status == "done" and summary.failed == 0
    return tmp / "clean.duckdb"


@pytest.mark.slow
def test_a_run_measures_exactly_the_planted_truth(minihub, clean_run):
    truth = json.loads((minihub / "truth.json").read_text())["measurements"]
    with Store(clean_run) as store:
        got = store.records(f"SELECT {ROW_COLUMNS} FROM measurements")
    assert len(got) == len(truth)
    by_key = {(r["dataset_id"], r["config"], r["label_column"]): r for r in got}
    for t in truth:
        row = by_key[(t["dataset_id"], t["config"], t["label_column"])]
        assert row["text_columns"] == t["text_columns"]
        for name, value in t["figures"].items():
            if value is not None and name.endswith("test_biased"):
                assert row[name] == pytest.approx(value), (t["dataset_id"], name)
            else:
                assert row[name] == value, (t["dataset_id"], name)
    with Store(clean_run) as store:
        (run,) = store.records("SELECT * FROM runs")
        assert run["status"] == "done" and json.loads(run["counts"])["done"] == len(store.query("SELECT DISTINCT dataset_id, config FROM measurements")[1])
        # rows/s counts dataset rows measured: every split's rows of every config, once per config
        data_rows = store.query("SELECT sum(n) FROM (SELECT DISTINCT dataset_id, config, "
                                "coalesce(rows_train, 0) + coalesce(rows_validation, 0) + coalesce(rows_test, 0) AS n FROM measurements)")[1][0][0]
        assert json.loads(run["counts"])["data_rows"] == data_rows > json.loads(run["counts"])["rows"]
        assert store.query("SELECT count(*) FROM jobs WHERE status <> 'done'")[1][0][0] == 0


def _cli_run(db: Path, env: dict, *extra: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "hubsurvey.cli", "run", "--db", str(db), "--rate", "0", "--file-rate", "0",
         "--workers", "2", "--report-dir", str(db.parent / "out"), *extra],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
    )


def _wait_for_run(db: Path, launched: float, proc: subprocess.Popen, timeout: float = 60.0) -> None:
    """Until this run has written its holder file (it holds the lock and is opening the DB)."""
    holder = Path(f"{db}.run.json")
    deadline = time.time() + timeout
    while time.time() < deadline and proc.poll() is None:
        if holder.exists() and holder.stat().st_mtime >= launched:
            return
        time.sleep(0.05)


@pytest.mark.slow
def test_kill_9_at_random_points_and_resume_gives_the_clean_rows(minihub, clean_run, tmp_path):
    expected = rows(clean_run)
    rng = random.Random(7)
    # Slow responses stretch the run so that the kills land in the crawl, the queue and the jobs.
    slow = Faults(slow_ms=150, scope=Scope(categories=frozenset({"list", "tree", "resolve_get", "resolve_head"})))
    with StandinHub(minihub, faults=slow) as hub:
        env = {**os.environ, "HF_ENDPOINT": hub.url, "HF_HUB_CACHE": str(tmp_path / "cache")}
        db = tmp_path / "killed.duckdb"
        kills = attempts = 0
        while kills < 5 and attempts < 12:  # a run that finishes before its kill does not count
            attempts += 1
            launched = time.time()
            proc = _cli_run(db, env)
            if attempts % 2:  # every other kill lands once the run has started (whatever the load)
                _wait_for_run(db, launched, proc)
            time.sleep(rng.uniform(0.5, 3.5))
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                kills += 1
            proc.wait()
        assert kills >= 5
        final = _cli_run(db, env)
        _out, err = final.communicate(timeout=300)
        assert final.returncode == 0, err.decode()
    assert rows(db) == expected  # none lost, none duplicated
    with Store(db) as store:
        assert store.query("SELECT count(*) FROM jobs WHERE status <> 'done'")[1][0][0] == 0
        statuses = [r[0] for r in store.query("SELECT status FROM runs ORDER BY started_at")[1]]
        # No attempt was lost to a kill: every job was measured in one counted attempt.
        assert store.query("SELECT max(attempts) FROM jobs")[1][0][0] == 1
    # The killed runs never finished: the next run marked them interrupted (their process is gone).
    # (A kill that lands while Python is still starting leaves no row.)
    assert statuses[-1] == "done" and len(statuses) >= 2 and set(statuses[:-1]) == {"interrupted"}


@pytest.mark.slow
def test_faults_during_a_survey_complete_with_failures_recorded(minihub, clean_run, tmp_path):
    faults = Faults(
        error_burst_every=11, error_burst_len=1, error_status=503,
        reset_every=13,
        scopes={"reset": Scope(categories=frozenset({"resolve_get"}))},
    )
    with StandinHub(minihub, faults=faults) as hub:
        summary = survey(hub, tmp_path / "f.duckdb", tmp_path)
        injected = hub.stats()["faults_injected"]
    assert injected > 0 and summary.status == "done"
    assert rows(tmp_path / "f.duckdb") == rows(clean_run)  # transient faults were retried
    # A permanent fault in the data: the job fails with its class and message, the others finish.
    truth = json.loads((minihub / "truth.json").read_text())
    eligible = sorted(k for k, v in truth["expected"].items() if v == "eligible")
    with StandinHub(minihub) as hub:
        db = tmp_path / "p.duckdb"
        with Store(db) as store:  # crawl cleanly first, then the data goes bad before measuring
            from hubsurvey.crawler.crawl import crawl

            crawl(store, standin_client(hub, tmp_path / "c2"))
        hub.set_faults(Faults(corrupt_parquet=(eligible[0],)))
        summary = run_survey(db, standin_client(hub, tmp_path / "c2"), None, RunOptions(workers=2, crawl=False))
    assert summary.failed >= 1 and summary.done >= len(eligible) - 1
    with Store(db) as store:
        failed = store.records("SELECT dataset_id, error_class, error_message FROM jobs WHERE status = 'failed'")
    assert {f["dataset_id"] for f in failed} == {eligible[0]}
    assert all(f["error_class"] == "unreadable" and eligible[0] in f["error_message"] for f in failed)


@pytest.mark.slow
def test_dask_local_cluster_equals_the_local_run(minihub, clean_run, tmp_path):
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(  # noqa: SIM117
       n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        with StandinHub(minihub) as hub:
            summary = survey(hub, tmp_path / "d.duckdb", tmp_path, executor="dask",
                             executor_options={"dask": cluster.scheduler_address})
    assert summary.status == "done" and summary.failed == 0
    assert rows(tmp_path / "d.duckdb") == rows(clean_run)


@pytest.mark.slow
def test_incremental_only_the_changed_dataset_is_measured_again(minihub, tmp_path):
    db = tmp_path / "i.duckdb"
    with StandinHub(minihub) as hub:
        first = survey(hub, db, tmp_path)
        second = survey(hub, db, tmp_path)
        assert second.queued == 0 and second.done == 0
        with Store(db) as store:
            target = store.query("SELECT dataset_id FROM measurements ORDER BY dataset_id LIMIT 1")[1][0][0]
            configs = store.query("SELECT count(DISTINCT config) FROM measurements WHERE dataset_id = $d", {"d": target})[1][0][0]
        hub.set_sha(target, "e" * 40)
        third = survey(hub, db, tmp_path)
    assert first.done > 1 and third.done == configs
    with Store(db) as store:
        measured = store.query("SELECT DISTINCT dataset_id FROM measurements WHERE run_id = $r", {"r": third.run_id})[1]
        assert measured == [(target,)]
        assert store.query("SELECT revision_sha FROM current_measurements WHERE dataset_id = $d LIMIT 1", {"d": target})[1][0][0] == "e" * 40


@pytest.mark.slow
def test_a_second_run_on_the_same_db_is_refused(minihub, tmp_path):
    db = tmp_path / "l.duckdb"
    lock = acquire_lock(db)
    try:
        with StandinHub(minihub) as hub:
            with pytest.raises(RunLockedError, match="in use by another run"):
                survey(hub, db, tmp_path)
            result = CliRunner().invoke(app, ["run", "--db", str(db), "--rate", "0"], env={"HF_ENDPOINT": hub.url})
        assert result.exit_code == 3 and "in use by another run" in result.stderr
    finally:
        lock.release()


@pytest.mark.slow
def test_max_hours_stops_taking_jobs_and_the_queue_resumes(minihub, clean_run, tmp_path):
    """A run out of time in its crawl ends timed_out, not failed; one out of time after its crawl
    takes no job and leaves them all pending; the next run takes them."""
    db = tmp_path / "m.duckdb"
    with StandinHub(minihub) as hub:
        in_crawl = survey(hub, tmp_path / "c.duckdb", tmp_path, max_hours=1e-9)
        assert in_crawl.status == "timed_out" and in_crawl.steps["crawl"]["out_of_time"] is True
        with Store(db) as store:
            crawl(store, standin_client(hub, tmp_path / "cache"))
        stopped = survey(hub, db, tmp_path, max_hours=1e-9, crawl=False)
        assert stopped.status == "timed_out" and stopped.done == 0 and stopped.left_pending == stopped.queued > 0
        with Store(db) as store:
            assert store.query("SELECT count(*) FROM jobs WHERE status = 'pending'")[1][0][0] == stopped.queued
        resumed = survey(hub, db, tmp_path)
    assert resumed.status == "done" and resumed.done == stopped.queued
    assert rows(db) == rows(clean_run)


@pytest.mark.slow
def test_runs_record_arguments_without_secrets_and_status_summarises(minihub, tmp_path, monkeypatch):
    token = "hf_RunnerSecretToken_55555"
    db = tmp_path / "s.duckdb"
    with StandinHub(minihub, valid_tokens={token}) as hub:
        monkeypatch.setenv("HF_TOKEN", token)
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "cache"))
        result = CliRunner().invoke(app, ["run", "--db", str(db), "--rate", "0", "--file-rate", "0", "--report-dir", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "out" / "report.html").exists()
    assert not secret_hits(token, db=db, texts={"output": result.output}, paths=[tmp_path / "out"])
    with Store(db) as store:
        (run,) = store.records("SELECT args, status FROM runs")
    assert json.loads(run["args"])["filters"]["max_rows"] == 1_000_000 and run["status"] == "done"
    status = CliRunner().invoke(app, ["status", "--db", str(db)])
    assert status.exit_code == 0
    assert "last run: run-" in status.stdout and "queue: done" in status.stdout


def _big_split(folder: Path, rows: int) -> str:
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    texts = pa.array([f"t{i} {i % 997}" for i in rng.integers(0, rows * 10, rows)])
    pq.write_table(pa.table({"text": texts, "label": pa.array(rng.integers(0, 5, rows))}), folder / "0000.parquet")
    return str(folder / "0000.parquet")


@pytest.mark.parametrize(
    "timeout,memory_mb,error_class",
    # 10 s: a cold worker's first small job takes ~0.6 s on an idle machine (its imports, the compiled
    # passes loaded) and several seconds at load 8. The big job, 6M rows, takes ~18 s with every
    # method as a whole audit on 2 cores (1.6 GB): 3M rows, once ~30 s, now end in under 10 s.
    [(10.0, 4096, "timeout"), (1800.0, 20, "memory_limit")],
    ids=["timeout", "memory-ceiling"],
)
@pytest.mark.slow
def test_a_job_over_its_timeout_or_memory_ceiling_fails_alone(tmp_path, timeout, memory_mb, error_class):
    """A real slow job (6M rows take seconds to measure) and a real ceiling, in real worker processes;
    the small job beside them still succeeds when only the ceiling or the timeout is hit by the big one."""
    from hubsurvey.core.queue import QueuedJob
    from hubsurvey.survey.executors import LocalExecutor
    from hubsurvey.survey.jobs import JobSpec

    big = _big_split(tmp_path / "big" / "train", 6_000_000)
    test = _big_split(tmp_path / "big" / "test", 1000)
    small = _big_split(tmp_path / "small" / "test", 10)
    executor = LocalExecutor(HubClient(endpoint="http://127.0.0.1:9", token=False), workers=2, job_timeout=timeout, memory_mb=memory_mb)
    try:
        slow = executor.submit(JobSpec(QueuedJob("big", "org/big", "0" * 40, "default", 1, {}),
                                       local_files={"train": [big], "test": [test]}))
        quick = executor.submit(JobSpec(QueuedJob("small", "org/small", "0" * 40, "default", 1, {}), local_files={"test": [small]}))
        slow_result, quick_result = slow.result(timeout=120), quick.result(timeout=120)
    finally:
        executor.close()
    assert slow_result.ok is False and slow_result.error_class == error_class
    assert slow_result.message.startswith("org/big [default]: ")
    if error_class == "timeout":
        assert slow_result.message == "org/big [default]: took longer than 10 s"
        assert quick_result.ok is True and quick_result.rows[0]["rows_test"] == 10
    else:  # 20 MB is below any worker's footprint: every job hits the ceiling, each one alone
        assert quick_result.error_class == "memory_limit"


@pytest.mark.slow
def test_failed_jobs_are_recorded_and_the_run_goes_on(minihub, tmp_path):
    db = tmp_path / "t.duckdb"
    with StandinHub(minihub) as hub:
        summary = survey(hub, db, tmp_path, memory_mb=20)
    assert summary.status == "done" and summary.failed == summary.queued > 0 and summary.done == 0
    with Store(db) as store:
        assert store.query("SELECT DISTINCT error_class, status FROM jobs")[1] == [("memory_limit", "failed")]
        assert store.query("SELECT count(*) FROM measurements")[1][0][0] == 0


@pytest.mark.slow
def test_roles_override_reaches_the_workers(minihub, tmp_path):
    truth = json.loads((minihub / "truth.json").read_text())["measurements"]
    target = next(t for t in truth if t["label_column"])
    roles = tmp_path / "roles.toml"
    roles.write_text(f'["{target["dataset_id"]}"."*"]\ntext = {json.dumps(target["text_columns"])}\nlabels = []\n')
    db = tmp_path / "o.duckdb"
    with StandinHub(minihub) as hub:
        summary = survey(hub, db, tmp_path, roles_file=str(roles))
    assert summary.failed == 0
    with Store(db) as store:
        rows_ = store.records("SELECT label_column, roles_source FROM measurements WHERE dataset_id = $d", {"d": target["dataset_id"]})
        others = store.query("SELECT DISTINCT roles_source FROM measurements WHERE dataset_id <> $d", {"d": target["dataset_id"]})[1]
    assert rows_ and all(r == {"label_column": None, "roles_source": "override"} for r in rows_)
    assert others == [("inferred",)]


@pytest.mark.slow
def test_measuring_during_the_crawl_starts_jobs_before_the_listing_ends_and_stores_the_same_rows(minihub, clean_run, tmp_path):
    """With measure_during_crawl the workers take each page's eligible datasets while the crawl
    lists the next pages (slowed here, two datasets a page); the stored rows are the clean run's,
    and the crawl's counts are recorded under its name as after a crawl run first."""
    slow_listing = Faults(slow_ms=300, scope=Scope(categories=frozenset({"list"})))

    def first_job_and_listing_end(db: Path) -> tuple:
        with Store(db) as store:
            return store.query("SELECT (SELECT min(started_at) FROM jobs), (SELECT max(completed_at) FROM crawl_listings)")[1][0]

    with StandinHub(minihub, faults=slow_listing, page_size=2) as hub:
        beside = survey(hub, tmp_path / "beside.duckdb", tmp_path, measure_during_crawl=True)
        after = survey(hub, tmp_path / "after.duckdb", tmp_path)
    assert beside.status == after.status == "done" and beside.failed == 0
    assert rows(tmp_path / "beside.duckdb") == rows(clean_run)
    assert beside.done == after.done and beside.queued == after.queued
    untimed = [{k: v for k, v in counts.items() if k != "seconds"} for counts in (beside.crawl, after.crawl)]
    assert untimed[0] == untimed[1] and beside.crawl["listed"] > 4  # several pages; the crawl's own calls alone
    started, listed = first_job_and_listing_end(tmp_path / "beside.duckdb")
    assert started < listed  # a job ran while the crawl was still listing
    started, listed = first_job_and_listing_end(tmp_path / "after.duckdb")
    assert started > listed


@pytest.mark.slow
def test_a_listing_that_fails_during_the_measurement_ends_the_run_and_the_next_run_completes(minihub, clean_run, tmp_path):
    """The Hub fails the listing after a few pages while jobs run beside it: the run fails with the
    crawl's Hub error (as a run that crawls first does), what was written stays, no job is left
    running, and the next run lists the rest and stores the clean run's rows."""
    from hubsurvey.core.errors import HubError

    db = tmp_path / "f.duckdb"
    failing_listing = Faults(error_burst_every=4, error_burst_len=1000, scope=Scope(categories=frozenset({"list"})))
    with StandinHub(minihub, faults=failing_listing, page_size=2) as hub, pytest.raises(HubError, match="listing datasets"):
        survey(hub, db, tmp_path, measure_during_crawl=True)
    with Store(db) as store:
        assert store.query("SELECT count(*) FROM datasets")[1][0][0] > 0
        assert store.query("SELECT count(*) FROM jobs WHERE status = 'running'")[1][0][0] == 0
        assert store.query("SELECT status FROM runs")[1] == [("failed",)]
    with StandinHub(minihub, page_size=2) as hub:
        resumed = survey(hub, db, tmp_path, measure_during_crawl=True)
    assert resumed.status == "done" and resumed.failed == 0
    assert rows(db) == rows(clean_run)


@pytest.mark.slow
def test_jobs_left_pending_wait_for_the_crawl_to_confirm_their_revision(minihub, tmp_path):
    """Jobs an earlier run left pending are held until the crawl beside the jobs has listed their
    dataset again: one whose dataset moved to a new revision meanwhile is superseded, never
    measured, and the new revision is; the others are measured as queued. The moved dataset's
    pending job is the first in the queue and the listing's first page takes a second, so a job
    taken before the crawl confirms it would be measured at the old revision."""
    db = tmp_path / "h.duckdb"
    with StandinHub(minihub, page_size=2) as hub:
        with Store(db) as store:
            crawl(store, standin_client(hub, tmp_path / "cache"))
        stopped = survey(hub, db, tmp_path, max_hours=1e-9, crawl=False)
        assert stopped.done == 0 and stopped.left_pending > 1
        with Store(db) as store:
            target = store.query("SELECT dataset_id FROM jobs ORDER BY dataset_id LIMIT 1")[1][0][0]
        hub.set_sha(target, "e" * 40)
        hub.set_faults(Faults(slow_ms=1000, scope=Scope(categories=frozenset({"list"}))))
        beside = survey(hub, db, tmp_path, measure_during_crawl=True)
    assert beside.status == "done" and beside.failed == 0
    with Store(db) as store:
        measured = store.query("SELECT DISTINCT revision_sha FROM measurements WHERE dataset_id = $d", {"d": target})[1]
        statuses = dict(store.query("SELECT revision_sha, status FROM jobs WHERE dataset_id = $d", {"d": target})[1])
        assert store.query("SELECT count(*) FROM jobs WHERE status NOT IN ('done', 'superseded')")[1][0][0] == 0
    assert measured == [("e" * 40,)]
    assert statuses["e" * 40] == "done" and set(statuses.values()) == {"done", "superseded"}


@pytest.mark.slow
def test_a_survey_of_files_the_card_names_stores_the_rows_of_a_survey_that_lists_every_branch(shared_datasets, tmp_path):
    """Datasets as push_to_hub leaves them: the crawl names their Parquet files from the card
    (no API call); the jobs download and measure exactly what they measure when every branch is
    listed."""
    from hubsurvey.crawler.rules import CrawlFilters

    ids = ["CogComp/trec", "community-datasets/definite_pronoun_resolution", "universal-dependencies/universal_dependencies"]
    entries = [{"id": e["id"], "tags": e["tags"], "dir": str(shared_datasets / e["id"].replace("/", "__")), "pushed": True}
               for e in json.loads((shared_datasets / "index.json").read_text()) if e["id"] in ids]
    (tmp_path / "hub").mkdir()
    (tmp_path / "hub" / "index.json").write_text(json.dumps(entries))
    with StandinHub(tmp_path / "hub") as hub:
        named = run_survey(tmp_path / "named.duckdb", standin_client(hub, tmp_path / "c1"), None, RunOptions(workers=2))
        api_named = hub.stats()["info"]
        listed = run_survey(tmp_path / "listed.duckdb", standin_client(hub, tmp_path / "c2"),
                            CrawlFilters(list_every_branch=True), RunOptions(workers=2))
        api_listed = hub.stats()["info"] - api_named
    assert named.status == listed.status == "done" and named.failed == listed.failed == 0
    assert (api_named, api_listed) == (0, 3) and named.crawl["from_card"] == 3
    assert rows(tmp_path / "named.duckdb") == rows(tmp_path / "listed.duckdb") and len(rows(tmp_path / "named.duckdb")) >= 4


@pytest.mark.slow
def test_a_job_whose_parquet_commit_is_gone_reads_the_branch_at_its_new_commit(shared_datasets, tmp_path):
    """The converter rewrites a branch after the crawl (main does not move) and the Hub no longer
    serves the commit the job was queued at: the job reads the same files at the branch's new commit
    and its rows name it, with the figures of the files it read; a rewrite that renames the files
    fails the job alone, in one line naming the dataset, the config and the file, and the next
    crawl (a since-last one) resolves the dataset again, and its job is measured."""
    target = "CogComp/trec"
    shared = json.loads((shared_datasets / "index.json").read_text())
    entries = [{"id": e["id"], "tags": e["tags"], "dir": str(shared_datasets / e["id"].replace("/", "__")),
                "lastModified": "2024-03-01T00:00:00.000Z"} for e in shared if e["id"] == target]
    # a gated dataset modified since, at the head of every listing: a since-last listing stops
    # before the target, which it does not reach
    entries += [{"id": e["id"], "tags": e["tags"], "dir": str(shared_datasets / e["id"].replace("/", "__")),
                 "lastModified": "2025-03-01T00:00:00.000Z", "gated": "auto"} for e in shared if e["id"] != target][:1]
    (tmp_path / "hub").mkdir()
    (tmp_path / "hub" / "index.json").write_text(json.dumps(entries))
    with StandinHub(tmp_path / "hub") as hub:
        control = run_survey(tmp_path / "control.duckdb", standin_client(hub, tmp_path / "c0"), None, RunOptions(workers=1))
        for name in ("moved", "renamed"):
            with Store(tmp_path / f"{name}.duckdb") as store:
                crawl(store, standin_client(hub, tmp_path / f"c-{name}"))
                queued_at = store.query("SELECT parquet_sha FROM datasets WHERE dataset_id = $d", {"d": target})[1][0][0]
            export = hub.catalog.get(target).parquet
            files = {p: b.read() for p, b in export.files.items()}
            if name == "renamed":
                files = {p.replace("0000.parquet", "part-0.parquet"): data for p, data in files.items()}
            new_commit = hub.rewrite_export(target, files)
            assert new_commit != queued_at
            survey = run_survey(tmp_path / f"{name}.duckdb", standin_client(hub, tmp_path / f"c-{name}"), None,
                                RunOptions(crawl=False, workers=1))
            with Store(tmp_path / f"{name}.duckdb") as store:
                measured = store.query("SELECT DISTINCT parquet_sha FROM measurements")[1]
                jobs = store.records("SELECT status, error_class, error_message FROM jobs")
            if name == "moved":
                assert survey.status == "done" and survey.failed == 0 and control.failed == 0
                assert measured == [(new_commit,)]
                assert rows(tmp_path / "moved.duckdb") == rows(tmp_path / "control.duckdb")
            else:
                assert survey.failed == 1 and measured == []
                assert [(j["status"], j["error_class"]) for j in jobs] == [("failed", "parquet_moved")]
                message = jobs[0]["error_message"]
                assert "\n" not in message and target in message and "[default]" in message
                assert "default/test/0000.parquet" in message or "default/train/0000.parquet" in message
                # the next crawl resolves the dataset at its new commit, and the job is measured there: a
                # since-last night too, whose listing does not reach the dataset (main did not move)
                with Store(tmp_path / "renamed.duckdb") as store:
                    night = crawl(store, standin_client(hub, tmp_path / "c-again"), since_last=True)
                assert night.retried == 1 and night.eligible == 1
                again = run_survey(tmp_path / "renamed.duckdb", standin_client(hub, tmp_path / "c-again"), None,
                                   RunOptions(crawl=False, workers=1))
                with Store(tmp_path / "renamed.duckdb") as store:
                    resolved = store.query("SELECT parquet_sha, configs FROM datasets WHERE dataset_id = $d", {"d": target})[1][0]
                    measured = store.query("SELECT DISTINCT parquet_sha FROM measurements")[1]
                assert again.status == "done" and again.failed == 0
                assert resolved[0] == new_commit and "part-0.parquet" in resolved[1] and measured == [(new_commit,)]
                assert rows(tmp_path / "renamed.duckdb") == rows(tmp_path / "control.duckdb")
