"""The Hub stand-in, checked through the real huggingface_hub client (and raw HTTP where the
client hides what we want to see), plus the mini-hub generator and its truth.json."""

from __future__ import annotations

import json
import logging
import math
import subprocess
import sys
import time
from pathlib import Path

import httpx2
import pyarrow.parquet as pq
import pytest
from huggingface_hub import CommitOperationAdd, HfApi, hf_hub_download
from huggingface_hub.errors import (
    DisabledRepoError,
    EntryNotFoundError,
    GatedRepoError,
    HfHubHTTPError,
    LocalEntryNotFoundError,
    RepositoryNotFoundError,
    RevisionNotFoundError,
)
from huggingface_hub.utils import disable_progress_bars, parse_ratelimit_headers

from hubsurvey.core.splits import canonical_split
from hubsurvey_standin import Faults, Scope, StandinHub
from hubsurvey_standin.minihub import generate_minihub
from hubsurvey_standin.reference import lle_reference

# End-to-end against a served stand-in: the fast tier leaves this module out.
pytestmark = pytest.mark.slow

disable_progress_bars()

FILLER = 5000
TOKEN = "hf_standin_approved_token"
OTHER_TOKEN = "hf_standin_unapproved_token"
PARQUET = "refs/convert/parquet"


@pytest.fixture(scope="module")
def minihub(tmp_path_factory) -> Path:
    return generate_minihub(tmp_path_factory.mktemp("minihub"), seed=0, filler=FILLER)


@pytest.fixture(scope="module")
def server(minihub):
    with StandinHub(minihub, valid_tokens={TOKEN}) as hub:
        yield hub


@pytest.fixture
def hub(server):
    """The shared server, with faults off and fresh stats for each test."""
    server.set_faults(Faults())
    server.reset_stats()
    yield server
    server.set_faults(Faults())


@pytest.fixture
def api(hub) -> HfApi:
    return HfApi(endpoint=hub.url, token=False)


def _download(hub, repo_id, filename, tmp_path, revision=PARQUET, token=False) -> Path:
    return Path(hf_hub_download(repo_id, filename, repo_type="dataset", revision=revision, endpoint=hub.url,
                                cache_dir=tmp_path / "cache", token=token))


# ---------------------------------------------------------------- listing


@pytest.mark.slow
def test_list_datasets_expand_and_pagination(hub, api):
    items = list(api.list_datasets(expand=["tags", "gated", "sha"]))
    visible = 24 + FILLER  # the private mini-hub dataset is not listed without an approved token
    assert len(items) == visible
    assert len({d.id for d in items}) == visible
    assert hub.stats()["list"] <= math.ceil(visible / 1000)
    first = items[0]
    assert first.id == "mini-nlp/toy_ner" and first.gated is False and len(first.sha) == 40
    assert first.downloads is None  # only the expanded properties come back
    raw = httpx2.get(f"{hub.url}/api/datasets", params=[("expand[]", "tags"), ("limit", "3")]).json()
    assert len(raw) == 3 and all(set(item) == {"_id", "id", "tags"} for item in raw)
    assert len(list(HfApi(endpoint=hub.url, token=TOKEN).list_datasets(expand=["private"]))) == visible + 1


@pytest.mark.slow
def test_list_datasets_filters_sort_limit(hub, api):
    text = list(api.list_datasets(filter=["task_categories:text-classification", "language:en"], expand=["tags"]))
    assert text and all("task_categories:text-classification" in d.tags and "language:en" in d.tags for d in text)
    assert {d.id for d in api.list_datasets(author="mini-gated")} == {"mini-gated/gated_auto", "mini-gated/gated_manual"}
    assert [d.id for d in api.list_datasets(search="QA_SM")] == ["mini-nlp/qa_small"]
    gated = list(api.list_datasets(gated=True, expand=["gated"]))
    assert gated and all(d.gated in ("auto", "manual") for d in gated)
    big = list(api.list_datasets(size_categories="1M<n<10M", expand=["tags"]))
    assert "mini-misc/huge_rows" in {d.id for d in big}
    eligible = list(api.list_datasets(filter=["modality:text", "size_categories:n<1K"], gated=False))
    assert 0.01 * FILLER < len(eligible) < 0.04 * FILLER + 20  # about 2% of the filler looks eligible
    hub.reset_stats()
    top = list(api.list_datasets(sort="downloads", limit=5, expand=["downloads"]))
    assert len(top) == 5 and hub.stats()["list"] == 1
    assert [d.downloads for d in top] == sorted((d.downloads for d in top), reverse=True)
    assert top[0].downloads == max(d.downloads for d in api.list_datasets(expand=["downloads"]))
    bad = httpx2.get(f"{hub.url}/api/datasets", params={"expand": "nonsense"})
    assert bad.status_code == 400


