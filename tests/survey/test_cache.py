"""The survey cache stays bounded (--max-cache-gb) and what is measured is pinned to one Parquet commit.

- a survey through the stand-in with a budget just above its largest job never goes over it
  (the cache is polled from a thread during the run), with or without --keep-cache;
- a job's files are deleted once it is measured, unless --keep-cache;
- a job larger than the whole budget fails alone with ``too_large_for_cache``;
- the Parquet-branch commit is recorded (datasets, jobs, measurements) and downloaded exactly,
  even when the branch moved between the crawl and the download.
"""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

import pytest
from conftest import standin_client
from typer.testing import CliRunner

from hubsurvey.cli import app
from hubsurvey.core.errors import TooLargeForCacheError
from hubsurvey.core.store import Store
from hubsurvey.crawler.crawl import crawl
from hubsurvey.pipeline import RunOptions, run_survey
from hubsurvey.survey.cache import GB, METADATA_BYTES, CacheBudget, repo_folder
from hubsurvey_standin import StandinHub
from hubsurvey_standin.repos import parquet_sha as standin_parquet_sha


def cache_size(cache_dir: Path) -> int:
    """Bytes of regular files under the cache folder (links not counted twice): the plain reference."""
    root = Path(cache_dir)
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file() and not p.is_symlink()) if root.exists() else 0


def job_sizes(db: Path) -> list[int]:
    """Bytes of every job the crawl queued material for (its splits' files), from the crawl's sizes."""
    from hubsurvey.core.splits import SPLIT_ALIASES

    with Store(db) as store:
        rows = store.records("SELECT configs FROM datasets WHERE status = 'eligible'")
    sizes = []
    for row in rows:
        for splits in json.loads(row["configs"]).values():
            kept = [v["bytes"] for s, v in splits.items() if SPLIT_ALIASES.get(s.lower())]
            if any(SPLIT_ALIASES.get(s.lower()) == "test" for s in splits):
                sizes.append(sum(kept))
    return sizes


class CachePoller:
    """Poll the cache's size from a thread while a run goes on; keep the largest size seen."""

    def __init__(self, cache: Path, interval: float = 0.005):
        self.cache, self.interval, self.peak, self.samples = cache, interval, 0, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)

    def _poll(self) -> None:
        while not self._stop.is_set():
            try:
                self.peak = max(self.peak, cache_size(self.cache))
                self.samples += 1
            except FileNotFoundError:  # a file deleted while the folder was walked
                pass
            time.sleep(self.interval)

    def __enter__(self) -> CachePoller:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def crawled(hub: StandinHub, db: Path, cache: Path) -> list[int]:
    with Store(db) as store:
        crawl(store, standin_client(hub, cache))
    return job_sizes(db)


@pytest.mark.slow
@pytest.mark.parametrize("keep_cache", [False, True], ids=["delete-after-measuring", "keep-cache"])
def test_a_survey_with_a_small_budget_never_goes_over_it(minihub, tmp_path, keep_cache):
    db, cache = tmp_path / "r.duckdb", tmp_path / "cache"
    with StandinHub(minihub) as hub:
        sizes = crawled(hub, db, cache)
        budget = max(sizes) + METADATA_BYTES  # just room for the largest job: two jobs' files rarely fit at once
        assert sum(sizes) > 2 * budget  # the budget binds: the survey's files do not fit in it together
        with CachePoller(cache) as poller:
            summary = run_survey(db, standin_client(hub, cache), None, RunOptions(
                workers=2, max_cache_gb=budget / GB, keep_cache=keep_cache, crawl=False))
    assert summary.status == "done" and summary.failed == 0 and summary.done == len(sizes)
    assert poller.samples > 20 and poller.peak > 0
    assert poller.peak <= budget, f"the cache reached {poller.peak} bytes, over its budget of {budget}"
    left = [p for p in cache.glob("datasets--*/snapshots/**/*.parquet") if p.is_file()]
    if keep_cache:
        assert left and cache_size(cache) <= budget  # kept, but evicted oldest first to stay in budget
    else:  # every job's files were deleted once measured (huggingface_hub's CACHEDIR.TAG stays)
        assert not left and not list(cache.rglob("*.parquet")) and cache_size(cache) < 1024


@pytest.mark.slow
def test_measurements_record_the_parquet_commit_downloaded(minihub, tmp_path):
    db, cache = tmp_path / "r.duckdb", tmp_path / "cache"
    with StandinHub(minihub) as hub:
        summary = run_survey(db, standin_client(hub, cache), None, RunOptions(workers=2))
    assert summary.done > 0
    with Store(db) as store:
        rows = store.records("SELECT dataset_id, revision_sha, parquet_sha FROM measurements")
        jobs = store.records("SELECT revision_sha, parquet_sha FROM jobs WHERE status = 'done'")
        datasets = store.records("SELECT sha, parquet_sha FROM datasets WHERE status = 'eligible'")
    assert rows and jobs and datasets
    for r in rows + jobs:  # the stand-in's refs/convert/parquet commit for that main commit
        assert r["parquet_sha"] == standin_parquet_sha(r["revision_sha"]), r
    assert all(d["parquet_sha"] == standin_parquet_sha(d["sha"]) for d in datasets)


