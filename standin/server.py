"""A local stand-in for the Hugging Face Hub's HTTP API, for tests and demos.

It speaks the subset of the Hub API that huggingface_hub 2.4 uses to list, inspect and download
datasets and to publish one (the HTTP API as huggingface_hub speaks it): the same paths, query
parameters, JSON shapes, ``Link`` pagination, ``X-Error-Code`` errors and rate-limit headers.
Product code reaches it only through ``HF_ENDPOINT`` (or ``endpoint=``).

    with StandinHub(Path("minihub")) as hub:
        HfApi(endpoint=hub.url).list_datasets(expand=["tags"])

A stdlib ``ThreadingHTTPServer`` (HTTP/1.1 keep-alive, exact ``Content-Length``, never
compressed but by the ``gzip_bomb`` fault) bound to 127.0.0.1 only. Deterministic faults (``faults.Faults``) can be switched on
per request category and dataset. ``/_standin/...`` exposes the same controls over HTTP for a
server started from the command line. Tokens are never logged: the request log goes to the
``hubsurvey_standin`` logger at DEBUG and holds only the request line.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import functools
import json
import logging
import re
import socket
import struct
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, quote, unquote, urlencode, urlsplit

from . import cards
from .catalog import SORT_FIELDS, Catalog
from .faults import CATEGORIES, Decision, FaultInjector, Faults, Quota
from .models import DEFAULT_MODEL_PROPS, MODEL_EXPANDABLE
from .parquetio import garble_footer
from .repos import (
    DEFAULT_LIST_PROPS,
    EXPANDABLE,
    PARQUET_REF,
    Blob,
    BytesBlob,
    FileBlob,
    Repo,
    now_iso,
    select,
    sha1_hex,
)

log = logging.getLogger("hubsurvey_standin")

HOST = "127.0.0.1"
DEFAULT_USER = "standin-user"  # namespace of repos created without an organization
_SHA = re.compile(r"[0-9a-f]{40}")
_REPO_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
_RANGE = re.compile(r"bytes=(\d*)-(\d*)")
SPACE_SDKS = ("static", "gradio", "docker")


@dataclass
class _Response:
    status: int
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    length: int | None = None  # Content-Length when it differs from len(body) (HEAD)
    close: bool = False  # close the connection after this answer (one that leaves it unusable)


@functools.lru_cache(maxsize=2)
def _gzip_bomb(inflated_mb: int) -> bytes:
    """A JSON list of ``inflated_mb`` MB of spaces, gzipped (about 1,000 times smaller)."""
    import zlib

    packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    block = b" " * 2**20
    parts = [packer.compress(b"[")] + [packer.compress(block) for _ in range(inflated_mb)]
    return b"".join([*parts, packer.compress(b"]"), packer.flush()])


def _hostile(kind: str, response: _Response, url: str, bomb_mb: int) -> _Response:
    """The hostile answer of ``kind`` (see ``faults.HOSTILE_KINDS``) in place of ``response``."""
    json_type = {"Content-Type": "application/json; charset=utf-8"}
    if kind == "html":
        page = b"<!DOCTYPE html><html><body><h1>Please wait while we check your browser</h1></body></html>"
        return _Response(200, page, {"Content-Type": "text/html; charset=utf-8"})
    if kind == "malformed_json":
        return _Response(200, b'{"id": "x", "sha": ', json_type)
    if kind == "truncated_json":
        return _Response(response.status, response.body[: len(response.body) // 2], dict(response.headers))
    if kind == "json_object":
        return _Response(200, json.dumps({"error": "not what you asked for", "items": []}).encode(), json_type)
    if kind == "redirect_loop":
        return _Response(302, b"", {"Location": url})
    if kind == "short_length":
        return _Response(response.status, response.body, dict(response.headers), length=len(response.body) // 2, close=True)
    if kind == "no_sha":
        try:
            data = json.loads(response.body)
        except ValueError:
            return response
        if isinstance(data, dict):
            data.pop("sha", None)
        return _Response(response.status, json.dumps(data).encode(), dict(response.headers))
    if kind == "gzip_bomb":
        return _Response(200, _gzip_bomb(bomb_mb), {**json_type, "Content-Encoding": "gzip"})
    if kind == "self_link":
        return _Response(response.status, response.body, {**response.headers, "Link": f'<{url}>; rel="next"'})
    raise ValueError(f"unknown hostile answer {kind!r}")


def _json(obj: Any, status: int = 200, headers: dict[str, str] | None = None) -> _Response:
    body = json.dumps(obj).encode()
    return _Response(status, body, {"Content-Type": "application/json; charset=utf-8", **(headers or {})})


def _error(status: int, message: str, code: str | None = None) -> _Response:
    """An error as the Hub sends it: JSON body plus ``X-Error-Message`` (and ``X-Error-Code``)."""
    headers = {"X-Error-Message": message}
    if code:
        headers["X-Error-Code"] = code
    return _json({"error": message}, status, headers)


@dataclass
class _Request:
    method: str
    path: str  # still percent-encoded
    segments: list[str]  # path segments, still percent-encoded
    query: list[tuple[str, str]]
    headers: Any
    body: bytes
    token: str | None
    repo_type: str = "dataset"  # "space" for /api/spaces/... and /spaces/.../resolve/...

    def params(self, *names: str) -> list[str]:
        return [v for k, v in self.query if k in names]

    def param(self, name: str) -> str | None:
        values = self.params(name)
        return values[-1] if values else None

    def flag(self, name: str) -> bool:
        return (self.param(name) or "").lower() in ("1", "true")

    def json(self) -> Any:
        return json.loads(self.body or b"null")


@dataclass
class _Route:
    category: str
    dataset_id: str | None
    run: Callable[[], _Response]


def _split_rev(segments: list[str]) -> tuple[str, str]:
    """(revision, path) from the raw segments after ``resolve/`` or ``tree/``.

    The client quotes the revision as one segment (``refs%2Fconvert%2Fparquet``); a raw
    ``refs/convert/parquet/...`` is accepted too, as the Hub does.
    """
    if len(segments) >= 3 and segments[0] == "refs":
        return "/".join(segments[:3]), unquote("/".join(segments[3:]))
    return unquote(segments[0]) if segments else "", unquote("/".join(segments[1:]))


def _cursor(value: str | None) -> int:
    """Decode an opaque pagination cursor (an offset) or raise ValueError."""
    if value is None:
        return 0
    try:
        pos = int(base64.urlsafe_b64decode(value.encode() + b"==").decode())
    except (binascii.Error, UnicodeDecodeError, ValueError):
        raise ValueError("invalid cursor") from None
    if pos < 0:
        raise ValueError("invalid cursor")
    return pos


def _encode_cursor(pos: int) -> str:
    return base64.urlsafe_b64encode(str(pos).encode()).decode().rstrip("=")


class _App:
    """Routing and endpoint logic, independent of the socket handling in ``_Handler``."""

    def __init__(self, hub: StandinHub) -> None:
        self.hub = hub
        self.catalog = hub.catalog
        self._corrupted: weakref.WeakKeyDictionary[Blob, Blob] = weakref.WeakKeyDictionary()

    # ---------------------------------------------------------------- routing

    def route(self, req: _Request) -> _Route:
        seg, m = req.segments, req.method
        read = m in ("GET", "HEAD")
        if seg[:2] == ["api", "datasets"]:
            if len(seg) == 2 and read:
                return _Route("list", None, lambda: self.list_datasets(req))
            if len(seg) >= 4:
                repo_id = f"{unquote(seg[2])}/{unquote(seg[3])}"
                route = self._repo_route(req, repo_id, seg[4:])
                if route is not None:
                    return route
        elif seg == ["api", "whoami-v2"] and read:
            return _Route("whoami", None, lambda: self.whoami(req))
        elif seg[:2] == ["api", "spaces"] and len(seg) >= 4:
            req.repo_type = "space"  # a static Space: info, tree, preupload and commit, as for datasets
            route = self._repo_route(req, f"{unquote(seg[2])}/{unquote(seg[3])}", seg[4:])
            if route is not None:
                return route
        elif seg[:2] == ["api", "models"] and len(seg) >= 4 and read:  # one model's info (faults aim at the model id)
            req.repo_type = "model"
            repo_id = f"{unquote(seg[2])}/{unquote(seg[3])}"
            rest = seg[4:]
            if not rest or (rest[0] == "revision" and len(rest) >= 2):
                rev = unquote("/".join(rest[1:])) if rest else None
                return _Route("models", repo_id, lambda: self.model_info(req, repo_id, rev))
        elif seg == ["api", "models"] and read:  # the dataset of a dataset:<id> filter: faults can aim at it
            declared = [f.removeprefix("dataset:") for f in req.params("filter", "filter[]") if f.startswith("dataset:")]
            return _Route("models", declared[0] if declared else None, lambda: self.list_models(req))
        elif seg == ["api", "repos", "create"] and m == "POST":
            return _Route("create", None, lambda: self.create_repo(req))
        elif seg == ["api", "validate-yaml"] and m == "POST":
            return _Route("validate_yaml", None, lambda: self.validate_yaml(req))
        elif len(seg) >= 6 and seg[0] in ("datasets", "spaces") and seg[3] == "resolve" and read:
            req.repo_type = "space" if seg[0] == "spaces" else "dataset"
            repo_id = f"{unquote(seg[1])}/{unquote(seg[2])}"
            rev, path = _split_rev(seg[4:])
            category = "resolve_head" if m == "HEAD" else "resolve_get"
            return _Route(category, repo_id, lambda: self.resolve(req, repo_id, rev, path))
        elif len(seg) >= 5 and seg[0] not in ("api", "datasets", "spaces") and seg[2] == "resolve" and read:
            req.repo_type = "model"  # a model's file: /<owner>/<name>/resolve/<rev>/<path>
            repo_id = f"{unquote(seg[0])}/{unquote(seg[1])}"
            rev, path = _split_rev(seg[3:])
            category = "resolve_head" if m == "HEAD" else "resolve_get"
            return _Route(category, repo_id, lambda: self.resolve(req, repo_id, rev, path))
        return _Route("other", None, lambda: _error(404, "Sorry, we can't find the page you are looking for."))

    def _repo_route(self, req: _Request, repo_id: str, rest: list[str]) -> _Route | None:
        read = req.method in ("GET", "HEAD")
        kind = rest[0] if rest else None
        if kind is None and read:
            return _Route("info", repo_id, lambda: self.info(req, repo_id, None))
        if kind == "revision" and len(rest) >= 2 and read:
            rev = unquote("/".join(rest[1:]))
            return _Route("info", repo_id, lambda: self.info(req, repo_id, rev))
        if kind == "refs" and len(rest) == 1 and read:
            return _Route("refs", repo_id, lambda: self.refs(req, repo_id))
        if kind == "tree" and len(rest) >= 2 and read:
            rev, path = _split_rev(rest[1:])
            return _Route("tree", repo_id, lambda: self.tree(req, repo_id, rev, path))
        if kind == "paths-info" and len(rest) >= 2 and req.method == "POST":
            rev = unquote("/".join(rest[1:]))
            return _Route("tree", repo_id, lambda: self.paths_info(req, repo_id, rev))
        if kind == "auth-check" and read and rest[1:] in ([], ["write"]):
            return _Route("info", repo_id, lambda: self.auth_check(req, repo_id, write=rest[1:] == ["write"]))
        if kind == "discussions" and len(rest) == 1 and req.method in ("GET", "HEAD", "POST"):
            run = self.create_discussion if req.method == "POST" else self.list_discussions
            return _Route("discussions", repo_id, lambda: run(req, repo_id))
        if kind == "discussions" and len(rest) == 2 and read:
            return _Route("discussions", repo_id, lambda: self.discussion_details(req, repo_id, unquote(rest[1])))
        if kind == "parquet" and read:
            parts = [unquote(s) for s in rest[1:]]
            return _Route("parquet_api", repo_id, lambda: self.parquet_api(req, repo_id, parts))
        if kind == "preupload" and len(rest) >= 2 and req.method == "POST":
            rev = unquote("/".join(rest[1:]))
            return _Route("preupload", repo_id, lambda: self.preupload(req, repo_id, rev))
        if kind == "commit" and len(rest) >= 2 and req.method == "POST":
            rev = unquote("/".join(rest[1:]))
            return _Route("commit", repo_id, lambda: self.commit(req, repo_id, rev))
        return None

    # ---------------------------------------------------------------- access

    def _valid(self, req: _Request) -> bool:
        return req.token is not None and req.token in self.hub.valid_tokens

    def _access(self, req: _Request, repo_id: str, *, files: bool) -> tuple[Repo | None, _Response | None]:
        """The repo if this request may read it, else the error the Hub answers.

        Missing and private-without-access look the same: 401 RepoNotFound without a token,
        404 with one. Disabled repos answer 403. Gated repos gate their files only: 401
        GatedRepo without a token, 403 with a token that is not in ``valid_tokens``.
        """
        repo = self.catalog.get(repo_id, req.repo_type)
        if repo is None or (repo.meta["private"] and not self._valid(req)):
            status = 401 if req.token is None else 404
            return None, _error(status, "Repository not found", "RepoNotFound")
        if repo.meta["disabled"]:
            return None, _error(403, "Access to this resource is disabled.")
        if files and repo.meta["gated"] and not self._valid(req):
            if req.token is None:
                msg = (f"Access to dataset {repo_id} is restricted. You must have access to it and be "
                       "authenticated to access it. Please log in.")
                return None, _error(401, msg, "GatedRepo")
            msg = (f"Access to dataset {repo_id} is restricted and you are not in the authorized list. "
                   f"Visit {self.hub.url}/datasets/{repo_id} to ask for access.")
            return None, _error(403, msg, "GatedRepo")
        return repo, None

    def _writable(self, req: _Request, repo_id: str) -> tuple[Repo | None, _Response | None]:
        """The repo if this request may push to it: a token is required (one of ``valid_tokens``
        when that set is not empty), and only repos created through this server are writable."""
        denied = self._write_auth(req)
        if denied:
            return None, denied
        repo, err = self._access(req, repo_id, files=True)
        if err:
            return None, err
        if repo.read_only:
            return None, _error(403, f"You don't have the rights to push to {repo_id}: the stand-in serves it read-only.")
        return repo, None

    def _write_auth(self, req: _Request) -> _Response | None:
        if req.token is None:
            return _error(401, "Invalid username or password.")
        if self.hub.valid_tokens and not self._valid(req):
            return _error(401, "Invalid credentials in Authorization header")
        return None

    # ---------------------------------------------------------------- read endpoints

    def _expand(self, req: _Request) -> tuple[list[str], _Response | None]:
        expand = req.params("expand", "expand[]")
        unknown = sorted(set(expand) - EXPANDABLE)
        if unknown:
            return [], _error(400, f'"expand" must be a subset of {sorted(EXPANDABLE)}, got {unknown}')
        return expand, None

    def list_datasets(self, req: _Request) -> _Response:
        expand, err = self._expand(req)
        if err:
            return err
        full = req.flag("full")
        if expand and full:
            return _error(400, '"expand" cannot be combined with "full"')
        sort = req.param("sort")
        if sort is not None and sort not in SORT_FIELDS:
            return _error(400, f'"sort" must be one of {list(SORT_FIELDS)}')
        gated = req.param("gated")
        if gated not in (None, "true", "false"):
            return _error(400, '"gated" must be true or false')
        try:
            limit = int(req.param("limit")) if req.param("limit") is not None else None
            # The cursor packs how many items were served (for ``limit``) and where to resume.
            served, pos = divmod(_cursor(req.param("cursor")), 1 << 32)
        except ValueError:
            return _error(400, "invalid limit or cursor")
        filters = req.params("filter", "filter[]")
        author = req.param("author")
        searches = [s.lower() for s in req.params("search")]
        see_private = self._valid(req)

        def wanted(props: dict[str, Any]) -> bool:
            if props["private"] and not see_private:
                return False
            if author is not None and props["author"] != author:
                return False
            if gated is not None and bool(props["gated"]) != (gated == "true"):
                return False
            tags = props["tags"]
            return all(f in tags for f in filters) and all(s in props["id"].lower() for s in searches)

        keys = expand or (sorted(EXPANDABLE) if full else DEFAULT_LIST_PROPS)
        cap = self.hub.page_size if limit is None else max(0, min(self.hub.page_size, limit - served))
        order = self.catalog.order(sort)
        items = []
        while pos < len(order) and len(items) < cap:
            props = self.catalog.props(order[pos])
            pos += 1
            if wanted(props):
                items.append(select(props, keys))
        served += len(items)
        # Stop on the next match so that the last page is never an empty one.
        while pos < len(order) and (limit is None or served < limit) and not wanted(self.catalog.props(order[pos])):
            pos += 1
        headers = {}
        if pos < len(order) and (limit is None or served < limit):
            headers["Link"] = f'<{self._next_url(req, (served << 32) + pos)}>; rel="next"'
        return _json(items, headers=headers)

    def list_models(self, req: _Request) -> _Response:
        """``/api/models`` as huggingface_hub's ``list_models`` calls it: ``filter`` (repeated, every one
        a tag of the model), ``author``, ``search``, ``limit``, ``expand`` (or ``full``), ``Link`` pages."""
        expand = req.params("expand", "expand[]")
        unknown = sorted(set(expand) - MODEL_EXPANDABLE)
        if unknown:
            return _error(400, f'"expand" must be a subset of {sorted(MODEL_EXPANDABLE)}, got {unknown}')
        if expand and (req.flag("full") or req.flag("cardData")):
            return _error(400, '"expand" cannot be combined with "full" or "cardData"')
        try:
            limit = int(req.param("limit")) if req.param("limit") is not None else None
            start = _cursor(req.param("cursor"))
        except ValueError:
            return _error(400, "invalid limit or cursor")
        filters, author = req.params("filter", "filter[]"), req.param("author")
        searches = [s.lower() for s in req.params("search")]
        see_private = self._valid(req)
        matching = [m for m in self.catalog.models.values()
                    if (see_private or not m["private"]) and (author is None or m["author"] == author)
                    and all(f in m["tags"] for f in filters) and all(s in m["id"].lower() for s in searches)]
        if limit is not None:
            matching = matching[:limit]
        if req.flag("full"):
            keys: Iterable[str] = sorted(MODEL_EXPANDABLE)
        else:
            keys = expand or [*DEFAULT_MODEL_PROPS, *(["cardData"] if req.flag("cardData") else [])]
        end = start + self.hub.page_size
        headers = {"Link": f'<{self._next_url(req, end)}>; rel="next"'} if end < len(matching) else {}
        return _json([select(m, keys) for m in matching[start:end]], headers=headers)

    def _next_url(self, req: _Request, cursor: int) -> str:
        query = [(k, v) for k, v in req.query if k != "cursor"] + [("cursor", _encode_cursor(cursor))]
        return f"{self.hub.url}{req.path}?{urlencode(query)}"

    def info(self, req: _Request, repo_id: str, rev: str | None) -> _Response:
        repo, err = self._access(req, repo_id, files=False)
        if err:
            return err
        branch = repo.main if rev is None else repo.branch(rev)
        if branch is None:
            return _error(404, f"Invalid rev id: {rev}", "RevisionNotFound")
        expand, err = self._expand(req)
        if err:
            return err
        props = repo.props(branch, blobs=req.flag("blobs"))
        info = select(props, expand or sorted(EXPANDABLE))
        if req.repo_type == "space":
            info["sdk"] = repo.meta.get("sdk")
        return _json(info)

    def model_info(self, req: _Request, repo_id: str, rev: str | None) -> _Response:
        """``/api/models/{id}`` (``HfApi.model_info``): every property, or those of ``expand``."""
        repo, err = self._access(req, repo_id, files=False)
        if err:
            return err
        if rev is not None and repo.branch(rev) is None:
            return _error(404, f"Invalid rev id: {rev}", "RevisionNotFound")
        expand = req.params("expand", "expand[]")
        unknown = sorted(set(expand) - MODEL_EXPANDABLE)
        if unknown:
            return _error(400, f'"expand" must be a subset of {sorted(MODEL_EXPANDABLE)}, got {unknown}')
        return _json(select(self.catalog.models[repo_id], expand or ["id", "modelId", *sorted(MODEL_EXPANDABLE)]))

    def refs(self, req: _Request, repo_id: str) -> _Response:
        repo, err = self._access(req, repo_id, files=False)
        if err:
            return err
        body: dict[str, Any] = {
            "branches": [{"name": "main", "ref": "refs/heads/main", "targetCommit": repo.main.sha}],
            "converts": [],
            "tags": [],
        }
        if repo.has_parquet:  # the sha is derived, so filler exports need not be built for this
            body["converts"].append({"name": "parquet", "ref": PARQUET_REF, "targetCommit": repo.parquet_commit})
        if req.param("include_prs"):
            body["pullRequests"] = []
        return _json(body)

    def tree(self, req: _Request, repo_id: str, rev: str, path: str) -> _Response:
        repo, err = self._access(req, repo_id, files=False)
        if err:
            return err
        branch = repo.branch(rev)
        if branch is None:
            return _error(404, f"Invalid rev id: {rev}", "RevisionNotFound")
        items = branch.tree(path, recursive=req.flag("recursive"))
        if items is None:
            return _error(404, f"Entry not found: {path}", "EntryNotFound")
        try:
            start = _cursor(req.param("cursor"))
        except ValueError:
            return _error(400, "invalid cursor")
        end = start + self.hub.page_size
        headers = {"Link": f'<{self._next_url(req, end)}>; rel="next"'} if end < len(items) else {}
        return _json(items[start:end], headers=headers)

    def paths_info(self, req: _Request, repo_id: str, rev: str) -> _Response:
        """Tree items of the requested paths (form or JSON ``paths``); missing paths are left out."""
        repo, err = self._access(req, repo_id, files=False)
        if err:
            return err
        branch = repo.branch(rev)
        if branch is None:
            return _error(404, f"Invalid rev id: {rev}", "RevisionNotFound")
        if req.headers.get("Content-Type", "").startswith("application/json"):
            paths = (req.json() or {}).get("paths", [])
        else:
            paths = [v for k, v in parse_qsl(req.body.decode(), keep_blank_values=True) if k == "paths"]
        entries = (branch.entry(p.strip("/")) for p in paths)
        return _json([e for e in entries if e is not None])

    def auth_check(self, req: _Request, repo_id: str, *, write: bool) -> _Response:
        """200 when this request may download the repo's files (or push, for ``/write``)."""
        _, err = self._writable(req, repo_id) if write else self._access(req, repo_id, files=True)
        return err or _json({})

    def parquet_api(self, req: _Request, repo_id: str, parts: list[str]) -> _Response:
        """``/parquet`` → {config: {split: [urls]}}, ``/parquet/c`` → {split: [urls]},
        ``/parquet/c/s`` → [urls], ``/parquet/c/s/N.parquet`` → 302 to the Nth shard."""
        repo, err = self._access(req, repo_id, files=False)
        if err:
            return err
        branch = repo.parquet
        if branch is None:
            return _error(404, f"{repo_id} has no Parquet export", "RevisionNotFound")
        layout: dict[str, dict[str, list[str]]] = {}
        for path in sorted(branch.files):
            bits = path.split("/")
            if len(bits) == 3 and bits[2].endswith(".parquet"):
                layout.setdefault(bits[0], {}).setdefault(bits[1], []).append(path)

        def url(path: str) -> str:
            return f"{self.hub.url}/datasets/{repo_id}/resolve/{quote(PARQUET_REF, safe='')}/{quote(path)}"

        missing = _error(404, f"Entry not found: {'/'.join(parts)}", "EntryNotFound")
        if not parts:
            return _json({c: {s: [url(p) for p in ps] for s, ps in splits.items()} for c, splits in layout.items()})
        splits = layout.get(parts[0])
        if splits is None or len(parts) > 3:
            return missing
        if len(parts) == 1:
            return _json({s: [url(p) for p in ps] for s, ps in splits.items()})
        shards = splits.get(parts[1])
        if shards is None:
            return missing
        if len(parts) == 2:
            return _json([url(p) for p in shards])
        n = parts[2].removesuffix(".parquet")
        if not n.isdigit() or int(n) >= len(shards):
            return missing
        return _Response(302, b"", {"Location": url(shards[int(n)])})

    def resolve(self, req: _Request, repo_id: str, rev: str, path: str) -> _Response:
        repo, err = self._access(req, repo_id, files=True)
        if err:
            return err
        branch = repo.branch(rev)
        if branch is None:
            return _error(404, f"Invalid rev id: {rev}", "RevisionNotFound")
        blob = branch.files.get(path)
        if blob is None:
            return _error(404, f"Entry not found: {path}", "EntryNotFound")
        if path.endswith(".parquet") and self.hub.faults.corrupts(repo_id):
            blob = self._corrupt(blob)
            if req.method == "GET":  # one corrupted download, one fault (its HEAD is not counted)
                self.hub._fault_injected()
        headers = {
            "X-Repo-Commit": branch.sha,
            "ETag": f'"{blob.etag}"',
            "Accept-Ranges": "bytes",
            "Content-Type": "text/plain; charset=utf-8" if path.endswith(".md") else "application/octet-stream",
        }
        start, end, status = 0, blob.size, 200  # end is exclusive
        match = _RANGE.fullmatch(req.headers.get("Range", "").strip())
        if match and (match.group(1) or match.group(2)):
            if match.group(1):
                start = int(match.group(1))
                end = min(blob.size, int(match.group(2)) + 1) if match.group(2) else blob.size
            else:  # suffix range: the last N bytes
                start = max(0, blob.size - int(match.group(2)))
            if start >= blob.size or start >= end:
                return _Response(416, b"", {**headers, "Content-Range": f"bytes */{blob.size}"})
            status = 206
            headers["Content-Range"] = f"bytes {start}-{end - 1}/{blob.size}"
        if req.method == "HEAD":
            return _Response(status, b"", headers, length=end - start)
        return _Response(status, blob.read(start, end), headers)

    def _corrupt(self, blob: Blob) -> Blob:
        bad = self._corrupted.get(blob)
        if bad is None:
            bad = self._corrupted[blob] = BytesBlob(garble_footer(blob.read()), lfs=True)
        return bad

    # ---------------------------------------------------------------- account and discussions

    def _user(self, req: _Request) -> tuple[str | None, _Response | None]:
        """The account a request's token belongs to (every accepted token is ``DEFAULT_USER``'s)."""
        known = self.hub.valid_tokens | self.hub.read_only_tokens
        if req.token is None or (known and req.token not in known):
            return None, _error(401, "Invalid credentials in Authorization header")
        return DEFAULT_USER, None

    def whoami(self, req: _Request) -> _Response:
        """``/api/whoami-v2``: the token's user, and its role (``read`` for ``read_only_tokens``)."""
        user, err = self._user(req)
        if err:
            return err
        role = "read" if req.token in self.hub.read_only_tokens else "write"
        return _json({"type": "user", "id": sha1_hex("user", user)[:24], "name": user, "fullname": user,
                      "orgs": [], "auth": {"type": "access_token",
                                           "accessToken": {"displayName": "stand-in token", "role": role}}})

    def list_discussions(self, req: _Request, repo_id: str) -> _Response:
        """``GET /api/datasets/{id}/discussions``: ``type`` (all, discussion, pull_request),
        ``status`` (all, open, closed), ``author`` and the page ``p``, as the Hub pages them:
        ``{"discussions": [...], "count": total, "start": offset, "numClosedDiscussions": n}``."""
        _, err = self._access(req, repo_id, files=False)
        if err:
            return err
        kind, status, author = req.param("type") or "all", req.param("status") or "all", req.param("author")
        if kind not in ("all", "discussion", "pull_request") or status not in ("all", "open", "closed"):
            return _error(400, '"type" must be all, discussion or pull_request; "status" all, open or closed')
        try:
            page = int(req.param("p") or 0)
        except ValueError:
            return _error(400, '"p" must be a page number')
        with self.catalog.lock:
            every = [dict(d) for d in self.hub.discussions.get(repo_id, [])]
        chosen = [
            d for d in reversed(every)  # newest first, as the Hub lists them
            if (kind == "all" or d["isPullRequest"] == (kind == "pull_request"))
            and (status == "all" or d["status"] == status)
            and (author is None or d["author"]["name"] == author)
        ]
        size = self.hub.discussions_page_size
        start = max(0, page) * size
        return _json({"discussions": [{k: v for k, v in d.items() if k != "events"} for d in chosen[start:start + size]],
                      "count": len(chosen), "start": start,
                      "numClosedDiscussions": sum(d["status"] == "closed" for d in every)})

    def create_discussion(self, req: _Request, repo_id: str) -> _Response:
        """``POST /api/datasets/{id}/discussions`` ``{"title", "description", "pullRequest"}``: 401
        without an accepted token, 403 with a read-only one, 404 for a repo the token cannot see."""
        user, err = self._user(req)
        if err:
            return err
        _, err = self._access(req, repo_id, files=False)
        if err:
            return err
        if req.token in self.hub.read_only_tokens:
            return _error(403, "You don't have the rights to create a discussion on this repo: the token is read-only")
        try:
            body = req.json()
            title, description = str(body["title"]).strip(), str(body.get("description") or "")
        except (ValueError, KeyError, TypeError):
            return _error(400, 'The body must be JSON with a "title"')
        if body.get("pullRequest"):
            return _error(400, "The stand-in does not support pull requests")
        if not 3 <= len(title) <= 200:
            return _error(400, "The title must be between 3 and 200 characters long")
        assert user is not None
        return _json(self.hub.add_discussion(repo_id, title, description, author=user))

    def discussion_details(self, req: _Request, repo_id: str, num: str) -> _Response:
        _, err = self._access(req, repo_id, files=False)
        if err:
            return err
        with self.catalog.lock:
            found = [dict(d) for d in self.hub.discussions.get(repo_id, []) if str(d["num"]) == num]
        if not found:
            return _error(404, f"Discussion {num} not found")
        return _json(found[0])

    # ---------------------------------------------------------------- publish endpoints

    def create_repo(self, req: _Request) -> _Response:
        denied = self._write_auth(req)
        if denied:
            return denied
        try:
            body = req.json()
            name, org = body["name"], body.get("organization")
        except (ValueError, KeyError, TypeError):
            return _error(400, 'The body must be JSON with a "name"')
        repo_type = body.get("type", "model")
        if repo_type not in ("dataset", "space"):
            return _error(400, "The stand-in only hosts dataset and space repos")
        if repo_type == "space" and body.get("sdk") not in SPACE_SDKS:
            return _error(400, f"A space needs an sdk, one of {list(SPACE_SDKS)}")
        if not isinstance(name, str) or not _REPO_NAME.fullmatch(name) or (org and not _REPO_NAME.fullmatch(org)):
            return _error(400, f"Invalid repo name: {org}/{name}")
        repo_id = f"{org or DEFAULT_USER}/{name}"
        url = f"{self.hub.url}/{repo_type}s/{repo_id}"
        with self.catalog.lock:
            if self.catalog.get(repo_id, repo_type) is not None:
                return _json({"error": f"You already created this {repo_type} repo", "url": url}, 409,
                             {"X-Error-Message": f"You already created this {repo_type} repo"})
            # huggingface_hub 2.x sends {"visibility": "private"}; older clients {"private": true}.
            private = body.get("visibility") == "private" or bool(body.get("private"))
            repo = self.catalog.create(repo_id, private=private, repo_type=repo_type, sdk=body.get("sdk"))
        return _json({"url": url, "name": repo_id, "id": repo.props()["_id"]})

    def validate_yaml(self, req: _Request) -> _Response:
        try:
            content = req.json()["content"]
        except (ValueError, KeyError, TypeError):
            return _error(400, 'The body must be JSON with a "content"')
        _, errors = cards.parse_card(content)
        body = {"errors": [{"message": e} for e in errors], "warnings": []}
        return _json(body, 400 if errors else 200)

    def preupload(self, req: _Request, repo_id: str, rev: str) -> _Response:
        repo, err = self._writable(req, repo_id)
        if err:
            return err
        if repo.branch(rev) is not repo.main:
            return _error(404, f"Invalid rev id: {rev}", "RevisionNotFound")
        try:
            paths = [f["path"] for f in req.json()["files"]]
        except (ValueError, KeyError, TypeError):
            return _error(400, 'The body must be JSON with "files"')
        files = repo.main.files
        # "regular" keeps clients away from LFS/Xet uploads; "oid" lets them skip unchanged files.
        return _json({"files": [
            {"path": p, "uploadMode": "regular", "shouldIgnore": False, "oid": files[p].git_oid if p in files else None}
            for p in paths
        ]})

    def commit(self, req: _Request, repo_id: str, rev: str) -> _Response:
        repo, err = self._writable(req, repo_id)
        if err:
            return err
        if req.param("create_pr"):
            return _error(400, "The stand-in does not support pull requests")
        try:
            lines = [json.loads(line) for line in req.body.splitlines() if line.strip()]
            header = next(item["value"] for item in lines if item["key"] == "header")
            adds: dict[str, bytes] = {}
            deletes: list[str] = []
            for item in lines:
                key, value = item["key"], item["value"]
                if key == "file":
                    raw = value["content"]
                    adds[value["path"]] = base64.b64decode(raw) if value.get("encoding") == "base64" else raw.encode()
                elif key in ("deletedFile", "deletedFolder"):
                    deletes.append(value["path"])
                elif key == "lfsFile":
                    return _error(400, "LFS files are not supported by the stand-in (preupload answers regular)")
                elif key != "header":
                    return _error(400, f"Unknown commit operation {key!r}")
        except (ValueError, KeyError, TypeError, StopIteration, binascii.Error):
            return _error(400, "The body must be ndjson: a header line, then file operations")
        if "README.md" in adds:
            _, errors = cards.parse_card(adds["README.md"].decode("utf-8", "replace"))
            if errors:
                return _error(400, "Invalid metadata in README.md.\n" + "\n".join(f"- {e}" for e in errors))
        with self.catalog.lock:
            if repo.branch(rev) is not repo.main:
                return _error(404, f"Invalid rev id: {rev}", "RevisionNotFound")
            parent = header.get("parentCommit")
            if parent and parent != repo.main.sha:
                return _error(412, "A commit has happened since. Please refresh and try again.")
            for path in deletes:
                if path not in repo.main.files and not any(p.startswith(path.rstrip("/") + "/") for p in repo.main.files):
                    return _error(404, f"A file with this name doesn't exist: {path}", "EntryNotFound")
            record = repo.commit(header.get("summary", ""), header.get("description", ""), adds, deletes)
            self.catalog.touched()
        url = f"{self.hub.url}/{req.repo_type}s/{repo_id}/commit/{record['oid']}"
        return _json({"success": True, "commitOid": record["oid"], "commitUrl": url})

    # ---------------------------------------------------------------- controls

    def control(self, req: _Request) -> _Response:
        """``/_standin/...``: GET stats, POST reset, GET/POST faults, POST set_sha, GET commits."""
        hub, action = self.hub, req.segments[1:]
        try:
            if action == ["stats"] and req.method == "GET":
                return _json(hub.stats())
            if action == ["reset"] and req.method == "POST":
                hub.reset_stats()
                return _json({"ok": True})
            if action == ["faults"] and req.method == "GET":
                return _json(hub.faults.to_dict())
            if action == ["faults"] and req.method == "POST":
                hub.set_faults(Faults.from_dict(req.json()))
                return _json(hub.faults.to_dict())
            if action == ["set_sha"] and req.method == "POST":
                body = req.json()
                hub.set_sha(body["dataset_id"], body["sha"])
                return _json({"ok": True})
            if action == ["commits"] and req.method == "GET":
                return _json(hub.commits(req.param("repo_id") or "", req.param("repo_type") or "dataset"))
        except KeyError as exc:
            return _error(404, f"Unknown dataset: {exc}")
        except (ValueError, TypeError) as exc:
            return _error(400, str(exc))
        return _error(404, "Unknown stand-in control")


