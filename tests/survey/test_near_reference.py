"""The plain-Python exhaustive reference of the near-duplicate figures (near-2026), checked on its own.

Planted cases with hand-counted Jaccards fix the definitions (NEAR_SPEC.md); Hypothesis checks the
reference against a brute force over every pair of rows, and the invariants between figures
(exact ⊆ near, the curve, contamination); the slow test runs it on every shared config.

Shingle arithmetic used in the comments (n = 5): a text of L >= 5 characters has L - 4 windows.
When all of them are distinct, replacing a word of w characters by one of w' characters (no new
window equal to an old one) keeps the L - 4 - (w + 4) windows that do not touch the word, so
J = (L - 8 - w) / ((L - 4) + (w' + 4)) = (L - 8 - w) / (L + w').
"""

from __future__ import annotations

import math
import time
from fractions import Fraction
from itertools import combinations

import pyarrow.parquet as pq
import pytest
from conftest import shared_index
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hubsurvey.core.roles import resolve_roles
from hubsurvey.survey.sources import FolderSource, check_config
from hubsurvey_standin.reference import (
    CURVE,
    NEAR_PCTS,
    canonical_pair,
    exact_reference,
    jaccard,
    near_pairs,
    near_reference,
    near_reference_by_label,
    near_rows,
    near_text,
    near_text_pairs,
    normalize_value,
    shingles,
)

COUNTS = (
    "test_rows_near_train",
    "test_rows_near_validation",
    "test_rows_near_repeated",
    "test_rows_near_contaminated",
    "validation_rows_near_train",
    "test_rows_near_train_conflicting_label",
    *(f"test_rows_near_train_at_{k}" for k in CURVE),
)
CURVE_NAMES = [f"test_rows_near_train_at_{k}" for k in ("0_9", "0_8", "0_7", "0_6")]  # τ falling

# 21 words, 95 characters, 91 distinct 5-character windows.
SENTENCE = "a quick brown fox jumps over one lazy dog while six cats sleep on warm mats by the big red door"
ALPHABET = "abcdefghijklmn"  # 14 characters, 10 distinct windows


def _rows(texts, labels=None, column="text"):
    if labels is None:
        return [{column: t} for t in texts]
    return [{column: t, "label": lab} for t, lab in zip(texts, labels, strict=True)]


def _j(a: str, b: str) -> Fraction:
    """J of two raw strings as the rows' texts (normalized first)."""
    return jaccard(shingles(near_text({"t": a}, ["t"])), shingles(near_text({"t": b}, ["t"])))


# --- the text of a row, shingles ----------------------------------------------------------------


def test_near_text_of_strings_lists_nulls_and_numbers():
    assert near_text({"t": "  Hello\tWORLD  "}, ["t"]) == "hello world"  # the normalized profile
    assert near_text({"t": "\uff21\uff22"}, ["t"]) == "ab"  # NFKC, then casefold
    assert near_text({"t": None}, ["t"]) == ""  # NULL is the empty text
    assert near_text({"t": 12}, ["t"]) == "12" and near_text({"t": 1.5}, ["t"]) == "1.5"  # str() first
    assert near_text({"t": True}, ["t"]) == "true"
    # A list: its non-NULL elements, each normalized (a non-string one through str()), joined by " ".
    assert near_text({"t": ["EU", "rejects", None, "German", 1]}, ["t"]) == "eu rejects german 1"
    assert near_text({"t": []}, ["t"]) == "" and near_text({"t": [None]}, ["t"]) == ""
    assert near_text({"t": ["a b", "c"]}, ["t"]) == near_text({"t": ["a", "b c"]}, ["t"]) == "a b c"
    # An element that normalizes to "" is kept: the spec drops only NULL elements.
    assert near_text({"t": ["a", " ", "b"]}, ["t"]) == "a  b"


