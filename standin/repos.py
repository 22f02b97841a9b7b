"""The stand-in's model of a dataset repo: blobs, immutable branch snapshots, metadata.

A ``Repo`` has a ``main`` branch (README.md, .gitattributes, pushed files) and, when the dataset
has a Parquet export, a ``refs/convert/parquet`` branch whose commit sha is derived from the main
sha (so a new main revision also moves the export, as the Hub's re-conversion does). Branches are
immutable snapshots: a new revision replaces the snapshot object, so request threads can read
without locks, and every sha ever served stays resolvable through ``Repo.history``.
"""

from __future__ import annotations

import datetime as dt
import functools
import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from . import cards

MAIN_REF = "refs/heads/main"
PARQUET_REF = "refs/convert/parquet"

GITATTRIBUTES = b"*.parquet filter=lfs diff=lfs merge=lfs -text\n*.arrow filter=lfs diff=lfs merge=lfs -text\n"

# Listing properties that ``expand`` may ask for (huggingface_hub's ExpandDatasetProperty_T).
EXPANDABLE = frozenset(
    {
        "author", "cardData", "citation", "createdAt", "description", "disabled", "downloads",
        "downloadsAllTime", "gated", "lastModified", "likes", "mainSize", "paperswithcode_id",
        "private", "resourceGroup", "sha", "siblings", "tags", "trendingScore", "usedStorage",
    }
)
# What a listing item carries when neither ``expand`` nor ``full`` is given.
DEFAULT_LIST_PROPS = (
    "author", "sha", "lastModified", "createdAt", "private", "gated", "disabled",
    "downloads", "likes", "trendingScore", "tags", "description",
)


def sha1_hex(*parts: str | bytes) -> str:
    """Hex sha1 of the parts joined by NUL bytes: the stand-in's deterministic id maker."""
    h = hashlib.sha1()
    for i, part in enumerate(parts):
        if i:
            h.update(b"\0")
        h.update(part.encode() if isinstance(part, str) else part)
    return h.hexdigest()


def parquet_sha(main_sha: str, conversion: int = 0) -> str:
    """The commit of the ``refs/convert/parquet`` branch for a given main commit (and the
    converter's ``conversion``-th run again on it: a rewrite of the branch)."""
    return sha1_hex(PARQUET_REF, main_sha) if not conversion else sha1_hex(PARQUET_REF, main_sha, str(conversion))


def object_id(repo_id: str) -> str:
    """A stable 24-hex ``_id`` like the Hub's MongoDB ids."""
    return sha1_hex("_id", repo_id)[:24]


@functools.lru_cache(maxsize=4096)
def _iso_day(day: int) -> str:
    return (dt.date(2020, 1, 1) + dt.timedelta(days=day)).isoformat()


def iso_date(day: int, second: int = 0) -> str:
    """``day`` days (plus ``second`` < 86400 seconds) after 2020-01-01, in the Hub's timestamp format."""
    return f"{_iso_day(day)}T{second // 3600:02d}:{second // 60 % 60:02d}:{second % 60:02d}.000Z"


def now_iso() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.000Z")


class Blob:
    """One file's content plus the ids the Hub reports for it.

    ``lfs`` blobs (Parquet files) are reported like Git LFS files: the tree ``oid`` is the git
    hash of the LFS pointer, ``lfs.oid`` and the download ETag are the sha256 of the content.
    Regular blobs (README.md, pushed files) use the git blob sha1 for both.
    """

    size: int
    lfs: bool

    def read(self, start: int = 0, end: int | None = None) -> bytes:
        """Bytes ``[start, end)`` of the content (``end=None``: to the end)."""
        raise NotImplementedError

    @cached_property
    def sha256(self) -> str:
        return hashlib.sha256(self.read()).hexdigest()

    @cached_property
    def lfs_pointer(self) -> bytes:
        return f"version https://git-lfs.github.com/spec/v1\noid sha256:{self.sha256}\nsize {self.size}\n".encode()

    @cached_property
    def git_oid(self) -> str:
        content = self.lfs_pointer if self.lfs else self.read()
        return hashlib.sha1(b"blob %d\0" % len(content) + content).hexdigest()

    @property
    def etag(self) -> str:
        return self.sha256 if self.lfs else self.git_oid


class BytesBlob(Blob):
    """A blob held in memory (pushed files, synthesized filler exports, generated READMEs)."""

    def __init__(self, data: bytes, *, lfs: bool = False) -> None:
        self.data = bytes(data)
        self.size = len(self.data)
        self.lfs = lfs

    def read(self, start: int = 0, end: int | None = None) -> bytes:
        return self.data[start:end]