@pytest.mark.slow
def test_full_listing_of_100k_is_fast(tmp_path):
    (tmp_path / "index.json").write_text(json.dumps({"datasets": [], "filler": {"count": 100_000, "seed": 3}}))
    with StandinHub(tmp_path) as hub:
        start = time.monotonic()
        n = sum(1 for _ in HfApi(endpoint=hub.url, token=False).list_datasets(expand=["tags", "gated"]))
        elapsed = time.monotonic() - start
        assert n == 100_000 and hub.stats()["list"] == 100
    assert elapsed < 20, elapsed  # the bound is the behaviour: the Hub-scale tests list 100k through it within their deadlines


# ---------------------------------------------------------------- metadata, refs, tree, parquet API


@pytest.mark.slow
def test_dataset_info_and_refs(hub, api):
    info = api.dataset_info("mini-nlp/toy_ner")
    assert [s.rfilename for s in info.siblings] == [".gitattributes", "README.md"]
    assert info.card_data["task_categories"] == ["token-classification"]
    export = api.dataset_info("mini-nlp/toy_ner", revision=PARQUET)
    assert export.sha != info.sha and len(export.sha) == 40
    assert {s.rfilename for s in export.siblings} == {f"default/{s}/0000.parquet" for s in ("train", "validation", "test")}
    refs = api.list_repo_refs("mini-nlp/toy_ner", repo_type="dataset")
    assert refs.branches[0].target_commit == info.sha
    assert [(c.ref, c.target_commit) for c in refs.converts] == [(PARQUET, export.sha)]
    assert api.list_repo_refs("mini-misc/no_export", repo_type="dataset").converts == []
    assert api.dataset_info("mini-gated/gated_manual").gated == "manual"  # metadata is not gated
    sized = api.dataset_info("mini-nlp/toy_ner", revision=PARQUET, files_metadata=True)
    assert all(s.size > 0 and s.lfs.sha256 for s in sized.siblings)
    assert api.dataset_info("mini-nlp/toy_ner", revision=info.sha).sha == info.sha
    slim = api.dataset_info("mini-nlp/toy_ner", expand=["gated", "tags"])
    assert slim.siblings is None and slim.gated is False


def test_list_repo_tree(hub, api):
    tree = list(api.list_repo_tree("mini-nlp/sentiment", repo_type="dataset", revision=PARQUET, recursive=True))
    files = {t.path: t for t in tree if hasattr(t, "size")}
    assert set(files) == {"default/train/0000.parquet", "default/train/0001.parquet",
                          "default/validation/0000.parquet", "default/test/0000.parquet"}
    assert all(f.lfs is not None and len(f.blob_id) == 40 for f in files.values())
    top = [t.path for t in api.list_repo_tree("mini-lab/multi_config", repo_type="dataset", revision=PARQUET)]
    assert top == ["en", "fr"]
    sub = [t.path for t in api.list_repo_tree("mini-lab/multi_config", path_in_repo="fr/test", repo_type="dataset",
                                              revision=PARQUET)]
    assert sub == ["fr/test/0000.parquet"]
    info = api.get_paths_info("mini-lab/multi_config", ["fr", "fr/test/0000.parquet", "missing.txt"],
                              repo_type="dataset", revision=PARQUET)
    assert [(type(i).__name__, i.path) for i in info] == [("RepoFolder", "fr"), ("RepoFile", "fr/test/0000.parquet")]


def test_tree_pagination(minihub):
    with StandinHub(minihub, page_size=2) as hub:
        tree = list(HfApi(endpoint=hub.url, token=False).list_repo_tree(
            "mini-nlp/toy_ner", repo_type="dataset", revision=PARQUET, recursive=True))
        assert len(tree) == 7  # default, 3 split folders, 3 files
        assert hub.stats()["tree"] == 4


