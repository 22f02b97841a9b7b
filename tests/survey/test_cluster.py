"""A survey on a real Dask cluster (a scheduler and worker processes on loopback) against the stand-in:
the run's Hub settings reach the workers, one quota and one breaker hold for the whole cluster, and
a job past its timeout or memory ceiling is stopped in its child process and recorded as locally."""

from __future__ import annotations

import gc
import time
from pathlib import Path

import pyarrow as pa
import pytest

from hubsurvey.core.errors import ClusterUnreachableError, HubStoppedAnsweringError, UsageError
from hubsurvey.core.hub import HubClient
from hubsurvey.core.pacing import API, RESOLVERS
from hubsurvey.core.settings import Settings
from hubsurvey.core.store import Store
from hubsurvey.crawler.crawl import crawl
from hubsurvey.crawler.rules import CrawlFilters
from hubsurvey.pipeline import RunOptions, run_survey
from hubsurvey.survey.executors.limits import LimitsService, remote_limits
from hubsurvey_standin import Faults, Quota, Scope, StandinHub
from hubsurvey_standin.catalog import write_hub_root, write_tiny_hub

# a cluster test that hangs fails alone instead of holding the whole tier
pytestmark = pytest.mark.timeout(600)

WORKERS = 3


@pytest.fixture
def cluster():  # one per test: a test's hung downloads or stopped children never reach the next
    distributed = pytest.importorskip("distributed")  # here, not at import: collecting the module needs no Dask
    with distributed.LocalCluster(n_workers=WORKERS, threads_per_worker=2, processes=True,
                                  dashboard_address=None) as cluster:
        yield cluster


def client_for(hub: StandinHub, cache: Path, **settings) -> HubClient:
    return HubClient(endpoint=hub.url, token=False, cache_dir=cache, max_wait=0.05, **settings)


def on_cluster(cluster, **options) -> RunOptions:
    return RunOptions(executor="dask", executor_options={"dask": cluster.scheduler_address}, crossleaks=False, exposure=False, **options)


def jobs(db: Path) -> list[dict]:
    with Store(db) as store:
        return store.records("SELECT dataset_id, config, status, error_class, error_message FROM jobs ORDER BY job_id")


def windows(quota: Quota, bucket: str) -> list[tuple[int, int, int]]:
    """(window, served, refused) of one bucket, in order."""
    return sorted((index, served, refused) for (b, index), (served, refused) in quota.log.items() if b == bucket)


# --- the shared limits, unit by unit ----------------------------------------------------------------

def test_clients_drawing_on_one_service_share_one_quota_and_one_breaker():
    """Three clients of one token on one service: 10 permits a window between them, not 10 each;
    the service learns the Hub's quota from any of them; timeouts from any count towards one breaker."""
    service = LimitsService(Settings.from_env({}, api_quota=10, resolver_quota=4, breaker=3, quota_window=300,
                                              clock_scale=1.0))
    clients = [remote_limits(service, 3) for _ in range(3)]
    granted = sum(c.pacers[API].reserve()[0] for c in clients for _ in range(5))
    assert granted == 10  # 15 asked, 10 granted, the rest told to wait for the window's end
    assert service.granted() == {API: 10, RESOLVERS: 0}
    from hubsurvey.core.pacing import QuotaState

    clients[0].pacers[RESOLVERS].observe(QuotaState(RESOLVERS, remaining=1, reset_in=100, quota=4, window=300))
    assert [clients[2].pacers[RESOLVERS].reserve()[0] for _ in range(2)] == [True, False]
    clients[0].breaker.timed_out("a")
    clients[1].breaker.timed_out("b")
    assert not clients[2].breaker.open
    clients[2].breaker.timed_out("c")
    with pytest.raises(HubStoppedAnsweringError):
        clients[0].breaker.check()


