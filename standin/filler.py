"""Synthetic filler datasets: a large, varied, deterministic Hub listing that costs nothing to store.

Dataset ``i`` of a ``Filler(count, seed)`` is a pure function of ``(seed, i)``: its metadata is
rebuilt from a hash whenever it is needed, and its Parquet export is synthesized in memory the first
time it is requested (and cached). Nothing is written to disk, so 100,000 filler datasets cost a few
megabytes of cached sort orders, not 100,000 files.

The mix, by the first hash bytes (per mille): 2% look eligible for the survey (modality:text,
fewer than 1M rows, not gated) and always have a small text-classification export; 13% are gated
text; 25% are text with more than 1M rows (their export's train split really has 1.1M rows); the
rest are image, tabular and audio datasets. About 10% of the non-eligible ones have no export.
"""

from __future__ import annotations

import functools
import hashlib
import random
import re
from typing import Any, NamedTuple

import numpy as np
import pyarrow as pa

from . import cards
from . import parquetio as pio
from .repos import GITATTRIBUTES, BytesBlob, Repo, iso_date, object_id

_HEADS = ("acme", "zenith", "open", "nlp", "vision", "deep", "polyglot", "civic", "north", "quant", "lumen", "tiny")
_TAILS = ("-ai", "-lab", "-org", "-research", "-data", "-uni", "", "-collective")
_ADJS = ("quick", "noisy", "clean", "large", "small", "curated", "raw", "multi",
         "legacy", "synthetic", "daily", "global", "domain", "weekly", "annotated", "mixed")
_NOUNS = ("reviews", "tweets", "news", "dialogs", "queries", "captions", "papers", "forums",
          "recipes", "laws", "lyrics", "emails", "tickets", "photos", "scans", "tables")
_LANGS = ("en", "fr", "de", "es", "zh", "ja", "ar", "hi", "pt", "ru")
_LICENSES = ("mit", "apache-2.0", "cc-by-4.0", "cc-by-sa-4.0", "cc0-1.0", "other")
_TEXT_TASKS = ("text-classification", "token-classification", "question-answering",
               "summarization", "translation", "text-generation")
_SMALL = ("n<1K", "1K<n<10K", "10K<n<100K", "100K<n<1M")
_BIG = ("1M<n<10M", "10M<n<100M", "100M<n<1B")
_MODALITY = {"eligible": "text", "gated": "text", "big_text": "text", "image": "image", "tabular": "tabular", "audio": "audio"}
_TASKS = {
    "image": ("image-classification", "object-detection"),
    "tabular": ("tabular-classification", "tabular-regression"),
    "audio": ("audio-classification", "automatic-speech-recognition"),
}
_WORDS = ("the", "a", "model", "data", "river", "blue", "quiet", "runs", "over", "under", "city", "green",
          "music", "light", "fast", "slow", "paper", "review", "great", "bad", "movie", "plot", "actor", "story")
_ID_SUFFIX = re.compile(r"-(\d+)\Z")
BIG_ROWS = 1_100_000


class FillerRecord(NamedTuple):
    """The metadata of filler dataset ``index``; ``kind`` is one of the mix's archetypes."""

    index: int
    id: str
    kind: str
    tags: tuple[str, ...]
    gated: bool | str
    export: bool
    downloads: int
    likes: int
    created_day: int
    modified_day: int
    sha: str