def test_parquet_api(hub):
    body = httpx2.get(f"{hub.url}/api/datasets/mini-lab/multi_config/parquet").json()
    assert set(body) == {"en", "fr"} and set(body["fr"]) == {"train", "test"}
    url = body["en"]["test"][0]
    assert url == f"{hub.url}/datasets/mini-lab/multi_config/resolve/refs%2Fconvert%2Fparquet/en/test/0000.parquet"
    assert httpx2.get(url).content[:4] == b"PAR1"
    assert set(httpx2.get(f"{hub.url}/api/datasets/mini-lab/multi_config/parquet/en").json()) == {"train", "validation", "test"}
    shard = httpx2.get(f"{hub.url}/api/datasets/mini-nlp/sentiment/parquet/default/train/1.parquet", follow_redirects=True)
    assert shard.status_code == 200 and shard.url.path.endswith("/default/train/0001.parquet")
    assert hub.stats()["parquet_api"] == 3


# ---------------------------------------------------------------- downloads


def test_download_from_shared_datasets(shared_datasets, tmp_path):
    with StandinHub(shared_datasets) as hub:
        path = _download(hub, "eriktks/conll2003", "conll2003/test/0000.parquet", tmp_path)
        assert path.read_bytes() == (shared_datasets / "eriktks__conll2003/conll2003/test/0000.parquet").read_bytes()
        assert pq.ParquetFile(path).metadata.num_rows == 3453
        export_sha = HfApi(endpoint=hub.url, token=False).dataset_info("eriktks/conll2003", revision=PARQUET).sha
        assert path.parent.parent.parent.name == export_sha  # cached under snapshots/<X-Repo-Commit>


@pytest.mark.slow
def test_download_and_ranges(hub, minihub, tmp_path):
    disk = (minihub / "mini-lab__question_types/default/train/0000.parquet").read_bytes()
    path = _download(hub, "mini-lab/question_types", "default/train/0000.parquet", tmp_path)
    assert path.read_bytes() == disk
    url = f"{hub.url}/datasets/mini-lab/question_types/resolve/refs%2Fconvert%2Fparquet/default/train/0000.parquet"
    head = httpx2.head(url)
    assert head.headers["content-length"] == str(len(disk)) and head.headers["accept-ranges"] == "bytes"
    assert head.headers["etag"].startswith('"') and len(head.headers["x-repo-commit"]) == 40
    tail = httpx2.get(url, headers={"Range": "bytes=-8"})
    assert tail.status_code == 206 and tail.content == disk[-8:]
    assert tail.headers["content-range"] == f"bytes {len(disk) - 8}-{len(disk) - 1}/{len(disk)}"
    middle = httpx2.get(url, headers={"Range": "bytes=4-11"})
    assert middle.content == disk[4:12]
    assert httpx2.get(url, headers={"Range": f"bytes={len(disk)}-"}).status_code == 416
    raw_rev = url.replace("refs%2Fconvert%2Fparquet", "refs/convert/parquet")
    assert httpx2.get(raw_rev).content == disk
    assert hub.stats()["resolve_head"] >= 2 and hub.stats()["resolve_get"] >= 5


@pytest.mark.slow
def test_filler_exports_are_served(hub, api, tmp_path):
    candidate = next(d for d in api.list_datasets(filter=["modality:text", "size_categories:n<1K"], gated=False)
                     if not d.id.startswith("mini-"))
    files = [f.path for f in api.list_repo_tree(candidate.id, repo_type="dataset", revision=PARQUET, recursive=True)
             if f.path.endswith(".parquet")]
    assert "default/train/0000.parquet" in files and "default/test/0000.parquet" in files
    table = pq.read_table(_download(hub, candidate.id, "default/test/0000.parquet", tmp_path))
    assert table.column_names == ["text", "label"]
    features = json.loads(table.schema.metadata[b"huggingface"])["info"]["features"]
    assert features["label"]["_type"] == "ClassLabel"


# ---------------------------------------------------------------- errors


