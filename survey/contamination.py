"""Contamination with benchmarks (method ``bench-2026``): which rows of a surveyed split hold a
benchmark's test items.

The definitions, in words (README, "Contamination with benchmarks"):

- An item's text, and a row's, is its text columns' ``normalized`` profile (``survey/normalize.py``;
  a list's non-NULL elements joined by a space, NULL: nothing), the non-empty ones joined by a space.
  Its words are that text split on spaces.
- A row is contaminated by a benchmark when 13 consecutive words of the row equal 13 consecutive
  words of one of the benchmark's items (a word 13-gram), or, for an item shorter than 13 words,
  when the row's whole text (or one of its text columns' whole text) equals the item's text.
- Each row counts once per benchmark, whatever the number of items or passages it holds.

How, in one paragraph. The index holds each benchmark's normalized items. Every word gets a 64-bit
value (FNV-1a of its UTF-8 bytes) and every 13-gram a 64-bit polynomial hash of its 13 values
(:func:`fnv1a`, :func:`window_hashes`: numpy, the reference). The scan makes one compiled pass over
a batch's bytes (``survey/passages.py``): it folds each character into the profile as it goes (a
row the table cannot fold is normalized in Python and walked again), hashes every 13-word window
of a row with a rolling sum, and keeps the windows whose hash is in the index's key set, and the
texts of 1 to 12 words whose whole hash is a short item's. Those candidates are joined with the
index in DuckDB (which benchmark, item and place) and every one is verified exactly: the row's 13
words, split again by the Arrow and Python path (:func:`words`), are compared with the item's 13
words (a short item: all the words), so no false positive, from a hash collision or from anything
else, reaches the results. The compiled pass replaced an Arrow and numpy pipeline (split into a list
array, Arrow's ``index_in`` against the vocabulary, prefix-sum window hashes, a DuckDB join of every
window's hash) about three times slower; a Bloom filter queried from Python for the key set was
slower than the whole pass (docs/benchmarks.md, "Figures behind the code's choices").

The scan is a pure function of (the rows' text columns, the index): no network, no DB. It runs
inside the survey's measuring job, in ``hubsurvey contamination``, and as Dask tasks
(:func:`dask_scan`).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import re
import stat
import tomllib
from collections import deque
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pa_csv
import pyarrow.json as pa_json
import pyarrow.parquet as pq

from hubsurvey.core import duck
from hubsurvey.core.errors import BadInputError
from hubsurvey.core.safety import read_text_file
from hubsurvey.survey import normalize, passages

METHOD = "bench-2026"
METHOD_VERSION = 1
NGRAM = passages.NGRAM  # words in a matched passage; an item with fewer is matched whole
DEFAULT_EXAMPLES = 5  # examples kept per (split, benchmark)
PASSAGE_CHARS = 200  # a stored passage is cut to this many characters
BATCH_ROWS = 16384  # rows scanned at a time (bounds the scan's memory)
DEFAULT_BENCHMARKS_FILE = Path(__file__).with_name("benchmarks.toml")
_P = np.uint64(passages.WINDOW_BASE)  # the polynomial hash's base (odd)
#: a local benchmark's id: this prefix and its name. A Hub id never holds ':' (owner/name, of letters,
#: digits, '_', '.', '-'), so a local benchmark can never be taken for a Hub dataset, nor a Hub
#: dataset's split for a local benchmark's own test set
LOCAL_PREFIX = "local:"
LOCAL_CONFIG, LOCAL_SPLIT = "default", "test"  # a local file is one test set
LOCAL_FORMATS = {".jsonl": "JSONL", ".ndjson": "JSONL", ".csv": "CSV", ".parquet": "Parquet"}
_LOCAL_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


# --- the benchmarks file ----------------------------------------------------------------------------

@dataclass(frozen=True)
class Benchmark:
    """One benchmark test set: where its items are and which columns are their text."""

    id: str
    config: str
    split: str
    text_columns: tuple[str, ...]
    #: a local benchmark's file (resolved, inside the benchmarks file's folder); None: a Hub dataset
    path: str | None = field(default=None, compare=False)

    @property
    def key(self) -> str:
        return f"{self.id}/{self.config}/{self.split}"

    @property
    def is_local(self) -> bool:
        """A private eval set read from a local file: only its hashes and counts leave the index."""
        return self.id.startswith(LOCAL_PREFIX)

    def as_dict(self) -> dict[str, Any]:
        return {"id": self.id, "config": self.config, "split": self.split, "text_columns": list(self.text_columns)}


def load_benchmarks(path: str | Path | None = None) -> list[Benchmark]:
    """The benchmarks of a TOML file (default: the shipped ``benchmarks.toml``): a list of
    ``[[benchmark]]`` tables, each a Hub test set (``id``, ``config``, ``split``, ``text_columns``)
    or a local file (``path`` relative to the benchmarks file, ``text_columns``, optional ``name``).

    A local file's path must stay inside the benchmarks file's folder (no absolute path, no
    ``..``, no symlink leading out) and end in .jsonl, .csv or .parquet: anything else refuses the
    whole file, in one line naming the entry, before anything is read."""
    path = Path(path) if path is not None else DEFAULT_BENCHMARKS_FILE
    try:
        data = tomllib.loads(read_text_file(path, "benchmarks file", BadInputError))
    except tomllib.TOMLDecodeError as e:
        raise BadInputError(f"{path}: not valid TOML: {e}") from None
    entries = data.get("benchmark")
    if not isinstance(entries, list) or not entries:
        raise BadInputError(f"{path}: no [[benchmark]] table (each needs id, config, split, text_columns; "
                            "or path and text_columns)")
    out: list[Benchmark] = []
    for n, entry in enumerate(entries, start=1):
        where = f"{path}: benchmark {n}"
        if not isinstance(entry, dict):
            raise BadInputError(f"{where}: not a table")
        local = "path" in entry
        missing = [k for k in (("path", "text_columns") if local else ("id", "config", "split", "text_columns"))
                   if k not in entry]
        if missing:
            raise BadInputError(f"{where}: missing {', '.join(missing)}")
        columns = entry["text_columns"]
        if not (isinstance(columns, list) and columns and all(isinstance(c, str) and c for c in columns)):
            raise BadInputError(f"{where}: text_columns must be a non-empty list of column names")
        if local:
            bench = _local_benchmark(entry, where, path.parent, tuple(columns))
        else:
            for k in ("id", "config", "split"):
                if not isinstance(entry[k], str) or not entry[k] or ".." in entry[k] or entry[k].startswith("/"):
                    raise BadInputError(f"{where}: {k} must be a plain name, not {entry[k]!r}")
            if entry["id"].startswith(LOCAL_PREFIX):
                raise BadInputError(f"{where}: {entry['id']!r} names a local benchmark: give its file with path = \"...\"")
            bench = Benchmark(entry["id"], entry["config"], entry["split"], tuple(columns))
        if any(b.key == bench.key for b in out):
            raise BadInputError(f"{where}: {bench.key} is listed twice")
        out.append(bench)
    return out


def _local_benchmark(entry: Mapping[str, Any], where: str, folder: Path, columns: tuple[str, ...]) -> Benchmark:
    """One ``path = ...`` entry, its file resolved inside ``folder`` (else refused in one line)."""
    from pathlib import PurePosixPath

    extra = sorted(set(entry) - {"path", "name", "text_columns"})
    if extra:
        raise BadInputError(f"{where}: a local benchmark takes path, text_columns and name, not {', '.join(extra)}")
    given = entry["path"]
    if not isinstance(given, str) or not given.strip():
        raise BadInputError(f"{where}: path must be a file name relative to the benchmarks file")
    where = f"{where} ({given!r})"
    relative = PurePosixPath(given)
    if relative.is_absolute() or Path(given).is_absolute():
        raise BadInputError(f"{where}: an absolute path; give it relative to the benchmarks file's folder")
    if ".." in relative.parts:
        raise BadInputError(f"{where}: the path goes up with '..'; it must stay inside the benchmarks file's folder")
    root = folder.resolve()
    target = (root / relative).resolve()
    if not target.is_relative_to(root) or target == root:
        raise BadInputError(f"{where}: the path leaves the benchmarks file's folder (through a symlink)")
    if target.suffix.lower() not in LOCAL_FORMATS:
        raise BadInputError(f"{where}: unknown format {target.suffix or '(no suffix)'!r}; "
                            f"a local benchmark is {', '.join(LOCAL_FORMATS)}")
    name = entry.get("name", PurePosixPath(relative.name).stem)
    if not isinstance(name, str) or not _LOCAL_NAME.match(name):
        raise BadInputError(f"{where}: {name!r} is not a plain name (letters, digits, '_', '.', '-'); "
                            "give the benchmark one with name = \"...\"")
    return Benchmark(LOCAL_PREFIX + name, LOCAL_CONFIG, LOCAL_SPLIT, columns, path=str(target))


def read_local(bench: Benchmark) -> tuple[str, pa.Table]:
    """(the sha256 of a local benchmark's file, its rows): the bytes hashed are the bytes parsed, by
    pyarrow's JSON, CSV or Parquet reader (nothing in the file is ever run). Refused in one line
    naming the benchmark: a missing or non-regular file, a path that changed into a symlink since
    the benchmarks file was read, bytes the format's reader refuses, no rows, an unknown column.
    No message quotes the file's content: a private eval set's items never reach a log."""
    where = f"benchmark {bench.id}"
    path = Path(bench.path or "")
    try:
        if path.resolve() != path:
            raise BadInputError(f"{where}: {path.name} changed into a symlink since the benchmarks file was read")
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)  # non-blocking: a FIFO never hangs
    except FileNotFoundError:
        raise BadInputError(f"{where}: no such file {path.name}") from None
    except OSError as e:
        raise BadInputError(f"{where}: cannot open {path.name}: {e.strerror or type(e).__name__}") from None
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            raise BadInputError(f"{where}: {path.name} is not a regular file")
        data = f.read()
    kind = LOCAL_FORMATS[path.suffix.lower()]
    try:
        if kind == "JSONL":
            table = pa_json.read_json(pa.BufferReader(data))
        elif kind == "CSV":  # text columns as text ("007" stays "007"), the others as pyarrow infers
            table = pa_csv.read_csv(pa.BufferReader(data), convert_options=pa_csv.ConvertOptions(
                column_types={c: pa.string() for c in bench.text_columns}))
        else:
            table = pq.read_table(pa.BufferReader(data))
    except (pa.ArrowException, OSError, ValueError) as e:
        raise BadInputError(f"{where}: {path.name} is not valid {kind} ({_cause(e)})") from None
    missing = [c for c in bench.text_columns if c not in table.column_names]
    if missing:
        names = [n[:40] for n in table.column_names[:20]]
        raise BadInputError(f"{where}: no column {', '.join(missing)} in {path.name} (has: {', '.join(names)})")
    if table.num_rows == 0:
        raise BadInputError(f"{where}: {path.name} holds no items")
    return hashlib.sha256(data).hexdigest(), table


def _cause(e: BaseException) -> str:
    """A reader's error without the content it quotes: pyarrow ends a CSV error with the offending
    line ("CSV parse error: Expected 2 columns, got 3: <line>"), so only its first two parts are kept."""
    first = (str(e).strip().splitlines() or [type(e).__name__])[0]
    return ": ".join(first.split(": ")[:2])


def index_local(bench: Benchmark) -> IndexedBenchmark:
    """A local benchmark indexed: its normalized items, its revision the file's sha256."""
    sha, table = read_local(bench)
    return IndexedBenchmark(bench, sha, items_from_columns([table.column(c) for c in bench.text_columns]))


# --- texts --------------------------------------------------------------------------------------------

def _python_text(value: Any) -> str:
    """The text of one value the vectorized paths do not take (a struct, a list with NULLs)."""
    if value is None:
        return ""
    if isinstance(value, str):
        return normalize.normalize_text(value)
    if isinstance(value, Mapping):
        value = list(value.values())
    if isinstance(value, (list, tuple)):
        return " ".join(t for t in (_python_text(v) for v in value) if t)
    return ""  # a number inside a struct is not text


def joinable(values: pa.Array | pa.ChunkedArray) -> pa.Array:
    """Each value as one string, not yet normalized: a string as it is, a list's non-NULL elements
    joined by a space, NULL: the empty string (a struct: its strings, normalized, in order)."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks() if values.num_chunks != 1 else values.chunk(0)
    t = values.type
    if pa.types.is_dictionary(t):
        return joinable(values.dictionary_decode())
    if pa.types.is_large_string(t) or pa.types.is_string_view(t):
        values, t = values.cast(pa.string()), pa.string()
    if pa.types.is_string(t):
        out = values
    elif (pa.types.is_list(t) or pa.types.is_large_list(t)) and _is_string(t.value_type):
        if values.values.null_count:
            out = pa.array([None if v is None else " ".join(x for x in v if x is not None) for v in values.to_pylist()],
                           type=pa.string())
        else:
            out = pc.binary_join(values.cast(pa.list_(pa.string())), " ")
    else:
        out = pa.array([_python_text(v) for v in values.to_pylist()], type=pa.string())
    return pc.fill_null(out, "")


def _is_string(t: pa.DataType) -> bool:
    return pa.types.is_string(t) or pa.types.is_large_string(t)


def join_texts(parts: Sequence[pa.Array]) -> pa.Array:
    """The non-empty strings of each row joined by a space."""
    text = parts[0]
    for part in parts[1:]:
        joined = pc.binary_join_element_wise(text, part, " ")
        text = pc.if_else(pc.equal(text, ""), part, pc.if_else(pc.equal(part, ""), text, joined))
    return text


def lowered(raw: pa.Array) -> pa.Array:
    """Each string with its ``normalized`` profile's words separated by ASCII whitespace (not yet
    collapsed): an ASCII string's profile is its lower case (NFKC changes nothing, casefold is
    lower); the others are normalized in Python."""
    low = pc.ascii_lower(raw)
    # Python's whitespace holds four ASCII characters that Arrow's ASCII split (and the kernel) do
    # not (\x1c-\x1f): a string holding one takes the slow path, whose result has only single spaces
    others = pc.invert(pc.string_is_ascii(raw))
    if _has_control_separators(raw):  # rare: the regex runs only when some byte is one of them
        others = pc.or_(others, pc.match_substring_regex(raw, "[\x1c-\x1f]"))
    if pc.any(others).as_py():
        slow = [normalize.normalize_text(s) for s in pc.filter(raw, others).to_pylist()]
        low = pc.replace_with_mask(low, others, pa.array(slow, low.type))
    return low


def _has_control_separators(raw: pa.Array) -> bool:
    """Whether any string's bytes hold one of \x1c-\x1f (a byte test over the data buffer)."""
    if isinstance(raw, pa.ChunkedArray):
        return any(_has_control_separators(chunk) for chunk in raw.chunks)
    data = raw.buffers()[2]
    if data is None:
        return False
    offsets = np.frombuffer(raw.buffers()[1], dtype=np.int64 if pa.types.is_large_string(raw.type) else np.int32)
    used = np.frombuffer(data, dtype=np.uint8)[offsets[raw.offset]:offsets[raw.offset + len(raw)]]
    return bool(np.any((used >= 0x1C) & (used <= 0x1F)))


