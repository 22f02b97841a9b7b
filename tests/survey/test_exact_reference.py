"""The plain-Python reference of the exact figures (exact-2026), checked on its own.

Hand-computed planted cases fix the definitions; Hypothesis checks the invariants between figures
on random small splits; the slow test checks the same invariants on every shared config.
"""

from __future__ import annotations

import math
import time

import pyarrow.parquet as pq
import pytest
from conftest import shared_index
from hypothesis import given, settings
from hypothesis import strategies as st

from hubsurvey.core.roles import resolve_roles
from hubsurvey.survey.sources import FolderSource, check_config
from hubsurvey_standin.reference import PROFILES, exact_reference, lle_reference, normalize_value

# The counts of one profile, without the profile prefix (the percentages are derived from them).
COUNTS = (
    "test_rows_in_train",
    "test_rows_in_validation",
    "test_rows_in_train_or_validation",
    "test_rows_repeated",
    "test_rows_contaminated",
    "validation_rows_in_train",
    "test_rows_in_train_same_label",
    "test_rows_in_train_conflicting_label",
    "conflicting_texts_train",
    "conflicting_texts_validation",
    "conflicting_texts_test",
)
# Counts that normalization can only raise: it merges keys, never splits them.
MONOTONE = (
    "test_rows_in_train",
    "test_rows_in_validation",
    "test_rows_in_train_or_validation",
    "test_rows_repeated",
    "test_rows_contaminated",
    "validation_rows_in_train",
)
# Percentage name -> (count it is made of, split whose rows it divides by).
PCTS = {
    "test_rows_in_train_pct": ("test_rows_in_train", "test"),
    "test_rows_in_validation_pct": ("test_rows_in_validation", "test"),
    "test_rows_in_train_or_validation_pct": ("test_rows_in_train_or_validation", "test"),
    "test_rows_repeated_pct": ("test_rows_repeated", "test"),
    "contaminated_test_pct": ("test_rows_contaminated", "test"),
    "test_rows_in_train_same_label_pct": ("test_rows_in_train_same_label", "test"),
    "test_rows_in_train_conflicting_label_pct": ("test_rows_in_train_conflicting_label", "test"),
    "validation_rows_in_train_pct": ("validation_rows_in_train", "validation"),
}


def _rows(texts, labels=None, column="text"):
    """Row dicts from parallel lists of text values and (optional) label values."""
    if labels is None:
        return [{column: t} for t in texts]
    return [{column: t, "label": lab} for t, lab in zip(texts, labels, strict=True)]


def _both(splits, text_columns=("text",), label_column="label"):
    """The figures of both profiles, without their prefix: {"raw": {...}, "normalized": {...}}."""
    out = {}
    for profile in PROFILES:
        figures = exact_reference(splits, list(text_columns), label_column, profile)
        out[profile] = {k.removeprefix(f"{profile}_"): v for k, v in figures.items()}
        assert all(k.startswith(f"{profile}_") for k in figures)
    return out


# --- normalize_value ----------------------------------------------------------------------------


def test_normalize_value_strings():
    assert normalize_value("Hello  world") == "hello world"  # case, and a run of 2 spaces -> 1
    assert normalize_value("\uff21\uff22\uff23") == "abc"  # fullwidth ABC -> ASCII by NFKC, then casefold
    assert normalize_value("Straße") == "strasse" == normalize_value("STRASSE")  # casefold ß -> ss
    assert normalize_value("\t a\tb\n\nc \r\n") == "a b c"  # tabs/newlines collapse, ends stripped
    assert normalize_value("non\u00a0break") == "non break"  # NBSP -> space (NFKC, and split())
    assert normalize_value("x\u2003\u3000y") == "x y"  # em space + ideographic space: one run
    assert normalize_value("\ufb01") == "fi"  # compatibility ligature
    assert normalize_value("e\u0301") == "é"  # NFKC composes
    assert normalize_value("   ") == ""
    assert normalize_value("None") == "none"