def test_near_text_of_several_columns():
    row = {"q": "What?", "a": None, "s": ["x", "Y"], "n": 3}
    assert near_text(row, ["q", "a", "s", "n"]) == "what? x y 3"  # the empty column is skipped
    assert near_text(row, ["n", "q"]) == "3 what?"  # in the given order
    assert near_text({"q": "", "a": "  "}, ["q", "a"]) == ""
    # The columns' boundaries are not kept: ("a b", "c") and ("a", "b c") are the same text.
    assert near_text({"q": "a b", "a": "c"}, ["q", "a"]) == near_text({"q": "a", "a": "b c"}, ["q", "a"])


def test_shingles():
    assert shingles("abcdefg") == {"abcde", "bcdef", "cdefg"}  # L - n + 1 windows
    assert shingles("abcde") == {"abcde"}  # L = n: one window, the text
    assert shingles("ok") == {"ok"} and shingles("") == {""}  # shorter than n: the text itself
    assert shingles("aaaaaaaa") == {"aaaaa"}  # a set: repeats count once
    assert shingles("ab", 1) == {"a", "b"} and shingles("ab", 3) == {"ab"}
    assert shingles("é😀x", 2) == {"é😀", "😀x"}  # code points, not bytes
    assert len(shingles(SENTENCE)) == len(SENTENCE) - 4 == 91
    with pytest.raises(ValueError, match="shingle size"):
        shingles("abc", 0)


# --- planted cases ------------------------------------------------------------------------------


def test_one_word_edit_in_a_sentence_is_near():
    edited = SENTENCE.replace("lazy", "tame")
    # L = 95, w = w' = 4: J = (95 - 8 - 4) / (95 + 4) = 83/99 = 0.838...
    assert _j(SENTENCE, edited) == Fraction(83, 99)
    f = near_reference({"train": _rows([SENTENCE]), "test": _rows([edited])}, ["text"], None)
    assert f["test_rows_near_train"] == 1 and f["test_rows_near_contaminated"] == 1
    assert [f[c] for c in CURVE_NAMES] == [0, 1, 1, 1]  # 0.838 < 0.9
    # The exact method misses it; the near method does not.
    exact = exact_reference({"train": _rows([SENTENCE]), "test": _rows([edited])}, ["text"], None, "normalized")
    assert exact["normalized_test_rows_in_train"] == 0


def test_case_and_punctuation_changes():
    # Case and whitespace: the normalized profile makes the texts identical (J = 1).
    shouted = "  " + SENTENCE.upper().replace(" ", "   ")
    assert _j(SENTENCE, shouted) == 1
    # One "!" appended: A's 91 windows are all in B, which has 1 more: J = 91/92.
    assert _j(SENTENCE, SENTENCE + "!") == Fraction(91, 92)
    # A comma after "dog" (4 windows lost across "g w", 5 gained holding ",") and a final "." (1
    # gained): J = 87 / (87 + 4 + 5 + 1) = 87/97 = 0.897: near at 0.8, not at 0.9.
    punctuated = SENTENCE.replace("dog while", "dog, while") + "."
    assert _j(SENTENCE, punctuated) == Fraction(87, 97)
    train = _rows([SENTENCE])
    f = near_reference({"train": train, "test": _rows([shouted, SENTENCE + "!", punctuated])}, ["text"], None)
    assert f["test_rows_near_train"] == 3
    assert f["test_rows_near_train_at_0_9"] == 2  # 1 and 91/92; not 87/97
    # Punctuation around a short text matters a lot: "Hello, world!" vs "hello world".
    # Shared: "hello", " worl", "world"; 9 + 7 windows: J = 3/13.
    assert _j("Hello, world!", "hello world") == Fraction(3, 13)


def test_reordered_words():
    # Two words swapped: only the windows inside a word survive: "seven", "eight" of 7 + 7.
    assert _j("seven eight", "eight seven") == Fraction(2, 12)
    # The two halves of the sentence swapped: each cut between two words costs the 5 windows that
    # cross it ("hile ", "ile s", "le si", "e six", " six " in A; around "door a" in B): 86/96.
    w = SENTENCE.split()
    swapped = " ".join(w[10:] + w[:10])
    assert _j(SENTENCE, swapped) == Fraction(86, 96)
    # Every word moved: no longer near.
    shuffled = " ".join(w[::2] + w[1::2])
    assert _j(SENTENCE, shuffled) < Fraction(6, 10)
    f = near_reference({"train": _rows([SENTENCE]), "test": _rows([swapped, shuffled])}, ["text"], None)
    assert f["test_rows_near_train"] == 1 and f["test_rows_near_train_at_0_6"] == 1


