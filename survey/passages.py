"""The compiled pass of the contamination check (``bench-2026``): one walk over a batch's UTF-8 bytes
that splits each text into the words of its ``normalized`` profile, hashes every word 13-gram, and
keeps only the windows (and the whole short texts) whose hash the benchmarks' index holds.

Why compiled: the same work in Arrow and numpy (split into a list array, look every word up, hash
the windows with prefix sums) makes and reads five arrays as long as the batch's words; this pass
makes none, and is about three times as fast (docs/benchmarks.md, "Figures behind the code's
choices").

The words, exactly as ``normalize_text(s).split()`` gives them (``survey/normalize.py``: NFKC, then
casefold, split on Python's whitespace), without running it on most rows:

- A code point is *stable* when it is a starter (combining class 0), NFKC leaves it alone, and it
  cannot compose with the character before it. A string of stable characters is its own NFKC (the
  Unicode quick check), and NFKD of a string is the concatenation of its characters' NFKD; so for a
  character ``c`` whose NFKC is all stable, ``c`` can be replaced by ``casefold(NFKC(c))`` one
  character at a time: the row's profile is the concatenation of those (split on whitespace).
- :func:`char_table` gives every code point below ``TABLE_LIMIT`` its class from Python's own
  ``unicodedata`` (so it is the Unicode version ``normalize_text`` uses): its folded bytes, a word
  separator, or *unsafe* (a combining mark, a character that composes, one whose NFKC is not all
  stable, a folded form mixing letters and whitespace).
- A row holding an unsafe character is handed back; its profile is computed in Python and scanned
  again in the literal mode (words are split on the space alone, bytes hashed as they are).

Each word's value is FNV-1a (64 bits) of its folded UTF-8 bytes, and a window's hash
``sum(v[s + k] * P^k)`` over its 13 words, kept as a rolling sum: the same values as
``contamination.fnv1a`` and ``contamination.window_hashes``, which build the index (and are the
reference the tests compare this pass with). Membership is tested in an open-addressing table of the
index's keys; a window across two rows never exists (every row starts afresh).
"""

from __future__ import annotations

import contextlib
import hashlib
import inspect
import os
import sys
import tempfile
import unicodedata
import zipfile
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numba
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from hubsurvey.core.compiled import cache_folder, compiled, string_buffers
from hubsurvey.survey.normalize import normalize_text

# The hash's definition, shared with the reference in contamination.py (fnv1a, window_hashes).
NGRAM = 13  # words in a matched passage; an item with fewer is matched whole
FNV_OFFSET = 0xCBF29CE484222325  # a word's value: FNV-1a (64 bits) of its UTF-8 bytes
FNV_PRIME = 0x100000001B3
WINDOW_BASE = 0x9E3779B97F4A7C15  # a window's hash: sum of its words' values times WINDOW_BASE^k (odd)
TABLE_LIMIT = 0x30000  # code points above (planes 3 and up: rare) take the Python path
UNSAFE, SEPARATOR, AS_IS = -1, -2, -3  # a code point's class; >= 0: where its folded bytes are
_FNV_OFFSET = np.uint64(FNV_OFFSET)
_FNV_PRIME = np.uint64(FNV_PRIME)
_P_INV = pow(WINDOW_BASE, -1, 2**64)
_SPREAD = np.uint64(0x9E3779B97F4A7C15)  # a key's slot: Fibonacci hashing of its bits


# --- the code-point classes ------------------------------------------------------------------------------

def _composes_backward(limit: int = TABLE_LIMIT) -> set[int]:
    """The code points that can compose with the character before them (NFKC_QC = Maybe): the
    second half of every primary composite's canonical pair, and the Hangul vowel and trailing jamo."""
    out = set(range(0x1161, 0x1176)) | set(range(0x11A8, 0x11C3))
    for z in range(limit):
        d = unicodedata.decomposition(chr(z))
        if not d or d.startswith("<"):
            continue
        parts = d.split()
        if len(parts) == 2 and unicodedata.normalize("NFC", "".join(chr(int(p, 16)) for p in parts)) == chr(z):
            out.add(int(parts[1], 16))
    return out


