"""A Hub-scale listing: millions of datasets, each a pure function of its index, none held in memory.

A hub root declares it in its ``index.json``: ``{"datasets": [], "hubscale": {"count": N, "seed": S}}``.
Dataset ``i``'s listing item is rebuilt from a hash of ``(seed, i)`` whenever it is listed; its
Parquet export (needed only by the few datasets a crawl resolves) is synthesized on first request
from a handful of cached files. The listing is in ``lastModified`` order, newest first, whatever
``sort`` asks (the crawl sorts by it; other orders are not simulated). :meth:`HubScale.advance`
starts the next "night": 1% of the datasets get a new sha and a new ``lastModified``, which moves
them to the head of the listing, as on the Hub.

The metadata mix (shares of listed datasets; see ``benchmarks/bench_hubscale.py`` for why):

- facts: 2% gated (auto or manual), 0.05% disabled;
- the card: 20% have no YAML card (no ``cardData``), 8% a card that names no splits (license,
  tags), 27% a card whose ``configs[].data_files`` name the splits but no ``dataset_info``, 45%
  a card with ``dataset_info`` (``push_to_hub`` writes it: split sizes and features);
- the truth: 80% have a train split only, 8% train and test, 4% train, validation and test,
  8% other split names; rows: 35% under 1K, 25% 1K-10K, 20% 10K-100K, 13% 100K-1M, 7% 1M or more;
  modality: 50% text, 10% text with images or tables, 15% image, 12% tabular, 5% audio, 8% time
  series or video (robot episodes);
- the main branch holds one data file per split, named after it (what a card-less dataset's
  splits are inferred from);
- the tags: ``modality:*`` on 85% (the Hub derives them for the datasets its viewer reads),
  ``size_categories:*`` on 35% (cards that state it); 92% have a Parquet export.

Cards and tags tell the truth here; what a stale card costs is documented, not simulated.

With ``"sized_files": true`` in the root's ``hubscale`` object, the eligible datasets' exports hold
their simulated rows instead, with text of a realistic length (``sizedfiles``: generated on first
request, kept within a memory and a disk budget), so that a crawl can be followed by downloads and
measurements; their cards state the files' features.
"""

from __future__ import annotations

import bisect
import datetime as dt
import functools
import hashlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from . import parquetio as pio
from .repos import GITATTRIBUTES, BytesBlob, Repo, object_id
from .sizedfiles import Design, FileCache, SizedBlob

_T0 = dt.datetime(2026, 11, 30, tzinfo=dt.UTC)  # the newest lastModified of night 0
_STEP_MS = 6_000  # night 0: dataset i was last modified i x 6 s before _T0 (1% of 1.5M a day: one every 6 s)
_CHANGED_STEP_MS = 10  # a night's changed datasets, newest first, 10 ms apart
_ROWS = (600, 6_000, 60_000, 600_000, 1_100_000)  # total rows of each size bucket
_SIZE_TAGS = ("n<1K", "1K<n<10K", "10K<n<100K", "100K<n<1M", "1M<n<10M")
_SPLITS = (("train",), ("train", "test"), ("train", "validation", "test"), ("latest",))
_MODALITIES = (("text",), ("text", "image"), ("image",), ("tabular",), ("audio",), ("timeseries", "video"))
_AUTHORS = ("acme", "zenith", "open", "nlp", "vision", "deep", "polyglot", "civic", "north", "quant", "lumen", "tiny")
_FEATURES_YAML = {
    "text": [{"name": "text", "dtype": "string"}, {"name": "label", "dtype": {"class_label": {"names": {"0": "neg", "1": "pos"}}}}],
    "image": [{"name": "image", "dtype": "image"}, {"name": "label", "dtype": "int64"}],
    "tabular": [{"name": "x0", "dtype": "float64"}, {"name": "x1", "dtype": "float64"}, {"name": "target", "dtype": "int64"}],
}


def _bucket(value: int, bounds: Sequence[int]) -> int:
    return bisect.bisect_right(bounds, value)


