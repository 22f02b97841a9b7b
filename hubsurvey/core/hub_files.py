"""The Hub client's files: downloads into the survey's own cache, ranged reads (a Parquet file's
footer), small files read whole; and :func:`delete_files`, which frees a measured job's downloads.

:class:`HubFiles` sits behind :class:`hubsurvey.core.hub.HubClient` (``client.files``; the client's
``download``, ``parquet_footer`` and ``small_file`` call it). Every request is the client's
:meth:`~hubsurvey.core.hub_calls.HubCalls.call` on the resolver bucket. A file is downloaded through
huggingface_hub's session, not ``hf_hub_download``, whose own retry and resume loop would multiply
the deadline.
"""

from __future__ import annotations

import os
import re
import struct
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx2
import pyarrow as pa
import pyarrow.parquet as pq
from huggingface_hub import hf_hub_url
from huggingface_hub.utils import get_session, hf_raise_for_status

from hubsurvey.core.errors import BadInputError, HubFaultError
from hubsurvey.core.hub_calls import HubCalls

#: the largest small file read whole (a model's ``.eval_results`` file, a benchmark's ``eval.yaml``)
SMALL_FILE_BYTES = 1 << 20
FOOTER_PROBE = 64 * 1024  # one suffix read gets the footer of almost every Parquet file
DOWNLOAD_CHUNK = 1 << 20


_RANGE_TOTAL = re.compile(r"/(\d+)\s*$")


@dataclass(frozen=True)
class RangeRead:
    """A ranged read's bytes, with the commit (``X-Repo-Commit``) and the file's whole size
    (``Content-Range``) the Hub answered it with, when it said them."""

    content: bytes
    commit: str | None
    total: int | None


@dataclass(frozen=True)
class ParquetFile:
    """One Parquet file of a branch, as its footer read found it."""

    path: str
    metadata: Any  # pyarrow.parquet.FileMetaData
    commit: str | None  # the branch commit that served it
    size: int | None  # bytes, when the Hub said


class HubFiles:
    """A dataset's files through the client: where a download goes, the download itself, ranged reads."""

    def __init__(self, hub: HubCalls, token: str | None) -> None:
        self.hub = hub
        self._token = token  # a ranged read sends it alone, without huggingface_hub's other headers

    def snapshot_path(self, repo_id: str, path: str, revision: str) -> Path:
        """Where :meth:`download` puts a file: ``<cache>/datasets--owner--name/snapshots/<revision>/<path>``
        (the layout of a huggingface_hub cache, which the cache budget knows), always inside it."""
        root = self.hub.cache_dir / ("datasets--" + repo_id.replace("/", "--")) / "snapshots" / quote(revision, safe="")
        target = root / path
        if not target.resolve().is_relative_to(root.resolve()) or path.startswith("/"):
            raise BadInputError(f"{repo_id}: file path {path!r} leaves its folder")
        return target

    def download(self, repo_id: str, path: str, revision: str) -> Path:
        """Download one file into the survey's cache (``cache_dir``), reused across runs.

        Pass the Parquet branch's commit sha (:meth:`parquet_sha`) as ``revision`` so that every
        file of one measurement comes from the same commit. The body streams to a temporary file
        beside the dataset's files, renamed into place once complete: a failed or stopped download
        leaves no file that looks whole.
        """
        target = self.snapshot_path(repo_id, path, revision)
        if target.is_file():
            return target
        url = self.file_url(repo_id, path, revision)
        return self.hub.call(self._fetch, url, target, _file=True, _what=f"{repo_id} {path}")

    def _fetch(self, url: str, target: Path) -> Path:
        repo_folder = next(p for p in target.parents if p.name.startswith("datasets--"))
        incomplete = repo_folder / "incomplete"
        incomplete.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(dir=incomplete, suffix=".part")
        tmp = Path(tmp_name)
        try:
            headers = self.hub.headers()
            with os.fdopen(fd, "wb") as out, get_session().stream("GET", url, headers=headers, follow_redirects=True) as response:
                hf_raise_for_status(response)
                announced = response.headers.get("Content-Length")
                received = 0
                for chunk in response.iter_raw(DOWNLOAD_CHUNK):
                    out.write(chunk)
                    received += len(chunk)
            if announced is not None and announced.isdigit() and received != int(announced):
                raise httpx2.RemoteProtocolError(
                    f"the file's body ended after {received} of {announced} bytes")
            target.parent.mkdir(parents=True, exist_ok=True)
            os.replace(tmp, target)
            return target
        finally:
            tmp.unlink(missing_ok=True)

    def file_url(self, repo_id: str, path: str, revision: str) -> str:
        return hf_hub_url(repo_id, path, repo_type="dataset", revision=revision, endpoint=self.hub.endpoint)

    def read_range(self, url: str, start: int, end: int | None = None) -> bytes:
        """Bytes [start, end] of a file (or the last -start bytes when start < 0), retried."""
        return self._read_range(url, start, end).content

    def _read_range(self, url: str, start: int, end: int | None = None) -> RangeRead:
        rng = f"bytes={start}-" if end is None else f"bytes={start}-{end}"
        if start < 0:
            rng = f"bytes={start}"
        headers = {"Range": rng}
        if self._token:
            headers["authorization"] = f"Bearer {self._token}"

        def get() -> RangeRead:
            response = get_session().get(url, headers=headers, follow_redirects=True)
            hf_raise_for_status(response)
            # the commit is on the Hub's own answer, which may be a redirect to a CDN
            commit = next((r.headers.get("X-Repo-Commit") for r in (response, *reversed(response.history))
                           if r.headers.get("X-Repo-Commit")), None)
            total = _RANGE_TOTAL.search(response.headers.get("Content-Range", ""))
            whole = response.status_code == 200  # a server that ignores Range sends the whole file
            return RangeRead(response.content, commit, int(total.group(1)) if total else len(response.content) if whole else None)

        return self.hub.call(get, _file=True, _what=url)

    def parquet_footer(self, repo_id: str, path: str, revision: str) -> Any:
        """A Parquet file's metadata (rows, schema, HF features) from one suffix read of its end."""
        return self.parquet_file(repo_id, path, revision).metadata

    def parquet_file(self, repo_id: str, path: str, revision: str) -> ParquetFile:
        """A Parquet file's metadata, and the commit and size the Hub answered it with, from one
        suffix read of its end (two for a footer over ``FOOTER_PROBE``)."""
        url = self.file_url(repo_id, path, revision)
        read = self._read_range(url, -FOOTER_PROBE)
        tail = read.content
        if len(tail) < 12 or tail[-4:] != b"PAR1":
            raise ValueError(f"{path}: not a Parquet file (no PAR1 trailer)")
        length = struct.unpack("<i", tail[-8:-4])[0]
        if length + 8 > len(tail):  # a large footer: read exactly what it needs
            tail = self.read_range(url, -(length + 8))
        # The footer alone, framed as a file, is enough for pyarrow to read the metadata.
        metadata = pq.read_metadata(pa.BufferReader(b"PAR1" + tail[-(length + 8):]))
        return ParquetFile(path, metadata, read.commit, read.total)

    def small_file(self, repo_id: str, path: str, *, repo_type: str = "model", revision: str = "main") -> bytes | None:
        """A small file of a repo, read whole (a model's ``.eval_results/*.yaml``, a benchmark's
        ``eval.yaml``), paced on the resolver bucket and retried like every call; None when the
        Hub answers 404 (no such file, or no such repo). A file over ``SMALL_FILE_BYTES`` is a
        :class:`HubFaultError` (no such file is small)."""
        url = hf_hub_url(repo_id, path, repo_type=repo_type, revision=revision, endpoint=self.hub.endpoint)
        what = f"{repo_id} {path}"

        def get() -> bytes | None:
            with get_session().stream("GET", url, headers=self.hub.headers(), follow_redirects=True) as response:
                if response.status_code == 404:
                    return None
                if response.status_code >= 400:
                    response.read()  # the error's message is in its body and headers
                    hf_raise_for_status(response)
                body = b""
                for chunk in response.iter_bytes():
                    body += chunk
                    if len(body) > SMALL_FILE_BYTES:
                        raise HubFaultError(f"{what}: the file is larger than {SMALL_FILE_BYTES} bytes")
                return body

        return self.hub.call(get, _file=True, _what=what)