def words(raw: pa.Array) -> pa.Array:
    """The words of each string's ``normalized`` profile, ``normalize_text(s).split()``, as a list array
    (:func:`lowered`, split on ASCII whitespace)."""
    # (a split keeps an empty word for whitespace at either end, trimmed first, and gives an empty
    # string one empty word: no words)
    trimmed = pc.ascii_trim_whitespace(lowered(raw))
    empty = pc.equal(trimmed, "")
    if not pc.any(empty).as_py():
        return pc.ascii_split_whitespace(trimmed)
    split = pc.ascii_split_whitespace(pc.if_else(empty, pa.scalar(None, pa.string()), trimmed))
    return pc.fill_null(split, pa.scalar([], pa.list_(pa.string())))


def row_texts(columns: Sequence[pa.Array | pa.ChunkedArray]) -> list[str]:
    """Each row's normalized text (its columns' texts joined by a space): its words joined by a
    space, as ``normalize_text`` gives it."""
    if not columns:
        raise ValueError("no text column")
    return pc.binary_join(words(join_texts([joinable(c) for c in columns])), " ").to_pylist()


_CHUNK = 1 << 20  # window_hashes works on this many words at a time (the size of its power tables)
_P_INV = np.uint64(pow(int(_P), -1, 2**64))
_POWERS: tuple[np.ndarray, np.ndarray] | None = None