class HubScale:
    """``count`` listing-only datasets drawn from ``seed``; ``night`` says which have changed."""

    def __init__(self, count: int, seed: int = 0, *, sized_files: bool = False, cache: FileCache | None = None) -> None:
        if count < 0:
            raise ValueError("hubscale count must be >= 0")
        self.count, self.seed, self.night = count, seed, 0
        # eligible datasets' exports at their simulated size (sizedfiles), else a few tiny cached files
        self.files = (cache or FileCache()) if sized_files else None
        self._changed: list[int] = []
        self._position: dict[int, int] = {}  # changed index -> its place at the head of the listing

    @classmethod
    def from_spec(cls, spec: dict[str, Any]) -> HubScale:
        """From an ``index.json``'s ``"hubscale"`` object: ``count``, ``seed``, ``sized_files``, and
        for the sized files ``cache_dir`` (a folder outside the root, default none: memory only),
        ``cache_gb`` (default 8) and ``memory_mb`` (default 512)."""
        cache = None
        if spec.get("sized_files"):
            folder = spec.get("cache_dir")
            cache = FileCache(memory_bytes=int(spec.get("memory_mb", 512)) << 20, folder=Path(folder) if folder else None,
                              disk_bytes=int(float(spec.get("cache_gb", 8)) * (1 << 30)))
        return cls(int(spec["count"]), int(spec.get("seed", 0)), sized_files=bool(spec.get("sized_files")), cache=cache)

    # --- the mix --------------------------------------------------------------------------------

    def _hash(self, i: int) -> bytes:
        return hashlib.blake2b(f"hubscale:{self.seed}:{i}".encode(), digest_size=16).digest()

    def traits(self, i: int) -> dict[str, Any]:
        """The truth about dataset ``i`` and what its listing shows of it."""
        h = self._hash(i)
        r = [int.from_bytes(h[k:k + 2], "big") % 10_000 for k in range(0, 16, 2)]
        modality = _MODALITIES[_bucket(r[4], (5000, 6000, 7500, 8700, 9200))]
        return {
            "gated": ("auto", "manual")[h[15] % 2] if r[0] < 200 else False,
            "disabled": 200 <= r[0] < 205,
            "card": ("none", "plain", "configs", "dataset_info")[_bucket(r[1], (2000, 2800, 5500))],
            "splits": _SPLITS[_bucket(r[2], (8000, 8800, 9200))],
            "size": _bucket(r[3], (3500, 6000, 8000, 9300)),
            "modality": modality,
            "kind": "text" if "text" in modality else "tabular" if modality == ("tabular",) else "image",
            "modality_tag": r[5] < 8500,
            "size_tag": r[6] < 3500,
            "export": r[7] < 9200,
        }

    @staticmethod
    def eligible(t: dict[str, Any]) -> bool:
        """Whether a dataset with these traits is one the survey measures."""
        return (not t["gated"] and not t["disabled"] and t["export"] and "test" in t["splits"] and t["kind"] == "text"
                and sum(_split_rows(t).values()) < 1_000_000)

    def design(self, i: int, t: dict[str, Any] | None = None) -> Design | None:
        """What dataset ``i``'s sized files hold (None: its export is tiny, or it is not eligible)."""
        if self.files is None or not self.eligible(t or self.traits(i)):
            return None
        return Design.of(f"{self.seed}:{i}:{self._sha(i)}")

    def _changed_in(self, i: int, night: int) -> bool:
        digest = hashlib.blake2b(f"night:{self.seed}:{night}:{i}".encode(), digest_size=2).digest()
        return int.from_bytes(digest, "big") < 655  # 655 / 65536: 1.0%

    def advance(self) -> int:
        """The next night: 1% of the datasets change (new sha, lastModified now). Returns how many.
        Only the latest night's changes are kept (one incremental night is what is simulated)."""
        self.night += 1
        self._changed = [i for i in range(self.count) if self._changed_in(i, self.night)]
        self._position = {i: k for k, i in enumerate(self._changed)}
        return len(self._changed)

    def _is_changed(self, i: int) -> bool:
        return i in self._position

    # --- what the catalog asks -------------------------------------------------------------------

    def index_of(self, repo_id: str) -> int | None:
        tail = repo_id.rsplit("-", 1)[-1]
        if not tail.isdigit():
            return None
        i = int(tail)
        return i if i < self.count and self._id(i) == repo_id else None

    def _id(self, i: int) -> str:
        h = self._hash(i)
        return f"{_AUTHORS[h[14] % len(_AUTHORS)]}/set-{h[13]:02x}-{i}"

    def _last_modified(self, i: int) -> str:
        if self._is_changed(i):
            when = _T0 + dt.timedelta(days=self.night, milliseconds=-_CHANGED_STEP_MS * self._position[i])
        else:
            when = _T0 - dt.timedelta(milliseconds=_STEP_MS * i)
        return when.strftime("%Y-%m-%dT%H:%M:%S.") + f"{when.microsecond // 1000:03d}Z"

    def _sha(self, i: int) -> str:
        night = self.night if self._is_changed(i) else 0
        return hashlib.sha1(f"hubscale-sha:{self.seed}:{i}:{night}".encode()).hexdigest()

    def _card(self, i: int, t: dict[str, Any]) -> dict[str, Any] | None:
        if t["card"] == "none":
            return None
        card: dict[str, Any] = {"license": "cc-by-4.0"}
        if t["size_tag"]:
            card["size_categories"] = [_SIZE_TAGS[t["size"]]]
        if t["card"] in ("configs", "dataset_info"):
            card["configs"] = [{"config_name": "default",
                                "data_files": [{"split": s, "path": f"data/{s}-*"} for s in t["splits"]]}]
        if t["card"] == "dataset_info":
            design = self.design(i, t)
            features = design.features_yaml() if design else _FEATURES_YAML[t["kind"]]
            card["dataset_info"] = {"config_name": "default", "features": features,
                                    "splits": [{"name": s, "num_examples": n} for s, n in _split_rows(t).items()]}
        return card

    def props(self, i: int) -> dict[str, Any]:
        """The listing properties of dataset ``i``, built from its index."""
        t = self.traits(i)
        repo_id = self._id(i)
        tags = [f"modality:{m}" for m in t["modality"]] if t["modality_tag"] else []
        if t["size_tag"] and t["card"] != "none":
            tags.append(f"size_categories:{_SIZE_TAGS[t['size']]}")
        if t["export"]:
            tags.append("format:parquet")
        downloads = int.from_bytes(self._hash(i)[8:11], "big") % 5000
        return {
            "_id": object_id(repo_id), "id": repo_id, "author": repo_id.split("/")[0], "sha": self._sha(i),
            "lastModified": self._last_modified(i), "createdAt": "2025-01-01T00:00:00.000Z",
            "private": False, "gated": t["gated"], "disabled": t["disabled"], "downloads": downloads,
            "likes": downloads // 50, "trendingScore": 0, "tags": tags, "cardData": self._card(i, t),
            "description": None, "siblings": self._siblings(t),
        }

    def _siblings(self, t: dict[str, Any]) -> list[dict[str, str]]:
        """The main branch's files: README and .gitattributes, and one data file per split."""
        ext = {"text": "jsonl", "tabular": "csv", "image": "parquet"}[t["kind"]]
        files = [".gitattributes"] + (["README.md"] if t["card"] != "none" else [])
        files += [f"data/{split}-00000-of-00001.{ext}" for split in t["splits"]]
        return [{"rfilename": f} for f in files]

    def repo(self, i: int) -> Repo:
        """Dataset ``i`` as a repo: its Parquet export is a few cached files of the right sizes."""
        props = self.props(i)
        meta = {k: v for k, v in props.items() if k not in ("_id", "id", "sha", "siblings")}
        t = self.traits(i)
        design = self.design(i, t)
        splits = _split_rows(t)
        export: Any = None
        if design is not None and self.files is not None:
            export = functools.partial(_sized_export, self.files, design, splits)
        elif t["export"]:
            export = functools.partial(_tiny_export, t["kind"], splits)
        main = {".gitattributes": BytesBlob(GITATTRIBUTES), "README.md": BytesBlob(b"# synthetic\n")}
        return Repo(props["id"], meta, main_files=main, main_sha=props["sha"], parquet_files=export)

    def order(self, sort: str | None) -> Sequence[int]:
        """Every index in listing order (lastModified, newest first), without building the list."""
        return _Order(self._changed, self.count)


