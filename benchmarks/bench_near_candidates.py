"""Benchmark: MinHash-LSH candidates for the near-duplicate method (near-2026), side by side on the same shingles.

    python benchmarks/bench_near_candidates.py [--rows 1000000] [--out /tmp/hubsurvey-bench]
        [--bands 40 --band-rows 5] [--timeout 600] [--only numpy-oph,rensa-flags,...]

The dataset is ``near_data.generate_near``'s: the engine benchmark's 1M rows (800k / 100k / 100k) with
near-duplicates planted at known pairs (``truth.json``). Every candidate runs END TO END in its own
subprocess (so each peak RSS is its own): read the text column, normalize it (NEAR_SPEC), cut it into
character 5-gram shingles hashed to uint64 (one numpy function, the same for every candidate), compute
MinHash signatures, find LSH candidate pairs, and verify EVERY candidate pair with the exact Jaccard of
its shingle sets (plain Python sets of the shingle strings, the definition), so precision is 1.
Only the pairs the figures need are looked for: test-train, validation-train, test-validation and
test-test (never train-train nor validation-validation). The candidates:

- ``datasketch``: ``MinHash.generator`` (its bulk path) and ``MinHashLSH`` with the same bands (the baseline);
- ``rensa-flags``: rensa's ``RMinHash.digest_matrix_from_flat_token_hashes`` (Rust) and ``RMinHashLSH``:
  the index holds the validation and test rows (``insert_matrix``), train chunks are screened with
  ``query_duplicate_flags_matrix_one_shot``, and only the flagged rows' digests are ever brought back to
  Python (``to_rows`` is slow: about 35 ns per value) to list the pairs;
- ``rensa-rows``: the same digests brought back whole with ``to_rows``, then the numpy banding below;
- ``numpy-oph``: one-permutation hashing (K bins, O(shingles)) with optimal densification, numpy banding;
- ``numpy-kperm``: the textbook K-permutation MinHash in numpy (O(shingles x K)), numpy banding;
- ``duckdb-sql``: one-permutation hashing, rotation densification and banding written as DuckDB SQL
  over a (row, shingle hash) table; the band join in SQL too.

The numpy banding keeps only the validation and test rows' band keys (sorted, with a bitmap in front)
and streams train through it in chunks, so memory does not grow with train. Prints one table: wall
seconds, rows/s, peak RSS, candidate pairs, verified pairs at J >= 0.8 and recall on the planted pairs
at J >= 0.8 and 0.6. The targets: >= 50,000 rows/s end to end, peak RSS <= 1.5 GB.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))
from near_data import SHINGLE_SIZE, generate_near

CANDIDATES = ("datasketch", "rensa-flags", "rensa-rows", "numpy-oph", "numpy-kperm", "duckdb-sql")
SEED = 42
VERIFY_MIN_J = 0.6  # the lowest threshold of the curve: verified pairs below it are dropped
EMPTY = np.uint32(0xFFFFFFFF)
U = np.uint64
M1, M2, GOLDEN = U(0xBF58476D1CE4E5B9), U(0x94D049BB133111EB), U(0x9E3779B97F4A7C15)
WINDOW_MULTIPLIERS = [U(x) for x in (0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9,
                                     0xD6E8FEB86659FD93, 0xFF51AFD7ED558CCD, 0xC4CEB9FE1A85EC53)]
SEPARATOR = 0x200000  # above every code point: marks the gap between two texts


@dataclass
class Params:
    bands: int = 40
    band_rows: int = 5
    chunk: int = 20_000  # rows per streamed chunk
    threads: int = 2  # 2: a worker thread sketches a chunk while the main thread reads the next; 1: no worker
    n: int = SHINGLE_SIZE

    @property
    def perms(self) -> int:
        return self.bands * self.band_rows


@dataclass
class Timer:
    stages: dict = field(default_factory=dict)

    def add(self, stage: str, since: float) -> float:
        now = time.perf_counter()
        self.stages[stage] = self.stages.get(stage, 0.0) + now - since
        return now


TIMER = Timer()


# ---------------------------------------------------------------- shared: data, text, shingles, verification

def normalize(s: str | None) -> str:
    """NEAR_SPEC's text of a one-string-column row: ``normalize_text``; ASCII skips NFKC (identity there)."""
    if s is None:
        return ""
    return " ".join((s.lower() if s.isascii() else unicodedata.normalize("NFKC", s).casefold()).split())


