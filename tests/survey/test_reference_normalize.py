"""The stand-in's reference has its own ``normalized`` profile (it imports nothing from the product):
it agrees with the engine's definition on every whitespace character, on tricky strings and on the
shared datasets' text."""

from __future__ import annotations

import sys

import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hubsurvey.survey.normalize import normalize_text
from hubsurvey_standin import reference
from hubsurvey_standin.reference import is_whitespace, normalize_string

#: Characters where a careless normalization goes wrong: every kind of whitespace str.split() sees
#: (ASCII, the information separators, NEL, no-break, ogham, en quad to hair space, line and
#: paragraph separators, ideographic), and some it does not (zero-width space, word joiner, BOM);
#: case folding that changes length (ß, ẞ, ﬁ, İ) or depends on position (Σ, ς); NFKC that makes
#: whitespace (U+2007 figure space and U+202F narrow no-break are Zs; the fullwidth space U+3000,
#: the ideographic one) or letters (fullwidth A, circled 1, ㎏); combining accents.
TRICKY = (
    " \t\n\x0b\x0c\r\x1c\x1d\x1e\x1f\x85\xa0\u1680\u2000\u2007\u200a\u2028\u2029\u202f\u205f\u3000"
    "\u200b\u2060\ufeff"
    "ßẞﬁİıΣσςǅ"
    "\uff21\u2460\u338f\u0301\u0327e\u00e9"
    "aZ.-"
)


@pytest.mark.slow
def test_whitespace_is_what_str_split_sees_on_every_code_point():
    for code in range(sys.maxunicode + 1):
        char = chr(code)
        assert is_whitespace(char) == char.isspace(), hex(code)
        if char.isspace():
            assert f"a{char}b".split() == ["a", "b"], hex(code)
            assert code <= reference.LAST_WHITESPACE, hex(code)  # the reference scans up to it


def test_the_reference_imports_nothing_from_the_product():
    source = reference.__file__
    with open(source, encoding="utf-8") as f:
        text = f.read()
    assert "import hubsurvey" not in text and "from hubsurvey" not in text


@pytest.mark.parametrize("text, expected", [
    ("Hello  World", "hello world"),
    ("\t lead and trail \u3000", "lead and trail"),
    ("\uff21\uff22\uff23", "abc"),  # fullwidth letters: NFKC
    ("Straße STRASSE", "strasse strasse"),  # casefold ß -> ss
    ("ﬁne", "fine"),  # the ligature: NFKC
    ("a\u200bb", "a\u200bb"),  # a zero-width space is not whitespace
    ("a\x1cb\x85c", "a b c"),  # separators and NEL are
    ("\u03a3\u0391\u03a3", "\u03c3\u03b1\u03c3"),  # casefold has no final sigma (capital sigma -> small sigma)
    ("", ""),
])
def test_normalize_string_by_hand(text, expected):
    assert normalize_string(text) == expected == normalize_text(text)


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=TRICKY, max_size=24))
def test_agrees_with_the_engine_on_tricky_strings(text):
    assert normalize_string(text) == normalize_text(text)


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(st.text(max_size=24))
def test_agrees_with_the_engine_on_any_string(text):
    assert normalize_string(text) == normalize_text(text)


#: Rows read from the start of each shared test split (all of them in the slow tier would cost
#: seconds of the plain per-character loop).
ROWS_PER_SPLIT = 150


def _strings(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


@pytest.mark.slow
def test_agrees_with_the_engine_on_the_shared_datasets(shared_datasets):
    checked = 0
    non_ascii = 0
    for path in sorted(shared_datasets.glob("*/*/test/*.parquet")):
        table = pq.read_table(path).slice(0, ROWS_PER_SPLIT)
        for column in table.column_names:
            for value in table.column(column).to_pylist():
                for text in _strings(value):
                    assert normalize_string(text) == normalize_text(text), (path, column, text)
                    checked += 1
                    non_ascii += not text.isascii()
    assert checked > 50_000 and non_ascii > 5_000  # real text, some of it beyond ASCII (hebrew, emoji, ...)