def test_short_texts_below_n():
    # A text shorter than 5 characters is one shingle, itself: near only to the same text.
    assert _j("ok", "ok") == 1 and _j("ok", "OK ") == 1  # normalized first
    assert _j("ok", "ok!") == 0 and _j("abcd", "abcde") == 0  # {"abcd"} vs {"abcde"}
    train = _rows(["ok", "abcd"])
    test = _rows(["ok", "OK", "ok!", "abcde", "no"])
    f = near_reference({"train": train, "test": test}, ["text"], None, threshold=0.6)
    assert f["test_rows_near_train"] == 2  # "ok", "OK"
    assert f["test_rows_near_repeated"] == 1  # "OK" repeats "ok"
    assert f["test_rows_near_train_at_0_6"] == 2


def test_empty_and_null_texts():
    # NULL, "" and whitespace are all the empty text, one shingle "": J = 1 between them.
    train = _rows([None, "None"])
    test = _rows(["", "   ", None, "none"])
    f = near_reference({"train": train, "test": test}, ["text"], None)
    assert f["test_rows_near_train"] == 4  # three empty texts near NULL; "none" near "None"
    assert f["test_rows_near_repeated"] == 2  # the 2nd and 3rd empty texts
    # The empty text is near nothing else ("" vs "a" has J = 0), and "none" is not NULL.
    g = near_reference({"train": _rows(["a", "none"]), "test": _rows([None])}, ["text"], None)
    assert g["test_rows_near_train"] == 0


def test_flipped_label_is_a_conflict():
    edited = SENTENCE.replace("lazy", "tame")  # J = 83/99 with SENTENCE
    other = "an entirely different sentence about the weather today"
    train = _rows([SENTENCE, SENTENCE + "!", other], [0, 1, 0])
    test = _rows(
        [edited, edited, other.replace("today", "now"), other, "unrelated"],
        [1, 2, 1, 0, 2],
    )
    f = near_reference({"train": train, "test": test}, ["text"], "label")
    # Row 0 (label 1): near SENTENCE (0) and SENTENCE! (1): one carries 1, no conflict.
    # Row 1 (label 2): near train rows labelled 0 and 1 only: conflict.
    # Row 2 (label 1): "...weather now" vs "...weather today": J = 45/53 >= 0.8, train says 0: conflict.
    # Row 3 (label 0): the same text, the same label. Row 4: near nothing.
    assert _j(other, other.replace("today", "now")) == Fraction(45, 53)
    assert f["test_rows_near_train"] == 4
    assert f["test_rows_near_train_conflicting_label"] == 2
    assert f["test_rows_near_train_conflicting_label_pct"] == 40.0
    # Labels compare exactly: a list as a whole, NULL equal to NULL.
    seq = near_reference(
        {"train": [{"t": "abc", "l": [1, 0]}, {"t": "xyz", "l": None}],
         "test": [{"t": "abc", "l": [1, 0]}, {"t": "ABC", "l": [1]}, {"t": "xyz", "l": None}]},
        ["t"], "l",
    )
    assert seq["test_rows_near_train"] == 3 and seq["test_rows_near_train_conflicting_label"] == 1  # [1]


def test_contaminated_counts_each_test_row_once():
    edited = SENTENCE.replace("lazy", "tame")
    splits = {
        "train": _rows([SENTENCE]),
        "validation": _rows([edited]),
        "test": _rows([SENTENCE, edited, "x"]),
    }
    f = near_reference(splits, ["text"], None)
    # Row 0: near train and validation. Row 1: near train, validation, and near-repeats row 0.
    assert f["test_rows_near_train"] == 2 and f["test_rows_near_validation"] == 2
    assert f["test_rows_near_repeated"] == 1
    assert f["test_rows_near_contaminated"] == 2
    assert f["near_contaminated_test_pct"] == pytest.approx(200 / 3)
    assert f["validation_rows_near_train"] == 1 and f["validation_rows_near_train_pct"] == 100.0


