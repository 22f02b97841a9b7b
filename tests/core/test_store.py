"""The store as the only writer: the job queue's transitions, the runs API, and a DB that cannot be
used (read-only folder, full disk, a foreign DuckDB file, a SQLite file) refused in one line."""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import duckdb
import pytest
from typer.testing import CliRunner

from hubsurvey.cli import app
from hubsurvey.core.errors import ExitCode, StoreError, exit_code_of
from hubsurvey.core.hub import CallTally
from hubsurvey.core.queue import JobOutcome, JobQueue, JobStatus
from hubsurvey.core.runs import Runs, RunStatus
from hubsurvey.core.status import status
from hubsurvey.core.store import Store, now
from hubsurvey.pipeline import acquire_lock

SHA = "a" * 40


def _datasets(store: Store, n: int = 3) -> None:
    """n eligible crawled datasets of one config with a test split each."""
    store.upsert_datasets([
        {"dataset_id": f"org/d{i}", "sha": SHA, "status": "eligible", "first_seen": now(), "last_seen": now(),
         "configs": {"default": {"test": {"files": [f"default/test/{i}.parquet"], "rows": 1}}}}
        for i in range(n)
    ])


def _row(job) -> dict:
    """A minimal measurements row for a job (the figures are NULL)."""
    return {"measurement_id": f"{job.job_id}#", "dataset_id": job.dataset_id, "revision_sha": job.revision_sha,
            "config": job.config, "text_columns": ["text"], "roles_source": "inferred", "dataset_name": job.dataset_id,
            "test_split": "test", "rows_test": 1, "source": "hub", "method": "lle-2024", "method_version": 1,
            "tool_version": "test", "measured_at": now()}


def _statuses(store: Store) -> dict[str, str]:
    return dict(store.query("SELECT dataset_id, status FROM jobs ORDER BY dataset_id")[1])


# --- the job queue ---------------------------------------------------------------------------------

@pytest.mark.slow
def test_a_job_killed_with_its_run_goes_back_to_pending_without_losing_an_attempt(tmp_path):
    with Store(tmp_path / "q.duckdb") as store:
        _datasets(store, 1)
        (job,) = JobQueue(store).enqueue("run-1")
        JobQueue(store).mark_running(job.job_id, "run-1")
        # run-1 is killed here; the next run finds the job running
        (again,) = JobQueue(store).enqueue("run-2")
        assert again.job_id == job.job_id
        assert store.query("SELECT status, attempts FROM jobs")[1] == [("pending", 0)]


@pytest.mark.slow
def test_rows_and_done_are_one_transaction_and_attempts_count_when_they_end(tmp_path):
    with Store(tmp_path / "q.duckdb") as store:
        _datasets(store, 1)
        queue = JobQueue(store)
        (job,) = queue.enqueue("run-1")
        queue.mark_running(job.job_id, "run-1")
        bad = {**_row(job), "rows_test": None}  # NOT NULL: the insert fails inside the transaction
        with pytest.raises(duckdb.ConstraintException):
            queue.record(job, JobOutcome.success([_row(job), bad], seconds=1.0))
        assert store.query("SELECT count(*) FROM measurements")[1] == [(0,)]
        assert store.query("SELECT status, attempts FROM jobs")[1] == [("running", 0)]
        assert queue.record(job, JobOutcome.success([_row(job)], seconds=1.0)) is JobStatus.DONE
        assert store.query("SELECT count(*) FROM measurements")[1] == [(1,)]
        assert store.query("SELECT status, attempts, seconds FROM jobs")[1] == [("done", 1, 1.0)]


@pytest.mark.slow
def test_failures_stay_failed_unless_transient_or_retried_by_class(tmp_path):
    with Store(tmp_path / "q.duckdb") as store:
        _datasets(store, 3)
        queue = JobQueue(store, max_attempts=2)
        jobs = {j.dataset_id: j for j in queue.enqueue("run-1")}
        outcomes = {
            "org/d0": JobOutcome.failure("timeout", "took too long"),
            "org/d1": JobOutcome.failure("memory_limit", "too big"),
            "org/d2": JobOutcome.failure("HfHubHTTPError", "503", transient=True),
        }
        for dataset_id, outcome in outcomes.items():
            queue.mark_running(jobs[dataset_id].job_id, "run-1")
            queue.record(jobs[dataset_id], outcome)
        # the transient one is retried within the run until its attempts are used up
        assert _statuses(store)["org/d2"] == "pending"
        assert queue.record(jobs["org/d2"], outcomes["org/d2"]) is JobStatus.FAILED
        assert set(_statuses(store).values()) == {"failed"}

        # The next run retries the transient failure (its attempts were this run's), not the others.
        assert [j.dataset_id for j in JobQueue(store, max_attempts=2).enqueue("run-2")] == ["org/d2"]
        assert _statuses(store) == {"org/d0": "failed", "org/d1": "failed", "org/d2": "pending"}
        # --retry-failed timeout: that class only; --retry-failed (all): every class
        assert [j.dataset_id for j in JobQueue(store).enqueue("run-3", ("timeout",))] == ["org/d0", "org/d2"]
        assert [j.dataset_id for j in JobQueue(store).enqueue("run-4", ())] == ["org/d0", "org/d1", "org/d2"]
        assert store.query("SELECT attempts FROM jobs ORDER BY dataset_id")[1] == [(1,), (1,), (2,)]


