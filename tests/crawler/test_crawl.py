"""The crawler against the local Hub stand-in: filters, reasons, pagination, faults, increments."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from leaks import secret_hits
from typer.testing import CliRunner

from hubsurvey.cli import app
from hubsurvey.core.hub import HubClient
from hubsurvey.core.store import Store
from hubsurvey.crawler.crawl import crawl
from hubsurvey.crawler.rules import CrawlFilters
from hubsurvey_standin import Faults, Scope, StandinHub, generate_minihub

# The stand-in names some outcomes from the server's point of view; the crawler records what the
# listing tells it (a disabled repo is "disabled" without any request).
CRAWLER_NAME = {"error:disabled": "disabled", "error:private": "private"}


@pytest.fixture(scope="module")
def big_listing(tmp_path_factory) -> Path:
    return generate_minihub(tmp_path_factory.mktemp("filler"), seed=0, filler=5000)


def expected(root: Path) -> dict[str, str]:
    return json.loads((root / "truth.json").read_text())["expected"]


def outcomes(store: Store) -> dict[str, str]:
    return {r["dataset_id"]: r["exclusion_reason"] or "eligible" for r in store.records("SELECT * FROM datasets")}


def client_for(hub: StandinHub, **kwargs) -> HubClient:
    return HubClient(endpoint=hub.url, rate=0, file_rate=0, max_wait=0.05, **kwargs)


def run_crawl(hub: StandinHub, db: Path, filters: CrawlFilters | None = None, **kwargs):
    with Store(db) as store:
        summary = crawl(store, client_for(hub, **kwargs), filters)
        return summary, outcomes(store)


@pytest.mark.slow
def test_reasons_on_the_minihub_match_the_planted_truth(minihub, tmp_path):
    with StandinHub(minihub) as hub:
        summary, got = run_crawl(hub, tmp_path / "r.duckdb")
    truth = expected(minihub)
    listed = {k: v for k, v in truth.items() if v != "error:private"}  # not listed without a token
    assert set(got) == set(listed)
    for dataset_id, outcome in listed.items():
        want = CRAWLER_NAME.get(outcome, outcome)
        if want == "error:corrupt_parquet":
            assert got[dataset_id].startswith("error:"), dataset_id
        else:
            assert got[dataset_id] == want, dataset_id
    assert summary.listed == len(listed) and summary.eligible == sum(v == "eligible" for v in listed.values())
    with Store(tmp_path / "r.duckdb") as store:
        row = store.records("SELECT * FROM datasets WHERE status = 'eligible' ORDER BY dataset_id LIMIT 1")[0]
    assert len(row["sha"]) == 40 and row["tags"] and row["total_rows"] > 0
    configs = json.loads(row["configs"])
    assert all("test" in splits or any(s in splits for s in ("test",)) for splits in configs.values() if splits)


@pytest.mark.slow
def test_private_dataset_is_listed_with_a_token_and_excluded(minihub, tmp_path, monkeypatch):
    with StandinHub(minihub, valid_tokens={"hf_secret_token_123"}) as hub:
        _, got = run_crawl(hub, tmp_path / "r.duckdb", token="hf_secret_token_123")
    private = [k for k, v in expected(minihub).items() if v == "error:private"]
    assert private and all(got[k] == "private" for k in private)


@pytest.mark.slow
def test_filters(minihub, tmp_path):
    truth = expected(minihub)
    some_author = sorted(truth)[0].split("/")[0]
    with StandinHub(minihub) as hub:
        _, only = run_crawl(hub, tmp_path / "a.duckdb", CrawlFilters(authors=[some_author]))
        assert only and all(k.startswith(some_author + "/") for k in only)
        _, denied = run_crawl(hub, tmp_path / "b.duckdb", CrawlFilters(deny_authors=[some_author]))
        assert all(v == "filtered" for k, v in denied.items() if k.startswith(some_author + "/"))
        _, limited = run_crawl(hub, tmp_path / "c.duckdb", CrawlFilters(limit=3))
        assert len(limited) == 3
        _, token_cls = run_crawl(hub, tmp_path / "d.duckdb", CrawlFilters(task_categories=["token-classification"]))
        assert token_cls and len(token_cls) < len(truth)
        _, small = run_crawl(hub, tmp_path / "e.duckdb", CrawlFilters(max_rows=100))
        assert "eligible" not in small.values() and "too_many_rows" in small.values()


@pytest.mark.slow
def test_pagination_over_5000_listed_datasets(big_listing, tmp_path):
    with StandinHub(big_listing, page_size=1000) as hub:
        summary, got = run_crawl(hub, tmp_path / "r.duckdb")
        stats = hub.stats()
    assert summary.listed >= 5000 and len(got) == summary.listed
    assert stats["list"] <= summary.listed // 1000 + 1  # at most one listing request per 1,000
    resolved_eligible = summary.eligible
    assert resolved_eligible > 50
    assert stats["tree"] == 0 and stats["info"] == summary.resolved  # one API call per resolved dataset


@pytest.mark.parametrize(
    "faults",
    [
        Faults(rate_limit_every=7, rate_limit_secs=0),
        Faults(error_burst_every=9, error_burst_len=2, error_status=502),
        Faults(reset_every=11),
        Faults(truncate_every=8, scope=Scope(categories=frozenset({"resolve_get"}))),
        Faults(slow_ms=20),
    ],
    ids=["429", "5xx-burst", "reset", "truncated", "slow"],
)
@pytest.mark.slow
def test_transient_faults_are_retried_and_the_crawl_matches_a_clean_one(minihub, tmp_path, faults):
    with StandinHub(minihub) as hub:
        _, clean = run_crawl(hub, tmp_path / "clean.duckdb")
        hub.set_faults(faults)
        _summary, faulty = run_crawl(hub, tmp_path / "faulty.duckdb")
        injected = hub.stats()["faults_injected"]
    assert injected > 0
    assert faulty == clean


@pytest.mark.slow
def test_permanent_fault_is_recorded_and_the_crawl_goes_on(minihub, tmp_path):
    truth = expected(minihub)
    victim = sorted(k for k, v in truth.items() if v == "eligible")[0]
    with StandinHub(minihub, faults=Faults(corrupt_parquet=(victim,))) as hub:
        summary, got = run_crawl(hub, tmp_path / "r.duckdb")
    assert got[victim].startswith("error:")
    assert summary.eligible == sum(v == "eligible" for v in truth.values()) - 1


def test_gated_files_are_not_retried(minihub, tmp_path):
    """401/403/404 are outcomes, not transient failures: one request each, no retry."""
    gated = sorted(k for k, v in expected(minihub).items() if v == "gated")
    with StandinHub(minihub) as hub:
        client = client_for(hub)
        from hubsurvey.core.errors import GatedError

        with pytest.raises(GatedError):
            client.parquet_footer(gated[0], "default/test/0000.parquet")
        assert hub.stats()["resolve_get"] == 1


@pytest.mark.slow
def test_incremental_recrawl_makes_no_resolve_calls_for_unchanged_datasets(minihub, tmp_path):
    db = tmp_path / "r.duckdb"
    with StandinHub(minihub) as hub:
        _first, got = run_crawl(hub, db)
        hub.reset_stats()
        second, again = run_crawl(hub, db)
        stats = hub.stats()
        assert again == got and second.resolved == 0
        assert stats["tree"] == 0 and stats["resolve_get"] == 0 and stats["resolve_head"] == 0
        changed = sorted(k for k, v in got.items() if v == "eligible")[0]
        hub.set_sha(changed, "f" * 40)
        hub.reset_stats()
        third, _ = run_crawl(hub, db)
        assert third.resolved == 1 and hub.stats()["info"] == 1 and hub.stats()["tree"] == 0
    with Store(db) as store:
        assert store.records("SELECT sha, resolved_sha FROM datasets WHERE dataset_id = $d", {"d": changed}) == [
            {"sha": "f" * 40, "resolved_sha": "f" * 40}
        ]


@pytest.mark.slow
def test_token_never_reaches_the_db_or_the_output(minihub, tmp_path, monkeypatch):
    token = "hf_SuperSecretToken987654321"
    db = tmp_path / "r.duckdb"
    with StandinHub(minihub, valid_tokens={token}) as hub:
        monkeypatch.setenv("HF_TOKEN", token)
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        result = CliRunner().invoke(app, ["crawl", "--db", str(db), "--rate", "0", "--file-rate", "0"])
    assert result.exit_code == 0, result.output
    assert "listed" in result.stdout and "eligible" in result.stdout
    assert token not in result.output
    assert not secret_hits(token, db=db, paths=[Path(str(db) + ".wal")])  # SQL scan of every text column


def _card_root(tmp_path: Path, shared: Path, test_rows: int | None) -> Path:
    entry = {"id": "CogComp/trec", "dir": str(shared / "CogComp__trec"), "tags": ["modality:text", "size_categories:1K<n<10K"]}
    if test_rows is not None:
        entry["cardData"] = {"dataset_info": {"config_name": "default", "splits": [
            {"name": "train", "num_examples": 5452}, {"name": "test", "num_examples": test_rows}]}}
    else:
        entry["cardData"] = {}
    root = tmp_path / f"root-{test_rows}"
    root.mkdir()
    (root / "index.json").write_text(json.dumps([entry]))
    return root


@pytest.mark.parametrize("test_rows,rows_from,file_requests", [(500, "card, checked", 1), (499, "footers", 2), (None, "footers", 2)])
@pytest.mark.slow
def test_card_sizes_are_used_only_when_a_footer_confirms_them(shared_datasets, tmp_path, test_rows, rows_from, file_requests):
    with StandinHub(_card_root(tmp_path, shared_datasets, test_rows)) as hub:
        _summary, got = run_crawl(hub, tmp_path / "r.duckdb")
        stats = hub.stats()
    assert got == {"CogComp/trec": "eligible"}
    assert stats["info"] == 1 and stats["tree"] == 0 and stats["resolve_get"] == file_requests
    with Store(tmp_path / "r.duckdb") as store:
        (row,) = store.records("SELECT total_rows, configs FROM datasets")
    assert row["total_rows"] == 5452 + 500  # the true count either way
    splits = json.loads(row["configs"])["default"]
    assert {s: v["rows"] for s, v in splits.items()} == {"train": 5452, "test": 500}
    assert {v["rows_from"] for v in splits.values()} == {rows_from}


@pytest.mark.slow
def test_several_authors_are_listed_server_side_one_listing_each(minihub, tmp_path, monkeypatch):
    """--author A --author B: one listing per author (the Hub filters), never the whole Hub."""
    truth = expected(minihub)
    authors = sorted({k.split("/")[0] for k in truth})[:2]
    queries = []
    original = HubClient.list_dataset_pages

    def spy(self, **kwargs):
        queries.append(kwargs.get("author"))
        return original(self, **kwargs)

    monkeypatch.setattr(HubClient, "list_dataset_pages", spy)
    with StandinHub(minihub) as hub:
        _, got = run_crawl(hub, tmp_path / "r.duckdb", CrawlFilters(authors=authors))
    assert queries == authors
    listed = {k for k, v in truth.items() if v != "error:private" and k.split("/")[0] in authors}
    assert set(got) == listed and len(authors) == 2
