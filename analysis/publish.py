"""Publish the results as a Hub dataset: build the folder, then (with ``push``) upload it in one commit.

The folder holds ``data/train-00000-of-00001.parquet``, ``results.csv``, ``lle.csv``, ``README.md``
(the dataset card), unless disabled, ``REPORT.md``, and ``badges/<safe name>.json``, each dataset's
shields.io endpoint badge (:mod:`hubsurvey.analysis.badges`). Every file depends only on the DB's
content, so an unchanged DB gives an identical folder.

Pushing goes through a :class:`hubsurvey.core.hub.HubClient` that the caller passes in (``HF_ENDPOINT`` / ``HF_TOKEN`` from the
environment): ``create_repo(exist_ok=True)``, then the remote tree is compared with the folder (git
blob sha1 of each local file against the tree's ``oid``, or the LFS sha256 for LFS files), and only
if some file differs is ONE commit made with every file (``create_commit``). That same commit
deletes the remote files hubsurvey owns (:func:`is_owned`: the card, the CSVs, REPORT.md, Parquet
shards under ``data/``) that this build no longer produces, e.g. a REPORT.md after ``report=False``
or a shard of an older layout, so a stale file can never be loaded with the new ones; other files
of the repo are left as they are. Publishing an unchanged folder again makes no commit. The token is
never printed nor written; Hub errors are scrubbed of it. ``private`` applies when the repo is
created; an existing repo keeps its visibility.

Without ``out_dir`` the folder is built in a fresh temporary folder of its own, removed when
:func:`publish` returns (two publishes never share it); with ``out_dir`` it is kept.

``hubsurvey publish`` is a thin layer over :func:`publish`.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from huggingface_hub import CommitOperationAdd, CommitOperationDelete
from huggingface_hub.errors import EntryNotFoundError, RevisionNotFoundError

from hubsurvey import __version__
from hubsurvey.analysis.badges import badge_files
from hubsurvey.analysis.card import DEFAULT_LICENSE, DEFAULT_PRETTY_NAME, render_card
from hubsurvey.analysis.checks_manifest import CHECKS_MANIFEST_PATH
from hubsurvey.analysis.export import (
    COLUMN_CSV_PATH,
    CONTAMINATION_CSV_PATH,
    CROSS_CSV_PATH,
    CSV_PATH,
    EXPOSURE_CSV_PATH,
    FAMILIES_CSV_PATH,
    GROUP_CSV_PATH,
    HISTORY_CSV_PATH,
    LLE_CSV_PATH,
    SCORES_CSV_PATH,
    TIME_CSV_PATH,
    export_results,
    write_manifest,
)
from hubsurvey.analysis.findings import findings
from hubsurvey.analysis.report import REPORT_MD, render_markdown, report_context
from hubsurvey.core.store import Store

CARD_PATH = "README.md"
_REPO_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9][A-Za-z0-9_.-]*$")


class PublishError(Exception):
    """The results cannot be published as asked (bad repo id, empty DB, Hub failure); one line."""


@dataclass(frozen=True)
class PlannedFile:
    """One file of the folder: where it goes in the repo, its size and content hashes."""

    path_in_repo: str
    local: Path
    size: int
    git_sha1: str  # git blob id: what the Hub's tree reports as `oid` for a regular file
    sha256: str  # what the Hub reports as the LFS oid for an LFS file


@dataclass
class PublishResult:
    repo_id: str
    folder: Path
    files: list[PlannedFile]
    pushed: bool = False  # a commit was made
    unchanged: bool = False  # the remote already held exactly these files: no commit
    changed: list[str] = field(default_factory=list)  # files that differed from the remote
    deleted: list[str] = field(default_factory=list)  # remote files of hubsurvey's no longer produced
    folder_removed: bool = False  # the folder was a temporary one, removed after the push
    commit_url: str | None = None
    repo_url: str | None = None

    @property
    def total_size(self) -> int:
        return sum(f.size for f in self.files)


def check_repo_id(repo_id: str) -> str:
    if not _REPO_ID.match(repo_id or "") or ".." in repo_id:
        raise PublishError(f"{repo_id!r} is not a repo id of the form OWNER/NAME")
    return repo_id


def default_folder(repo_id: str) -> Path:
    """A fresh, empty temporary folder for one build (never a shared fixed path)."""
    return Path(tempfile.mkdtemp(prefix=f"hubsurvey-publish-{repo_id.replace('/', '__')}-"))


#: Paths of a results repo that hubsurvey writes: a remote file among them that a build no longer
#: produces is deleted by the push. Everything else in the repo belongs to its owner.
OWNED_FILES = frozenset({CARD_PATH, CSV_PATH, LLE_CSV_PATH, REPORT_MD, CROSS_CSV_PATH, FAMILIES_CSV_PATH,
                         CONTAMINATION_CSV_PATH, CHECKS_MANIFEST_PATH, EXPOSURE_CSV_PATH, HISTORY_CSV_PATH, COLUMN_CSV_PATH,
                         SCORES_CSV_PATH, GROUP_CSV_PATH, TIME_CSV_PATH})
OWNED_DATA = re.compile(r"^data/[^/]+\.parquet$")
OWNED_BADGES = re.compile(r"^badges/[^/]+\.json$")  # analysis/badges.py: one per dataset


def is_owned(path_in_repo: str) -> bool:
    return path_in_repo in OWNED_FILES or bool(OWNED_DATA.match(path_in_repo) or OWNED_BADGES.match(path_in_repo))


def git_blob_sha1(data: bytes) -> str:
    """The git object id of a blob with this content (what a Hub tree lists as a file's oid)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def plan_file(folder: Path, path_in_repo: str) -> PlannedFile:
    local = folder / path_in_repo
    data = local.read_bytes()
    return PlannedFile(path_in_repo, local, len(data), git_blob_sha1(data), hashlib.sha256(data).hexdigest())


def build_folder(
    store: Store,
    out_dir: str | Path,
    repo_id: str,
    *,
    report: bool = True,
    license: str = DEFAULT_LICENSE,
    pretty_name: str = DEFAULT_PRETTY_NAME,
) -> list[PlannedFile]:
    """Write the results dataset's files into ``out_dir``; return them, in upload order."""
    check_repo_id(repo_id)
    folder = Path(out_dir)
    # overwrite: a folder built before loses exactly the files hubsurvey wrote (its manifest)
    written = export_results(store, folder, lle_compat=True, overwrite=True)
    paths = [p.relative_to(folder).as_posix() for p in written]
    found = findings(store)  # once, for the report and the card
    if report:
        (folder / REPORT_MD).write_text(render_markdown(report_context(store, found=found)), encoding="utf-8")
        paths.append(REPORT_MD)
    card = render_card(store, repo_id, paths, license=license, pretty_name=pretty_name, found=found)
    (folder / CARD_PATH).write_text(card, encoding="utf-8")
    paths.insert(0, CARD_PATH)
    for path, data in badge_files(store).items():  # after the card, which does not list them
        (folder / path).parent.mkdir(exist_ok=True)
        (folder / path).write_bytes(data)
        paths.append(path)
    write_manifest(folder, paths)
    return [plan_file(folder, p) for p in paths]


def remote_files(client: Any, repo_id: str, repo_type: str = "dataset") -> dict[str, Any]:
    """``{path: RepoFile}`` of the repo's main branch; empty when the repo has no commit yet."""
    api = client.api
    try:
        items = client.call(lambda: list(api.list_repo_tree(repo_id, repo_type=repo_type, recursive=True)))
    except (RevisionNotFoundError, EntryNotFoundError):
        return {}
    return {it.path: it for it in items if hasattr(it, "blob_id")}


def is_same(local: PlannedFile, remote: Any) -> bool:
    """True when the remote file has exactly the local content."""
    if remote is None:
        return False
    lfs = getattr(remote, "lfs", None)
    if lfs is not None:
        return getattr(lfs, "sha256", None) == local.sha256
    return getattr(remote, "blob_id", None) == local.git_sha1


def push_folder(
    files: Sequence[PlannedFile],
    repo_id: str,
    *,
    folder: Path,
    private: bool = False,
    client: Any = None,
    commit_message: str | None = None,
    repo_type: str = "dataset",
    space_sdk: str | None = None,
    owned: Callable[[str], bool] = is_owned,
) -> PublishResult:
    """Create the repo if needed and upload ``files`` in one commit, unless the remote is identical.

    ``repo_type="space"`` (with its ``space_sdk``) pushes a Space the same way (``publish --site``);
    ``owned`` says which remote files this build produces, so that a stale one is deleted.
    """
    check_repo_id(repo_id)
    if client is None:  # analysis reads only the store: the caller brings the Hub client
        raise PublishError("pushing needs a Hub client (hubsurvey.core.hub.HubClient)")
    api = client.api
    result = PublishResult(repo_id, folder, list(files))
    try:
        space = {"space_sdk": space_sdk} if space_sdk else {}
        url = client.call(api.create_repo, repo_id, repo_type=repo_type, exist_ok=True, private=private, **space)
        result.repo_url = str(url)
        remote = remote_files(client, repo_id, repo_type)
        result.changed = [f.path_in_repo for f in files if not is_same(f, remote.get(f.path_in_repo))]
        produced = {f.path_in_repo for f in files}
        result.deleted = sorted(p for p in remote if owned(p) and p not in produced)
        if not result.changed and not result.deleted:
            result.unchanged = True
            return result
        operations: list[CommitOperationAdd | CommitOperationDelete] = [CommitOperationAdd(path_in_repo=f.path_in_repo, path_or_fileobj=str(f.local)) for f in files]
        operations += [CommitOperationDelete(path_in_repo=p) for p in result.deleted]
        description = "Changed: " + ", ".join(result.changed)
        if result.deleted:
            description += "\nDeleted (no longer produced): " + ", ".join(result.deleted)
        info = client.call(
            api.create_commit,
            repo_id,
            operations,
            commit_message=commit_message or f"hubsurvey {__version__}: publish survey results",
            commit_description=description,
            repo_type=repo_type,
        )
    except PublishError:
        raise
    except Exception as e:  # Hub refusals, network: one line, never the token
        text = str(e).strip().splitlines()
        message = f"{type(e).__name__}: {text[0]}" if text else type(e).__name__
        raise PublishError(client.scrub(f"{repo_id}: {message}")) from None
    result.pushed = True
    result.commit_url = getattr(info, "commit_url", None)
    return result


def publish(
    store: Store,
    repo_id: str,
    *,
    out_dir: str | Path | None = None,
    push: bool = False,
    private: bool = False,
    report: bool = True,
    client: Any = None,
    license: str = DEFAULT_LICENSE,
    pretty_name: str = DEFAULT_PRETTY_NAME,
) -> PublishResult:
    """Build the results folder for ``repo_id`` and, when ``push``, upload it (see module doc)."""
    check_repo_id(repo_id)
    rows = store.con.execute("SELECT count(*) FROM current_measurements").fetchone()[0]
    if not rows:
        raise PublishError(f"{store.path}: no measurements to publish")
    temporary = out_dir is None
    folder = default_folder(repo_id) if out_dir is None else Path(out_dir)
    try:
        files = build_folder(store, folder, repo_id, report=report, license=license, pretty_name=pretty_name)
        if not push:
            result = PublishResult(repo_id, folder, files)
        else:
            result = push_folder(files, repo_id, folder=folder, private=private, client=client,
                                 commit_message=f"hubsurvey {__version__}: {rows} result rows")
    finally:
        if temporary:  # a build of its own: nothing is left in the temp folder
            shutil.rmtree(folder, ignore_errors=True)
    result.folder_removed = temporary
    return result