def test_pending_jobs_of_an_older_revision_are_superseded(tmp_path):
    with Store(tmp_path / "q.duckdb") as store:
        _datasets(store, 1)
        JobQueue(store).enqueue("run-1")
        store.upsert_datasets([{"dataset_id": "org/d0", "sha": "b" * 40, "status": "eligible", "first_seen": now(),
                                "last_seen": now(), "configs": {"default": {"test": {"files": ["x"], "rows": 1}}}}])
        (job,) = JobQueue(store).enqueue("run-2")
        assert job.revision_sha == "b" * 40
        assert dict(store.query("SELECT revision_sha, status FROM jobs")[1]) == {SHA: JobStatus.SUPERSEDED.value, "b" * 40: "pending"}


def test_job_status_values_are_the_stored_strings():
    assert [s.value for s in JobStatus] == ["pending", "running", "done", "failed", "superseded"]


# --- the runs API ------------------------------------------------------------------------------------

@pytest.mark.slow
def test_a_killed_run_is_marked_interrupted_by_status_and_counts_are_json_once(tmp_path):
    db = tmp_path / "r.duckdb"
    with Store(db) as store:
        runs = Runs(store)
        finished = runs.start("crawl", {"limit": 3})
        runs.finish(finished, RunStatus.DONE, {"listed": 3})
    # A process starts a run and is killed with -9: its row stays 'running'.
    script = textwrap.dedent(f"""
        import os, signal
        from hubsurvey.core.store import Store
        from hubsurvey.core.runs import Runs
        store = Store({str(db)!r})
        Runs(store).start("run", {{}})
        store.con.execute("CHECKPOINT")
        os.kill(os.getpid(), signal.SIGKILL)
    """)
    proc = subprocess.run([sys.executable, "-c", script], check=False)
    assert proc.returncode == -9
    with Store(db, read_only=True) as store:
        assert store.query("SELECT status FROM runs WHERE command = 'run'")[1] == [("running",)]
    info = status(db)
    assert info["last_run"]["status"] == "interrupted"
    with Store(db, read_only=True) as store:
        rows = dict(store.query("SELECT command, status FROM runs")[1])
    assert rows == {"crawl": "done", "run": "interrupted"}
    # status --json: counts is an object, not a JSON string inside JSON
    result = CliRunner().invoke(app, ["status", "--db", str(db), "--json"])
    assert result.exit_code == 0, result.output
    with Store(db) as store:
        Runs(store).finish(finished, RunStatus.DONE, {"listed": 3})
        store.con.execute("DELETE FROM runs WHERE command = 'run'")
    out = json.loads(CliRunner().invoke(app, ["status", "--db", str(db), "--json"]).stdout)
    assert out["last_run"]["counts"] == {"listed": 3}


def test_a_live_run_is_not_marked_interrupted(tmp_path):
    with Store(tmp_path / "r.duckdb") as store:
        runs = Runs(store)
        run_id = runs.start("run")
        assert runs.mark_interrupted() == []
        assert store.query("SELECT status, pid FROM runs WHERE run_id = $r", {"r": run_id})[1] == [("running", os.getpid())]


