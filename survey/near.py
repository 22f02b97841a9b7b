"""Near-duplicates (method ``near-2026``): which texts are at Jaccard >= tau of each other.

The definitions, in words, are in ``docs/method.md`` ("Near-duplicates"); this module finds the
pairs, and the figures are SQL over them (``hubsurvey.core.figures``).

How, in one paragraph. Each distinct normalized text is cut into character n-grams (shingles),
hashed to 64 bits with a rolling hash, all in numpy. One-permutation MinHash (OPH) gives each text
a signature of ``bins`` values in one pass over its shingles (a shingle lands in the bin its hash
names; the bin keeps the smallest hash). LSH bands of ``rows`` consecutive bins put texts whose band
agrees in one bucket; the pairs of a bucket are the candidates. Every candidate is then verified
with the exact Jaccard of the two shingle sets, so no pair below tau is ever reported: MinHash only
decides which pairs are compared, and its misses (recall) are what the parameters are tuned for.

Why OPH and not k hash functions: k-permutation MinHash costs shingles x k operations (120 M x 128
for the 1M-row benchmark: minutes in numpy); OPH costs one per shingle. A bin empty in both texts
is filled from a non-empty bin that a fixed pseudo-random sequence names (``densify``), so two
texts agree on a bin with probability equal to their Jaccard, as with k independent permutations.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from hubsurvey.core.figures import NEAR_CURVE, NEAR_DEFAULT_SHINGLE, NEAR_DEFAULT_THRESHOLD

_EMPTY = np.iinfo(np.uint64).max  # a signature bin no shingle landed in
#: The candidates' Jaccard is first estimated from this many signature bins (16 bits each: 128
#: bytes a text); a candidate whose estimate is below the lowest threshold by more than the margin
#: is dropped unverified. The estimate's standard deviation is about 0.06 at J = 0.6 (64 bins),
#: so a pair at J >= 0.6 is dropped with probability < 1e-4 (higher for texts of a few shingles,
#: whose bins are copies).
SKETCH_BINS = 64
SKETCH_MARGIN = 0.3
_P = np.uint64(0x100000001B3)  # the rolling hash's base (FNV's prime: odd, spreads small code points)


@dataclass(frozen=True)
class NearParams:
    """The near-duplicate method's parameters; the stored figures record them."""

    threshold: float = NEAR_DEFAULT_THRESHOLD  # tau: near-duplicates at Jaccard >= threshold
    curve: tuple[float, ...] = NEAR_CURVE  # the thresholds of the curve
    shingle_size: int = NEAR_DEFAULT_SHINGLE  # n: character n-grams
    bins: int = 128  # OPH signature length (a power of two)
    band_rows: int = 4  # bins per LSH band: bins // band_rows bands (32): P(candidate) = 0.99 at J = 0.6
    #: a bucket of more texts than this is not paired in that band (its texts still meet in the
    #: others), and the figures record that some were skipped. Large buckets are real: code
    #: translation pairs share boilerplate, and 500 (the first cut) left code_x_glue at recall 0.26
    #: at J >= 0.6, where a few thousand texts are truly alike; the pair budget of ``find_pairs``
    #: bounds the work either way
    max_bucket: int = 5_000
    seed: int = 2026  # of the hash; a signature depends on it, a verified pair does not
    #: distinct texts compared at most: above it, the texts held only by train rows are sampled
    #: (by hash: the same texts on every run), and the figures say so (a lower bound)
    max_texts: int = 2_000_000

    @property
    def lowest(self) -> float:
        """Pairs are found down to the lowest threshold used (the curve's, or tau)."""
        return min((*self.curve, self.threshold))

    def describe(self) -> dict[str, object]:
        return {"threshold": self.threshold, "curve": list(self.curve), "shingle": f"char-{self.shingle_size}",
                "minhash": f"oph-{self.bins}", "bands": self.bins // self.band_rows, "band_rows": self.band_rows,
                "max_bucket": self.max_bucket, "max_texts": self.max_texts}


def sample(keys: np.ndarray, query: np.ndarray, max_texts: int) -> np.ndarray:
    """Which texts to compare (a boolean per text): all when they fit in ``max_texts``; else every
    test or validation text (the ``query`` ones: the figures count their rows) and a sample of the
    others, by hash of their key, so a rerun picks the same ones."""
    if len(keys) <= max_texts:
        return np.ones(len(keys), dtype=bool)
    others = int((~query).sum())
    rate = max(max_texts - int(query.sum()), 0) / max(others, 1)
    picked = _mix(keys.astype(np.uint64)) < np.uint64(min(rate, 1.0) * float(_EMPTY))
    return query | picked


