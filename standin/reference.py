"""A plain-Python reference implementation of the LLE method (docs/method.md).

Deliberately naive: Python lists, tuples and sets, no DuckDB, nothing shared with the engine in
``hubsurvey.survey.metrics``. Tests compare the engine with it, and the mini-hub generator uses it to record
the true counts of what it planted. Keys are tuples of the raw column values; lists become tuples so
that they are hashable, and ``None`` stays ``None`` (a NULL equals a NULL, as str(None) made it in
the survey, but never equals the string "None").

``exact_reference`` does the same for the "exact" figures (``exact-2026``: test rows contaminated,
the ``raw`` and ``normalized`` key profiles, label conflicts), defined in its docstring.

``near_reference`` gives the near-duplicate figures (``near-2026``, defined in docs/method.md),
exhaustively: every pair of texts that can reach the threshold is found and its Jaccard computed
exactly, with no MinHash or any other approximation.

Nothing is imported from the product: the ``normalized`` profile too is written here, from its
definition in docs/method.md (:func:`normalize_string`), and a test checks that it agrees with the
engine's ``hubsurvey.survey.normalize.normalize_text``.
"""

from __future__ import annotations

import bisect
import math
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from fractions import Fraction
from typing import Any

SPLITS = ("train", "validation", "test")


