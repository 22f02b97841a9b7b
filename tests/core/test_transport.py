"""How hubsurvey talks to the Hub: settings read once, the deadline, the drip floor, the breaker,
pacing that follows the quota, and hostile answers that are Hub faults, never bugs.

Every Hub here is the stand-in on 127.0.0.1, with short deadlines so that the tests stay fast."""

from __future__ import annotations

import json
import re
import threading
import time
from pathlib import Path

import pytest
from conftest import ROOT, standin_client
from typer.testing import CliRunner

from hubsurvey.cli import app
from hubsurvey.core.errors import (
    ExitCode,
    HubFaultError,
    HubStoppedAnsweringError,
    HubTimeoutError,
    exit_code_of,
    scrub,
)
from hubsurvey.core.hub import HubClient, is_transient
from hubsurvey.core.pacing import Breaker, QuotaBucket, QuotaState, parse_ratelimit
from hubsurvey.core.settings import PLANS, Settings, SettingsError
from hubsurvey_standin import Faults, Quota, Scope, StandinHub

REPO = ROOT
PRODUCT = ("hubsurvey", "crawler", "survey", "analysis")  # the folders installed as hubsurvey.*
runner = CliRunner()


@pytest.fixture(scope="module")
def eligible(minihub) -> str:
    truth = json.loads((minihub / "truth.json").read_text())["expected"]
    return sorted(k for k, v in truth.items() if v == "eligible")[0]


def client_for(hub: StandinHub, tmp_path: Path, **overrides) -> HubClient:
    return standin_client(hub, tmp_path / "cache", **{"deadline": 2.0, **overrides})


def one_file(client: HubClient, dataset_id: str):
    return sorted(client.parquet_tree(dataset_id), key=lambda f: f.path)[0]


# --- settings read once ---------------------------------------------------------------------------

def test_no_product_module_but_settings_reads_the_environment():
    pattern = re.compile(r"os\.environ|getenv|putenv|environ\.get")
    offenders = [
        f"{path.relative_to(REPO)}:{n}: {line.strip()}"
        for folder in PRODUCT
        for path in sorted((REPO / folder).rglob("*.py"))
        if path != REPO / "hubsurvey" / "core" / "settings.py"
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if pattern.search(line)
    ]
    assert offenders == []


def test_settings_come_from_the_environment_then_the_command_line(tmp_path):
    env = {"HF_ENDPOINT": "http://hub.example/", "HUBSURVEY_DEADLINE": "30", "HUBSURVEY_DRIP_FLOOR": "2048",
           "HUBSURVEY_BREAKER": "3", "HUBSURVEY_PLAN": "pro", "HUBSURVEY_RESOLVER_QUOTA": "777",
           "HUBSURVEY_CACHE_DIR": str(tmp_path)}
    s = Settings.from_env(env)
    assert (s.endpoint, s.deadline, s.drip_floor, s.breaker, s.cache_dir) == ("http://hub.example", 30.0, 2048.0, 3, tmp_path)
    assert s.quotas == (2500, 777)  # the plan's API quota, the explicit resolver quota
    assert Settings.from_env(env, deadline=5, plan="free").quotas == (1000, 777)
    assert Settings.from_env(env, deadline=None).deadline == 30.0  # None: not given on the command line
    # the plan follows the token when none is set
    assert Settings.from_env({}).quotas == PLANS["anonymous"] == (500, 3000)
    assert Settings.from_env({"HF_TOKEN": "hf_PlanFollowsTheToken_0001"}).quotas == PLANS["free"] == (1000, 5000)
    for bad in ({"HUBSURVEY_DEADLINE": "soon"}, {"HUBSURVEY_BREAKER": "0"}, {"HUBSURVEY_PLAN": "gold"}):
        with pytest.raises(SettingsError):
            Settings.from_env(bad)


def test_the_scrubbers_secrets_come_from_the_settings(monkeypatch):
    token = "hf_FromTheSettingsOnly_31415926"
    monkeypatch.delenv("HF_TOKEN", raising=False)
    assert scrub(f"Bearer {token}") == f"Bearer {token}"  # nothing registered it yet
    settings = Settings.from_env({"HF_TOKEN": token})
    assert token not in repr(settings) and token not in json.dumps(settings.as_json(), default=str)
    assert scrub(f"Bearer {token}") == "Bearer ***"


# --- pacing that follows the quota ---------------------------------------------------------------

