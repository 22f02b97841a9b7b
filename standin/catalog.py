"""Everything a stand-in server serves: hub roots on disk, synthetic filler, repos created over HTTP.

A hub root is a folder with an ``index.json``, either a list of dataset entries or an object
``{"datasets": [...], "filler": {"count": N, "seed": S}}``. An entry::

    {"id": "owner/name",              # required
     "dir": "owner__name",            # default; files at <root>/<dir>/<config>/<split>/NNNN.parquet
     "sha": "<40 hex>",               # default: sha1 of the id and the files' relative paths and sizes
     "tags": ["modality:text", ...],  "gated": false | "auto" | "manual",
     "private": false, "disabled": false, "parquet_export": true,
     "pushed": false,                 # true: main holds the files as datasets.push_to_hub leaves them
     "author", "downloads", "likes", "lastModified", "createdAt", "description",
     "cardData": {...}}               # default: derived from the tags

The object form may also list ``"models"`` (see ``models``: their cards declare datasets), which
``/api/models`` lists, and ``"evals": {"<dataset id>": {...}}``: a benchmark's ``eval.yaml`` (its
tasks), added to the main branch of that dataset, served by this root or another one. Unknown keys (``legacy_name``, ``configs``, ...) are ignored. The Parquet files are served as the
``refs/convert/parquet`` branch; main holds a README.md generated from ``cardData``. Roots are
only ever read.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from . import cards
from .filler import Filler
from .hubscale import HubScale
from .models import model_files, model_props
from .repos import GITATTRIBUTES, BytesBlob, FileBlob, Repo, iso_date, now_iso, sha1_hex

SORT_FIELDS = ("downloads", "likes", "lastModified", "createdAt", "trendingScore", "downloadsAllTime", "id")
_GATED = (False, "auto", "manual")


def _entry_meta(entry: dict[str, Any]) -> dict[str, Any]:
    """Listing properties of an index entry, with deterministic defaults for what it leaves out."""
    repo_id = entry["id"]
    h = hashlib.sha1(repo_id.encode()).digest()
    tags = list(entry.get("tags", []))
    gated = entry.get("gated", False)
    if gated not in _GATED:
        raise ValueError(f"{repo_id}: gated must be false, 'auto' or 'manual'")
    downloads = entry.get("downloads", int.from_bytes(h[:3], "big") % 100_000)
    created = int.from_bytes(h[3:5], "big") % 1000
    return {
        "author": entry.get("author", repo_id.split("/")[0]),
        "tags": tags,
        "gated": gated,
        "private": bool(entry.get("private", False)),
        "disabled": bool(entry.get("disabled", False)),
        "downloads": downloads,
        "downloadsAllTime": entry.get("downloadsAllTime", downloads * 3),
        "likes": entry.get("likes", downloads // 100),
        "trendingScore": entry.get("trendingScore", 0),
        "createdAt": entry.get("createdAt", iso_date(created)),
        "lastModified": entry.get("lastModified", iso_date(created + h[5])),
        "description": entry.get("description"),
        "cardData": entry.get("cardData", cards.card_from_tags(tags)) or None,
    }


def _served_repo(root: Path, entry: dict[str, Any]) -> Repo:
    repo_id = entry.get("id", "")
    if repo_id.count("/") != 1 or not all(repo_id.split("/")):
        raise ValueError(f"{root / 'index.json'}: dataset id must look like 'owner/name', got {repo_id!r}")
    folder = root / entry.get("dir", repo_id.replace("/", "__"))
    export = bool(entry.get("parquet_export", True))
    on_disk = {p.relative_to(folder).as_posix(): FileBlob(p) for p in sorted(folder.rglob("*.parquet"))} if folder.is_dir() else {}
    files = on_disk if export else {}
    sha = entry.get("sha") or sha1_hex(repo_id, *(f"{p} {b.size}" for p, b in files.items()))
    meta = _entry_meta(entry)
    if "cardData" not in entry:
        meta["cardData"] = cards.with_split_sizes(meta["cardData"] or {}, _split_rows(folder, files))
    meta["usedStorage"] = sum(b.size for b in files.values())
    pushed, configs = _pushed(on_disk) if entry.get("pushed") else ({}, [])
    if configs and "cardData" not in entry:
        meta["cardData"] = {**(meta["cardData"] or {}), "configs": configs}
    main = {".gitattributes": BytesBlob(GITATTRIBUTES),
            "README.md": BytesBlob(cards.readme(meta["cardData"] or {}, repo_id).encode()), **pushed}
    return Repo(repo_id, meta, main_files=main, main_sha=sha, parquet_files=files if export else None)


def _pushed(export: dict[str, FileBlob]) -> tuple[dict[str, FileBlob], list[dict[str, Any]]]:
    """The main branch's files and the card's ``configs`` as ``datasets.push_to_hub`` leaves them,
    from the export's ``{config}/{split}/NNNN.parquet``: each split's files at
    ``data/{split}-NNNNN-of-NNNNN.parquet`` (``{config}/...`` for a config other than default),
    named by split in ``configs[].data_files``."""
    layout: dict[str, dict[str, list[FileBlob]]] = {}
    for path, blob in export.items():
        parts = path.split("/")
        if len(parts) == 3:
            layout.setdefault(parts[0], {}).setdefault(parts[1], []).append(blob)
    main: dict[str, FileBlob] = {}
    configs = []
    for config, splits in layout.items():
        prefix = "data" if config == "default" else config
        for split, blobs in splits.items():
            for k, blob in enumerate(blobs):
                main[f"{prefix}/{split}-{k:05d}-of-{len(blobs):05d}.parquet"] = blob
        configs.append({"config_name": config, "data_files": [{"split": s, "path": f"{prefix}/{s}-*"} for s in splits]})
    return main, configs


def _split_rows(folder: Path, files: dict[str, Any]) -> dict[str, dict[str, int]] | None:
    """``{config: {split: rows}}`` from the Parquet footers on disk (None if one is unreadable)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows: dict[str, dict[str, int]] = {}
    for path in files:
        parts = path.split("/")
        if len(parts) != 3:
            continue
        try:
            n = pq.read_metadata(folder / path).num_rows
        except (OSError, pa.ArrowException):
            return None  # a card cannot state what nobody could count
        split = parts[1].removeprefix("partial-").split("-part")[0]
        rows.setdefault(parts[0], {}).setdefault(split, 0)
        rows[parts[0]][split] += n
    return rows or None