class Filler:
    """``count`` synthetic datasets drawn deterministically from ``seed``."""

    def __init__(self, count: int, seed: int = 0) -> None:
        if count < 0:
            raise ValueError("filler count must be >= 0")
        self.count = count
        self.seed = seed

    def _hash(self, i: int) -> bytes:
        return hashlib.blake2b(f"filler:{self.seed}:{i}".encode(), digest_size=24).digest()

    def record(self, i: int) -> FillerRecord:
        h = self._hash(i)
        r = int.from_bytes(h[0:2], "big") % 1000
        kind = ("eligible" if r < 20 else "gated" if r < 150 else "big_text" if r < 400
                else "image" if r < 650 else "tabular" if r < 800 else "audio")
        author = _HEADS[h[2] % len(_HEADS)] + _TAILS[h[3] % len(_TAILS)]
        repo_id = f"{author}/{_ADJS[h[4] % len(_ADJS)]}-{_NOUNS[h[5] % len(_NOUNS)]}-{i}"
        modality = _MODALITY[kind]
        if modality == "text":
            task = _TEXT_TASKS[h[6] % len(_TEXT_TASKS)]
            size = _BIG[h[7] % len(_BIG)] if kind == "big_text" else _SMALL[h[7] % (2 if kind == "eligible" else 4)]
        else:
            task = _TASKS[modality][h[6] % 2]
            size = (_SMALL + _BIG)[h[7] % 7]
        export = kind == "eligible" or h[8] % 10 != 0
        gated: bool | str = ("auto", "manual")[h[9] % 2] if kind == "gated" else False
        tags = [f"task_categories:{task}", f"language:{_LANGS[h[10] % len(_LANGS)]}",
                f"size_categories:{size}", f"modality:{modality}", f"license:{_LICENSES[h[11] % len(_LICENSES)]}"]
        if export:
            tags.append("format:parquet")
        tags += ["library:datasets", "region:us"]
        downloads = int(10 ** (h[12] / 255 * 6))
        created = int.from_bytes(h[13:15], "big") % 1500
        return FillerRecord(
            index=i, id=repo_id, kind=kind, tags=tuple(tags), gated=gated, export=export,
            downloads=downloads, likes=downloads // (h[15] + 20), created_day=created,
            modified_day=created + h[16], sha=h[:20].hex(),
        )

    def index_of(self, repo_id: str) -> int | None:
        """The index of a filler dataset id, or None if ``repo_id`` is not one."""
        match = _ID_SUFFIX.search(repo_id)
        if not match:
            return None
        i = int(match.group(1))
        return i if i < self.count and self.record(i).id == repo_id else None

    def meta(self, rec: FillerRecord) -> dict[str, Any]:
        """The listing properties of a filler dataset (what ``Repo.meta`` holds for served ones)."""
        return {
            "author": rec.id.split("/")[0],
            "tags": list(rec.tags),
            "gated": rec.gated,
            "private": False,
            "disabled": False,
            "downloads": rec.downloads,
            "downloadsAllTime": rec.downloads * 3,
            "likes": rec.likes,
            "trendingScore": rec.likes // 10,
            "createdAt": iso_date(rec.created_day, rec.index % 86400),
            "lastModified": iso_date(rec.modified_day, rec.index % 86400),
            "description": f"Synthetic filler dataset #{rec.index} ({rec.kind}).",
            "cardData": cards.with_split_sizes(cards.card_from_tags(rec.tags), export_split_rows(rec, self.seed)),
            "usedStorage": 1000 + rec.downloads,
        }

    def props(self, i: int) -> dict[str, Any]:
        """All listing properties of dataset ``i`` without building its repo."""
        rec = self.record(i)
        return {"_id": object_id(rec.id), "id": rec.id, **self.meta(rec), "sha": rec.sha,
                "siblings": [{"rfilename": ".gitattributes"}, {"rfilename": "README.md"}]}

    @functools.lru_cache(maxsize=1024)  # noqa: B019 - one filler per server, bounded cache
    def repo(self, i: int) -> Repo:
        """The full repo of dataset ``i`` (export synthesized lazily, on first use)."""
        rec = self.record(i)
        meta = self.meta(rec)
        main = {".gitattributes": BytesBlob(GITATTRIBUTES),
                "README.md": BytesBlob(cards.readme(meta["cardData"], rec.id).encode())}
        export = (lambda: {p: BytesBlob(b, lfs=True) for p, b in export_files(rec, self.seed).items()}) if rec.export else None
        return Repo(rec.id, meta, main_files=main, main_sha=rec.sha, parquet_files=export)