def test_the_ratelimit_headers_are_parsed_as_the_hub_sends_them():
    states = parse_ratelimit({"RateLimit": '"api";r=0;t=12', "RateLimit-Policy": '"fixed window";"api";q=500;w=300'})
    assert states == {"api": QuotaState("api", remaining=0, reset_in=12.0, quota=500, window=300.0)}
    both = parse_ratelimit({"RateLimit": '"resolvers";r=2999;t=299, "api";r=3;t=4'})
    assert (both["resolvers"].remaining, both["api"].reset_in) == (2999, 4.0)
    assert parse_ratelimit({"RateLimit": "garbage;;r=x"}) == {}


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def test_a_bucket_spends_the_window_then_waits_for_the_reset_the_hub_names():
    clock = FakeClock()
    bucket = QuotaBucket(3, 300, clock=clock, sleep=clock.sleep)
    assert [bucket.acquire() for _ in range(3)] == [0.0, 0.0, 0.0]
    assert bucket.acquire() == 300.0 and clock.now == 300.0  # spent: wait for the local window's end
    # the Hub says 1 left and a reset in 10 s: one more at once, then a wait of 10 s, not 300
    bucket.observe(QuotaState("api", remaining=1, reset_in=10, quota=5, window=60))
    assert bucket.acquire() == 0.0
    assert bucket.acquire() == 10.0
    assert bucket.quota == 5 and bucket.remaining == 4  # the new window holds the Hub's quota
    # an answer from within the same window only ever lowers what is left (requests in flight)
    bucket.observe(QuotaState("api", remaining=4, reset_in=60))
    assert bucket.remaining == 4


def test_a_window_opened_late_keeps_counting_the_requests_in_flight():
    """The client opens its window mid-window of the Hub (its first request came late), so it guesses
    the end too far. The Hub's first answer names an earlier reset and counts only the one request it
    has seen: the three in flight stay counted (7 left, not 9), so the window is not overspent."""
    clock = FakeClock()
    bucket = QuotaBucket(10, 100, clock=clock, sleep=clock.sleep)
    assert [bucket.acquire() for _ in range(3)] == [0.0, 0.0, 0.0]
    bucket.observe(QuotaState("api", remaining=9, reset_in=40))
    assert bucket.remaining == 7
    assert [bucket.acquire() for _ in range(7)] == [0.0] * 7
    assert bucket.acquire() == 40.0  # the Hub's reset, not the local guess of 100
    # an answer naming a later reset comes from a window the Hub has opened since: its count replaces ours
    bucket.observe(QuotaState("api", remaining=3, reset_in=100))
    assert bucket.remaining == 3


@pytest.mark.slow
def test_a_stream_of_calls_holds_the_quota_with_no_429_after_the_first_window(minihub, eligible, tmp_path):
    """The stand-in enforces 15 API calls per 150-second window on a clock 100 times faster (a
    window in 1.5 s); the client starts from the anonymous plan's 500 and learns the rest."""
    quota = Quota(api=15, window=150, clock_scale=0.01)
    with StandinHub(minihub, quota=quota) as hub:
        client = HubClient(endpoint=hub.url, token=False, rate=None, max_wait=0.05, deadline=5,
                           cache_dir=tmp_path, clock_scale=0.01)
        stop = time.monotonic() + 5.0
        while time.monotonic() < stop:
            client.dataset_info(eligible)
        windows = sorted((w, served, refused) for (bucket, w), (served, refused) in quota.log.items() if bucket == "api")
    full = windows[1:-1]  # the first window is learnt; the last one is cut short by the stop
    assert len(full) >= 2, windows
    assert all(refused == 0 for _, _, refused in full), windows
    assert all(served >= 0.9 * 15 for _, served, _ in full), windows
    assert windows[0][2] <= 1, windows  # at most one 429 in the first window: then the client knows


@pytest.mark.slow
def test_a_crawl_holds_the_quota_of_a_compressed_clock_with_no_429_after_the_first_window(minihub, tmp_path, monkeypatch):
    """``crawl`` as a user runs it (quota pacing, the default), against 3 API calls per 100-second
    window that pass in 1 s (HUBSURVEY_CLOCK_SCALE tells the client the stand-in's clock). The
    mini-hub's crawl makes about 16 API calls (the listing decides most datasets): 5 windows or more."""
    quota = Quota(api=3, resolvers=0, window=100, clock_scale=0.01)
    with StandinHub(minihub, quota=quota) as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        monkeypatch.setenv("HUBSURVEY_CLOCK_SCALE", "0.01")
        result = runner.invoke(app, ["crawl", "--db", str(tmp_path / "r.duckdb")])
    assert result.exit_code == 0, result.output
    windows = sorted((w, served, refused) for (bucket, w), (served, refused) in quota.log.items() if bucket == "api")
    full = windows[1:-1]
    assert len(full) >= 2, windows
    assert all(refused == 0 for _, _, refused in windows[1:]), windows
    assert all(served >= 0.9 * 3 for _, served, _ in full), windows