def _powers() -> tuple[np.ndarray, np.ndarray]:
    """P^j and P^-j mod 2^64 for j < _CHUNK + NGRAM (computed once per process)."""
    global _POWERS
    if _POWERS is None:
        n = _CHUNK + NGRAM
        with np.errstate(over="ignore"):
            up = np.cumprod(np.full(n, _P, dtype=np.uint64))
            down = np.cumprod(np.full(n, _P_INV, dtype=np.uint64))
        one = np.ones(1, dtype=np.uint64)
        _POWERS = (np.concatenate([one, up[:-1]]), np.concatenate([one, down[:-1]]))
    return _POWERS


def window_hashes(values: np.ndarray, n: int = NGRAM) -> np.ndarray:
    """h[s] = sum over k < n of values[s + k] * P^k mod 2^64, for every s <= len - n; from prefix sums
    (4 passes over the values, whatever n), a chunk of words at a time."""
    m = len(values) - n + 1
    if m <= 0:
        return np.zeros(0, dtype=np.uint64)
    up, down = _powers()
    out = np.empty(m, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for start in range(0, m, _CHUNK):
            stop = min(m, start + _CHUNK)  # windows start..stop-1 read values start..stop+n-2
            v = values[start:stop + n - 1]
            prefix = np.zeros(len(v) + 1, dtype=np.uint64)
            np.cumsum(v * up[:len(v)], out=prefix[1:])
            out[start:stop] = (prefix[n:n + stop - start] - prefix[:stop - start]) * down[:stop - start]
    return out


def fnv1a(word: str) -> int:
    """A word's value: FNV-1a (64 bits) of its UTF-8 bytes."""
    h = passages.FNV_OFFSET
    for byte in word.encode("utf-8"):
        h = ((h ^ byte) * passages.FNV_PRIME) & 0xFFFFFFFFFFFFFFFF
    return h


def whole_hashes(values: np.ndarray, row_words: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(the texts of 1 to 12 words, the hash of each one's words: sum of value * P^k)."""
    lengths = np.diff(row_words)
    short = np.flatnonzero((lengths > 0) & (lengths < NGRAM))
    first = row_words[short]
    h = np.zeros(len(short), dtype=np.uint64)
    up, _ = _powers()
    with np.errstate(over="ignore"):
        for k in range(NGRAM - 1):
            live = lengths[short] > k
            h[live] += values[first[live] + k] * up[k]
    return short, h


# --- the index ---------------------------------------------------------------------------------------

@dataclass
class IndexedBenchmark:
    """One benchmark as indexed: where it came from (its revision) and its normalized items."""

    benchmark: Benchmark
    revision_sha: str | None
    items: list[str]  # normalized item texts, in the split's row order (item index = position)
    parquet_sha: str | None = None

    def describe(self) -> dict[str, Any]:
        words = [len(t.split(" ")) if t else 0 for t in self.items]
        return {**self.benchmark.as_dict(), "revision_sha": self.revision_sha, "parquet_sha": self.parquet_sha,
                "items": len(self.items), "short_items": sum(0 < w < NGRAM for w in words),
                "empty_items": sum(w == 0 for w in words)}


@dataclass
class BenchmarkIndex:
    """The benchmarks' items and their 13-gram hashes. Built from the items alone, so the saved
    form (:meth:`save`) is the items, and every hash is computed again where it is loaded.

    ``hash_bits`` below 64 keeps only that many bits of each hash for the candidate join: many
    more candidates (a test forces false ones this way), the same verified results.
    """

    benchmarks: list[IndexedBenchmark]
    hash_bits: int = 64
    grams: pa.Table = field(init=False, repr=False)  # h, key, bench, item, pos (one row per (bench, h)), by key
    shorts: pa.Table = field(init=False, repr=False)  # key (the whole text's hash), bench, item; by key
    gram_keys: passages.KeySet = field(init=False, repr=False)  # the grams' keys, for the compiled pass
    short_keys: passages.KeySet = field(init=False, repr=False)
    gram_sorted_keys: np.ndarray = field(init=False, repr=False)
    gram_bench: np.ndarray = field(init=False, repr=False)
    gram_item: np.ndarray = field(init=False, repr=False)
    gram_pos: np.ndarray = field(init=False, repr=False)
    short_sorted_keys: np.ndarray = field(init=False, repr=False)
    short_bench: np.ndarray = field(init=False, repr=False)
    short_item: np.ndarray = field(init=False, repr=False)
    item_flat: pa.Array = field(init=False, repr=False)
    item_starts: np.ndarray = field(init=False, repr=False)
    item_base: np.ndarray = field(init=False, repr=False)
    item_words: list[list[list[str]]] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.item_words = [[t.split(" ") if t else [] for t in b.items] for b in self.benchmarks]
        value_of = {w: fnv1a(w) for bench in self.item_words for item in bench for w in item}
        lists = [item for bench in self.item_words for item in bench]
        bench_of = np.repeat(np.arange(len(self.benchmarks), dtype=np.int32), [len(b) for b in self.item_words])
        item_of = np.concatenate([np.arange(len(b), dtype=np.int32) for b in self.item_words] or [np.zeros(0, np.int32)])
        lengths = np.array([len(item) for item in lists], dtype=np.int64)
        # every 13-gram of the long items, all items at once (windows across two items are dropped)
        flat = pa.array([w for item in lists for w in item], pa.string())
        ends = np.cumsum(lengths)
        values = np.array([value_of[w] for item in lists for w in item], dtype=np.uint64)
        h = window_hashes(values)
        item_at = np.searchsorted(ends, np.arange(len(h)), side="right")  # the item each window starts in
        keep = np.flatnonzero(np.arange(len(h)) + NGRAM <= ends[item_at]) if len(h) else np.zeros(0, np.int64)
        starts = ends - lengths
        self.item_flat = flat  # every item's words, benchmark by benchmark, item by item
        self.item_starts = starts  # where each item's words start in item_flat (items numbered across benchmarks)
        self.item_base = np.concatenate([[0], np.cumsum([len(b) for b in self.item_words])]).astype(np.int64)
        grams = pa.table({"h": h[keep], "bench": bench_of[item_at[keep]], "item": item_of[item_at[keep]],
                          "pos": (keep - starts[item_at[keep]]).astype(np.int32)})
        short, short_h = whole_hashes(values, np.concatenate([[0], ends]))
        con = duck.connect()
        try:
            con.register("g", grams)
            # one row per (benchmark, hash): the first item holding the passage (verification
            # compares words, so any item holding it proves it); key: the bits the join compares
            self.grams = con.sql(
                "SELECT h, (h & $mask)::UBIGINT AS key, bench, min(item) AS item, arg_min(pos, item) AS pos "
                "FROM g GROUP BY h, bench ORDER BY key, bench, h", params={"mask": self.mask}).to_arrow_table()
        finally:
            con.close()
        self.shorts = pa.table({"key": short_h & np.uint64(self.mask), "bench": bench_of[short],
                                "item": item_of[short]}).sort_by([("key", "ascending"), ("bench", "ascending"),
                                                                  ("item", "ascending")])
        self.gram_keys = passages.KeySet.of(self.grams.column("key").to_numpy())
        self.short_keys = passages.KeySet.of(self.shorts.column("key").to_numpy())
        # the same as numpy arrays, for the candidates' join (sorted by key)
        self.gram_sorted_keys = self.grams.column("key").to_numpy()
        self.gram_bench, self.gram_item, self.gram_pos = (self.grams.column(n).to_numpy().astype(np.int64)
                                                          for n in ("bench", "item", "pos"))
        self.short_sorted_keys = self.shorts.column("key").to_numpy()
        self.short_bench, self.short_item = (self.shorts.column(n).to_numpy().astype(np.int64) for n in ("bench", "item"))

    @property
    def mask(self) -> int:
        return (1 << self.hash_bits) - 1

    def describe(self) -> list[dict[str, Any]]:
        return [b.describe() for b in self.benchmarks]

    # --- the saved form: a folder with index.json and one Parquet file of items per benchmark ------

    def save(self, folder: str | Path) -> Path:
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        entries = []
        for n, b in enumerate(self.benchmarks):
            name = f"items-{n:04d}.parquet"  # never a Hub name: the path stays inside the folder
            pq.write_table(pa.table({"text": pa.array(b.items, pa.string())}), folder / name)
            entries.append({**b.benchmark.as_dict(), "revision_sha": b.revision_sha, "parquet_sha": b.parquet_sha,
                            "items_file": name})
        (folder / "index.json").write_text(json.dumps({"method": METHOD, "method_version": METHOD_VERSION,
                                                       "hash_bits": self.hash_bits, "benchmarks": entries}, indent=1))
        return folder

    @classmethod
    def load(cls, folder: str | Path) -> BenchmarkIndex:
        folder = Path(folder)
        meta = json.loads((folder / "index.json").read_text())
        benchmarks = []
        for e in meta["benchmarks"]:
            path = (folder / e["items_file"]).resolve()
            if not path.is_relative_to(folder.resolve()):
                raise BadInputError(f"{folder}: index entry {e['items_file']!r} leaves the index folder")
            items = pq.read_table(path).column("text").to_pylist()
            bench = Benchmark(e["id"], e["config"], e["split"], tuple(e["text_columns"]))
            benchmarks.append(IndexedBenchmark(bench, e["revision_sha"], items, e.get("parquet_sha")))
        return cls(benchmarks, hash_bits=int(meta.get("hash_bits", 64)))


def items_from_columns(columns: Sequence[pa.Array | pa.ChunkedArray]) -> list[str]:
    """A benchmark's normalized item texts from its text columns (the same text as a row's)."""
    return row_texts(columns)


def index_from_tables(tables: Sequence[tuple[Benchmark, str | None, pa.Table]], hash_bits: int = 64) -> BenchmarkIndex:
    """An index from in-memory tables: ``(benchmark, revision, table with its text columns)``."""
    out = []
    for bench, revision, table in tables:
        missing = [c for c in bench.text_columns if c not in table.column_names]
        if missing:
            raise BadInputError(f"benchmark {bench.key}: no column {', '.join(missing)} "
                                f"(has: {', '.join(table.column_names)})")
        out.append(IndexedBenchmark(bench, revision, items_from_columns([table.column(c) for c in bench.text_columns])))
    return BenchmarkIndex(out, hash_bits=hash_bits)


def index_from_hub(benchmarks: Sequence[Benchmark], client: Any, *, hash_bits: int = 64,
                   log: Any = None) -> tuple[BenchmarkIndex, list[tuple[Benchmark, str]]]:
    """Download and index each benchmark through the Hub client (its Parquet branch, pinned to one
    commit, like a survey job; the files are deleted once read); a local benchmark is read from
    its file (:func:`index_local`), never through the client. Returns the index and the
    benchmarks that could not be indexed, each with its one-line reason: the others are indexed."""
    from hubsurvey.core.errors import HubsurveyError, HubUnreachableError, one_line
    from hubsurvey.core.hub import branch_split, delete_files

    indexed: list[IndexedBenchmark] = []
    failed: list[tuple[Benchmark, str]] = []
    for bench in benchmarks:
        paths: list[str] = []
        try:
            if bench.is_local:
                indexed.append(index_local(bench))
                continue
            revision = client.dataset_info(bench.id).sha
            parquet_sha = client.parquet_sha(bench.id)
            files = sorted(f.path for f in client.parquet_tree(bench.id, revision=parquet_sha)
                           if _in_split(f.path, bench.config, bench.split, branch_split))
            if not files:
                raise BadInputError(f"benchmark {bench.key}: no Parquet files for config {bench.config!r} split "
                                    f"{bench.split!r} on its Parquet branch")
            paths = [str(client.download(bench.id, path, parquet_sha)) for path in files]
            table = pa.concat_tables(_read_columns(p, bench) for p in paths)
            items = items_from_columns([table.column(c) for c in bench.text_columns])
            indexed.append(IndexedBenchmark(bench, revision, items, parquet_sha))
        except HubUnreachableError:
            raise  # the Hub cannot be reached at all: no benchmark can be (exit 4)
        except (HubsurveyError, OSError, pa.ArrowException, ValueError) as e:
            failed.append((bench, one_line(e)))
            if log is not None:
                log.warning("benchmark %s not indexed: %s", bench.key, one_line(e))
        except Exception as e:  # a Hub error (huggingface_hub): the benchmark is skipped, never the run
            if type(e).__module__.split(".")[0] not in ("huggingface_hub", "httpx2"):
                raise
            failed.append((bench, one_line(e)))
        finally:
            delete_files(paths)
    return BenchmarkIndex(indexed, hash_bits=hash_bits), failed


def _in_split(path: str, config: str, split: str, branch_split: Any) -> bool:
    parts = path.split("/")
    return len(parts) == 3 and parts[0] == config and branch_split(parts[1]) == split


def _read_columns(path: str, bench: Benchmark) -> pa.Table:
    schema = pq.read_schema(path)
    missing = [c for c in bench.text_columns if c not in schema.names]
    if missing:
        raise BadInputError(f"benchmark {bench.key}: no column {', '.join(missing)} (has: {', '.join(schema.names)})")
    return pq.read_table(path, columns=list(bench.text_columns))


# --- the scan (pure) ---------------------------------------------------------------------------------

@dataclass
class Found:
    """What a scan found for one benchmark: its contaminated rows (each once) and how."""

    bench: int
    rows: set[int] = field(default_factory=set)
    examples: dict[int, dict[str, Any]] = field(default_factory=dict)  # position -> first match
    candidates: int = 0  # (row position, item passage) candidates from the hash join
    verified: int = 0  # those whose words (or text) are equal: the rest were false candidates

    def add(self, position: int, item: int, passage: str, how: str, limit: int) -> None:
        if position in self.rows:
            return
        self.rows.add(position)
        if limit > 0 and (len(self.examples) < limit or position < max(self.examples)):
            self.examples[position] = {"position": position, "item": item, "match": how,
                                       "passage": passage[:PASSAGE_CHARS] + ("…" if len(passage) > PASSAGE_CHARS else "")}
            if len(self.examples) > limit:
                del self.examples[max(self.examples)]

    def summary(self) -> dict[str, Any]:
        return {"contaminated_rows": len(self.rows), "examples": [self.examples[p] for p in sorted(self.examples)],
                "candidates": self.candidates, "verified": self.verified}


def scan(columns: Sequence[pa.Array | pa.ChunkedArray], index: BenchmarkIndex, *, offset: int = 0,
         examples: int = DEFAULT_EXAMPLES, found: list[Found] | None = None) -> list[Found]:
    """Scan rows (their text columns, aligned) against every benchmark of the index.

    ``offset`` is the first row's position in its split (batches of one split); pass the previous
    batch's ``found`` to accumulate. Returns one :class:`Found` per benchmark, in index order.
    """
    found = found if found is not None else [Found(b) for b in range(len(index.benchmarks))]
    if not columns or len(columns[0]) == 0:
        return found
    parts = [joinable(col) for col in columns]
    text = join_texts(parts)
    row = passages.scan_texts(text, index.gram_keys, index.short_keys, index.mask)
    _verify_grams(text, row, index, offset, examples, found)
    units = [(text, row)]
    if len(parts) > 1:  # a text column on its own can equal a short item too
        units += [(p, passages.scan_texts(p, None, index.short_keys, index.mask)) for p in parts]
    _verify_whole(units, index, offset, examples, found)
    return found


def _matching(sorted_keys: np.ndarray, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every (i, j) with keys[i] == sorted_keys[j], by i then j: the candidates' join with the index
    (a few per batch: two binary searches each)."""
    lo = np.searchsorted(sorted_keys, keys, side="left")
    n = np.searchsorted(sorted_keys, keys, side="right") - lo
    i = np.repeat(np.arange(len(keys)), n)
    j = np.repeat(lo, n) + (np.arange(len(i)) - np.repeat(np.cumsum(n) - n, n))
    return i, j


def _words_of(texts: pa.Array, rows: np.ndarray) -> tuple[pa.Array, np.ndarray]:
    """(the words of the given rows, flat; where each one's words start: len(rows) + 1 offsets)."""
    split = words(texts.take(pa.array(rows, pa.int64())))
    return pc.list_flatten(split), np.asarray(split.offsets).astype(np.int64)


def _verify_grams(text: pa.Array, row: passages.Passes, index: BenchmarkIndex,
                  offset: int, examples: int, found: list[Found]) -> None:
    """Rows holding 13 consecutive words of an item: the pass's candidate windows, joined with the
    index on their key (which benchmark, item and place), then verified word for word."""
    if index.grams.num_rows == 0 or not len(row.hit_row):
        return
    at, g = _matching(index.gram_sorted_keys, row.hit_key)
    if not len(at):
        return
    bench, item, pos = index.gram_bench[g], index.gram_item[g], index.gram_pos[g]
    for b, n in enumerate(np.bincount(bench, minlength=len(found))):
        found[b].candidates += int(n)
    rows, first_word = row.hit_row[at], row.hit_word[at]
    # exact verification, all candidates at once: the row's 13 words (its profile, split again by
    # the reference path) equal the item's 13 words
    candidate_rows = np.unique(rows)
    flat, starts = _words_of(text, candidate_rows)
    local = np.searchsorted(candidate_rows, rows)
    inside = np.flatnonzero(first_word + NGRAM <= starts[local + 1] - starts[local])
    span = np.arange(NGRAM)
    word_at = starts[local[inside]] + first_word[inside]
    got = flat.take(pa.array((word_at[:, None] + span).ravel()))
    item_at = index.item_starts[index.item_base[bench[inside]] + item[inside]] + pos[inside]
    want = index.item_flat.take(pa.array((item_at[:, None] + span).ravel()))
    equal = pc.fill_null(pc.equal(got, want), False).to_numpy(zero_copy_only=False).reshape(-1, NGRAM).all(axis=1)
    ok = inside[equal]
    for b, n in enumerate(np.bincount(bench[ok], minlength=len(found))):
        found[b].verified += int(n)
    # each (benchmark, row) once: its first passage (the candidates are in row order)
    key = bench[ok] * (int(rows.max()) + 1) + rows[ok]
    _, first = np.unique(key, return_index=True)
    for k in ok[np.sort(first)]:
        b, r = int(bench[k]), int(rows[k])
        f = found[b]
        if offset + r in f.rows:
            continue
        start = int(starts[local[k]] + first_word[k])
        f.add(offset + r, int(item[k]), " ".join(flat.slice(start, NGRAM).to_pylist()), "13-gram", examples)


def _verify_whole(units: Sequence[tuple[pa.Array, passages.Passes]],
                  index: BenchmarkIndex, offset: int, examples: int, found: list[Found]) -> None:
    """Rows whose whole text (or one text column's) equals an item shorter than 13 words: the
    pass's candidates (texts of 1 to 12 words whose hash is an item's), then word for word."""
    if index.shorts.num_rows == 0 or not any(len(p.whole_row) for _, p in units):
        return
    rows = np.concatenate([p.whole_row for _, p in units])
    unit_of = np.concatenate([np.full(len(p.whole_row), u, np.int64) for u, (_, p) in enumerate(units)])
    at, s = _matching(index.short_sorted_keys, np.concatenate([p.whole_key for _, p in units]))
    short_bench, short_item = index.short_bench[s], index.short_item[s]
    order = np.lexsort((unit_of[at], short_item, short_bench, rows[at]))  # by row, benchmark, item, unit
    hits = zip(rows[at][order].tolist(), unit_of[at][order].tolist(), short_bench[order].tolist(),
               short_item[order].tolist())
    texts: dict[int, dict[int, list[str]]] = {}  # unit -> row -> words (the reference path's)
    for u, (unit_text, p) in enumerate(units):
        if len(p.whole_row):
            flat, starts = _words_of(unit_text, p.whole_row)
            listed = flat.to_pylist()
            texts[u] = {int(r): listed[starts[j]:starts[j + 1]] for j, r in enumerate(p.whole_row.tolist())}
    for r, u, b, i in hits:
        f = found[b]
        f.candidates += 1
        got = texts[u][r]
        if got == index.item_words[b][i]:  # exact verification: the same words, all of them
            f.verified += 1
            f.add(offset + int(r), int(i), " ".join(got), "whole", examples)


# --- scanning a split's files -------------------------------------------------------------------------

def iter_batches(files: Sequence[str], columns: Sequence[str], batch_rows: int = BATCH_ROWS,
                 table: pa.Table | None = None) -> Iterator[list[pa.Array]]:
    """The text columns of a split, in row order (its files in order), ``batch_rows`` at a time."""
    if table is not None:
        for start in range(0, table.num_rows, batch_rows):
            part = table.slice(start, batch_rows)
            yield [part.column(c) for c in columns]
        return
    for path in files:
        parquet = pq.ParquetFile(path)
        names = parquet.schema_arrow.names
        picked = [names.index(c) for c in columns]
        for batch in parquet.iter_batches(batch_size=batch_rows, columns=list(columns)):
            yield [batch.column(i) for i in range(len(picked))]


def scan_batches(batches: Iterable[list[pa.Array]], index: BenchmarkIndex, *, examples: int = DEFAULT_EXAMPLES,
                 threads: int | None = None) -> tuple[int, list[Found]]:
    """(rows, found per benchmark) over one split's batches, in order, ``threads`` batches at a time
    (default: one per core, at most 4): the compiled pass, Arrow and numpy release the GIL, so
    batches overlap; at most ``threads + 1`` batches are held at once. A split of one batch (most
    are) is scanned in the calling thread: starting threads would cost more than some scans."""
    from concurrent.futures import ThreadPoolExecutor

    workers = threads or min(4, os.cpu_count() or 1)
    found: list[Found] = [Found(b) for b in range(len(index.benchmarks))]
    batches = iter(batches)
    ahead = [b for b in (next(batches, None), next(batches, None)) if b is not None]
    rows = 0
    if len(ahead) < 2 or workers == 1:
        for batch in itertools.chain(ahead, batches):
            scan(batch, index, offset=rows, examples=examples, found=found)
            rows += len(batch[0]) if batch else 0
        return rows, found
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="bench-scan") as pool:
        pending: deque = deque()
        for batch in itertools.chain(ahead, batches):
            pending.append(pool.submit(scan, batch, index, offset=rows, examples=examples))
            rows += len(batch[0]) if batch else 0
            while len(pending) > workers:
                found = merge([found, pending.popleft().result()], examples)
        while pending:
            found = merge([found, pending.popleft().result()], examples)
    return rows, found


def scan_split(files: Sequence[str], columns: Sequence[str], index: BenchmarkIndex, *,
               examples: int = DEFAULT_EXAMPLES, table: pa.Table | None = None,
               batch_rows: int = BATCH_ROWS, threads: int | None = None) -> tuple[int, list[Found]]:
    """(rows, found per benchmark) for one split's files (or an in-memory table)."""
    return scan_batches(iter_batches(files, columns, batch_rows, table), index, examples=examples, threads=threads)


def merge(parts: Iterable[list[Found]], examples: int = DEFAULT_EXAMPLES) -> list[Found]:
    """The found of one split from the found of its batches (their positions already absolute)."""
    out: list[Found] | None = None
    for part in parts:
        if out is None:
            out = [Found(f.bench) for f in part]
        for total, f in zip(out, part):
            total.candidates += f.candidates
            total.verified += f.verified
            for position in sorted(f.rows):
                ex = f.examples.get(position)
                if ex is None:
                    total.rows.add(position)
                else:
                    total.add(position, ex["item"], ex["passage"], ex["match"], examples)
    return out or []


def _scan_part(columns: list[pa.Array], index: BenchmarkIndex, offset: int, examples: int) -> list[Found]:
    return scan(columns, index, offset=offset, examples=examples)


def dask_scan(client: Any, batches: Iterable[list[pa.Array]], index: BenchmarkIndex,
              examples: int = DEFAULT_EXAMPLES) -> list[Found]:
    """The 13-gram scan of one split's batches as Dask tasks (one per batch), merged: the same
    result as :func:`scan` over the whole split. The index is scattered to the workers once."""
    shared = client.scatter(index, broadcast=True)
    futures, offset = [], 0
    for batch in batches:
        futures.append(client.submit(_scan_part, batch, shared, offset, examples, pure=False))
        offset += len(batch[0])
    return merge(client.gather(futures), examples)


# --- one surveyed config: the rows of the contamination table ------------------------------------------

_LOADED: dict[tuple[str, float], BenchmarkIndex] = {}


def load_index(folder: str | Path) -> BenchmarkIndex:
    """The saved index at ``folder``, loaded once per process (a worker's jobs share it)."""
    meta = Path(folder) / "index.json"
    key = (str(meta.resolve()), meta.stat().st_mtime)
    if key not in _LOADED:
        _LOADED.clear()
        _LOADED[key] = BenchmarkIndex.load(folder)
    return _LOADED[key]


def is_own_split(bench: Benchmark, dataset_id: str, config: str, split_name: str) -> bool:
    """Whether a surveyed split is the benchmark's own test set (it is not checked against itself)."""
    return bench.id == dataset_id and bench.config == config and bench.split == split_name


def config_rows(data: Any, text_columns: Sequence[str], index: BenchmarkIndex, *, run_id: str | None = None,
                examples: int = DEFAULT_EXAMPLES, threads: int | None = None) -> list[dict[str, Any]]:
    """The contamination rows of one surveyed config (a ``survey.sources.ConfigData``): one per
    (split, benchmark), contaminated or not, with up to ``examples`` examples and the provenance."""
    from hubsurvey import __version__
    from hubsurvey.core.splits import CANONICAL_SPLITS
    from hubsurvey.core.store import now

    measured_at = now()
    out = []
    for canonical in CANONICAL_SPLITS:
        split = data.splits.get(canonical)
        if split is None:
            continue
        rows, found = scan_split(split.files, text_columns, index, examples=examples, table=split.table,
                                 threads=threads)
        for f in found:
            b = index.benchmarks[f.bench]
            if is_own_split(b.benchmark, data.dataset_id, data.config, split.source_name):
                continue
            got = f.summary()
            out.append({
                "dataset_id": data.dataset_id, "revision_sha": data.revision_sha, "config": data.config,
                "split": canonical, "split_name": split.source_name, "rows_split": rows,
                "text_columns": list(text_columns),
                "benchmark_id": b.benchmark.id, "benchmark_config": b.benchmark.config,
                "benchmark_split": b.benchmark.split, "benchmark_revision": b.revision_sha,
                "contaminated_rows": got["contaminated_rows"],
                "contaminated_pct": 100.0 * got["contaminated_rows"] / rows if rows else None,
                "examples": json.dumps(got["examples"], ensure_ascii=False),
                "candidates": got["candidates"], "verified": got["verified"],
                "method": METHOD, "method_version": METHOD_VERSION, "tool_version": __version__,
                "measured_at": measured_at, "run_id": run_id,
            })
    return out
