"""The compiled pass of the contamination check (survey/passages.py) against the reference: its
words are ``normalize_text(s).split()`` for every code point and for random text, its word values
are ``contamination.fnv1a``, its windows are ``contamination.window_hashes`` and its whole texts
``contamination.whole_hashes``."""

from __future__ import annotations

import sys

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hubsurvey.survey import contamination as c
from hubsurvey.survey import passages
from hubsurvey.survey.normalize import normalize_text

ALL_BITS = 2**64 - 1


def reference_words(texts: list[str]) -> list[list[str]]:
    return [normalize_text(s).split() for s in texts]


def assert_words_match(texts: list[str]) -> passages.Passes:
    got = passages.scan_texts(pa.array(texts, pa.string()), None, None, ALL_BITS, with_values=True)
    want = reference_words(texts)
    assert got.row_words.tolist() == [len(w) for w in want]
    assert got.values.tolist() == [c.fnv1a(w) for words in want for w in words]
    return got


def code_points(stop: int) -> list[str]:
    return [chr(cp) for cp in range(stop) if not 0xD800 <= cp <= 0xDFFF]


@pytest.mark.slow
def test_every_code_point_of_the_scripts_with_marks_alone_folds_as_normalize_text():
    """Below U+3400: Latin to Hangul jamo, the combining marks and the Indic vowel signs (the whole
    table, and beyond, in four contexts, is the slow test below)."""
    assert_words_match(code_points(0x3400))


@pytest.mark.slow
def test_every_code_point_alone_and_beside_others_folds_as_normalize_text():
    """Every code point (planes 0-16, surrogates aside), on its own, between letters, after a letter
    it may compose with and before a combining mark: 4.4M strings, the pass and the definition agree."""
    points = code_points(sys.maxunicode + 1)
    for make in (lambda ch: ch, lambda ch: f"A{ch}b", lambda ch: f"e{ch}", lambda ch: f"{ch}\u0301 x"):
        assert_words_match([make(ch) for ch in points])


TRICKY = (  # whitespace of every kind, case folds that grow, compatibility forms, composing marks and jamo
    "Aa bB\x09\x0a\x0b\x0c\x0d\x1c\x1f \x00\x85\xa0\u1680\u2000\u2028\u3000\u200b\xdf\u017f\ufb01"
    "\ufb00\uff21\uff42\u0130\u0131\u03a3\u03c3\u03c2\u01c5\u0301\u0308\u0338\u1100\u1161\u11a8"
    "\uac00\u0bc6\u0bbe\u0f73\u03a9\u210c\u2460\u3392\U0001f600\U00010400\U0002f800\U00030000"
    "\U000e0041\xe9")


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(alphabet=st.one_of(st.sampled_from(TRICKY), st.characters(codec="utf-8")), max_size=40), max_size=30))
@pytest.mark.slow
def test_random_text_folds_as_normalize_text(texts):
    assert_words_match(texts)


@pytest.mark.slow
@settings(max_examples=100, deadline=None)
@given(st.lists(st.lists(st.sampled_from(["w", "x", "Y", "zz", "é", "Ä", "ﬁ", "a\u0301"]), max_size=40)
                .map(" ".join), min_size=1, max_size=20))
def test_windows_and_whole_texts_are_the_reference_hashes(texts):
    want = reference_words(texts)
    values = np.array([c.fnv1a(w) for words in want for w in words], dtype=np.uint64)
    ends = np.cumsum([len(w) for w in want])
    windows = c.window_hashes(values)
    inside = [(r, s) for r, words in enumerate(want) for s in range(len(words) - c.NGRAM + 1)]
    flat_at = [int(ends[r] - len(want[r]) + s) for r, s in inside]
    short, short_h = c.whole_hashes(values, np.concatenate([[0], ends]).astype(np.int64))
    # key sets holding every window and every whole text: the pass reports each one, with its hash
    got = passages.scan_texts(pa.array(texts), passages.KeySet.of(windows[flat_at]), passages.KeySet.of(short_h),
                              ALL_BITS)
    assert list(zip(got.hit_row.tolist(), got.hit_word.tolist())) == inside
    assert got.hit_key.tolist() == windows[flat_at].tolist()
    assert got.whole_row.tolist() == short.tolist() and got.whole_key.tolist() == short_h.tolist()
    # an empty key set: nothing
    none = passages.scan_texts(pa.array(texts), None, None, ALL_BITS)
    assert len(none.hit_row) == 0 and len(none.whole_row) == 0


@pytest.mark.slow
def test_a_batch_with_more_windows_than_room_is_walked_again():
    passage = " ".join(f"w{i}" for i in range(13))
    texts = [" ".join([passage] * 400)] + ["short"] * 10  # 5,188 windows, room for 1,024 at first
    values = np.array([c.fnv1a(w) for w in texts[0].split()], dtype=np.uint64)
    keys = passages.KeySet.of(c.window_hashes(values))
    got = passages.scan_texts(pa.array(texts), keys, None, ALL_BITS)
    assert len(got.hit_row) == len(values) - 12 and set(got.hit_row.tolist()) == {0}


@pytest.mark.slow
def test_a_large_string_array_and_a_slice_read_their_own_bytes():
    texts = ["zero", "One two", "ÉTÉ three", "four"]
    small = passages.scan_texts(pa.array(texts).slice(1, 2), None, None, ALL_BITS, with_values=True)
    large = passages.scan_texts(pa.array(texts, pa.large_string()).slice(1, 2), None, None, ALL_BITS, with_values=True)
    want = [c.fnv1a(w) for w in ("one", "two", "été", "three")]
    assert small.values.tolist() == large.values.tolist() == want
    assert small.row_words.tolist() == [2, 2]


@pytest.mark.slow
def test_key_sets_hold_their_keys_and_nothing_else():
    rng = np.random.default_rng(0)
    keys = rng.integers(0, 2**63, 5000, dtype=np.int64).view(np.uint64)
    keys[0] = 0  # the empty slot's value is a key like the others
    keyset = passages.KeySet.of(keys)
    assert keyset.has_zero and (keyset.table != 0).sum() == len(keys) - 1
    assert len(keyset.table) >= 2 * len(keys)


@pytest.mark.slow
def test_the_pass_compiles_without_numbas_cache_when_it_cannot_be_written(monkeypatch):
    """A read-only install and home: numba refuses to cache at decoration; the pass is compiled
    per process instead of failing the import."""
    real, asked = passages.numba.njit, []

    def njit(**options):
        asked.append(options)
        if options.get("cache"):
            raise RuntimeError("cannot cache function 'add_one': no locator available for file '/ro/x.py'")
        return real(**options)

    monkeypatch.setattr(passages.numba, "njit", njit)

    def add_one(x):
        return x + 1

    compiled = passages.compiled(nogil=True)(add_one)
    assert compiled(1) == 2
    assert asked == [{"cache": True, "nogil": True}, {"cache": False, "nogil": True}]
