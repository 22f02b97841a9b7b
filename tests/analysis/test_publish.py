"""hubsurvey publish: the dry-run plan, and pushing to the local Hub stand-in end to end."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from leaks import secret_hits
from test_analysis_fixtures import SECRET, audit_folder, build_planted_db, write_folder
from typer.testing import CliRunner

from hubsurvey.analysis.publish import git_blob_sha1
from hubsurvey.cli import app
from hubsurvey_standin import StandinHub
from hubsurvey_standin.cards import parse_card

runner = CliRunner()
TOKEN = "hf_publish_test_token_5f3a9c0e7d1b"
FILES = {"README.md", "data/train-00000-of-00001.parquet", "results.csv", "lle.csv", "REPORT.md",
         # one shields.io endpoint badge per dataset of the planted DB (analysis/badges.py)
         "badges/acme%2Falpha.json", "badges/acme%2Fbeta.json", "badges/acme%2Fgamma.json", "badges/acme%2Fdelta.json"}


@pytest.fixture
def planted_db(tmp_path):
    return build_planted_db(tmp_path / "db")


@pytest.fixture
def hub(tmp_path, monkeypatch):
    root = tmp_path / "hubroot"
    root.mkdir()
    (root / "index.json").write_text("[]")
    with StandinHub(root, valid_tokens={TOKEN}) as server:
        monkeypatch.setenv("HF_ENDPOINT", server.url)
        monkeypatch.setenv("HF_TOKEN", TOKEN)
        yield server


def _remote_tree(hub: StandinHub, repo_id: str) -> dict[str, str]:
    from huggingface_hub import HfApi

    api = HfApi(endpoint=hub.url, token=TOKEN)
    return {f.path: f.blob_id for f in api.list_repo_tree(repo_id, repo_type="dataset", recursive=True) if hasattr(f, "blob_id")}


def _no_token_anywhere(output: str, folder: Path) -> None:
    hits = secret_hits(TOKEN, texts={"output": output}, paths=[folder])  # Parquet is read, not grepped
    assert not hits, hits


def test_git_blob_sha1_matches_git():
    # what `git hash-object --stdin` prints for these contents
    assert git_blob_sha1(b"hello\n") == "ce013625030ba8dba906f756967f9e9ca394464a"
    assert git_blob_sha1(b"") == "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391"


@pytest.mark.slow
def test_dry_run_prints_the_plan_and_builds_the_folder(planted_db, tmp_path):
    out = tmp_path / "folder"
    r = runner.invoke(app, ["publish", "--repo", "me/lle-results", "--db", str(planted_db), "--out", str(out)])
    assert r.exit_code == 0, r.output
    built = {p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()}
    assert built == FILES | {".hubsurvey-export.json"}  # the manifest of what was built (not uploaded)
    assert "me/lle-results" in r.stdout and str(out) in r.stdout and "dry run" in r.stdout
    for name in FILES:
        assert f"{name} " in r.stdout and f"{(out / name).stat().st_size} bytes" in r.stdout
    assert SECRET not in "".join((out / f).read_text(errors="replace") for f in FILES)


@pytest.mark.slow
def test_no_report_option(planted_db, tmp_path):
    out = tmp_path / "folder"
    r = runner.invoke(app, ["publish", "--repo", "me/x", "--db", str(planted_db), "--out", str(out), "--no-report"])
    assert r.exit_code == 0 and not (out / "REPORT.md").exists() and "REPORT.md" not in (out / "README.md").read_text()


@pytest.mark.slow
@pytest.mark.parametrize("repo", ["noslash", "a/b/c", "../x", "me/"])
def test_bad_repo_id(planted_db, tmp_path, repo):
    r = runner.invoke(app, ["publish", "--repo", repo, "--db", str(planted_db), "--out", str(tmp_path / "o")])
    assert r.exit_code == 2 and r.stderr.startswith("error: ") and len(r.stderr.strip().splitlines()) == 1


@pytest.mark.slow
def test_empty_db_is_not_published(tmp_path):
    from hubsurvey.core.store import Store

    Store(tmp_path / "empty.duckdb").close()
    r = runner.invoke(app, ["publish", "--repo", "me/x", "--db", str(tmp_path / "empty.duckdb"), "--out", str(tmp_path / "o")])
    assert r.exit_code == 2 and "no measurements" in r.stderr


@pytest.mark.slow
def test_publish_end_to_end_against_the_standin(planted_db, hub, tmp_path):
    repo = "me/lle-results"
    out = tmp_path / "folder"
    args = ["publish", "--repo", repo, "--db", str(planted_db), "--out", str(out), "--push"]

    first = runner.invoke(app, args)
    assert first.exit_code == 0, first.output
    assert "pushed: one commit" in first.stdout
    commits = hub.commits(repo)
    assert len(commits) == 1
    assert {op["path"] for op in commits[0]["operations"]} == FILES  # one commit with every file
    # the files on the stand-in are the local ones, byte for byte (git blob ids)
    remote = _remote_tree(hub, repo)
    assert {p: remote[p] for p in FILES} == {p: git_blob_sha1((out / p).read_bytes()) for p in FILES}
    # the card went through validate-yaml and passes its rules
    assert hub.stats()["validate_yaml"] >= 1
    assert parse_card((out / "README.md").read_text())[1] == []

    # unchanged folder: no new commit
    second = runner.invoke(app, args)
    assert second.exit_code == 0, second.output
    assert "unchanged" in second.stdout and "no commit" in second.stdout
    assert len(hub.commits(repo)) == 1

    # a changed DB: one new commit, with every file again
    audit_folder(write_folder(tmp_path / "more", "acme/epsilon", {"train": [("q", 0)], "test": [("q", 0)]}), planted_db)
    third = runner.invoke(app, args)
    assert third.exit_code == 0, third.output
    assert len(hub.commits(repo)) == 2
    assert "lle.csv" in third.stdout.split("changed:")[1]
    assert _remote_tree(hub, repo)["lle.csv"] == git_blob_sha1((out / "lle.csv").read_bytes())

    for result in (first, second, third):
        _no_token_anywhere(result.output + result.stderr, out)


@pytest.mark.slow
def test_private_repo_and_refused_token(planted_db, hub, tmp_path, monkeypatch):
    from huggingface_hub import HfApi

    # Check what publish asks of create_repo, and that the stand-in made the repo private.
    asked = []
    original = HfApi.create_repo

    def spy(self, repo_id, **kwargs):
        asked.append((repo_id, kwargs))
        return original(self, repo_id, **kwargs)

    monkeypatch.setattr(HfApi, "create_repo", spy)
    r = runner.invoke(app, ["publish", "--repo", "me/private-results", "--db", str(planted_db),
                            "--out", str(tmp_path / "p"), "--push", "--private"])
    assert r.exit_code == 0, r.output
    assert asked == [("me/private-results", {"repo_type": "dataset", "exist_ok": True, "private": True})]
    assert len(hub.commits("me/private-results")) == 1
    import os

    info = HfApi(endpoint=hub.url, token=os.environ["HF_TOKEN"]).dataset_info("me/private-results")
    assert info.private is True

    wrong = "hf_wrong_token_that_must_not_leak_42"
    monkeypatch.setenv("HF_TOKEN", wrong)
    r = runner.invoke(app, ["publish", "--repo", "me/other", "--db", str(planted_db), "--out", str(tmp_path / "q"), "--push"])
    assert r.exit_code == 2
    assert r.stderr.startswith("error: me/other:") and len(r.stderr.strip().splitlines()) == 1
    assert wrong not in r.output + r.stderr
    assert hub.commits("me/other") == []


def test_remote_lfs_file_is_compared_by_sha256(tmp_path):
    """A Hub tree lists LFS files with the sha256 of their content: compare that, not the pointer's id."""
    from types import SimpleNamespace

    from hubsurvey.analysis.publish import is_same, plan_file

    (tmp_path / "f.parquet").write_bytes(b"PAR1 data PAR1")
    local = plan_file(tmp_path, "f.parquet")
    digest = hashlib.sha256(b"PAR1 data PAR1").hexdigest()
    assert is_same(local, SimpleNamespace(blob_id="pointer-oid", lfs=SimpleNamespace(sha256=digest)))
    assert not is_same(local, SimpleNamespace(blob_id=local.git_sha1, lfs=SimpleNamespace(sha256="0" * 64)))
    assert is_same(local, SimpleNamespace(blob_id=local.git_sha1, lfs=None))
    assert not is_same(local, None)


