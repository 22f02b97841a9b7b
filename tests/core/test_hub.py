"""The Hub client's configuration and cache, and honest error classes in audit and jobs."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from hubsurvey.cli import app
from hubsurvey.core.errors import ExitCode, scrub
from hubsurvey.core.hub import HubClient, delete_files
from hubsurvey.core.settings import Settings
from hubsurvey.survey.audit import audit

runner = CliRunner()
FEATURES = {"text": {"dtype": "string", "_type": "Value"}, "label": {"names": ["a", "b"], "_type": "ClassLabel"}}


def write_split(folder: Path, table: pa.Table, metadata: bytes | None) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    if metadata is not None:
        table = table.replace_schema_metadata({b"huggingface": metadata})
    pq.write_table(table, folder / "0000.parquet")


def two_configs(root: Path, bad_metadata: bytes) -> Path:
    """Config ``a`` is fine; config ``b`` carries malformed ``huggingface`` metadata."""
    good = json.dumps({"info": {"features": FEATURES}}).encode()
    for config, meta in (("a", good), ("b", bad_metadata)):
        for split, texts in (("train", ["x", "y", "y"]), ("test", ["x", "z"])):
            table = pa.table({"text": texts, "label": pa.array([0] * len(texts), pa.int64())})
            write_split(root / config / split, table, meta)
    return root


# --- configuration -------------------------------------------------------------------------------

def test_timeouts_come_from_the_environment_or_the_constructor(monkeypatch, tmp_path):
    monkeypatch.setenv("HUBSURVEY_CONNECT_TIMEOUT", "3")
    monkeypatch.setenv("HUBSURVEY_READ_TIMEOUT", "7")
    client = HubClient(endpoint="http://127.0.0.1:9", token=False)
    assert (client.connect_timeout, client.read_timeout) == (3.0, 7.0)
    client = HubClient(endpoint="http://127.0.0.1:9", token=False, connect_timeout=1, read_timeout=2)
    assert (client.connect_timeout, client.read_timeout) == (1, 2)
    from huggingface_hub.utils import get_session

    from hubsurvey.core.transport import HubTransport

    # huggingface_hub's client is configured once per process: a second HubClient keeps it
    session = get_session()
    HubClient(endpoint="http://127.0.0.1:9", token=False, read_timeout=5)
    assert get_session() is session and isinstance(session._transport, HubTransport)


def test_the_cache_is_the_surveys_own_not_the_users_hf_cache(monkeypatch, tmp_path):
    monkeypatch.delenv("HUBSURVEY_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert HubClient(endpoint="http://127.0.0.1:9", token=False).cache_dir == tmp_path / "hubsurvey" / "hub"


def test_an_explicit_token_is_scrubbed_everywhere():
    HubClient(endpoint="http://127.0.0.1:9", token="hf_ExplicitToken_42424242")
    assert scrub("echo: Bearer hf_ExplicitToken_42424242") == "echo: Bearer ***"


# --- the cache: a job's files deleted, a budget kept -----------------------------------------------

def _fake_cache(root: Path, n: int, size: int) -> list[Path]:
    """n snapshot links to n blobs, as huggingface_hub lays them out, the oldest first."""
    links = []
    for i in range(n):
        blob = root / "datasets--o--d" / "blobs" / f"blob{i}"
        blob.parent.mkdir(parents=True, exist_ok=True)
        blob.write_bytes(b"x" * size)
        os.utime(blob, (time.time() - 100 + i, time.time() - 100 + i))
        link = root / "datasets--o--d" / "snapshots" / "sha" / f"c/test/{i:04d}.parquet"
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(blob)
        links.append(link)
    return links


def cache_size(root: Path) -> int:
    """Bytes of regular files under a folder (links not counted twice): the plain reference."""
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file() and not p.is_symlink())


def test_delete_files_removes_a_jobs_links_and_blobs(tmp_path):
    links = _fake_cache(tmp_path, 3, 1000)
    assert cache_size(tmp_path) == 3000
    assert delete_files(links[:2]) == 2000
    assert cache_size(tmp_path) == 1000 and not links[0].exists() and links[2].exists()
    assert delete_files(links[:2]) == 0  # twice is harmless


# --- honest error classes ------------------------------------------------------------------------

def _good(root: Path) -> Path:
    meta = json.dumps({"info": {"features": FEATURES}}).encode()
    write_split(root / "default" / "train", pa.table({"text": ["a", "b"], "label": [0, 1]}), meta)
    write_split(root / "default" / "test", pa.table({"text": ["a", "c"], "label": [0, 1]}), meta)
    return root


@pytest.mark.slow
def test_an_engine_bug_is_internal_not_bad_data(tmp_path, monkeypatch):
    from hubsurvey.survey import metrics

    def broken(self, *args, **kwargs):
        raise ZeroDivisionError("planted bug")

    monkeypatch.setattr(metrics.Engine, "measure", broken)
    root = _good(tmp_path / "org__good")
    outcome = audit(str(root))
    assert [f.error_class for f in outcome.failures] == ["internal"]
    assert outcome.exit_code == ExitCode.INTERNAL
    assert "bug" in outcome.errors[0] and "ZeroDivisionError" in outcome.errors[0]
    assert isinstance(outcome.failures[0].__cause__, ZeroDivisionError)  # the traceback is kept
    result = runner.invoke(app, ["audit", str(root), "--db", str(tmp_path / "r.duckdb")])
    assert result.exit_code == ExitCode.INTERNAL
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "org/good [default]" in lines[0] and "bug" in lines[0]


def test_an_engine_bug_in_a_job_is_recorded_internal_with_its_traceback(tmp_path, monkeypatch):
    from hubsurvey.core.queue import QueuedJob
    from hubsurvey.survey import metrics
    from hubsurvey.survey.jobs import JobSpec, run_job

    def broken(self, *args, **kwargs):
        raise KeyError("planted")

    monkeypatch.setattr(metrics.Engine, "measure", broken)
    root = _good(tmp_path / "org__good")
    files = {s: [str(root / "default" / s / "0000.parquet")] for s in ("train", "test")}
    spec = JobSpec(QueuedJob("j1", "org/good", "0" * 40, "default", 1, files), local_files=files)
    outcome = run_job(spec)
    assert outcome.ok is False and outcome.error_class == "internal" and outcome.transient is False
    assert "bug" in outcome.message and "KeyError" in outcome.traceback


@pytest.mark.slow
def test_corrupt_data_is_still_unreadable(tmp_path):
    root = _good(tmp_path / "org__bad")
    test_file = root / "default" / "test" / "0000.parquet"
    data = test_file.read_bytes()
    test_file.write_bytes(data[: len(data) // 2])
    outcome = audit(str(root))
    assert [f.error_class for f in outcome.failures] == ["unreadable"]


@pytest.mark.parametrize("bad", [b"[1, 2, 3]", b"{not json", b'{"info": ["x"]}'])
@pytest.mark.slow
def test_audit_measures_every_config_when_one_has_malformed_metadata(tmp_path, bad):
    root = two_configs(tmp_path / "org__two", bad)
    outcome = audit(str(root))
    assert sorted(r.config for r in outcome.results) == ["a", "b"]  # b: roles from the Arrow schema
    assert not outcome.errors


@pytest.mark.slow
def test_audit_goes_on_after_a_config_that_breaks_and_names_it(tmp_path, monkeypatch):
    """An unforeseen error in one config: the others are measured, exit 1, JSON of what succeeded."""
    from hubsurvey.survey import audit as audit_module

    root = two_configs(tmp_path / "org__two", json.dumps({"info": {"features": FEATURES}}).encode())
    real = audit_module.measure_config

    def flaky(data, **kwargs):
        if data.config == "a":
            raise TypeError("list indices must be integers")
        return real(data, **kwargs)

    monkeypatch.setattr(audit_module, "measure_config", flaky)
    result = runner.invoke(app, ["audit", str(root), "--json", "--db", str(tmp_path / "r.duckdb")])
    assert result.exit_code == ExitCode.PARTIAL, result.output
    rows = json.loads(result.stdout)
    assert {r["config"] for r in rows} == {"b"}
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("error: org/two [a]: internal error") and "TypeError" in line


# --- a job's downloads: pinned to the Parquet branch commit, deleted after measuring ---------------

@pytest.mark.parametrize("keep", [False, True])
@pytest.mark.slow
def test_a_jobs_files_are_pinned_and_deleted_after_measuring_unless_kept(tmp_path, keep):
    from hubsurvey.core.queue import JobSettings, QueuedJob
    from hubsurvey.survey.jobs import JobSpec, run_job
    from hubsurvey_standin import StandinHub, generate_minihub

    root = generate_minihub(tmp_path / "hub", seed=0)
    truth = json.loads((root / "truth.json").read_text())["expected"]
    dataset_id = sorted(k for k, v in truth.items() if v == "eligible")[0]
    cache = tmp_path / "cache"
    with StandinHub(root) as hub:
        client = HubClient(endpoint=hub.url, token=False, rate=0, file_rate=0, cache_dir=cache)
        info = client.dataset_info(dataset_id)
        files = {}
        for f in client.parquet_tree(dataset_id):
            config, split, _ = f.path.split("/")
            if config == "default":
                files.setdefault(split, []).append(f.path)
        spec = JobSpec(QueuedJob("j", dataset_id, info.sha, "default", 1, files),
                       JobSettings(hub=Settings.from_env(endpoint=hub.url, cache_dir=cache), keep_cache=keep))
        outcome = run_job(spec)
        pinned = client.parquet_sha(dataset_id)
    assert outcome.ok, outcome
    assert outcome.parquet_sha == pinned and len(pinned) == 40
    downloaded = [p for p in cache.rglob("*.parquet") if p.is_file()]
    assert bool(downloaded) == keep
