"""A split's order-independent content fingerprint (``hs1:<hex>``), to cite the split a paper used.

The fingerprint names a split's rows as a multiset: the same rows in any order, from any shard
layout, read from the Hub or from a folder, give the same string; changing, adding, removing or
repeating one row changes it. It is defined here, in plain terms, so that anyone can recompute it
(``docs/method.md`` says the same):

1. **A row's content** is every column of the split, in the schema's order, each value as read
   from Parquet (a dictionary-encoded column as its values). Each value is written as bytes by
   its Arrow logical type, never by a library's text formatting:

   ========================  ==========================================================
   null                      ``n``
   boolean                   ``b1`` / ``b0``
   integer (any width)       ``i`` + decimal digits + ``;``
   float (any width)         ``f`` + the value's IEEE-754 binary64 bits as an unsigned decimal + ``;``
   string (any layout)       ``s`` + its UTF-8 byte length + ``:`` + the UTF-8 bytes
   binary (any layout)       ``x`` + its byte length + ``:`` + the bytes
   list (any layout)         ``l`` + its element count + ``:`` + every element's bytes
   struct                    ``r`` + its field count + ``:`` + every field's bytes, in field order
   anything else             ``o`` + length + ``:`` + the UTF-8 of ``str()`` of its Python value
   ========================  ==========================================================

   Every piece is self-delimiting, so a row's bytes are its values' bytes concatenated.
2. **A row's digest** is the MD5 of those bytes, read as a little-endian 128-bit integer.
3. **The split's fingerprint** is ``hs1:`` and the first 32 hex digits of the SHA-256 of
   ``hs1\\0<row count>\\0<sum of the row digests mod 2**128, 32 hex digits>\\0<column names as a JSON list>``.
   A sum, not a XOR: a row repeated twice adds its digest twice, where a XOR would cancel it.

MD5 and SHA-256 are fixed standards and the serialization is this module's, so the string does not
depend on the DuckDB or pyarrow version (DuckDB's ``hash()`` would: it is stable only within one
version). The sum is additive, so a split is fingerprinted batch by batch, in constant memory.
``tests/core/test_fingerprint.py`` compares this vectorized code with a plain-Python implementation of
the same definition.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import sys
from collections.abc import Callable, Generator, Iterable, Iterator, Sequence

import duckdb
import numba
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from hubsurvey.core import duck
from hubsurvey.core.compiled import compiled, string_buffers

#: The fingerprint's version, its prefix: a changed definition gets a new one.
FINGERPRINT_VERSION = "hs1"
_MASK = (1 << 128) - 1
_BATCH_ROWS = 65_536


def split_fingerprint(table: pa.Table | pa.RecordBatch) -> str:
    """The ``hs1:`` content fingerprint of a split held in memory (the module docstring defines it)."""
    acc = SplitFingerprint(table.schema.names)
    for batch in table.to_batches(max_chunksize=_BATCH_ROWS) if isinstance(table, pa.Table) else [table]:
        acc.add(batch)
    return acc.value()


def files_fingerprint(files: Sequence[str]) -> str:
    """The fingerprint of a split stored as Parquet files (in any order: the rows are a multiset),
    read batch by batch (:func:`parquet_batches`)."""
    acc: SplitFingerprint | None = None
    for path in files:
        acc = acc or SplitFingerprint(pq.read_schema(path).names)
        for batch in parquet_batches(path):
            acc.add(batch)
    if acc is None:
        raise ValueError("a split needs at least one file")
    return acc.value()


def _flat_type(t: pa.DataType) -> bool:
    return (pa.types.is_string(t) or pa.types.is_integer(t) or pa.types.is_boolean(t)
            or pa.types.is_float32(t) or pa.types.is_float64(t))


def parquet_batches(path: str, batch_rows: int = _BATCH_ROWS) -> Iterator[pa.RecordBatch]:
    """Every column of a Parquet file, ``batch_rows`` rows at a time, in order, as a fingerprint reads it.

    DuckDB's reader, on one thread of a connection of its own that reads a page as its scan reaches
    it: it reads the 1M-row near benchmark's 800k-row train file in 0.25 s on one core where
    pyarrow's takes 0.42 s, and the near stage peaked 20 MB lower (twelve alternated pairs). It is taken
    only for a file of flat columns (strings, integers, floats, booleans) whose types it gives as
    pyarrow does, so that the batches hold the same values and the split's fingerprint is the
    same, and whose strings are under 2 GB in all (DuckDB's Arrow strings have 32-bit offsets).
    Where DuckDB refuses a value pyarrow reads (it checks that strings are UTF-8), pyarrow reads
    on from the first row not yet given. Any other file is read by pyarrow, with a buffered stream
    without pre-buffering (its default reads a row group's whole column chunks first: 67 MB for
    that train file)."""
    done = 0  # the rows DuckDB gave
    try:
        batches = duckdb_batches(path, batch_rows)
    except duckdb.Error:  # a file DuckDB cannot open: pyarrow says why, or reads it
        batches = None
    if batches is not None:
        try:
            for batch in batches:
                yield batch
                done += batch.num_rows
            return
        # a value DuckDB refuses and pyarrow reads (a string not UTF-8): pyarrow reads on from that row
        # (DuckDB's error, or an OSError from the Arrow stream once it has started)
        except (duckdb.Error, pa.ArrowException, OSError):
            pass
        finally:
            batches.close()
    source = pq.ParquetFile(path, buffer_size=1 << 22, pre_buffer=False)
    yield from _batches_after(source.iter_batches(batch_size=batch_rows, use_threads=False), done)


def duckdb_batches(path: str, batch_rows: int = _BATCH_ROWS) -> Generator[pa.RecordBatch, None, None] | None:
    """Every column of a Parquet file as DuckDB's reader gives it (one thread, a page read as the
    scan reaches it), ``batch_rows`` rows at a time, in order; None for a file it does not give as
    pyarrow would: not every column flat (strings, integers, floats, booleans), a string column of
    2 GB or more (DuckDB's Arrow strings have 32-bit offsets), or a type of its own. The batches
    hold what pyarrow's reader holds, so a split's fingerprint is the same from either. A value
    DuckDB refuses (a string not UTF-8) raises ``duckdb.Error`` where the batches reach it."""
    source = pq.ParquetFile(path)
    schema, meta = source.schema_arrow, source.metadata  # pyarrow's types (a stored Arrow schema's)
    # each column's uncompressed pages: more than a string column's bytes, so under 2 GB they fit
    column_bytes = [sum(meta.row_group(g).column(i).total_uncompressed_size for g in range(meta.num_row_groups))
                    for i in range(meta.num_columns)]
    if not all(_flat_type(f.type) for f in schema) or max(column_bytes, default=0) >= 2**31:
        return None
    con = duck.connect(config={"threads": 1})
    try:
        relation = con.read_parquet(path)
        with contextlib.suppress(duckdb.Error):  # a DuckDB without the setting prefetches
            con.execute("SET disable_parquet_prefetching = true")
        reader = relation.to_arrow_reader(batch_rows)
    except BaseException:
        con.close()
        raise
    if [f.type for f in reader.schema] != schema.types:
        con.close()
        return None

    def batches() -> Generator[pa.RecordBatch, None, None]:
        try:
            yield from reader
        finally:
            con.close()
    return batches()


def _batches_after(batches: Iterator[pa.RecordBatch], rows: int) -> Iterator[pa.RecordBatch]:
    """The batches without their first ``rows`` rows."""
    for batch in batches:
        if rows >= batch.num_rows:
            rows -= batch.num_rows
            continue
        yield batch.slice(rows) if rows else batch
        rows = 0


class SplitFingerprint:
    """The running sum behind a fingerprint: ``add`` batches in any order, then ``value()``."""

    def __init__(self, names: Iterable[str]):
        self.names = list(names)
        self.rows = 0
        self.total = 0

    def add(self, batch: pa.RecordBatch | pa.Table) -> None:
        if batch.num_rows == 0:
            return
        columns = [c.combine_chunks() if isinstance(c, pa.ChunkedArray) else c for c in batch.columns]
        self.total = (self.total + _digest_sum_of_columns(columns)) & _MASK
        self.rows += batch.num_rows

    def value(self) -> str:
        text = f"{FINGERPRINT_VERSION}\0{self.rows}\0{self.total:032x}\0{json.dumps(self.names, ensure_ascii=False)}"
        return f"{FINGERPRINT_VERSION}:{hashlib.sha256(text.encode()).hexdigest()[:32]}"


def _buffers(values: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """(bytes, int64 offsets from 0 into them) of a string or binary array, in place."""
    data, offsets = string_buffers(values)
    return data[offsets[0]:offsets[-1]], offsets - offsets[0]


# How the compiled pass takes a column: its ``hs1`` bytes as they are (made by ``encode_values``), or
# made by the pass itself from a string column's strings in place or an integer column's values
_BYTES, _STRING, _INTEGER = 0, 1, 2


def _is_int64_exact(t: pa.DataType) -> bool:
    """An integer type whose every value an int64 holds (all but uint64)."""
    return pa.types.is_integer(t) and not pa.types.is_uint64(t)


def _digest_sum_of_columns(columns: Sequence[pa.Array]) -> int:
    """The sum of the rows' MD5 digests mod 2**128, each row the concatenation of its columns'
    ``hs1`` bytes: a string column's are made by the compiled pass from the strings in place
    (``s``, the byte length, ``:``, the bytes; ``n`` for a null), an integer column's from its
    values (``i``, the decimal digits, ``;``), any other's by :func:`encode_values`. The same sum
    as of the joined rows' digests (tested)."""
    n = len(columns[0])
    datas, offsets, kinds, valid = [], [], [], []
    ints = np.zeros((len(columns), n) if any(_is_int64_exact(c.type) for c in columns) else (0, 0), dtype=np.int64)
    base = 0
    for c, values in enumerate(columns):
        kind = _STRING if pa.types.is_string(values.type) or pa.types.is_large_string(values.type) else _BYTES
        if kind == _BYTES and pa.types.is_string_view(values.type):
            values, kind = values.cast(pa.large_string()), _STRING
        if _is_int64_exact(values.type):
            kind = _INTEGER
            ints[c] = np.asarray(values.cast(pa.int64()).fill_null(0))
            data, starts = np.zeros(0, np.uint8), np.zeros(n + 1, dtype=np.int64)
        else:
            data, starts = _buffers(values if kind == _STRING else encode_values(values))
        datas.append(data)
        offsets.append(starts + base)
        base += len(data)
        kinds.append(kind)
        valid.append(np.asarray(values.is_valid(), dtype=np.uint8) if kind != _BYTES and values.null_count
                     else np.ones(n, dtype=np.uint8))
    limbs = np.empty((n, 4), dtype=np.uint32)
    _md5_pass()(np.concatenate(datas) if datas else np.zeros(0, np.uint8), np.stack(offsets),
                np.array(kinds, dtype=np.uint8), np.stack(valid), ints, limbs, _MD5_INIT)
    sums = limbs.sum(axis=0, dtype=np.uint64)  # < 2**32 rows a batch: no limb sum overflows
    return sum(int(limb) << (32 * i) for i, limb in enumerate(sums)) & _MASK


# MD5 (RFC 1321), compiled: hashlib's call per row cost 1.4 us, three quarters of a fingerprint. The
# words are uint32, each operation's result cast back to it: numba computes integers in 64 bits, and
# the masks that kept them in 32 made the rounds 1.25x slower (measured). A row's bytes are copied
# into a scratch buffer, a slice at a time, and its blocks read from there as 32-bit words: feeding
# them byte by byte cost twice the time of the whole pass (measured). The round constants are read
# from this module's global array, which numba compiles in as a constant, so that they become the
# instructions' operands: passed as an argument, their loads held two rows side by side to 1.3x
# one row's speed, against 1.8x (measured). The tests compare every digest with hashlib's.
_MD5_K = np.array([int(abs(math.sin(i + 1)) * 2**32) & 0xFFFFFFFF for i in range(64)], dtype=np.uint32)
_MD5_INIT = np.array([0x67452301, 0xEFCDAB89, 0x98BADCFE, 0x10325476], dtype=np.uint32)
_U32 = np.uint32
#: The blocks are read as 32-bit words in the machine's order, which MD5's must be: every machine
#: numba compiles for (x86-64, AArch64, ppc64le) is little-endian.
assert sys.byteorder == "little", "the compiled MD5 reads its words little-endian"
_SCRATCH = 4096  # the bytes of a row digested at a time (a multiple of 64)
_SCRATCH_ROOM = _SCRATCH + 128  # room past it for a value's prefix (22 bytes at most) and the padding (72)


@compiled(inline="always")
def _rotl(x, c):  # pragma: no cover - compiled
    return _U32((x << _U32(c)) | (x >> _U32(32 - c)))


# A step of each round: ``a`` moved on by the round's function of ``b, c, d``, the message word ``x``,
# the constant ``kk`` and the rotation ``s``.
@compiled(inline="always")
def _f(a, b, c, d, x, kk, s):  # pragma: no cover - compiled
    return _U32(b + _rotl(_U32(a + ((b & c) | (~b & d)) + kk + x), s))


@compiled(inline="always")
def _g(a, b, c, d, x, kk, s):  # pragma: no cover - compiled
    return _U32(b + _rotl(_U32(a + ((b & d) | (c & ~d)) + kk + x), s))


@compiled(inline="always")
def _h(a, b, c, d, x, kk, s):  # pragma: no cover - compiled
    return _U32(b + _rotl(_U32(a + (b ^ c ^ d) + kk + x), s))


@compiled(inline="always")
def _i(a, b, c, d, x, kk, s):  # pragma: no cover - compiled
    return _U32(b + _rotl(_U32(a + (c ^ (b | ~d)) + kk + x), s))


# Not inlined: its unrolled rounds at every call site took numba a minute to compile.
@compiled()
def _md5_blocks(m, blocks, state):  # pragma: no cover - compiled
    """The first ``blocks`` 64-byte blocks of ``m`` (uint32 words, 16 a block) into ``state`` (four
    uint32 words). The four rounds are four loops, each with its own function and shifts, so that
    the compiler unrolls them."""
    for block in range(blocks):
        w = 16 * block
        a, b, c, d = state[0], state[1], state[2], state[3]
        for i in range(0, 16, 4):
            a = _f(a, b, c, d, m[w + i], _MD5_K[i], 7)
            d = _f(d, a, b, c, m[w + i + 1], _MD5_K[i + 1], 12)
            c = _f(c, d, a, b, m[w + i + 2], _MD5_K[i + 2], 17)
            b = _f(b, c, d, a, m[w + i + 3], _MD5_K[i + 3], 22)
        for i in range(16, 32, 4):
            a = _g(a, b, c, d, m[w + (5 * i + 1) % 16], _MD5_K[i], 5)
            d = _g(d, a, b, c, m[w + (5 * i + 6) % 16], _MD5_K[i + 1], 9)
            c = _g(c, d, a, b, m[w + (5 * i + 11) % 16], _MD5_K[i + 2], 14)
            b = _g(b, c, d, a, m[w + (5 * i + 16) % 16], _MD5_K[i + 3], 20)
        for i in range(32, 48, 4):
            a = _h(a, b, c, d, m[w + (3 * i + 5) % 16], _MD5_K[i], 4)
            d = _h(d, a, b, c, m[w + (3 * i + 8) % 16], _MD5_K[i + 1], 11)
            c = _h(c, d, a, b, m[w + (3 * i + 11) % 16], _MD5_K[i + 2], 16)
            b = _h(b, c, d, a, m[w + (3 * i + 14) % 16], _MD5_K[i + 3], 23)
        for i in range(48, 64, 4):
            a = _i(a, b, c, d, m[w + (7 * i) % 16], _MD5_K[i], 6)
            d = _i(d, a, b, c, m[w + (7 * i + 7) % 16], _MD5_K[i + 1], 10)
            c = _i(c, d, a, b, m[w + (7 * i + 14) % 16], _MD5_K[i + 2], 15)
            b = _i(b, c, d, a, m[w + (7 * i + 21) % 16], _MD5_K[i + 3], 21)
        state[0] = _U32(state[0] + a)
        state[1] = _U32(state[1] + b)
        state[2] = _U32(state[2] + c)
        state[3] = _U32(state[3] + d)


@compiled()
def _md5_blocks_two(m, n, blocks, state, state_n):  # pragma: no cover - compiled
    """:func:`_md5_blocks` of two messages at once, step beside step: each step waits on the one
    before it, so one message leaves most of a core's arithmetic units idle, and a second one's
    independent steps fill them (measured: 1.8x the blocks a second of one message)."""
    for block in range(blocks):
        w = 16 * block
        a, b, c, d = state[0], state[1], state[2], state[3]
        e, f, g, h = state_n[0], state_n[1], state_n[2], state_n[3]
        for i in range(0, 16, 4):
            a = _f(a, b, c, d, m[w + i], _MD5_K[i], 7)
            e = _f(e, f, g, h, n[w + i], _MD5_K[i], 7)
            d = _f(d, a, b, c, m[w + i + 1], _MD5_K[i + 1], 12)
            h = _f(h, e, f, g, n[w + i + 1], _MD5_K[i + 1], 12)
            c = _f(c, d, a, b, m[w + i + 2], _MD5_K[i + 2], 17)
            g = _f(g, h, e, f, n[w + i + 2], _MD5_K[i + 2], 17)
            b = _f(b, c, d, a, m[w + i + 3], _MD5_K[i + 3], 22)
            f = _f(f, g, h, e, n[w + i + 3], _MD5_K[i + 3], 22)
        for i in range(16, 32, 4):
            a = _g(a, b, c, d, m[w + (5 * i + 1) % 16], _MD5_K[i], 5)
            e = _g(e, f, g, h, n[w + (5 * i + 1) % 16], _MD5_K[i], 5)
            d = _g(d, a, b, c, m[w + (5 * i + 6) % 16], _MD5_K[i + 1], 9)
            h = _g(h, e, f, g, n[w + (5 * i + 6) % 16], _MD5_K[i + 1], 9)
            c = _g(c, d, a, b, m[w + (5 * i + 11) % 16], _MD5_K[i + 2], 14)
            g = _g(g, h, e, f, n[w + (5 * i + 11) % 16], _MD5_K[i + 2], 14)
            b = _g(b, c, d, a, m[w + (5 * i + 16) % 16], _MD5_K[i + 3], 20)
            f = _g(f, g, h, e, n[w + (5 * i + 16) % 16], _MD5_K[i + 3], 20)
        for i in range(32, 48, 4):
            a = _h(a, b, c, d, m[w + (3 * i + 5) % 16], _MD5_K[i], 4)
            e = _h(e, f, g, h, n[w + (3 * i + 5) % 16], _MD5_K[i], 4)
            d = _h(d, a, b, c, m[w + (3 * i + 8) % 16], _MD5_K[i + 1], 11)
            h = _h(h, e, f, g, n[w + (3 * i + 8) % 16], _MD5_K[i + 1], 11)
            c = _h(c, d, a, b, m[w + (3 * i + 11) % 16], _MD5_K[i + 2], 16)
            g = _h(g, h, e, f, n[w + (3 * i + 11) % 16], _MD5_K[i + 2], 16)
            b = _h(b, c, d, a, m[w + (3 * i + 14) % 16], _MD5_K[i + 3], 23)
            f = _h(f, g, h, e, n[w + (3 * i + 14) % 16], _MD5_K[i + 3], 23)
        for i in range(48, 64, 4):
            a = _i(a, b, c, d, m[w + (7 * i) % 16], _MD5_K[i], 6)
            e = _i(e, f, g, h, n[w + (7 * i) % 16], _MD5_K[i], 6)
            d = _i(d, a, b, c, m[w + (7 * i + 7) % 16], _MD5_K[i + 1], 10)
            h = _i(h, e, f, g, n[w + (7 * i + 7) % 16], _MD5_K[i + 1], 10)
            c = _i(c, d, a, b, m[w + (7 * i + 14) % 16], _MD5_K[i + 2], 15)
            g = _i(g, h, e, f, n[w + (7 * i + 14) % 16], _MD5_K[i + 2], 15)
            b = _i(b, c, d, a, m[w + (7 * i + 21) % 16], _MD5_K[i + 3], 21)
            f = _i(f, g, h, e, n[w + (7 * i + 21) % 16], _MD5_K[i + 3], 21)
        state[0] = _U32(state[0] + a)
        state[1] = _U32(state[1] + b)
        state[2] = _U32(state[2] + c)
        state[3] = _U32(state[3] + d)
        state_n[0] = _U32(state_n[0] + e)
        state_n[1] = _U32(state_n[1] + f)
        state_n[2] = _U32(state_n[2] + g)
        state_n[3] = _U32(state_n[3] + h)


_ROWS_PER_TASK = 1024  # rows a thread takes at a time (its own scratch buffers)


@compiled(inline="always")
def _digest_whole_blocks(scratch, words, fill, state):  # pragma: no cover - compiled
    """The whole blocks of ``scratch[:fill]`` into the digest; the rest (under 64 bytes) moved to
    the front. Returns the new fill."""
    blocks = fill // 64
    _md5_blocks(words, blocks, state)
    rest = fill - 64 * blocks
    for j in range(rest):
        scratch[j] = scratch[64 * blocks + j]
    return rest


@compiled(inline="always")
def _magnitude(value):  # pragma: no cover - compiled
    """|value| of an int64, as a uint64 (the least int64 too)."""
    if value < 0:
        return np.uint64(-(value + 1)) + np.uint64(1)
    return np.uint64(value)


@compiled(inline="always")
def _decimal_places(magnitude):  # pragma: no cover - compiled
    """How many decimal digits a uint64 has."""
    places = 1
    while magnitude >= np.uint64(10):
        magnitude //= np.uint64(10)
        places += 1
    return places


@compiled(inline="always")
def _decimal(scratch, fill, magnitude, digits):  # pragma: no cover - compiled
    """A uint64's decimal digits at ``scratch[fill:]``; returns the new fill."""
    places = 0
    while True:
        digits[places] = np.uint8(np.uint64(48) + magnitude % np.uint64(10))
        places += 1
        magnitude //= np.uint64(10)
        if magnitude == np.uint64(0):
            break
    for j in range(places):
        scratch[fill + j] = digits[places - 1 - j]
    return fill + places


@compiled(inline="always")
def _row_bytes(offsets, kinds, valid, ints, r):  # pragma: no cover - compiled
    """The length of row r's bytes (see :func:`_md5_columns`)."""
    total = 0
    for c in range(offsets.shape[0]):
        length = offsets[c, r + 1] - offsets[c, r]
        if kinds[c] != _BYTES and not valid[c, r]:
            total += 1
        elif kinds[c] == _STRING:
            total += 2 + _decimal_places(np.uint64(length)) + length
        elif kinds[c] == _INTEGER:
            total += 2 + (ints[c, r] < 0) + _decimal_places(_magnitude(ints[c, r]))
        else:
            total += length
    return total


@compiled(inline="always")
def _value_head(scratch, fill, kinds, valid, ints, c, r, length, digits):  # pragma: no cover - compiled
    """What the pass writes of column c's value in row r before its bytes, at ``scratch[fill:]``
    (at most 22 bytes): ``n`` for a null string or integer, a string's ``s<byte length>:``, an
    integer's whole ``i<decimal digits>;`` (as pyarrow writes it as a string: ``-`` before a
    negative one's digits), nothing for an encoded column. Returns the new fill, and whether the
    value's bytes in ``data`` follow (only for a valid string or an encoded value)."""
    if kinds[c] != _BYTES and not valid[c, r]:
        scratch[fill] = 110  # n
        return fill + 1, False
    if kinds[c] == _STRING:
        scratch[fill] = 115  # s
        fill = _decimal(scratch, fill + 1, np.uint64(length), digits)
        scratch[fill] = 58  # :
        return fill + 1, True
    if kinds[c] == _INTEGER:
        value = ints[c, r]
        scratch[fill] = 105  # i
        fill += 1
        if value < 0:
            scratch[fill] = 45  # -
            fill += 1
        fill = _decimal(scratch, fill, _magnitude(value), digits)
        scratch[fill] = 59  # ;
        return fill + 1, False
    return fill, True


@compiled(inline="always")
def _pad(scratch, fill, total):  # pragma: no cover - compiled
    """MD5's padding after a message of ``total`` bytes whose last ``fill`` are in ``scratch``: 0x80,
    zeros to 56 mod 64, the bit length (little-endian). Returns the blocks to digest."""
    scratch[fill] = 0x80
    zeros_to = (fill + 1 + 8 + 63) // 64 * 64 - 8
    scratch[fill + 1:zeros_to] = 0
    fill = zeros_to
    bits = np.uint64(total) * np.uint64(8)
    for j in range(8):
        scratch[fill + j] = np.uint8((bits >> np.uint64(8 * j)) & np.uint64(0xFF))
    return (fill + 8) // 64


@compiled(inline="always")
def _whole_row(data, offsets, kinds, valid, ints, r, scratch, digits):  # pragma: no cover - compiled
    """Row r's bytes, padded, into ``scratch`` (it fits: see :func:`_md5_columns`); returns its blocks."""
    fill = 0
    for c in range(offsets.shape[0]):
        start, stop = offsets[c, r], offsets[c, r + 1]
        fill, has_bytes = _value_head(scratch, fill, kinds, valid, ints, c, r, stop - start, digits)
        if has_bytes:
            scratch[fill:fill + stop - start] = data[start:stop]
            fill += stop - start
    return _pad(scratch, fill, fill)


@compiled(inline="always")
def _streamed_row(data, offsets, kinds, valid, ints, r, scratch, words, state, digits):  # pragma: no cover - compiled
    """Row r's digest into ``state`` (set to MD5's initial words), its bytes copied into ``scratch``
    a slice at a time, whatever their length."""
    fill = 0  # bytes in scratch, under _SCRATCH between two values (a value's head fits the room past it)
    total = 0
    for c in range(offsets.shape[0]):
        start, stop = offsets[c, r], offsets[c, r + 1]
        before = fill
        fill, has_bytes = _value_head(scratch, fill, kinds, valid, ints, c, r, stop - start, digits)
        total += fill - before
        if not has_bytes:
            stop = start
        total += stop - start
        i = start
        while True:
            if fill >= _SCRATCH:
                fill = _digest_whole_blocks(scratch, words, fill, state)
            if i == stop:
                break
            take = min(stop - i, _SCRATCH - fill)
            scratch[fill:fill + take] = data[i:i + take]
            fill += take
            i += take
    _md5_blocks(words, _pad(scratch, fill, total), state)


_PAIRED_BLOCKS = 8  # a row of up to this many blocks waits for one of as many (else for any that fits)


@compiled(parallel=True)
def _md5_columns(data, offsets, kinds, valid, ints, out, init):  # pragma: no cover - compiled
    """``out[r]``: the MD5 of row r's bytes, the concatenation over the columns c of their piece,
    by ``kinds[c]``: ``data[offsets[c, r]:offsets[c, r + 1]]`` as it is (``_BYTES``: an encoded
    column); for a string column (``_STRING``) ``s<byte length>:`` and those bytes; for an integer
    column (``_INTEGER``) ``i``, the decimal digits of ``ints[c, r]`` and ``;``; in either of the
    two, ``n`` where ``valid[c, r]`` is 0.
    The same digest as MD5 of the joined bytes, without joining them (tested against hashlib).

    Rows are digested two at a time, side by side (:func:`_md5_blocks_two`): a row whose padded
    bytes fit a scratch buffer (4 KB: most) is written there whole and waits for the next row of
    as many blocks (up to ``_PAIRED_BLOCKS``; a longer one, for the next that fits), and the two
    go through together as far as both have blocks. A row longer than the buffer is digested
    alone, a slice at a time."""
    for task in numba.prange(_tasks(offsets)):
        _md5_task(data, offsets, kinds, valid, ints, out, init, task)


@compiled()
def _md5_columns_here(data, offsets, kinds, valid, ints, out, init):  # pragma: no cover - compiled
    """:func:`_md5_columns` on the calling thread alone, not launched through numba's threading
    layer: its workqueue layer (the one numba has where neither TBB nor OpenMP is installed) aborts
    the process when two threads launch parallel passes at once, and the near stage's reading
    thread fingerprints while the pass sketches."""
    for task in range(_tasks(offsets)):
        _md5_task(data, offsets, kinds, valid, ints, out, init, task)


@compiled(inline="always")
def _tasks(offsets):  # pragma: no cover - compiled
    return (offsets.shape[1] - 1 + _ROWS_PER_TASK - 1) // _ROWS_PER_TASK


@compiled(inline="always")
def _md5_task(data, offsets, kinds, valid, ints, out, init, task):  # pragma: no cover - compiled
    """The rows of one task of :func:`_md5_columns` (``_ROWS_PER_TASK`` of them)."""
    n = offsets.shape[1] - 1
    scratch = np.empty(_SCRATCH_ROOM, dtype=np.uint8)
    words = scratch.view(np.uint32)
    # a waiting row per block count, and one for the rows longer than _PAIRED_BLOCKS
    waiting = np.empty((_PAIRED_BLOCKS + 1, _SCRATCH_ROOM), dtype=np.uint8)
    waiting_row = np.full(_PAIRED_BLOCKS + 1, -1, dtype=np.int64)
    waiting_blocks = np.zeros(_PAIRED_BLOCKS + 1, dtype=np.int64)
    state = np.empty(4, dtype=np.uint32)
    state_waiting = np.empty(4, dtype=np.uint32)
    digits = np.empty(20, dtype=np.uint8)
    for r in range(task * _ROWS_PER_TASK, min(n, (task + 1) * _ROWS_PER_TASK)):
        size = _row_bytes(offsets, kinds, valid, ints, r)
        if size + 72 > _SCRATCH_ROOM:  # 72: the most padding there is
            state[:] = init
            _streamed_row(data, offsets, kinds, valid, ints, r, scratch, words, state, digits)
            out[r, :] = state
            continue
        slot = min((size + 8) // 64 + 1, _PAIRED_BLOCKS + 1) - 1  # its padded blocks, less one
        if waiting_row[slot] < 0:
            waiting_blocks[slot] = _whole_row(data, offsets, kinds, valid, ints, r, waiting[slot], digits)
            waiting_row[slot] = r
            continue
        blocks = _whole_row(data, offsets, kinds, valid, ints, r, scratch, digits)
        other = waiting[slot].view(np.uint32)
        state[:] = init
        state_waiting[:] = init
        both = min(blocks, waiting_blocks[slot])
        _md5_blocks_two(words, other, both, state, state_waiting)
        _md5_blocks(words[16 * both:], blocks - both, state)
        _md5_blocks(other[16 * both:], waiting_blocks[slot] - both, state_waiting)
        out[r, :] = state
        out[waiting_row[slot], :] = state_waiting
        waiting_row[slot] = -1
    for slot in range(_PAIRED_BLOCKS + 1):
        if waiting_row[slot] >= 0:
            state[:] = init
            _md5_blocks(waiting[slot].view(np.uint32), waiting_blocks[slot], state)
            out[waiting_row[slot], :] = state


def _md5_pass() -> Callable[..., None]:
    """The MD5 pass for the calling thread: the parallel one, unless numba's threading layer is its
    workqueue (not thread-safe) and the thread runs one thread's passes (the near stage's reading
    thread, while the pass sketches). The parallel one on one thread ran 1.4x faster than the same
    code compiled without ``parallel`` (measured), so it stays wherever the layer allows it."""
    if numba.get_num_threads() == 1 and numba.threading_layer() == "workqueue":  # get_num_threads starts the layer
        return _md5_columns_here
    return _md5_columns


def _md5_rows(data: np.ndarray, offsets: np.ndarray, out: np.ndarray) -> None:
    """``out[r]``: the MD5 digest of ``data[offsets[r]:offsets[r + 1]]`` as four little-endian words."""
    if len(out):
        _md5_pass()(data, offsets.astype(np.int64).reshape(1, -1), np.full(1, _BYTES, dtype=np.uint8),
                    np.ones((1, len(out)), dtype=np.uint8), np.zeros((0, 0), dtype=np.int64), out, _MD5_INIT)


def _joined(*parts: pa.Array | bytes) -> pa.Array:
    """The parts concatenated row by row (bytes: the same in every row)."""
    big = [pa.scalar(p, pa.large_binary()) if isinstance(p, bytes) else p for p in parts]
    return pc.binary_join_element_wise(*big, pa.scalar(b"", pa.large_binary()))


def _null_as(encoded: pa.Array, values: pa.Array) -> pa.Array:
    """``encoded``, with ``n`` where the value is null."""
    if values.null_count == 0:
        return encoded
    return pc.if_else(pc.is_valid(values), encoded, pa.scalar(b"n", pa.large_binary()))


def _length_prefixed(tag: bytes, lengths: pa.Array, body: pa.Array) -> pa.Array:
    return _joined(tag, pc.cast(pc.fill_null(lengths, 0), pa.string()).cast(pa.large_binary()), b":", body)


def encode_values(values: pa.Array) -> pa.Array:
    """Every value of an Arrow array as its ``hs1`` bytes (a large_binary array, no nulls)."""
    t = values.type
    if pa.types.is_dictionary(t):
        return encode_values(values.dictionary_decode())
    if pa.types.is_null(t):
        return pa.array([b"n"] * len(values), pa.large_binary())
    if pa.types.is_boolean(t):
        encoded = pc.if_else(pc.fill_null(values, False), pa.scalar(b"b1", pa.large_binary()),
                             pa.scalar(b"b0", pa.large_binary()))
    elif pa.types.is_integer(t):
        encoded = _joined(b"i", pc.cast(values, pa.string()).cast(pa.large_binary()), b";")
    elif pa.types.is_floating(t):
        as_double = pc.cast(values, pa.float64()).fill_null(0.0)
        bits = np.asarray(as_double).view(np.uint64)
        encoded = _joined(b"f", pc.cast(pa.array(bits), pa.string()).cast(pa.large_binary()), b";")
    elif pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        raw = values.cast(pa.large_string()).cast(pa.large_binary())
        encoded = _length_prefixed(b"s", pc.binary_length(raw), raw)
    elif pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t) \
            or pa.types.is_binary_view(t):
        raw = values.cast(pa.large_binary())
        encoded = _length_prefixed(b"x", pc.binary_length(raw), raw)
    elif pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t) \
            or pa.types.is_list_view(t) or pa.types.is_large_list_view(t):
        lengths = pc.fill_null(pc.list_value_length(values), 0).cast(pa.int64())
        elements = encode_values(pc.list_flatten(values))
        offsets = pa.array(np.concatenate([[0], np.cumsum(np.asarray(lengths), dtype=np.int64)]), pa.int64())
        body = pc.binary_join(pa.LargeListArray.from_arrays(offsets, elements), pa.scalar(b"", pa.large_binary()))
        encoded = _length_prefixed(b"l", lengths, body)
    elif pa.types.is_struct(t):
        fields = [encode_values(pc.struct_field(values, [i])) for i in range(t.num_fields)]
        body = _joined(*fields) if fields else pa.array([b""] * len(values), pa.large_binary())
        encoded = _joined(b"r", str(t.num_fields).encode(), b":", body)
    else:  # dates, timestamps, decimals, ...: their Python value's str(), length-prefixed
        encoded = pa.array([encode_other(v) for v in values.to_pylist()], pa.large_binary())
    return _null_as(encoded.cast(pa.large_binary()), values)


def encode_other(value: object) -> bytes:
    """The ``o`` encoding of a value of any other type (``n`` for None)."""
    if value is None:
        return b"n"
    text = str(value).encode()
    return b"o%d:%s" % (len(text), text)
