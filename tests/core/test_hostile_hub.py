"""A hostile or absent Hub: no hang, fail fast offline, one line with exit code 4, no leaked token."""

from __future__ import annotations

import json
import socket
import time

import pytest
from typer.testing import CliRunner

from hubsurvey.cli import app
from hubsurvey.core.errors import ExitCode
from hubsurvey.core.store import Store
from hubsurvey_standin import Faults, Scope, StandinHub

runner = CliRunner()
TOKEN = "hf_HostileHubSecret_0123456789"


def _fast_timeouts(monkeypatch) -> None:
    """Short timeouts and two attempts, so that a hung Hub is given up on within seconds."""
    monkeypatch.setenv("HUBSURVEY_CONNECT_TIMEOUT", "0.5")
    monkeypatch.setenv("HUBSURVEY_READ_TIMEOUT", "0.5")
    monkeypatch.setenv("HUBSURVEY_MAX_ATTEMPTS", "2")


def _one_error_line(result) -> str:
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: ") and "Traceback" not in result.output
    return lines[0]


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# --- 1. a Hub that accepts connections and never answers ------------------------------------

@pytest.mark.parametrize("command", ["crawl", "audit"])
@pytest.mark.slow
def test_a_hub_that_never_answers_fails_cleanly_in_bounded_time(minihub, tmp_path, monkeypatch, command):
    _fast_timeouts(monkeypatch)
    hang = Faults(hang_every=1, scope=Scope(categories=frozenset({"list", "tree"})))
    with StandinHub(minihub, faults=hang) as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        args = ["crawl", "--rate", "0", "--file-rate", "0"] if command == "crawl" else ["audit", "mini-nlp/toy_ner"]
        started = time.monotonic()
        result = runner.invoke(app, [*args, "--db", str(tmp_path / "r.duckdb")])
        elapsed = time.monotonic() - started
        held = hub.stats()["faults_injected"]
    assert held == 2  # both attempts were held by the server, and both timed out
    assert result.exit_code == ExitCode.HUB, result.output
    line = _one_error_line(result)
    assert "did not answer in time" in line
    assert elapsed < 30, elapsed  # a deadline is the behaviour: the 0.5 s timeouts end a hang that never would


# --- 2. no network: a name that does not resolve, a refused connection --------------------------

@pytest.mark.parametrize("endpoint", ["closed-port", "http://does-not-exist.invalid"])
@pytest.mark.parametrize("command", ["crawl", "audit"])
@pytest.mark.slow
def test_an_unreachable_hub_is_given_up_within_5_s(tmp_path, monkeypatch, endpoint, command):
    if endpoint == "closed-port":
        endpoint = f"http://127.0.0.1:{_closed_port()}"
    monkeypatch.setenv("HF_ENDPOINT", endpoint)
    args = ["crawl"] if command == "crawl" else ["audit", "some-org/some-dataset"]
    started = time.monotonic()
    result = runner.invoke(app, [*args, "--db", str(tmp_path / "r.duckdb")])
    elapsed = time.monotonic() - started
    assert result.exit_code == ExitCode.HUB, result.output
    line = _one_error_line(result)
    assert line.startswith(f"error: cannot reach {endpoint}: ") and line.endswith("(offline? set HF_ENDPOINT)"), line
    assert elapsed < 5, elapsed  # a deadline is the behaviour: no retry of a Hub that cannot be reached


# --- 3. a refused or failing listing, and a Hub that echoes the Authorization header -----------

@pytest.mark.parametrize("status", [401, 500])
@pytest.mark.slow
def test_a_failed_listing_is_one_line_exit_4_and_never_shows_the_token(minihub, tmp_path, monkeypatch, status):
    _fast_timeouts(monkeypatch)
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    echo = Faults(error_burst_every=1, error_burst_len=1, error_status=status, echo_auth=True,
                  scope=Scope(categories=frozenset({"list"})))
    with StandinHub(minihub, faults=echo, valid_tokens={TOKEN}) as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        result = runner.invoke(app, ["crawl", "--db", str(tmp_path / "r.duckdb"), "--rate", "0", "--file-rate", "0"])
    assert result.exit_code == ExitCode.HUB, result.output
    line = _one_error_line(result)
    assert f"HTTP {status}" in line and "***" in line  # the echoed header is there, its token is not
    assert TOKEN not in result.output