@pytest.mark.slow
def test_license_and_pretty_name_options(planted_db, tmp_path):
    from huggingface_hub import DatasetCard

    out = tmp_path / "folder"
    r = runner.invoke(app, ["publish", "--repo", "me/x", "--db", str(planted_db), "--out", str(out),
                            "--license", "mit", "--pretty-name", "My results"])
    assert r.exit_code == 0, r.output
    data = DatasetCard((out / "README.md").read_text()).data.to_dict()
    assert (data["license"], data["pretty_name"]) == ("mit", "My results")


@pytest.mark.slow
def test_push_deletes_the_files_it_no_longer_produces_in_the_same_commit(planted_db, hub, tmp_path):
    from huggingface_hub import HfApi

    repo = "me/stale"
    out = tmp_path / "folder"
    first = runner.invoke(app, ["publish", "--repo", repo, "--db", str(planted_db), "--out", str(out), "--push"])
    assert first.exit_code == 0, first.output
    # a shard of an older layout, and a file of the repo's owner, added by hand
    api = HfApi(endpoint=hub.url, token=TOKEN)
    api.upload_file(path_or_fileobj=b"PAR1 old PAR1", path_in_repo="data/train-00001-of-00002.parquet",
                    repo_id=repo, repo_type="dataset")
    api.upload_file(path_or_fileobj=b"my notes", path_in_repo="notes.md", repo_id=repo, repo_type="dataset")
    before = len(hub.commits(repo))

    r = runner.invoke(app, ["publish", "--repo", repo, "--db", str(planted_db), "--out", str(out), "--push", "--no-report"])
    assert r.exit_code == 0, r.output
    commits = hub.commits(repo)
    assert len(commits) == before + 1  # one commit: the uploads and the deletions together
    ops = commits[-1]["operations"]
    assert {op["path"] for op in ops if op["op"] == "delete"} == {"REPORT.md", "data/train-00001-of-00002.parquet"}
    remote = _remote_tree(hub, repo)
    assert set(remote) - {".gitattributes"} == FILES - {"REPORT.md"} | {"notes.md"}  # the owner's file stays
    # published again unchanged: nothing to upload, nothing to delete, no commit
    r = runner.invoke(app, ["publish", "--repo", repo, "--db", str(planted_db), "--out", str(out), "--push", "--no-report"])
    assert r.exit_code == 0 and "unchanged" in r.stdout and len(hub.commits(repo)) == before + 1


@pytest.mark.slow
def test_each_publish_builds_in_a_fresh_temp_folder_removed_afterwards(planted_db, tmp_path, monkeypatch):
    import tempfile

    from hubsurvey.analysis.publish import publish
    from hubsurvey.core.store import Store

    temp = tmp_path / "temp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    with Store(planted_db, read_only=True) as store:
        first = publish(store, "me/x")
        second = publish(store, "me/x")
    assert first.folder != second.folder and first.folder_removed and second.folder_removed
    assert list(temp.iterdir()) == []  # nothing left in the temp folder
    assert {f.path_in_repo for f in first.files} == FILES