def test_near_repeated_follows_positions():
    edited = SENTENCE.replace("lazy", "tame")
    rows = near_rows({"test": _rows(["x", SENTENCE, "y", edited, SENTENCE])}, ["text"], None)
    # The first of two near test rows is not a repeat; each later one is.
    assert rows["test_rows_near_repeated"] == {3, 4}
    assert rows["test_rows_near_train"] is None and rows["test_rows_near_validation"] is None
    f = near_reference({"test": _rows([edited, SENTENCE])}, ["text"], None)
    assert f["test_rows_near_repeated"] == 1 and f["test_rows_near_contaminated"] == 1


def test_token_lists_and_multi_column_texts():
    train = [{"tokens": ["EU", "rejects", "German", "call", "to", "boycott", "British", "lamb", "."]}]
    test = [
        {"tokens": ["eu", "rejects", "german", "call", "to", "boycott", "british", "lamb", "."]},  # J = 1
        {"tokens": ["EU", "rejects", "German", "plea", "to", "boycott", "British", "lamb", "."]},
        {"tokens": ["EU", "rejects", None, "German", "call", "to", "boycott", "British", "lamb", "."]},
    ]
    text = "eu rejects german call to boycott british lamb ."
    # One word of a 9-token sentence: L = 48, w = w' = 4: J = (48 - 12) / (48 + 4) = 36/52 = 0.69. A
    # one-word edit in a short sentence is near at 0.6 only.
    assert _j(text, text.replace("call", "plea")) == Fraction(36, 52)
    f = near_reference({"train": train, "test": test}, ["tokens"], None)
    assert f["test_rows_near_train"] == 2  # the NULL token is dropped: row 2 is the same text as row 0
    assert [f[c] for c in CURVE_NAMES] == [2, 2, 2, 3]
    # Two text columns make one text: a question/answer pair near another with one word changed.
    q = {"q": "Which river flows through the city of Vienna?", "a": "The Danube"}
    q2 = {"q": "Which river flows through the city of Budapest?", "a": "The Danube"}
    q3 = {"q": "The Danube", "a": "Which river flows through the city of Vienna?"}
    g = near_reference({"train": [q], "test": [q2, q3]}, ["q", "a"], None, threshold=0.6)
    assert _j(near_text(q, ["q", "a"]), near_text(q2, ["q", "a"])) == Fraction(41, 63)  # 0.65
    assert _j(near_text(q, ["q", "a"]), near_text(q3, ["q", "a"])) == Fraction(47, 56)  # swapped: two cuts
    assert g["test_rows_near_train"] == 2


def test_threshold_boundaries_are_inclusive_and_decimal():
    # ALPHABET has 10 windows; its prefixes of 13, 12, 11, 10 characters keep 9, 8, 7, 6 of them.
    cut = [ALPHABET[:-k] for k in (1, 2, 3, 4)]
    assert [_j(ALPHABET, c) for c in cut] == [Fraction(9, 10), Fraction(8, 10), Fraction(7, 10), Fraction(6, 10)]
    f = near_reference({"train": _rows([ALPHABET]), "test": _rows(cut)}, ["text"], None)
    assert [f[c] for c in CURVE_NAMES] == [1, 2, 3, 4]  # J = τ counts, τ read as a decimal (9/10 at 0.9)
    assert f["test_rows_near_train"] == 2  # τ = 0.8
    assert near_reference({"train": _rows([ALPHABET]), "test": _rows(cut)}, ["text"], None, threshold=0.9)[
        "test_rows_near_train"
    ] == 1
    assert f["test_rows_near_train_at_0_6_pct"] == 100.0 and f["test_rows_near_train_at_0_9_pct"] == 25.0
    # Neighbours among the cut texts themselves: 13 vs 12 characters is 8/9 >= 0.8, and so on.
    assert f["test_rows_near_repeated"] == 3