class Data:
    """The three splits' text columns, addressed by a global row id: train, then validation, then test."""

    def __init__(self, folder: Path):
        import pyarrow as pa
        import pyarrow.parquet as pq

        # Read in batches: ``read_table`` peaks at 2x the column (decompression buffers), this at 1x + a batch.
        self.columns = {}
        for split in ("train", "validation", "test"):
            pf = pq.ParquetFile(folder / "default" / split / "0000.parquet")
            self.columns[split] = pa.chunked_array([b.column(0) for b in pf.iter_batches(65536, columns=["text"])],
                                                   type=pa.string())
        pa.default_memory_pool().release_unused()
        self.start = {}
        total = 0
        for split, col in self.columns.items():
            self.start[split] = total
            total += len(col)
        self.total = total
        self.v0, self.t0 = self.start["validation"], self.start["test"]

    def chunks(self, splits: tuple[str, ...], size: int):
        """(first global id, normalized texts) per chunk of ``size`` rows of these splits, in order."""
        for split in splits:
            col = self.columns[split]
            for i in range(0, len(col), size):
                since = time.perf_counter()
                texts = [normalize(s) for s in col.slice(i, size).to_pylist()]
                TIMER.add("normalize", since)
                yield self.start[split] + i, texts

    def texts(self, gids: np.ndarray) -> list[str]:
        """Normalized texts of these global ids (any order)."""
        out: list[str] = [""] * len(gids)
        for split in ("train", "validation", "test"):
            lo, hi = self.start[split], self.start[split] + len(self.columns[split])
            sel = np.flatnonzero((gids >= lo) & (gids < hi))
            if len(sel):
                vals = self.columns[split].take(gids[sel] - lo).to_pylist()
                for k, v in zip(sel, vals):
                    out[k] = normalize(v)
        return out


def _fmix64(x: np.ndarray, tmp: np.ndarray) -> None:
    """SplitMix64's finalizer, in place (tmp: scratch of the same shape)."""
    np.right_shift(x, U(30), out=tmp)
    x ^= tmp
    x *= M1
    np.right_shift(x, U(27), out=tmp)
    x ^= tmp
    x *= M2
    np.right_shift(x, U(31), out=tmp)
    x ^= tmp


PLAIN_SEPARATOR = 0x80  # the separator's value in a plain window (a real U+0080 and above are shifted by one)


