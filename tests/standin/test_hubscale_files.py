"""The Hub-scale stand-in's sized files: deterministic, of the simulated row counts, within their
bounds, and measured through the stand-in with the plain-Python reference's figures."""

from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from hubsurvey.core.figures import EXACT_METHOD, LLE_METHOD, figure_names
from hubsurvey_standin import StandinHub
from hubsurvey_standin.hubscale import HubScale, _split_rows
from hubsurvey_standin.reference import exact_reference, lle_reference
from hubsurvey_standin.sizedfiles import Design, FileCache, SizedBlob, split_table

pytestmark = pytest.mark.slow  # the phrase table and files of up to 60,000 rows are generated

FIGURE_COLUMNS = figure_names(LLE_METHOD) + figure_names(EXACT_METHOD)


def _eligible(scale: HubScale, limit: int, most_rows: int) -> list[int]:
    return [i for i in range(limit) if scale.eligible(t := scale.traits(i)) and sum(_split_rows(t).values()) <= most_rows]


def _planted(scale: HubScale, limit: int, rows: int) -> int:
    """The first eligible dataset of ``rows`` rows with test rows copied from train and repeats."""
    for i in _eligible(scale, limit, rows):
        design = scale.design(i)
        if sum(_split_rows(scale.traits(i)).values()) == rows and design.leak_rate > 0.01 and design.duplicate_rate > 0.005:
            return i
    raise AssertionError("no such dataset in the mix's first datasets")


def _export(scale: HubScale, i: int) -> dict[str, bytes]:
    branch = scale.repo(i).parquet
    return {path: blob.read() for path, blob in branch.files.items()}


def test_sized_files_have_the_simulated_rows_and_are_the_same_bytes_from_a_fresh_generator():
    first, second = HubScale(400, sized_files=True), HubScale(400, sized_files=True)
    chosen = _eligible(first, 400, 60_000)[:6]
    assert {sum(_split_rows(first.traits(i)).values()) for i in chosen} >= {600, 6_000}
    for i in chosen:
        files = _export(first, i)
        assert files == _export(second, i)  # a fresh cache, a fresh generator: byte for byte
        expected = _split_rows(first.traits(i))
        assert {p.split("/")[1]: pq.read_metadata(pa.BufferReader(b)).num_rows for p, b in files.items()} == expected
        design = first.design(i)
        features = json.loads(pq.read_schema(pa.BufferReader(next(iter(files.values())))).metadata[b"huggingface"])
        assert list(features["info"]["features"]) == list(design.features())
        card = first.props(i)["cardData"]
        if card and "dataset_info" in card:  # the card states the files' features and split sizes
            assert card["dataset_info"]["features"] == design.features_yaml()
            assert {s["name"]: s["num_examples"] for s in card["dataset_info"]["splits"]} == expected
        table = pq.read_table(pa.BufferReader(files["default/test/0000.parquet"]))
        mean = pc.mean(pc.utf8_length(table["text"])).as_py()
        assert {"short": 40 <= mean <= 110, "medium": 200 <= mean <= 450, "long": 700 <= mean <= 1500}[design.style], mean
        assert pc.max(table["label"]).as_py() < design.classes


def test_a_changed_dataset_gets_new_files_and_an_unchanged_one_keeps_them():
    scale = HubScale(30_000, sized_files=True)
    before = {i: scale.design(i) for i in _eligible(scale, 30_000, 10**9)}
    scale.advance()
    changed = [i for i in before if scale._is_changed(i)]
    kept = [i for i in before if not scale._is_changed(i)][:3]
    assert changed and kept
    assert all(scale.design(i) != before[i] for i in changed)
    assert all(scale.design(i) == before[i] for i in kept)


def test_the_file_cache_stays_in_its_bounds_and_gives_the_same_bytes_after_an_eviction(tmp_path):
    scale = HubScale(400, sized_files=True)
    i = _eligible(scale, 400, 6_000)[0]
    splits = _split_rows(scale.traits(i))
    design = scale.design(i)
    reference = FileCache()
    sizes = {s: len(SizedBlob(reference, f"r/{s}", design, s, splits).read()) for s in splits}
    budget = max(sizes.values()) + 10  # room for one file at a time, in memory and on disk
    cache = FileCache(memory_bytes=budget, folder=tmp_path / "files", disk_bytes=budget)
    blobs = {s: SizedBlob(cache, f"{design.key}/{s}", design, s, splits) for s in splits}
    first = {s: b.read() for s, b in blobs.items()}
    on_disk = sum(p.stat().st_size for p in (tmp_path / "files").iterdir())
    assert on_disk <= budget and sum(len(d) for d in cache._memory.values()) <= budget
    assert {s: b.size for s, b in blobs.items()} == sizes
    generated = cache.generated
    assert {s: b.read() for s, b in blobs.items()} == first  # evicted ones made again, the same bytes
    assert cache.generated > generated
    assert blobs["test"].read(5, 17) == first["test"][5:17]


def test_a_sized_dataset_is_measured_through_the_stand_in_with_the_reference_figures(tmp_path):
    """Crawled, downloaded and measured through the stand-in; the figures equal the plain-Python
    reference's over the rows the generator made, which hold planted leaks and repeats."""
    from hubsurvey.core.hub import HubClient
    from hubsurvey.core.store import Store
    from hubsurvey.crawler.crawl import crawl
    from hubsurvey.survey.audit import audit

    scale = HubScale(3_000, sized_files=True)
    i = _planted(scale, 3_000, 6_000)
    repo_id = scale.props(i)["id"]
    (tmp_path / "hub").mkdir()
    (tmp_path / "hub" / "index.json").write_text(json.dumps({"datasets": [], "hubscale": {
        "count": i + 1, "seed": 0, "sized_files": True, "cache_dir": str(tmp_path / "standin-files"), "cache_gb": 1}}))
    with StandinHub(tmp_path / "hub") as hub, Store(tmp_path / "crawl.duckdb") as store:
        client = HubClient(endpoint=hub.url, token=False, rate=0, file_rate=0, cache_dir=tmp_path / "cache")
        crawl(store, client)
        (status,) = store.query("SELECT status FROM datasets WHERE dataset_id = ?", [repo_id])[1][0]
        outcome = audit(repo_id, client=client, near=False)
        served = hub.stats()["resolve_bytes"]
    assert status == "eligible"
    assert not outcome.errors, outcome.errors
    (row,) = outcome.rows
    assert list(row["text_columns"]) == ["text"] and row["label_column"] == "label"
    splits_rows = _split_rows(scale.traits(i))
    design = Design.of(scale.design(i).key)
    splits = {s: split_table(design, s, splits_rows).to_pylist() for s in splits_rows}
    want = dict(lle_reference(splits, ["text"], "label"))
    for profile in ("raw", "normalized"):
        want.update(exact_reference(splits, ["text"], "label", profile))
    assert want["text_leaks_train_wrt_test"] > 0 and want["text_duplication_train"] > 0  # the planted copies
    for key in FIGURE_COLUMNS:
        if key.endswith(("test_biased", "_pct")) and row[key] is not None and want[key] is not None:
            assert row[key] == pytest.approx(want[key], abs=1e-9), key
        else:
            assert row[key] == want[key], key
    assert served >= sum(len(b) for b in _export(scale, i).values())  # every file downloaded whole