def test_nr_rules():
    full = near_reference({"train": _rows(["a"], [0]), "validation": _rows(["a"], [0]), "test": _rows(["a"], [0])},
                          ["text"], "label")
    assert all(full[name] is not None for name in (*COUNTS, *NEAR_PCTS))
    no_train = near_reference({"validation": _rows(["a"], [0]), "test": _rows(["a", "a"], [0, 0])}, ["text"], "label")
    for name in ("test_rows_near_train", "validation_rows_near_train", "test_rows_near_train_conflicting_label",
                 *CURVE_NAMES, "test_rows_near_train_pct", "test_rows_near_train_at_0_9_pct"):
        assert no_train[name] is None, name
    assert no_train["test_rows_near_validation"] == 2 and no_train["test_rows_near_contaminated"] == 2
    no_validation = near_reference({"train": _rows(["a"]), "test": _rows(["a"])}, ["text"], None)
    for name in ("test_rows_near_validation", "validation_rows_near_train", "test_rows_near_validation_pct",
                 "validation_rows_near_train_pct", "test_rows_near_train_conflicting_label"):
        assert no_validation[name] is None, name
    alone = near_reference({"test": _rows(["a", "a", "b"])}, ["text"], None)
    assert alone["test_rows_near_repeated"] == 1 and alone["test_rows_near_contaminated"] == 1
    assert alone["near_contaminated_test_pct"] == pytest.approx(100 / 3)
    empty = near_reference({"train": _rows(["a"]), "validation": [], "test": []}, ["text"], None)
    assert empty["test_rows_near_contaminated"] == 0 and empty["near_contaminated_test_pct"] is None
    assert empty["validation_rows_near_train"] == 0 and empty["validation_rows_near_train_pct"] is None
    assert set(empty) == set(COUNTS) | set(NEAR_PCTS)


def test_near_pairs_keys_and_values():
    edited = SENTENCE.replace("lazy", "tame")
    splits = {"train": _rows([SENTENCE, SENTENCE, "zzz"]), "validation": _rows(["zzz"]), "test": _rows([edited, SENTENCE])}
    pairs = near_pairs(splits, ["text"])
    assert pairs == {
        (("train", 0), ("test", 0)): Fraction(83, 99),
        (("train", 1), ("test", 0)): Fraction(83, 99),
        (("train", 0), ("test", 1)): 1,
        (("train", 1), ("test", 1)): 1,
        (("test", 0), ("test", 1)): Fraction(83, 99),
        (("train", 2), ("validation", 0)): 1,
    }  # train 0 - train 1 (identical) is left out: no figure uses a train-train pair
    assert canonical_pair(("test", 0), ("train", 5)) == (("train", 5), ("test", 0))
    assert canonical_pair(("test", 3), ("test", 1)) == (("test", 1), ("test", 3))
    assert near_pairs(splits, ["text"], min_threshold=0.9) == {k: v for k, v in pairs.items() if v >= Fraction(9, 10)}


def test_near_text_pairs_prefix_and_full_index_agree_on_a_sentence_family():
    w = SENTENCE.split()
    texts = [SENTENCE, SENTENCE.replace("lazy", "tame"), " ".join(w[10:] + w[:10]), SENTENCE + "!", "ok", "ok!", ""]
    for t in (0.6, 0.8, 0.9, 1.0):
        expected = _brute_text_pairs(texts, 5, Fraction(str(t)))
        assert near_text_pairs(texts, min_threshold=t) == expected
        assert near_text_pairs(texts, min_threshold=t, index="full") == expected
    assert expected == {}  # τ = 1: distinct texts, all of them with distinct shingle sets
    with pytest.raises(ValueError, match="min_threshold"):
        near_text_pairs(texts, min_threshold=0)


# --- brute force and invariants on random data ------------------------------------------------


def _brute_text_pairs(texts, n, tau, queries=None):
    """Every pair of distinct texts, J from the sets: the definition, with no index."""
    out = {}
    for a, b in combinations(sorted(set(texts)), 2):
        if queries is not None and a not in queries and b not in queries:
            continue
        j = jaccard(shingles(a, n), shingles(b, n))
        if j >= tau:
            out[(a, b)] = j
    return out


