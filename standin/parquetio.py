"""Hugging Face ``Features`` dicts, and Parquet files that carry them as ``datasets`` writes them.

The mini-hub generator and the server's synthetic filler datasets both write Parquet through
``parquet_bytes``, so every file the stand-in serves has the same shape as a file of the Hub's
auto-converted export: Arrow types derived from the features, and the features JSON stored in the
schema metadata under the key ``b"huggingface"`` as ``{"info": {"features": ...}}``.

Feature dicts are written by hand (not with ``datasets.Features``) so that the server never has to
import ``datasets``; ``tests/standin/test_standin.py`` checks that ``datasets`` parses them.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

Feature = dict[str, Any]

_VALUE_TYPES = {
    "string": pa.string(),
    "int32": pa.int32(),
    "int64": pa.int64(),
    "float32": pa.float32(),
    "float64": pa.float64(),
    "bool": pa.bool_(),
    "binary": pa.binary(),
}


def value(dtype: str) -> Feature:
    """A ``Value`` feature (``dtype`` is one of string, int32, int64, float32, float64, bool, binary)."""
    if dtype not in _VALUE_TYPES:
        raise ValueError(f"unsupported dtype {dtype!r}")
    return {"dtype": dtype, "_type": "Value"}


def class_label(names: Sequence[str]) -> Feature:
    """A ``ClassLabel`` feature: stored as int64, the names live only in the metadata."""
    return {"names": list(names), "_type": "ClassLabel"}


def list_of(feature: Feature) -> Feature:
    """A ``List`` feature (datasets >= 4 spelling; older cards say ``Sequence``)."""
    return {"feature": feature, "_type": "List"}


def media(kind: str) -> Feature:
    """An ``Image`` or ``Audio`` feature: a struct of raw bytes and an optional path."""
    if kind not in ("Image", "Audio"):
        raise ValueError(f"unsupported media kind {kind!r}")
    return {"_type": kind}


def arrow_type(feature: Feature) -> pa.DataType:
    """The Arrow type ``datasets`` uses for a feature. A dict without ``_type`` is a struct."""
    kind = feature.get("_type")
    if kind == "Value":
        return _VALUE_TYPES[feature["dtype"]]
    if kind == "ClassLabel":
        return pa.int64()
    if kind == "List":
        return pa.list_(arrow_type(feature["feature"]))
    if kind in ("Image", "Audio"):
        return pa.struct([("bytes", pa.binary()), ("path", pa.string())])
    if kind is None:
        return pa.struct([(name, arrow_type(sub)) for name, sub in feature.items()])
    raise ValueError(f"unsupported feature type {kind!r}")


def schema(features: Mapping[str, Feature]) -> pa.Schema:
    """Arrow schema for ``features``, with the HF features JSON in its metadata."""
    meta = json.dumps({"info": {"features": dict(features)}}).encode()
    return pa.schema([(name, arrow_type(f)) for name, f in features.items()], metadata={b"huggingface": meta})


def parquet_bytes(columns: Mapping[str, Sequence[Any] | pa.Array], features: Mapping[str, Feature]) -> bytes:
    """One Parquet file (as bytes) holding ``columns``, typed and annotated by ``features``."""
    if list(columns) != list(features):
        raise ValueError("columns and features must name the same columns in the same order")
    table = pa.table(dict(columns), schema=schema(features))
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink)
    return sink.getvalue().to_pybytes()


def rows_to_columns(rows: Sequence[Mapping[str, Any]], names: Sequence[str]) -> dict[str, list[Any]]:
    """Turn a list of row dicts into the column lists ``parquet_bytes`` takes."""
    return {name: [row[name] for row in rows] for name in names}


def garble_footer(data: bytes) -> bytes:
    """``data`` with its Parquet footer overwritten by garbage: same length, same magic bytes.

    Readers get past the ``PAR1`` checks and then fail to decode the footer, which is what a
    damaged download or a broken export looks like. Deterministic: the garbage is a hash of the
    file's first bytes.
    """
    n = len(data)
    span = min(n // 2, 4096)
    if n < 12 or span <= 0:
        return bytes(b ^ 0xA5 for b in data)
    start = n - 4 - span
    garbage = hashlib.shake_256(data[:64]).digest(span)
    return data[:start] + garbage + data[-4:]