def _text_splits(rec: FillerRecord, seed: int) -> dict[str, list[dict[str, Any]]]:
    """The rows of a text filler's export, split by split (deterministic in ``seed`` and the index)."""
    rng = random.Random(f"filler-export:{seed}:{rec.index}")
    train_rows = _text_rows(rng, rng.randint(30, 60))
    test_rows = _text_rows(rng, rng.randint(10, 20)) + rng.sample(train_rows, 2)  # two planted leaks
    splits = {"train": train_rows, "test": test_rows}
    if rng.random() < 0.5:
        splits["validation"] = _text_rows(rng, 10)
    return splits


def export_files(rec: FillerRecord, seed: int) -> dict[str, bytes]:
    """The Parquet export of a filler dataset: ``{path: bytes}`` in the branch layout."""
    rng = random.Random(f"filler-export:{seed}:{rec.index}")
    modality = _MODALITY[rec.kind]
    if rec.kind == "big_text":
        return {"default/train/0000.parquet": big_text_parquet(), "default/test/0000.parquet": _text_parquet(_text_rows(rng, 20))}
    if modality == "text":
        return {f"default/{split}/0000.parquet": _text_parquet(rows) for split, rows in _text_splits(rec, seed).items()}
    return {f"default/{split}/0000.parquet": _media_or_numbers(rng, modality, n) for split, n in (("train", 20), ("test", 8))}


def export_split_rows(rec: FillerRecord, seed: int) -> dict[str, dict[str, int]] | None:
    """``{config: {split: rows}}`` of the export, as the card's dataset_info states it (text kinds)."""
    if not rec.export or _MODALITY[rec.kind] != "text":
        return None  # like many real cards, the others carry no dataset_info
    if rec.kind == "big_text":
        return {"default": {"train": BIG_ROWS, "test": 20}}
    return {"default": {split: len(rows) for split, rows in _text_splits(rec, seed).items()}}


_TEXT_FEATURES = {"text": pio.value("string"), "label": pio.class_label(["negative", "positive"])}


def _text_rows(rng: random.Random, n: int) -> list[dict[str, Any]]:
    return [{"text": " ".join(rng.choices(_WORDS, k=rng.randint(4, 10))), "label": rng.randint(0, 1)} for _ in range(n)]


def _text_parquet(rows: list[dict[str, Any]]) -> bytes:
    return pio.parquet_bytes(pio.rows_to_columns(rows, list(_TEXT_FEATURES)), _TEXT_FEATURES)


def big_text_parquet() -> bytes:
    """A text+label split of 1.1M rows that stays ~10 kB: long runs of 50 strings compress to nothing."""
    indices = np.arange(BIG_ROWS, dtype=np.int64) * 50 // BIG_ROWS
    words = pa.array([f"row text {k}" for k in range(50)])
    text = pa.DictionaryArray.from_arrays(pa.array(indices.astype(np.int32)), words).dictionary_decode()
    return pio.parquet_bytes({"text": text, "label": pa.array(indices % 2)}, _TEXT_FEATURES)


def _media_or_numbers(rng: random.Random, modality: str, n: int) -> bytes:
    if modality == "tabular":
        features = {"x0": pio.value("float64"), "x1": pio.value("float64"), "target": pio.class_label(["no", "yes"])}
        columns = {"x0": [rng.random() for _ in range(n)], "x1": [rng.random() for _ in range(n)],
                   "target": [rng.randint(0, 1) for _ in range(n)]}
    else:
        name = "image" if modality == "image" else "audio"
        features = {name: pio.media(name.capitalize()), "label": pio.class_label(["a", "b", "c"])}
        columns = {name: [{"bytes": rng.randbytes(32), "path": None} for _ in range(n)],
                   "label": [rng.randint(0, 2) for _ in range(n)]}
    return pio.parquet_bytes(columns, features)