# --- the survey's download cache -----------------------------------------------------------------

def _link_chain(path: Path) -> list[str]:
    """Every path a snapshot link leads through, to the file: the repo's blob (itself a link into
    huggingface_hub's shared store, when it uses one), then the stored file."""
    chain: list[str] = []
    current = os.path.abspath(path)
    while os.path.islink(current) and len(chain) < 40:
        current = os.path.normpath(os.path.join(os.path.dirname(current), os.readlink(current)))
        chain.append(current)
    return chain


def _cache_root(path: Path) -> Path:
    """The huggingface_hub cache a snapshot path is in (the folder above ``datasets--owner--name``)."""
    for parent in path.absolute().parents:
        if parent.name.startswith(("datasets--", "models--", "spaces--")):
            return parent.parent
    return path.absolute().parent


def delete_files(paths: Iterable[str | Path]) -> int:
    """Delete downloaded files (a measured job's): their snapshot links, and the blobs only no other
    link still points at.

    huggingface_hub stores a file's content once per content hash: two configs holding one
    byte-identical file have two snapshot links to one blob, and another job may be about to read
    it. So a blob (and a shared-store file behind it) is deleted only when no remaining link in the
    cache leads to it. Returns the bytes freed. A path already gone is skipped: deleting twice is
    harmless.
    """
    freed = 0
    candidates: set[str] = set()
    roots: set[Path] = set()
    for p in paths:
        path = Path(p)
        if path.is_symlink():
            candidates.update(_link_chain(path))
            roots.add(_cache_root(path))
        try:
            size = path.stat().st_size if path.exists() and not path.is_symlink() else 0
            path.unlink()
            freed += size
        except FileNotFoundError:
            continue
    if not candidates:
        return freed
    still_used: set[str] = set()
    for root in roots:
        for link in root.rglob("*"):
            if link.is_symlink() and os.path.abspath(link) not in candidates:
                still_used.update(_link_chain(link))
    for victim in sorted(candidates - still_used, key=len, reverse=True):
        try:
            size = os.stat(victim).st_size if not os.path.islink(victim) else 0
            os.unlink(victim)
            freed += size
        except FileNotFoundError:
            continue
    return freed