@pytest.mark.slow
def test_a_hub_scale_crawl_holds_both_buckets_of_a_compressed_clock_with_no_429_after_the_first_window(tmp_path):
    """The crawl of a Hub-scale listing (the bench's mix) against both buckets enforced, 5 API and
    20 resolver calls per 100-second window passing in 1 s (a loaded machine still makes 5 calls
    a second); the client starts from the free plan's
    1,000 / 5,000 and learns the rest from the headers. The API bucket binds: every full window
    after the first is spent to at least 90%, and no 429 comes after the first window."""
    from hubsurvey.core.store import Store
    from hubsurvey.crawler.crawl import crawl

    (tmp_path / "hub").mkdir()
    (tmp_path / "hub" / "index.json").write_text(json.dumps({"datasets": [], "hubscale": {"count": 200, "seed": 0}}))
    quota = Quota(api=5, resolvers=20, window=100, clock_scale=0.01)
    with StandinHub(tmp_path / "hub", quota=quota, page_size=25) as hub, Store(tmp_path / "r.duckdb") as store:
        client = HubClient(endpoint=hub.url, token=False, plan="free", clock_scale=0.01, cache_dir=tmp_path / "cache")
        summary = crawl(store, client, workers=4)
        stats = hub.stats()
    assert summary.listed == 200
    assert stats["resolve_get"] + stats["resolve_head"] > 0  # the resolver bucket was drawn on too
    last = max(index for _, index in quota.log)
    assert last >= 3, quota.log  # at least two full windows after the first
    for bucket in ("api", "resolvers"):
        refused = sum(r for (b, index), (_, r) in quota.log.items() if b == bucket and index > 0)
        assert refused == 0, quota.log
    api_served = [quota.log.get(("api", index), [0, 0])[0] for index in range(1, last)]
    assert all(served >= 0.9 * 5 for served in api_served), quota.log


@pytest.mark.slow
def test_a_429_storm_on_downloads_is_transient_never_permanent(minihub, eligible, tmp_path):
    from hubsurvey.core.queue import JobSettings, QueuedJob
    from hubsurvey.survey.jobs import JobSpec, run_job

    storm = Faults(rate_limit_every=1, rate_limit_secs=1, scope=Scope(categories=frozenset({"resolve_get"})))
    with StandinHub(minihub) as hub:
        client = client_for(hub, tmp_path, rate=0, file_rate=0)
        info = client.dataset_info(eligible)
        files = {}
        for f in client.parquet_tree(eligible):
            config, split, _ = f.path.split("/")
            if config == "default":
                files.setdefault(split, []).append(f.path)
        hub.set_faults(storm)
        spec = JobSpec(QueuedJob("j", eligible, info.sha, "default", 1, files),
                       JobSettings(hub=Settings.from_env(endpoint=hub.url, cache_dir=tmp_path / "c")))
        outcome = run_job(spec)
    assert not outcome.ok and outcome.transient is True, outcome
    assert "429" in outcome.message and "connection" not in outcome.message.lower(), outcome


# --- a silent Hub costs a deadline, not attempts x timeouts ---------------------------------------

@pytest.mark.slow
def test_a_silent_hub_costs_one_deadline_over_every_attempt(minihub, eligible, tmp_path):
    silent = Faults(hang_every=1, scope=Scope(categories=frozenset({"info"})))
    with StandinHub(minihub, faults=silent) as hub:
        client = client_for(hub, tmp_path, deadline=1.5, read_timeout=60, max_attempts=6)
        started = time.monotonic()
        with pytest.raises(HubTimeoutError) as caught:
            client.dataset_info(eligible)
        elapsed = time.monotonic() - started
    assert 1.4 <= elapsed < 30, elapsed  # a deadline is the behaviour: 1.5 s over every attempt, not 6 x 60 s
    assert exit_code_of(caught.value) == ExitCode.HUB and caught.value.transient