@pytest.mark.slow
def test_crawl_and_audit_record_their_runs(tmp_path):
    from hubsurvey.crawler.crawl import crawl
    from hubsurvey.survey.audit import audit
    from hubsurvey.survey.sample import write_sample

    class EmptyHub:  # a Hub that lists nothing
        calls = file_calls = 0
        endpoint = "http://127.0.0.1:9"

        def list_dataset_pages(self, **kwargs):
            return iter(())

        @contextlib.contextmanager
        def tally(self):
            yield CallTally()

    db = tmp_path / "c.duckdb"
    with Store(db) as store:
        crawl(store, EmptyHub())
    audit(str(write_sample(tmp_path / "hubsurvey__sample-reviews")), db=db)
    with Store(db, read_only=True) as store:
        runs = store.records("SELECT command, status, counts, pid FROM runs ORDER BY started_at")
    assert [(r["command"], r["status"]) for r in runs] == [("crawl", "done"), ("audit", "done")]
    assert json.loads(runs[0]["counts"])["listed"] == 0 and json.loads(runs[1]["counts"])["rows"] > 0
    assert all(r["pid"] == os.getpid() for r in runs)


# --- a DB that cannot be used --------------------------------------------------------------------------

@contextmanager
def _tmpfs(path: Path, options: str) -> Iterator[Path]:
    """A real small (or read-only) file system; skipped where mounting is not allowed."""
    path.mkdir(parents=True, exist_ok=True)
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(path)], capture_output=True, check=False)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode().strip()}")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


def _one_line_store_error(exc: BaseException) -> str:
    assert isinstance(exc, StoreError) and exit_code_of(exc) == ExitCode.STORE
    text = str(exc)
    assert "\n" not in text
    return text


def test_a_read_only_folder_is_refused_in_one_line(tmp_path):
    with _tmpfs(tmp_path / "ro", "ro,size=1m") as folder:
        db = folder / "results.duckdb"
        with pytest.raises(StoreError) as lock_error:
            acquire_lock(db)
        assert "lock" in _one_line_store_error(lock_error.value) and "Read-only" in str(lock_error.value)
        with pytest.raises(StoreError) as open_error:
            Store(db)
        assert str(db) in _one_line_store_error(open_error.value)
        result = CliRunner().invoke(app, ["run", "--db", str(db), "--rate", "0"], env={"HF_ENDPOINT": "http://127.0.0.1:9"})
    assert result.exit_code == 3, result.output
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.output


@pytest.mark.slow
def test_a_full_disk_during_a_write_is_refused_in_one_line_and_the_db_stays_consistent(tmp_path):
    with _tmpfs(tmp_path / "full", "size=2m") as folder:
        db = folder / "results.duckdb"
        with Store(db) as store:
            runs = Runs(store)
            run_id = runs.start("run")
            runs.finish(run_id, RunStatus.DONE, {"n": 1})
            n = 0
            with pytest.raises(StoreError) as error:  # noqa: PT012 - fill the disk until a write fails
                for i in range(1000):  # each write is ~40 kB of counts: the 2 MB disk fills up
                    runs.finish(run_id, RunStatus.DONE, {"n": i, "blob": os.urandom(20_000).hex()})
                    n = i
        assert "No space left on device" in _one_line_store_error(error.value)
        # Every committed write is there, and none of the refused one.
        with Store(db, read_only=True) as store:
            (counts,) = store.query("SELECT counts FROM runs")[1][0]
        assert json.loads(counts)["n"] == n


def test_a_duckdb_file_of_another_tool_is_refused_in_one_line(tmp_path):
    db = tmp_path / "other.duckdb"
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE measurements (x INTEGER)")
    con.close()
    for read_only in (False, True):
        with pytest.raises(StoreError) as error:
            Store(db, read_only=read_only)
        assert "another tool" in _one_line_store_error(error.value)
    result = CliRunner().invoke(app, ["status", "--db", str(db)])
    assert result.exit_code == 3 and "another tool" in result.stderr


def test_a_sqlite_file_is_refused_without_loading_an_extension(tmp_path, monkeypatch):
    db = tmp_path / "results.sqlite"
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE measurements (x)")
    con.commit()
    con.close()
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # where DuckDB would install an extension
    with pytest.raises(StoreError) as error:
        Store(db)
    assert "SQLite" in _one_line_store_error(error.value)
    assert not (tmp_path / "home").exists()
    result = CliRunner().invoke(app, ["status", "--db", str(db)])
    assert result.exit_code == 3 and "SQLite" in result.stderr


def _older_db(path, monkeypatch, version: int) -> None:
    """A DB made by a hubsurvey that knew only the first ``version`` migrations."""
    import hubsurvey.core.store as store_module

    with monkeypatch.context() as m:
        m.setattr(store_module, "MIGRATIONS", store_module.MIGRATIONS[:version])
        m.setattr(store_module, "SCHEMA_VERSION", version)
        Store(path).close()