@dataclass(frozen=True)
class CharTable:
    """Every code point's class (``classes``) and the folded bytes of those that change
    (``folded[starts[k]:starts[k + 1]]``). ``ascii`` is the fast path's byte table: 255
    (never an ASCII byte) for a separator, else the byte lowered."""

    classes: np.ndarray  # int32 per code point below TABLE_LIMIT
    starts: np.ndarray  # int64
    folded: np.ndarray  # uint8
    ascii: np.ndarray  # uint8, 128


@lru_cache(maxsize=1)
def char_table() -> CharTable:
    """The classes, from this Python's ``unicodedata``: built once (0.5-0.6 s, a Python call per code
    point), then loaded from the compiled passes' cache folder (``compiled.cache_folder``) in a few
    milliseconds by every later process. The file's name holds what the table depends on (the
    Unicode version, the limit and the code that builds it), so a table from another Python or
    another version of this module is never read; an unreadable one is built again."""
    path = _char_table_file()
    if path is not None:
        with contextlib.suppress(OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile):  # unreadable: built again
            with np.load(path) as stored:
                table = CharTable(*(stored[name] for name in _TABLE_ARRAYS))
            if _well_formed(table, TABLE_LIMIT):
                return table
    table = _char_table(TABLE_LIMIT)
    if path is not None:
        with contextlib.suppress(OSError):  # best effort: a cache that cannot be written is skipped
            fd, part = tempfile.mkstemp(dir=path.parent, prefix=".chars-", suffix=".npz")
            try:
                with os.fdopen(fd, "wb") as out:
                    np.savez(out, **{name: getattr(table, name) for name in _TABLE_ARRAYS})
                os.replace(part, path)  # whole or not at all: another process may be reading it
            finally:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(part)
    return table


_TABLE_ARRAYS = ("classes", "starts", "folded", "ascii")


def _char_table_file() -> Path | None:
    """The cache file of :func:`char_table`, named by everything the table depends on."""
    folder = cache_folder(__file__)
    if folder is None:
        return None
    code = _builder_digest()
    if code is None:
        return None
    recipe = f"{code}{TABLE_LIMIT}{(UNSAFE, SEPARATOR, AS_IS)}".encode()
    version = f"py{sys.version_info[0]}{sys.version_info[1]}-ucd{unicodedata.unidata_version}"
    return folder / f"passages.chars-{version}-{hashlib.sha256(recipe).hexdigest()[:16]}.npz"


@lru_cache(maxsize=1)
def _builder_digest() -> str | None:
    """The digest of the code that builds the table (read once); None without source to read."""
    try:
        code = inspect.getsource(_char_table) + inspect.getsource(_composes_backward)
    except (OSError, TypeError):  # no source to name the table by: never cached
        return None
    return hashlib.sha256(code.encode()).hexdigest()


def _well_formed(table: CharTable, limit: int) -> bool:
    """The shapes and types :func:`_char_table` gives: a stored table is read only if it has them."""
    return (table.classes.dtype == np.int32 and table.classes.shape == (limit,)
            and table.starts.dtype == np.int64 and table.starts.ndim == 1 and len(table.starts) >= 1
            and table.folded.dtype == np.uint8 and table.folded.ndim == 1 and int(table.starts[-1]) == len(table.folded)
            and table.ascii.dtype == np.uint8 and table.ascii.shape == (128,)
            and int(table.starts[0]) == 0 and bool((np.diff(table.starts) >= 0).all())
            and int(table.classes.min(initial=0)) >= AS_IS and int(table.classes.max(initial=AS_IS)) < len(table.starts) - 1)


@lru_cache(maxsize=1)
def ascii_char_table() -> CharTable:
    """The classes of the ASCII code points alone, the rows of ``char_table()`` below 128 (every
    other code point is unsafe here): built in no time, for a pass that hands the other rows back."""
    return _char_table(128)