@pytest.mark.slow
def test_errors_stored_from_an_echoing_hub_never_hold_the_token(minihub, tmp_path, monkeypatch):
    """The Parquet-branch tree and the file reads fail with the header echoed: nothing stored or
    printed holds the token (scanned with SQL, every text column of every table)."""
    _fast_timeouts(monkeypatch)
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    echo = Faults(error_burst_every=1, error_burst_len=1, error_status=403, echo_auth=True,
                  scope=Scope(categories=frozenset({"tree", "resolve_get", "resolve_head"}), dataset="mini-nlp/*"))
    db = tmp_path / "r.duckdb"
    with StandinHub(minihub, faults=echo, valid_tokens={TOKEN}) as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        audit = runner.invoke(app, ["audit", "mini-nlp/toy_ner", "--db", str(db)])
        crawl = runner.invoke(app, ["crawl", "--db", str(db), "--rate", "0", "--file-rate", "0"])
        assert hub.stats()["faults_injected"] > 0
    assert audit.exit_code != 0 and "***" in audit.stderr
    for result in (audit, crawl):
        assert TOKEN not in result.output
    with Store(db) as store:
        tables = [r[0] for r in store.con.execute("SELECT table_name FROM information_schema.tables").fetchall()]
        for table in tables:
            columns = store.con.execute(
                "SELECT column_name FROM information_schema.columns WHERE table_name = ? AND data_type IN ('VARCHAR', 'JSON')",
                [table],
            ).fetchall()
            for (column,) in columns:
                hits = store.con.execute(
                    f'SELECT count(*) FROM "{table}" WHERE CAST("{column}" AS VARCHAR) LIKE ?', [f"%{TOKEN}%"]
                ).fetchone()[0]
                assert hits == 0, (table, column)


# --- 4. gated repos with a token that has no access ------------------------------------------------

@pytest.mark.slow
def test_gated_repos_without_access_are_recorded_as_gated(minihub, tmp_path):
    from hubsurvey.core.hub import HubClient
    from hubsurvey.crawler.crawl import crawl
    from hubsurvey.crawler.rules import CrawlFilters

    truth = json.loads((minihub / "truth.json").read_text())["expected"]
    gated = sorted(k for k, v in truth.items() if v == "gated")
    with StandinHub(minihub, valid_tokens={"hf_the_approved_one"}) as hub, Store(tmp_path / "r.duckdb") as store:
        client = HubClient(endpoint=hub.url, token="hf_not_approved_token", rate=0, file_rate=0, max_wait=0.05)
        crawl(store, client, CrawlFilters(allow_gated=True))
        got = {r["dataset_id"]: r["exclusion_reason"] for r in store.records("SELECT * FROM datasets")}
    assert gated and {got[d] for d in gated} == {"gated"}


def test_a_gated_download_is_a_gated_job_not_an_error(minihub, tmp_path):
    from hubsurvey.core.hub import HubClient
    from hubsurvey.survey.jobs import error_outcome

    truth = json.loads((minihub / "truth.json").read_text())["expected"]
    gated = sorted(k for k, v in truth.items() if v == "gated")[0]
    with StandinHub(minihub) as hub:
        client = HubClient(endpoint=hub.url, token="hf_not_approved_token", rate=0, file_rate=0,
                           cache_dir=tmp_path / "cache")
        with pytest.raises(Exception) as raised:  # noqa: PT011 - any error; the test checks its text
            client.download(gated, "default/test/0000.parquet", "refs/convert/parquet")
    outcome = error_outcome(raised.value, f"{gated} [default]")
    assert outcome.error_class == "gated" and outcome.transient is False


@pytest.mark.parametrize("command", ["crawl", "run"])
@pytest.mark.slow
def test_an_offline_crawl_or_run_is_recorded_failed_with_its_error_class(tmp_path, monkeypatch, command):
    endpoint = f"http://127.0.0.1:{_closed_port()}"
    monkeypatch.setenv("HF_ENDPOINT", endpoint)
    db = tmp_path / "r.duckdb"
    result = runner.invoke(app, [command, "--db", str(db), "--report-dir", str(tmp_path / "out")][: 3 if command == "crawl" else 5])
    assert result.exit_code == ExitCode.HUB, result.output
    with Store(db, read_only=True) as store:
        (run,) = store.records("SELECT command, status, error_class, error_message FROM runs")
    assert run["command"] == command and run["status"] == "failed" and run["error_class"] == "offline"
    assert run["error_message"].startswith(f"cannot reach {endpoint}: ")