class FileBlob(Blob):
    """A blob read from a file under a served (read-only) root, on demand."""

    def __init__(self, path: Path, *, lfs: bool = True) -> None:
        self.path = path
        self.size = path.stat().st_size
        self.lfs = lfs

    def read(self, start: int = 0, end: int | None = None) -> bytes:
        end = self.size if end is None else min(end, self.size)
        with open(self.path, "rb") as fh:
            fh.seek(start)
            return fh.read(max(0, end - start))

    @cached_property
    def sha256(self) -> str:
        h = hashlib.sha256()
        with open(self.path, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
        return h.hexdigest()


@dataclass(frozen=True)
class Branch:
    """An immutable snapshot of one branch: its commit sha and its files by path."""

    ref: str
    sha: str
    files: Mapping[str, Blob]

    @cached_property
    def directories(self) -> frozenset[str]:
        dirs = set()
        for path in self.files:
            parts = path.split("/")[:-1]
            dirs.update("/".join(parts[: i + 1]) for i in range(len(parts)))
        return frozenset(dirs)

    def siblings(self, blobs: bool = False) -> list[dict[str, Any]]:
        """The ``siblings`` list of the repo API; ``blobs`` adds sizes and LFS info (``blobs=true``)."""
        out = []
        for path in sorted(self.files):
            item: dict[str, Any] = {"rfilename": path}
            if blobs:
                blob = self.files[path]
                item.update(size=blob.size, blobId=blob.git_oid)
                if blob.lfs:
                    item["lfs"] = {"size": blob.size, "sha256": blob.sha256, "pointerSize": len(blob.lfs_pointer)}
            out.append(item)
        return out

    def tree(self, path: str, recursive: bool) -> list[dict[str, Any]] | None:
        """Tree items under directory ``path`` ("" = root), or None if it is not a directory."""
        path = path.strip("/")
        if path and path not in self.directories:
            return None
        prefix = f"{path}/" if path else ""
        paths = [p for p in (*self.directories, *self.files)
                 if p.startswith(prefix) and (recursive or "/" not in p[len(prefix):])]
        return [self.entry(p) for p in sorted(paths)]

    def entry(self, path: str) -> dict[str, Any] | None:
        """The tree item of one file or directory (None if the path does not exist)."""
        blob = self.files.get(path)
        if blob is None:
            return {"type": "directory", "oid": self._tree_oid(path), "path": path} if path in self.directories else None
        item: dict[str, Any] = {"type": "file", "oid": blob.git_oid, "size": blob.size, "path": path}
        if blob.lfs:
            item["lfs"] = {"oid": blob.sha256, "size": blob.size, "pointerSize": len(blob.lfs_pointer)}
        return item

    def _tree_oid(self, directory: str) -> str:
        # Not a real git tree hash (that would need every blob's hash); stable while content is.
        inside = sorted(f"{p}:{b.size}" for p, b in self.files.items() if p.startswith(directory + "/"))
        return sha1_hex("tree", directory, *inside)


class Repo:
    """One dataset repo. ``meta`` holds the listing properties (author, tags, gated, ...).

    ``parquet_files`` is the export's file mapping, a zero-argument function producing it (built
    on first use, for synthetic datasets), or None when the dataset has no Parquet export.
    """

    def __init__(
        self,
        repo_id: str,
        meta: Mapping[str, Any],
        *,
        main_files: Mapping[str, Blob],
        main_sha: str,
        parquet_files: Mapping[str, Blob] | Callable[[], Mapping[str, Blob]] | None = None,
        read_only: bool = True,
    ) -> None:
        self.id = repo_id
        self.meta = dict(meta)
        self.read_only = read_only
        self.main = Branch(MAIN_REF, main_sha, dict(main_files))
        self.history: dict[str, Branch] = {main_sha: self.main}
        self.commits: list[dict[str, Any]] = []
        self._parquet_files = parquet_files
        self._parquet: Branch | None = None
        self.conversion = 0  # the converter's runs again on the current main commit (``reconvert``)

    @property
    def has_parquet(self) -> bool:
        return self._parquet_files is not None

    @property
    def parquet(self) -> Branch | None:
        """The ``refs/convert/parquet`` snapshot matching the current main commit (None if no export)."""
        if self._parquet_files is None:
            return None
        sha = self.parquet_commit
        branch = self._parquet
        if branch is None or branch.sha != sha:
            if callable(self._parquet_files):
                self._parquet_files = dict(self._parquet_files())
            branch = Branch(PARQUET_REF, sha, self._parquet_files)
            self._parquet = branch
            self.history[sha] = branch
        return branch

    def branch(self, rev: str) -> Branch | None:
        """The snapshot a revision names: a branch name or any commit sha this repo has served."""
        if rev in ("main", MAIN_REF):
            return self.main
        if rev == PARQUET_REF or (self.has_parquet and rev == self.parquet_commit):
            return self.parquet
        return self.history.get(rev)

    @property
    def parquet_commit(self) -> str:
        """The commit ``refs/convert/parquet`` names now."""
        return parquet_sha(self.main.sha, self.conversion)

    def reconvert(self, files: Mapping[str, Blob] | None = None) -> None:
        """The converter runs again on the current main commit (``files``: the export it writes, else
        the same): the branch is rewritten to a new commit, and the one it replaced is gone."""
        if self._parquet_files is None:
            raise ValueError(f"{self.id} has no Parquet export to rewrite")
        self._rewrite_export(files, forget_previous=True)
        self.conversion += 1

    def _rewrite_export(self, files: Mapping[str, Blob] | None, *, forget_previous: bool) -> None:
        """The export's next files (None: the same); the next read builds its commit. With
        ``forget_previous``, the commit it replaces is no longer served."""
        previous = self.parquet
        if forget_previous and previous is not None:
            self.history.pop(previous.sha, None)
        if files is not None:
            self._parquet_files = dict(files)
        self._parquet = None

    def set_main(self, sha: str, files: Mapping[str, Blob] | None = None) -> None:
        """Move main to a new commit (same files unless given); old commits stay resolvable."""
        self.main = Branch(MAIN_REF, sha, dict(self.main.files if files is None else files))
        self.history[sha] = self.main
        self.meta["lastModified"] = now_iso()

    def replace_parquet(self, files: Mapping[str, Blob]) -> None:
        """New Parquet export files (a new revision with other content); call with set_main."""
        self._parquet_files = dict(files)
        self._parquet = None
    def replace_data(self, files: Mapping[str, Blob], *, keep_previous_export: bool = True) -> str:
        """New data: a new main commit whose Parquet export holds ``files`` (paths as in the branch:
        ``config/split/NNNN.parquet``). Earlier commits and their export stay resolvable (the export's
        previous commit is forgotten unless ``keep_previous_export``); returns the new sha."""
        if self._parquet_files is None:
            raise ValueError(f"{self.id} has no Parquet export to replace")
        sha = sha1_hex("data", self.main.sha, *(f"{p} {b.git_oid}" for p, b in sorted(files.items())))
        self._rewrite_export(files, forget_previous=not keep_previous_export)
        self.set_main(sha)
        self.meta["usedStorage"] = sum(b.size for b in files.values())
        return sha

    def props(self, branch: Branch | None = None, *, blobs: bool = False) -> dict[str, Any]:
        """Every API property of the repo as seen at ``branch`` (default: main)."""
        branch = branch or self.main
        return {
            "_id": object_id(self.id),
            "id": self.id,
            **self.meta,
            "sha": branch.sha,
            "siblings": branch.siblings(blobs),
        }

    def commit(self, summary: str, description: str, adds: Mapping[str, bytes], deletes: list[str]) -> dict[str, Any]:
        """Apply one pushed commit to main and record it. ``deletes`` are file or folder paths.

        Files identical to the current ones still make a new commit: avoiding empty commits is
        the client's job, and tests want to see whether it did.
        """
        files = dict(self.main.files)
        for path in deletes:
            folder = path.rstrip("/") + "/"
            for existing in [p for p in files if p == path or p.startswith(folder)]:
                del files[existing]
        for path, data in adds.items():
            files[path] = BytesBlob(data)
        ops = [{"op": "delete", "path": p} for p in deletes]
        ops += [{"op": "add", "path": p, "size": files[p].size, "oid": files[p].git_oid} for p in adds]
        parent = self.main.sha
        oid = sha1_hex("commit", parent, summary, description, *(f"{o['op']}:{o['path']}:{o.get('oid')}" for o in ops))
        self.set_main(oid, files)
        if "README.md" in files:
            card, _ = cards.parse_card(files["README.md"].read().decode("utf-8", "replace"))
            self.meta["cardData"] = card or None
            self.meta["tags"] = cards.tags_from_card(card)
        self.meta["usedStorage"] = sum(b.size for b in files.values())
        record = {"oid": oid, "parent": parent, "summary": summary, "description": description, "operations": ops}
        self.commits.append(record)
        return record


def select(props: Mapping[str, Any], keys) -> dict[str, Any]:
    """``_id``, ``id`` and the requested properties that have a value (the Hub omits empty ones)."""
    out = {"_id": props["_id"], "id": props["id"]}
    for key in keys:
        if props.get(key) is not None:
            out[key] = props[key]
    return out