@pytest.mark.slow
def test_a_branch_that_moved_after_the_crawl_is_not_mixed_in(minihub, tmp_path):
    """The crawl resolved commit A; the branch moves to B before the download: the job downloads A."""
    db, cache = tmp_path / "r.duckdb", tmp_path / "cache"
    with StandinHub(minihub) as hub:
        crawled(hub, db, cache)
        with Store(db) as store:
            (row,) = store.records("SELECT dataset_id, sha, parquet_sha FROM datasets WHERE status = 'eligible' "
                                   "ORDER BY dataset_id LIMIT 1")
        hub.set_sha(row["dataset_id"], "1" * 40)  # main and the Parquet branch move on
        moved = standin_client(hub, cache).parquet_sha(row["dataset_id"])
        assert moved != row["parquet_sha"]
        run_survey(db, standin_client(hub, cache), None, RunOptions(workers=2, crawl=False, keep_cache=True))
    with Store(db) as store:
        measured = store.records("SELECT DISTINCT revision_sha, parquet_sha FROM measurements WHERE dataset_id = $d",
                                 {"d": row["dataset_id"]})
    assert measured == [{"revision_sha": row["sha"], "parquet_sha": row["parquet_sha"]}]
    snapshots = [p.name for p in (repo_folder(cache, row["dataset_id"]) / "snapshots").iterdir()]
    assert snapshots == [row["parquet_sha"]]  # every file came from the crawled commit


@pytest.mark.slow
def test_a_job_larger_than_the_budget_fails_alone(minihub, tmp_path):
    db, cache = tmp_path / "r.duckdb", tmp_path / "cache"
    with StandinHub(minihub) as hub:
        sizes = crawled(hub, db, cache)
        budget = max(sizes) + METADATA_BYTES - 1  # only the largest job(s) cannot fit
        with CachePoller(cache) as poller:
            summary = run_survey(db, standin_client(hub, cache), None, RunOptions(workers=2, max_cache_gb=budget / GB, crawl=False))
    too_large = sum(s + METADATA_BYTES > budget for s in sizes)
    assert summary.failed == too_large >= 1 and summary.done == len(sizes) - too_large
    assert poller.peak <= budget
    with Store(db) as store:
        failed = store.records("SELECT error_class, error_message FROM jobs WHERE status = 'failed'")
    assert {f["error_class"] for f in failed} == {"too_large_for_cache"}
    assert "more than the cache budget" in failed[0]["error_message"]


# --- the budget on its own (fast) -------------------------------------------------------------------

def _file(path: Path, size: int, age: float) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"x" * size)
    stamp = time.time() - age
    os.utime(path, (stamp, stamp))
    return path


def test_admission_evicts_unused_files_oldest_first_and_protects_jobs_in_flight(tmp_path):
    budget = CacheBudget(tmp_path, 1000 + METADATA_BYTES)
    busy = _file(repo_folder(tmp_path, "a/busy") / "blobs" / "3", 400, age=60)
    budget.admit("busy-job", "a/busy", 0)  # a job in flight: its dataset's files are never evicted
    budget.downloaded("busy-job")
    old = _file(repo_folder(tmp_path, "a/old") / "blobs" / "1", 400, age=30)
    new = _file(repo_folder(tmp_path, "a/new") / "blobs" / "2", 400, age=10)
    budget.admit("j1", "a/x", 150)  # 1200 on disk + 150: the oldest unused file goes, the busy one stays
    assert busy.exists() and not old.exists() and new.exists()
    assert budget.peak <= budget.max_bytes
    budget.downloaded("j1")
    budget.release("j1")
    with pytest.raises(TooLargeForCacheError, match="more than the cache budget"):
        budget.admit("huge", "a/huge", 1001)


def test_admission_waits_for_room_until_a_job_ends(tmp_path):
    budget = CacheBudget(tmp_path, 1000 + 2 * METADATA_BYTES)
    budget.admit("first", "a/first", 700)
    admitted = threading.Event()
    threading.Thread(target=lambda: (budget.admit("second", "a/second", 700), admitted.set()), daemon=True).start()
    assert not admitted.wait(0.3)  # 700 still to come + 700 > 1000: it waits
    budget.downloaded("first")
    budget.release("first")
    assert admitted.wait(5)


def test_max_cache_gb_must_be_positive(tmp_path):
    for value in ("0", "-1"):
        result = CliRunner().invoke(app, ["run", "--max-cache-gb", value, "--db", str(tmp_path / "r.duckdb")])
        assert result.exit_code == 2, result.output
        assert "--max-cache-gb must be greater than 0" in result.output