def test_normalize_value_other_types():
    assert normalize_value(None) is None  # a NULL stays NULL: never "none"
    assert normalize_value(["A ", None, "b  C"]) == ["a", None, "b c"]  # lists element by element
    assert normalize_value([["X"], []]) == [["x"], []]  # recursively
    assert normalize_value(("A", "B")) == ("a", "b")
    assert normalize_value(3) == 3 and normalize_value(2.5) == 2.5 and normalize_value(True) is True
    assert normalize_value({"k": "V  W"}) == {"k": "V  W"}  # dicts unchanged, values included


def test_unknown_profile_is_refused():
    with pytest.raises(ValueError, match="unknown key profile"):
        exact_reference({"test": []}, ["text"], None, "lower")


# --- planted cases, counted by hand ---------------------------------------------------------------


def test_case_width_whitespace_variants_match_only_when_normalized():
    train = ["Hello  world", "\uff21\uff22\uff23", "Straße", "tab\there", "non\u00a0break", " line1\nline2 ", "x"]
    test = ["hello world", "abc", "STRASSE", "tab here", "non break", "line1 line2", "y"]
    f = _both({"train": _rows(train), "test": _rows(test)}, label_column=None)
    assert f["raw"]["test_rows_in_train"] == 0  # no test string is byte-equal to a train string
    assert f["normalized"]["test_rows_in_train"] == 6  # all but "y"
    assert f["raw"]["test_rows_contaminated"] == 0
    assert f["normalized"]["test_rows_contaminated"] == 6
    assert f["normalized"]["contaminated_test_pct"] == pytest.approx(6 / 7 * 100)
    # Variants inside test are repeats only when normalized: "A b", "a  B", "a\tb" -> one key "a b".
    g = _both({"test": _rows(["A b", "a  B", "a\tb", "c"])}, label_column=None)
    assert g["raw"]["test_rows_repeated"] == 0  # 4 distinct raw strings
    assert g["normalized"]["test_rows_repeated"] == 2  # 4 rows - 2 distinct keys ("a b", "c")
    assert g["normalized"]["test_rows_contaminated"] == 2  # only repeats, no other split
    assert g["normalized"]["test_rows_repeated_pct"] == 50.0


def test_text_with_two_labels_inside_one_split():
    # train: "a" carries 0 and 1 (conflict), "b" carries 0 twice (no conflict), "c" carries None and 0
    # (None is a label value, so conflict).
    train = _rows(["a", "a", "b", "b", "c", "c"], [0, 1, 0, 0, None, 0])
    test = _rows(["a", "b", "d", "c"], [1, 1, 0, None])
    f = _both({"train": train, "test": test})["raw"]
    assert f["conflicting_texts_train"] == 2  # "a" and "c"
    assert f["conflicting_texts_test"] == 0  # each test text once
    assert f["conflicting_texts_validation"] is None  # no validation split
    assert f["test_rows_in_train"] == 3  # a, b, c
    assert f["test_rows_in_train_same_label"] == 2  # (a, 1) and (c, None) occur in train
    assert f["test_rows_in_train_conflicting_label"] == 1  # (b, 1): b only ever has 0 in train
    assert f["test_rows_in_train_same_label_pct"] == 50.0  # 2 of 4
    assert f["test_rows_in_train_conflicting_label_pct"] == 25.0  # 1 of 4


def test_row_in_train_and_repeated_counts_once():
    train = _rows(["x"])
    test = _rows(["x", "x", "y", "y", "z"])
    f = _both({"train": train, "test": test}, label_column=None)["raw"]
    assert f["test_rows_in_train"] == 2  # both x
    assert f["test_rows_repeated"] == 2  # the 2nd x and the 2nd y
    # 1st x (train), 2nd x (train AND repeat: counted once), 2nd y (repeat) -> 3, not 2 + 2 = 4.
    assert f["test_rows_contaminated"] == 3
    assert f["contaminated_test_pct"] == 60.0  # 3 of 5
    assert f["test_rows_in_train_or_validation"] == 2  # no validation: just the train matches
    assert f["test_rows_in_validation"] is None  # no validation split -> NR
    assert f["validation_rows_in_train"] is None and f["validation_rows_in_train_pct"] is None