def test_typed_errors(hub, api, tmp_path):
    with pytest.raises(GatedRepoError) as anonymous:
        _download(hub, "mini-gated/gated_auto", "default/test/0000.parquet", tmp_path)
    assert anonymous.value.response.status_code == 401
    with pytest.raises(GatedRepoError) as unapproved:
        _download(hub, "mini-gated/gated_manual", "default/test/0000.parquet", tmp_path, token=OTHER_TOKEN)
    assert unapproved.value.response.status_code == 403
    assert _download(hub, "mini-gated/gated_manual", "default/test/0000.parquet", tmp_path, token=TOKEN).exists()
    with pytest.raises(GatedRepoError):
        api.auth_check("mini-gated/gated_manual", repo_type="dataset")
    HfApi(endpoint=hub.url, token=TOKEN).auth_check("mini-gated/gated_manual", repo_type="dataset")
    with pytest.raises(RepositoryNotFoundError) as missing:
        api.dataset_info("nobody/nothing")
    assert missing.value.response.status_code == 401  # as the Hub: 401 without a token, 404 with one
    with pytest.raises(RepositoryNotFoundError):
        HfApi(endpoint=hub.url, token=OTHER_TOKEN).dataset_info("mini-private/secret_reviews")
    with pytest.raises(RepositoryNotFoundError):
        _download(hub, "mini-private/secret_reviews", "default/test/0000.parquet", tmp_path)
    assert HfApi(endpoint=hub.url, token=TOKEN).dataset_info("mini-private/secret_reviews").private is True
    with pytest.raises(RevisionNotFoundError):
        list(api.list_repo_tree("mini-nlp/toy_ner", repo_type="dataset", revision="refs/convert/duckdb"))
    with pytest.raises(RevisionNotFoundError):
        api.dataset_info("mini-misc/no_export", revision=PARQUET)
    with pytest.raises(EntryNotFoundError):
        _download(hub, "mini-nlp/toy_ner", "default/test/0001.parquet", tmp_path)
    with pytest.raises(DisabledRepoError):
        api.dataset_info("mini-misc/disabled_reviews")
    with pytest.raises(LocalEntryNotFoundError) as disabled:  # hf_hub_download wraps the 403 this way
        _download(hub, "mini-misc/disabled_reviews", "default/test/0000.parquet", tmp_path)
    assert isinstance(disabled.value.__cause__, DisabledRepoError)


def test_host_must_be_loopback(minihub):
    with pytest.raises(ValueError):  # noqa: PT011
        StandinHub(minihub, host="0.0.0.0")
    with StandinHub(minihub) as hub:
        assert hub.url.startswith("http://127.0.0.1:")


def test_tokens_never_logged(hub, api, caplog, tmp_path):
    caplog.set_level(logging.DEBUG, logger="hubsurvey_standin")
    secret = HfApi(endpoint=hub.url, token=TOKEN)
    secret.dataset_info("mini-private/secret_reviews")
    _download(hub, "mini-gated/gated_auto", "default/train/0000.parquet", tmp_path, token=TOKEN)
    with pytest.raises(GatedRepoError):
        _download(hub, "mini-gated/gated_auto", "default/test/0000.parquet", tmp_path, token=OTHER_TOKEN)
    assert "GET /api/datasets/mini-private/secret_reviews" in caplog.text
    assert TOKEN not in caplog.text and OTHER_TOKEN not in caplog.text


# ---------------------------------------------------------------- faults


@pytest.mark.slow
def test_rate_limit(hub, api):
    hub.set_faults(Faults(rate_limit_every=2, rate_limit_secs=0, scope=Scope(categories={"list"})))
    first = httpx2.get(f"{hub.url}/api/datasets", params={"limit": 1})
    second = httpx2.get(f"{hub.url}/api/datasets", params={"limit": 1})
    assert (first.status_code, second.status_code) == (200, 429)
    info = parse_ratelimit_headers(second.headers)
    assert (info.resource_type, info.remaining, info.reset_in_seconds, info.limit, info.window_seconds) == ("api", 0, 0, 500, 300)
    assert second.headers["retry-after"] == "0"
    assert api.dataset_info("mini-nlp/toy_ner").id  # out of scope: never limited
    hub.reset_stats()
    assert len(list(api.list_datasets(limit=1500))) == 1500  # http_backoff waits t+1 s and retries
    assert hub.stats()["list"] == 3 and hub.stats()["faults_injected"] == 1