def shingle_keys(texts: list[str], n: int = SHINGLE_SIZE, block: int = 1000,
                 hashed: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """uint64 keys of each text's character n-grams (NEAR_SPEC; repeats kept), and row offsets into them.

    A text of L >= n code points gives its L - n + 1 windows; a shorter one (the empty text too) ONE shingle,
    itself: its window runs into the n separators that follow every text, so it cannot equal a real n-gram.
    The key of a window of ASCII code points (and separators) is its n bytes packed into an integer: EXACT,
    no collision. A window with a code point >= 0x80 gets a 64-bit hash with the top bit set (so never a packed
    key). ``hashed`` passes every key through SplitMix64's finalizer (a bijection): what MinHash needs.
    Fast path: a block of ASCII texts is one bytes object read as overlapping 8-byte words (a strided
    view), so a window's packed key is one AND. Blocks of ``block`` rows keep the arrays in cache.
    """
    assert n <= 7, "n bytes must fit a 64-bit key with room for the tag bit"
    since = time.perf_counter()
    lens = np.fromiter(map(len, texts), dtype=np.int64, count=len(texts))
    counts = np.maximum(lens - n + 1, 1)
    offsets = np.zeros(len(texts) + 1, np.int64)
    np.cumsum(counts, out=offsets[1:])
    out = np.empty(int(offsets[-1]), np.uint64)
    mask = U((1 << (8 * n)) - 1)
    for b0 in range(0, len(texts), block):
        part, plen = texts[b0:b0 + block], lens[b0:b0 + block]
        starts = np.zeros(len(part), np.int64)
        np.cumsum(plen[:-1] + n, out=starts[1:])
        if all(map(str.isascii, part)):
            raw = (("\x80" * n).join(part) + "\x80" * n).encode("latin-1") + b"\0" * 8
            m = len(raw) - 8 - n + 1
            words = np.ndarray((m,), dtype="<u8", buffer=raw, strides=(1,))
            keys = words & mask
        else:
            keys = _general_keys(part, plen, starts, n)
        if hashed:
            _fmix64(keys, np.empty_like(keys))
        o0, o1 = offsets[b0], offsets[b0 + len(part)]
        out[o0:o1] = keys[np.arange(o1 - o0) + np.repeat(starts - (offsets[b0:b0 + len(part)] - o0),
                                                         counts[b0:b0 + block])]
    TIMER.add("shingles", since)
    return out, offsets


def _general_keys(part: list[str], plen: np.ndarray, starts: np.ndarray, n: int) -> np.ndarray:
    """Window keys of a block with non-ASCII text: the packed key where the window is plain, else a tagged hash."""
    cps = np.frombuffer(("\0" * n).join(part).encode("utf-32-le") + b"\0\0\0\0" * n, dtype=np.uint32).astype(np.uint64)
    cps[cps >= PLAIN_SEPARATOR] += U(1)
    cps[((starts + plen)[:, None] + np.arange(n)).ravel()] = PLAIN_SEPARATOR
    m = len(cps) - n + 1
    packed = cps[:m].copy()
    top = cps[:m].copy()
    mixed = cps[:m] * WINDOW_MULTIPLIERS[0]
    for k in range(1, n):
        packed |= cps[k:k + m] << U(8 * k)
        np.maximum(top, cps[k:k + m], out=top)
        mixed += cps[k:k + m] * WINDOW_MULTIPLIERS[k]
    _fmix64(mixed, np.empty_like(mixed))
    mixed |= U(1 << 63)
    return np.where(top <= PLAIN_SEPARATOR, packed, mixed)


def shingle_hashes(texts: list[str], n: int = SHINGLE_SIZE) -> tuple[np.ndarray, np.ndarray]:
    """The shingles every candidate sketches: hashed keys (see ``shingle_keys``)."""
    return shingle_keys(texts, n)


def shingle_set(text: str, n: int = SHINGLE_SIZE) -> frozenset[str]:
    """NEAR_SPEC's shingle set, as strings (the definition; the verification's fallback for non-ASCII rows)."""
    return frozenset({text} if len(text) < n else {text[i:i + n] for i in range(len(text) - n + 1)})


def relevant(a: np.ndarray, b: np.ndarray, data: Data) -> np.ndarray:
    """Mask of the pairs (a < b) the figures need: b in validation or test, and not both in validation."""
    return (b >= data.v0) & ~((a >= data.v0) & (b < data.t0))


def unique_pairs(parts: list[np.ndarray], data: Data) -> np.ndarray:
    """(m, 2) int64 unique relevant pairs (a < b) from arrays of (x, y) pairs (either order, self pairs dropped)."""
    if not parts:
        return np.empty((0, 2), np.int64)
    p = np.concatenate(parts).astype(np.int64)
    a, b = np.minimum(p[:, 0], p[:, 1]), np.maximum(p[:, 0], p[:, 1])
    keep = (a != b) & relevant(a, b, data)
    code = np.unique(a[keep] * data.total + b[keep])
    return np.stack([code // data.total, code % data.total], axis=1)


def verify(pairs: np.ndarray, data: Data, batch: int = 20_000) -> np.ndarray:
    """Exact Jaccard of every pair's shingle sets.

    A pair of ASCII rows compares sets of exact packed keys (``shingle_keys(hashed=False)``: injective, so
    the same sets as the strings'); a pair with a non-ASCII row compares sets of the shingle strings. In
    batches of pairs, so only a batch's rows are held at once.
    """
    since = time.perf_counter()
    js = np.empty(len(pairs))
    for s0 in range(0, len(pairs), batch):
        part = pairs[s0:s0 + batch]
        gids, inverse = np.unique(part, return_inverse=True)
        texts = data.texts(gids)
        plain = [t.isascii() for t in texts]
        shingle_time = TIMER.stages.get("shingles", 0.0)
        keys, offsets = shingle_keys([t if a else "" for t, a in zip(texts, plain)], hashed=False)
        TIMER.stages["shingles"] = shingle_time  # counted in "verify"
        off = offsets.tolist()
        for k, (i, j) in enumerate(inverse.reshape(-1, 2).tolist()):
            if plain[i] and plain[j]:
                sa, sb = set(keys[off[i]:off[i + 1]].tolist()), set(keys[off[j]:off[j + 1]].tolist())
            else:
                sa, sb = shingle_set(texts[i]), shingle_set(texts[j])
            inter = len(sa & sb)
            js[s0 + k] = inter / (len(sa) + len(sb) - inter)
    TIMER.add("verify", since)
    return js


# ---------------------------------------------------------------- shared numpy banding

BAND_SALT = np.random.default_rng(7).integers(1, 2**63, 4096, dtype=np.uint64)
ROW_MIX = np.random.default_rng(8).integers(1, 2**63, 64, dtype=np.uint64) | U(1)


def band_keys(sig: np.ndarray, p: Params, strided: bool) -> np.ndarray:
    """(rows, bands) uint64 band keys of a (rows, perms) uint32 signature matrix.

    Band b takes values b, b + bands, b + 2 bands, ... when ``strided`` (one-permutation hashing: densified
    neighbours are correlated, so a band should not take adjacent bins) or a contiguous slice (independent
    permutations, as datasketch and rensa cut them). The band number is in the key, so all bands share one table.
    """
    n = sig.shape[0]
    s3 = sig.reshape(n, p.band_rows, p.bands) if strided else sig.reshape(n, p.bands, p.band_rows).transpose(0, 2, 1)
    acc = np.repeat(BAND_SALT[None, :p.bands], n, axis=0)
    tmp = np.empty_like(acc)
    for i in range(p.band_rows):
        acc ^= s3[:, i, :]
        acc *= ROW_MIX[i]
        np.right_shift(acc, U(29), out=tmp)
        acc ^= tmp
    _fmix64(acc, tmp)
    return acc


def _ramp(counts: np.ndarray) -> np.ndarray:
    """0..c-1 for each c in counts, concatenated."""
    total = int(counts.sum())
    starts = np.repeat(np.cumsum(counts) - counts, counts)
    return np.arange(total) - starts


class BandIndex:
    """The validation and test rows' band keys, sorted; train chunks probe it (a bitmap screens most keys out)."""

    BITS = 28

    def __init__(self, keys: np.ndarray, ids: np.ndarray):
        since = time.perf_counter()
        flat = keys.ravel()
        order = np.argsort(flat)
        self.keys = flat[order]
        self.ids = np.repeat(ids.astype(np.int32), keys.shape[1])[order]
        self.bitmap = np.zeros(1 << (self.BITS - 3), np.uint8)
        top = self.keys >> U(64 - self.BITS)
        np.bitwise_or.at(self.bitmap, (top >> U(3)).astype(np.int64), (U(1) << (top & U(7))).astype(np.uint8))
        TIMER.add("lsh", since)

    def self_pairs(self) -> np.ndarray:
        """Pairs of indexed rows sharing a band key."""
        since = time.perf_counter()
        k = self.keys
        new = np.empty(len(k), bool)
        new[0] = True
        np.not_equal(k[1:], k[:-1], out=new[1:])
        run_id = np.cumsum(new) - 1
        run_end = np.flatnonzero(np.r_[new[1:], True]) + 1  # end (exclusive) of each run
        after = run_end[run_id] - np.arange(len(k)) - 1  # later members of my run
        left = np.repeat(np.arange(len(k)), after)
        right = left + 1 + _ramp(after)
        TIMER.add("lsh", since)
        return np.stack([self.ids[left], self.ids[right]], axis=1)

    def probe(self, keys: np.ndarray, ids: np.ndarray) -> np.ndarray:
        """Pairs (indexed row, probing row) sharing a band key."""
        since = time.perf_counter()
        flat = keys.ravel()
        top = flat >> U(64 - self.BITS)
        hit = (self.bitmap[(top >> U(3)).astype(np.int64)] >> (top & U(7)).astype(np.uint8)) & 1
        sel = np.flatnonzero(hit)
        fk = flat[sel]
        lo = np.searchsorted(self.keys, fk, "left")
        hi = np.searchsorted(self.keys, fk, "right")
        cnt = hi - lo
        m = cnt > 0
        lo, cnt, sel = lo[m], cnt[m], sel[m]
        qpos = np.repeat(lo, cnt) + _ramp(cnt)
        probing = np.repeat(ids[sel // keys.shape[1]], cnt)
        TIMER.add("lsh", since)
        return np.stack([self.ids[qpos].astype(np.int64), probing], axis=1)


THREADS = [2]


def pipelined(chunks, work):
    """``work(g0, texts)`` per chunk on a worker thread while this thread reads and normalizes the next one.

    Two cores: normalization holds the GIL, numpy's array loops and rensa's Rust release it.
    """
    from concurrent.futures import ThreadPoolExecutor

    if THREADS[0] < 2:
        for g0, texts in chunks:
            yield work(g0, texts)
        return

    with ThreadPoolExecutor(1) as pool:
        pending = None
        for g0, texts in chunks:
            submitted = pool.submit(work, g0, texts)
            if pending is not None:
                yield pending.result()
            pending = submitted
        if pending is not None:
            yield pending.result()


def banded_pairs(data: Data, p: Params, signatures, strided: bool) -> np.ndarray:
    """The numpy LSH over a signature function: index validation + test, stream train through it."""

    def keys_of(g0, texts):
        sig = signatures(texts)
        since = time.perf_counter()
        keys = band_keys(sig, p, strided)
        TIMER.add("lsh", since)
        return np.arange(g0, g0 + len(texts)), keys

    qids, qkeys = zip(*pipelined(data.chunks(("validation", "test"), p.chunk), keys_of))
    index = BandIndex(np.concatenate(qkeys), np.concatenate(qids))
    del qkeys
    parts = [index.self_pairs()]
    for ids, keys in pipelined(data.chunks(("train",), p.chunk), keys_of):
        parts.append(index.probe(keys, ids))
    return unique_pairs(parts, data)


# ---------------------------------------------------------------- numpy signatures

DENSE_ROUNDS = 2


def _probe_table(p: Params, attempts: int = 64) -> np.ndarray:
    """Optimal densification's probe sequence: for attempt t, empty bin j borrows bin table[t, j] (same for all rows)."""
    return np.random.default_rng(11).integers(0, p.perms, (attempts, p.perms))


def oph_signatures(texts: list[str], p: Params, probes: np.ndarray) -> np.ndarray:
    """One-permutation MinHash: each shingle hash goes to ONE of K bins (high bits), bin keeps its min (low bits).

    Empty bins borrow the value of the first non-empty bin of a fixed random probe sequence (Shrivastava 2017,
    "optimal densification"): the same sequence for every row, so two rows' bin j still collide with
    probability J. A row with so few shingles that probing fails borrows its overall minimum.
    """
    h, offsets = shingle_hashes(texts, p.n)
    since = time.perf_counter()
    k = p.perms
    rows = np.repeat(np.arange(len(texts), dtype=np.int64), np.diff(offsets))
    bins = (((h >> U(32)) * U(k)) >> U(32)).astype(np.int64)
    sig = np.full(len(texts) * k, EMPTY, np.uint32)
    np.minimum.at(sig, rows * k + bins, h.astype(np.uint32))
    sig = sig.reshape(len(texts), k)
    out = sig.copy()
    # The first rounds over the whole matrix (a column gather is cheap), the rest cell by cell.
    still = sig == EMPTY
    for t in range(min(DENSE_ROUNDS, len(probes))):
        borrowed = np.take(sig, probes[t], axis=1)
        use = borrowed != EMPTY
        use &= still
        np.copyto(out, borrowed, where=use)
        still &= ~use
    cells = np.flatnonzero(still)
    base, b = np.divmod(cells, k)
    base *= k
    fill = np.full(len(cells), EMPTY, np.uint32)
    todo = np.arange(len(cells))
    flat = sig.ravel()
    for t in range(DENSE_ROUNDS, len(probes)):
        if not len(todo):
            break
        v = flat[base[todo] + probes[t][b[todo]]]
        ok = v != EMPTY
        fill[todo[ok]] = v[ok]
        todo = todo[~ok]
    if len(todo):
        fill[todo] = sig.min(axis=1)[base[todo] // k]
    out.ravel()[cells] = fill
    TIMER.add("sketch", since)
    return out


def kperm_signatures(texts: list[str], p: Params, a: np.ndarray, c: np.ndarray, block: int = 128) -> np.ndarray:
    """Textbook MinHash: K hash functions ((a x + c) >> 32, rensa's form), each minimised over the row's shingles."""
    h, offsets = shingle_hashes(texts, p.n)
    since = time.perf_counter()
    sig = np.empty((len(texts), p.perms), np.uint32)
    for r0 in range(0, len(texts), block):
        o0, o1 = offsets[r0], offsets[min(r0 + block, len(texts))]
        hv = h[o0:o1, None] * a[None, :]
        hv += c[None, :]
        hv >>= U(32)
        sig[r0:r0 + block] = np.minimum.reduceat(hv, offsets[r0:min(r0 + block, len(texts))] - o0, axis=0)
    TIMER.add("sketch", since)
    return sig


def run_numpy_oph(data: Data, p: Params) -> np.ndarray:
    probes = _probe_table(p)
    return banded_pairs(data, p, lambda texts: oph_signatures(texts, p, probes), strided=True)


def run_numpy_kperm(data: Data, p: Params) -> np.ndarray:
    rng = np.random.default_rng(SEED)
    a = rng.integers(1, 2**63, p.perms, dtype=np.uint64) | U(1)
    c = rng.integers(0, 2**63, p.perms, dtype=np.uint64)
    return banded_pairs(data, p, lambda texts: kperm_signatures(texts, p, a, c), strided=False)


# ---------------------------------------------------------------- rensa

def _rensa_digests(texts: list[str], p: Params):
    import rensa

    h, offsets = shingle_hashes(texts, p.n)
    since = time.perf_counter()
    m = rensa.RMinHash.digest_matrix_from_flat_token_hashes(h, offsets.astype(np.uint64), p.perms, SEED)
    TIMER.add("sketch", since)
    return m


def _rows_of(matrix, p: Params) -> np.ndarray:
    since = time.perf_counter()
    sig = np.array(matrix.to_rows(), dtype=np.uint32).reshape(-1, p.perms)
    TIMER.add("to_rows", since)
    return sig


def run_rensa_rows(data: Data, p: Params) -> np.ndarray:
    """rensa's digests, all brought back to numpy with ``to_rows`` (the matrix has no buffer export), numpy banding."""
    return banded_pairs(data, p, lambda texts: _rows_of(_rensa_digests(texts, p), p), strided=False)


def run_rensa_flags(data: Data, p: Params) -> np.ndarray:
    """rensa's index screens; only the flagged rows' digests come back to Python (to_rows is the slow part).

    1. validation + test rows go into an ``RMinHashLSH`` (ids = global ids); ``query_duplicate_flags_matrix``
       flags those sharing a band with another indexed row (G2);
    2. each train chunk is screened with ``query_duplicate_flags_matrix_one_shot``: F = train rows sharing a
       band with an indexed row (or with another row of the chunk: harmless);
    3. a second index of F's rows screens the validation + test rows again: G = those sharing a band with F;
    4. every LSH candidate pair the figures need lies inside S = F + G + G2: S's digests are recomputed,
       brought back with ``to_rows`` and banded in numpy exactly as rensa bands (contiguous slices).
    """
    import rensa

    lsh = rensa.RMinHashLSH(0.8, p.perms, p.bands)

    def insert(g0, texts):
        m = _rensa_digests(texts, p)
        since = time.perf_counter()
        lsh.insert_matrix(m, start_key=g0)
        TIMER.add("lsh", since)
        return g0, m

    def screen(g0, texts):
        m = _rensa_digests(texts, p)
        since = time.perf_counter()
        flagged = g0 + np.flatnonzero(lsh.query_duplicate_flags_matrix_one_shot(m))
        TIMER.add("lsh", since)
        return flagged

    query = list(pipelined(data.chunks(("validation", "test"), p.chunk), insert))  # (first gid, digests)
    since = time.perf_counter()
    g2 = [g0 + np.flatnonzero(lsh.query_duplicate_flags_matrix(m)) for g0, m in query]
    TIMER.add("lsh", since)
    f = list(pipelined(data.chunks(("train",), p.chunk), screen))
    lsh = None  # frees the index (the closures above are done with it)
    f_ids = np.concatenate(f)
    lsh_f = rensa.RMinHashLSH(0.8, p.perms, p.bands)
    if len(f_ids):
        lsh_f.insert_matrix(_rensa_digests(data.texts(f_ids), p), start_key=0)
    since = time.perf_counter()
    g = [g0 + np.flatnonzero(lsh_f.query_duplicate_flags_matrix_one_shot(m)) for g0, m in query] if len(f_ids) else []
    TIMER.add("lsh", since)
    del query, lsh_f
    s_ids = np.unique(np.concatenate([f_ids, *g, *g2]))
    print(f"rensa-flags: |F| = {len(f_ids)}, |S| = {len(s_ids)} rows brought back", file=sys.stderr)
    if not len(s_ids):
        return np.empty((0, 2), np.int64)
    sig = _rows_of(_rensa_digests(data.texts(s_ids), p), p)
    index = BandIndex(band_keys(sig, p, strided=False), s_ids)
    return unique_pairs([index.self_pairs()], data)


# ---------------------------------------------------------------- datasketch

def run_datasketch(data: Data, p: Params) -> np.ndarray:
    """datasketch's bulk path (``MinHash.generator``, one numpy pass per row) and ``MinHashLSH`` with the same bands.

    Its default scheme takes 32-bit hash values: it gets the top 32 bits of the same shingle hashes
    (``hashfunc`` is the identity). The index holds validation + test (each row queried before it is
    inserted, for the pairs among them); train rows are only queried, so the index stays small.
    """
    from datasketch import MinHash, MinHashLSH

    lsh = MinHashLSH(num_perm=p.perms, params=(p.bands, p.band_rows))

    def minhashes(texts):
        h, offsets = shingle_hashes(texts, p.n)
        top = (h >> U(32)).tolist()
        rows = [top[offsets[i]:offsets[i + 1]] for i in range(len(texts))]
        return MinHash.generator(rows, num_perm=p.perms, seed=SEED, hashfunc=int)

    parts = []
    for g0, texts in data.chunks(("validation", "test"), p.chunk):
        since = time.perf_counter()
        found = []
        for k, mh in enumerate(minhashes(texts)):
            gid = g0 + k
            found.extend((gid, other) for other in lsh.query(mh))
            lsh.insert(gid, mh, check_duplication=False)
        parts.append(np.array(found, np.int64).reshape(-1, 2))
        TIMER.add("sketch+lsh", since)
    for g0, texts in data.chunks(("train",), p.chunk):
        since = time.perf_counter()
        found = []
        for k, mh in enumerate(minhashes(texts)):
            found.extend((g0 + k, other) for other in lsh.query(mh))
        parts.append(np.array(found, np.int64).reshape(-1, 2))
        TIMER.add("sketch+lsh", since)
    return unique_pairs(parts, data)


# ---------------------------------------------------------------- DuckDB SQL

SQL_SIGNATURES = """
CREATE OR REPLACE TEMP TABLE sig AS
  SELECT rid, (((h >> 32) * {k}) >> 32)::INTEGER AS bin, min(h & 4294967295) AS v
  FROM sh GROUP BY ALL;
CREATE OR REPLACE TEMP TABLE keys AS
  WITH grid AS (SELECT rid, bin FROM (SELECT DISTINCT rid FROM sig), range({k}) t(bin)),
  first AS (SELECT rid, arg_min(v, bin) AS v, min(bin) AS bin FROM sig GROUP BY rid),
  -- rotation densification: an empty bin takes the next non-empty bin to its right (circular),
  -- salted with the distance, so two rows' bins still collide with probability J
  dense AS (
    SELECT g.rid, g.bin,
           coalesce(hash(s.v, s.bin - g.bin), hash(f.v, f.bin + {k} - g.bin)) AS v
    FROM grid g
    ASOF LEFT JOIN sig s ON g.rid = s.rid AND g.bin <= s.bin
    JOIN first f ON f.rid = g.rid)
  SELECT rid, bin % {bands} AS band, bit_xor(hash(v, bin)) AS key FROM dense GROUP BY ALL;
"""


def run_duckdb_sql(data: Data, p: Params) -> np.ndarray:
    """MinHash as SQL: (row, shingle hash) -> per (row, bin) min -> densified grid -> band keys -> band join."""
    import duckdb
    import pyarrow as pa

    con = duckdb.connect()
    sql = SQL_SIGNATURES.format(k=p.perms, bands=p.bands)

    def keys_of(g0, texts):
        h, offsets = shingle_hashes(texts, p.n)
        since = time.perf_counter()
        rid = np.repeat(np.arange(g0, g0 + len(texts), dtype=np.int64), np.diff(offsets))
        con.register("sh", pa.table({"rid": rid, "h": h}))
        con.execute(sql)
        con.unregister("sh")
        TIMER.add("sketch", since)

    con.execute("CREATE TEMP TABLE q (rid BIGINT, band INTEGER, key UBIGINT)")
    for g0, texts in data.chunks(("validation", "test"), p.chunk):
        keys_of(g0, texts)
        con.execute("INSERT INTO q SELECT * FROM keys")
    since = time.perf_counter()
    parts = [con.execute("SELECT a.rid AS x, b.rid AS y FROM q a JOIN q b USING (band, key) WHERE a.rid < b.rid").fetchnumpy()]
    TIMER.add("lsh", since)
    for g0, texts in data.chunks(("train",), p.chunk):
        keys_of(g0, texts)
        since = time.perf_counter()
        parts.append(con.execute("SELECT DISTINCT q.rid AS x, keys.rid AS y FROM keys JOIN q USING (band, key)").fetchnumpy())
        TIMER.add("lsh", since)
    return unique_pairs([np.stack(list(d.values()), axis=1) for d in parts], data)


RUNNERS = {"datasketch": run_datasketch, "rensa-flags": run_rensa_flags, "rensa-rows": run_rensa_rows,
           "numpy-oph": run_numpy_oph, "numpy-kperm": run_numpy_kperm, "duckdb-sql": run_duckdb_sql}


# ---------------------------------------------------------------- child and table

def child(name: str, folder: Path, p: Params) -> None:
    truth = json.loads((folder / "truth.json").read_text())
    usage0 = resource.getrusage(resource.RUSAGE_SELF)
    cpu0 = usage0.ru_utime + usage0.ru_stime
    started = time.perf_counter()
    data = Data(folder)
    since = TIMER.add("read", started)
    pairs = RUNNERS[name](data, p)
    TIMER.add("candidates (total)", since)
    js = verify(pairs, data)
    seconds = time.perf_counter() - started
    usage = resource.getrusage(resource.RUSAGE_SELF)
    peak_mb = usage.ru_maxrss / 1024
    cpu = usage.ru_utime + usage.ru_stime - cpu0
    found = {(int(a), int(b)) for (a, b), j in zip(pairs.tolist(), js) if j >= VERIFY_MIN_J}
    recall = {}
    for tau in (0.8, 0.6):
        want = [tp for tp in truth["pairs"] if tp["j"] >= tau]
        got = 0
        for tp in want:
            a, b = data.start[tp["a_split"]] + tp["a"], data.start[tp["b_split"]] + tp["b"]
            got += (min(a, b), max(a, b)) in found
        recall[str(tau)] = [got, len(want)]
    print(json.dumps({"seconds": seconds, "cpu": cpu, "peak_rss_mb": peak_mb, "rows": data.total, "candidates": len(pairs),
                      "verified_08": int((js >= 0.8).sum()), "verified_06": int((js >= 0.6).sum()),
                      "recall": recall, "stages": TIMER.stages}))


def curve(p: Params, j: float) -> float:
    """Probability that a pair at Jaccard j shares at least one band."""
    return 1 - (1 - j ** p.band_rows) ** p.bands


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--out", type=Path, default=Path("/tmp/hubsurvey-bench"))
    parser.add_argument("--bands", type=int, default=Params.bands)
    parser.add_argument("--band-rows", type=int, default=Params.band_rows)
    parser.add_argument("--chunk", type=int, default=Params.chunk)
    parser.add_argument("--timeout", type=float, default=600)
    parser.add_argument("--threads", type=int, default=Params.threads, choices=(1, 2))
    parser.add_argument("--only", default=",".join(CANDIDATES), help="comma-separated candidates")
    parser.add_argument("--child", choices=CANDIDATES, help=argparse.SUPPRESS)
    parser.add_argument("--folder", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    p = Params(bands=args.bands, band_rows=args.band_rows, chunk=args.chunk, threads=args.threads)
    THREADS[0] = p.threads
    if args.child:
        child(args.child, args.folder, p)
        return
    started = time.perf_counter()
    folder, truth = generate_near(args.out, args.rows)
    print(f"dataset: {folder} ({args.rows:,} rows, {len(truth['pairs'])} planted pairs; "
          f"generated/reused in {time.perf_counter() - started:.1f} s)")
    print(f"shingles: character {SHINGLE_SIZE}-grams of the normalized text, hashed to uint64 (numpy, shared)")
    print(f"LSH: {p.perms} permutations = {p.bands} bands x {p.band_rows} rows; P(candidate) at J = "
          + ", ".join(f"{j}: {curve(p, j):.3f}" for j in (0.5, 0.6, 0.7, 0.8, 0.9))
          + f"; every candidate verified exactly, kept at J >= {VERIFY_MIN_J}; chunks of {p.chunk:,} rows; "
          f"{p.threads} thread(s)")
    results = {}
    for name in args.only.split(","):
        load = os.getloadavg()[0]
        cmd = [sys.executable, __file__, "--child", name, "--folder", str(folder), "--bands", str(p.bands),
               "--band-rows", str(p.band_rows), "--chunk", str(p.chunk), "--threads", str(p.threads)]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
        except subprocess.TimeoutExpired:
            results[name] = {"timeout": True, "load": load}
            print(f"  {name}: timeout after {args.timeout:.0f} s", flush=True)
            continue
        if proc.returncode:
            results[name] = {"error": proc.stderr.strip().splitlines()[-1:] or ["?"], "load": load}
            print(f"  {name}: failed: {proc.stderr.strip()[-2000:]}", flush=True)
            continue
        results[name] = json.loads(proc.stdout.strip().splitlines()[-1]) | {"load": load}
        stages = ", ".join(f"{k} {v:.1f}" for k, v in results[name]["stages"].items())
        note = " ".join(line for line in proc.stderr.strip().splitlines() if line.startswith(name))
        print(f"  {name}: {results[name]['seconds']:.1f} s (stages s: {stages}) {note}", flush=True)
    header = (f"{'candidate':<13}{'wall s':>8}{'cpu s':>8}{'rows/s':>10}{'peak MB':>9}{'cand. pairs':>13}{'J>=0.8':>9}"
              f"{'recall@0.8':>16}{'recall@0.6':>16}{'load':>6}")
    print()
    print(header)
    for name, r in results.items():
        if "seconds" not in r:
            print(f"{name:<13}{'timeout' if r.get('timeout') else 'error':>8}{'':>72}{r['load']:>6.1f}")
            continue
        rec = {t: f"{g}/{w} {g / w if w else 1:.3f}" for t, (g, w) in r["recall"].items()}
        print(f"{name:<13}{r['seconds']:>8.1f}{r['cpu']:>8.1f}{r['rows'] / r['seconds']:>10,.0f}{r['peak_rss_mb']:>9.0f}"
              f"{r['candidates']:>13,}{r['verified_08']:>9,}{rec['0.8']:>16}{rec['0.6']:>16}{r['load']:>6.1f}")
    print("(cpu s: the child's user + system CPU time; load: the 1-minute load average when the candidate started."
          " This 2-core machine is shared, so wall times vary with the load.)")


if __name__ == "__main__":
    main()