@pytest.mark.slow
def test_a_dripping_body_is_a_timeout(minihub, eligible, tmp_path):
    drip = Faults(drip_ms=100, scope=Scope(categories=frozenset({"resolve_get"})))
    with StandinHub(minihub) as hub:
        client = client_for(hub, tmp_path, deadline=2.5, drip_floor=1024, drip_window=0.5, max_attempts=1)
        f = one_file(client, eligible)
        sha = client.parquet_sha(eligible)
        hub.set_faults(drip)
        started = time.monotonic()
        with pytest.raises(HubTimeoutError, match="under the floor"):
            client.download(eligible, f.path, sha)
        elapsed = time.monotonic() - started
        hub.set_faults(Faults())
        path = client.download(eligible, f.path, sha)  # the same file, served at full speed
    assert elapsed < 30, elapsed  # a deadline is the behaviour: the floor ends it, not the drip's minutes
    assert path.stat().st_size == f.size and not list((tmp_path / "cache").rglob("*.part"))


@pytest.mark.slow
def test_the_jobs_and_the_runs_deadlines_stop_a_download_and_do_not_trip_the_breaker(minihub, eligible, tmp_path):
    drip = Faults(drip_ms=50, scope=Scope(categories=frozenset({"resolve_get"})))
    with StandinHub(minihub) as hub:
        client = client_for(hub, tmp_path, deadline=30, drip_floor=0, breaker=1)  # no floor: only the limits
        f = one_file(client, eligible)
        sha = client.parquet_sha(eligible)
        hub.set_faults(drip)
        started = time.monotonic()
        with client.time_limit(1.0), pytest.raises(HubTimeoutError):
            client.download(eligible, f.path, sha)
        job_elapsed = time.monotonic() - started
        client.stop_after(1.0)
        started = time.monotonic()
        with pytest.raises(HubTimeoutError):
            client.download(eligible, f.path, sha)
        run_elapsed = time.monotonic() - started
        assert not client.breaker.open  # out of time is not the Hub being silent
    # a deadline is the behaviour: the job's and the run's 1 s limits, not the client's 30 s deadline
    assert job_elapsed < 15 and run_elapsed < 15, (job_elapsed, run_elapsed)


def test_the_breaker_opens_after_n_timeouts_in_a_row_and_any_answer_resets_it():
    breaker = Breaker(3)
    for _ in range(2):
        breaker.timed_out("t")
    breaker.answered()
    for _ in range(2):
        breaker.timed_out("t")
    assert not breaker.open
    breaker.timed_out("last one")
    with pytest.raises(HubStoppedAnsweringError, match=r"3 requests in a row timed out \(last: last one\)") as caught:
        breaker.check()
    assert caught.value.exit_code == ExitCode.HUB


@pytest.mark.slow
def test_a_silent_hub_opens_the_breaker_and_later_calls_fail_at_once(minihub, eligible, tmp_path):
    silent = Faults(hang_every=1, scope=Scope(categories=frozenset({"info"})))
    with StandinHub(minihub, faults=silent) as hub:
        client = client_for(hub, tmp_path, deadline=0.5, breaker=2)
        for _ in range(2):
            with pytest.raises(HubTimeoutError):
                client.dataset_info(eligible)
        with pytest.raises(HubStoppedAnsweringError):
            client.parquet_tree(eligible)  # another endpoint, not held: still refused at once
        assert hub.stats()["tree"] == 0  # refused before any request


@pytest.mark.slow
def test_audit_against_a_silent_hub_ends_in_one_line_and_exit_4(minihub, tmp_path, monkeypatch):
    silent = Faults(hang_every=1)
    with StandinHub(minihub, faults=silent) as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        monkeypatch.setenv("HUBSURVEY_DEADLINE", "2")
        started = time.monotonic()
        result = runner.invoke(app, ["audit", "mini-nlp/toy_ner", "--db", str(tmp_path / "r.duckdb")])
        elapsed = time.monotonic() - started
    assert result.exit_code == ExitCode.HUB, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "did not answer in time" in lines[0], result.stderr
    assert elapsed < 30, elapsed  # a deadline is the behaviour: HUBSURVEY_DEADLINE's 2 s, not 6 attempts x 60 s