@pytest.mark.slow
def test_error_burst(hub, api):
    hub.set_faults(Faults(error_burst_every=3, error_burst_len=2, error_status=502, scope=Scope(categories={"refs"})))
    url = f"{hub.url}/api/datasets/mini-nlp/toy_ner/refs"
    assert [httpx2.get(url).status_code for _ in range(7)] == [200, 200, 502, 502, 200, 502, 502]
    with pytest.raises(HfHubHTTPError) as err:  # noqa: PT012 - list_repo_refs does not retry
        hub.set_faults(Faults(error_burst_every=1, error_status=500, scope=Scope(dataset="mini-nlp/*")))
        api.list_repo_refs("mini-nlp/toy_ner", repo_type="dataset")
    assert err.value.response.status_code == 500
    assert api.list_repo_refs("mini-lab/multi_config", repo_type="dataset").converts  # other datasets unaffected
    hub.set_faults(Faults(error_burst_every=2, error_burst_len=1, scope=Scope(categories={"tree"})))
    assert len(list(api.list_repo_tree("mini-nlp/toy_ner", repo_type="dataset", revision=PARQUET))) == 1
    hub.reset_stats()
    list(api.list_repo_tree("mini-nlp/toy_ner", repo_type="dataset", revision=PARQUET))  # 503, then retried
    assert hub.stats()["tree"] == 2 and hub.stats()["faults_injected"] == 1


@pytest.mark.slow
def test_connection_reset(hub, api):
    hub.set_faults(Faults(reset_every=1, scope=Scope(categories={"info"})))
    with pytest.raises(httpx2.ReadError, match="reset"):  # a real TCP reset, not a clean close
        httpx2.get(f"{hub.url}/api/datasets/mini-nlp/toy_ner")
    hub.set_faults(Faults(reset_every=2, scope=Scope(categories={"list"})))
    hub.reset_stats()
    assert len(list(api.list_datasets(limit=1500))) == 1500  # page 2 is reset once, then retried
    assert hub.stats()["list"] == 3 and hub.stats()["faults_injected"] == 1


@pytest.mark.slow
def test_truncated_body(hub, minihub, tmp_path):
    hub.set_faults(Faults(truncate_every=1, scope=Scope(categories={"info"})))
    with pytest.raises(httpx2.RemoteProtocolError):
        httpx2.get(f"{hub.url}/api/datasets/mini-nlp/toy_ner")
    hub.set_faults(Faults(truncate_every=2, scope=Scope(categories={"resolve_get"})))
    httpx2.get(f"{hub.url}/datasets/mini-nlp/toy_ner/resolve/main/README.md")  # request 1 of the scope
    path = _download(hub, "mini-nlp/toy_ner", "default/train/0000.parquet", tmp_path)  # 2: truncated, resumed
    assert path.read_bytes() == (minihub / "mini-nlp__toy_ner/default/train/0000.parquet").read_bytes()
    assert hub.stats()["faults_injected"] == 2 and hub.stats()["resolve_get"] == 3


@pytest.mark.slow
def test_slow_responses(hub):
    hub.set_faults(Faults(slow_ms=300, scope=Scope(categories={"info"})))
    start = time.monotonic()
    assert httpx2.get(f"{hub.url}/api/datasets/mini-nlp/toy_ner").status_code == 200
    assert time.monotonic() - start >= 0.3  # the injected delay is the behaviour (a lower bound: load only adds)
    with pytest.raises(httpx2.TimeoutException):
        httpx2.get(f"{hub.url}/api/datasets/mini-nlp/toy_ner", timeout=0.05)
    assert httpx2.get(f"{hub.url}/api/datasets/mini-nlp/toy_ner/refs", timeout=0.2).status_code == 200


def test_corrupt_parquet(hub, minihub, tmp_path):
    hub.set_faults(Faults(corrupt_parquet=["mini-nlp/topics_*"]))
    path = _download(hub, "mini-nlp/topics_no_val", "default/test/0000.parquet", tmp_path)
    good = (minihub / "mini-nlp__topics_no_val/default/test/0000.parquet").read_bytes()
    bad = path.read_bytes()
    assert len(bad) == len(good) and bad != good and bad[-4:] == b"PAR1"
    with pytest.raises(Exception):  # noqa: PT011, B017 - read from a path: pyarrow 26 may abort at exit after a failed in-memory read
        pq.read_table(path)
    assert pq.read_table(_download(hub, "mini-nlp/sentiment", "default/test/0000.parquet", tmp_path)).num_rows
    assert hub.stats()["faults_injected"] == 1


