"""Parquet files of their simulated size for the Hub-scale listing's eligible datasets.

A Hub-scale root declares them in its ``index.json``: ``"hubscale": {"count": N, "seed": S,
"sized_files": true}`` (optionally ``"cache_dir": "/abs/dir"`` and ``"cache_gb": G``). Then each
eligible dataset's export holds as many rows as its listing says (600 to 600,000), with text of a
realistic length and a label column, so that a crawl of the Hub-scale stand-in can be followed by
real downloads and measurements. Without ``sized_files`` the export stays a few tiny cached files.

What a dataset's files hold is a pure function of ``(seed, index, sha)``, built from one cached
table of 32,768 phrases (3 to 8 words of a Zipf-distributed synthetic vocabulary of 16,384 words):

- **text**: each row joins ``m`` phrases drawn from the table, ``m`` by the dataset's style: short
  (40% of datasets; 2-3 phrases, about 70 characters, as the shared datasets' sentences and
  tweets), medium (45%; 8-16 phrases, about 350 characters, reviews and paragraphs) or long (15%;
  24-48 phrases, about 1,100 characters, documents and instructions). Rows are distinct but for
  the planted copies (32,768 phrases give 10^9 pairs and more);
- **label**: a ``ClassLabel`` of 2 to 6 classes;
- **planted**: half the datasets repeat 0.1-3% of each split's rows and copy 0.1-5% of the test
  rows from train (a copied row keeps its label 9 times in 10);
- **unmeasured columns** (the survey leaves them out by name): an ``id`` on half the datasets, a
  ``url`` on a quarter, as scraped and exported datasets carry them.

Memory and disk stay bounded: a file is generated on its first request, its size and sha256 kept
(two numbers a file), its bytes held in an LRU of ``memory_mb`` and, with a cache folder, written
there, up to ``cache_gb`` (the oldest files go first); an evicted file is generated again, byte for
byte the same.
"""

from __future__ import annotations

import collections
import functools
import hashlib
import os
import tempfile
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from . import parquetio as pio
from .repos import Blob

VOCABULARY = 16_384
PHRASES = 32_768
STYLES = (  # (name, share of datasets in per mille, fewest and most phrases a row)
    ("short", 400, 2, 3),
    ("medium", 450, 8, 16),
    ("long", 150, 24, 48),
)
_SYLLABLES = [c + v for c in "bcdfghklmnprstvwz" for v in "aeiou"] + ["th", "st", "ng", "er", "an", "re"]


# --- the cached phrase table ----------------------------------------------------------------------

@functools.lru_cache(maxsize=1)
def vocabulary() -> pa.StringArray:
    """16,384 distinct synthetic words of 1 to 4 syllables, the most frequent the shortest."""
    rng = np.random.default_rng(20261206)
    words: dict[str, None] = dict.fromkeys(["the", "a", "of", "and", "to", "in", "is", "it", "for", "on"])
    while len(words) < VOCABULARY:
        n = 1 + min(3, int(rng.exponential(1.0)) + (len(words) > 500))
        words.setdefault("".join(_SYLLABLES[k] for k in rng.integers(0, len(_SYLLABLES), n)), None)
    return pa.array(list(words)[:VOCABULARY], pa.string())


@functools.lru_cache(maxsize=1)
def phrases() -> pa.StringArray:
    """32,768 phrases of 3 to 8 words, words drawn from a Zipf law over the vocabulary."""
    rng = np.random.default_rng(20261207)
    weights = 1.0 / (np.arange(VOCABULARY) + 2.7) ** 1.07
    counts = rng.integers(3, 9, PHRASES)
    words = rng.choice(VOCABULARY, size=int(counts.sum()), p=weights / weights.sum())
    return _joined(vocabulary(), counts, words)


def _joined(table: pa.StringArray, counts: np.ndarray, picks: np.ndarray) -> pa.StringArray:
    """Row ``k`` is ``counts[k]`` entries of ``table`` (by ``picks``, in order) joined by spaces."""
    offsets = np.zeros(len(counts) + 1, dtype=np.int32)
    np.cumsum(counts, out=offsets[1:])
    lists = pa.ListArray.from_arrays(pa.array(offsets), table.take(pa.array(picks)))
    return pc.binary_join(lists, " ")


# --- one dataset's design -------------------------------------------------------------------------