def test_row_in_train_and_validation_counts_once():
    splits = {"train": _rows(["a", "b"]), "validation": _rows(["a", "a", "c", "B"]), "test": _rows(["a", "c", "d"])}
    f = _both(splits, label_column=None)
    assert f["raw"]["test_rows_in_train"] == 1  # a
    assert f["raw"]["test_rows_in_validation"] == 2  # a, c
    assert f["raw"]["test_rows_in_train_or_validation"] == 2  # a once, c
    assert f["raw"]["test_rows_contaminated"] == 2
    assert f["raw"]["validation_rows_in_train"] == 2  # both a rows of validation
    assert f["normalized"]["validation_rows_in_train"] == 3  # and "B" -> "b"
    assert f["raw"]["validation_rows_in_train_pct"] == 50.0  # 2 of 4 validation rows
    assert f["normalized"]["validation_rows_in_train_pct"] == 75.0  # 3 of 4


def test_null_texts_and_null_labels():
    train = _rows([None, "None"], [None, "x"])
    test = _rows([None, None, "none"], [None, "None", "x"])
    f = _both({"train": train, "test": test})
    # raw: both NULL test texts are in train (NULL = NULL); "none" is neither NULL nor "None".
    assert f["raw"]["test_rows_in_train"] == 2
    assert f["raw"]["test_rows_repeated"] == 1  # the 2nd NULL
    assert f["raw"]["test_rows_contaminated"] == 2  # the two NULLs
    assert f["raw"]["test_rows_in_train_same_label"] == 1  # (NULL, NULL) is in train
    assert f["raw"]["test_rows_in_train_conflicting_label"] == 1  # (NULL, "None"): train has NULL only with NULL
    assert f["raw"]["conflicting_texts_test"] == 1  # NULL text carries labels NULL and "None"
    assert f["raw"]["conflicting_texts_train"] == 0
    # normalized: "None" -> "none" now matches train's "None" (label "x" both); NULL stays NULL.
    assert f["normalized"]["test_rows_in_train"] == 3
    assert f["normalized"]["test_rows_in_train_same_label"] == 2  # (NULL, NULL) and ("none", "x")
    assert f["normalized"]["test_rows_in_train_conflicting_label"] == 1  # (NULL, "None")
    assert f["normalized"]["test_rows_contaminated"] == 3
    # A NULL never matches the string "None", under either profile.
    g = _both({"train": _rows(["None", "none"]), "test": _rows([None])}, label_column=None)
    assert g["raw"]["test_rows_in_train"] == 0 and g["normalized"]["test_rows_in_train"] == 0


def test_token_lists_and_sequence_labels():
    train = [{"tokens": ["A", "b"], "tags": [1, 0]}, {"tokens": ["a", "b"], "tags": [0, 0]}]
    test = [
        {"tokens": ["a", "b"], "tags": [1, 0]},
        {"tokens": ["A", "b"], "tags": [1, 0]},
        {"tokens": ["a", "b", "c"], "tags": [0, 0, 0]},
        {"tokens": ["a b"], "tags": [0]},  # one token "a b" is not the two tokens "a", "b"
        {"tokens": [None, "X"], "tags": [0, 0]},
        {"tokens": [None, "x"], "tags": [0, 0]},
    ]
    f = _both({"train": train, "test": test}, text_columns=["tokens"], label_column="tags")
    raw, norm = f["raw"], f["normalized"]
    assert raw["test_rows_in_train"] == 2  # [a, b] and [A, b]
    assert raw["test_rows_in_train_same_label"] == 1  # ([A, b], [1, 0])
    assert raw["test_rows_in_train_conflicting_label"] == 1  # [a, b] is in train only with [0, 0]
    assert raw["test_rows_repeated"] == 0  # 6 distinct token lists
    assert raw["conflicting_texts_train"] == 0  # two distinct raw keys, one label each
    # normalized: train is one key (a, b) with labels [1, 0] and [0, 0]; [None, X] = [None, x].
    assert norm["conflicting_texts_train"] == 1
    assert norm["test_rows_in_train"] == 2
    assert norm["test_rows_in_train_same_label"] == 2  # both carry [1, 0], which train has
    assert norm["test_rows_in_train_conflicting_label"] == 0
    assert norm["test_rows_repeated"] == 2  # 2nd (a, b) and (None, x)
    assert norm["test_rows_contaminated"] == 3  # rows 1, 2 (train) and 6 (repeat)
    assert norm["conflicting_texts_test"] == 0  # (a, b) -> {[1, 0]}, (None, x) -> {[0, 0]}
    # The whole sequence is the label: [1, 0] and [1, 0, 0] differ.
    g = _both({"train": [{"tokens": ["a"], "tags": [1, 0]}], "test": [{"tokens": ["a"], "tags": [1, 0, 0]}]},
              text_columns=["tokens"], label_column="tags")["raw"]
    assert g["test_rows_in_train_same_label"] == 0 and g["test_rows_in_train_conflicting_label"] == 1