def _brute_figures(splits, text_columns, label_column, tau, n):
    """The count figures straight from NEAR_SPEC, over every pair of rows (no index, no distinct texts)."""
    sets = {s: [shingles(near_text(r, text_columns), n) for r in rows] for s, rows in splits.items()}

    def near(split, a, exclude=None):  # positions of split's rows at J >= τ from the set a
        return [q for q, b in enumerate(sets[split]) if q != exclude and jaccard(a, b) >= tau]

    def frozen(v):
        return tuple(frozen(x) for x in v) if isinstance(v, list) else v

    out = {}
    test = sets["test"]
    out["test_rows_near_train"] = sum(1 for a in test if near("train", a)) if "train" in sets else None
    out["test_rows_near_validation"] = sum(1 for a in test if near("validation", a)) if "validation" in sets else None
    out["test_rows_near_repeated"] = sum(1 for p, a in enumerate(test) if any(q < p for q in near("test", a, p)))
    out["test_rows_near_contaminated"] = sum(
        1 for p, a in enumerate(test)
        if ("train" in sets and near("train", a)) or ("validation" in sets and near("validation", a))
        or any(q < p for q in near("test", a, p))
    )
    out["validation_rows_near_train"] = (
        sum(1 for a in sets["validation"] if near("train", a)) if "train" in sets and "validation" in sets else None
    )
    if label_column and "train" in sets:
        count = 0
        for p, a in enumerate(test):
            found = near("train", a)
            label = frozen(splits["test"][p][label_column])
            if found and all(frozen(splits["train"][q][label_column]) != label for q in found):
                count += 1
        out["test_rows_near_train_conflicting_label"] = count
    else:
        out["test_rows_near_train_conflicting_label"] = None
    for k, curve_tau in CURVE.items():
        out[f"test_rows_near_train_at_{k}"] = (
            sum(1 for a in test if any(jaccard(a, b) >= curve_tau for b in sets["train"])) if "train" in sets else None
        )
    return out


def _check_invariants(splits, text_columns, label_column, f):
    """Invariants between the figures of one (config, label column), and exact ⊆ near."""
    n = {s: len(splits[s]) for s in splits}
    assert set(f) == set(COUNTS) | set(NEAR_PCTS)
    assert 0 <= f["test_rows_near_contaminated"] <= n["test"]
    assert f["test_rows_near_repeated"] is not None and f["test_rows_near_contaminated"] is not None
    parts = [f[c] or 0 for c in ("test_rows_near_train", "test_rows_near_validation", "test_rows_near_repeated")]
    assert max(parts) <= f["test_rows_near_contaminated"] <= sum(parts)
    curve = [f[c] for c in CURVE_NAMES]
    assert (curve[0] is None) == ("train" not in splits) == (f["test_rows_near_train"] is None)
    if curve[0] is not None:
        assert curve == sorted(curve), curve  # τ falls along CURVE_NAMES: the count does not fall
    if f["test_rows_near_train_conflicting_label"] is not None:
        assert f["test_rows_near_train_conflicting_label"] <= f["test_rows_near_train"]
    else:
        assert label_column is None or "train" not in splits
    for name, (count, split) in NEAR_PCTS.items():
        if f[count] is None or n.get(split, 0) == 0:
            assert f[name] is None, name
        else:
            assert math.isclose(f[name], f[count] / n[split] * 100) and 0 <= f[name] <= 100, name
    # exact ⊆ near: the normalized exact figures count fewer rows, at every τ of the curve.
    exact = exact_reference(splits, list(text_columns), label_column, "normalized")
    for exact_name, near_names in (
        ("normalized_test_rows_in_train", ["test_rows_near_train", *CURVE_NAMES]),
        ("normalized_test_rows_in_validation", ["test_rows_near_validation"]),
        ("normalized_validation_rows_in_train", ["validation_rows_near_train"]),
        ("normalized_test_rows_repeated", ["test_rows_near_repeated"]),
        ("normalized_test_rows_contaminated", ["test_rows_near_contaminated"]),
    ):
        for near_name in near_names:
            assert (exact[exact_name] is None) == (f[near_name] is None), near_name
            assert exact[exact_name] is None or exact[exact_name] <= f[near_name], (exact_name, near_name)


