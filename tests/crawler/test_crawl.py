"""The crawler against the local Hub stand-in: filters, reasons, pagination, faults, increments."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from huggingface_hub.errors import EntryNotFoundError
from leaks import secret_hits
from typer.testing import CliRunner

from hubsurvey.cli import app
from hubsurvey.core.hub import PARQUET_REVISION, HubClient, ParquetFile
from hubsurvey.core.store import Store
from hubsurvey.crawler import rules
from hubsurvey.crawler.crawl import _resolve_named, crawl
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


# --- the Parquet branch's files named by the card ---------------------------------------------------


def _pushed_root(tmp_path: Path, shared: Path, name: str, **extra) -> Path:
    """Every shared dataset as ``datasets.push_to_hub`` leaves it (its files on main, named by split
    in the card's ``configs``), with ``extra`` overriding its entry (``cardData``, ...)."""
    entries = [{**{k: v for k, v in e.items() if k in ("id", "tags")}, "dir": str(shared / e["id"].replace("/", "__")),
                "pushed": True, **extra.get(e["id"], {})} for e in json.loads((shared / "index.json").read_text())]
    root = tmp_path / name
    root.mkdir()
    (root / "index.json").write_text(json.dumps(entries))
    return root


def _decisions(db: Path) -> dict[str, tuple]:
    with Store(db) as store:
        return {r["dataset_id"]: (r["status"], r["exclusion_reason"], r["total_rows"], json.loads(r["configs"] or "null"),
                                  r["parquet_sha"], r["decided_by"])
                for r in store.records("SELECT * FROM datasets")}


@pytest.mark.slow
def test_files_the_card_names_decide_as_the_branch_listing_does_without_an_api_call(shared_datasets, tmp_path):
    """Every shared dataset pushed: the crawl reads each split's footer where the card names the
    files, and stores what listing every branch stores, with no API call beyond the listing."""
    with StandinHub(_pushed_root(tmp_path, shared_datasets, "pushed")) as hub:
        named, _ = run_crawl(hub, tmp_path / "named.duckdb")
        named_stats = hub.stats()
        hub.reset_stats()
        listed, _ = run_crawl(hub, tmp_path / "listed.duckdb", CrawlFilters(list_every_branch=True))
        listed_stats = hub.stats()
    by_card, by_listing = _decisions(tmp_path / "named.duckdb"), _decisions(tmp_path / "listed.duckdb")
    splits = sum(len(sp) for d in by_listing.values() for sp in (d[3] or {}).values())
    assert set(by_card) == set(by_listing) and len(by_card) == 18
    def rows_from(configs):  # the card-named rows are every footer's; a listed branch trusts a checked card
        return {c: {s: {k: v for k, v in f.items() if k != "rows_from"} for s, f in sp.items()} for c, sp in (configs or {}).items()}

    for dataset_id, decision in by_card.items():
        assert decision[:3] + decision[4:5] == by_listing[dataset_id][:3] + by_listing[dataset_id][4:5], dataset_id
        assert rows_from(decision[3]) == rows_from(by_listing[dataset_id][3]), dataset_id
        assert {f["rows_from"] for sp in (decision[3] or {}).values() for f in sp.values()} <= {"footers"}
        assert (decision[5], by_listing[dataset_id][5]) == ("card", "parquet"), dataset_id
    assert named.from_card == named.resolved == listed.resolved == 18 and listed.from_card == 0
    assert named_stats["info"] + named_stats["tree"] == 0 and listed_stats["info"] == 18
    assert named_stats["resolve_get"] == splits  # one footer a split: what the card states, each checked
    assert named.eligible == listed.eligible > 0


@pytest.mark.parametrize("card", ["stale rows", "unknown config"])
@pytest.mark.slow
def test_a_card_that_names_files_wrongly_gets_the_branch_listed(shared_datasets, tmp_path, card):
    """Stale rows (the test footer holds 500, the card says 499), or a config the branch does not
    hold: the branch is listed, and the rows stored are the files' own."""
    config = "default" if card == "stale rows" else "plain"
    files = [{"split": s, "path": f"data/{s}-*"} for s in ("train", "test")]
    stated = {"config_name": config, "splits": [{"name": "train", "num_examples": 5452},
                                                {"name": "test", "num_examples": 499 if card == "stale rows" else 500}]}
    extra = {"CogComp/trec": {"cardData": {"configs": [{"config_name": config, "data_files": files}], "dataset_info": stated}}}
    with StandinHub(_pushed_root(tmp_path, shared_datasets, "pushed", **extra)) as hub:
        summary, _ = run_crawl(hub, tmp_path / "r.duckdb")
    status, reason, total, configs, _sha, decided_by = _decisions(tmp_path / "r.duckdb")["CogComp/trec"]
    assert (status, reason, decided_by) == ("eligible", None, "parquet")
    assert total == 5952 and {s: v["rows"] for s, v in configs["default"].items()} == {"train": 5452, "test": 500}
    assert summary.from_card == 17  # the others


def test_the_card_names_the_files_only_when_one_main_file_holds_each_split():
    card = {"configs": [{"config_name": "default", "data_files": [{"split": "train", "path": "data/train-*"},
                                                                  {"split": "test", "path": "data/test-*"}]}],
            "dataset_info": {"config_name": "default", "splits": [{"name": "train", "num_examples": 10},
                                                                  {"name": "test", "num_examples": 3}]}}
    pushed = ["README.md", ".gitattributes", "data/train-00000-of-00001.parquet", "data/test-00000-of-00001.parquet"]
    assert rules.card_named_files(card, pushed) == {"default": {"train": 10, "test": 3}}
    assert rules.card_named_files(card, None) is None  # no file names in the listing
    assert rules.card_named_files(card, [*pushed, "data/test-extra.parquet"]) is None  # two test files: shards unknown
    assert rules.card_named_files(card, [*pushed, "data/test-more/0.parquet"]) is None  # '*' is taken to cross folders
    assert rules.card_named_files(card, [*pushed, "loader.py"]) is None  # a loading script decides the configs
    assert rules.card_named_files(card, pushed[:3]) is None  # no test file on main
    unstated = {**card, "dataset_info": {"config_name": "default", "splits": [{"name": "train", "num_examples": 10}]}}
    assert rules.card_named_files(unstated, pushed) is None  # a split without stated rows
    bare = {**card, "configs": [{"config_name": "default", "data_files": "data/*"}]}
    assert rules.card_named_files(bare, pushed) is None  # splits not named by the card
    as_dict = {**card, "configs": [{"config_name": "default", "data_files": {"train": ["data/train-*"], "test": "data/test-*"}}]}
    assert rules.card_named_files(as_dict, pushed) == {"default": {"train": 10, "test": 3}}
    folder = {**card, "configs": [{"config_name": "default", "data_files": [{"split": "train", "path": "data/train-*"},
                                                                            {"split": "test", "path": "data/test-00000-of-00001.parquet"}]}]}
    assert rules.card_named_files(folder, pushed) == {"default": {"train": 10, "test": 3}}
    escaping = {**card, "configs": [{**card["configs"][0], "config_name": ".."}],
                "dataset_info": {**card["dataset_info"], "config_name": ".."}}
    assert rules.card_named_files(escaping, pushed) is None  # a name that is not one folder of the branch


class _Branch:
    """A Parquet branch as the card-named resolution reads it: each path's footer rows, the commit
    and size each answer carries, and every read made (path, revision)."""

    def __init__(self, rows: dict[str, int], commit: str | dict[str, str] = "a" * 40, size: int | None = 1000,
                 text: bool = True):
        self.rows, self.commit, self.size, self.reads = rows, commit, size, []
        self._schema = pa.schema([("text", pa.string()) if text else ("x", pa.float64()), ("label", pa.int64())])

    def parquet_file(self, repo_id, path, revision):
        self.reads.append((path, revision))
        if path not in self.rows:
            raise EntryNotFoundError(f"{path} not found")
        buffer = io.BytesIO()
        pq.write_table(pa.table({f.name: pa.nulls(self.rows[path], f.type) for f in self._schema}), buffer)
        commit = self.commit if isinstance(self.commit, str) else self.commit[path]
        return ParquetFile(path, pq.read_metadata(io.BytesIO(buffer.getvalue())), commit, self.size)


_NAMED = {"default": {"train": 10, "test": 3}}
_FILES = {"default/train/0000.parquet": 10, "default/test/0000.parquet": 3}


def test_card_named_files_are_admitted_only_when_every_footer_agrees_at_one_commit():
    filters = CrawlFilters()
    branch = _Branch(_FILES)
    got = _resolve_named(branch, "o/d", filters, _NAMED)
    assert got is not None and (got.reason, got.total_rows, got.parquet_sha, got.files_from) == (None, 13, "a" * 40, "card")
    assert got.configs["default"]["test"] == {"files": ["default/test/0000.parquet"], "bytes": 1000, "rows": 3, "rows_from": "footers"}
    # the test split first (its features say text), then the others pinned to the commit it answered with
    assert branch.reads == [("default/test/0000.parquet", "refs/convert/parquet"), ("default/train/0000.parquet", "a" * 40)]
    assert _resolve_named(_Branch(_FILES, text=False), "o/d", filters, _NAMED).reason == rules.NOT_TEXT
    assert _resolve_named(_Branch(_FILES), "o/d", CrawlFilters(max_rows=13), _NAMED).reason == rules.TOO_MANY_ROWS
    # each of these lists the branch instead (None)
    assert _resolve_named(_Branch({**_FILES, "default/train/0000.parquet": 9}), "o/d", filters, _NAMED) is None  # stale rows
    assert _resolve_named(_Branch({"default/test/0000.parquet": 3}), "o/d", filters, _NAMED) is None  # a file missing
    assert _resolve_named(_Branch(_FILES, commit="main"), "o/d", filters, _NAMED) is None  # not a commit
    assert _resolve_named(_Branch(_FILES, size=None), "o/d", filters, _NAMED) is None  # no size for the cache budget
    moved = {"default/test/0000.parquet": "a" * 40, "default/train/0000.parquet": "b" * 40}
    assert _resolve_named(_Branch(_FILES, commit=moved), "o/d", filters, _NAMED) is None  # two commits
    assert _resolve_named(_Branch(_FILES), "o/d", filters, {"default": {"train": 10}}) is None  # no test split named


def _moving(client: HubClient, hub: StandinHub, dataset_id: str, moves: int) -> None:
    """Before each of the client's first ``moves`` reads of ``dataset_id`` pinned to a commit, the
    converter rewrites its Parquet branch (the same files, a new commit) and the old commit is gone."""
    left = [moves]
    for name in ("parquet_file", "parquet_footer"):
        def read(repo_id, path, revision=PARQUET_REVISION, _read=getattr(client, name)):
            if repo_id == dataset_id and revision != PARQUET_REVISION and left[0] > 0:
                left[0] -= 1
                export = hub.catalog.get(dataset_id).parquet
                hub.commit_data(dataset_id, {p: b.read() for p, b in export.files.items()}, keep_previous_export=False)
            return _read(repo_id, path, revision)
        setattr(client, name, read)


@pytest.mark.parametrize("list_every_branch", [False, True], ids=["card-named", "listed"])
@pytest.mark.slow
def test_a_branch_rewritten_while_it_is_read_is_resolved_at_its_new_commit(shared_datasets, tmp_path, list_every_branch):
    """The branch moves between two reads and its old commit is gone: the crawl lists it again and
    stores the new commit's files; moved at every read, it is a Hub fault the next crawl resolves."""
    entry = {"id": "CogComp/trec", "dir": str(shared_datasets / "CogComp__trec"), "pushed": True}
    (tmp_path / "root").mkdir()
    (tmp_path / "root" / "index.json").write_text(json.dumps([entry]))
    filters = CrawlFilters(list_every_branch=list_every_branch)
    with StandinHub(tmp_path / "root") as hub:
        before = hub.catalog.get("CogComp/trec").parquet.sha
        with Store(tmp_path / "moved.duckdb") as store:
            client = client_for(hub)
            _moving(client, hub, "CogComp/trec", 1)
            summary = crawl(store, client, filters)
        after = hub.catalog.get("CogComp/trec").parquet.sha
        status, reason, total, configs, sha, decided_by = _decisions(tmp_path / "moved.duckdb")["CogComp/trec"]
        assert after != before and sha == after
        assert (status, reason, total, decided_by) == ("eligible", None, 5952, "parquet")
        assert {s: v["rows"] for s, v in configs["default"].items()} == {"train": 5452, "test": 500}
        assert summary.hub_faults == 0

        # moved before every pinned read: not decided (no sha stored), and decided by the next crawl
        with Store(tmp_path / "churning.duckdb") as store:
            client = client_for(hub)
            _moving(client, hub, "CogComp/trec", 10)
            churning = crawl(store, client, filters)
            row = store.records("SELECT exclusion_reason, resolved_sha FROM datasets")[0]
        assert churning.hub_faults == 1 and row["exclusion_reason"] == f"{rules.HUB_FAULT}:HubFaultError"
        assert row["resolved_sha"] is None
        with Store(tmp_path / "churning.duckdb") as store:
            again = crawl(store, client_for(hub), filters)
        assert again.hub_faults == 0
        assert _decisions(tmp_path / "churning.duckdb")["CogComp/trec"][:3] == ("eligible", None, 5952)