def test_settings_cross_the_wire_without_the_token():
    import pickle

    settings = Settings.from_env({"HF_TOKEN": "hf_NeverOnTheWire_0123456789"}, deadline=7, file_rate=2.5, plan="pro")
    wire = pickle.dumps(settings)
    assert b"hf_NeverOnTheWire" not in wire
    back = pickle.loads(wire)
    assert back.token is None and (back.deadline, back.file_rate, back.plan) == (7, 2.5, "pro")
    assert back.with_worker_token({"HF_TOKEN": "hf_TheWorkersOwn_0123456789"}).token == "hf_TheWorkersOwn_0123456789"


@pytest.mark.slow
def test_a_malformed_or_silent_scheduler_is_one_line_before_anything_runs(tmp_path):
    from hubsurvey.survey.executors.dask import connect

    with pytest.raises(UsageError, match="not a scheduler address"):
        connect("http//nowhere")
    started = time.monotonic()
    with pytest.raises(ClusterUnreachableError, match=r"cannot reach the Dask scheduler at tcp://127\.0\.0\.1:9"):
        connect("tcp://127.0.0.1:9", timeout=2)
    assert time.monotonic() - started < 30  # a deadline is the behaviour: the 2 s timeout, not Dask's 30 s
    # and no half-built client is left for the garbage collector to close: its finalizer, run inside
    # the next client's start, deadlocked there (and at the interpreter's exit, waited forever)
    from distributed import Client

    left_open = [o for o in gc.get_objects() if isinstance(o, Client) and o.status not in ("closed", "newly-created")]
    assert not left_open, [o.status for o in left_open]


# --- whole surveys on the cluster -------------------------------------------------------------------

@pytest.mark.slow
def test_an_unreachable_scheduler_ends_the_run_before_the_crawl(minihub, tmp_path):
    with StandinHub(minihub) as hub:
        client = client_for(hub, tmp_path / "cache", rate=0, file_rate=0)
        with pytest.raises(ClusterUnreachableError):
            run_survey(tmp_path / "r.duckdb", client, None,
                       RunOptions(executor="dask", executor_options={"dask": "tcp://127.0.0.1:9"}, crossleaks=False, exposure=False))
        assert sum(hub.stats().values()) == 0  # nothing was asked of the Hub
    assert not (tmp_path / "r.duckdb").exists() or not jobs(tmp_path / "r.duckdb")


@pytest.mark.slow
def test_three_workers_hold_one_resolver_quota_with_no_429_after_the_first_window(cluster, tmp_path):
    """6 file requests per 1500-second window on a clock 100 times faster (15 s). A crawl, then 36
    downloads by three workers: they draw on one budget, seeded with what the crawl spent and fed by
    the headers any of them sees. After the first window, no 429; every full window of the downloads
    (between their first window and their last) is at least 90% used."""
    quota = Quota(api=0, resolvers=6, window=1500, clock_scale=0.01)
    with StandinHub(write_tiny_hub(tmp_path / "hub", 12), quota=quota) as hub:
        client = client_for(hub, tmp_path / "cache", clock_scale=0.01, deadline=30)
        with Store(tmp_path / "r.duckdb") as store:
            crawl(store, client)
        crawled = max(index for (_, index) in quota.log)
        before = sum(served for _, served, _ in windows(quota, "resolvers"))
        summary = run_survey(tmp_path / "r.duckdb", client, None, on_cluster(cluster, near=False, crawl=False))
    assert summary.status == "done" and summary.done == 12 and summary.failed == 0, jobs(tmp_path / "r.duckdb")
    log = windows(quota, "resolvers")
    assert sum(served for _, served, _ in log) - before == 36, log
    assert all(refused == 0 for index, _, refused in log if index > 0), log
    served = {index: s for index, s, _ in log}
    first = min(index for index in served if index > crawled)
    last = max(served)
    assert last - first >= 4, log
    assert all(served.get(index, 0) >= 0.9 * 6 for index in range(first + 1, last)), str(log)