@pytest.mark.slow
def test_a_run_whose_downloads_time_out_ends_with_exit_4_and_leaves_the_jobs_pending(minihub, tmp_path, monkeypatch):
    from hubsurvey.core.store import Store

    silent_files = Faults(hang_every=1, scope=Scope(categories=frozenset({"resolve_get"})))
    db = tmp_path / "r.duckdb"
    with StandinHub(minihub) as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        monkeypatch.setenv("HUBSURVEY_CACHE_DIR", str(tmp_path / "cache"))
        crawled = runner.invoke(app, ["crawl", "--rate", "0", "--file-rate", "0", "--db", str(db)])
        assert crawled.exit_code == 0, crawled.output
        hub.set_faults(silent_files)  # the files stop coming: the listing and the footers were read
        monkeypatch.setenv("HUBSURVEY_DEADLINE", "0.5")
        monkeypatch.setenv("HUBSURVEY_BREAKER", "2")
        started = time.monotonic()
        result = runner.invoke(app, ["run", "--rate", "0", "--file-rate", "0", "--workers", "1", "--no-crossleaks",
                                     "--report-dir", str(tmp_path / "out"), "--db", str(db)])
        elapsed = time.monotonic() - started
    assert result.exit_code == ExitCode.HUB, result.output
    assert "the Hub stopped answering: 2 requests in a row timed out" in result.stderr
    assert elapsed < 60, elapsed  # a deadline is the behaviour: the breaker ends the run, not 60 s per download
    with Store(db, read_only=True) as store:
        statuses = dict(store.query("SELECT status, count(*) FROM jobs GROUP BY status")[1])
    assert statuses.get("pending", 0) > 0 and "running" not in statuses, statuses


# --- hostile answers: Hub faults, never bugs -----------------------------------------------------

TREE = frozenset({"tree"})
INFO = frozenset({"info"})


@pytest.mark.parametrize("kind", ["html", "malformed_json", "truncated_json", "json_object", "short_length", "gzip_bomb"])
@pytest.mark.slow
def test_a_hostile_tree_page_is_a_transient_hub_fault(minihub, eligible, tmp_path, kind):
    hostile = Faults(hostile_every=1, hostile=kind, bomb_mb=40, scope=Scope(categories=TREE))
    with StandinHub(minihub, faults=hostile) as hub:
        client = client_for(hub, tmp_path, max_attempts=2, max_response_mb=8)
        with pytest.raises(HubFaultError) as caught:
            client.parquet_tree(eligible)
        served = hub.stats()["tree"]
    assert exit_code_of(caught.value) == ExitCode.HUB and is_transient(caught.value)
    assert served == (1 if kind == "json_object" else 2)  # a bad answer is retried in the call; a bad shape is not
    if kind == "gzip_bomb":
        assert "larger than 8 MB once decompressed" in str(caught.value)


@pytest.mark.parametrize("kind", ["truncated_json", "no_sha", "redirect_loop", "malformed_json", "html"])
@pytest.mark.slow
def test_hostile_dataset_info_is_a_hub_fault(minihub, eligible, tmp_path, kind):
    hostile = Faults(hostile_every=1, hostile=kind, scope=Scope(categories=INFO))
    with StandinHub(minihub, faults=hostile) as hub:
        client = client_for(hub, tmp_path, max_attempts=2)
        with pytest.raises(HubFaultError) as caught:
            client.parquet_sha(eligible)
    assert exit_code_of(caught.value) == ExitCode.HUB
    assert eligible in str(caught.value)


def test_a_tree_page_that_links_to_itself_ends(minihub, eligible, tmp_path):
    with StandinHub(minihub) as hub:
        client = client_for(hub, tmp_path)
        honest = client.parquet_tree(eligible)
        hub.set_faults(Faults(hostile_every=1, hostile="self_link", scope=Scope(categories=TREE)))
        looped = client.parquet_tree(eligible)
        served = hub.stats()["tree"]
    assert looped == honest and served == 2


@pytest.mark.slow
def test_a_gzip_bomb_is_refused_before_it_takes_the_memory(minihub, eligible, tmp_path):
    import resource

    hostile = Faults(hostile_every=1, hostile="gzip_bomb", bomb_mb=1024, scope=Scope(categories=TREE))
    with StandinHub(minihub, faults=hostile) as hub:
        client = client_for(hub, tmp_path, max_attempts=1, deadline=30)
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        with pytest.raises(HubFaultError, match="larger than 64 MB once decompressed"):
            client.parquet_tree(eligible)
        grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert grown_mb < 300, grown_mb  # the page's cap, not the 1 GB it inflates to


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["html", pytest.param("json_object", marks=pytest.mark.slow),
                                  pytest.param("truncated_json", marks=pytest.mark.slow),
                                  pytest.param("redirect_loop", marks=pytest.mark.slow)])