def _char_table(limit: int) -> CharTable:
    maybe = _composes_backward(limit)

    def stable(ch: str) -> bool:
        return unicodedata.combining(ch) == 0 and ord(ch) not in maybe and unicodedata.normalize("NFKC", ch) == ch

    classes = np.full(limit, UNSAFE, dtype=np.int32)
    pieces: list[bytes] = []
    for cp in range(limit):
        if 0xD800 <= cp <= 0xDFFF:
            continue  # surrogates: never in valid UTF-8
        ch = chr(cp)
        nfkc = unicodedata.normalize("NFKC", ch)
        if not all(stable(x) for x in nfkc):
            continue
        folded = nfkc.casefold()
        spaces = [x.isspace() for x in folded]
        if folded and all(spaces):
            classes[cp] = SEPARATOR
        elif folded and not any(spaces):
            if folded == ch:
                classes[cp] = AS_IS
            else:
                classes[cp] = len(pieces)
                pieces.append(folded.encode("utf-8"))
    starts = np.zeros(len(pieces) + 1, dtype=np.int64)
    starts[1:] = np.cumsum([len(p) for p in pieces])
    folded_bytes = np.frombuffer(b"".join(pieces), dtype=np.uint8).copy()
    ascii_table = np.full(128, 255, dtype=np.uint8)
    for b in range(128):
        if classes[b] == AS_IS:
            ascii_table[b] = b
        elif classes[b] >= 0:  # A-Z: the only ASCII that folds, to one byte
            ascii_table[b] = folded_bytes[starts[classes[b]]]
    assert (classes[:128] != UNSAFE).all()  # every ASCII character folds or separates
    return CharTable(classes, starts, folded_bytes, ascii_table)


# --- the key tables -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class KeySet:
    """A set of 64-bit keys as an open-addressing table (0: an empty slot; ``has_zero``: whether
    the key 0 is in the set), in front of it a bit filter of 16 bits per key (most windows are not
    in the set, and the filter, 1/8 of the table, stays in the cache where the table may not:
    measured on 105k keys, it halves the pass's lookups' time)."""

    table: np.ndarray
    filter: np.ndarray  # uint64 words: bit f set when a key's top bits + 3 are f
    bits: int
    has_zero: bool

    @classmethod
    def of(cls, keys: np.ndarray) -> KeySet:
        keys = np.unique(np.asarray(keys, dtype=np.uint64))
        bits = max(4, int(len(keys) * 2).bit_length())  # at most half full
        table = np.zeros(1 << bits, dtype=np.uint64)
        bit_filter = np.zeros(1 << (bits + _FILTER_BITS - 6), dtype=np.uint64)
        _fill(table, bit_filter, bits, keys)
        return cls(table, bit_filter, bits, bool(len(keys) and keys[0] == 0))

    def contains(self, keys: np.ndarray) -> np.ndarray:
        """Whether each key is in the set (the pass's own test, for many keys at once)."""
        out = np.empty(len(keys), dtype=np.bool_)
        _contains(self.table, self.filter, self.bits, self.has_zero, np.asarray(keys, dtype=np.uint64), out)
        return out


_FILTER_BITS = 3  # the filter has 2^3 bits per slot of the table


@compiled()
def _fill(table: np.ndarray, bit_filter: np.ndarray, bits: int, keys: np.ndarray) -> None:
    shift = np.uint64(64 - bits)
    filter_shift = np.uint64(64 - bits - _FILTER_BITS)
    last = np.uint64(len(table) - 1)
    for k in keys:
        if k == 0:
            continue
        x = k * _SPREAD
        f = x >> filter_shift
        bit_filter[f >> np.uint64(6)] |= np.uint64(1) << (f & np.uint64(63))
        s = x >> shift
        while table[s] != 0 and table[s] != k:
            s = (s + np.uint64(1)) & last
        table[s] = k