def _exact_rows_in_train(splits, text_columns):
    """Test positions whose normalized text key is in train (the rows of normalized test_rows_in_train)."""

    def key(row):
        return tuple(_frozen(normalize_value(row[c])) for c in text_columns)

    train = {key(r) for r in splits["train"]}
    return {p for p, r in enumerate(splits["test"]) if key(r) in train}


def _frozen(v):
    return tuple(_frozen(x) for x in v) if isinstance(v, list) else v


# Pieces that make near and exact duplicates often: case/space variants, short texts, NULL.
WORDS = ["abcdef", "ABCDEF", "abcdeg", "ab", "b", "", "None", "a\tb", "abc def"]
LABELS = [None, 0, 1]
SEQUENCE_LABELS = [None, [], [0], [0, 1]]


@st.composite
def random_splits(draw):
    """(splits, text columns, label column, shingle size, τ) of up to 7 rows a split."""
    word = st.sampled_from(WORDS)
    text = st.one_of(st.none(), st.lists(word, max_size=4).map(" ".join))
    first = draw(st.sampled_from([text, st.one_of(st.none(), st.lists(st.one_of(word, st.none()), max_size=4))]))
    label = st.sampled_from(draw(st.sampled_from([LABELS, SEQUENCE_LABELS])))
    rows = st.lists(st.builds(lambda a, b, c: {"t0": a, "t1": b, "label": c}, first, text, label), max_size=7)
    splits = {"test": draw(rows)}
    for name in ("train", "validation"):
        if draw(st.booleans()):
            splits[name] = draw(rows)
    columns = ["t0", "t1"][: draw(st.integers(1, 2))]
    label_column = "label" if draw(st.booleans()) else None
    return splits, columns, label_column, draw(st.integers(1, 6)), draw(st.sampled_from([0.5, 0.6, 0.8, 0.9, 1.0]))


@pytest.mark.slow  # 1-3 s here, each of the three Hypothesis tests
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(random_splits())
def test_reference_equals_brute_force_on_random_splits(case):
    splits, columns, label_column, n, tau = case
    f = near_reference(splits, columns, label_column, threshold=tau, shingle_size=n)
    brute = _brute_figures(splits, columns, label_column, Fraction(str(tau)), n)
    assert {k: f[k] for k in COUNTS} == brute
    _check_invariants(splits, columns, label_column, f)
    # exact ⊆ near, as row sets: every normalized exact leak is a near leak, at any τ.
    if "train" in splits:
        assert _exact_rows_in_train(splits, columns) <= near_rows(splits, columns, label_column, threshold=tau,
                                                                   shingle_size=n)["test_rows_near_train"]


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(random_splits())
def test_near_pairs_equal_brute_force_on_random_splits(case):
    splits, columns, _, n, tau = case
    t = Fraction(str(tau))
    sets = {(s, p): shingles(near_text(r, columns), n) for s, rows in splits.items() for p, r in enumerate(rows)}
    expected = {}
    for a, b in combinations(sets, 2):
        if a[0] == b[0] == "train":
            continue
        j = jaccard(sets[a], sets[b])
        if j >= t:
            expected[canonical_pair(a, b)] = j
    assert near_pairs(splits, columns, shingle_size=n, min_threshold=tau) == expected


@pytest.mark.slow
@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.text(alphabet="ab c", max_size=14), max_size=25),
    st.integers(1, 6),
    st.sampled_from([0.3, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0]),
    st.booleans(),
)
def test_near_text_pairs_equal_brute_force(texts, n, tau, with_queries):
    queries = set(texts[::2]) if with_queries else None
    expected = _brute_text_pairs(texts, n, Fraction(str(tau)), queries)
    for index in ("prefix", "full"):
        assert near_text_pairs(texts, queries=queries, shingle_size=n, min_threshold=tau, index=index) == expected