def test_multi_column_text_keys_are_ordered_tuples():
    train = [{"q": "x", "a": "y"}, {"q": "1", "a": "2"}]
    test = [{"q": "y", "a": "x"}, {"q": "x", "a": "y"}, {"q": "1", "a": "3"}, {"q": "X ", "a": "Y"}]
    f = _both({"train": train, "test": test}, text_columns=["q", "a"], label_column=None)
    assert f["raw"]["test_rows_in_train"] == 1  # only (x, y); (y, x) is another key, (1, 3) differs in a
    assert f["normalized"]["test_rows_in_train"] == 2  # and ("X ", "Y") -> (x, y)
    assert f["normalized"]["test_rows_repeated"] == 1  # ("X ", "Y") repeats (x, y)


def test_absent_validation_split():
    splits = {"train": _rows(["a"], [0]), "test": _rows(["a", "b"], [0, 0])}
    f = _both(splits)["raw"]
    for name in ("test_rows_in_validation", "test_rows_in_validation_pct", "validation_rows_in_train",
                 "validation_rows_in_train_pct", "conflicting_texts_validation"):
        assert f[name] is None, name
    assert f["test_rows_in_train"] == 1 and f["test_rows_in_train_or_validation"] == 1  # a
    assert f["test_rows_in_train_same_label"] == 1  # (a, 0)
    assert f["conflicting_texts_train"] == 0 and f["conflicting_texts_test"] == 0


def test_absent_train_split():
    splits = {"validation": _rows(["a", "b"], [0, 1]), "test": _rows(["a", "a", "c"], [0, 1, 0])}
    f = _both(splits)["raw"]
    for name in ("test_rows_in_train", "test_rows_in_train_pct", "validation_rows_in_train",
                 "validation_rows_in_train_pct", "test_rows_in_train_same_label",
                 "test_rows_in_train_conflicting_label", "test_rows_in_train_same_label_pct",
                 "test_rows_in_train_conflicting_label_pct", "conflicting_texts_train"):
        assert f[name] is None, name
    assert f["test_rows_in_validation"] == 2  # both a
    assert f["test_rows_in_validation_pct"] == pytest.approx(200 / 3)
    assert f["test_rows_in_train_or_validation"] == 2
    assert f["test_rows_repeated"] == 1  # 2nd a
    assert f["test_rows_contaminated"] == 2  # both a (the 2nd is in validation and a repeat)
    assert f["conflicting_texts_validation"] == 0
    assert f["conflicting_texts_test"] == 1  # a: labels 0 and 1


def test_test_split_alone():
    f = _both({"test": _rows(["a", "a", "b"], [0, 0, 0])})["raw"]
    assert f["test_rows_in_train_or_validation"] is None  # neither train nor validation
    assert f["test_rows_repeated"] == 1 and f["test_rows_contaminated"] == 1  # the 2nd a
    assert f["contaminated_test_pct"] == pytest.approx(100 / 3)
    assert f["conflicting_texts_test"] == 0 and f["conflicting_texts_train"] is None


