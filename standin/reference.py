"""A plain-Python reference implementation of the LLE method (docs/method.md).

Deliberately naive: Python lists, tuples and sets, no DuckDB, nothing shared with the engine in
``hubsurvey.survey.metrics``. Tests compare the engine with it, and the mini-hub generator uses it to record
the true counts of what it planted. Keys are tuples of the raw column values; lists become tuples so
that they are hashable, and ``None`` stays ``None`` (a NULL equals a NULL, as str(None) made it in
the survey, but never equals the string "None").
"""

from __future__ import annotations

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
