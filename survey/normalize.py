"""The ``normalized`` key profile: how a text value is normalized before it is compared.

Definition (docs/method.md, "Key profiles"): a string is Unicode NFKC-normalized, then case-folded
(``str.casefold``), then every run of whitespace (as ``str.split()`` defines it) becomes one space
and the ends are stripped. A list is normalized element by element. Any other value (a number, a
NULL) is compared as it is. In Python::

    " ".join(unicodedata.normalize("NFKC", s).casefold().split())

That line is the definition, and :func:`normalize_text` is it. Calling it on every row would cost
about 5 s per million tweets here, more than the whole engine, so the engine
(``Engine._hash_normalized``) takes three paths to the same result:

- an ASCII string, in DuckDB SQL: there NFKC is the identity, casefold is ASCII lowercase and
  Python's whitespace is ``[\\t\\n\\v\\f\\r\\x1c-\\x1f ]``;
- any other string, with :func:`normalize_each` (the definition), in one call per config;
- a list of strings, with :func:`normalize_array` (Arrow kernels for the ASCII elements), as a
  DuckDB function.

``tests/survey/test_normalize.py`` checks every path against the definition.
"""

from __future__ import annotations

import unicodedata

import pyarrow as pa
import pyarrow.compute as pc

# Python's str.split() whitespace, restricted to ASCII (the only whitespace an ASCII string holds).
# Only what must change is matched: a run of two or more, or one that is not a space. Matching
# every single space too gives the same result 8 times slower (one replacement per word).
_ASCII_WHITESPACE = r"[\t\n\x0b\x0c\r\x1c-\x1f ]"
#: The ASCII whitespace other than the space: a string holding none of it, no run of spaces and no
#: space at an end has nothing to collapse.
ASCII_WHITESPACE_OTHER_THAN_SPACE = "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f"
ASCII_WHITESPACE_TO_COLLAPSE = rf"{_ASCII_WHITESPACE}{{2,}}|[\t\n\x0b\x0c\r\x1c-\x1f]"


def normalize_text(value: str) -> str:
    """The ``normalized`` profile of one string (the definition)."""
    return " ".join(unicodedata.normalize("NFKC", value).casefold().split())


def normalize_each(values: pa.Array | pa.ChunkedArray) -> pa.Array:
    """The ``normalized`` profile of every string of an Arrow array, one Python call each: for strings
    that are not ASCII, where the vectorized path of :func:`normalize_array` has nothing to gain."""
    return pa.array([None if s is None else normalize_text(s) for s in values.to_pylist()], type=pa.string())


def has_text(arrow_type: pa.DataType) -> bool:
    """Whether values of this type hold strings that the profile changes (strings, lists of them)."""
    if pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type):
        return True
    if pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type):
        return has_text(arrow_type.value_type)
    return False


def normalize_array(values: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
    """The ``normalized`` profile of every value of an Arrow array; the type is kept."""
    if isinstance(values, pa.ChunkedArray):
        return pa.chunked_array([_normalize_chunk(c) for c in values.chunks], type=values.type)
    return _normalize_chunk(values)


def _normalize_chunk(values: pa.Array) -> pa.Array:
    t = values.type
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return _normalize_strings(values)
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        if values.offset:  # a slice: copy it, so that its offsets and null bitmap start at 0
            values = pa.concat_arrays([values])
        inner = _normalize_chunk(values.values)  # the flat elements; offsets and nulls are kept
        cls = pa.LargeListArray if pa.types.is_large_list(t) else pa.ListArray
        mask = values.is_null() if values.null_count else None
        return cls.from_arrays(values.offsets, inner, type=t, mask=mask)
    return values


def _normalize_strings(values: pa.Array) -> pa.Array:
    if len(values) == 0:
        return values
    lowered = pc.ascii_lower(values)
    fast = pc.utf8_trim(pc.replace_substring_regex(lowered, ASCII_WHITESPACE_TO_COLLAPSE, " "), " ")
    non_ascii = pc.fill_null(pc.invert(pc.string_is_ascii(values)), False)
    if not pc.any(non_ascii).as_py():
        return fast
    others = pc.filter(values, non_ascii).to_pylist()
    slow = pa.array([normalize_text(s) for s in others], type=values.type)
    return pc.replace_with_mask(fast, non_ascii, slow)