@dataclass(frozen=True)
class Design:
    """What one eligible dataset's files hold, drawn from its key."""

    key: str
    style: str
    fewest: int
    most: int
    classes: int
    duplicate_rate: float
    leak_rate: float
    id_column: bool
    url_column: bool

    @classmethod
    def of(cls, key: str) -> Design:
        h = hashlib.blake2b(f"sized:{key}".encode(), digest_size=16).digest()
        r = [int.from_bytes(h[k:k + 2], "big") for k in range(0, 16, 2)]
        pick, style = r[0] % 1000, STYLES[-1]
        for candidate in STYLES:
            if pick < candidate[1]:
                style = candidate
                break
            pick -= candidate[1]
        return cls(
            key=key, style=style[0], fewest=style[2], most=style[3], classes=2 + r[1] % 5,
            duplicate_rate=0.0 if r[2] % 2 else 0.001 + (r[3] % 1000) / 1000 * 0.029,
            leak_rate=0.0 if r[4] % 2 else 0.001 + (r[5] % 1000) / 1000 * 0.049,
            id_column=r[6] % 2 == 0, url_column=r[7] % 4 == 0,
        )

    def features(self) -> dict[str, pio.Feature]:
        """The files' HF features, in column order."""
        out: dict[str, pio.Feature] = {}
        if self.id_column:
            out["id"] = pio.value("string")
        out["text"] = pio.value("string")
        out["label"] = pio.class_label([f"class_{k}" for k in range(self.classes)])
        if self.url_column:
            out["url"] = pio.value("string")
        return out

    def features_yaml(self) -> list[dict[str, Any]]:
        """The same features as a card's ``dataset_info`` lists them."""
        out: list[dict[str, Any]] = []
        for name, feature in self.features().items():
            if feature["_type"] == "ClassLabel":
                out.append({"name": name, "dtype": {"class_label": {"names": {str(k): n for k, n in enumerate(feature["names"])}}}})
            else:
                out.append({"name": name, "dtype": feature["dtype"]})
        return out


def _rng(key: str, split: str, part: str) -> np.random.Generator:
    digest = hashlib.blake2b(f"sized:{key}:{split}:{part}".encode(), digest_size=8).digest()
    return np.random.default_rng(int.from_bytes(digest, "big"))


@dataclass
class _Rows:
    """A split's rows before they are text: each row's phrase picks (flat, with their counts) and label."""

    counts: np.ndarray
    picks: np.ndarray
    labels: np.ndarray

    def take(self, rows: np.ndarray) -> _Rows:
        starts = np.zeros(len(self.counts), dtype=np.int64)
        np.cumsum(self.counts[:-1], out=starts[1:])
        counts = self.counts[rows]
        flat = np.repeat(starts[rows] - np.concatenate(([0], np.cumsum(counts)[:-1])), counts) + np.arange(int(counts.sum()))
        return _Rows(counts, self.picks[flat], self.labels[rows])

    @staticmethod
    def concat(parts: list[_Rows]) -> _Rows:
        return _Rows(*(np.concatenate([getattr(p, f) for p in parts]) for f in ("counts", "picks", "labels")))


def _drawn(design: Design, split: str, n: int) -> _Rows:
    """A split's own rows, before the planted copies."""
    rng = _rng(design.key, split, "rows")
    counts = rng.integers(design.fewest, design.most + 1, n)
    return _Rows(counts, rng.integers(0, PHRASES, int(counts.sum())), rng.integers(0, design.classes, n))


def split_rows(design: Design, split: str, splits: Mapping[str, int]) -> _Rows:
    """A split's rows with the planted copies: repeats within the split, test rows copied from train."""
    n = splits[split]
    rows = _drawn(design, split, n)
    rng = _rng(design.key, split, "copies")
    source = np.arange(n)
    repeats = int(n * design.duplicate_rate)
    if repeats and n > 1:
        at = rng.choice(n, repeats, replace=False)
        source[at] = rng.integers(0, n, repeats)
    rows = rows.take(source)
    if split == "test" and "train" in splits and design.leak_rate:
        leaks = min(n, int(n * design.leak_rate))
        if leaks:
            at = rng.choice(n, leaks, replace=False)
            copied = _drawn(design, "train", splits["train"]).take(rng.integers(0, splits["train"], leaks))
            keep = rng.random(leaks) < 0.9
            copied.labels = np.where(keep, copied.labels, rng.integers(0, design.classes, leaks))
            order = np.arange(n)
            order[at] = n + np.arange(leaks)
            rows = _Rows.concat([rows, copied]).take(order)
    return rows


def split_table(design: Design, split: str, splits: Mapping[str, int]) -> pa.Table:
    """A split's rows as the table its Parquet file holds."""
    rows = split_rows(design, split, splits)
    n = len(rows.counts)
    columns: dict[str, pa.Array] = {}
    numbers = pc.cast(pa.array(np.arange(n)), pa.string())
    if design.id_column:
        columns["id"] = pc.binary_join_element_wise(f"{design.key[-8:]}-{split}", numbers, "-")
    columns["text"] = _joined(phrases(), rows.counts, rows.picks)
    columns["label"] = pa.array(rows.labels.astype(np.int64))
    if design.url_column:
        columns["url"] = pc.binary_join_element_wise(f"https://example.org/{design.key[-8:]}/{split}", numbers, "/")
    return pa.table(columns, schema=pio.schema(design.features()))