# ---------------------------------------------------------------- publishing, revisions, controls


README = """---
license: cc-by-4.0
size_categories:
- n<1K
task_categories: []
tags: [hf-hub-metadata]
configs:
- config_name: default
  data_files:
  - split: train
    path: data/train-*.parquet
---
# Results
"""


@pytest.mark.slow
def test_publish_round_trip(hub, tmp_path):
    api = HfApi(endpoint=hub.url, token=TOKEN)
    url = api.create_repo("me/results", repo_type="dataset")
    assert url == f"{hub.url}/datasets/me/results" and url.repo_id == "me/results"
    assert api.create_repo("me/results", repo_type="dataset", exist_ok=True).repo_id == "me/results"  # 409 + url
    with pytest.raises(HfHubHTTPError) as conflict:
        api.create_repo("me/results", repo_type="dataset", exist_ok=False)
    assert conflict.value.response.status_code == 409
    with pytest.raises(HfHubHTTPError):
        HfApi(endpoint=hub.url, token=False).create_repo("me/anonymous", repo_type="dataset")
    info = api.create_commit("me/results", repo_type="dataset", commit_message="First results", operations=[
        CommitOperationAdd("README.md", README.encode()),
        CommitOperationAdd("data/train-00000.parquet", b"fake parquet bytes"),
    ])
    assert info.commit_url.startswith(hub.url) and hub.stats()["validate_yaml"] == 1
    [commit] = hub.commits("me/results")
    assert commit["oid"] == info.oid and commit["summary"] == "First results"
    assert {op["path"] for op in commit["operations"]} == {"README.md", "data/train-00000.parquet"}
    published = api.dataset_info("me/results")
    assert published.sha == info.oid and "license:cc-by-4.0" in published.tags
    assert published.card_data["tags"] == ["hf-hub-metadata"]
    got = hf_hub_download("me/results", "data/train-00000.parquet", repo_type="dataset", endpoint=hub.url,
                          cache_dir=tmp_path / "cache", token=TOKEN)
    assert Path(got).read_bytes() == b"fake parquet bytes"

    folder = tmp_path / "out"
    (folder / "data").mkdir(parents=True)
    (folder / "README.md").write_text(README)
    (folder / "data" / "train-00000.parquet").write_bytes(b"new parquet bytes")
    api.upload_folder(folder_path=folder, repo_id="me/results", repo_type="dataset", commit_message="Update")
    assert len(hub.commits("me/results")) == 2
    api.upload_folder(folder_path=folder, repo_id="me/results", repo_type="dataset", commit_message="Same again")
    assert len(hub.commits("me/results")) == 2  # preupload reports the remote oids: the client skips
    tree = {f.path for f in api.list_repo_tree("me/results", repo_type="dataset", recursive=True)}
    assert tree >= {"README.md", "data/train-00000.parquet"}

    # The server itself records a commit of unchanged files: avoiding it is the client's job.
    line = json.dumps({"key": "header", "value": {"summary": "noop", "description": ""}}) + "\n"
    line += json.dumps({"key": "file", "value": {"path": "README.md", "content": README, "encoding": "utf-8"}}) + "\n"
    r = httpx2.post(f"{hub.url}/api/datasets/me/results/commit/main", content=line.encode(),
                    headers={"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/x-ndjson"})
    assert r.status_code == 200 and len(hub.commits("me/results")) == 3
    with pytest.raises(HfHubHTTPError) as read_only:
        api.upload_file(path_or_fileobj=b"x", path_in_repo="x.txt", repo_id="mini-nlp/toy_ner", repo_type="dataset")
    assert read_only.value.response.status_code == 403


@pytest.fixture
def results_yaml_repo(hub):
    HfApi(endpoint=hub.url, token=TOKEN).create_repo("me/results-yaml", repo_type="dataset", exist_ok=True)


