"""Hostile repos through a whole survey against the stand-in: files shared by configs, a config
removed by a new revision, a token echoed into the listing and the tree, SIGTERM."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pytest
from conftest import standin_client
from test_hostile_data import _check
from typer.testing import CliRunner

from hubsurvey.cli import app
from hubsurvey.core.errors import DataFileMissingError
from hubsurvey.core.hub import HubClient, delete_files
from hubsurvey.core.settings import Settings
from hubsurvey.core.store import Store
from hubsurvey.pipeline import RunOptions, run_survey
from hubsurvey.survey.jobs import error_outcome
from hubsurvey_standin import Faults, Scope, StandinHub
from hubsurvey_standin.catalog import write_hub_root

runner = CliRunner()
SHARED_TEST = pa.table({"text": ["a", "b", "z"], "label": [0, 1, 0]})


def _train(i: int) -> pa.Table:
    return pa.table({"text": [f"t{i}", "a", "a", f"u{i}"], "label": [0, 0, 1, 1]})


def _client(hub: StandinHub, cache: Path) -> HubClient:
    return standin_client(hub, cache, rate=None, file_rate=None)  # paced as the Hub asks


def _survey(root: Path, db: Path, cache: Path, **options):
    with StandinHub(root) as hub:
        return run_survey(db, _client(hub, cache), None, RunOptions(**{"workers": 1, **options}))


# --- byte-identical files shared by configs ---------------------------------------------------------

def _shared_root(tmp_path: Path, configs: int = 3) -> Path:
    files = {}
    for i in range(configs):
        files[f"c{i}/train/0000.parquet"] = _train(i)
        files[f"c{i}/test/0000.parquet"] = SHARED_TEST  # one content, one blob in huggingface_hub's cache
    return write_hub_root(tmp_path / "hub", {"share/three": files})


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.slow
def test_configs_sharing_a_file_are_all_measured(tmp_path, workers):
    root = _shared_root(tmp_path)
    db, cache = tmp_path / "r.duckdb", tmp_path / "cache"
    summary = _survey(root, db, cache, workers=workers)
    assert summary.failed == 0, summary
    with Store(db) as store:
        rows = store.records("SELECT * FROM current_measurements ORDER BY config")
        jobs = store.records("SELECT status, error_class FROM jobs")
    assert [r["config"] for r in rows] == ["c0", "c1", "c2"]
    assert {(j["status"], j["error_class"]) for j in jobs} == {("done", None)}
    for i, row in enumerate(rows):
        _check([row], {"train": _train(i), "test": SHARED_TEST})
    # and the cache is clean afterwards: every blob deleted once the last job using it ended
    assert not [p for p in cache.rglob("*") if p.is_file() and ("blobs" in p.parts or p.suffix == ".parquet")]


def test_a_blob_two_snapshot_links_share_is_kept_until_the_last_goes(tmp_path):
    blob = tmp_path / "datasets--o--n" / "blobs" / "abc"
    blob.parent.mkdir(parents=True)
    blob.write_bytes(b"x" * 100)
    links = []
    for config in ("en", "fr", "de"):
        link = tmp_path / "datasets--o--n" / "snapshots" / "s1" / config / "test" / "0000.parquet"
        link.parent.mkdir(parents=True)
        link.symlink_to(os.path.relpath(blob, link.parent))
        links.append(link)
    assert delete_files([links[0]]) == 0 and blob.exists() and links[1].exists()
    assert delete_files([links[1], links[1]]) == 0 and blob.exists()  # twice: harmless
    assert delete_files([links[2]]) == 100 and not blob.exists()


def test_a_shared_store_file_behind_a_repo_blob_is_kept_while_another_repo_uses_it(tmp_path):
    store_file = tmp_path / "blobs" / "ab" / "hash"
    store_file.parent.mkdir(parents=True)
    store_file.write_bytes(b"y" * 10)
    snapshot = {}
    for repo in ("datasets--a--x", "datasets--b--y"):
        repo_blob = tmp_path / repo / "blobs" / "etag"
        repo_blob.parent.mkdir(parents=True)
        repo_blob.symlink_to(os.path.relpath(store_file, repo_blob.parent))
        link = tmp_path / repo / "snapshots" / "s" / "c" / "test" / "0.parquet"
        link.parent.mkdir(parents=True)
        link.symlink_to(os.path.relpath(repo_blob, link.parent))
        snapshot[repo] = link
    delete_files([snapshot["datasets--a--x"]])
    assert store_file.exists() and snapshot["datasets--b--y"].exists()
    assert delete_files([snapshot["datasets--b--y"]]) == 10 and not store_file.exists()


def test_a_data_file_gone_from_the_cache_is_a_transient_failure(tmp_path):
    from hubsurvey.survey.sources import config_from_files

    data = config_from_files("o/n", "default", "1" * 40, {"test": [str(tmp_path / "gone.parquet")]})
    from hubsurvey.survey.sources import check_config

    with pytest.raises(DataFileMissingError) as info:
        check_config(data)
    outcome = error_outcome(info.value, "o/n [default]")
    assert outcome.error_class == "file_missing" and outcome.transient and "gone.parquet" in outcome.message


# --- a config removed by a new revision ----------------------------------------------------------

def _revisions(tmp_path: Path, first: dict, second: dict) -> tuple[Path, Path]:
    return (write_hub_root(tmp_path / "v1", {"rev/ds": first}), write_hub_root(tmp_path / "v2", {"rev/ds": second}))


def _current(db: Path) -> tuple[list[str], int, int]:
    with Store(db) as store:
        configs = [r[0] for r in store.query("SELECT DISTINCT config FROM current_measurements ORDER BY 1")[1]]
        lle = store.query("SELECT count(*) FROM lle")[1][0][0]
        findings = store.query("SELECT configs FROM findings_overview")[1][0][0] if _has_view(store, "findings_overview") else None
    return configs, lle, findings


def _has_view(store: Store, name: str) -> bool:
    return bool(store.query("SELECT count(*) FROM duckdb_views() WHERE view_name = ?", [name])[1][0][0])


CONFIG_CHANGES = [
    # (first revision's configs, second's, configs shown after the second run)
    ("removed", ["en", "fr"], ["en"], ["en"]),
    ("renamed", ["en", "fr"], ["en", "de"], ["de", "en"]),
    ("all_replaced", ["fr"], ["xx"], ["xx"]),
]


@pytest.mark.parametrize("first,second,shown", [pytest.param(a, b, c, id=i) for i, a, b, c in CONFIG_CHANGES])
@pytest.mark.slow
def test_a_config_the_new_revision_lacks_leaves_the_results(tmp_path, first, second, shown):
    def files(configs: list[str], salt: str) -> dict:
        out = {}
        for c in configs:
            out[f"{c}/train/0000.parquet"] = pa.table({"text": [f"{c}{salt}", "a", "b"]})
            out[f"{c}/test/0000.parquet"] = pa.table({"text": ["a", f"{c}-test{salt}"]})
        return out

    v1, v2 = _revisions(tmp_path, files(first, "1"), files(second, "2"))
    db = tmp_path / "r.duckdb"
    assert _survey(v1, db, tmp_path / "cache").failed == 0
    assert _current(db)[0] == sorted(first)
    assert _survey(v2, db, tmp_path / "cache").failed == 0
    configs, lle_rows, _ = _current(db)
    assert configs == shown and lle_rows == len(shown)
    with Store(db) as store:  # the old rows are kept in the table (history), not shown
        assert store.query("SELECT count(DISTINCT config) FROM measurements")[1][0][0] == len(set(first) | set(second))


@pytest.mark.slow
def test_a_config_not_yet_measured_at_the_new_revision_keeps_its_older_rows(tmp_path):
    """The per-config rule is kept: a config the new revision still has, whose job failed, shows its old rows."""
    good = {"en/train/0000.parquet": pa.table({"text": ["a", "b"]}), "en/test/0000.parquet": pa.table({"text": ["a", "c"]}),
            "fr/train/0000.parquet": pa.table({"text": ["x", "y"]}), "fr/test/0000.parquet": pa.table({"text": ["x", "q"]})}
    broken = {**good, "en/train/0000.parquet": pa.table({"text": ["a", "b", "new"]}),
              "fr/test/0000.parquet": pa.table({"other": [1, 2]})}  # fr: no text column at v2
    v1, v2 = _revisions(tmp_path, good, broken)
    db = tmp_path / "r.duckdb"
    _survey(v1, db, tmp_path / "cache")
    _survey(v2, db, tmp_path / "cache")
    assert _current(db)[0] == ["en", "fr"]


# --- a token echoed into the listing and the tree -------------------------------------------------

TOKEN = "hf_EchoedIntoData_0123456789abcdef"


def _files_holding(folder: Path, secret: str) -> list[str]:
    return [str(path) for path in folder.rglob("*")
            if secret in str(path.relative_to(folder)) or (path.is_file() and secret.encode() in path.read_bytes())]


@pytest.mark.slow
def test_a_token_echoed_into_tags_and_tree_paths_is_written_nowhere(tmp_path, monkeypatch):
    """A Hub that reflects the Authorization value into listing tags and into tree paths (here the
    repos hold it: the client sees the same answers). Nothing the survey writes holds it."""
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    table = {"train": pa.table({"text": ["a", "b", "b"]}), "test": pa.table({"text": ["a", "c"]})}
    root = write_hub_root(
        tmp_path / "hub",
        {"echo/tags": {f"default/{s}/0000.parquet": t for s, t in table.items()},
         "echo/tree": {f"{TOKEN}/{s}/0000.parquet": t for s, t in table.items()},
         "echo/ok": {f"default/{s}/0000.parquet": t for s, t in table.items()}},
        entries={"echo/tags": {"tags": ["task_categories:text-classification", f"echo:{TOKEN}", "language:en"],
                               "description": f"Bearer {TOKEN}"}},
    )
    db, out = tmp_path / "r.duckdb", tmp_path / "out"
    with StandinHub(root, valid_tokens={TOKEN}) as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        monkeypatch.setenv("HUBSURVEY_CACHE_DIR", str(tmp_path / "cache"))
        ran = runner.invoke(app, ["run", "--db", str(db), "--rate", "0", "--file-rate", "0", "--workers", "1",
                                  "--report-dir", str(out)])
    assert ran.exit_code in (0, 1), ran.output
    assert TOKEN not in ran.output
    published = tmp_path / "publish"
    for args in (["report", "--out", str(out)], ["export", "--out", str(tmp_path / "export")],
                 ["publish", "--repo", "me/results", "--out", str(published)]):
        result = runner.invoke(app, [*args, "--db", str(db)])
        assert result.exit_code == 0 and TOKEN not in result.output, result.output
    with Store(db) as store:
        measured = {r[0] for r in store.query("SELECT DISTINCT dataset_id FROM measurements")[1]}
        (tags,) = store.query("SELECT tags FROM datasets WHERE dataset_id = 'echo/tags'")[1][0]
        (reason,) = store.query("SELECT exclusion_reason FROM datasets WHERE dataset_id = 'echo/tree'")[1][0]
    assert measured == {"echo/tags", "echo/ok"}  # the dataset whose tree holds the token is refused
    assert "echo:***" in tags and reason and reason.startswith("error:")
    written = [p for p in tmp_path.iterdir() if p.name != "hub"]  # the DB, fingerprints, reports, export, publish, cache
    assert {p.name for p in written} >= {"r.duckdb", "r.duckdb.fingerprints", "out", "export", "publish"}
    for path in written:
        hits = _files_holding(path, TOKEN) if path.is_dir() else [path.name] * (TOKEN.encode() in path.read_bytes())
        assert TOKEN not in path.name and hits == [], hits


# --- SIGTERM is Ctrl-C -------------------------------------------------------------------------------

@pytest.mark.slow
def test_sigterm_stops_a_run_as_ctrl_c_does(tmp_path):
    files = {f"c{i}/{s}/0000.parquet": _train(i) for i in range(6) for s in ("train", "test")}
    root = write_hub_root(tmp_path / "hub", {"slow/ds": files})
    db = tmp_path / "r.duckdb"
    slow = Faults(slow_ms=400, scope=Scope(categories=frozenset({"resolve_get", "resolve_head", "tree"})))
    with StandinHub(root, faults=slow) as hub:
        env = {**os.environ, "HF_ENDPOINT": hub.url, "HUBSURVEY_CACHE_DIR": str(tmp_path / "cache")}
        proc = subprocess.Popen([sys.executable, "-m", "hubsurvey.cli", "run", "--db", str(db), "--rate", "0",
                                 "--file-rate", "0", "--workers", "1", "--report-dir", str(tmp_path / "out")],
                                env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        holder = Path(f"{db}.run.json")
        deadline = time.time() + 60
        while not holder.exists() and proc.poll() is None and time.time() < deadline:
            time.sleep(0.05)
        time.sleep(1.0)
        assert proc.poll() is None, proc.communicate()
        proc.send_signal(signal.SIGTERM)
        try:
            _out, err = proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:  # a hang: what the run printed says where it was
            proc.kill()
            _out, err = proc.communicate()
            pytest.fail(f"the run did not end within 60 s of SIGTERM; its stderr:\n{err.decode()[-3000:]}")
    assert proc.returncode != 0, err.decode()[-3000:]
    left = sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("r.duckdb") and p.name != "r.duckdb.fingerprints")
    # what a finished run leaves: no holder file, snapshot or WAL; the lock file is free (filelock keeps it)
    assert set(left) <= {"r.duckdb", "r.duckdb.lock"}, (left, err.decode()[-2000:])
    from filelock import FileLock

    FileLock(f"{db}.lock", timeout=0).acquire()
    with Store(db, read_only=True) as store:
        (status,) = store.query("SELECT status FROM runs ORDER BY started_at DESC LIMIT 1")[1][0]
    assert status == "interrupted"


@pytest.mark.slow
def test_sigterm_during_the_read_snapshot_stops_the_run(tmp_path, stop_mark):
    """DuckDB ends a ``COPY FROM DATABASE`` that a signal interrupts with RuntimeError("Query
    interrupted"), not its InterruptException: the snapshot, a courtesy that never stops a run for
    its own errors, must still let the stop through (it once logged a warning and ran on to the end)."""
    import threading

    import duckdb

    from hubsurvey.core.livestate import LiveRun
    from hubsurvey.core.signals import sigterm_as_ctrl_c

    if threading.current_thread() is not threading.main_thread():
        pytest.skip("a signal handler can be set on the main thread only")
    db = tmp_path / "r.duckdb"
    con = duckdb.connect(str(db))
    try:
        # rows enough that the copy takes about a second here: the signal comes 0.1 s into it
        con.execute("CREATE TABLE t AS SELECT range AS i, md5(range::VARCHAR) AS s FROM range(3000000)")
        live = LiveRun(db, "r1")
        with sigterm_as_ctrl_c():
            # to the main thread, which waits on the copy: DuckDB ends it at once only then
            timer = threading.Timer(0.1, signal.pthread_kill, (threading.main_thread().ident, signal.SIGTERM))
            timer.start()
            try:
                with pytest.raises(KeyboardInterrupt):
                    live.snapshot(con, force=True)
            finally:
                timer.join()
        assert stop_mark.is_set()
        assert not Path(f"{db}.snapshot.tmp").exists()  # the half-written copy is gone
        assert con.execute("SELECT count(*) FROM t").fetchone()[0] == 3_000_000  # the DB is whole and usable
    finally:
        con.close()


@pytest.mark.slow
def test_a_prefetched_file_gone_before_measuring_is_downloaded_again(tmp_path):
    from hubsurvey.core.queue import JobSettings, QueuedJob
    from hubsurvey.survey.jobs import JobSpec, download, run_job

    root = _shared_root(tmp_path, configs=1)
    with StandinHub(root) as hub:
        client = _client(hub, tmp_path / "cache")
        files = {"train": ["c0/train/0000.parquet"], "test": ["c0/test/0000.parquet"]}
        settings = JobSettings(hub=Settings.from_env(endpoint=hub.url, cache_dir=tmp_path / "cache"))
        spec = download(JobSpec(QueuedJob("j", "share/three", "1" * 40, "c0", 1, files), settings), client)
        gone = Path(spec.local_files["test"][0])
        os.unlink(os.path.realpath(gone))  # an eviction took the blob between prefetch and measuring
        outcome = run_job(spec)
    assert outcome.ok, outcome.message
    _check(outcome.rows, {"train": _train(0), "test": SHARED_TEST})


@pytest.mark.parametrize("layout", [
    {"test-part0/0000.parquet": SHARED_TEST.slice(0, 1), "test-part1/0000.parquet": SHARED_TEST.slice(1)},
    {"partial-test/0000.parquet": SHARED_TEST},
], ids=["parts_of_one_export", "partial_alone"])
@pytest.mark.slow
def test_one_export_in_parts_on_the_hub_is_measured_once(tmp_path, layout):
    files = {"default/train/0000.parquet": _train(0), **{f"default/{p}": t for p, t in layout.items()}}
    root = write_hub_root(tmp_path / "hub", {"parts/ds": files})
    db = tmp_path / "r.duckdb"
    assert _survey(root, db, tmp_path / "cache").failed == 0
    with Store(db) as store:
        (row,) = store.records("SELECT * FROM current_measurements")
    assert row["rows_test"] == SHARED_TEST.num_rows
    _check([row], {"train": _train(0), "test": list(layout.values())})


@pytest.mark.slow
def test_full_and_partial_exports_on_the_hub_fail_the_job_as_bad_input(tmp_path):
    files = {"default/train/0000.parquet": _train(0), "default/test/0000.parquet": SHARED_TEST,
             "default/partial-test/0000.parquet": SHARED_TEST}
    root = write_hub_root(tmp_path / "hub", {"twice/ds": files})
    db = tmp_path / "r.duckdb"
    summary = _survey(root, db, tmp_path / "cache")
    assert summary.failed == 1
    with Store(db) as store:
        (job,) = store.records("SELECT error_class, error_message, transient FROM jobs")
        assert store.query("SELECT count(*) FROM measurements")[1][0][0] == 0
    assert job["error_class"] == "bad_input" and not job["transient"]
    assert job["error_message"] == ("twice/ds [default]: split 'test' is stored in 2 layouts (partial-test/, test/); "
                                    "refusing to count its rows twice")


@pytest.mark.slow
def test_the_client_scrubs_listing_items_and_refuses_a_tree_holding_the_token(tmp_path, monkeypatch):
    """The choke point itself: where the Hub's JSON becomes Python values."""
    from hubsurvey.core.errors import HubError
    from hubsurvey.core.hub import is_transient

    table = {"train": pa.table({"text": ["a"]}), "test": pa.table({"text": ["b"]})}
    root = write_hub_root(
        tmp_path / "hub",
        {"echo/tags": {f"default/{s}/0.parquet": t for s, t in table.items()},
         "echo/tree": {f"a{TOKEN}b/{s}/0.parquet": t for s, t in table.items()}},
        entries={"echo/tags": {"tags": [f"x:{TOKEN}", "language:en"], "description": f"Bearer {TOKEN}",
                               "cardData": {"nested": [{"deep": f"..{TOKEN}.."}]}}},
    )
    with StandinHub(root, valid_tokens={TOKEN}) as hub:
        client = HubClient(endpoint=hub.url, token=TOKEN, rate=None, file_rate=None, cache_dir=tmp_path / "c", max_wait=0.05)
        items = {i.id: i for i in client.list_datasets(expand=["tags", "description", "cardData"])}
        assert client.parquet_tree("echo/tags")  # a clean tree passes
        with pytest.raises(HubError) as refused:
            client.parquet_tree("echo/tree")
    item = items["echo/tags"]
    assert item.tags == ["x:***", "language:en"] and item.description == "Bearer ***"
    assert item.card_data.to_dict()["nested"] == [{"deep": "..***.."}]
    assert TOKEN not in str(refused.value) and "echoed credentials" in str(refused.value)
    assert not is_transient(refused.value)


@pytest.fixture
def stop_mark():
    """The process-wide stop mark, cleared again after the test whatever it asserted."""
    from hubsurvey.core.signals import STOP_REQUESTED

    STOP_REQUESTED.clear()
    yield STOP_REQUESTED
    STOP_REQUESTED.clear()


def test_an_error_after_a_stop_signal_is_the_stops_doing(tmp_path, stop_mark):
    """A SIGTERM or Ctrl-C that lands inside a DuckDB query ends it with RuntimeError("Query
    interrupted"), not KeyboardInterrupt (a CI run caught it during the plan step): once a stop was
    asked, the run is recorded ``interrupted`` and the command ends as Ctrl-C ends it, not as a bug."""
    import typer

    from hubsurvey.cli import handled
    from hubsurvey.core.runs import Runs
    from hubsurvey.core.signals import interrupt as _interrupt
    from hubsurvey.core.signals import sigterm_as_ctrl_c as _sigterm_as_ctrl_c

    with Store(tmp_path / "r.duckdb") as store:
        runs = Runs(store)
        def query_interrupted(stopped: bool) -> None:
            with runs.recording("run"):
                if stopped:
                    with pytest.raises(KeyboardInterrupt):
                        _interrupt(signal.SIGTERM, None)
                raise RuntimeError("Query interrupted")

        for stopped, expected in ((False, ["failed"]), (True, ["failed", "interrupted"])):
            stop_mark.clear()
            with pytest.raises(RuntimeError):
                query_interrupted(stopped)
            assert sorted(status for (status,) in store.query("SELECT status FROM runs")[1]) == expected

    def interrupted_query() -> None:
        with pytest.raises(KeyboardInterrupt):
            _interrupt(signal.SIGINT, None)
        raise RuntimeError("Query interrupted")

    with pytest.raises(typer.Exit) as ended:  # as Ctrl-C ends a command: one line, exit 130
        handled(interrupted_query)()
    assert ended.value.exit_code == 130
    with pytest.raises(typer.Exit):  # without a stop, the same error is a bug in hubsurvey
        handled(lambda: (_ for _ in ()).throw(RuntimeError("Query interrupted")))()
    with _sigterm_as_ctrl_c():
        assert not stop_mark.is_set()  # each command starts without one
