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
``tests/test_fingerprint.py`` compares this vectorized code with a plain-Python implementation of
the same definition.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterable, Sequence

import numba
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from hubsurvey.core.compiled import compiled

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
    read batch by batch."""
    acc: SplitFingerprint | None = None
    for path in files:
        source = pq.ParquetFile(path)
        acc = acc or SplitFingerprint(source.schema_arrow.names)
        for batch in source.iter_batches(batch_size=_BATCH_ROWS):
            acc.add(batch)
    if acc is None:
        raise ValueError("a split needs at least one file")
    return acc.value()


class SplitFingerprint:
    """The running sum behind a fingerprint: ``add`` batches in any order, then ``value()``."""

    def __init__(self, names: Iterable[str]):
        self.names = list(names)
        self.rows = 0
        self.total = 0

    def add(self, batch: pa.RecordBatch | pa.Table) -> None:
        if batch.num_rows == 0:
            return
        rows = None
        for column in batch.columns:
            encoded = encode_values(column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column)
            rows = encoded if rows is None else _joined(rows, encoded)
        assert rows is not None  # a batch with rows has columns
        self.total = (self.total + _digest_sum(rows)) & _MASK
        self.rows += batch.num_rows

    def value(self) -> str:
        text = f"{FINGERPRINT_VERSION}\0{self.rows}\0{self.total:032x}\0{json.dumps(self.names, ensure_ascii=False)}"
        return f"{FINGERPRINT_VERSION}:{hashlib.sha256(text.encode()).hexdigest()[:32]}"


def _digest_sum(rows: pa.Array) -> int:
    """The sum of the rows' MD5 digests (little-endian 128-bit integers), mod 2**128."""
    rows = rows.cast(pa.large_binary())
    offsets = np.frombuffer(rows.buffers()[1], dtype=np.int64)[rows.offset: rows.offset + len(rows) + 1]
    data = np.frombuffer(rows.buffers()[2], dtype=np.uint8) if rows.buffers()[2] is not None else np.zeros(1, np.uint8)
    limbs = np.empty((len(rows), 4), dtype=np.uint32)
    _md5_rows(data, offsets, limbs)  # each row's digest, as its four little-endian 32-bit words
    sums = limbs.sum(axis=0, dtype=np.uint64)  # < 2**32 rows a batch: no limb sum overflows
    return sum(int(limb) << (32 * i) for i, limb in enumerate(sums)) & _MASK


# MD5 (RFC 1321), compiled: hashlib's call per row cost 1.4 us, three quarters of a fingerprint. The
# tests compare every digest with hashlib's.
_MD5_K = np.array([int(abs(math.sin(i + 1)) * 2**32) & 0xFFFFFFFF for i in range(64)], dtype=np.uint64)
_MD5_INIT = np.array([0x67452301, 0xEFCDAB89, 0x98BADCFE, 0x10325476], dtype=np.uint64)
_W32 = np.uint64(0xFFFFFFFF)


@compiled(inline="always")
def _rotl(x, c):  # pragma: no cover - compiled
    return ((x << np.uint64(c)) | (x >> np.uint64(32 - c))) & _W32


