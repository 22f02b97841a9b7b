"""The crawl at Hub scale: what the listing decides, the resumable listing, and Hub faults that
must not exclude a dataset for good. Against the stand-in, counting the requests it saw."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from hubsurvey.core.errors import HubError
from hubsurvey.core.hub import HubClient
from hubsurvey.core.store import Store
from hubsurvey.crawler import crawl as crawl_module
from hubsurvey.crawler import rules
from hubsurvey.crawler.crawl import crawl, listing_key
from hubsurvey.crawler.rules import CrawlFilters, decide_from_card
from hubsurvey_standin import Faults, Scope, StandinHub, generate_minihub
from hubsurvey_standin import parquetio as pio

TEXT = {"text": pio.value("string"), "label": pio.class_label(["neg", "pos"])}
IMAGE = {"image": pio.media("Image"), "label": pio.class_label(["a", "b"])}
TEXT_FEATURES = [{"name": "text", "dtype": "string"}, {"name": "label", "dtype": {"class_label": {"names": {"0": "neg", "1": "pos"}}}}]
IMAGE_FEATURES = [{"name": "image", "dtype": "image"}, {"name": "label", "dtype": "int64"}]


def _card(splits: dict[str, int], features=TEXT_FEATURES, config: str = "default") -> dict:
    return {"dataset_info": {"config_name": config, "features": features,
                             "splits": [{"name": s, "num_examples": n} for s, n in splits.items()]}}


def _files(folder: Path, splits: dict[str, int], features=TEXT) -> None:
    for split, n in splits.items():
        path = folder / "default" / split / "0000.parquet"
        path.parent.mkdir(parents=True)
        if "text" in features:
            columns = {"text": [f"row {split} {i} words here" for i in range(n)], "label": [i % 2 for i in range(n)]}
        else:
            columns = {"image": [{"bytes": bytes([i % 256]) * 8, "path": None} for i in range(n)], "label": [i % 2 for i in range(n)]}
        path.write_bytes(pio.parquet_bytes(columns, features))


# (id, files on the Parquet branch, listing entry extras, expected reason, decided_by)
CASES = [
    ("o/gated", {"train": 5, "test": 3}, {"gated": "manual"}, "gated", "listing"),
    ("o/disabled", {"train": 5, "test": 3}, {"disabled": True}, "disabled", "listing"),
    ("o/big-tag", {"train": 5, "test": 3}, {"tags": ["size_categories:1M<n<10M"]}, "too_many_rows", "listing"),
    ("o/image-tag", {"train": 5, "test": 3}, {"tags": ["modality:image"]}, "not_text", "listing"),
    ("o/card-no-test", {"train": 5}, {"cardData": _card({"train": 5})}, "no_test_split", "listing"),
    ("o/card-big", {"train": 5, "test": 3}, {"cardData": _card({"train": 900_000, "test": 200_000})}, "too_many_rows", "listing"),
    ("o/card-image", {"train": 5, "test": 3}, {"cardData": _card({"train": 5, "test": 3}, IMAGE_FEATURES)}, "not_text", "listing"),
    # The card calls it eligible; the Parquet files decide (the card never admits).
    ("o/card-says-eligible", {"train": 5}, {"cardData": _card({"train": 5, "test": 3})}, "no_test_split", "parquet"),
    ("o/eligible", {"train": 5, "test": 3}, {"cardData": _card({"train": 5, "test": 3})}, None, "parquet"),
    ("o/no-card", {"train": 5, "test": 3}, {"cardData": {}}, None, "parquet"),
    # A stale card: it says no test split, the files have one. The listing excludes it.
    ("o/stale-card", {"train": 5, "test": 3}, {"cardData": _card({"train": 5})}, "no_test_split", "listing"),
]


@pytest.fixture(scope="module")
def card_root(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("cards")
    entries = []
    for repo_id, splits, extra, _reason, _by in CASES:
        folder = root / repo_id.replace("/", "__")
        _files(folder, splits, IMAGE if "image" in repo_id else TEXT)
        entries.append({"id": repo_id, "tags": ["modality:text"], **extra})
    (root / "index.json").write_text(json.dumps(entries))
    return root


@pytest.fixture(scope="module")
def filler_root(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("filler")
    (root / "index.json").write_text(json.dumps({"datasets": [], "filler": {"count": 260, "seed": 3}}))
    return root


def client_for(hub: StandinHub, **kwargs) -> HubClient:
    return HubClient(endpoint=hub.url, rate=None, file_rate=None, max_wait=0.01, **kwargs)


def rows(db: Path) -> dict[str, dict]:
    with Store(db) as store:
        return {r["dataset_id"]: r for r in store.records("SELECT * FROM datasets")}


# --- what the listing decides ---------------------------------------------------------------------

def test_each_reason_is_decided_from_the_listing_with_no_request_and_the_card_never_admits(card_root, tmp_path):
    db = tmp_path / "r.duckdb"
    with StandinHub(card_root) as hub, Store(db) as store:
        summary = crawl(store, client_for(hub))
        stats = hub.stats()
    got = rows(db)
    for repo_id, _splits, _extra, reason, by in CASES:
        assert (got[repo_id]["exclusion_reason"], got[repo_id]["decided_by"]) == (reason, by), repo_id
    from_parquet = [c[0] for c in CASES if c[4] == "parquet"]
    # One API call per dataset resolved against its files, none for the others; one listing page.
    assert stats["info"] == len(from_parquet) and stats["tree"] == 0 and stats["list"] == 1
    assert summary.from_listing == len(CASES) - len(from_parquet) and summary.resolved == len(from_parquet)
    assert got["o/eligible"]["parquet_sha"] and got["o/eligible"]["total_rows"] == 8
    assert all(got[r]["resolved_sha"] is None for r, *_ in CASES if got[r]["decided_by"] == "listing")


@pytest.mark.slow
def test_recheck_listing_resolves_what_the_card_excluded_and_keeps_the_hubs_facts(card_root, tmp_path):
    db = tmp_path / "r.duckdb"
    with StandinHub(card_root) as hub, Store(db) as store:
        crawl(store, client_for(hub))
        hub.reset_stats()
        summary = crawl(store, client_for(hub), recheck_listing=True)
        stats = hub.stats()
    got = rows(db)
    assert (got["o/stale-card"]["status"], got["o/stale-card"]["decided_by"]) == ("eligible", "parquet")
    # gated and disabled are the Hub's facts, not claims: still decided from the listing
    assert {got[d]["decided_by"] for d in ("o/gated", "o/disabled")} == {"listing"}
    # true claims are confirmed by the files; the datasets resolved before (unchanged sha) are not asked again
    assert got["o/card-no-test"]["exclusion_reason"] == "no_test_split" and got["o/card-no-test"]["decided_by"] == "parquet"
    assert got["o/card-image"]["exclusion_reason"] == "not_text" and got["o/card-image"]["decided_by"] == "parquet"
    # the card and the tag said too many rows; the files hold 8: stale claims, now admitted
    assert {got[d]["status"] for d in ("o/card-big", "o/big-tag")} == {"eligible"}
    rechecked = ["o/big-tag", "o/image-tag", "o/card-no-test", "o/card-big", "o/card-image", "o/stale-card"]
    assert stats["info"] == summary.resolved == len(rechecked)


@pytest.mark.parametrize(
    ("card", "want"),
    [
        (_card({"train": 5}), "no_test_split"),
        (_card({"train": 5, "validation": 2}), "no_test_split"),
        (_card({"train": 5, "testing": 2}), "no_test_split"),  # not a test split's name
        (_card({"train": 5, "test": 2}), None),
        (_card({"train": 999_999, "test": 1}), "too_many_rows"),
        (_card({"train": 999_998, "test": 1}), None),
        (_card({"train": 5, "test": 2}, IMAGE_FEATURES), "not_text"),
        (_card({"train": 5, "test": 2}, [{"name": "id", "dtype": "string"}, {"name": "x", "dtype": "float32"}]), "not_text"),
        (_card({"train": 5, "test": 2}, [{"name": "tokens", "sequence": "string"}]), None),
        (_card({"train": 5, "test": 2}, [{"name": "answers", "struct": [{"name": "text", "dtype": "string"}]}]), None),
        (_card({"train": 5, "test": 2}, [{"name": "x", "dtype": {"weird": 1}}]), None),  # unknown: undecided
        ({"dataset_info": [_card({"train": 5})["dataset_info"], _card({"test": 5}, config="b")["dataset_info"]]}, None),
        # a config the card names but does not describe may hold a test split
        ({**_card({"train": 5}), "configs": [{"config_name": "default"}, {"config_name": "other"}]}, None),
        ({"dataset_info": {"config_name": "default", "splits": [{"name": "train"}]}}, "no_test_split"),
        # configs' data_files name the splits too (a plain pattern is the train split)
        ({"configs": [{"config_name": "default", "data_files": "data/*/*.parquet"}]}, "no_test_split"),
        ({"configs": [{"config_name": "default", "data_files": ["a.csv", "b.csv"]}]}, "no_test_split"),
        ({"configs": [{"config_name": "default", "data_files": [{"split": "train", "path": "t*"}, {"split": "test", "path": "e*"}]}]}, None),
        ({"configs": [{"config_name": "default", "data_files": {"train": "t*", "validation": "v*"}}]}, "no_test_split"),
        ({"configs": [{"config_name": "default", "data_dir": "data"}]}, None),  # split names from file names: unknown
        ({"configs": [{"config_name": "a", "data_files": "x"}, {"config_name": "b"}]}, None),
        ({"dataset_info": "garbage"}, None),
        ({"dataset_info": {"splits": "garbage", "features": 3}}, None),
        (None, None),
    ],
)
def test_card_rules(card, want):
    assert decide_from_card(card, CrawlFilters()) == want


@pytest.mark.parametrize(
    ("files", "card", "want"),
    [
        ([".gitattributes", "README.md", "data/train.csv"], None, "no_test_split"),
        (["train.jsonl", "valid.jsonl"], {"license": "mit"}, "no_test_split"),
        (["data/train.csv", "data/test.csv"], None, None),
        (["train.jsonl", "my_eval.jsonl"], None, None),
        (["data/train-00000.parquet", "data/TEST-00000.parquet"], None, None),
        (["images/testing/0001.png"], None, None),
        (["contest.csv"], None, "no_test_split"),  # "test" inside a word is not a split name
        (["x.py", "x.csv"], None, None),  # a loading script decides its own splits
        ([".gitattributes", "README.md"], None, None),  # no data on main: nothing to infer
        (["data/train.csv"], {"configs": [{"config_name": "default", "data_dir": "d"}]}, None),  # the card's configs rule
        (None, None, None),
    ],
)
def test_split_names_from_the_file_names_of_a_card_without_splits(files, card, want):
    assert rules.decide_from_files(files, card) == want


def test_a_listing_item_with_files_is_decided_from_them():
    item = {"id": "o/x", "tags": ["modality:text"], "card": None, "files": ["train.csv"]}
    assert rules.decide_from_listing(item, CrawlFilters()) == "no_test_split"
    assert rules.decide_from_listing(item, CrawlFilters(), claims=False) is None


def test_the_card_never_admits_what_the_hub_gates():
    item = {"id": "o/x", "gated": "auto", "tags": [], "card": _card({"train": 5, "test": 2})}
    assert rules.decide_from_listing(item, CrawlFilters()) == "gated"
    assert rules.decide_from_listing(item, CrawlFilters(), claims=False) == "gated"


# --- the resumable listing ------------------------------------------------------------------------

PAGE = 40  # 260 datasets: 7 pages


@pytest.mark.slow
def test_a_listing_whose_page_keeps_failing_resumes_from_that_page(filler_root, tmp_path):
    db = tmp_path / "r.duckdb"
    broken = Faults(error_burst_every=3, error_burst_len=3, error_status=503, scope=Scope(categories=frozenset({"list"})))
    with StandinHub(filler_root, page_size=PAGE, faults=broken) as hub:
        with Store(db) as store, pytest.raises(HubError, match="HTTP 503"):
            crawl(store, client_for(hub, max_attempts=2))
        assert hub.stats()["list"] == 4  # pages 1 and 2, then page 3 twice
        with Store(db) as store:
            assert store.records("SELECT count(*) AS n FROM datasets")[0]["n"] == 2 * PAGE
            (state,) = store.records("SELECT * FROM crawl_listings")
        assert state["pages"] == 2 and state["items"] == 2 * PAGE and "cursor=" in state["next_url"]
        hub.set_faults(Faults())
        hub.reset_stats()
        with Store(db) as store:
            summary = crawl(store, client_for(hub))
        assert hub.stats()["list"] == 5  # pages 3..7 only
        assert summary.resumed and summary.listed == 260 - 2 * PAGE
        with Store(db) as store:
            assert store.records("SELECT count(*) AS n FROM datasets")[0]["n"] == 260
            (done,) = store.records("SELECT * FROM crawl_listings")
        assert done["next_url"] is None and done["completed_at"] is not None and done["pages"] == 7 and done["items"] == 260
        hub.reset_stats()
        with Store(db) as store:
            again = crawl(store, client_for(hub))
        assert hub.stats()["list"] == 7 and not again.resumed and again.listed == 260  # a completed listing starts fresh


def test_a_killed_crawl_resumes_from_the_cursor_written_with_the_last_page(filler_root, tmp_path):
    db = tmp_path / "r.duckdb"
    written = []

    def kill_after_two_pages(counts):
        written.append(counts["listed"])
        if len(written) == 2:
            raise KeyboardInterrupt

    with StandinHub(filler_root, page_size=PAGE) as hub:
        with Store(db) as store, pytest.raises(KeyboardInterrupt):
            crawl(store, client_for(hub), progress=kill_after_two_pages)
        with Store(db) as store:
            assert store.records("SELECT status FROM runs")[0]["status"] == "interrupted"
            assert store.records("SELECT count(*) AS n FROM datasets")[0]["n"] == 2 * PAGE
        hub.reset_stats()
        with Store(db) as store:
            summary = crawl(store, client_for(hub))
        assert summary.resumed and hub.stats()["list"] == 5
    assert len(rows(db)) == 260


def test_the_cursor_belongs_to_its_query(filler_root, tmp_path):
    """A stored cursor of one filter set, or of another Hub, is not resumed by another listing."""
    assert len({listing_key({"author": "a"}), listing_key({"author": "b"}), listing_key({}),
                listing_key({}, "http://127.0.0.1:1"), listing_key({}, "http://127.0.0.1:2")}) == 5


def _rewrite_listing(hub: StandinHub, monkeypatch, change) -> None:
    """Let ``change(items, headers, request)`` rewrite each listing page the stand-in answers."""
    original = hub.app.list_datasets

    def patched(req):
        response = original(req)
        items = json.loads(response.body)
        items = change(items, response.headers, req)
        response.body = json.dumps(items).encode()
        return response

    monkeypatch.setattr(hub.app, "list_datasets", patched)


@pytest.mark.slow
def test_a_link_that_cycles_back_ends_the_listing_with_one_warning(filler_root, tmp_path, monkeypatch, caplog):
    with StandinHub(filler_root, page_size=PAGE) as hub:
        first: list[str] = []

        def cycle(items, headers, req):
            if not first:
                first.append(f"{hub.url}{req.path}?" + "&".join(f"{k}={v}" for k, v in req.query))
            if "Link" not in headers:  # the last page links back to the first
                headers["Link"] = f'<{first[0]}>; rel="next"'
            return items

        _rewrite_listing(hub, monkeypatch, cycle)
        with caplog.at_level(logging.WARNING), Store(tmp_path / "r.duckdb") as store:
            summary = crawl(store, client_for(hub))
        assert hub.stats()["list"] == 7
    warnings = [r for r in caplog.records if "points back" in r.getMessage()]
    assert len(warnings) == 1 and summary.listed == 260


def test_a_tree_page_that_links_to_itself_ends(filler_root, monkeypatch, caplog):
    with StandinHub(filler_root) as hub:
        original = hub.app.tree

        def self_link(req, repo_id, rev, path):
            response = original(req, repo_id, rev, path)
            response.headers["Link"] = f'<{hub.url}{req.path}?recursive=true&expand=false>; rel="next"'
            return response

        monkeypatch.setattr(hub.app, "tree", self_link)
        client = client_for(hub)
        dataset = next(p for p in client.list_dataset_pages(limit=50))
        repo_id = next(i["id"] for i in dataset.items if "format:parquet" in i.get("tags", []))
        hub.reset_stats()
        with caplog.at_level(logging.WARNING):
            files = client.parquet_tree(repo_id)
        assert files and hub.stats()["tree"] == 1
    assert any("points back" in r.getMessage() for r in caplog.records)


@pytest.mark.slow
def test_an_id_listed_twice_on_a_page_or_across_pages_is_stored_once(filler_root, tmp_path, monkeypatch):
    with StandinHub(filler_root, page_size=PAGE) as hub:
        carried: list[dict] = []

        def duplicate(items, headers, req):
            out = [items[0], *items, *carried]  # the same id twice on this page, and the last page's last again
            carried[:] = [items[-1]]
            return out

        _rewrite_listing(hub, monkeypatch, duplicate)
        with Store(tmp_path / "r.duckdb") as store:
            summary = crawl(store, client_for(hub))
            (counts,) = store.records("SELECT count(*) AS n, count(DISTINCT dataset_id) AS d FROM datasets")
    assert counts == {"n": 260, "d": 260} and summary.listed == 260


@pytest.mark.slow
def test_a_bad_listing_item_excludes_that_item_alone(filler_root, tmp_path, monkeypatch, caplog):
    bad = {0: ("lastModified", "yesterday"), 1: ("cardData", ["a", "list"]), 2: ("tags", "modality:text"),
           3: ("downloads", "many"), 4: ("gated", {"x": 1}), 5: ("siblings", [{"rfilename": 3}])}
    with StandinHub(filler_root, page_size=PAGE) as hub:
        victims: dict[str, str] = {}

        def spoil(items, headers, req):
            if not victims:
                for i, (field, value) in bad.items():
                    items[i][field] = value
                    victims[items[i]["id"]] = field
                items.insert(6, {"id": None, "tags": []})  # no id: nothing to store, one warning
            return items

        _rewrite_listing(hub, monkeypatch, spoil)
        with caplog.at_level(logging.WARNING), Store(tmp_path / "r.duckdb") as store:
            summary = crawl(store, client_for(hub))
    got = rows(tmp_path / "r.duckdb")
    assert len(got) == 260 and summary.listed == 260
    for repo_id, field in victims.items():
        assert got[repo_id]["exclusion_reason"] == f"invalid_listing:{field}", repo_id
        assert got[repo_id]["decided_by"] == "listing"
    assert sum("is not valid; excluded" in r.getMessage() for r in caplog.records) == len(bad)
    assert sum("without a dataset id" in r.getMessage() for r in caplog.records) == 1


@pytest.mark.slow
def test_a_since_last_crawl_lists_only_down_to_the_high_water_mark(tmp_path):
    root = generate_minihub(tmp_path / "mini", seed=0, filler=300)
    db = tmp_path / "r.duckdb"
    with StandinHub(root, page_size=50) as hub:
        with Store(db) as store:
            full = crawl(store, client_for(hub))
        changed = sorted(d for d, r in rows(db).items() if r["status"] == "eligible")[:2]
        for dataset_id in changed:
            hub.set_sha(dataset_id, "e" * 40)  # lastModified becomes now: the head of the listing
        hub.reset_stats()
        with Store(db) as store:
            night = crawl(store, client_for(hub), since_last=True)
        stats = hub.stats()
    assert full.pages > 3 and night.pages == 1 and stats["list"] == 1
    assert night.resolved == 2 and stats["info"] == 2  # only the changed ones are resolved again
    got = rows(db)
    assert all(got[d]["resolved_sha"] == "e" * 40 for d in changed)


@pytest.mark.slow
def test_a_since_last_crawl_asks_again_for_what_an_earlier_crawl_left_pending(tmp_path, monkeypatch):
    """A since-last listing reaches only the datasets changed since the last one. Those an earlier
    crawl left pending (a Hub fault; a decision a job dropped when the Parquet branch lost its
    files) are asked for by id and decided; one the Hub no longer serves is recorded as such."""
    root = generate_minihub(tmp_path / "mini", seed=0, filler=300)
    with StandinHub(root, page_size=50) as hub:
        with Store(tmp_path / "pick.duckdb") as store:
            crawl(store, client_for(hub))
        faulted, dropped, gone = sorted(d for d, r in rows(tmp_path / "pick.duckdb").items() if r["status"] == "eligible")[:3]
        db = tmp_path / "r.duckdb"
        original = hub.app.info
        monkeypatch.setattr(hub.app, "info", lambda req, repo_id, rev: (_html if repo_id in (faulted, gone) else original)(req, repo_id, rev))
        with Store(db) as store:
            first = crawl(store, client_for(hub, max_attempts=1))
        assert first.hub_faults == 2 and rows(db)[dropped]["status"] == "eligible"
        monkeypatch.setattr(hub.app, "info", original)
        hub.set_private(gone)
        with Store(db) as store:  # what a job whose files left the Parquet branch does to its dataset's decision
            store.con.execute("UPDATE datasets SET resolved_sha = NULL WHERE dataset_id = $d", {"d": dropped})
        hub.reset_stats()
        with Store(db) as store:
            night = crawl(store, client_for(hub), since_last=True)
        stats = hub.stats()
        with Store(db) as store:
            again = crawl(store, client_for(hub), since_last=True)
        got = rows(db)
        with Store(db) as store:
            # a night after many Hub faults asks for a bounded number, the longest waiting first
            for dataset_id, days in ((faulted, 1), (dropped, 2)):
                store.con.execute("UPDATE datasets SET resolved_sha = NULL, last_seen = last_seen - to_days($n) "
                                  "WHERE dataset_id = $d", {"d": dataset_id, "n": days})
            monkeypatch.setattr(crawl_module, "RETRY_LIMIT", 1)
            bounded = crawl(store, client_for(hub), since_last=True)
    assert (bounded.retried, bounded.pending_left) == (1, 1) and "1 more left pending for the next crawls" in bounded.line()
    after = rows(db)
    assert after[dropped]["resolved_sha"] is not None and after[faulted]["resolved_sha"] is None  # waiting longest
    assert night.pages == 1 and stats["list"] == 1  # nothing changed: the listing stops at its high-water mark
    assert night.retried == 3 and night.hub_faults == 0 and again.retried == 0
    for dataset_id in (faulted, dropped):
        assert (got[dataset_id]["status"], got[dataset_id]["resolved_sha"]) == ("eligible", got[dataset_id]["sha"]), dataset_id
    assert (got[gone]["status"], got[gone]["exclusion_reason"], got[gone]["decided_by"]) == ("excluded", rules.NOT_FOUND, "listing")
    assert "3 left pending by an earlier crawl asked for again" in night.line()


# --- a Hub fault is not a property of the dataset -------------------------------------------------

def _html(*_):
    from hubsurvey_standin.server import _Response

    return _Response(200, b"<html><body>Checking your browser...</body></html>", {"Content-Type": "text/html"})


def _truncated_json(original):
    def answer(req, repo_id, rev):
        response = original(req, repo_id, rev)
        response.body = response.body[: len(response.body) // 2]
        return response
    return answer


def _json_list(*_):
    from hubsurvey_standin.server import _json

    return _json([{"sha": "0" * 40}])


def _no_sha(original):
    def answer(req, repo_id, rev):
        response = original(req, repo_id, rev)
        body = json.loads(response.body)
        body.pop("sha")
        response.body = json.dumps(body).encode()
        return response
    return answer


def _redirect_loop(req, repo_id, rev):
    from hubsurvey_standin.server import _Response

    return _Response(302, b"", {"Location": req.path})


@pytest.mark.parametrize(
    ("fault", "cls"),
    [("html", "HubFaultError"), pytest.param("truncated", "HubFaultError", marks=pytest.mark.slow),
     pytest.param("list", "HubFaultError", marks=pytest.mark.slow), pytest.param("no_sha", "HubFaultError", marks=pytest.mark.slow),
     pytest.param("redirect_loop", "HubFaultError", marks=pytest.mark.slow), ("503", "HfHubHTTPError")],
)
@pytest.mark.slow
def test_a_hub_fault_while_resolving_is_retried_by_the_next_crawl(card_root, tmp_path, monkeypatch, fault, cls):
    db = tmp_path / "r.duckdb"
    victim = "o/eligible"
    with StandinHub(card_root) as hub:
        original = hub.app.info
        if fault == "503":
            hub.set_faults(Faults(error_burst_every=1, error_burst_len=1, error_status=503,
                                  scope=Scope(categories=frozenset({"info"}), dataset=victim)))
        else:
            make = {"html": lambda o: _html, "truncated": _truncated_json, "list": lambda o: _json_list,
                    "no_sha": _no_sha, "redirect_loop": lambda o: _redirect_loop}[fault]
            faulty = make(original)
            monkeypatch.setattr(hub.app, "info", lambda req, repo_id, rev: (faulty if repo_id == victim else original)(req, repo_id, rev))
        with Store(db) as store:
            first = crawl(store, client_for(hub, max_attempts=2))
        hurt = rows(db)[victim]
        assert (hurt["exclusion_reason"], hurt["resolved_sha"]) == (f"hub_fault:{cls}", None)
        assert first.hub_faults == 1 and rows(db)["o/no-card"]["status"] == "eligible"  # the others are unharmed
        monkeypatch.setattr(hub.app, "info", original)
        hub.set_faults(Faults())
        hub.reset_stats()
        with Store(db) as store:
            second = crawl(store, client_for(hub))
        assert second.resolved == 1 and hub.stats()["info"] == 1  # only the faulted dataset is asked again
    healed = rows(db)[victim]
    assert healed["status"] == "eligible" and healed["resolved_sha"] is not None


@pytest.mark.slow
def test_a_real_property_found_in_the_files_stands_until_the_sha_changes(card_root, tmp_path):
    db = tmp_path / "r.duckdb"
    with StandinHub(card_root) as hub:
        with Store(db) as store:
            crawl(store, client_for(hub))
        hub.reset_stats()
        with Store(db) as store:
            crawl(store, client_for(hub))
        assert hub.stats()["info"] == 0  # no_test_split from the files, and eligible ones, are kept
        hub.set_sha("o/card-says-eligible", "d" * 40)
        hub.reset_stats()
        with Store(db) as store:
            crawl(store, client_for(hub))
        assert hub.stats()["info"] == 1
    assert rows(db)["o/card-says-eligible"]["resolved_sha"] == "d" * 40


@pytest.mark.slow
@pytest.mark.parametrize("answer", ["html", pytest.param("object", marks=pytest.mark.slow), pytest.param("truncated", marks=pytest.mark.slow)])
def test_a_malformed_listing_page_is_a_hub_error_and_the_next_crawl_resumes_there(filler_root, tmp_path, monkeypatch, answer):
    """A JSONDecodeError after a few pages (an HTML page with status 200, a truncated body, an object
    where the list belongs): the crawl ends with exit 4 in one line, the next one resumes at that page."""
    from typer.testing import CliRunner

    from hubsurvey.cli import app
    from hubsurvey_standin.server import _Response

    db = tmp_path / "r.duckdb"
    with StandinHub(filler_root, page_size=PAGE) as hub:
        original = hub.app.list_datasets
        calls = []

        def broken(req):
            response = original(req)
            calls.append(1)
            if len(calls) >= 3:
                body = {"html": b"<html>Just a moment...</html>", "object": b'{"items": []}',
                        "truncated": response.body[: len(response.body) // 3]}[answer]
                return _Response(200, body, {"Content-Type": "text/html" if answer == "html" else "application/json"})
            return response

        monkeypatch.setattr(hub.app, "list_datasets", broken)
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        monkeypatch.setenv("HUBSURVEY_MAX_ATTEMPTS", "2")
        result = CliRunner().invoke(app, ["crawl", "--db", str(db), "--rate", "0", "--file-rate", "0"])
        assert result.exit_code == 4, result.output
        errors = [line for line in result.stderr.splitlines() if "error" in line.lower()]
        assert len(errors) == 1 and errors[0].startswith("error: listing datasets on ") and ", page 3: " in errors[0]
        assert "Traceback" not in result.output
        assert rows(db) and len(rows(db)) == 2 * PAGE
        monkeypatch.setattr(hub.app, "list_datasets", original)
        hub.reset_stats()
        again = CliRunner().invoke(app, ["crawl", "--db", str(db), "--rate", "0", "--file-rate", "0"])
        assert again.exit_code == 0, again.output
        assert hub.stats()["list"] == 5 and "listed 180" in again.stdout
    assert len(rows(db)) == 260


@pytest.mark.slow
def test_a_hub_fault_an_earlier_version_stored_as_permanent_is_resolved_again(card_root, tmp_path):
    db = tmp_path / "r.duckdb"
    with StandinHub(card_root) as hub:
        with Store(db) as store:
            crawl(store, client_for(hub))
            store.con.execute("UPDATE datasets SET status = 'excluded', exclusion_reason = 'error:JSONDecodeError', "
                              "decided_by = NULL WHERE dataset_id = 'o/eligible'")
        hub.reset_stats()
        with Store(db) as store:
            summary = crawl(store, client_for(hub))
        assert summary.resolved == 1 and hub.stats()["info"] == 1
    assert rows(db)["o/eligible"]["status"] == "eligible"


@pytest.mark.slow
def test_a_lastmodified_in_the_future_does_not_become_the_high_water_mark(filler_root, tmp_path, monkeypatch):
    with StandinHub(filler_root, page_size=PAGE) as hub:
        def future(items, headers, req):
            if "cursor" not in req.path + str(req.query):
                items[0]["lastModified"] = "9999-01-01T00:00:00.000Z"
            return items

        _rewrite_listing(hub, monkeypatch, future)
        with Store(tmp_path / "r.duckdb") as store:
            crawl(store, client_for(hub))
            (state,) = store.records("SELECT high_water FROM crawl_listings")
    assert state["high_water"] is not None and state["high_water"].year < 9999