class _Handler(BaseHTTPRequestHandler):
    """Socket side of a request: body reading, fault application, response writing."""

    protocol_version = "HTTP/1.1"
    server_version = "hubsurvey-standin"
    sys_version = ""
    timeout = 120  # idle keep-alive connections are dropped after this

    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        # Only the request line and status reach the log: never headers, so never tokens.
        log.debug("%s %s", self.address_string(), format % args)

    def do_GET(self) -> None:
        self._handle()

    do_HEAD = do_POST = do_PUT = do_DELETE = do_GET

    def _handle(self) -> None:
        hub = self.server.hub
        length = self.headers.get("Content-Length")
        if self.headers.get("Transfer-Encoding"):
            self._send(_error(411, "The stand-in needs a Content-Length"))
            self.close_connection = True
            return
        body = self.rfile.read(int(length)) if length else b""
        url = urlsplit(self.path)
        scheme, _, token = self.headers.get("Authorization", "").partition(" ")
        req = _Request(
            method=self.command,
            path=url.path,
            segments=url.path.split("/")[1:],
            query=parse_qsl(url.query, keep_blank_values=True),
            headers=self.headers,
            body=body,
            token=token.strip() or None if scheme.lower() == "bearer" else None,
        )
        try:
            if req.segments[:1] == ["_standin"]:
                self._send(hub.app.control(req))
                return
            route = hub.app.route(req)
            hub._count(route.category)
            bucket = "resolvers" if route.category in ("resolve_get", "resolve_head") else "api"
            if hub.quota is not None:
                served, quota_headers = hub.quota.admit(bucket)
                if not served:
                    self._send(_json({"error": "You have exceeded the rate limit (stand-in quota)"}, 429, quota_headers))
                    return
            decision = hub._injector.decide(route.category, route.dataset_id)
            if self._inject(decision):
                return
            response = route.run()
            if decision.hostile:
                hub._fault_injected()
                response = _hostile(decision.hostile, response, f"{hub.url}{self.path}", hub.faults.bomb_mb)
            if hub.quota is not None:  # where the bucket stands as the answer leaves, not as it was asked
                response.headers.update(hub.quota.headers(bucket))
            if route.category == "resolve_get":
                hub._count("resolve_bytes", len(response.body))
        except Exception:  # a stand-in bug must not kill the connection silently
            log.exception("stand-in error on %s %s", self.command, url.path)
            response = _error(500, "Internal stand-in error")
            decision = Decision()
        self._send(response, truncate=decision.truncate, drip_s=decision.drip_s)

    def _inject(self, decision: Decision) -> bool:
        """Apply the request-level faults; True when the response was replaced (or dropped)."""
        hub = self.server.hub
        if decision.delay_s:
            hub._fault_injected()
            time.sleep(decision.delay_s)
        if decision.action is None:
            return False
        hub._fault_injected()
        f = hub.faults
        if decision.action == "hang":  # accepted, read, never answered (until the server stops)
            self.server.stopping.wait(600)
            self.close_connection = True
        elif decision.action == "reset":
            self.server.abort(self.connection)
            self.close_connection = True
        elif decision.action == "rate_limit":
            secs = f.rate_limit_secs
            bucket = "resolvers" if self.command == "HEAD" or "/resolve/" in self.path else "api"
            quota = 3000 if bucket == "resolvers" else 500
            headers = {
                "RateLimit": f'"{bucket}";r=0;t={secs}',
                "RateLimit-Policy": f'"fixed window";"{bucket}";q={quota};w=300',
                "Retry-After": str(secs),
            }
            self._send(_json({"error": "Too Many Requests (stand-in fault)"}, 429, headers))
        else:
            message = f"Injected server error {f.error_status} (stand-in fault)"
            if f.echo_auth:  # a careless proxy echoing the request's headers into its error
                message += f"; request Authorization: {self.headers.get('Authorization', '(none)')}"
            self._send(_error(f.error_status, message))
        return True

    def _send(self, response: _Response, *, truncate: bool = False, drip_s: float = 0.0) -> None:
        self.send_response(response.status)
        for name, value in response.headers.items():
            self.send_header(name, value)
        length = len(response.body) if response.length is None else response.length
        self.send_header("Content-Length", str(length))
        self.end_headers()
        if self.command == "HEAD":
            return
        body = response.body
        if truncate and len(body) >= 2:
            self.server.hub._fault_injected()
            self.wfile.write(body[: len(body) // 2])
            self.close_connection = True  # the promised rest never comes
            return
        if response.close:
            self.close_connection = True
        if drip_s:
            self.server.hub._fault_injected()
            self.close_connection = True
            for i in range(len(body)):  # one byte at a time, until the client gives up or the server stops
                if self.server.stopping.wait(drip_s):
                    return
                try:
                    self.wfile.write(body[i:i + 1])
                    self.wfile.flush()
                except OSError:
                    return
            return
        self.wfile.write(body)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False  # stop() closes connections itself; never wait on idle keep-alives

    def __init__(self, hub: StandinHub, port: int) -> None:
        self.hub = hub
        self._conns: set[socket.socket] = set()
        self._aborted: set[socket.socket] = set()
        self._conn_lock = threading.Lock()
        self.stopping = threading.Event()  # set by stop(): releases requests held by the hang fault
        super().__init__((HOST, port), _Handler)

    def handle_error(self, request, client_address) -> None:
        # Clients that hang up mid-request are normal here (faults, timeouts): no stderr traceback.
        log.debug("connection error from %s", client_address[0])

    def process_request(self, request, client_address) -> None:
        with self._conn_lock:
            self._conns.add(request)
        super().process_request(request, client_address)

    def abort(self, conn: socket.socket) -> None:
        """Make the connection end with a TCP reset: linger 0, and no FIN before the close."""
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        with self._conn_lock:
            self._aborted.add(conn)

    def shutdown_request(self, request) -> None:
        with self._conn_lock:
            self._conns.discard(request)
            aborted = request in self._aborted
            self._aborted.discard(request)
        if aborted:
            self.close_request(request)
        else:
            super().shutdown_request(request)

    def close_connections(self) -> None:
        with self._conn_lock:
            conns = list(self._conns)
        for conn in conns:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)


class StandinHub:
    """A stand-in Hub serving one or more hub roots (see ``catalog``) on 127.0.0.1.

    ``valid_tokens``: bearer tokens that are approved for gated datasets, see private ones, and
    may push (when empty, any token may push). ``page_size``: items per page of the dataset
    listing and of tree listings (the Hub uses 1000 for trees).
    """

    def __init__(
        self,
        root: Path | Iterable[Path],
        *,
        port: int = 0,
        faults: Faults | None = None,
        quota: Quota | None = None,
        valid_tokens: Iterable[str] = frozenset(),
        page_size: int = 1000,
        host: str = HOST,
        read_only_tokens: Iterable[str] = frozenset(),
    ) -> None:
        if host != HOST:
            raise ValueError(f"the stand-in only binds to {HOST}, not {host!r}")
        if page_size < 1:
            raise ValueError("page_size must be >= 1")
        roots = [Path(root)] if isinstance(root, (str, Path)) else [Path(r) for r in root]
        self.catalog = Catalog(roots)
        self.valid_tokens = frozenset(valid_tokens)
        self.read_only_tokens = frozenset(read_only_tokens)  # known to whoami, refused any write (403)
        self.discussions: dict[str, list[dict[str, Any]]] = {}  # repo id -> its discussions, oldest first
        self.discussions_page_size = 50  # discussions per page, as the Hub pages them
        self.page_size = page_size
        self._port = port
        self._injector = FaultInjector(faults)
        self.quota = quota  # the Hub's rate limits, enforced when set (faults.Quota)
        self._stats_lock = threading.Lock()
        self._stats = self._zero_stats()
        self.app = _App(self)
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self.url = ""

    # ---------------------------------------------------------------- lifecycle

    def start(self) -> StandinHub:
        if self._server is not None:
            raise RuntimeError("the stand-in is already running")
        self._server = _Server(self, self._port)
        port = self._server.server_address[1]
        self.url = f"http://{HOST}:{port}"
        # A short poll interval keeps stop() fast (shutdown waits for the next poll).
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                        name=f"standin-{port}", daemon=True)
        self._thread.start()
        log.info("stand-in Hub serving on %s", self.url)
        return self

    def stop(self) -> None:
        server, self._server = self._server, None
        if server is None:
            return
        server.stopping.set()
        server.shutdown()
        server.close_connections()
        server.server_close()
        if self._thread is not None:
            self._thread.join()

    def __enter__(self) -> StandinHub:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ---------------------------------------------------------------- controls

    @staticmethod
    def _zero_stats() -> dict[str, int]:
        return {**dict.fromkeys(CATEGORIES, 0), "faults_injected": 0, "resolve_bytes": 0}

    def _count(self, category: str, n: int = 1) -> None:
        with self._stats_lock:
            self._stats[category] += n

    def _fault_injected(self) -> None:
        with self._stats_lock:
            self._stats["faults_injected"] += 1

    def stats(self) -> dict[str, int]:
        """Requests served by category (``faults.CATEGORIES``), plus ``faults_injected`` and
        ``resolve_bytes`` (the bytes of the file bodies served, whole or ranged)."""
        with self._stats_lock:
            return dict(self._stats)

    def reset_stats(self) -> None:
        with self._stats_lock:
            self._stats = self._zero_stats()

    @property
    def faults(self) -> Faults:
        return self._injector.faults

    def set_faults(self, faults: Faults) -> None:
        """Switch faults (``Faults()`` switches them off); request counters restart."""
        self._injector.set(faults)

    def set_sha(self, dataset_id: str, sha: str, parquet_dir: Path | None = None) -> None:
        """Simulate a new revision: main moves to ``sha``, the Parquet export moves with it (with the
        files under ``parquet_dir`` instead, when given), and ``lastModified`` becomes now. Earlier
        shas stay resolvable."""
        if not _SHA.fullmatch(sha):
            raise ValueError("sha must be 40 lowercase hex digits")
        repo = self.catalog.get(dataset_id)
        if repo is None:
            raise KeyError(dataset_id)
        with self.catalog.lock:
            repo.set_main(sha)
            if parquet_dir is not None:
                repo.replace_parquet({p.relative_to(parquet_dir).as_posix(): FileBlob(p)
                                      for p in sorted(Path(parquet_dir).rglob("*.parquet"))})
            self.catalog.pin(repo)
            self.catalog.touched()

    def set_private(self, dataset_id: str, private: bool = True) -> None:
        """Make a dataset private (or public again): to a caller without access, the Hub then
        answers as if it did not exist (401 or 404, ``RepoNotFound``), and lists it no more."""
        repo = self.catalog.get(dataset_id)
        if repo is None:
            raise KeyError(dataset_id)
        with self.catalog.lock:
            repo.meta["private"] = private
            self.catalog.pin(repo)
            self.catalog.touched()

    def add_discussion(self, repo_id: str, title: str, description: str = "", *, author: str = DEFAULT_USER,
                       status: str = "open") -> dict[str, Any]:
        """Open a discussion on ``repo_id`` as ``author`` (what a POST does; tests seed others' too)."""
        with self.catalog.lock:
            found = self.discussions.setdefault(repo_id, [])
            created = now_iso()
            who = {"name": author, "type": "user"}
            discussion = {
                "num": len(found) + 1, "title": title, "status": status, "createdAt": created, "author": who,
                "isPullRequest": False, "repo": {"name": repo_id, "type": "dataset"}, "numComments": 1, "pinned": False,
                "events": [{"id": sha1_hex("event", repo_id, str(len(found) + 1))[:24], "type": "comment",
                            "createdAt": created, "author": who,
                            "data": {"edited": False, "hidden": False, "numEdits": 0,
                                     "latest": {"raw": description, "html": "", "updatedAt": created, "author": who}}}],
            }
            found.append(discussion)
            return dict(discussion)

    def commit_data(self, dataset_id: str, files: Mapping[str, bytes], *, keep_previous_export: bool = True) -> str:
        """Simulate new data: main moves to a new commit whose Parquet export holds ``files`` (Parquet
        bytes by path, ``config/split/NNNN.parquet``), and ``lastModified`` becomes now. Earlier shas
        stay resolvable, unless ``keep_previous_export`` is False: then the export's previous commit
        is gone, as a rewritten ``refs/convert/parquet`` whose old commit the Hub no longer serves
        (a read pinned to it answers RevisionNotFound). Returns the new main sha."""
        repo = self.catalog.get(dataset_id)
        if repo is None:
            raise KeyError(dataset_id)
        with self.catalog.lock:
            sha = repo.replace_data({path: BytesBlob(data, lfs=True) for path, data in files.items()},
                                    keep_previous_export=keep_previous_export)
            self.catalog.pin(repo)
            self.catalog.touched()
        return sha

    def rewrite_export(self, dataset_id: str, files: Mapping[str, bytes] | None = None) -> str:
        """The converter runs again on ``dataset_id``'s main commit (main does not move): its
        ``refs/convert/parquet`` is rewritten to a new commit holding ``files`` (Parquet bytes by path;
        None: the same files), and the Hub no longer serves the commit it replaced. Returns the new commit."""
        repo = self.catalog.get(dataset_id)
        if repo is None:
            raise KeyError(dataset_id)
        with self.catalog.lock:
            repo.reconvert({path: BytesBlob(data, lfs=True) for path, data in files.items()} if files is not None else None)
            self.catalog.pin(repo)
        return repo.parquet_commit

    def commits(self, repo_id: str, repo_type: str = "dataset") -> list[dict[str, Any]]:
        """Commits pushed to ``repo_id`` (a dataset, or a ``space``) through this server, oldest first."""
        repo = self.catalog.get(repo_id, repo_type)
        return [dict(c) for c in repo.commits] if repo is not None else []
