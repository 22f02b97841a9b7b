"""The near-duplicate stage as it was before the compiled pass: shingles, one-permutation MinHash,
densification, LSH bands and candidate pairs in numpy, one text batch at a time, and verification
with Python sets.

Kept, unchanged, as the plain reference the compiled pass (``hubsurvey.survey.near``) is checked
against bit for bit (tests/survey/test_near*.py), and as the baseline ``benchmarks/bench_near.py`` runs
beside it. Not used by the product.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np

from hubsurvey.survey.near import DENSIFY_ATTEMPTS, SKETCH_BINS, SKETCH_MARGIN, NearPairs, NearParams

_EMPTY = np.iinfo(np.uint64).max  # a signature bin no shingle landed in
_P = np.uint64(0x100000001B3)  # the rolling hash's base (FNV's prime: odd, spreads small code points)


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