@numba.njit(inline="always")
def _has(table: np.ndarray, bit_filter: np.ndarray, bits: int, has_zero: bool, k: np.uint64) -> bool:
    if k == 0:
        return has_zero
    x = k * _SPREAD
    f = x >> np.uint64(64 - bits - _FILTER_BITS)
    if (bit_filter[f >> np.uint64(6)] >> (f & np.uint64(63))) & np.uint64(1) == 0:
        return False
    last = np.uint64(len(table) - 1)
    s = x >> np.uint64(64 - bits)
    while True:
        t = table[s]
        if t == k:
            return True
        if t == 0:
            return False
        s = (s + np.uint64(1)) & last


@compiled(nogil=True)
def _contains(table: np.ndarray, bit_filter: np.ndarray, bits: int, has_zero: bool, keys: np.ndarray,
              out: np.ndarray) -> None:
    for i in range(len(keys)):
        out[i] = _has(table, bit_filter, bits, has_zero, keys[i])


# --- the pass -----------------------------------------------------------------------------------------

@numba.njit(inline="always")
def _utf8_at(data: np.ndarray, i: int, end: int, limit: int) -> tuple[int, int]:  # pragma: no cover
    """The code point of the UTF-8 sequence at ``data[i]`` and its length in bytes; (-1, 0) when
    the sequence is malformed, cut short by the row's end at ``end``, or at ``limit`` or beyond
    (the passes hand such a row back to Python)."""
    b = data[i]
    cp = np.int64(b)
    step = np.int64(0)
    if b >= 0xF0 and b < 0xF8:
        step = np.int64(4)
        cp &= 0x07
    elif b >= 0xE0 and b < 0xF0:
        step = np.int64(3)
        cp &= 0x0F
    elif b >= 0xC2 and b < 0xE0:
        step = np.int64(2)
        cp &= 0x1F
    else:
        return -1, 0
    if i + step > end:
        return -1, 0
    for j in range(1, step):
        c = data[i + j]
        if c & 0xC0 != 0x80:
            return -1, 0
        cp = (cp << 6) | (np.int64(c) & 0x3F)
    if cp >= limit:
        return -1, 0
    return int(cp), int(step)


