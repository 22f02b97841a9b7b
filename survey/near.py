"""Near-duplicates (method ``near-2026``): which texts are at Jaccard >= tau of each other.

The definitions, in words, are in ``docs/method.md`` ("Near-duplicates"); this module finds the
pairs, and the figures are SQL over them (``hubsurvey.core.figures``).

How, in one paragraph. Each distinct normalized text is cut into character n-grams (shingles),
each hashed to 64 bits (the polynomial of its code points, mixed). One-permutation MinHash (OPH)
gives each text a signature of ``bins`` values in one pass over its shingles (a shingle lands in
the bin its hash names; the bin keeps the smallest hash). LSH bands of ``rows`` consecutive bins
put texts whose band agrees in one bucket; the pairs of a bucket are the candidates. Every
candidate is then verified with the exact Jaccard of the two shingle sets, so no pair below tau is
ever reported: MinHash only decides which pairs are compared, and its misses (recall) are what the
parameters are tuned for.

Why OPH and not k hash functions: k-permutation MinHash costs shingles x k operations (120 M x 128
for the 1M-row benchmark); OPH costs one per shingle. A bin empty in both texts is filled from a
non-empty bin that a fixed pseudo-random sequence names (densification), so two texts agree on a
bin with probability equal to their Jaccard, as with k independent permutations.

Why compiled: the same work in numpy made and read a dozen arrays as long as the batch's shingles
(83% of a measurement, on one core). Here one numba pass per text walks its UTF-8 bytes, hashes
each shingle, keeps the signature in 1 KB, densifies it and writes only its band hashes and its
sketch; the texts are split among the threads (``threads``). The buckets are then formed band by
band, one band per thread (a radix sort of the band's hashes), and the pairs written once. The
numpy path this replaced is kept as the tests' reference (``tests/near_numpy.py``), which the pass
equals bit for bit: the same signatures, bands, candidates and Jaccards.

A text longer than ``max_text_chars`` code points is shingled on its first ``max_text_chars``
(``describe()`` records the cap, the stored ``texts_cut`` how many texts it cut), so a 30 MB cell
costs the memory of the cap, not of its 30 M shingles.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TypeAlias

import numba
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from numba import prange
from numba.cpython.unsafe.numbers import trailing_zeros

from hubsurvey.core.compiled import compiled, read_only, string_buffers
from hubsurvey.core.figures import NEAR_CURVE, NEAR_DEFAULT_SHINGLE, NEAR_DEFAULT_THRESHOLD
from hubsurvey.survey import normalize, passages

_EMPTY = np.iinfo(np.uint64).max  # a signature bin no shingle landed in
#: The candidates' Jaccard is first estimated from this many signature bins (16 bits each: 128
#: bytes a text); a candidate whose estimate is below the lowest threshold by more than the margin
#: is dropped unverified. The estimate's standard deviation is about 0.06 at J = 0.6 (64 bins),
#: so a pair at J >= 0.6 is dropped with probability < 1e-4 (higher for texts of a few shingles,
#: whose bins are copies).
SKETCH_BINS = 64
SKETCH_MARGIN = 0.3
_P = np.uint64(0x100000001B3)  # the shingle polynomial's base (FNV's prime: odd, spreads small code points)
#: Densification tries this many pseudo-random bins for an empty bin before it falls back to the
#: nearest non-empty bin to the right: a bin is left to the fallback with probability e^t, where e
#: is the share of empty bins (a text of k shingles in 128 bins: e = e^(-k/128); 0.6^32 ~ 1e-7).
DENSIFY_ATTEMPTS = 32
_QUICK_ATTEMPTS = 4  # the attempts the pass reads for every empty bin, without a branch
assert DENSIFY_ATTEMPTS >= _QUICK_ATTEMPTS
#: The code points a batch of texts holds at most (its UTF-8 bytes: 1-4 each): the pass's memory
#: besides its 256 bytes a text of bands and sketch.
BATCH_CHARS = 1 << 23
#: A second thread is started for every this many texts: below, waking the thread pool on a busy
#: machine (measured: 20-25 ms a launch at load 10 on 2 cores) costs more than it saves.
TEXTS_PER_THREAD = 20_000
_PREFILTER_WORDS = 1 << 17  # 2^23 bits: the bitmaps of the candidates' prefilter (1 MB each)
BANDS_PER_LAUNCH = 4  # the candidates' bands a thread takes per call (4 x 2 threads: 4 calls for 32 bands)


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
    #: a text is shingled on its first this many code points (characters), so one huge cell cannot
    #: hold gigabytes of shingles; the longest string cell of the shared configs has 4,759 characters,
    #: and the stored ``texts_cut`` counts the texts it cut
    max_text_chars: int = 1_000_000

    @property
    def lowest(self) -> float:
        """Pairs are found down to the lowest threshold used (the curve's, or tau)."""
        return min((*self.curve, self.threshold))

    def describe(self) -> dict[str, object]:
        return {"threshold": self.threshold, "curve": list(self.curve), "shingle": f"char-{self.shingle_size}",
                "minhash": f"oph-{self.bins}", "bands": self.bins // self.band_rows, "band_rows": self.band_rows,
                "max_bucket": self.max_bucket, "max_texts": self.max_texts, "max_text_chars": self.max_text_chars}


def sample(keys: np.ndarray, query: np.ndarray, max_texts: int) -> np.ndarray:
    """Which texts to compare (a boolean per text): all when they fit in ``max_texts``; else every
    test or validation text (the ``query`` ones: the figures count their rows) and a sample of the
    others, by hash of their key, so a rerun picks the same ones."""
    return sample_mask(keys, query, sample_rate(len(keys), int(query.sum()), max_texts))


def sample_rate(texts: int, queries: int, max_texts: int) -> float | None:
    """The share of the other (not ``query``) texts that :func:`sample_mask` keeps, given how many
    texts there are and how many of them are query texts; None: every text is kept."""
    if texts <= max_texts:
        return None
    return min(max(max_texts - queries, 0) / max(texts - queries, 1), 1.0)


def sample_mask(keys: np.ndarray, query: np.ndarray, rate: float | None) -> np.ndarray:
    """:func:`sample` of some of the texts, given the rate :func:`sample_rate` found for all: a text's
    fate depends on its key alone, so the texts can be taken batch by batch."""
    if rate is None:
        return np.ones(len(keys), dtype=bool)
    return query | (_mix(keys.astype(np.uint64)) < np.uint64(rate * float(_EMPTY)))


def _mix(x: np.ndarray) -> np.ndarray:
    """splitmix64's finalizer: spreads a 64-bit value's bits (in place on a copy)."""
    x = x ^ (x >> np.uint64(30))
    x *= np.uint64(0xBF58476D1CE4E5B9)
    x ^= x >> np.uint64(27)
    x *= np.uint64(0x94D049BB133111EB)
    x ^= x >> np.uint64(31)
    return x


def _borrow_table(bins: int, attempts: int) -> np.ndarray:
    """(attempts, bins): the bin an empty bin borrows from at each attempt. Fixed for every text
    (seeded), so two texts with the same empty bins borrow alike; never the bin itself."""
    draws = _mix(np.arange(1, attempts + 1, dtype=np.uint64)[:, None] * np.uint64(0x9E3779B97F4A7C15)
                 + np.arange(bins, dtype=np.uint64)[None, :] * np.uint64(0xD1B54A32D192ED03))
    offset = (draws % np.uint64(bins - 1)).astype(np.int64) + 1 if bins > 1 else np.zeros_like(draws, dtype=np.int64)
    return (np.arange(bins)[None, :] + offset) % max(bins, 1)


def _lenders(borrow: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The borrow table inverted: for each bin, the (attempt, empty bin) that borrow from it,
    ``lend_attempt[lend_start[b]:lend_start[b + 1]]`` and ``lend_bin[...]``."""
    attempts, bins = borrow.shape
    source = borrow.ravel()
    attempt = np.repeat(np.arange(attempts, dtype=np.int64), bins)
    order = np.lexsort((attempt, source))
    starts = np.searchsorted(source[order], np.arange(bins + 1)).astype(np.int64)
    return starts, attempt[order], np.tile(np.arange(bins, dtype=np.int64), attempts)[order]


# --- the compiled pass --------------------------------------------------------------------------

_U64_EMPTY = np.uint64(_EMPTY)
_TEXTS_PER_TASK = 256  # texts a thread takes at a time (one signature buffer each)
#: A text with this many filled bins densifies bin by bin (an empty bin finds a filled one in a
#: few attempts); below, each filled bin lends to the empty ones naming it (``_lenders``): 32
#: failed attempts and a long walk right for most bins of a one-shingle text, otherwise.
_DENSE_BINS = 16


@numba.njit(inline="always")
def _mix1(x: np.uint64) -> np.uint64:  # pragma: no cover - compiled
    x = x ^ (x >> np.uint64(30))
    x = x * np.uint64(0xBF58476D1CE4E5B9)
    x = x ^ (x >> np.uint64(27))
    x = x * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


@numba.njit(inline="always")
def _code_point(data: np.ndarray, i: int) -> tuple[np.uint64, int]:  # pragma: no cover - compiled
    """The code point at ``data[i]`` and the next one's position. The bytes are Python's own UTF-8
    (with surrogatepass), so they are well formed: no check."""
    b = np.uint64(data[i])
    if b < 0x80:
        return b, i + 1
    if b < 0xE0:
        return ((b & np.uint64(0x1F)) << np.uint64(6)) | (np.uint64(data[i + 1]) & np.uint64(0x3F)), i + 2
    if b < 0xF0:
        return (((b & np.uint64(0x0F)) << np.uint64(12)) | ((np.uint64(data[i + 1]) & np.uint64(0x3F)) << np.uint64(6))
                | (np.uint64(data[i + 2]) & np.uint64(0x3F))), i + 3
    return (((b & np.uint64(0x07)) << np.uint64(18)) | ((np.uint64(data[i + 1]) & np.uint64(0x3F)) << np.uint64(12))
            | ((np.uint64(data[i + 2]) & np.uint64(0x3F)) << np.uint64(6)) | (np.uint64(data[i + 3]) & np.uint64(0x3F))), i + 4


#: Code points a text is shingled in at a time (with the n - 1 before them): its hashes are made
#: over a buffer that stays in the core's first-level cache, whatever the text's length.
_SHINGLE_CHUNK = 1024


@numba.njit(inline="always")
def _shingle_buffers(n: int, longest: int) -> tuple[np.ndarray, np.ndarray]:  # pragma: no cover - compiled
    """The code point and hash buffers of :func:`_text_shingles`, for texts of at most ``longest``
    bytes (a code point is a byte at least)."""
    size = min(_SHINGLE_CHUNK, longest) + n
    return np.empty(size, dtype=np.uint64), np.empty(size, dtype=np.uint64)


@numba.njit(inline="always")
def _text_shingles(data: np.ndarray, start: int, stop: int, cap: int, n: int, seed: np.uint64, points: np.ndarray,
                   hashes: np.ndarray, out: np.ndarray, sig: np.ndarray, shift: np.uint64) -> tuple[int, bool]:  # pragma: no cover - compiled
    """Every shingle hash of the text ``data[start:stop]``, cut to its first ``cap`` code points:
    written to ``out`` when it has room, and each kept as its bin's minimum in ``sig`` when ``sig``
    has bins. A text of L >= n code points has L - n + 1 shingles, each the polynomial of its n
    code points (Horner's rule, base ``_P``, modulo 2^64) mixed with the seed; a shorter one (the
    empty text too) is one, over its own code points, tagged with its length so it equals no
    n-gram. Returns (shingles, whether the cap cut it).

    The text is decoded into ``points`` a buffer at a time (:func:`_shingle_buffers`). A buffer's
    first polynomial is computed whole and each next one from it, rolling (the code point that
    leaves times ``_P ** (n - 1)`` taken off, then one step of Horner's rule): two multiplications
    a shingle where the whole polynomial takes n - 1, and the same value modulo 2^64. The shingles
    are mixed into ``hashes``, and only then dropped into their bins, in a loop of their own: in
    the rolling loop, each bin's load waited on stores whose bins were not known yet. Rolling is
    faster than every polynomial computed whole in the compiler's vector lanes (docs/benchmarks.md,
    "Figures behind the code's choices")."""
    room = len(out)
    signed = len(sig) > 0
    lead = np.uint64(1)  # _P ** (n - 1): the weight of a shingle's first code point
    for _ in range(n - 1):
        lead = lead * _P
    limit = len(points)
    i = start
    count = 0  # code points decoded
    kept = 0  # code points in ``points``: the last n - 1 of the buffer before, then this buffer's
    made = 0  # shingles hashed
    while i < stop and count < cap:
        while kept < limit and i < stop and count < cap:
            b = data[i]
            if b < 0x80:  # ASCII: most of the bytes
                points[kept] = np.uint64(b)
                i += 1
            else:
                points[kept], i = _code_point(data, i)
            kept += 1
            count += 1
        whole = kept - n + 1  # the shingles whose n code points are all in the buffer
        if whole <= 0:
            continue  # the text ended before n code points (or a buffer ended: never, it holds n)
        h = np.uint64(0)  # the buffer's first shingle by Horner's rule, then each from the one before
        for q in range(n):
            h = h * _P + points[q]
        hashes[0] = _mix1(h ^ seed)
        for k in range(1, whole):
            h = (h - points[k - 1] * lead) * _P + points[k + n - 1]
            hashes[k] = _mix1(h ^ seed)
        for k in range(min(whole, room - made)):
            out[made + k] = hashes[k]
        if signed:
            for k in range(whole):  # the bin keeps its minimum (no branch: measured 18% faster than an if)
                h = hashes[k]
                bin_of = h >> shift
                sig[bin_of] = min(sig[bin_of], h)
        made += whole
        for q in range(n - 1):
            points[q] = points[whole + q]
        kept = n - 1
    cut = i < stop
    if count < n:
        w = np.uint64(0)
        for q in range(count):
            w = w * _P + points[q]
        h = _mix1((w ^ ((np.uint64(count) + np.uint64(1)) << np.uint64(56))) ^ seed)
        if room:
            out[0] = h
        if signed:
            bin_of = h >> shift
            if h < sig[bin_of]:
                sig[bin_of] = h
        return 1, cut
    return count - n + 1, cut


@compiled()
def _sketch_task(data, offsets, cap, n, seed64, shift, band_rows, borrow, lend_start, lend_attempt, lend_bin, sketch_step,
                 bands_t, sketch, cut, signatures, first, task):  # pragma: no cover - compiled
    """:func:`_sketch_pass` of the texts of one task (``_TEXTS_PER_TASK`` of them): not inlined in
    the parallel loop, because numba's parallel code loaded from its on-disk cache ran this work
    1.3x slower than the same code compiled in the process (measured), where a plain function
    loaded from the cache is as fast as compiled."""
    n_texts = len(offsets) - 1
    bins = borrow.shape[1]
    attempts = borrow.shape[0]
    n_bands = bins // band_rows
    sig = np.empty(bins, dtype=np.uint64)
    out = np.empty(bins, dtype=np.uint64)
    taken = np.empty(bins, dtype=np.int64)
    points, hashes = _shingle_buffers(n, _SHINGLE_CHUNK)
    no_out = np.empty(0, dtype=np.uint64)
    tried = np.empty(_QUICK_ATTEMPTS + 1, dtype=np.uint64)  # a bin's first borrow rows' values, then empty
    tried[_QUICK_ATTEMPTS] = _U64_EMPTY
    for t in range(task * _TEXTS_PER_TASK, min(n_texts, (task + 1) * _TEXTS_PER_TASK)):
        sig[:] = _U64_EMPTY
        _, was_cut = _text_shingles(data, offsets[t], offsets[t + 1], cap, n, seed64, points, hashes, no_out, sig,
                                     np.uint64(shift))
        cut[first + t] = was_cut
        # densify: an empty bin takes the first non-empty bin its borrow row names, else the
        # nearest non-empty one to its right (a text always has a shingle: every bin is filled)
        filled = 0
        for j in range(bins):
            filled += sig[j] != _U64_EMPTY
        if filled >= _DENSE_BINS:  # a few attempts find a filled bin
            # Only the empty bins are visited (the set bits of a mask, 64 bins a word), and
            # their first _QUICK_ATTEMPTS borrow rows are read and chosen among without a
            # branch: a branch per bin on whether it is empty mispredicts on a third of them
            # (measured: 1.4x the time of the whole pass); the rest is the rare fallback. The
            # choice is an index (the lowest set bit of the filled ones) into the four values:
            # written as a chain of conditional expressions, the compiler made it branches again.
            for j in range(bins):
                out[j] = sig[j]
            for w in range((bins + 63) // 64):
                unfilled = np.uint64(0)
                for b in range(min(64, bins - 64 * w)):
                    unfilled |= np.uint64(sig[64 * w + b] == _U64_EMPTY) << np.uint64(b)
                while unfilled:
                    j = 64 * w + trailing_zeros(unfilled)  # type: ignore[call-arg]  # a numba intrinsic
                    unfilled &= unfilled - np.uint64(1)
                    filled_of = np.uint64(1 << _QUICK_ATTEMPTS)
                    for a in range(_QUICK_ATTEMPTS):
                        tried[a] = sig[borrow[a, j]]
                        filled_of |= np.uint64(tried[a] != _U64_EMPTY) << np.uint64(a)
                    # the first filled one, else tried[_QUICK_ATTEMPTS]: empty
                    value = tried[trailing_zeros(filled_of)]
                    if value == _U64_EMPTY:
                        for a in range(_QUICK_ATTEMPTS, attempts):
                            value = sig[borrow[a, j]]
                            if value != _U64_EMPTY:
                                break
                        step = 1
                        while value == _U64_EMPTY and step < bins:
                            value = sig[(j + step) % bins]
                            step += 1
                    out[j] = value
        else:  # few filled bins (a short text): each lends to the empty bins whose rows name it
            for j in range(bins):
                out[j] = sig[j]
                taken[j] = attempts
            for source in range(bins):
                if sig[source] != _U64_EMPTY:
                    for e in range(lend_start[source], lend_start[source + 1]):
                        j = lend_bin[e]
                        if sig[j] == _U64_EMPTY and lend_attempt[e] < taken[j]:
                            taken[j] = lend_attempt[e]
                            out[j] = sig[source]
            nearest = _U64_EMPTY  # the fallback, by one sweep leftwards over two turns
            for position in range(2 * bins - 1, -1, -1):
                j = position % bins
                if position < bins and taken[j] == attempts and sig[j] == _U64_EMPTY:
                    out[j] = nearest
                if sig[j] != _U64_EMPTY:
                    nearest = sig[j]
        for band in range(n_bands):
            h = np.uint64(0)
            empty = True
            for r in range(band_rows):
                v = out[band * band_rows + r]
                empty = empty and v == _U64_EMPTY
                h = _mix1(h ^ (v + np.uint64(r)))
            h32 = np.uint32(h >> np.uint64(32))
            if empty:
                h32 = np.uint32(0)
            elif h32 == 0:
                h32 = np.uint32(1)  # 0 is reserved for "empty"
            bands_t[band, first + t] = h32
        for s in range(sketch.shape[1]):
            sketch[first + t, s] = np.uint16(out[s * sketch_step] >> np.uint64(48))
        if signatures.shape[0]:
            signatures[t, :] = out


@compiled(parallel=True)
def _sketch_pass(data, offsets, cap, n, seed, shift, band_rows, borrow, lend_start, lend_attempt, lend_bin, sketch_step,
                 bands_t, sketch, cut, signatures, first):  # pragma: no cover - compiled
    """Each text ``data[offsets[t]:offsets[t + 1]]``: its OPH signature, densified; its band hashes
    into ``bands_t[:, first + t]``, its sketch into ``sketch[first + t]``, whether the cap cut it
    into ``cut[first + t]`` (and the signature into ``signatures[t]`` when that has rows). The
    texts are split among numba's threads, ``_TEXTS_PER_TASK`` at a time."""
    tasks = (len(offsets) - 1 + _TEXTS_PER_TASK - 1) // _TEXTS_PER_TASK
    for task in prange(tasks):
        _sketch_task(data, offsets, cap, n, np.uint64(seed), shift, band_rows, borrow, lend_start, lend_attempt, lend_bin,
                     sketch_step, bands_t, sketch, cut, signatures, first, task)


@compiled()
def _byte_offsets(data, lengths, offsets):  # pragma: no cover - compiled
    """``offsets[k]``: where text k starts in ``data`` (UTF-8), given each text's code points."""
    i = 0
    offsets[0] = 0
    for k in range(len(lengths)):
        left = lengths[k]
        while left:
            b = data[i]
            i += 1 if b < 0x80 else (2 if b < 0xE0 else (3 if b < 0xF0 else 4))
            left -= 1
        offsets[k + 1] = i


#: The texts the pass takes: Python strings, or one Arrow string array (its buffers read in place).
Texts: TypeAlias = Sequence[str] | pa.Array | pa.ChunkedArray


def _arrow_chunks(texts: pa.Array | pa.ChunkedArray) -> Iterator[pa.Array]:
    """The string or large_string chunks, without NULLs (a NULL text is the empty text), each as it
    is (not combined: that would copy every byte)."""
    for chunk in texts.chunks if isinstance(texts, pa.ChunkedArray) else [texts]:
        if pa.types.is_string_view(chunk.type):
            chunk = chunk.cast(pa.string())
        yield pc.fill_null(chunk, "") if chunk.null_count else chunk


def _utf8(texts: Texts, cap: int) -> Iterator[tuple[int, np.ndarray, np.ndarray]]:
    """(first text, UTF-8 bytes, byte offsets) of batches of the texts. An Arrow array's chunks are
    the batches, read in place. Python strings are encoded ``BATCH_CHARS`` code points at a time, each cut
    to ``cap + 1`` (the pass cuts it to ``cap``, and sees it was longer); ``surrogatepass``: a
    lone surrogate (a Python string may hold one) is a code point like any."""
    if isinstance(texts, pa.Array | pa.ChunkedArray):
        first = 0
        for chunk in _arrow_chunks(texts):
            data, offsets = string_buffers(chunk, missing_bytes=1)
            yield first, data, offsets
            first += len(chunk)
        return
    lengths = np.minimum(np.fromiter(map(len, texts), dtype=np.int64, count=len(texts)), cap + 1)
    ends = np.cumsum(lengths)
    start = 0
    while start < len(texts):
        stop = max(int(np.searchsorted(ends, (ends[start - 1] if start else 0) + BATCH_CHARS, side="right")), start + 1)
        part = [t if len(t) <= cap else t[:cap + 1] for t in texts[start:stop]]
        data = read_only(np.frombuffer("".join(part).encode("utf-8", "surrogatepass"), dtype=np.uint8))
        offsets = np.empty(stop - start + 1, dtype=np.int64)
        _byte_offsets(data, lengths[start:stop], offsets)
        yield start, data, offsets
        start = stop


@dataclass(frozen=True)
class Sketches:
    """What the pass keeps of each text: its LSH band hashes and its 16-bit sketch (and its whole
    densified signature, for tests only)."""

    bands: np.ndarray  # (n, bins // band_rows) uint32: a view of a band-major array
    sketch: np.ndarray  # (n, SKETCH_BINS) uint16
    cut: int  # texts longer than the cap, shingled on their first max_text_chars code points
    signatures: np.ndarray | None = None  # (n, bins) uint64 when asked for


def sketch_texts(texts: Texts, params: NearParams, *, with_signatures: bool = False) -> Sketches:
    """Every text's band hashes and sketch, in one compiled pass per batch of texts."""
    return sketch_batches([texts], len(texts), params, with_signatures=with_signatures)


def sketch_batches(batches: Iterable[Texts], capacity: int, params: NearParams, *,
                   with_signatures: bool = False) -> Sketches:
    """:func:`sketch_texts` of the texts of ``batches`` one after the other (at most ``capacity``
    in all): only the batch at hand is held, never all the texts."""
    n_bands = params.bins // params.band_rows
    bands_t = np.empty((n_bands, capacity), dtype=np.uint32)
    sketch = np.empty((capacity, SKETCH_BINS), dtype=np.uint16)
    cut = np.zeros(capacity, dtype=np.bool_)
    signatures = np.empty((capacity, params.bins), dtype=np.uint64) if with_signatures else None
    borrow = _borrow_table(params.bins, DENSIFY_ATTEMPTS)
    lend_start, lend_attempt, lend_bin = _lenders(borrow)
    shift = 64 - params.bins.bit_length() + 1  # the top log2(bins) bits of a shingle's hash name its bin
    done = 0
    for texts in batches:
        if done + len(texts) > capacity:
            raise ValueError(f"the batches hold more than the {capacity} texts announced")
        for first, data, offsets in _utf8(texts, params.max_text_chars):
            first += done
            stop = first + len(offsets) - 1
            sig_out = signatures[first:stop] if signatures is not None else np.empty((0, params.bins), dtype=np.uint64)
            _sketch_pass(data, offsets, params.max_text_chars, params.shingle_size, params.seed, shift, params.band_rows,
                         borrow, lend_start, lend_attempt, lend_bin, params.bins // SKETCH_BINS, bands_t, sketch, cut,
                         sig_out, first)
        done += len(texts)
    if done < capacity:  # fewer than announced (a sample): the band-major array is copied once
        bands_t, sketch, cut = np.ascontiguousarray(bands_t[:, :done]), sketch[:done], cut[:done]
        signatures = signatures[:done] if signatures is not None else None
    return Sketches(bands_t.T, sketch, int(cut.sum()), signatures)


@compiled(parallel=True)
def _shingle_pass(data, offsets, cap, n, seed, starts, out, counts):  # pragma: no cover - compiled
    """Each text's shingle hashes into ``out[starts[t]:starts[t + 1]]``; with ``out`` empty, only
    each text's number of shingles into ``counts``."""
    no_sig = np.empty(0, dtype=np.uint64)
    for t in prange(len(offsets) - 1):
        points, hashes = _shingle_buffers(n, offsets[t + 1] - offsets[t])
        room = out[starts[t]:starts[t + 1]] if len(out) else out
        counts[t], _ = _text_shingles(data, offsets[t], offsets[t + 1], cap, n, np.uint64(seed), points, hashes, room, no_sig,
                                      np.uint64(0))


def shingle_hashes(texts: Texts, n: int, seed: int = 0, cap: int = NearParams.max_text_chars) -> tuple[np.ndarray, np.ndarray]:
    """Every shingle of every text (each cut to its first ``cap`` code points), hashed, text by
    text: (hashes uint64, the index of the text of each). Repeats are kept."""
    hashes, counts = [], []
    for _, data, offsets in _utf8(texts, cap):
        count = np.empty(len(offsets) - 1, dtype=np.int64)
        _shingle_pass(data, offsets, cap, n, seed, np.zeros(1, np.int64), np.empty(0, np.uint64), count)
        starts = np.zeros(len(count) + 1, dtype=np.int64)
        np.cumsum(count, out=starts[1:])
        out = np.empty(int(starts[-1]), dtype=np.uint64)
        _shingle_pass(data, offsets, cap, n, seed, starts, out, count)
        hashes.append(out)
        counts.append(count)
    if not hashes:
        return np.empty(0, np.uint64), np.empty(0, np.int64)
    count = np.concatenate(counts)
    return np.concatenate(hashes), np.repeat(np.arange(len(count), dtype=np.int64), count)


@compiled(parallel=True)
def _bucket_bands(bands_t, first, query, max_bucket, ids_out, sizes_out, counts):  # pragma: no cover - compiled
    """Bands ``first .. first + len(ids_out) - 1``, one a thread: its texts grouped by band hash (an
    LSD radix sort, 2 x 16 bits), and the buckets that give pairs (2 .. max_bucket texts, one a
    query text at least) written to ``ids_out[k]`` (their texts) and ``sizes_out[k]`` (their
    sizes). ``counts[k]``: (texts written, buckets written, the budget's count of the band: each
    query text times its bucket's size, the pairs it makes, a bucket over max_bucket)."""
    n = bands_t.shape[1]
    for k in prange(ids_out.shape[0]):
        band = bands_t[first + k]
        # Most texts are alone in their bucket. Two bitmaps of the hash's low bits (1 MB each, in
        # cache) mark the bits seen and those seen twice; only the texts on a bit seen twice are
        # sorted: every text whose hash repeats, and a few others (about n / 2^23 of the rest),
        # which stay buckets of one. Sorting them all cost 3x as long.
        seen = np.zeros(_PREFILTER_WORDS, dtype=np.uint64)
        twice = np.zeros(_PREFILTER_WORDS, dtype=np.uint64)
        for i in range(n):
            h = band[i]
            word = (h >> 6) & (_PREFILTER_WORDS - 1)
            bit = np.uint64(1) << np.uint64(h & 63)
            if h != 0:
                twice[word] |= seen[word] & bit
                seen[word] |= bit
        m = 0
        for i in range(n):
            h = band[i]
            if h != 0 and twice[(h >> 6) & (_PREFILTER_WORDS - 1)] & (np.uint64(1) << np.uint64(h & 63)):
                m += 1
        keys = np.empty(m, dtype=np.uint32)
        ids = np.empty(m, dtype=np.int32)
        m = 0
        for i in range(n):
            h = band[i]
            if h != 0 and twice[(h >> 6) & (_PREFILTER_WORDS - 1)] & (np.uint64(1) << np.uint64(h & 63)):
                keys[m] = h
                ids[m] = i
                m += 1
        keys2 = np.empty(m, dtype=np.uint32)
        ids2 = np.empty(m, dtype=np.int32)
        hist = np.empty(65537, dtype=np.int64)
        for shift in (0, 16):  # stable: each bucket's texts stay in index order
            hist[:] = 0
            for i in range(m):
                hist[((keys[i] >> shift) & 0xFFFF) + 1] += 1
            for d in range(1, 65537):
                hist[d] += hist[d - 1]
            for i in range(m):
                d = (keys[i] >> shift) & 0xFFFF
                keys2[hist[d]] = keys[i]
                ids2[hist[d]] = ids[i]
                hist[d] += 1
            keys[:m] = keys2
            ids[:m] = ids2
        written = 0
        buckets = 0
        budget = 0
        pairs = 0
        over = 0
        s = 0
        while s < m:
            e = s + 1
            while e < m and keys[e] == keys[s]:
                e += 1
            size = e - s
            if size > max_bucket:
                over = 1
            elif size > 1:
                asked = 0
                for i in range(s, e):
                    asked += query[ids[i]]
                if asked:
                    budget += asked * size
                    pairs += asked * (size - 1)
                    ids_out[k, written:written + size] = ids[s:e]
                    written += size
                    sizes_out[k, buckets] = size
                    buckets += 1
            s = e
        counts[k, 0] = written
        counts[k, 1] = buckets
        counts[k, 2] = budget
        counts[k, 3] = pairs
        counts[k, 4] = over


@compiled(parallel=True)
def _bucket_pairs(ids, id_starts, sizes, size_starts, pair_starts, query, n, out):  # pragma: no cover - compiled
    """Each kept band's pairs (a query text with every other text of its bucket), as codes
    min * n + max, into ``out[pair_starts[b]:]``."""
    for b in prange(len(id_starts) - 1):
        at = pair_starts[b]
        s = id_starts[b]
        for j in range(size_starts[b], size_starts[b + 1]):
            e = s + sizes[j]
            for x in range(s, e):
                a = np.int64(ids[x])
                if query[a]:
                    for y in range(s, e):
                        o = np.int64(ids[y])
                        if o != a:
                            out[at] = min(a, o) * n + max(a, o)
                            at += 1
            s = e


def candidate_pairs(bands: np.ndarray, query: np.ndarray, max_pairs: int, max_bucket: int = 500) -> tuple[np.ndarray, bool]:
    """The distinct pairs (a, b), a < b, of texts sharing a non-empty band, where a or b is a
    ``query`` text (the pairs of two other texts are never needed); and whether some were left
    out: a bucket over ``max_bucket`` texts, or ``max_pairs`` reached (thousands of similar texts
    make millions of pairs: the figures then say so rather than the survey hanging). A band whose
    pairs would pass the budget is skipped, and the next ones tried, in band order."""
    return band_buckets(bands, query, max_pairs, max_bucket).pairs()


@dataclass(frozen=True)
class Buckets:
    """The buckets of every band kept (:func:`band_buckets`): their texts, one bucket after the
    other, and what :meth:`pairs` needs to write their pairs; the band hashes are no longer needed."""

    ids: list[np.ndarray]  # per band kept: its buckets' texts (int32)
    sizes: list[np.ndarray]  # per band kept: its buckets' sizes (int32)
    pairs_of_band: list[int]  # per band kept: the pairs it writes, repeats across bands included
    query: np.ndarray  # uint8 per text
    capped: bool

    def pairs(self) -> tuple[np.ndarray, bool]:
        """The distinct pairs, as :func:`candidate_pairs` returns them."""
        n = len(self.query)
        if not self.ids:
            return np.empty((0, 2), dtype=np.int64), self.capped
        id_starts = np.r_[0, np.cumsum([len(x) for x in self.ids])]
        size_starts = np.r_[0, np.cumsum([len(x) for x in self.sizes])]
        pair_starts = np.r_[0, np.cumsum(self.pairs_of_band)]
        codes = np.empty(int(pair_starts[-1]), dtype=np.int64)
        _bucket_pairs(np.concatenate(self.ids), id_starts, np.concatenate(self.sizes), size_starts, pair_starts,
                      self.query, n, codes)
        codes.sort()
        codes = codes[np.r_[True, codes[1:] != codes[:-1]]]
        return np.stack([codes // n, codes % n], axis=1), self.capped


def band_buckets(bands: np.ndarray, query: np.ndarray, max_pairs: int, max_bucket: int = 500) -> Buckets:
    """The buckets :func:`candidate_pairs` pairs, band by band: a caller holding nothing else of
    ``bands`` can let them go before the pairs are written (128 bytes a text)."""
    n, n_bands = bands.shape
    bands_t = np.ascontiguousarray(bands.T)
    query8 = np.ascontiguousarray(query, dtype=np.uint8)
    # BANDS_PER_LAUNCH bands a thread per call: each call wakes the thread pool (20-25 ms on the
    # loaded machine); the scratch holds 6 bytes a text a band
    group = max(1, numba.get_num_threads()) * BANDS_PER_LAUNCH
    kept_ids, kept_sizes, kept_pairs = [], [], []
    total, capped = 0, False
    ids_out = np.empty((group, n), dtype=np.int32)
    sizes_out = np.empty((group, n // 2 + 1), dtype=np.int32)
    for first in range(0, n_bands, group):
        k = min(group, n_bands - first)
        counts = np.zeros((k, 5), dtype=np.int64)
        _bucket_bands(bands_t, first, query8, max_bucket, ids_out[:k], sizes_out[:k], counts)
        for j in range(k):
            written, buckets, budget, pairs, over = counts[j].tolist()
            capped = capped or bool(over)
            if not budget:
                continue
            if total + budget > max_pairs:  # this band would pass the budget: skip it, try the next
                capped = True
                continue
            total += budget
            kept_ids.append(ids_out[j, :written].copy())
            kept_sizes.append(sizes_out[j, :buckets].copy())
            kept_pairs.append(pairs)
    return Buckets(kept_ids, kept_sizes, kept_pairs, query8, capped)


@compiled(parallel=True)
def _estimates(sketch, a, b, out):  # pragma: no cover - compiled
    for p in prange(len(a)):
        same = 0
        for s in range(sketch.shape[1]):
            same += sketch[a[p], s] == sketch[b[p], s]
        out[p] = same / sketch.shape[1]


@compiled(parallel=True)
def _sorted_sets(hashes, starts, sizes):  # pragma: no cover - compiled
    """Each text's shingle hashes ``hashes[starts[t]:starts[t + 1]]`` sorted, repeats moved out:
    the set is the first ``sizes[t]``."""
    for t in prange(len(starts) - 1):
        part = hashes[starts[t]:starts[t + 1]]
        part.sort()
        m = 0
        for i in range(len(part)):
            if i == 0 or part[i] != part[m - 1]:
                part[m] = part[i]
                m += 1
        sizes[t] = m


@compiled(parallel=True)
def _set_jaccard(hashes, starts, sizes, a, b, out):  # pragma: no cover - compiled
    for p in prange(len(a)):
        i, i_end = starts[a[p]], starts[a[p]] + sizes[a[p]]
        j, j_end = starts[b[p]], starts[b[p]] + sizes[b[p]]
        common = 0
        while i < i_end and j < j_end:
            if hashes[i] == hashes[j]:
                common += 1
                i += 1
                j += 1
            elif hashes[i] < hashes[j]:
                i += 1
            else:
                j += 1
        out[p] = common / (sizes[a[p]] + sizes[b[p]] - common)


def _take(texts: pa.Array | pa.ChunkedArray, rows: np.ndarray) -> pa.ChunkedArray:
    """The texts at ``rows`` (ascending), chunk by chunk: pyarrow's ChunkedArray.take combines
    the chunks first, a copy of every text."""
    chunks = texts.chunks if isinstance(texts, pa.ChunkedArray) else [texts]
    starts = np.cumsum([0] + [len(c) for c in chunks])
    which = np.searchsorted(starts, rows, side="right") - 1
    parts = [chunks[k].take(pa.array(rows[which == k] - starts[k])) for k in np.unique(which)]
    return pa.chunked_array(parts, type=texts.type)


def jaccard(pairs: np.ndarray, texts: Texts, n: int, cap: int = NearParams.max_text_chars) -> np.ndarray:
    """The exact Jaccard of each pair's shingle sets (sets of 64-bit shingle hashes, of each text's
    first ``cap`` code points)."""
    if not len(pairs):
        return np.empty(0)
    used = np.unique(pairs.ravel())
    return jaccard_of(pairs, used, _pick(texts, used), n, cap)


def jaccard_of(pairs: np.ndarray, used: np.ndarray, picked: Texts, n: int, cap: int = NearParams.max_text_chars) -> np.ndarray:
    """:func:`jaccard`, given the texts ``used`` (ascending: every text a pair names) as ``picked``."""
    if not len(pairs):
        return np.empty(0)
    hashes, text_of = shingle_hashes(picked, n, cap=cap)
    starts = np.zeros(len(used) + 1, dtype=np.int64)
    np.cumsum(np.bincount(text_of, minlength=len(used)), out=starts[1:])
    sizes = np.empty(len(used), dtype=np.int64)
    _sorted_sets(hashes, starts, sizes)
    out = np.empty(len(pairs))
    _set_jaccard(hashes, starts, sizes, np.searchsorted(used, pairs[:, 0]), np.searchsorted(used, pairs[:, 1]), out)
    return out


def _pick(texts: Texts, rows: np.ndarray) -> Texts:
    return _take(texts, rows) if isinstance(texts, pa.Array | pa.ChunkedArray) else [texts[i] for i in rows]


class TextSource:
    """The texts to compare, as the pass reads them: batch by batch (each with which of its texts
    are query texts: test or validation), then again, only those a candidate pair names, by
    index. This one holds its texts; the engine's reads them from the splits' files (``survey/metrics.py``),
    so a config's texts are never all in memory at once."""

    def __init__(self, texts: Texts, query: np.ndarray):
        self.texts, self.query = texts, query

    def __len__(self) -> int:
        """How many texts the batches hold at most."""
        return len(self.texts)

    def batches(self) -> Iterator[tuple[Texts, np.ndarray]]:
        yield self.texts, self.query

    def take(self, rows: np.ndarray) -> Texts:
        """The texts at ``rows`` (ascending indices into the texts the batches gave, in order)."""
        return _pick(self.texts, rows)


@dataclass(frozen=True)
class NearPairs:
    """The verified pairs (indices into the texts, a < b) at Jaccard >= the lowest threshold."""

    pairs: np.ndarray  # (m, 2) int64
    jaccard: np.ndarray  # (m,) float
    candidates: int  # the LSH candidates
    capped: bool  # candidates were left out (a bucket over max_bucket, or max_pairs): a figure may miss pairs
    verified: int = 0  # the candidates whose exact Jaccard was computed (the others' estimate was far below)
    cut: int = 0  # texts over max_text_chars, shingled on their first max_text_chars code points


def find_pairs(texts: Texts, query: np.ndarray, params: NearParams, *,
               max_pairs: int = 10_000_000, threads: int | None = None) -> NearPairs:
    """Every pair of texts at Jaccard >= ``params.lowest`` that MinHash-LSH proposes, verified:
    :func:`find_pairs_in` of texts held in memory (Python strings, or an Arrow string array,
    whose bytes are read in place)."""
    return find_pairs_in(TextSource(texts, query), params, max_pairs=max_pairs, threads=threads)


def find_pairs_in(source: TextSource, params: NearParams, *,
                  max_pairs: int = 10_000_000, threads: int | None = None) -> NearPairs:
    """Every pair of the source's texts at Jaccard >= ``params.lowest`` that MinHash-LSH proposes,
    verified; the indices are the texts' order in the source's batches.

    Memory holds one batch of texts (and one ``BATCH_CHARS`` piece of its UTF-8 bytes, for Python
    strings) and, for every text, its band hashes (4 bytes a band) and its sketch (128 bytes),
    never a text's shingles; then the texts the candidates name. ``threads``: how many threads the
    compiled pass uses at most (default: numba's, one per core; a survey running one job per core
    passes 1), one per ``TEXTS_PER_THREAD`` texts. The result does not depend on it.
    """
    _warmed()
    before = numba.get_num_threads()
    most: int = numba.config.NUMBA_NUM_THREADS  # type: ignore[attr-defined]
    wanted = min(threads or most, most, len(source) // TEXTS_PER_THREAD)
    numba.set_num_threads(max(1, wanted))
    try:
        return _find_pairs(source, params, max_pairs)
    finally:
        numba.set_num_threads(before)


def _find_pairs(source: TextSource, params: NearParams, max_pairs: int) -> NearPairs:
    queries: list[np.ndarray] = []

    def texts() -> Iterator[Texts]:
        for batch, query in source.batches():
            queries.append(np.asarray(query, dtype=np.bool_))
            yield batch

    sketched = sketch_batches(texts(), len(source), params)
    query = np.concatenate(queries) if queries else np.zeros(0, dtype=np.bool_)
    buckets = band_buckets(sketched.bands, query, max_pairs, params.max_bucket)
    sketch, cut = sketched.sketch, sketched.cut
    del sketched  # the band hashes go before the pairs are written: the stage's peak was there
    candidates, capped = buckets.pairs()
    del buckets
    listed = len(candidates)
    # Most candidates of real data are texts that share a band by chance (J ~ 0.1-0.3); the
    # sketch's estimate of J sends them away before the exact (and costlier) check.
    estimate = np.empty(len(candidates))
    _estimates(sketch, np.ascontiguousarray(candidates[:, 0]), np.ascontiguousarray(candidates[:, 1]), estimate)
    candidates = candidates[estimate >= params.lowest - SKETCH_MARGIN]
    del sketch  # the verification holds the candidates' texts instead
    used = np.unique(candidates.ravel())
    similarity = jaccard_of(candidates, used, source.take(used), params.shingle_size, params.max_text_chars) \
        if len(candidates) else np.empty(0)
    keep = similarity >= params.lowest
    return NearPairs(candidates[keep], similarity[keep], listed, capped, len(candidates), cut)


def one_thread() -> None:
    """The compiled passes launched from the calling thread run on it alone (numba's thread count
    is the thread's own)."""
    numba.set_num_threads(1)


_warming: threading.Thread | None = None


def warm_up() -> None:
    """Load the compiled pass (numba's on-disk cache, or compile it) and load the character table
    (``passages.char_table``: built by the first process, read from its cache by the others) in a
    thread, once a process, on a few texts: 0.4-1.0 s, which then overlaps the reading and
    hashing before the near stage (DuckDB releases the GIL). The stage's entry points wait for it
    (:func:`_warmed`): two threads must not launch the parallel kernels at once."""
    global _warming
    if _warming is not None:
        return

    _warming = threading.Thread(target=compile_passes, name="near-warm-up", daemon=True)
    _warming.start()


def compile_passes(*, python_strings: bool = False) -> None:
    """Run the stage's compiled passes on three texts, two of them near-duplicates (so that every
    pass runs): each is loaded from numba's cache, or compiled and cached. The texts are one Arrow
    column (a config's one text column, read in place); with ``python_strings`` (the run's one-time
    compile), Python strings too (the rows of several text columns, joined), which take a pass of
    their own (``_byte_offsets``). A process's warm-up loads only what most jobs use."""
    texts = pa.array(["the first text to warm up with", "the first text to warm up with!", "Ünïcödé text"])
    normalized = normalize_column(pa.chunked_array([texts])).combine_chunks()
    for each in (normalized, normalized.to_pylist()) if python_strings else (normalized,):
        find_pairs(each, np.array([True, False, True]), NearParams(), threads=1)


def _warmed() -> None:
    if _warming is not None and _warming is not threading.current_thread():
        _warming.join()


def normalize_column(values: pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
    """The ``normalized`` profile of a column of the texts: a string column folded by the compiled
    pass that the contamination check uses (``passages.normalize_strings``: the rare rows it cannot
    fold go through Python), any other through ``normalize.normalize_array``. Both equal
    ``normalize_text``."""
    _warmed()
    if pa.types.is_string(values.type) or pa.types.is_large_string(values.type) or pa.types.is_string_view(values.type):
        return pa.chunked_array([passages.normalize_strings(c) for c in values.chunks]) if values.num_chunks \
            else normalize.normalize_array(values)
    return normalize.normalize_array(values)


def arrow_row_texts(columns: Sequence[pa.Array | pa.ChunkedArray]) -> pa.Array | pa.ChunkedArray | None:
    """``row_texts`` in Arrow, for one string column: the column itself, read in place by the pass
    (a NULL is the empty text there). None otherwise: several columns or a list column take
    ``row_texts`` (pyarrow's ``binary_join_element_wise`` drops the rows whose values are all NULL,
    so it cannot join them)."""
    if len(columns) == 1 and (pa.types.is_string(columns[0].type) or pa.types.is_large_string(columns[0].type)):
        return columns[0]
    return None


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