@pytest.mark.slow
def test_a_crawl_during_the_measurement_draws_on_the_cluster_quota_with_the_workers(cluster, tmp_path):
    """run --measure-during-crawl on the cluster, under 4 API and 30 resolver calls per 3 s window:
    the coordinator's crawl (listing two datasets a page) and the workers' downloads draw on one
    quota, no 429 after the first window in either bucket, jobs start before the listing ends, and
    every dataset is measured."""
    quota = Quota(api=4, resolvers=30, window=300, clock_scale=0.01)
    db = tmp_path / "r.duckdb"
    with StandinHub(write_tiny_hub(tmp_path / "hub", 12), quota=quota, page_size=2) as hub:
        client = client_for(hub, tmp_path / "cache", clock_scale=0.01, deadline=30)
        summary = run_survey(db, client, None, on_cluster(cluster, near=False, measure_during_crawl=True))
    assert summary.status == "done" and summary.done == 12 and summary.failed == 0, jobs(db)
    assert summary.crawl["listed"] == 12 and summary.crawl["eligible"] == 12
    for bucket in (API, RESOLVERS):
        log = windows(quota, bucket)
        assert all(refused == 0 for index, _, refused in log if index > 0), (bucket, log)
    assert max(index for index, _, _ in windows(quota, API)) >= 3  # the crawl spanned several windows
    with Store(db) as store:
        first_job, listed = store.query("SELECT (SELECT min(started_at) FROM jobs), (SELECT max(completed_at) FROM crawl_listings)")[1][0]
    assert first_job < listed


@pytest.mark.slow
def test_file_rate_is_one_pace_for_the_whole_cluster(cluster, tmp_path):
    """``--file-rate 3``: three workers download 36 files at three a second between them (not three
    each). The stand-in counts file requests per one-second window (a quota it never reaches)."""
    quota = Quota(api=0, resolvers=10**6, window=100, clock_scale=0.01)
    with StandinHub(write_tiny_hub(tmp_path / "hub", 12), quota=quota) as hub:
        client = client_for(hub, tmp_path / "cache", rate=0, file_rate=0)
        with Store(tmp_path / "r.duckdb") as store:
            crawl(store, client)
        crawled = max(index for (_, index) in quota.log)
        paced = client_for(hub, tmp_path / "cache", rate=0, file_rate=3)
        summary = run_survey(tmp_path / "r.duckdb", paced, None, on_cluster(cluster, near=False, crawl=False))
    assert summary.done == 12, jobs(tmp_path / "r.duckdb")
    log = [(index, served) for index, served, _ in windows(quota, "resolvers") if index > crawled]
    assert sum(served for _, served in log) == 36, log
    # one pace of 3 a second for the cluster: 36 files span at least 11 seconds (three workers pacing
    # alone would take 4); a second may hold a request or two more when a worker's turn comes late
    assert log[-1][0] - log[0][0] >= 11 and max(served for _, served in log) <= 3 + 2, log


@pytest.mark.slow
def test_the_run_deadline_and_the_breaker_hold_across_the_cluster(minihub, cluster, tmp_path):
    """Every file request hangs. The run's --deadline (2 s, not the workers' default 60) bounds each
    worker's requests, three timeouts in a row across the jobs open the one breaker, and the run ends
    with exit 4, every job left pending for the next run (none recorded as failed). Once the Hub
    answers again, the next run in the same process measures them all on the cluster (the jobs the
    first run let go in flight leave nothing behind that would hold it)."""
    hang = Faults(hang_every=1, scope=Scope(categories=frozenset({"resolve_get", "resolve_head"})))
    with StandinHub(minihub) as hub:
        client = client_for(hub, tmp_path / "cache", rate=0, file_rate=0, deadline=2, breaker=3, max_attempts=2)
        with Store(tmp_path / "r.duckdb") as store:
            crawl(store, client)  # a clean crawl; then the Hub stops answering file requests
        hub.set_faults(hang)
        started = time.monotonic()
        with pytest.raises(HubStoppedAnsweringError):
            run_survey(tmp_path / "r.duckdb", client, None, on_cluster(cluster, crawl=False))
        took = time.monotonic() - started
        assert took < 60, took  # a worker on its own default deadline (60 s) would still be waiting
        recorded = jobs(tmp_path / "r.duckdb")
        assert recorded and all(j["status"] == "pending" for j in recorded), recorded
        hub.set_faults(Faults())
        again = run_survey(tmp_path / "r.duckdb", client, None, on_cluster(cluster, crawl=False))
    assert again.done == len(recorded) and {j["status"] for j in jobs(tmp_path / "r.duckdb")} == {"done"}