@pytest.mark.usefixtures("results_yaml_repo")
@pytest.mark.parametrize("card, message", [
    ("---\nlicense: [unclosed\n---\n", "Invalid YAML"),
    ("---\nconfigs:\n- data_files: data/*.parquet\n---\n", "config_name"),
    ("---\nsize_categories: n<1K\n---\n", "size_categories"),
])
@pytest.mark.slow
def test_validate_yaml_rejects(hub, card, message):
    api = HfApi(endpoint=hub.url, token=TOKEN)
    with pytest.raises(ValueError, match=message):
        api.create_commit("me/results-yaml", repo_type="dataset", commit_message="bad card",
                          operations=[CommitOperationAdd("README.md", card.encode())])
    ok = httpx2.post(f"{hub.url}/api/validate-yaml", json={"content": README, "repoType": "dataset"})
    assert ok.json() == {"errors": [], "warnings": []}


@pytest.mark.slow
def test_set_sha_moves_main_and_export(hub, api, tmp_path):
    before = api.dataset_info("mini-lab/messy_text")
    before_export = api.dataset_info("mini-lab/messy_text", revision=PARQUET).sha
    hub.set_sha("mini-lab/messy_text", "1" * 40)
    assert api.dataset_info("mini-lab/messy_text").sha == "1" * 40
    after_export = api.dataset_info("mini-lab/messy_text", revision=PARQUET).sha
    assert after_export not in (before_export, "1" * 40)
    assert api.dataset_info("mini-lab/messy_text", revision=before.sha).sha == before.sha  # old commits resolve
    # the same over HTTP, on a filler dataset
    filler_id = next(d.id for d in api.list_datasets(limit=30) if not d.id.startswith("mini-"))
    r = httpx2.post(f"{hub.url}/_standin/set_sha", json={"dataset_id": filler_id, "sha": "2" * 40})
    assert r.status_code == 200 and api.dataset_info(filler_id).sha == "2" * 40
    assert {d.id: d.sha for d in api.list_datasets(search=filler_id, expand=["sha"])}[filler_id] == "2" * 40
    assert httpx2.post(f"{hub.url}/_standin/set_sha", json={"dataset_id": "no/such", "sha": "3" * 40}).status_code == 404


@pytest.mark.slow
def test_http_controls(hub):
    base = f"{hub.url}/_standin"
    httpx2.get(f"{hub.url}/api/datasets/mini-nlp/toy_ner")
    assert httpx2.get(f"{base}/stats").json()["info"] == 1
    assert httpx2.post(f"{base}/reset").status_code == 200 and hub.stats()["info"] == 0
    r = httpx2.post(f"{base}/faults", json={"error_burst_every": 1, "scope": {"categories": ["info"]}})
    assert r.status_code == 200 and hub.faults.error_burst_every == 1
    assert httpx2.get(f"{hub.url}/api/datasets/mini-nlp/toy_ner").status_code == 503
    assert httpx2.post(f"{base}/faults", json={"error_status": 418}).status_code == 400
    assert httpx2.get(f"{base}/commits", params={"repo_id": "mini-nlp/toy_ner"}).json() == []


@pytest.mark.slow
def test_cli_serve_and_generate(tmp_path):
    out = tmp_path / "hub"
    gen = subprocess.run([sys.executable, "-m", "hubsurvey_standin", "generate", "--out", str(out), "--seed", "1"],
                         capture_output=True, text=True, check=True)
    assert gen.stdout.strip() == str(out) and (out / "truth.json").exists()
    command = [sys.executable, "-m", "hubsurvey_standin", "serve", "--root", str(out),
               "--token", "cli-token", "--fault-rate-limit-every", "2", "--fault-categories", "info"]
    with subprocess.Popen(command, stdout=subprocess.PIPE, text=True) as proc:
        try:
            url = proc.stdout.readline().strip()
            assert url.startswith("http://127.0.0.1:")
            statuses = [httpx2.get(f"{url}/api/datasets/mini-nlp/toy_ner").status_code for _ in range(2)]
            assert statuses == [200, 429]
            assert httpx2.get(f"{url}/_standin/stats").json()["faults_injected"] == 1
        finally:
            proc.terminate()
    assert proc.returncode == 0


# ---------------------------------------------------------------- generator and truth