def _freeze(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return tuple(_freeze(v) for v in value)
    if isinstance(value, dict):
        return tuple((k, _freeze(v)) for k, v in value.items())
    return value


def _keys(rows: Iterable[Mapping[str, Any]], columns: Sequence[str]) -> list[tuple]:
    return [tuple(_freeze(row[c]) for c in columns) for row in rows]


def lle_reference(
    splits: Mapping[str, Sequence[Mapping[str, Any]]],
    text_columns: Sequence[str],
    label_column: str | None,
) -> dict[str, float | int | None]:
    """Return the 13 LLE figures (+ difference_annotation) for one (config, label column).

    ``splits`` maps canonical split names (train, validation, test) to lists of row dicts.
    A figure that does not apply is None (NR). ``*_test_biased`` is the unrounded percentage.
    """
    out: dict[str, float | int | None] = {}
    kinds = [("text", list(text_columns))]
    kinds.append(("text_and_label", [*list(text_columns), label_column] if label_column else None))
    for prefix, cols in kinds:
        keys = {s: _keys(splits[s], cols) for s in SPLITS if s in splits} if cols else {}
        test = set(keys["test"]) if "test" in keys else None
        for src in ("train", "validation"):
            name = f"{prefix}_leaks_{src}_wrt_test"
            out[name] = len(set(keys[src]) & test) if src in keys and test is not None else None
        for s in SPLITS:
            out[f"{prefix}_duplication_{s}"] = len(keys[s]) - len(set(keys[s])) if s in keys else None
        if cols and "test" in keys and keys["test"]:
            leaks = out[f"{prefix}_leaks_train_wrt_test"] or 0
            out[f"{prefix}_test_biased"] = (leaks + out[f"{prefix}_duplication_test"]) / len(keys["test"]) * 100
        else:
            out[f"{prefix}_test_biased"] = None
    if label_column:
        diff = 0
        for src in ("train", "validation"):
            a, b = out[f"text_leaks_{src}_wrt_test"], out[f"text_and_label_leaks_{src}_wrt_test"]
            diff += (a or 0) - (b or 0)
        out["difference_annotation"] = float(abs(diff))
    else:
        out["difference_annotation"] = None
    return out


# --- the "exact" figures (exact-2026: row-level contamination, normalized keys, label conflicts) -----

PROFILES = ("raw", "normalized")


def is_whitespace(char: str) -> bool:
    """Whitespace as the method defines it, "as Python's str.split() sees it": a character whose
    Unicode general category is Zs (space separator), or whose bidirectional class is WS, B or S
    (the rule the Python documentation gives for str.isspace, which str.split() splits on)."""
    return unicodedata.category(char) == "Zs" or unicodedata.bidirectional(char) in ("WS", "B", "S")


#: The last code point Unicode makes whitespace (U+3000, the ideographic space); a test checks
#: every code point, so the set below, scanned up to it, is every whitespace character.
LAST_WHITESPACE = 0x3000
_WHITESPACE_RUN = re.compile(
    "[" + "".join(re.escape(chr(c)) for c in range(LAST_WHITESPACE + 1) if is_whitespace(chr(c))) + "]+")


def normalize_string(text: str) -> str:
    """The ``normalized`` profile of one string, step by step as docs/method.md states it: Unicode
    NFKC, then case folding, then every run of whitespace (:func:`is_whitespace`) becomes one space,
    and none is left at either end."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    return " ".join(word for word in _WHITESPACE_RUN.split(folded) if word)


def normalize_value(value: Any) -> Any:
    """The ``normalized`` key profile of one column value.

    A string is NFKC-normalized, then case-folded, then every run of whitespace (as ``str.split()``
    sees it) becomes one space and the ends are stripped. A list or tuple is normalized element by
    element, recursively (a list stays a list, a tuple a tuple). ``None`` stays ``None``, so a NULL
    never equals the string "None" nor "none". Any other value (int, float, bool, dict, ...) is
    returned unchanged, a dict's values included: only text is normalized.
    """
    if isinstance(value, str):
        return normalize_string(value)
    if isinstance(value, list):
        return [normalize_value(v) for v in value]
    if isinstance(value, tuple):
        return tuple(normalize_value(v) for v in value)
    return value


def _text_keys(rows: Sequence[Mapping[str, Any]], columns: Sequence[str], profile: str) -> list[tuple]:
    if profile == "raw":
        return [tuple(_freeze(row[c]) for c in columns) for row in rows]
    return [tuple(_freeze(normalize_value(row[c])) for c in columns) for row in rows]


def _pct(count: int | None, rows: int) -> float | None:
    if count is None or rows == 0:
        return None
    return count / rows * 100


def exact_reference(
    splits: Mapping[str, Sequence[Mapping[str, Any]]],
    text_columns: Sequence[str],
    label_column: str | None,
    profile: str,
) -> dict[str, float | int | None]:
    """Return the exact figures (exact-2026) for one (config, label column) and one key profile.

    ``splits`` maps canonical split names (train, validation, test) to lists of row dicts; an absent
    split is an absent key, and ``test`` is always there. ``profile`` is ``"raw"`` (the values as
    LLE compares them) or ``"normalized"`` (``normalize_value`` applied to each text value). The
    *text key* of a row is the tuple of its text column values, in order, lists frozen to tuples.
    The label is always compared raw and whole (a sequence label is one value). ``None`` is a value
    like any other: a NULL text equals a NULL text, a NULL label equals a NULL label.

    Every name below is prefixed with ``<profile>_``; a figure that does not apply is ``None`` (NR).

    - ``test_rows_in_train``: test rows whose text key occurs in train. NR without train.
    - ``test_rows_in_validation``: test rows whose text key occurs in validation. NR without validation.
    - ``test_rows_in_train_or_validation``: test rows whose text key occurs in train or in
      validation, each row once. NR when neither exists.
    - ``test_rows_repeated``: test rows whose text key occurs at an earlier test position
      (= test rows - distinct test keys). Always measured.
    - ``test_rows_contaminated``: test rows that are in train, in validation, or a repeat; each row
      once. Always measured (an absent split contributes nothing).
    - ``validation_rows_in_train``: validation rows whose text key occurs in train. NR unless both exist.
    - ``test_rows_in_train_same_label``: test rows whose (text key, label) pair occurs in train.
      NR without train or without a label column.
    - ``test_rows_in_train_conflicting_label``: test rows whose text key occurs in train, but never
      with their label. NR without train or without a label column.
    - ``conflicting_texts_<split>``: distinct text keys carrying more than one distinct label within
      that split. NR when the split is absent or there is no label column.
    - percentages, unrounded, count / rows of the split * 100: ``test_rows_in_train_pct``,
      ``test_rows_in_validation_pct``, ``test_rows_in_train_or_validation_pct``,
      ``test_rows_repeated_pct``, ``contaminated_test_pct`` (of ``test_rows_contaminated``),
      ``test_rows_in_train_same_label_pct``, ``test_rows_in_train_conflicting_label_pct`` (all over
      the test rows) and ``validation_rows_in_train_pct`` (over the validation rows). NR when the
      count is NR or the split has no rows.
    """
    if profile not in PROFILES:
        raise ValueError(f"unknown key profile {profile!r}")
    keys = {s: _text_keys(splits[s], text_columns, profile) for s in SPLITS if s in splits}
    labels = {s: [_freeze(row[label_column]) for row in splits[s]] for s in keys} if label_column else {}
    test = keys["test"]
    train_set = set(keys["train"]) if "train" in keys else None
    validation_set = set(keys["validation"]) if "validation" in keys else None

    in_train = 0
    in_validation = 0
    in_either = 0
    repeated = 0
    contaminated = 0
    seen: set[tuple] = set()
    for key in test:
        found_train = train_set is not None and key in train_set
        found_validation = validation_set is not None and key in validation_set
        is_repeat = key in seen
        seen.add(key)
        if found_train:
            in_train += 1
        if found_validation:
            in_validation += 1
        if found_train or found_validation:
            in_either += 1
        if is_repeat:
            repeated += 1
        if found_train or found_validation or is_repeat:
            contaminated += 1

    validation_in_train = None
    if train_set is not None and validation_set is not None:
        validation_in_train = 0
        for key in keys["validation"]:
            if key in train_set:
                validation_in_train += 1

    same_label = None
    conflicting_label = None
    if label_column and train_set is not None:
        train_pairs = set(zip(keys["train"], labels["train"]))
        same_label = 0
        conflicting_label = 0
        for key, label in zip(test, labels["test"]):
            if (key, label) in train_pairs:
                same_label += 1
            elif key in train_set:
                conflicting_label += 1

    conflicting_texts: dict[str, int | None] = {}
    for s in SPLITS:
        if not label_column or s not in keys:
            conflicting_texts[s] = None
            continue
        labels_of: dict[tuple, set] = {}
        for key, label in zip(keys[s], labels[s]):
            labels_of.setdefault(key, set()).add(label)
        conflicting_texts[s] = sum(1 for found in labels_of.values() if len(found) > 1)

    n_test = len(test)
    n_validation = len(keys["validation"]) if "validation" in keys else 0
    counts: dict[str, int | None] = {
        "test_rows_in_train": in_train if train_set is not None else None,
        "test_rows_in_validation": in_validation if validation_set is not None else None,
        "test_rows_in_train_or_validation": in_either if (train_set is not None or validation_set is not None) else None,
        "test_rows_repeated": repeated,
        "test_rows_contaminated": contaminated,
        "validation_rows_in_train": validation_in_train,
        "test_rows_in_train_same_label": same_label,
        "test_rows_in_train_conflicting_label": conflicting_label,
        **{f"conflicting_texts_{s}": conflicting_texts[s] for s in SPLITS},
    }
    out: dict[str, float | int | None] = {f"{profile}_{name}": value for name, value in counts.items()}
    for name in (
        "test_rows_in_train",
        "test_rows_in_validation",
        "test_rows_in_train_or_validation",
        "test_rows_repeated",
        "test_rows_in_train_same_label",
        "test_rows_in_train_conflicting_label",
    ):
        out[f"{profile}_{name}_pct"] = _pct(counts[name], n_test)
    out[f"{profile}_contaminated_test_pct"] = _pct(contaminated, n_test)
    out[f"{profile}_validation_rows_in_train_pct"] = _pct(validation_in_train, n_validation)
    return out



# --- the per-column figures (exact-2026 on one text column alone) ----------------------------------


class _Unmatched:
    """Stands for an empty or NULL value of the measured column: equal to nothing but itself, so the
    row it stands in never matches another one (normalize_value leaves it as it is)."""

    __slots__ = ()


def _is_empty(value: Any) -> bool:
    return value is None or (isinstance(value, (str, list, tuple)) and len(value) == 0)


def per_column_reference(
    splits: Mapping[str, Sequence[Mapping[str, Any]]],
    text_columns: Sequence[str],
    column: str,
    label_column: str | None,
    profile: str,
) -> dict[str, float | int | None]:
    """The figures of text column ``column`` alone, under ``profile``: every figure of
    :func:`exact_reference` with the text key made of that column's value only, where a value that
    is NULL, or empty under the profile (the empty string, the empty list), matches no other row;
    plus ``test_rows_column_in_train_only``: test rows whose (non-empty) value of the column occurs in
    train while their whole text key (every one of ``text_columns``, under the profile) does not, and
    its ``_pct`` over the test rows. NR without train. Named with the ``<profile>_`` prefix."""
    def value(row: Mapping[str, Any]) -> Any:
        seen = row[column] if profile == "raw" else normalize_value(row[column])
        return _Unmatched() if _is_empty(seen) else row[column]

    alone = {s: [{"value": value(row), **({"label": row[label_column]} if label_column else {})} for row in rows]
             for s, rows in splits.items()}
    out = exact_reference(alone, ["value"], "label" if label_column else None, profile)
    if "train" not in splits:
        only = None
    else:
        train_values = set(_text_keys(alone["train"], ["value"], profile))
        train_texts = set(_text_keys(splits["train"], text_columns, profile))
        only = sum(1 for row, text in zip(alone["test"], _text_keys(splits["test"], text_columns, profile))
                   if _text_keys([row], ["value"], profile)[0] in train_values and text not in train_texts)
    out[f"{profile}_test_rows_column_in_train_only"] = only
    out[f"{profile}_test_rows_column_in_train_only_pct"] = _pct(only, len(splits["test"]))
    return out

# --- the near-duplicate figures (near-2026), exhaustive ---------------------------------------------
#
# How it works, and why it is exhaustive:
# 1. Every row becomes a text (``near_text``), every text a set of character shingles (``shingles``).
# 2. Similarity is computed between DISTINCT texts only (``near_text_pairs``): two rows with the same
#    text have the same shingle set, so J = 1, and a text shared by many rows would otherwise make the
#    pair set quadratic in its rows (miam/vm2's "mhm backchannel a" alone is 921 rows). Rows come back
#    only where a figure or a pair list needs them.
# 3. Candidate pairs come from an inverted index shingle -> texts: two texts sharing no shingle have
#    J = 0. Indexing EVERY shingle (``index="full"``, the literal definition) is plain
#    but visits up to 2.8e9 pairs on the shared configs (tweet_eval/emoji: " the " is in half the
#    tweets), which plain Python cannot do. The default (``index="prefix"``) indexes only each set's
#    PREFIX, then drops candidates by two bounds (sizes, overlap); none of the three loses a pair at
#    J >= t, and each has its proof where it is applied. Only pairs with a test or validation text
#    are computed. The tests check the result against a brute force over all pairs, and "full".
# 4. Every candidate left is verified with the exact Jaccard of the two sets (a Fraction).

CURVE = {"0_9": Fraction(9, 10), "0_8": Fraction(8, 10), "0_7": Fraction(7, 10), "0_6": Fraction(6, 10)}
"""The threshold curve: figure-name suffix -> τ (``test_rows_near_train_at_<suffix>``)."""

Pair = tuple[tuple[str, int], tuple[str, int]]
"""A pair of rows, each (split, position in the split), in canonical order (``canonical_pair``)."""


def _as_fraction(threshold: float | Fraction) -> Fraction:
    """τ as the decimal it is written as: 0.9 is 9/10, not the binary float 0.9000000000000000222.

    Why: J = 9/10 must count at τ = 0.9, as it does when J and τ are both floats (9 / 10 == 0.9).
    Compared exactly with the float 0.9, 9/10 would be below it.
    """
    if isinstance(threshold, Fraction):
        return threshold
    return Fraction(str(threshold))


def _near_value(value: Any) -> str:
    """One column value as text (NEAR_SPEC, "The text of a row")."""
    if value is None:
        return ""
    if isinstance(value, str):
        return normalize_string(value)
    if isinstance(value, list):
        # Non-NULL elements, each normalized (a non-string one through str() first), joined by " ".
        # An element that normalizes to "" is kept (the spec drops only NULL elements).
        return " ".join(normalize_string(e if isinstance(e, str) else str(e)) for e in value if e is not None)
    return normalize_string(str(value))


def near_text(row: Mapping[str, Any], text_columns: Sequence[str]) -> str:
    """The text of a row: its text columns' values as text, in order, the non-empty ones joined by " "."""
    parts = [_near_value(row[c]) for c in text_columns]
    return " ".join(p for p in parts if p != "")


def shingles(text: str, n: int = 5) -> frozenset[str]:
    """The shingle set of a text: its character n-grams (code points); a text shorter than n is one shingle."""
    if n < 1:
        raise ValueError(f"shingle size must be >= 1, not {n}")
    if len(text) < n:
        return frozenset([text])  # "" included: the empty text is the one shingle ""
    return frozenset(text[i : i + n] for i in range(len(text) - n + 1))


def jaccard(a: frozenset[str], b: frozenset[str]) -> Fraction:
    """J(A, B) = len(A & B) / len(A | B), exactly."""
    return Fraction(len(a & b), len(a | b))


def _prefix(ordered: Sequence[str], t: Fraction) -> Sequence[str]:
    """The prefix of a shingle set (listed in the global order): its first |A| - ceil(t·|A|) + 1 shingles.

    Why no pair at J >= t is lost (the prefix filter). All sets are listed in one global order of
    the shingles. Let J(A, B) >= t > 0 and o = len(A & B). Then o >= t·len(A | B) >= t·|A|, and o is
    an integer, so o >= ceil(t·|A|). Let x be the first shared shingle in the order. The shingles of
    A before x are not shared, so there are at most |A| - o of them: x is among the first
    |A| - o + 1 <= |A| - ceil(t·|A|) + 1 shingles of A, i.e. in A's prefix. The same holds for B, so
    A and B share the prefix shingle x and meet in the prefix index. Any one order would do; rarest
    first keeps the posting lists short.
    """
    return ordered[: len(ordered) - math.ceil(t * len(ordered)) + 1]


def near_text_pairs(
    texts: Iterable[str],
    *,
    queries: Iterable[str] | None = None,
    shingle_size: int = 5,
    min_threshold: float | Fraction = 0.6,
    index: str = "prefix",
) -> dict[tuple[str, str], Fraction]:
    """Every pair of DISTINCT texts with J >= min_threshold: {(text_a, text_b): J}, text_a < text_b.

    Identical texts are not listed: their J is 1 (``near_pairs`` and ``near_reference`` add them).
    ``queries``: when given, only pairs with at least one text among them are computed (the
    figures need no train-train pair, and on tweet_eval/emoji those are most of the work).
    ``index``: ``"prefix"`` (default) indexes each set's prefix (``_prefix``); ``"full"`` indexes every
    shingle, i.e. every pair sharing one is a candidate (the literal definition; slow on real data).

    Steps, each exact (nothing that can reach t is dropped; the proofs are in the comments):
    shingle sets -> global order (rarest first) -> inverted index shingle -> texts, on the indexed
    shingles -> for each query text, the texts sharing an indexed shingle, counted -> two bounds
    that no pair at J >= t can fail -> the exact Jaccard of the two sets.
    """
    t = _as_fraction(min_threshold)
    if not 0 < t <= 1:
        raise ValueError(f"min_threshold must be in (0, 1], not {min_threshold}")
    if index not in ("prefix", "full"):
        raise ValueError(f"unknown index {index!r}")
    num, den = t.numerator, t.denominator  # x / y >= t is x * den >= num * y: integers, exact and fast

    # Distinct texts, numbered by (set size, text): a range of sizes is then a range of numbers.
    set_of = {text: shingles(text, shingle_size) for text in set(texts)}
    distinct = sorted(set_of, key=lambda text: (len(set_of[text]), text))
    sets = [set_of[text] for text in distinct]
    sizes = [len(s) for s in sets]
    query_set = set(queries) if queries is not None else None
    probes = [query_set is None or text in query_set for text in distinct]

    # The global order: rarest shingle first (document frequency over the distinct texts), then the string.
    df: Counter[str] = Counter()
    for shingle_set in sets:
        df.update(shingle_set)
    rank = {shingle: r for r, shingle in enumerate(sorted(df, key=lambda s: (df[s], s)))}
    indexed = []
    for shingle_set in sets:
        ordered = sorted(shingle_set, key=rank.__getitem__)
        indexed.append(_prefix(ordered, t) if index == "prefix" else ordered)
    end = [rank[shingle_list[-1]] for shingle_list in indexed]  # where each indexed part ends in the order
    rest = [size - len(shingle_list) for size, shingle_list in zip(sizes, indexed, strict=True)]  # not indexed

    postings: dict[str, list[int]] = {}  # shingle -> the texts indexing it, in increasing number
    for i, shingle_list in enumerate(indexed):
        for shingle in shingle_list:
            postings.setdefault(shingle, []).append(i)

    pairs: dict[tuple[str, str], Fraction] = {}
    for i, a in enumerate(sets):
        if not probes[i]:
            continue
        # Size filter: J <= min(|A|, |B|) / max(|A|, |B|), so J >= t needs t·|A| <= |B| <= |A| / t.
        lo = bisect.bisect_left(sizes, math.ceil(t * sizes[i]))
        hi = bisect.bisect_right(sizes, math.floor(sizes[i] / t))
        shared: Counter[int] = Counter()  # text j -> c, how many indexed shingles i and j share
        for shingle in indexed[i]:
            ids = postings[shingle]
            shared.update(ids[bisect.bisect_left(ids, lo) : bisect.bisect_left(ids, hi)])
        for j, c in shared.items():
            if j == i or (probes[j] and j < i):
                continue  # a text with itself; a pair of two queries is done once, from its lower number
            # Overlap bound: say i's indexed part ends no later than j's in the order. A shared shingle
            # in i's part is then in j's part too (a part holds all of its set up to its end), so
            # o <= c + rest[i]; else o <= c + rest[j]. J >= t iff o >= t·(|A| + |B|) / (1 + t).
            # (With index="full", rest is 0 and c is o itself.)
            o_max = c + (rest[i] if end[i] <= end[j] else rest[j])
            if o_max * (num + den) < num * (sizes[i] + sizes[j]):
                continue
            common = len(a & sets[j])
            union = sizes[i] + sizes[j] - common
            if common * den >= num * union:  # J >= t
                first, second = sorted((distinct[i], distinct[j]))
                pairs[(first, second)] = Fraction(common, union)
    return pairs


def _split_texts(splits: Mapping[str, Sequence[Mapping[str, Any]]], text_columns: Sequence[str]) -> dict[str, list[str]]:
    return {s: [near_text(row, text_columns) for row in splits[s]] for s in SPLITS if s in splits}


def _similar_texts(
    texts: Mapping[str, Sequence[str]], shingle_size: int, min_threshold: Fraction
) -> dict[str, dict[str, Fraction]]:
    """text -> {every text at J >= min_threshold from it, ITSELF INCLUDED (J = 1): J}.

    Complete for the texts of test and validation rows (the queries); a text found only in train
    lists only its pairs with those (train-train pairs are not computed: no figure uses them).
    """
    every = {text for split_texts in texts.values() for text in split_texts}
    queries = {text for split in ("validation", "test") for text in texts.get(split, ())}
    similar: dict[str, dict[str, Fraction]] = {text: {text: Fraction(1)} for text in every}
    pairs = near_text_pairs(every, queries=queries, shingle_size=shingle_size, min_threshold=min_threshold)
    for (a, b), similarity in pairs.items():
        similar[a][b] = similarity
        similar[b][a] = similarity
    return similar


def canonical_pair(a: tuple[str, int], b: tuple[str, int]) -> Pair:
    """(split, position) pairs in one order: train < validation < test, then by position."""
    rank = {name: i for i, name in enumerate(SPLITS)}
    first, second = sorted((a, b), key=lambda row: (rank[row[0]], row[1]))
    return first, second


def near_pairs(
    splits: Mapping[str, Sequence[Mapping[str, Any]]],
    text_columns: Sequence[str],
    *,
    shingle_size: int = 5,
    min_threshold: float | Fraction = 0.6,
) -> dict[Pair, Fraction]:
    """Every pair of ROWS at J >= min_threshold that a figure can use: {canonical_pair: J}.

    ``splits`` is as for ``exact_reference``. A pair is two different rows (identical texts
    included, J = 1), within or across splits, with at least one row in test or validation:
    train-train pairs are left out, no figure uses them. Beware: a text shared by k rows gives
    about k²/2 pairs; ``near_text_pairs`` is the compact form (distinct texts).
    """
    t = _as_fraction(min_threshold)
    texts = _split_texts(splits, text_columns)
    rows_of: dict[str, list[tuple[str, int]]] = {}
    for split, split_texts in texts.items():
        for position, text in enumerate(split_texts):
            rows_of.setdefault(text, []).append((split, position))
    similar = _similar_texts(texts, shingle_size, t)

    out: dict[Pair, Fraction] = {}
    for text, rows in rows_of.items():
        for other, similarity in similar[text].items():
            if other < text:
                continue  # each pair of texts once (a text with itself once too)
            for a in rows:
                for b in rows_of[other]:
                    if a == b or (a[0] == "train" and b[0] == "train"):
                        continue
                    out[canonical_pair(a, b)] = similarity
    return out


def _near_row_sets(
    texts: Mapping[str, Sequence[str]],
    labels: Mapping[str, Sequence[Any]] | None,
    similar: Mapping[str, Mapping[str, Fraction]],
    tau: Fraction,
) -> dict[str, set[int] | None]:
    """The rows each count figure counts at τ, as positions in their split; None where the figure is NR.

    Plain loops over the rows, in the spec's words. near(x) = the texts at J >= τ from text x, x
    included, so a row of S is in near_S(r) exactly when its text is in near(text of r).
    """

    def near(text: str) -> set[str]:
        return {other for other, similarity in similar[text].items() if similarity >= tau}

    test = texts["test"]
    train_texts = set(texts["train"]) if "train" in texts else None
    validation_texts = set(texts["validation"]) if "validation" in texts else None

    # test_rows_near_train / _near_validation: a test row with a train (validation) row at J >= τ.
    # Other splits than the row's own: "other than r itself" cannot exclude anything there.
    near_train: set[int] | None = None
    if train_texts is not None:
        near_train = {i for i, text in enumerate(test) if near(text) & train_texts}
    near_validation: set[int] | None = None
    if validation_texts is not None:
        near_validation = {i for i, text in enumerate(test) if near(text) & validation_texts}

    # test_rows_near_repeated: a test row with a row at an EARLIER test position at J >= τ.
    near_repeated: set[int] = set()
    earlier: set[str] = set()
    for i, text in enumerate(test):
        if near(text) & earlier:
            near_repeated.add(i)
        earlier.add(text)

    # test_rows_near_contaminated: near train, near validation or near-repeated; each row once.
    contaminated = set(near_repeated) | (near_train or set()) | (near_validation or set())

    # validation_rows_near_train: NR without train or without validation.
    validation_near_train: set[int] | None = None
    if train_texts is not None and validation_texts is not None:
        validation_near_train = {i for i, text in enumerate(texts["validation"]) if near(text) & train_texts}

    # test_rows_near_train_conflicting_label: near train, and no near train row carries r's label.
    conflicting: set[int] | None = None
    if labels is not None and train_texts is not None:
        labels_of: dict[str, set[Any]] = {}  # train text -> the labels its train rows carry
        for text, label in zip(texts["train"], labels["train"], strict=True):
            labels_of.setdefault(text, set()).add(label)
        conflicting = set()
        for i, (text, label) in enumerate(zip(test, labels["test"], strict=True)):
            near_train_texts = near(text) & train_texts
            if near_train_texts and not any(label in labels_of[other] for other in near_train_texts):
                conflicting.add(i)

    return {
        "test_rows_near_train": near_train,
        "test_rows_near_validation": near_validation,
        "test_rows_near_repeated": near_repeated,
        "test_rows_near_contaminated": contaminated,
        "validation_rows_near_train": validation_near_train,
        "test_rows_near_train_conflicting_label": conflicting,
    }


def _labels(splits: Mapping[str, Sequence[Mapping[str, Any]]], label_column: str | None) -> dict[str, list[Any]] | None:
    """Each split's labels, frozen (a list as a whole, hashable; NULL stays None), or None without a label."""
    if not label_column:
        return None
    return {s: [_freeze(row[label_column]) for row in splits[s]] for s in SPLITS if s in splits}


def near_rows(
    splits: Mapping[str, Sequence[Mapping[str, Any]]],
    text_columns: Sequence[str],
    label_column: str | None,
    *,
    threshold: float | Fraction = 0.8,
    shingle_size: int = 5,
) -> dict[str, set[int] | None]:
    """The rows behind each count of ``near_reference`` at τ = threshold: figure name -> positions.

    Positions are in the test split, except ``validation_rows_near_train`` (validation positions).
    None where the figure is NR. For comparing an engine's rows, not only its counts.
    """
    tau = _as_fraction(threshold)
    texts = _split_texts(splits, text_columns)
    return _near_row_sets(texts, _labels(splits, label_column), _similar_texts(texts, shingle_size, tau), tau)


# Percentage name -> (count it is made of, split whose rows it divides by).
NEAR_PCTS = {
    "test_rows_near_train_pct": ("test_rows_near_train", "test"),
    "test_rows_near_validation_pct": ("test_rows_near_validation", "test"),
    "test_rows_near_repeated_pct": ("test_rows_near_repeated", "test"),
    "near_contaminated_test_pct": ("test_rows_near_contaminated", "test"),
    "validation_rows_near_train_pct": ("validation_rows_near_train", "validation"),
    "test_rows_near_train_conflicting_label_pct": ("test_rows_near_train_conflicting_label", "test"),
    **{f"test_rows_near_train_at_{k}_pct": (f"test_rows_near_train_at_{k}", "test") for k in CURVE},
}


def near_reference(
    splits: Mapping[str, Sequence[Mapping[str, Any]]],
    text_columns: Sequence[str],
    label_column: str | None,
    *,
    threshold: float | Fraction = 0.8,
    shingle_size: int = 5,
) -> dict[str, float | int | None]:
    """Return the near-duplicate figures (near-2026) for one (config, label column), exhaustively.

    ``splits`` is as for ``exact_reference`` (``test`` always there, an absent split an absent key).
    Definitions: NEAR_SPEC.md. Counts are rows, each once; a figure that does not apply is None (NR):

    - ``test_rows_near_train``: test rows with a train row at J >= threshold. NR without train.
    - ``test_rows_near_validation``: the same against validation. NR without validation.
    - ``test_rows_near_repeated``: test rows with a test row at an earlier position at J >= threshold.
    - ``test_rows_near_contaminated``: test rows near train, near validation or near-repeated, once.
    - ``validation_rows_near_train``: validation rows with a train row at J >= threshold. NR without
      train or without validation.
    - ``test_rows_near_train_conflicting_label``: test rows near train none of whose near train rows
      carries the test row's label (compared exactly, a list as a whole, NULL = NULL). NR without
      train or without a label column.
    - ``test_rows_near_train_at_0_9``, ``_0_8``, ``_0_7``, ``_0_6``: ``test_rows_near_train`` at
      τ = 0.9, 0.8, 0.7, 0.6 whatever ``threshold`` is. NR without train.
    - percentages (``NEAR_PCTS``), unrounded, count / rows of the split * 100 (the curve's too):
      NR when the count is NR or the split has no rows. ``near_contaminated_test_pct`` is the
      percentage of ``test_rows_near_contaminated``.

    τ is read as the decimal it is written as (``_as_fraction``) and J is exact (a Fraction).
    """
    by_label = near_reference_by_label(
        splits, text_columns, [label_column] if label_column else [], threshold=threshold, shingle_size=shingle_size
    )
    return next(iter(by_label.values()))


def near_reference_by_label(
    splits: Mapping[str, Sequence[Mapping[str, Any]]],
    text_columns: Sequence[str],
    label_columns: Sequence[str],
    *,
    threshold: float | Fraction = 0.8,
    shingle_size: int = 5,
) -> dict[str | None, dict[str, float | int | None]]:
    """``near_reference`` for each label column ({None: ...} without one), the similar texts found once."""
    tau = _as_fraction(threshold)
    texts = _split_texts(splits, text_columns)
    # One similarity table at the lowest τ needed; each figure filters it at its own τ.
    similar = _similar_texts(texts, shingle_size, min(tau, *CURVE.values()))
    out: dict[str | None, dict[str, float | int | None]] = {}
    columns: list[str | None] = [*label_columns] or [None]
    for label_column in columns:
        out[label_column] = _near_figures(texts, _labels(splits, label_column), similar, tau)
    return out


def _near_figures(
    texts: Mapping[str, Sequence[str]],
    labels: Mapping[str, Sequence[Any]] | None,
    similar: Mapping[str, Mapping[str, Fraction]],
    tau: Fraction,
) -> dict[str, float | int | None]:
    """The figures from the rows each counts (``_near_row_sets``) at τ, and the curve at its own τs."""
    counts: dict[str, int | None] = {}
    for name, rows in _near_row_sets(texts, labels, similar, tau).items():
        counts[name] = None if rows is None else len(rows)
    for suffix, curve_tau in CURVE.items():
        rows = _near_row_sets(texts, labels, similar, curve_tau)["test_rows_near_train"]
        counts[f"test_rows_near_train_at_{suffix}"] = None if rows is None else len(rows)

    out: dict[str, float | int | None] = dict(counts)
    for name, (count, split) in NEAR_PCTS.items():
        out[name] = _pct(counts[count], len(texts[split]) if split in texts else 0)
    return out


# --- leaks across datasets (cross-2026), in plain Python (sets over rows) -----------------------------


def cross_reference(
    configs: Mapping[tuple[str, str], Mapping[str, Sequence[Mapping[str, Any]]]],
    text_columns: Mapping[Any, Sequence[str]],
    copy_threshold: float = 0.8,
) -> dict[str, Any]:
    """The cross-dataset overlaps of ``configs`` ({(dataset, config): {canonical split: rows}}), as
    the ``cross-2026`` method defines them, with no code shared with hubsurvey's SQL:

    - for every test split A and every split S of another dataset: the test rows of A (positions,
      each counted once) whose normalized text key (``normalize_value`` of each text column) is
      among S's keys; kept when > 0;
    - A copy of B: >= ``copy_threshold`` of A's test rows in B's test, and >= ``copy_threshold`` of
      A's train rows in B's train (or neither has a train split);
    - families: datasets joined by copies in either direction; id = the smallest dataset id;
    - relation: test source: ``copy`` / ``family`` (same family) / ``shared_test``; train or
      validation source: ``family`` (same family) or ``leak``.

    ``text_columns`` maps a dataset, or a (dataset, config), to its text columns.

    Returns ``{"overlaps": [...], "copies": [[A, a_config, B, b_config], ...], "families": {dataset: members}}``.
    """
    keys = {
        (d, c): {s: [tuple(_freeze(normalize_value(row[col])) for col in text_columns.get((d, c)) or text_columns[d])
                     for row in rows]
                 for s, rows in splits.items()}
        for (d, c), splits in configs.items()
    }
    sets = {k: {s: set(v) for s, v in splits.items()} for k, splits in keys.items()}
    found = []
    for (a, ca), splits_a in keys.items():
        test = splits_a["test"]
        for (b, cb), sets_b in sets.items():
            if a == b:
                continue
            for split in SPLITS:
                if split in sets_b:
                    n = sum(1 for k in test if k in sets_b[split])
                    if n:
                        found.append({"test_dataset": a, "test_config": ca, "source_dataset": b, "source_config": cb,
                                      "source_split": split, "rows": n, "test_rows": len(test)})
    copies = []
    for o in found:
        if o["source_split"] != "test" or o["rows"] < copy_threshold * o["test_rows"]:
            continue
        a_train = keys[(o["test_dataset"], o["test_config"])].get("train")
        b_train = sets[(o["source_dataset"], o["source_config"])].get("train")
        if (a_train is None and b_train is None) or (
                a_train is not None and b_train is not None
                and sum(1 for k in a_train if k in b_train) >= copy_threshold * len(a_train)):
            copies.append([o["test_dataset"], o["test_config"], o["source_dataset"], o["source_config"]])
    groups: list[set[str]] = []
    for a, _, b, _ in copies:
        joined = {a, b}
        for g in [g for g in groups if g & joined]:
            joined |= g
            groups.remove(g)
        groups.append(joined)
    families = {d: sorted(g) for g in groups for d in g}
    copy_keys = {tuple(c) for c in copies}
    for o in found:
        same = o["test_dataset"] in families and families[o["test_dataset"]] == families.get(o["source_dataset"])
        if o["source_split"] == "test":
            key = (o["test_dataset"], o["test_config"], o["source_dataset"], o["source_config"])
            o["relation"] = "copy" if key in copy_keys else "family" if same else "shared_test"
        else:
            o["relation"] = "family" if same else "leak"
    return {"overlaps": found, "copies": copies, "families": families}


# --- beyond the pair of texts: blank rows, groups, dates (rows-2026, groups-2026, time-2026) ---------


def is_blank(value: Any) -> bool:
    """A text value that says nothing: None, a string of whitespace only (:func:`is_whitespace`; the
    empty string included), or a list or tuple whose elements are all blank (the empty one included).
    Any other value (a dict, a number) is blank only when None."""
    if value is None:
        return True
    if isinstance(value, str):
        return all(is_whitespace(c) for c in value)
    if isinstance(value, (list, tuple)):
        return all(is_blank(v) for v in value)
    return False


def blank_reference(splits: Mapping[str, Sequence[Mapping[str, Any]]], text_columns: Sequence[str],
                    label_column: str | None) -> dict[str, Any]:
    """``<split>_rows_blank_text`` (every text column blank) and ``<split>_rows_null_label`` (the
    label is None; NR without a label column), each with its ``_pct`` of the split's rows; NR for
    an absent split."""
    out: dict[str, Any] = {}
    for split in SPLITS:
        rows = splits.get(split)
        blank = None if rows is None else sum(all(is_blank(r[c]) for c in text_columns) for r in rows)
        null = None if rows is None or label_column is None else sum(r[label_column] is None for r in rows)
        n = len(rows) if rows is not None else 0
        out[f"{split}_rows_blank_text"], out[f"{split}_rows_blank_text_pct"] = blank, _pct(blank, n)
        out[f"{split}_rows_null_label"], out[f"{split}_rows_null_label_pct"] = null, _pct(null, n)
    return out


def _group_value(value: Any) -> Any:
    """A group column's value as a group: None for NULL and for the empty string or list (no group)."""
    if value is None or (isinstance(value, (str, list, tuple)) and len(value) == 0):
        return None
    return _freeze(value)


def group_reference(splits: Mapping[str, Sequence[Mapping[str, Any]]], column: str) -> dict[str, Any]:
    """The figures of group column ``column`` (docs/method.md, groups-2026), from Counters of its
    values per split (None and empty values are no group), plus ``repeats`` (a group holds two rows
    or more of one split: a group column, not a row id) and ``numbering_reused``."""
    counts = {s: Counter(v for v in (_group_value(r[column]) for r in rows) if v is not None)
              for s, rows in splits.items()}
    has = {s: s in splits for s in SPLITS}
    n = {s: len(splits[s]) for s in splits}
    test, train, validation = counts["test"], counts.get("train", Counter()), counts.get("validation", Counter())
    out: dict[str, Any] = {}

    def put(name: str, value: Any, ok: bool, denominator: int) -> None:
        out[name] = value if ok else None
        out[name + "_pct"] = _pct(out[name], denominator) if ok else None

    put("test_rows_group_in_train", sum(c for g, c in test.items() if g in train), has["train"], n["test"])
    put("test_rows_group_in_validation", sum(c for g, c in test.items() if g in validation), has["validation"], n["test"])
    put("test_rows_group_in_train_or_validation", sum(c for g, c in test.items() if g in train or g in validation),
        has["train"] or has["validation"], n["test"])
    put("validation_rows_group_in_train", sum(c for g, c in validation.items() if g in train),
        has["train"] and has["validation"], n.get("validation", 0))
    put("test_groups_in_train", sum(1 for g in test if g in train), has["train"], len(test))
    put("test_groups_in_validation", sum(1 for g in test if g in validation), has["validation"], len(test))
    for split in SPLITS:
        present = has[split]
        c = counts.get(split, Counter())
        out[f"groups_{split}"] = len(c) if present else None
        out[f"rows_per_group_{split}"] = sum(c.values()) / len(c) if present and c else None
        out[f"largest_group_pct_{split}"] = _pct(max(c.values(), default=0), n[split]) if present else None
    out["repeats"] = any(v > 1 for c in counts.values() for v in c.values())
    out["numbering_reused"] = numbering_reused_reference(counts)
    return out


def numbering_reused_reference(counts: Mapping[str, Counter]) -> bool:
    """A numbering restarting per split: every value of every split is 1 to 18 ASCII digits (an
    integer, or a string of one), and two splits or more are each a numbering of their own: the
    smallest value 0 or 1, and the distinct values at least half of 0..largest."""
    present = [c for c in counts.values() if c]
    texts = [[str(v) for v in c] for c in present]
    if not all(re.fullmatch(r"[0-9]{1,18}", t, flags=re.ASCII) for ts in texts for t in ts):
        return False
    own = 0
    for ts in texts:
        numbers = [int(t) for t in ts]
        if min(numbers) in (0, 1) and len(set(numbers)) * 2 >= max(numbers) + 1:
            own += 1
    return own >= 2


def time_reference(splits: Mapping[str, Sequence[Mapping[str, Any]]], column: str) -> dict[str, Any]:
    """The figures of date column ``column`` (time-2026): values that are datetimes (None left out),
    per split the rows dated, the first and last date; the train (validation) rows dated after the
    earliest test date, with their ``_pct`` of the split's rows; and the days the train and test
    date ranges share (0 when disjoint; NR when either has no date)."""
    dated = {s: [r[column] for r in rows if r[column] is not None] for s, rows in splits.items()}
    start = min(dated["test"], default=None)
    out: dict[str, Any] = {}
    for split in SPLITS:
        d = dated.get(split)
        out[f"rows_dated_{split}"] = len(d) if d is not None else None
        out[f"first_date_{split}"] = min(d, default=None) if d is not None else None
        out[f"last_date_{split}"] = max(d, default=None) if d is not None else None
    for split in ("train", "validation"):
        if split not in splits:
            out[f"{split}_rows_after_test_start"] = out[f"{split}_rows_after_test_start_pct"] = None
            continue
        after = sum(1 for v in dated[split] if start is not None and v > start)
        out[f"{split}_rows_after_test_start"] = after
        out[f"{split}_rows_after_test_start_pct"] = _pct(after, len(splits[split]))
    if "train" in splits and dated["train"] and dated["test"]:
        shared = min(max(dated["train"]), max(dated["test"])) - max(min(dated["train"]), min(dated["test"]))
        out["train_test_overlap_days"] = max(0.0, shared.total_seconds() / 86400)
    else:
        out["train_test_overlap_days"] = None
    return out