class Catalog:
    """The repos of one server. Mutations (create, commit, set_sha) hold ``lock``."""

    def __init__(self, roots: Sequence[Path]) -> None:
        self.lock = threading.RLock()
        self._repos: dict[str, Repo] = {}  # served and created repos
        self._spaces: dict[str, Repo] = {}  # created spaces: never listed among the datasets
        self._listed: list[str] = []  # their ids, in listing order
        self._pinned: dict[int, Repo] = {}  # filler repos that were changed (new sha): kept, not rebuilt
        self.filler: Filler | HubScale | None = None
        self._version = 0
        self._orders: dict[tuple[str | None, int], list[str | int]] = {}
        self.models: dict[str, dict[str, Any]] = {}  # model id -> listing properties, in listing order
        self._model_repos: dict[str, Repo] = {}  # model id -> its files (card, .eval_results)
        evals: dict[str, Any] = {}
        for root in roots:
            evals.update(self._load(Path(root)))
        for dataset_id, spec in evals.items():  # a benchmark's eval.yaml: its sha stays (only Parquet files make it)
            repo = self._repos.get(dataset_id)
            if repo is None:
                raise ValueError(f"evals: {dataset_id} is not a dataset of these roots")
            repo.main.files["eval.yaml"] = BytesBlob(yaml.safe_dump(spec, sort_keys=False).encode())

    def _load(self, root: Path) -> dict[str, Any]:
        data = json.loads((root / "index.json").read_text(encoding="utf-8"))
        entries = data if isinstance(data, list) else data.get("datasets", [])
        for entry in entries:
            repo = _served_repo(root, entry)
            if repo.id in self._repos:
                raise ValueError(f"dataset {repo.id} is served by two roots")
            self._repos[repo.id] = repo
            self._listed.append(repo.id)
        for entry in [] if isinstance(data, list) else data.get("models", []):
            props = model_props(entry)
            if props["id"] in self.models:
                raise ValueError(f"model {props['id']} is served twice")
            self.models[props["id"]] = props
            self._model_repos[props["id"]] = Repo(
                props["id"], props, main_sha=props["sha"],
                main_files={path: BytesBlob(body) for path, body in model_files(entry).items()})
        filler = None if isinstance(data, list) else data.get("filler")
        scale = None if isinstance(data, list) else data.get("hubscale")
        for spec, kind in ((filler, Filler), (scale, HubScale)):
            if spec and spec.get("count", 0):
                if self.filler is not None:
                    raise ValueError("only one hub root may declare filler or hubscale datasets")
                self.filler = HubScale.from_spec(spec) if kind is HubScale else Filler(int(spec["count"]), int(spec.get("seed", 0)))
        return {} if isinstance(data, list) else dict(data.get("evals") or {})

    def get(self, repo_id: str, repo_type: str = "dataset") -> Repo | None:
        if repo_type == "space":
            return self._spaces.get(repo_id)
        if repo_type == "model":
            return self._model_repos.get(repo_id)
        repo = self._repos.get(repo_id)
        if repo is None and self.filler is not None:
            index = self.filler.index_of(repo_id)
            if index is not None:
                repo = self._pinned.get(index) or self.filler.repo(index)
        return repo

    def pin(self, repo: Repo) -> None:
        """Keep a filler repo (otherwise rebuilt on demand) so that a change to it lasts."""
        index = self.filler.index_of(repo.id) if self.filler is not None else None
        if index is not None:
            with self.lock:
                self._pinned.setdefault(index, repo)

    def create(self, repo_id: str, *, private: bool, repo_type: str = "dataset", sdk: str | None = None) -> Repo:
        """A new, writable, empty repo (one ``.gitattributes``): a dataset, listed after the served
        ones, or a space (``sdk``: its SDK, e.g. static), never listed."""
        now = now_iso()
        meta = _entry_meta({"id": repo_id, "private": private, "downloads": 0, "likes": 0,
                            "createdAt": now, "lastModified": now})
        meta["usedStorage"] = len(GITATTRIBUTES)
        repo = Repo(repo_id, meta, main_files={".gitattributes": BytesBlob(GITATTRIBUTES)},
                    main_sha=sha1_hex("create", repo_id), read_only=False)
        if repo_type == "space":
            repo.meta["sdk"] = sdk
            with self.lock:
                self._spaces[repo_id] = repo
            return repo
        with self.lock:
            self._repos[repo_id] = repo
            self._listed.append(repo_id)
            self._version += 1
        return repo

    def touched(self) -> None:
        """Invalidate cached listing orders after a change of listing properties."""
        with self.lock:
            self._version += 1

    def props(self, key: str | int) -> dict[str, Any]:
        """Listing properties of a listing key: a repo id, or a filler index."""
        if isinstance(key, int):
            pinned = self._pinned.get(key)
            return pinned.props() if pinned else self.filler.props(key)
        return self._repos[key].props()

    def order(self, sort: str | None) -> Sequence[str | int]:
        """Every listing key in listing order: served, created, then filler; or sorted by ``sort``
        (descending, except ``id``; ties keep the default order). Cached until the next change."""
        if isinstance(self.filler, HubScale) and not self._listed:
            return self.filler.order(sort)  # millions of keys: a lazy sequence, never a list
        with self.lock:
            cache_key = (sort, self._version)
            keys = self._orders.get(cache_key)
            if keys is None:
                keys = list(self._listed) + list(range(self.filler.count if self.filler else 0))
                if sort is not None:
                    if sort == "id":
                        keys.sort(key=lambda k: self.props(k)["id"])
                    else:
                        keys.sort(key=lambda k: self.props(k).get(sort) or 0, reverse=True)
                self._orders = {cache_key: keys, **{k: v for k, v in self._orders.items() if k[1] == self._version}}
            return keys