def _read_splits(folder: Path) -> dict[str, list[dict]]:
    """Rows of every split of one config folder, keyed by canonical split name (from paths: a
    pyarrow 26 process may abort at exit after a failed read from an in-memory file object)."""
    return {canonical_split(d.name): [row for f in sorted(d.glob("*.parquet")) for row in pq.read_table(f).to_pylist()]
            for d in sorted(folder.iterdir())}


def test_truth_matches_reference_recomputed_from_files(minihub):
    truth = json.loads((minihub / "truth.json").read_text())
    index = json.loads((minihub / "index.json").read_text())
    assert set(truth["expected"]) == {e["id"] for e in index["datasets"]}
    assert index["filler"] == {"count": FILLER, "seed": 0}
    measured = {(m["dataset_id"], m["config"]) for m in truth["measurements"]}
    assert {d for d, _ in measured} == {d for d, outcome in truth["expected"].items() if outcome == "eligible"}
    assert len(truth["measurements"]) == 18  # 15 eligible datasets (a fork and two absorbing test rows), 2 with two label columns, 1 with two configs
    for m in truth["measurements"]:
        splits = _read_splits(minihub / m["dataset_id"].replace("/", "__") / m["config"])
        assert m["figures"] == lle_reference(splits, m["text_columns"], m["label_column"]), m
    by_key = {(m["dataset_id"], m["label_column"]): m["figures"] for m in truth["measurements"]}
    ner, pos = by_key[("mini-nlp/toy_ner", "ner_tags")], by_key[("mini-nlp/toy_ner", "pos_tags")]
    assert ner["text_leaks_train_wrt_test"] == pos["text_leaks_train_wrt_test"] > 0
    assert ner["difference_annotation"] > 0 == pos["difference_annotation"]  # relabels touch ner_tags only
    assert by_key[("mini-nlp/qa_small", None)]["difference_annotation"] is None
    assert by_key[("mini-nlp/topics_no_val", "label")]["text_leaks_validation_wrt_test"] is None
    messy = by_key[("mini-lab/messy_text", "label")]
    assert messy["text_duplication_test"] >= 1  # the two NULL texts of test are duplicates


def test_generated_files_shapes(minihub):
    import datasets  # only here: parsing our hand-written features with the real library

    ner = pq.read_table(minihub / "mini-nlp__toy_ner/default/train/0000.parquet")
    features = datasets.Features.from_dict(json.loads(ner.schema.metadata[b"huggingface"])["info"]["features"])
    assert features["ner_tags"].feature.names[:2] == ["O", "B-PER"] and len(set(ner.column("id").to_pylist())) == ner.num_rows
    qa = pq.read_table(minihub / "mini-nlp__qa_small/default/test/0000.parquet")
    assert datasets.Features.from_dict(json.loads(qa.schema.metadata[b"huggingface"])["info"]["features"])["answers"]
    image = pq.read_table(minihub / "mini-misc__images/default/train/0000.parquet")
    assert datasets.Features.from_dict(json.loads(image.schema.metadata[b"huggingface"])["info"]["features"])["image"]
    huge = pq.ParquetFile(minihub / "mini-misc__huge_rows/default/train/0000.parquet")
    assert huge.metadata.num_rows > 1_000_000 and (minihub / "mini-misc__huge_rows/default/train/0000.parquet").stat().st_size < 100_000
    with pytest.raises(Exception):  # noqa: PT011, B017 - a corrupt file: any reader error
        pq.read_table(minihub / "mini-misc__corrupt_file/default/test/0000.parquet")
    assert {p.name for p in (minihub / "mini-nlp__reviews_valid/default").iterdir()} == {"train", "valid", "test"}
    assert not (minihub / "mini-misc__no_export").exists()


@pytest.mark.slow
def test_generation_is_deterministic(tmp_path):
    a, b, c = (generate_minihub(tmp_path / name, seed=seed) for name, seed in (("a", 7), ("b", 7), ("c", 8)))
    for name in ("index.json", "truth.json"):
        assert (a / name).read_bytes() == (b / name).read_bytes()
    assert (a / "truth.json").read_bytes() != (c / "truth.json").read_bytes()
    files = sorted(p.relative_to(a) for p in a.rglob("*.parquet"))
    assert files == sorted(p.relative_to(b) for p in b.rglob("*.parquet"))
    assert all((a / f).read_bytes() == (b / f).read_bytes() for f in files)
