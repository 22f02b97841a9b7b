"""The ``hs1`` split fingerprint in plain Python, from its definition (``hubsurvey/core/fingerprint.py``'s
docstring): the tests' reference for the vectorized code. Values come as ``as_py()`` gives them."""

from __future__ import annotations

import hashlib
import json
import struct
from typing import Any


def encode(value: Any) -> bytes:
    if value is None:
        return b"n"
    if isinstance(value, bool):
        return b"b1" if value else b"b0"
    if isinstance(value, int):
        return b"i%d;" % value
    if isinstance(value, float):
        return b"f%d;" % struct.unpack("<Q", struct.pack("<d", value))[0]
    if isinstance(value, str):
        data = value.encode()
        return b"s%d:%s" % (len(data), data)
    if isinstance(value, bytes):
        return b"x%d:%s" % (len(value), value)
    if isinstance(value, list):
        return b"l%d:%s" % (len(value), b"".join(encode(v) for v in value))
    if isinstance(value, dict):  # a struct: its fields in order
        return b"r%d:%s" % (len(value), b"".join(encode(v) for v in value.values()))
    text = str(value).encode()
    return b"o%d:%s" % (len(text), text)


def reference_fingerprint(names: list[str], rows: list[dict[str, Any]]) -> str:
    total = 0
    for row in rows:
        data = b"".join(encode(row[name]) for name in names)
        total += int.from_bytes(hashlib.md5(data).digest(), "little")
    text = f"hs1\0{len(rows)}\0{total % 2**128:032x}\0{json.dumps(names, ensure_ascii=False)}"
    return "hs1:" + hashlib.sha256(text.encode()).hexdigest()[:32]
