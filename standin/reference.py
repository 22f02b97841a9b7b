"""A plain-Python reference implementation of the LLE method (docs/method.md).

Deliberately naive: Python lists, tuples and sets, no DuckDB, nothing shared with the engine in
``hubsurvey.survey.metrics``. Tests compare the engine with it, and the mini-hub generator uses it to record
the true counts of what it planted. Keys are tuples of the raw column values; lists become tuples so
that they are hashable, and ``None`` stays ``None`` (a NULL equals a NULL, as str(None) made it in
the survey, but never equals the string "None").

``exact_reference`` does the same for the "exact" figures of issue 11 (test rows contaminated,
the ``raw`` and ``normalized`` key profiles, label conflicts), defined in its docstring.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Mapping, Sequence
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


# --- issue 11: the "exact" figures (row-level contamination, normalized keys, label conflicts) -----

PROFILES = ("raw", "normalized")


def normalize_value(value: Any) -> Any:
    """The ``normalized`` key profile of one column value.

    A string is NFKC-normalized, then case-folded, then every run of whitespace (as ``str.split()``
    sees it) becomes one space and the ends are stripped. A list or tuple is normalized element by
    element, recursively (a list stays a list, a tuple a tuple). ``None`` stays ``None``, so a NULL
    never equals the string "None" nor "none". Any other value (int, float, bool, dict, ...) is
    returned unchanged, a dict's values included: only text is normalized.
    """
    if isinstance(value, str):
        return " ".join(unicodedata.normalize("NFKC", value).casefold().split())
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
    """Return the exact figures of issue 11 for one (config, label column) and one key profile.

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