@pytest.mark.slow
def test_a_read_command_upgrades_an_older_db_once_then_reads_it(tmp_path, monkeypatch):
    from hubsurvey.core.store import SCHEMA_VERSION

    db = tmp_path / "old.duckdb"
    _older_db(db, monkeypatch, SCHEMA_VERSION - 1)
    with pytest.raises(StoreError) as error:  # read-only as it is: its views would name missing tables
        Store(db, read_only=True)
    assert f"has schema version {SCHEMA_VERSION - 1}, older than" in _one_line_store_error(error.value)
    result = CliRunner().invoke(app, ["sql", "--db", str(db), "--format", "csv", "SELECT max(version) FROM schema_version"])
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[-1] == str(SCHEMA_VERSION)
    with Store(db, read_only=True) as store:  # upgraded for good
        assert store.query("SELECT count(*) FROM cross_overlaps")[1] == [(0,)]


def test_an_older_db_that_cannot_be_upgraded_is_refused_in_one_line(tmp_path, monkeypatch):
    from hubsurvey.core.store import SCHEMA_VERSION

    with _tmpfs(tmp_path / "ro", "size=2m") as folder:
        db = folder / "old.duckdb"
        _older_db(db, monkeypatch, SCHEMA_VERSION - 1)
        subprocess.run(["mount", "-o", "remount,ro", str(folder)], check=True)
        result = CliRunner().invoke(app, ["sql", "--db", str(db), "SELECT 1"])
    assert result.exit_code == 3, result.output
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.output and str(db) in result.stderr
    assert "older than this hubsurvey's" in result.stderr and "cannot be upgraded" in result.stderr


@pytest.mark.slow
def test_a_finished_job_writes_its_rows_and_fingerprints_once_in_its_transaction(tmp_path, shared_datasets, monkeypatch):
    """A real job (CogComp/trec measured by the worker function) recorded by the queue: one write of
    its measurement rows, with their fingerprints, in the transaction that marks it done."""
    from hubsurvey.core.queue import QueuedJob
    from hubsurvey.survey.jobs import JobSpec, run_job

    root = shared_datasets / "CogComp__trec" / "default"
    files = {s: [str(root / s / "0000.parquet")] for s in ("train", "test")}
    outcome = run_job(JobSpec(QueuedJob("CogComp/trec@sha/default", "CogComp/trec", SHA, "default", 1, files),
                              local_files=files))
    assert outcome.ok and outcome.rows and set(outcome.fingerprints) == {"train", "test"}

    writes: list[tuple[str, bool, int]] = []  # (what, in a transaction, fingerprint splits)
    real_measurements, real_fingerprints = Store.replace_measurements, Store.replace_fingerprints

    def measurements(self, *args, **kwargs):
        writes.append(("measurements", self._depth > 0, len(kwargs.get("fingerprints") or {})))
        return real_measurements(self, *args, **kwargs)

    def fingerprints(self, dataset_id, revision_sha, config, prints, **kwargs):
        writes.append(("fingerprints", self._depth > 0, len(prints or {})))
        return real_fingerprints(self, dataset_id, revision_sha, config, prints, **kwargs)

    monkeypatch.setattr(Store, "replace_measurements", measurements)
    monkeypatch.setattr(Store, "replace_fingerprints", fingerprints)
    with Store(tmp_path / "w.duckdb") as store:
        store.upsert_datasets([{"dataset_id": "CogComp/trec", "sha": SHA, "status": "eligible", "first_seen": now(),
                                "last_seen": now(), "configs": {"default": {s: {"files": f} for s, f in files.items()}}}])
        queue = JobQueue(store)
        (job,) = queue.enqueue("run-1")
        queue.mark_running(job.job_id, "run-1")
        assert queue.record(job, outcome, run_id="run-1") is JobStatus.DONE
        assert writes == [("measurements", True, 2), ("fingerprints", True, 2)]
        assert store.query("SELECT count(*) FROM measurements")[1][0][0] == len(outcome.rows)
        assert store.query("SELECT split, run_id FROM fingerprints ORDER BY split")[1] == [("test", "run-1"), ("train", "run-1")]


def _schema(con: duckdb.DuckDBPyConnection) -> tuple[list[tuple], list[tuple]]:
    """Every table's columns in order (name, type, nullability, default) and every constraint; not
    ``schema_version``, which the store keeps beside the migrations."""
    tables = "table_name IN (SELECT table_name FROM duckdb_tables()) AND table_name <> 'schema_version'"
    columns = con.execute("SELECT table_name, column_index, column_name, data_type, is_nullable, column_default "
                          f"FROM duckdb_columns() WHERE database_name = current_database() AND {tables} "
                          "ORDER BY ALL").fetchall()
    constraints = con.execute("SELECT table_name, constraint_type, constraint_text FROM duckdb_constraints() "
                              f"WHERE database_name = current_database() AND {tables} ORDER BY ALL").fetchall()
    return columns, constraints