@compiled(nogil=True)
def _pass(data, offsets, literal, ascii_table, classes, starts, folded, powers, mask,
          grams, grams_filter, grams_bits, grams_zero, shorts, shorts_filter, shorts_bits, shorts_zero,
          hit_row, hit_word, hit_key, whole_row, whole_key, row_words, values):  # pragma: no cover
    """Walk the rows ``offsets[r]..offsets[r + 1]`` of ``data``. Writes each row's word count
    (``row_words``; -1 for a row handed back), every word's value when ``values`` has room, the
    windows whose key is in ``grams`` (row, first word, key) and the 1-12-word rows whose whole
    hash is in ``shorts``; returns (hits, wholes): a count over the arrays' room means the call
    must be made again with more."""
    n_rows = len(offsets) - 1
    ring = np.zeros(NGRAM, dtype=np.uint64)
    p_last = powers[NGRAM - 1]
    p_inv = np.uint64(_P_INV)
    n_hits = 0
    n_whole = 0
    n_values = 0
    for r in range(n_rows):
        hits_before = n_hits
        values_before = n_values
        count = 0
        slot = 0
        h = np.uint64(0)
        w = np.uint64(0)
        in_word = False
        unsafe = False
        i = offsets[r]
        end = offsets[r + 1]
        while i <= end:
            # one step: a piece of a word (its bytes: data[a:b] or folded[a:b]) or a separator
            piece_start = 0
            piece_stop = 0
            from_folded = False
            separator = False
            step = 1
            if i == end:
                separator = True
            else:
                b = data[i]
                if literal:
                    if b == 32:
                        separator = True
                    else:
                        piece_start = i
                        piece_stop = i + 1
                elif b < 128:
                    lowered = ascii_table[b]
                    if lowered == 255:
                        separator = True
                    else:
                        if not in_word:
                            w = _FNV_OFFSET
                            in_word = True
                        w = (w ^ np.uint64(lowered)) * _FNV_PRIME
                        i += 1
                        while i < end:  # the rest of an ASCII word, in a tight loop
                            lowered = ascii_table[data[i]] if data[i] < 128 else 255
                            if lowered == 255:
                                break
                            w = (w ^ np.uint64(lowered)) * _FNV_PRIME
                            i += 1
                        continue
                else:
                    # one UTF-8 sequence; anything malformed is handed back to Python
                    cp, step = _utf8_at(data, i, end, len(classes))
                    if cp < 0:
                        unsafe = True
                        break
                    k = classes[cp]
                    if k == -1:
                        unsafe = True
                        break
                    if k == -2:
                        separator = True
                    elif k == -3:
                        piece_start = i
                        piece_stop = i + step
                    else:
                        piece_start = starts[k]
                        piece_stop = starts[k + 1]
                        from_folded = True
            if separator:
                if in_word:
                    in_word = False
                    if count < NGRAM:
                        h += w * powers[count]
                    else:
                        h = (h - ring[slot]) * p_inv + w * p_last
                    ring[slot] = w
                    slot = slot + 1 if slot < NGRAM - 1 else 0  # count % NGRAM, without a division
                    if n_values < len(values):
                        values[n_values] = w
                    n_values += 1
                    count += 1
                    if count >= NGRAM and _has(grams, grams_filter, grams_bits, grams_zero, h & mask):
                        if n_hits < len(hit_row):
                            hit_row[n_hits] = r
                            hit_word[n_hits] = count - NGRAM
                            hit_key[n_hits] = h & mask
                        n_hits += 1
            else:
                if not in_word:
                    w = _FNV_OFFSET
                    in_word = True
                for j in range(piece_start, piece_stop):
                    w = (w ^ np.uint64(folded[j] if from_folded else data[j])) * _FNV_PRIME
            i += step
        if unsafe:
            n_hits = hits_before  # its windows so far are dropped: Python redoes the row
            n_values = values_before
            row_words[r] = -1
            continue
        row_words[r] = count
        if 0 < count < NGRAM and _has(shorts, shorts_filter, shorts_bits, shorts_zero, h & mask):
            if n_whole < len(whole_row):
                whole_row[n_whole] = r
                whole_key[n_whole] = h & mask
            n_whole += 1
    return n_hits, n_whole


@dataclass
class Passes:
    """What one pass over a batch found: the candidate windows (row, first word, key), the
    candidate whole texts (row, key) and each row's number of words."""

    hit_row: np.ndarray
    hit_word: np.ndarray
    hit_key: np.ndarray
    whole_row: np.ndarray
    whole_key: np.ndarray
    row_words: np.ndarray
    values: np.ndarray  # every word's value, row by row (only when asked for)


@lru_cache(maxsize=1)
def _empty() -> KeySet:
    """The empty key set (built on first use: building one runs compiled code, not at import)."""
    return KeySet.of(np.zeros(0, dtype=np.uint64))