def test_audit_of_a_hostile_tree_is_exit_4_in_one_line_never_5(minihub, tmp_path, monkeypatch, kind):
    hostile = Faults(hostile_every=1, hostile=kind, scope=Scope(categories=TREE))
    with StandinHub(minihub, faults=hostile) as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        monkeypatch.setenv("HUBSURVEY_MAX_ATTEMPTS", "2")
        result = runner.invoke(app, ["audit", "mini-nlp/toy_ner", "--db", str(tmp_path / "r.duckdb")])
    assert result.exit_code == ExitCode.HUB, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "internal" not in lines[0], result.stderr


@pytest.mark.parametrize("kind", ["html", "malformed_json", "json_object", pytest.param("gzip_bomb", marks=pytest.mark.slow)])
@pytest.mark.slow
def test_a_hostile_listing_page_ends_the_crawl_with_exit_4_never_5(minihub, tmp_path, monkeypatch, kind):
    hostile = Faults(hostile_every=1, hostile=kind, bomb_mb=80, scope=Scope(categories=frozenset({"list"})))
    with StandinHub(minihub, faults=hostile) as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        monkeypatch.setenv("HUBSURVEY_MAX_ATTEMPTS", "1")
        result = runner.invoke(app, ["crawl", "--rate", "0", "--file-rate", "0", "--db", str(tmp_path / "r.duckdb")])
    assert result.exit_code == ExitCode.HUB, result.output
    assert "internal error" not in result.output and "Traceback" not in result.output