class _Order(Sequence[int]):
    """The changed indices first (newest first), then every other index in increasing order."""

    def __init__(self, changed: list[int], count: int) -> None:
        self._changed, self._count = changed, count

    def __len__(self) -> int:
        return self._count

    def __getitem__(self, pos: int) -> int:  # type: ignore[override]
        if pos < 0 or pos >= self._count:
            raise IndexError(pos)
        if pos < len(self._changed):
            return self._changed[pos]
        k = pos - len(self._changed)  # the k-th index that did not change
        i = k
        while True:
            j = k + bisect.bisect_right(self._changed, i)
            if j == i:
                return i
            i = j


def _sized_export(files: FileCache, design: Design, splits: dict[str, int]) -> dict[str, SizedBlob]:
    return {f"default/{s}/0000.parquet": SizedBlob(files, f"{design.key}/{s}", design, s, splits) for s in splits}


def _tiny_export(kind: str, splits: dict[str, int]) -> dict[str, BytesBlob]:
    return {f"default/{s}/0000.parquet": _blob(kind, n) for s, n in splits.items()}


def _split_rows(t: dict[str, Any]) -> dict[str, int]:
    total = _ROWS[t["size"]]
    splits = t["splits"]
    if len(splits) == 1:
        return {splits[0]: total}
    test = total // 5
    rest = total - test * (len(splits) - 1)
    return {s: (rest if s == "train" else test) for s in splits}


@functools.lru_cache(maxsize=64)
def _blob(kind: str, rows: int) -> BytesBlob:
    """One split's file: ``rows`` rows of a few repeated values (a small file whatever ``rows``)."""
    values = np.arange(rows, dtype=np.int64) % 7
    if kind == "text":
        features = {"text": pio.value("string"), "label": pio.class_label(["neg", "pos"])}
        words = pa.array([f"a short review number {k}" for k in range(7)])
        columns: dict[str, Any] = {"text": pa.DictionaryArray.from_arrays(pa.array(values.astype(np.int32)), words).dictionary_decode(),
                                   "label": pa.array(values % 2)}
    elif kind == "tabular":
        features = {"x0": pio.value("float64"), "x1": pio.value("float64"), "target": pio.value("int64")}
        columns = {"x0": pa.array(values.astype(np.float64)), "x1": pa.array(values.astype(np.float64)), "target": pa.array(values)}
    else:
        features = {"image": pio.value("binary"), "label": pio.value("int64")}
        columns = {"image": pa.array([b"\x89PNG"] * rows, pa.binary()), "label": pa.array(values)}
    return BytesBlob(pio.parquet_bytes(columns, features), lfs=True)