def write_hub_root(root: Path, datasets: dict[str, dict[str, Any]], entries: dict[str, dict[str, Any]] | None = None) -> Path:
    """A small hub root for hostile-layout tests: ``{dataset id: {path in the Parquet branch: table}}``.

    Paths are written as given (``default/test/0000.parquet``, ``default/test.parquet``,
    ``default/train/part-0/0000.parquet`` ...): the branch serves whatever layout a test builds.
    ``entries`` adds index.json keys per dataset (``tags``, ``sha`` ...). Returns ``root``.
    """
    import pyarrow.parquet as pq

    index = []
    for repo_id, files in datasets.items():
        folder = root / repo_id.replace("/", "__")
        for relative, table in files.items():
            path = folder / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            pq.write_table(table, path)
        index.append({"id": repo_id, "tags": ["task_categories:text-classification", "language:en", "format:parquet"],
                      **(entries or {}).get(repo_id, {})})
    root.mkdir(parents=True, exist_ok=True)
    (root / "index.json").write_text(json.dumps(index, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return root


def write_tiny_hub(root: Path, datasets: int) -> Path:
    """``datasets`` datasets (``tiny/ds00``...) of three 20-row splits each: jobs that are mostly
    their downloads, for the quota and cluster tests and benchmarks."""
    import pyarrow as pa

    files = {}
    for n in range(datasets):
        split = {s: pa.table({"text": [f"{s} row {i} of {n}" for i in range(20)], "label": [i % 2 for i in range(20)]})
                 for s in ("train", "validation", "test")}
        files[f"tiny/ds{n:02d}"] = {f"default/{s}/0000.parquet": t for s, t in split.items()}
    return write_hub_root(root, files)