@pytest.mark.slow
def test_concurrent_calls_share_one_bucket(minihub, eligible, tmp_path):
    """Prefetch threads draw on one quota: 4 threads, 8 calls each, never over the stand-in's 10."""
    quota = Quota(api=10, window=100, clock_scale=0.01)
    with StandinHub(minihub, quota=quota) as hub:
        client = HubClient(endpoint=hub.url, token=False, max_wait=0.05, deadline=5, cache_dir=tmp_path,
                           clock_scale=0.01, api_quota=10)

        def calls() -> None:
            for _ in range(8):
                client.dataset_info(eligible)

        threads = [threading.Thread(target=calls) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    refused = sum(r for (bucket, _), (_, r) in quota.log.items() if bucket == "api")
    assert refused == 0 and len(quota.log) >= 3, quota.log  # 32 calls took at least three windows


def test_library_warnings_stay_out_of_the_output_unless_asked():
    import io
    import logging

    from hubsurvey.logs import setup_logging

    names = ("", "hubsurvey", "huggingface_hub", "httpx2", "httpcore2", "filelock")
    levels = {name: logging.getLogger(name).level for name in names}
    root_handlers = list(logging.getLogger().handlers)
    try:
        stream = io.StringIO()
        setup_logging(stream=stream)
        logging.getLogger("huggingface_hub.utils._http").warning("Retrying in 1s [Retry 1/5].")
        logging.getLogger("hubsurvey.core.hub").warning("our own line")
        assert "Retrying" not in stream.getvalue() and "our own line" in stream.getvalue()
        setup_logging(stream=stream, verbose=2)
        logging.getLogger("huggingface_hub.utils._http").warning("now asked for")
        assert "now asked for" in stream.getvalue()
    finally:  # the process's logging as it was: other tests read it
        root = logging.getLogger()
        for handler in list(root.handlers):
            if handler not in root_handlers:
                root.removeHandler(handler)
        for name, level in levels.items():
            logging.getLogger(name).setLevel(level)


def test_a_late_answer_from_a_window_already_over_does_not_reopen_the_quota():
    """Under load (or across a cluster's network) an answer sent at the end of one window can reach
    the bucket after it rolled into the next. Its reset, half a window or more before ours, names a
    window already over: taking it would bring the reset back and hand out the whole quota again."""
    clock = FakeClock()
    bucket = QuotaBucket(5, 100, clock=clock, sleep=clock.sleep)
    bucket.observe(QuotaState("api", remaining=5, reset_in=100, quota=5, window=100))  # aligned
    assert [bucket.acquire() for _ in range(5)] == [0.0] * 5
    assert bucket.acquire() == 100.0  # the next window: one taken, 4 left
    bucket.observe(QuotaState("api", remaining=0, reset_in=1))  # late, from the window before
    assert bucket.remaining == 4
    assert [bucket.acquire() for _ in range(4)] == [0.0] * 4
    assert bucket.acquire() == 100.0  # the reset stays the current window's, not the late answer's


def test_a_late_answer_within_the_window_lowers_the_count_whatever_its_delay():
    """An answer delayed by more than the old two-second allowance (here 40 s of a 100 s window) still
    names the window we count in: it lowers what is left, never raises it to the Hub's own count."""
    clock = FakeClock()
    bucket = QuotaBucket(10, 100, clock=clock, sleep=clock.sleep)
    bucket.observe(QuotaState("api", remaining=10, reset_in=100, quota=10, window=100))
    assert [bucket.acquire() for _ in range(6)] == [0.0] * 6  # 6 in flight, 4 left here
    clock.now = 10.0
    bucket.observe(QuotaState("api", remaining=9, reset_in=130))  # seen by the Hub: one; reset 40 s later than ours
    assert bucket.remaining == 4


@pytest.mark.slow
def test_max_hours_bounds_a_wait_for_the_quota_reset(minihub, tmp_path):
    """Every answer after the second says the API quota resets in an hour (``r=0;t=3600`` on a real
    clock). ``run --max-hours 0.005`` (18 s) does not wait for it: the wait would end past the run's
    end, so the crawl stops at once, keeps what it listed, and the run ends timed_out in seconds."""
    from hubsurvey.pipeline import RunOptions, run_survey

    quota = Quota(api=2, resolvers=0, window=3600, clock_scale=1.0)
    started = time.monotonic()
    with StandinHub(minihub, quota=quota, page_size=5) as hub:
        client = HubClient(endpoint=hub.url, token=False, cache_dir=tmp_path / "c", max_wait=0.05, deadline=10)
        summary = run_survey(tmp_path / "r.duckdb", client, None,
                             RunOptions(max_hours=0.005, crossleaks=False, exposure=False))
    took = time.monotonic() - started
    assert summary.status == "timed_out", summary
    assert summary.steps["crawl"]["out_of_time"] is True
    assert took < 18 + 60, took  # a deadline is the behaviour: the run's 18 s, not the quota's reset an hour away


def test_a_bucket_hands_what_its_window_spent_to_another():
    """A crawl's bucket spent 7 of 10 in a window with 40 s left: a cluster's bucket seeded from it
    grants 3 in that window, not a whole quota; and the count comes back the same way."""
    from hubsurvey.core.pacing import HubLimits

    clock = FakeClock()
    own = HubLimits.of(rate=None, file_rate=None, quotas=(10, 10), window=100, clock_scale=1.0, breaker=5)
    bucket = own.pacers["api"]
    bucket._clock = clock
    bucket.observe(QuotaState("api", remaining=10, reset_in=40, quota=10, window=100))
    for _ in range(7):
        bucket.acquire()
    shared = HubLimits.of(rate=None, file_rate=None, quotas=(500, 3000), window=300, clock_scale=1.0, breaker=5)
    shared.seed(own.snapshot())
    assert [shared.pacers["api"].reserve()[0] for _ in range(4)] == [True, True, True, False]
    own.seed(shared.snapshot())
    assert bucket.remaining == 0


@pytest.mark.slow
def test_crawl_max_hours_bounds_the_crawl_and_a_wait_for_the_quota(minihub, tmp_path):
    """``crawl --max-hours`` ends the crawl at its bound, waits for the quota included: what was listed
    is kept, the crawl is recorded timed_out, and the next crawl resumes."""
    from hubsurvey.core.store import Store
    from hubsurvey.crawler.crawl import crawl

    quota = Quota(api=3, resolvers=0, window=3600, clock_scale=1.0)
    started = time.monotonic()
    with StandinHub(minihub, quota=quota, page_size=2) as hub, Store(tmp_path / "r.duckdb") as store:
        client = HubClient(endpoint=hub.url, token=False, cache_dir=tmp_path / "c", max_wait=0.05, deadline=10)
        summary = crawl(store, client, max_hours=0.005)
        (run,) = store.records("SELECT status FROM runs")
    # a deadline is the behaviour: the crawl's 18 s, not the quota's reset an hour away
    assert summary.out_of_time and time.monotonic() - started < 18 + 60
    assert run["status"] == "timed_out"