@pytest.mark.slow
def test_a_job_past_its_memory_ceiling_is_stopped_and_recorded_as_locally(minihub, cluster, tmp_path):
    """A ceiling no measurement fits in (64 MB): each job's child passes it, is stopped, and the job is
    recorded as memory_limit, as the local executor records it; the workers take every next job."""
    with StandinHub(minihub) as hub:
        client = client_for(hub, tmp_path / "cache", rate=0, file_rate=0)
        summary = run_survey(tmp_path / "r.duckdb", client, None, on_cluster(cluster, memory_mb=64, max_attempts=1))
    recorded = jobs(tmp_path / "r.duckdb")
    assert summary.failed == len(recorded) > 1
    assert {j["error_class"] for j in recorded} == {"memory_limit"}
    assert all("memory ceiling of 64 MB" in j["error_message"] for j in recorded)


@pytest.mark.slow
def test_a_job_past_its_timeout_is_stopped_and_the_worker_takes_the_next(cluster, tmp_path):
    """One dataset takes far longer to measure than --job-timeout allows: its child is stopped and the
    job recorded as timeout (as locally); the small datasets are measured on the same workers. A first
    run without a limit starts the workers' child processes, so that the limit times measurements only."""
    rows = 2_400_000  # long to measure on any machine; the crawl below admits it (--max-rows)
    words = [f"word{i}" for i in range(5000)]
    big = pa.table({"text": [f"{words[i % 5000]} {words[(i * 7) % 5000]} {i} and more words {i % 97}" for i in range(rows)],
                    "label": [i % 5 for i in range(rows)]})
    small = pa.table({"text": [f"small row {i}" for i in range(200)], "label": [i % 2 for i in range(200)]})
    datasets = {"slow/big": {"default/train/0000.parquet": big, "default/test/0000.parquet": big.slice(0, 100_000)}}
    for n in range(4):
        datasets[f"quick/ds{n}"] = {"default/train/0000.parquet": small, "default/test/0000.parquet": small.slice(0, 50)}
    root = write_hub_root(tmp_path / "hub", datasets)
    with StandinHub(root) as hub:
        client = client_for(hub, tmp_path / "cache", rate=0, file_rate=0)
        warm = run_survey(tmp_path / "warm.duckdb", client, CrawlFilters(search="quick"), on_cluster(cluster))
        assert warm.done == 4
        started = time.monotonic()
        summary = run_survey(tmp_path / "r.duckdb", client, CrawlFilters(max_rows=10_000_000),
                             on_cluster(cluster, job_timeout=5, max_attempts=1))
        took = time.monotonic() - started
    recorded = {j["dataset_id"]: j for j in jobs(tmp_path / "r.duckdb")}
    assert recorded["slow/big"]["status"] == "failed" and recorded["slow/big"]["error_class"] == "timeout"
    assert "took longer than 5 s" in recorded["slow/big"]["error_message"]
    assert all(recorded[f"quick/ds{n}"]["status"] == "done" for n in range(4)), recorded
    assert summary.done == 4 and took < 60, took  # a deadline is the behaviour: --job-timeout 5 ends the big job