def scan_texts(texts: pa.Array, grams: KeySet | None, shorts: KeySet | None, mask: int, *,
               with_values: bool = False) -> Passes:
    """Every candidate of ``texts`` (a string array without NULLs, not yet normalized) against the
    key sets (None: nothing is looked up). The rows the table cannot fold are normalized in Python
    and walked again literally, so the result is the one of ``normalize_text`` for every row."""
    if texts.null_count:
        raise ValueError("scan_texts takes strings without NULLs")
    if pa.types.is_string_view(texts.type):
        texts = texts.cast(pa.string())
    first = _walk(texts, grams or _empty(), shorts or _empty(), mask, literal=False, with_values=with_values)
    back = np.flatnonzero(first.row_words < 0)
    if not len(back):
        return first
    redo = pa.array([normalize_text(s) for s in texts.take(pa.array(back)).to_pylist()], pa.string())
    second = _walk(redo, grams or _empty(), shorts or _empty(), mask, literal=True, with_values=with_values)
    row_words = first.row_words.copy()
    row_words[back] = second.row_words
    values = first.values
    if with_values:  # each row's values in row order, the redone rows' put in place
        per_row = np.split(first.values, np.cumsum(np.maximum(first.row_words, 0))[:-1])
        for j, part in enumerate(np.split(second.values, np.cumsum(second.row_words)[:-1])):
            per_row[back[j]] = part
        values = np.concatenate(per_row)
    hit_row = np.concatenate([first.hit_row, back[second.hit_row]])
    whole_row = np.concatenate([first.whole_row, back[second.whole_row]])
    order, whole_order = np.argsort(hit_row, kind="stable"), np.argsort(whole_row, kind="stable")
    return Passes(
        hit_row=hit_row[order],
        hit_word=np.concatenate([first.hit_word, second.hit_word])[order],
        hit_key=np.concatenate([first.hit_key, second.hit_key])[order],
        whole_row=whole_row[whole_order],
        whole_key=np.concatenate([first.whole_key, second.whole_key])[whole_order],
        row_words=row_words, values=values)