def split_parquet(design: Design, split: str, splits: Mapping[str, int]) -> bytes:
    sink = pa.BufferOutputStream()
    pq.write_table(split_table(design, split, splits), sink)
    return sink.getvalue().to_pybytes()


# --- serving them within bounds -------------------------------------------------------------------

class FileCache:
    """Generated files: their sizes and sha256 (kept), their bytes in a bounded LRU in memory and,
    with ``folder``, on disk up to ``disk_bytes``. One generation at a time (they are large); a
    ranged read of a file on disk reads that range only."""

    def __init__(self, memory_bytes: int = 512 << 20, folder: Path | None = None, disk_bytes: int = 8 << 30):
        self.memory_bytes, self.folder, self.disk_bytes = memory_bytes, folder, disk_bytes
        self._lock = threading.Lock()  # the bookkeeping below
        self._making = threading.Lock()  # one generation at a time
        self._meta: dict[str, tuple[int, str]] = {}
        self._memory: collections.OrderedDict[str, bytes] = collections.OrderedDict()
        self._disk: collections.OrderedDict[str, int] = collections.OrderedDict()
        self.generated = 0  # files generated, again after an eviction too

    def _path(self, name: str) -> Path:
        assert self.folder is not None
        return self.folder / (hashlib.sha1(name.encode()).hexdigest() + ".parquet")

    def _kept(self, name: str, start: int, end: int | None) -> bytes | None:
        """The bytes from memory or disk, or None when they are in neither."""
        with self._lock:
            data = self._memory.get(name)
            if data is not None:
                self._memory.move_to_end(name)
            elif name in self._disk:
                self._disk.move_to_end(name)
        if data is None and self.folder is not None and name in self._disk:
            try:
                with open(self._path(name), "rb") as fh:
                    fh.seek(start)
                    return fh.read(-1 if end is None else max(0, end - start))
            except FileNotFoundError:  # evicted meanwhile
                return None
        if data is None:
            return None
        return data if start == 0 and end in (None, len(data)) else data[start:end]

    def read(self, name: str, make: Any, start: int = 0, end: int | None = None) -> bytes:
        """Bytes ``[start, end)`` of the file: from memory, from disk, or made (and kept within the bounds)."""
        data = self._kept(name, start, end)
        if data is not None:
            return data
        with self._making:
            data = self._kept(name, 0, None)  # made by another request while this one waited
            if data is None:
                data = make()
                self.generated += 1
                with self._lock:
                    self._meta[name] = (len(data), hashlib.sha256(data).hexdigest())
                    self._store(name, data)
            with self._lock:
                if len(data) <= self.memory_bytes:
                    self._memory[name] = data
                    self._memory.move_to_end(name)
                    while sum(len(d) for d in self._memory.values()) > self.memory_bytes:
                        self._memory.popitem(last=False)
        return data if start == 0 and end in (None, len(data)) else data[start:end]

    def _store(self, name: str, data: bytes) -> None:
        if self.folder is None or len(data) > self.disk_bytes:
            return
        self.folder.mkdir(parents=True, exist_ok=True)
        while self._disk and sum(self._disk.values()) + len(data) > self.disk_bytes:
            old, _ = self._disk.popitem(last=False)
            self._path(old).unlink(missing_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.folder, suffix=".part")
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.replace(tmp, self._path(name))
        self._disk[name] = len(data)

    def meta(self, name: str, make: Any) -> tuple[int, str]:
        """(size, sha256) of the file, made once if it never was."""
        known = self._meta.get(name)
        if known is None:
            self.read(name, make, 0, 0)
            known = self._meta[name]
        return known


class SizedBlob(Blob):
    """One generated Parquet file, made on its first request (see :class:`FileCache`)."""

    lfs = True

    def __init__(self, cache: FileCache, name: str, design: Design, split: str, splits: Mapping[str, int]) -> None:
        self._cache, self._name = cache, name
        self._make = functools.partial(split_parquet, design, split, dict(splits))

    @property  # type: ignore[override]
    def size(self) -> int:
        return self._cache.meta(self._name, self._make)[0]

    @property  # type: ignore[override]
    def sha256(self) -> str:
        return self._cache.meta(self._name, self._make)[1]

    def read(self, start: int = 0, end: int | None = None) -> bytes:
        return self._cache.read(self._name, self._make, start, end)