def test_no_label_column():
    splits = {"train": _rows(["a"]), "validation": _rows(["a"]), "test": _rows(["a", "b"])}
    f = _both(splits, label_column=None)["raw"]
    for name in ("test_rows_in_train_same_label", "test_rows_in_train_conflicting_label",
                 "test_rows_in_train_same_label_pct", "test_rows_in_train_conflicting_label_pct",
                 "conflicting_texts_train", "conflicting_texts_validation", "conflicting_texts_test"):
        assert f[name] is None, name
    assert f["test_rows_in_train"] == 1 and f["test_rows_in_validation"] == 1  # a
    assert f["test_rows_in_train_or_validation"] == 1  # a once
    assert f["validation_rows_in_train"] == 1 and f["validation_rows_in_train_pct"] == 100.0
    assert f["test_rows_contaminated"] == 1 and f["contaminated_test_pct"] == 50.0


def test_empty_splits_give_nr_percentages():
    f = _both({"train": _rows(["a"], [0]), "validation": [], "test": []})["raw"]
    assert f["test_rows_contaminated"] == 0 and f["contaminated_test_pct"] is None  # 0 test rows
    assert f["validation_rows_in_train"] == 0 and f["validation_rows_in_train_pct"] is None  # 0 rows


# --- invariants -----------------------------------------------------------------------------------


def _check_invariants(splits, text_columns, label_column):
    """Every invariant between the figures of one (config, label column); returns both profiles."""
    f = _both(splits, text_columns, label_column)
    n = {s: len(splits[s]) for s in splits}
    for profile in PROFILES:
        p = f[profile]
        assert set(p) == set(COUNTS) | set(PCTS)
        assert 0 <= p["test_rows_contaminated"] <= n["test"]
        assert p["test_rows_repeated"] is not None
        either = p["test_rows_in_train_or_validation"] or 0
        assert either <= (p["test_rows_in_train"] or 0) + (p["test_rows_in_validation"] or 0)
        assert either >= max(p["test_rows_in_train"] or 0, p["test_rows_in_validation"] or 0)
        assert p["test_rows_contaminated"] >= max(either, p["test_rows_repeated"])
        assert p["test_rows_contaminated"] <= either + p["test_rows_repeated"]
        if p["test_rows_in_train_same_label"] is not None:
            assert p["test_rows_in_train_same_label"] + p["test_rows_in_train_conflicting_label"] == p["test_rows_in_train"]
        else:
            assert p["test_rows_in_train_conflicting_label"] is None
            assert label_column is None or "train" not in splits
        for s in ("train", "validation", "test"):
            c = p[f"conflicting_texts_{s}"]
            assert (c is None) == (label_column is None or s not in splits)
            assert c is None or 0 <= 2 * c <= n[s]  # each conflicting text needs 2 rows at least
        for name, (count, split) in PCTS.items():
            if p[count] is None or n.get(split, 0) == 0:
                assert p[name] is None, name
            else:
                assert math.isclose(p[name], p[count] / n[split] * 100), name
                assert 0 <= p[name] <= 100
    for name in MONOTONE:
        raw, norm = f["raw"][name], f["normalized"][name]
        assert (raw is None) == (norm is None), name  # NR does not depend on the profile
        assert raw is None or raw <= norm, name
    # Tied to the LLE reference (raw keys too): rows vs distinct keys.
    lle, raw = lle_reference(splits, text_columns, label_column), f["raw"]
    assert raw["test_rows_repeated"] == lle["text_duplication_test"]  # both are rows - distinct keys
    for figure, leaks in (("test_rows_in_train", "text_leaks_train_wrt_test"),
                          ("test_rows_in_validation", "text_leaks_validation_wrt_test"),
                          ("test_rows_in_train_same_label", "text_and_label_leaks_train_wrt_test")):
        assert (raw[figure] is None) == (lle[leaks] is None), figure
        assert raw[figure] is None or raw[figure] >= lle[leaks], figure  # rows >= distinct keys
    for s in ("train", "validation", "test"):
        if raw[f"conflicting_texts_{s}"] is not None:
            # distinct (text, label) pairs - distinct texts = sum over texts of (labels - 1)
            extra = lle[f"text_duplication_{s}"] - lle[f"text_and_label_duplication_{s}"]
            assert raw[f"conflicting_texts_{s}"] <= extra and (raw[f"conflicting_texts_{s}"] == 0) == (extra == 0)
    return f