def _distinct(values: np.ndarray) -> np.ndarray:
    """The sorted distinct values (np.unique's hash-based path is 6x slower on these int64 codes)."""
    values = np.sort(values)
    return values[np.r_[True, values[1:] != values[:-1]]] if len(values) else values


def _mix(x: np.ndarray) -> np.ndarray:
    """splitmix64's finalizer: spreads a 64-bit value's bits (in place on a copy)."""
    x = x ^ (x >> np.uint64(30))
    x *= np.uint64(0xBF58476D1CE4E5B9)
    x ^= x >> np.uint64(27)
    x *= np.uint64(0x94D049BB133111EB)
    x ^= x >> np.uint64(31)
    return x


def shingle_hashes(texts: Sequence[str], n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Every shingle of every text, hashed: (hashes uint64, the index of the text of each).

    A text of L >= n characters has L - n + 1 shingles ``text[i:i+n]``; a shorter one (the empty text
    too) is one shingle, itself. Characters are code points (the text encoded as UTF-32), so a
    Chinese character is one character, as in Python. Repeats are kept (a set is formed later).
    """
    lengths = np.fromiter(map(len, texts), dtype=np.int64, count=len(texts))
    codes = np.frombuffer("".join(texts).encode("utf-32-le"), dtype=np.uint32).astype(np.uint64)
    starts = np.cumsum(lengths) - lengths
    long = lengths >= n
    # Every window of n code points of the whole buffer, by Horner's rule (n vector passes); the
    # windows that lie inside one text are its shingles.
    span = max(len(codes) - n + 1, 0)
    window = codes[:span].copy()
    for k in range(1, n):
        window *= _P
        window += codes[k:k + span]
    counts = np.where(long, lengths - n + 1, 0)
    first = np.repeat(starts, counts) + (np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts))
    hashes = [window[first]]
    text_of = [np.repeat(np.arange(len(texts), dtype=np.int64), counts)]
    short = np.flatnonzero(~long)
    if len(short):  # a text shorter than n: one shingle, over its own characters only
        h = np.zeros(len(short), dtype=np.uint64)
        padded = np.concatenate([codes, np.zeros(n, dtype=np.uint64)])
        for k in range(n - 1):
            inside = k < lengths[short]
            h = np.where(inside, h * _P + padded[starts[short] + k], h)
        hashes.append(h ^ (lengths[short].astype(np.uint64) + np.uint64(1)) << np.uint64(56))  # tagged: no n-gram
        text_of.append(short)
    mixed = _mix(np.concatenate(hashes) ^ np.uint64(seed))
    return mixed, np.concatenate(text_of)


def signatures(hashes: np.ndarray, text_of: np.ndarray, n_texts: int, bins: int) -> np.ndarray:
    """One-permutation MinHash: (n_texts, bins), each bin the smallest hash that landed in it."""
    shift = np.uint64(64 - int(bins).bit_length() + 1)  # the top log2(bins) bits name the bin
    sig = np.full(n_texts * bins, _EMPTY, dtype=np.uint64)
    np.minimum.at(sig, text_of * bins + (hashes >> shift).astype(np.int64), hashes)
    return sig.reshape(n_texts, bins)


#: Densification tries this many pseudo-random bins for an empty bin before it falls back to the
#: nearest non-empty bin to the right: a bin is left to the fallback with probability e^t, where e
#: is the share of empty bins (a text of k shingles in 128 bins: e = e^(-k/128); 0.6^32 ~ 1e-7).
DENSIFY_ATTEMPTS = 32


def _borrow_table(bins: int, attempts: int) -> np.ndarray:
    """(attempts, bins): the bin an empty bin borrows from at each attempt. Fixed for every text
    (seeded), so two texts with the same empty bins borrow alike; never the bin itself."""
    draws = _mix(np.arange(1, attempts + 1, dtype=np.uint64)[:, None] * np.uint64(0x9E3779B97F4A7C15)
                 + np.arange(bins, dtype=np.uint64)[None, :] * np.uint64(0xD1B54A32D192ED03))
    offset = (draws % np.uint64(bins - 1)).astype(np.int64) + 1 if bins > 1 else np.zeros_like(draws, dtype=np.int64)
    return (np.arange(bins)[None, :] + offset) % max(bins, 1)


def densify(sig: np.ndarray, attempts: int = DENSIFY_ATTEMPTS) -> np.ndarray:
    """Fill each empty bin with the value of a non-empty bin picked by a fixed pseudo-random
    sequence per bin (Shrivastava's optimal densification, 2017): two texts then agree on a bin
    with probability equal to their Jaccard, as with k independent permutations.

    Why not rotation (an empty bin copies its right neighbour): a short text's empty runs then
    copy one value into a whole LSH band, and a frequent shingle (" the ", or a code keyword) with a
    small hash puts thousands of unrelated texts in one bucket: 36 M chance candidates for 100k
    rows of the benchmark, against under 1 M here. A bin still empty after ``attempts`` tries
    takes the nearest non-empty bin to its right, so every bin of a text with a shingle is filled."""
    n, bins = sig.shape
    flat = sig.ravel()
    out = flat.copy()
    todo = np.flatnonzero(flat == _EMPTY)
    columns = np.arange(bins)
    # the bins to borrow from, in order: the pseudo-random attempts, then the fallback's right
    # neighbours (rare: texts of one or two shingles)
    sources = itertools.chain(_borrow_table(bins, attempts), ((columns + step) % bins for step in range(1, bins)))
    for source in sources:
        if not len(todo):
            break
        value = flat[todo - todo % bins + source[todo % bins]]
        found = value != _EMPTY
        out[todo[found]] = value[found]
        todo = todo[~found]
    return out.reshape(n, bins)


def band_hashes(sig: np.ndarray, band_rows: int) -> np.ndarray:
    """(n_texts, bands): a 32-bit hash of each band's bins (bins // band_rows bands; a spare bin
    is unused); 0 for a band with every bin empty. 32 bits halve the memory; two bands that
    collide by chance only add a candidate, which verification then rejects."""
    n_texts, bins = sig.shape
    n_bands = bins // band_rows
    bands = sig[:, : n_bands * band_rows].reshape(n_texts, n_bands, band_rows)
    h = np.zeros((n_texts, n_bands), dtype=np.uint64)
    for r in range(band_rows):
        h = _mix(h ^ (bands[:, :, r] + np.uint64(r)))
    h32 = (h >> np.uint64(32)).astype(np.uint32)
    h32[(bands == _EMPTY).all(axis=2)] = 0
    h32[h32 == 0] += np.uint32((~(bands == _EMPTY).all(axis=2))[h32 == 0])  # 0 is reserved for "empty"
    return h32


def candidate_pairs(bands: np.ndarray, query: np.ndarray, max_pairs: int, max_bucket: int = 500) -> tuple[np.ndarray, bool]:
    """The distinct pairs (a, b), a < b, of texts sharing a non-empty band, where a or b is a
    ``query`` text (the pairs of two other texts are never needed); and whether some were left
    out: a bucket over ``max_bucket`` texts, or ``max_pairs`` reached (thousands of similar texts
    make millions of pairs: the figures then say so rather than the survey hanging)."""
    n = bands.shape[0]
    found: list[np.ndarray] = []
    total, capped = 0, False
    ids = np.arange(n, dtype=np.int64)
    for b in range(bands.shape[1]):
        keep = bands[:, b] != 0
        hs, ts = bands[keep, b], ids[keep]
        order = np.argsort(hs, kind="stable")
        hs, ts = hs[order], ts[order]
        # buckets: runs of equal band hashes; each query member pairs with every member of its run
        starts = np.flatnonzero(np.r_[True, hs[1:] != hs[:-1]])
        sizes = np.diff(np.r_[starts, len(hs)])
        run_start = np.repeat(starts, sizes)
        run_size = np.repeat(sizes, sizes)
        if (sizes > max_bucket).any():
            capped = True
        asked = np.flatnonzero(query[ts] & (run_size > 1) & (run_size <= max_bucket))
        if not len(asked):
            continue
        reps = run_size[asked]
        if total + reps.sum() > max_pairs:  # this band would pass the budget: skip it, try the next
            capped = True
            continue
        total += int(reps.sum())
        a = np.repeat(ts[asked], reps)
        within = np.arange(reps.sum()) - np.repeat(np.cumsum(reps) - reps, reps)
        other = ts[np.repeat(run_start[asked], reps) + within]
        keep_pair = a != other
        a, other = a[keep_pair], other[keep_pair]
        found.append(_distinct(np.minimum(a, other) * n + np.maximum(a, other)))
        if len(found) > 8:  # a pair meets in several bands: merge now and then, keep memory flat
            found = [_distinct(np.concatenate(found))]
    if not found:
        return np.empty((0, 2), dtype=np.int64), capped
    codes = _distinct(np.concatenate(found))
    return np.stack([codes // n, codes % n], axis=1), capped


def jaccard(pairs: np.ndarray, texts: Sequence[str], n: int) -> np.ndarray:
    """The exact Jaccard of each pair's shingle sets (sets of 64-bit shingle hashes)."""
    if not len(pairs):
        return np.empty(0)
    used = _distinct(pairs.ravel())
    hashes, text_of = shingle_hashes([texts[i] for i in used], n)
    order = np.argsort(text_of, kind="stable")
    hashes = hashes[order]
    bounds = np.r_[0, np.cumsum(np.bincount(text_of, minlength=len(used)))]
    sets = {int(k): set(hashes[bounds[i]:bounds[i + 1]].tolist()) for i, k in enumerate(used)}
    out = np.empty(len(pairs))
    for i, (a, b) in enumerate(pairs.tolist()):
        sa, sb = sets[a], sets[b]
        common = len(sa & sb)
        out[i] = common / (len(sa) + len(sb) - common)
    return out


@dataclass(frozen=True)
class NearPairs:
    """The verified pairs (indices into the texts, a < b) at Jaccard >= the lowest threshold."""

    pairs: np.ndarray  # (m, 2) int64
    jaccard: np.ndarray  # (m,) float
    candidates: int  # the LSH candidates
    capped: bool  # candidates were left out (a bucket over max_bucket, or max_pairs): a figure may miss pairs
    verified: int = 0  # the candidates whose exact Jaccard was computed (the others' estimate was far below)


def find_pairs(texts: Sequence[str], query: np.ndarray, params: NearParams, *,
               max_pairs: int = 10_000_000, batch: int = 20_000) -> NearPairs:
    """Every pair of texts at Jaccard >= ``params.lowest`` that MinHash-LSH proposes, verified.

    Signatures are computed ``batch`` texts at a time, so memory holds one batch's shingles, and
    for every text its band hashes (4 bytes a band) and its sketch (128 bytes), not every shingle.
    """
    n = len(texts)
    bands = np.empty((n, params.bins // params.band_rows), dtype=np.uint32)
    sketch = np.empty((n, SKETCH_BINS), dtype=np.uint16)
    for start in range(0, n, batch):
        chunk = texts[start:start + batch]
        hashes, text_of = shingle_hashes(chunk, params.shingle_size, params.seed)
        sig = densify(signatures(hashes, text_of, len(chunk), params.bins))
        bands[start:start + len(chunk)] = band_hashes(sig, params.band_rows)
        sketch[start:start + len(chunk)] = (sig[:, :: params.bins // SKETCH_BINS] >> np.uint64(48)).astype(np.uint16)
        del hashes, text_of
    candidates, capped = candidate_pairs(bands, query, max_pairs, params.max_bucket)
    del bands
    listed = len(candidates)
    # Most candidates of real data are texts that share a band by chance (J ~ 0.1-0.3); the
    # sketch's estimate of J sends them away before the exact (and costlier) check.
    estimate = np.empty(len(candidates))
    for start in range(0, len(candidates), 1_000_000):
        a, b = candidates[start:start + 1_000_000, 0], candidates[start:start + 1_000_000, 1]
        estimate[start:start + len(a)] = (sketch[a] == sketch[b]).mean(axis=1)
    candidates = candidates[estimate >= params.lowest - SKETCH_MARGIN]
    similarity = jaccard(candidates, texts, params.shingle_size)
    keep = similarity >= params.lowest
    return NearPairs(candidates[keep], similarity[keep], listed, capped, len(candidates))


def row_texts(columns: Sequence[list]) -> list[str]:
    """Each row's text, the source of its shingles: every text column's ``normalized`` profile (a
    list's non-NULL elements joined by a space; NULL: nothing), the non-empty ones joined by a space.

    ``columns`` holds each text column's values, already normalized (``normalize_array``)."""
    parts = []
    for values in columns:
        parts.append(["" if v is None else (" ".join(str(x) for x in v if x is not None) if isinstance(v, list) else str(v))
                      for v in values])
    if len(parts) == 1:
        return parts[0]
    return [" ".join(p for p in row if p) for row in zip(*parts)]