@compiled(inline="always")
def _md5_block(data, at, m, state, k):  # pragma: no cover - compiled
    """The 64-byte block ``data[at:at + 64]`` into ``state`` (four 32-bit words held in uint64);
    ``m``: 16 words of scratch. The four rounds are four loops, each with its own function and
    shifts, so that the compiler unrolls them."""
    for j in range(16):
        q = at + 4 * j
        m[j] = (np.uint64(data[q]) | (np.uint64(data[q + 1]) << np.uint64(8))
                | (np.uint64(data[q + 2]) << np.uint64(16)) | (np.uint64(data[q + 3]) << np.uint64(24)))
    a, b, c, d = state[0], state[1], state[2], state[3]
    for i in range(0, 16, 4):
        a = (b + _rotl((a + ((b & c) | (~b & _W32 & d)) + k[i] + m[i]) & _W32, 7)) & _W32
        d = (a + _rotl((d + ((a & b) | (~a & _W32 & c)) + k[i + 1] + m[i + 1]) & _W32, 12)) & _W32
        c = (d + _rotl((c + ((d & a) | (~d & _W32 & b)) + k[i + 2] + m[i + 2]) & _W32, 17)) & _W32
        b = (c + _rotl((b + ((c & d) | (~c & _W32 & a)) + k[i + 3] + m[i + 3]) & _W32, 22)) & _W32
    for i in range(16, 32, 4):
        a = (b + _rotl((a + ((d & b) | (~d & _W32 & c)) + k[i] + m[(5 * i + 1) % 16]) & _W32, 5)) & _W32
        d = (a + _rotl((d + ((c & a) | (~c & _W32 & b)) + k[i + 1] + m[(5 * i + 6) % 16]) & _W32, 9)) & _W32
        c = (d + _rotl((c + ((b & d) | (~b & _W32 & a)) + k[i + 2] + m[(5 * i + 11) % 16]) & _W32, 14)) & _W32
        b = (c + _rotl((b + ((a & c) | (~a & _W32 & d)) + k[i + 3] + m[(5 * i + 16) % 16]) & _W32, 20)) & _W32
    for i in range(32, 48, 4):
        a = (b + _rotl((a + (b ^ c ^ d) + k[i] + m[(3 * i + 5) % 16]) & _W32, 4)) & _W32
        d = (a + _rotl((d + (a ^ b ^ c) + k[i + 1] + m[(3 * i + 8) % 16]) & _W32, 11)) & _W32
        c = (d + _rotl((c + (d ^ a ^ b) + k[i + 2] + m[(3 * i + 11) % 16]) & _W32, 16)) & _W32
        b = (c + _rotl((b + (c ^ d ^ a) + k[i + 3] + m[(3 * i + 14) % 16]) & _W32, 23)) & _W32
    for i in range(48, 64, 4):
        a = (b + _rotl((a + (c ^ (b | (~d & _W32))) + k[i] + m[(7 * i) % 16]) & _W32, 6)) & _W32
        d = (a + _rotl((d + (b ^ (a | (~c & _W32))) + k[i + 1] + m[(7 * i + 7) % 16]) & _W32, 10)) & _W32
        c = (d + _rotl((c + (a ^ (d | (~b & _W32))) + k[i + 2] + m[(7 * i + 14) % 16]) & _W32, 15)) & _W32
        b = (c + _rotl((b + (d ^ (c | (~a & _W32))) + k[i + 3] + m[(7 * i + 21) % 16]) & _W32, 21)) & _W32
    state[0] = (state[0] + a) & _W32
    state[1] = (state[1] + b) & _W32
    state[2] = (state[2] + c) & _W32
    state[3] = (state[3] + d) & _W32


_ROWS_PER_TASK = 1024  # rows a thread takes at a time (one set of scratch buffers each)


@compiled(parallel=True)
def _md5_kernel(data, offsets, out, k, init):  # pragma: no cover - compiled
    n = len(offsets) - 1
    for task in numba.prange((n + _ROWS_PER_TASK - 1) // _ROWS_PER_TASK):
        m = np.empty(16, dtype=np.uint64)
        state = np.empty(4, dtype=np.uint64)
        tail = np.empty(128, dtype=np.uint8)  # the last bytes, the 0x80 byte, zeros, the bit length
        for r in range(task * _ROWS_PER_TASK, min(n, (task + 1) * _ROWS_PER_TASK)):
            state[:] = init
            start, stop = offsets[r], offsets[r + 1]
            length = stop - start
            full = start + (length // 64) * 64
            for at in range(start, full, 64):
                _md5_block(data, at, m, state, k)
            rest = stop - full
            tail[:] = 0
            for j in range(rest):
                tail[j] = data[full + j]
            tail[rest] = 0x80
            size = 64 if rest < 56 else 128
            bits = np.uint64(length) * np.uint64(8)
            for j in range(8):
                tail[size - 8 + j] = np.uint8((bits >> np.uint64(8 * j)) & np.uint64(0xFF))
            _md5_block(tail, 0, m, state, k)
            if size == 128:
                _md5_block(tail, 64, m, state, k)
            for j in range(4):
                out[r, j] = np.uint32(state[j])


def _md5_rows(data: np.ndarray, offsets: np.ndarray, out: np.ndarray) -> None:
    """``out[r]``: the MD5 digest of ``data[offsets[r]:offsets[r + 1]]`` as four little-endian words."""
    if len(out):
        _md5_kernel(data, offsets, out, _MD5_K, _MD5_INIT)


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