def test_by_label_equals_one_call_per_label():
    splits = {"train": [{"t": SENTENCE, "a": 0, "b": 1}], "test": [{"t": SENTENCE.replace("lazy", "tame"), "a": 0, "b": 0}]}
    by_label = near_reference_by_label(splits, ["t"], ["a", "b"])
    assert by_label == {lab: near_reference(splits, ["t"], lab) for lab in ("a", "b")}
    assert by_label["b"]["test_rows_near_train_conflicting_label"] == 1
    assert near_reference_by_label(splits, ["t"], []) == {None: near_reference(splits, ["t"], None)}


# --- real data ------------------------------------------------------------------------------------


def _load_rows(data) -> dict[str, list[dict]]:
    splits = {}
    for name, split in data.splits.items():
        tables = [pq.read_table(f) for f in split.files] if split.files else [split.table]
        splits[name] = [row for t in tables for row in t.to_pylist()]
    return splits


def _fmt(value):
    return "NR" if value is None else str(value)


# The smallest config of each shared dataset, one test each (select with -k; an absent shared
# folder gives an empty set). test_near_recall.py runs the reference on every config, against the
# engine; here its own invariants are checked, on one config a dataset to keep the suite's time.
SHARED_CONFIGS = [(e["id"], min(e["configs"], key=lambda c: sum(e["configs"][c].values()))) for e in shared_index()]


@pytest.mark.slow
@pytest.mark.parametrize(("dataset", "config"), SHARED_CONFIGS, ids=[f"{d}:{c}" for d, c in SHARED_CONFIGS])
def test_near_reference_on_each_shared_dataset(shared_datasets, dataset, config):
    """Invariants and exact ⊆ near on one shared config, every label column; prints figures and time.

    Takes 1-170 s a config on 2 busy cores (tweet_eval/emoji and code_x_glue are the slowest): run
    with -s to see each config's line.
    """
    source = FolderSource(shared_datasets / dataset.replace("/", "__"))
    data = check_config(source.load(config))
    roles = resolve_roles(data.features, dataset, config)
    splits = _load_rows(data)
    text_columns = list(roles.text_columns)
    started = time.perf_counter()
    by_label = near_reference_by_label(splits, text_columns, list(roles.label_columns))
    seconds = time.perf_counter() - started
    assert list(by_label) == (list(roles.label_columns) or [None])
    for label_column, f in by_label.items():
        _check_invariants(splits, text_columns, label_column, f)  # exact ⊆ near by counts, at every τ
        exact = exact_reference(splits, text_columns, label_column, "normalized")
        print(
            f"\n{dataset}:{config} label={_fmt(label_column)} rows_test={len(splits['test'])}"
            f" contaminated exact/near={_fmt(exact['normalized_test_rows_contaminated'])}"
            f"/{_fmt(f['test_rows_near_contaminated'])}"
            f" near_train@0.9/0.8/0.7/0.6={'/'.join(_fmt(f[c]) for c in CURVE_NAMES)}"
            f" conflicting={_fmt(f['test_rows_near_train_conflicting_label'])} seconds={seconds:.1f}"
        )


# The configs small enough for index="full" (every shingle indexed) in a few seconds: under 2,000
# rows, and not universal_dependencies, whose 2-4k-character CoNLL-U texts take 140-280 s (they
# passed too, once).
SMALL_CONFIGS = [
    (e["id"], c)
    for e in shared_index()
    for c, sizes in e["configs"].items()
    if sum(sizes.values()) < 2000 and e["id"] != "universal-dependencies/universal_dependencies"
]


@pytest.mark.slow
@pytest.mark.parametrize(("dataset", "config"), SMALL_CONFIGS, ids=[f"{d}:{c}" for d, c in SMALL_CONFIGS])
def test_prefix_index_equals_full_index_on_small_shared_configs(shared_datasets, dataset, config):
    """On real texts too, the prefix index and its two bounds lose no pair that the full index finds."""
    data = check_config(FolderSource(shared_datasets / dataset.replace("/", "__")).load(config))
    roles = resolve_roles(data.features, dataset, config)
    texts = [near_text(row, roles.text_columns) for rows in _load_rows(data).values() for row in rows]
    for tau in (0.6, 0.8):
        assert near_text_pairs(texts, min_threshold=tau) == near_text_pairs(texts, min_threshold=tau, index="full")