def test_a_fresh_db_has_the_schema_of_the_migrations_and_one_alter_per_figure_column(tmp_path):
    """A fresh DB's empty figure tables are created again with the registry's columns appended, not
    altered column by column: the result equals the plain way (every migration, then one ALTER per
    registry column the table lacks), column for column and constraint for constraint."""
    from hubsurvey.core.migrations import MIGRATIONS
    from hubsurvey.core.store import FIGURE_TABLES

    plain = duckdb.connect(str(tmp_path / "plain.duckdb"))
    for sql in MIGRATIONS:
        plain.execute(sql)
    for table, declared in FIGURE_TABLES.items():
        have = {c for (c,) in plain.execute("SELECT column_name FROM duckdb_columns() WHERE table_name = $t",
                                            {"t": table}).fetchall()}
        for column in declared():
            if column.name not in have:
                plain.execute(f'ALTER TABLE {table} ADD COLUMN "{column.name}" {column.sql_type}')
    with Store(tmp_path / "fresh.duckdb") as store:
        assert _schema(store.con) == _schema(plain)
        assert sum(len(declared()) for declared in FIGURE_TABLES.values()) > 100  # the registry's, not a few


def test_the_views_are_recreated_only_when_their_signature_differs(tmp_path):
    """A writing open recreates the views when one is missing or does not carry this registry's
    signature (a view replaced by hand, an older hubsurvey's), and leaves them be otherwise."""
    db = tmp_path / "v.duckdb"
    Store(db).close()
    con = duckdb.connect(str(db))
    (signature,) = con.execute("SELECT DISTINCT comment FROM duckdb_views() WHERE view_name = 'lle'").fetchone()
    assert signature.startswith("hubsurvey views ")
    con.execute("CREATE OR REPLACE VIEW lle AS SELECT 1 AS replaced_by_hand")  # no comment: not this registry's
    con.execute("DROP VIEW near_curve")
    con.close()
    with Store(db) as store:
        assert "replaced_by_hand" not in [row[0] for row in store.query("DESCRIBE lle")[1]]
        views = dict(store.query("SELECT view_name, comment FROM duckdb_views() WHERE NOT internal")[1])
        assert views["near_curve"] == views["lle"] == signature
        store.con.execute(f"CREATE OR REPLACE VIEW lle AS SELECT 2 AS kept; COMMENT ON VIEW lle IS '{signature}'")
    with Store(db) as store:  # every view signed as current: none is recreated
        assert store.query("SELECT * FROM lle")[1] == [(2,)]


def test_the_migrations_are_numbered_sql_files_each_applied_once_in_order(tmp_path):
    """The schema is the package's SQL files (as installed: package data), numbered without a gap;
    a fresh DB records each number once, and its tables are exactly those the files create."""
    import re
    from importlib import resources

    from hubsurvey.core.figures import LLE_METHOD, figure_columns
    from hubsurvey.core.migrations import MIGRATIONS, SCHEMA_VERSION

    files = sorted(f for f in resources.files("hubsurvey.core.migrations").iterdir() if f.name.endswith(".sql"))
    assert [int(f.name[:3]) for f in files] == list(range(1, len(files) + 1)) and SCHEMA_VERSION == len(files) > 0
    texts = [f.read_text(encoding="utf-8") for f in files]
    assert MIGRATIONS[1:] == texts[1:] and "{lle_figure_columns}" in texts[0] and "{lle_" not in MIGRATIONS[0]
    assert all(f"{c.name} {c.sql_type}," in MIGRATIONS[0] for c in figure_columns(LLE_METHOD))  # the registry's line
    created = {name for text in texts for name in re.findall(r"CREATE TABLE (?:IF NOT EXISTS )?(\w+)", text)}
    with Store(tmp_path / "s.duckdb") as store:
        assert [v for (v,) in store.query("SELECT version FROM schema_version ORDER BY version")[1]] == list(
            range(1, len(files) + 1))
        tables = {t for (t,) in store.query(
            "SELECT table_name FROM information_schema.tables WHERE table_type = 'BASE TABLE'")[1]}
    assert tables == created | {"schema_version"}