def _walk(texts: pa.Array, grams: KeySet, shorts: KeySet, mask: int, *, literal: bool, with_values: bool) -> Passes:
    table = char_table()
    data, offsets = string_buffers(texts)
    n = len(texts)
    powers = _powers13()
    hits = max(1024, n // 8)
    values = max(1, int(offsets[-1] - offsets[0]) // 2 + n) if with_values else 0
    while True:
        hit_row = np.empty(hits, dtype=np.int64)
        hit_word = np.empty(hits, dtype=np.int64)
        hit_key = np.empty(hits, dtype=np.uint64)
        whole_row = np.empty(n, dtype=np.int64)
        whole_key = np.empty(n, dtype=np.uint64)
        row_words = np.empty(n, dtype=np.int64)
        value_out = np.empty(values, dtype=np.uint64)
        n_hits, n_whole = _pass(data, offsets, literal, table.ascii, table.classes, table.starts, table.folded,
                                   powers, np.uint64(mask), grams.table, grams.filter, grams.bits, grams.has_zero,
                                   shorts.table, shorts.filter, shorts.bits, shorts.has_zero, hit_row, hit_word, hit_key,
                                   whole_row, whole_key, row_words, value_out)
        if n_hits <= hits:
            return Passes(hit_row[:n_hits], hit_word[:n_hits], hit_key[:n_hits], whole_row[:n_whole],
                          whole_key[:n_whole], row_words, value_out[:int(row_words[row_words > 0].sum())])
        hits = n_hits  # more windows than room (a text repeating a passage): once more, with room


@lru_cache(maxsize=1)
def _powers13() -> np.ndarray:
    out = np.ones(NGRAM, dtype=np.uint64)
    for k in range(1, NGRAM):
        out[k] = np.uint64((int(out[k - 1]) * WINDOW_BASE) % 2**64)
    return out


# --- the normalized profile itself, for the near-duplicate method --------------------------------------

@compiled(nogil=True)
def _fold_pass(data, offsets, ascii_table, classes, starts, folded, out, out_offsets, back, plain):  # pragma: no cover
    """Write each row's ``normalized`` profile (the words the pass above finds, joined by one
    space) into ``out``, its end into ``out_offsets[r + 1]``; a row holding an unsafe or malformed
    character is left empty and marked in ``back``. Returns False when ``out`` had no room. A
    ``plain`` row (:func:`_plain_rows`; ``plain`` may be empty: none) is its bytes, A-Z lowered."""
    o = 0
    out_offsets[0] = 0
    room = len(out)
    for r in range(len(offsets) - 1):
        row_start = o
        wrote = False
        pending = False  # a separator after a word: one space, written before the next word's piece
        bad = False
        i = offsets[r]
        end = offsets[r + 1]
        if len(plain) and plain[r]:
            if o + (end - i) > room:
                return False
            _lower_ascii(data[i:end], out[o:o + (end - i)])
            o += end - i
            out_offsets[r + 1] = o
            continue
        while i < end:
            b = data[i]
            piece_start = i
            piece_stop = i + 1
            from_folded = False
            step = 1
            if b < 128:
                lowered = ascii_table[b]
                if lowered == 255:
                    pending = wrote
                    i += 1
                    continue
                if o + (end - i) + 1 > room:  # an ASCII run writes at most its bytes and a space
                    return False
                if pending:
                    out[o] = 32
                    o += 1
                    pending = False
                while True:  # the rest of the ASCII run, in a tight loop
                    out[o] = lowered
                    o += 1
                    i += 1
                    if i >= end or data[i] >= 128:
                        break
                    lowered = ascii_table[data[i]]
                    if lowered == 255:
                        break
                wrote = True
                continue
            cp, step = _utf8_at(data, i, end, len(classes))
            if cp < 0:
                bad = True
                break
            k = classes[cp]
            if k == UNSAFE:
                bad = True
                break
            if k == SEPARATOR:
                pending = wrote
                i += step
                continue
            piece_stop = i + step
            if k >= 0:
                piece_start = starts[k]
                piece_stop = starts[k + 1]
                from_folded = True
            if o + (piece_stop - piece_start) + 1 > room:
                return False
            if pending:
                out[o] = 32
                o += 1
                pending = False
            for j in range(piece_start, piece_stop):
                out[o] = folded[j] if from_folded else data[j]
                o += 1
            wrote = True
            i += step
        if bad:
            o = row_start
            back[r] = True
        out_offsets[r + 1] = o
    return True


def normalize_strings(texts: pa.Array) -> pa.Array:
    """The ``normalized`` profile of every string of ``texts`` (NULLs stay NULL), equal to
    ``normalize_text`` on each. One compiled pass with the ASCII rows of the table first (the whole
    table is built once and then read from a cache, which an ASCII column never needs); the rows holding other
    characters are folded again with the whole table, and those it cannot fold (rare) in Python."""
    if pa.types.is_string_view(texts.type):
        texts = texts.cast(pa.string())
    result, rows = _fold(texts, ascii_char_table())
    if not len(rows):
        return result
    others = texts.take(pa.array(rows))
    redone, again = _fold(others, char_table())
    if len(again):
        python = pa.array([normalize_text(s) for s in others.take(pa.array(again)).to_pylist()], redone.type)
        redone = pc.replace_with_mask(redone, pa.array(_mask(len(others), again)), python)
    if redone.type != result.type:  # the folded bytes outgrew a string array's offsets
        result = result.cast(redone.type)
    return pc.replace_with_mask(result, pa.array(_mask(len(texts), rows)), redone.cast(result.type))


def _plain_ascii(table: CharTable) -> bool:
    """Whether ``table`` folds the printable ASCII bytes as :func:`_plain_rows` assumes: A-Z lowered,
    the space a separator, every other byte from 33 to 126 itself."""
    printable = np.arange(32, 127)
    lowered = np.where((printable >= 65) & (printable <= 90), printable + 32, printable)
    lowered[0] = 255
    return bool(np.array_equal(table.ascii[32:127], lowered))


_PLAIN_BLOCK = 1024  # bytes :func:`_plain_rows` tests at a time


@compiled(nogil=True)
def _plain_rows(data, offsets):  # pragma: no cover - compiled
    """Which rows are plain: printable ASCII (32-126), no two spaces in a row, no space at an end.
    Such a row's ``normalized`` profile is its bytes with A-Z lowered (:func:`_plain_ascii`), and
    most rows are plain. The bytes are tested a block at a time over the whole buffer, in loops the
    compiler vectorizes (indices from 0 over views: an index that may be negative is wrapped, and
    that kept them scalar; a row at a time, the loops' setup cost as much as the test); a block
    holding another byte is walked to find its rows. Empty (no shortcut) once more than one block
    in eight, past the first 16, holds other bytes (a text in another script, say): there the walk
    would cost what the shortcut saves."""
    n = len(offsets) - 1
    plain = np.ones(n, dtype=np.bool_)
    for r in range(n):
        if offsets[r + 1] > offsets[r] and (data[offsets[r]] == 32 or data[offsets[r + 1] - 1] == 32):
            plain[r] = False
    first, last = offsets[0], offsets[n]
    r = 0
    walked = 0
    for j in range((last - first + _PLAIN_BLOCK - 1) // _PLAIN_BLOCK):
        start = first + j * _PLAIN_BLOCK
        stop = min(start + _PLAIN_BLOCK, last)
        block = data[start:min(stop + 1, last)]  # and the next block's first byte: a pair across the two
        before, after = block[:-1], block[1:]
        other = False
        for k in range(len(before)):
            other |= (before[k] == 32) & (after[k] == 32)
        for k in range(stop - start):
            other |= (block[k] < 32) | (block[k] > 126)
        if not other:
            continue
        walked += 1
        if walked > 16 and 8 * walked > j + 1:
            return np.zeros(0, dtype=np.bool_)
        for k in range(start, stop):
            b = data[k]
            if b < 32 or b > 126 or (b == 32 and k + 1 < last and data[k + 1] == 32):
                while offsets[r + 1] <= k:
                    r += 1
                plain[r] = False
    return plain


@compiled(nogil=True)
def _lower_ascii(data, out):  # pragma: no cover - compiled
    """``out[k]``: ``data[k]`` with A-Z lowered (the bytes of plain rows, :func:`_plain_rows`)."""
    for k in range(len(data)):
        b = data[k]
        out[k] = b + np.uint8(32) * np.uint8(np.uint8(b - 65) < 26)


def _mask(n: int, rows: np.ndarray) -> np.ndarray:
    mask = np.zeros(n, dtype=np.bool_)
    mask[rows] = True
    return mask


def _fold(texts: pa.Array, table: CharTable) -> tuple[pa.Array, np.ndarray]:
    """(the folded profile of ``texts``, the non-NULL rows handed back: left empty there)."""
    data, offsets = string_buffers(texts)
    n = len(texts)
    room = int(offsets[-1] - offsets[0]) + 16
    back = np.zeros(n, dtype=np.bool_)
    plain = _plain_rows(data, offsets) if n and _plain_ascii(table) else np.zeros(0, dtype=np.bool_)
    if len(plain) and plain.all():  # most columns: the bytes lowered, at the same offsets
        out = np.empty(room, dtype=np.uint8)
        _lower_ascii(data[offsets[0]:offsets[-1]], out)
        out_offsets = offsets - offsets[0]
    else:
        while True:
            out = np.empty(room, dtype=np.uint8)
            out_offsets = np.empty(n + 1, dtype=np.int64)
            back[:] = False
            if _fold_pass(data, offsets, table.ascii, table.classes, table.starts, table.folded, out, out_offsets, back,
                          plain):
                break
            room *= 2  # folded forms longer than the text (rare): once more, with room
    size = int(out_offsets[-1])
    large = pa.types.is_large_string(texts.type) or size >= 2**31
    result = pa.Array.from_buffers(pa.large_string() if large else pa.string(), n,
                                   [texts.buffers()[0] if texts.null_count and not texts.offset else None,
                                    pa.py_buffer(out_offsets.astype(np.int64 if large else np.int32)), pa.py_buffer(out[:size])],
                                   null_count=texts.null_count if not texts.offset else 0)
    if texts.null_count and texts.offset:  # a slice's bitmap starts mid-byte: put its NULLs back
        result = pc.if_else(texts.is_null(), pa.scalar(None, result.type), result)
    if texts.null_count:
        back &= ~np.asarray(texts.is_null(), dtype=np.bool_)
    return result, np.flatnonzero(back)