# Values whose variants merge under normalization (case, width, ß/ss, tab/newline/NBSP/space) and
# NULL beside "None". Each example samples its rows from a few of them, so that rows collide often.
TEXTS = [None, "", "a", "A", "\uff21", " a", "a\t", "ss", "ß", "SS", "s s", "s\u00a0s", "s\n s", "None", "none"]
LABELS = [None, 0, 1]
SEQUENCE_LABELS = [None, [], [0], [1], [0, 1]]


@st.composite
def random_splits(draw):
    """(splits, text columns, label column) of up to 8 rows a split.

    Column t0 holds strings or token lists, t1 strings; the label is a class or a tag sequence.
    """
    pool = st.sampled_from(draw(st.lists(st.sampled_from(TEXTS), min_size=1, max_size=4, unique=True)))
    first = draw(st.sampled_from([pool, st.one_of(st.none(), st.lists(pool, max_size=2))]))
    label = st.sampled_from(draw(st.sampled_from([LABELS, SEQUENCE_LABELS])))
    rows = st.lists(st.builds(lambda a, b, c: {"t0": a, "t1": b, "label": c}, first, pool, label), max_size=8)
    splits = {"test": draw(rows)}
    for name in ("train", "validation"):
        if draw(st.booleans()):
            splits[name] = draw(rows)
    columns = ["t0", "t1"][: draw(st.integers(1, 2))]
    return splits, columns, "label" if draw(st.booleans()) else None


@pytest.mark.slow  # 0.3-0.5 s here, mostly Hypothesis drawing the data
@settings(max_examples=50, deadline=None)
@given(random_splits())
def test_invariants_on_random_splits(case):
    _check_invariants(*case)


# --- real data ------------------------------------------------------------------------------------


def _load_rows(data) -> dict[str, list[dict]]:
    splits = {}
    for name, split in data.splits.items():
        tables = [pq.read_table(f) for f in split.files] if split.files else [split.table]
        splits[name] = [row for t in tables for row in t.to_pylist()]
    return splits


def _fmt(value):
    return "NR" if value is None else str(value)


@pytest.mark.slow
def test_invariants_on_every_shared_config(shared_datasets):
    """Both profiles, every config and label column of ../shared/datasets; prints raw vs normalized."""
    started = time.perf_counter()
    table = []
    for entry in shared_index():
        source = FolderSource(shared_datasets / entry["id"].replace("/", "__"))
        for config in entry["configs"]:
            data = check_config(source.load(config))
            roles = resolve_roles(data.features, entry["id"], config)
            splits = _load_rows(data)
            for label_column in list(roles.label_columns) or [None]:
                f = _check_invariants(splits, list(roles.text_columns), label_column)
                raw, norm = f["raw"], f["normalized"]
                table.append([
                    entry["id"], config, _fmt(label_column), str(len(splits["test"])),
                    _fmt(raw["test_rows_contaminated"]), _fmt(norm["test_rows_contaminated"]),
                    f"{_fmt(raw['test_rows_in_train_conflicting_label'])}/{_fmt(norm['test_rows_in_train_conflicting_label'])}",
                    "/".join(_fmt(f[p]["conflicting_texts_train"]) for p in PROFILES),
                    "/".join(_fmt(f[p]["conflicting_texts_test"]) for p in PROFILES),
                ])
    assert {(r[0], r[1]) for r in table} == {(e["id"], c) for e in shared_index() for c in e["configs"]}
    header = ["dataset", "config", "label", "rows_test", "contaminated raw", "contaminated norm",
              "test rows conflicting label raw/norm", "conflicting texts train raw/norm",
              "conflicting texts test raw/norm"]
    print(f"\n| {' | '.join(header)} |\n|{'---|' * len(header)}")
    for row in table:
        print(f"| {' | '.join(row)} |")
    print(f"{len(table)} (config, label column) pairs in {time.perf_counter() - started:.1f} s")
