"""Hostile datasets: every case gives the reference's figures or a clear one-line refusal.

Each case builds its own tiny fixture with pyarrow in ``tmp_path`` and measures it the way the
survey does (a folder, the Hub path's ``config_from_files`` or in memory). The outcome is either
the figures of the plain-Python reference (``hubsurvey_standin.reference.lle_reference``) or a
SurveyError whose message is one line naming the dataset, the config and the cause. Never a wrong
figure, a hang or a traceback.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from hubsurvey.core.errors import SurveyError
from hubsurvey.core.figures import LLE_METHOD, figure_names
from hubsurvey.core.roles import features_from_arrow, infer_roles

FIGURE_COLUMNS = figure_names(LLE_METHOD)  # the figures lle_reference computes
from hubsurvey.survey.api import measure
from hubsurvey.survey.audit import audit
from hubsurvey.survey.measure import measure_config
from hubsurvey.survey.sources import FolderSource, config_from_files
from hubsurvey_standin.reference import lle_reference

DATASET = "hostile/ds"


# --- helpers -----------------------------------------------------------------------------------

def _write(root: Path, splits: dict[str, pa.Table | list[pa.Table]], config: str = "default") -> Path:
    """``root/<owner>__<name>/<config>/<split>/NNNN.parquet`` (one file per table given)."""
    folder = root / DATASET.replace("/", "__")
    for split, tables in splits.items():
        out = folder / config / split
        out.mkdir(parents=True, exist_ok=True)
        for i, table in enumerate(tables if isinstance(tables, list) else [tables]):
            pq.write_table(table, out / f"{i:04d}.parquet")
    return folder


def _folder_rows(folder: Path, config: str = "default") -> list[dict]:
    return measure_config(FolderSource(folder).load(config), n_configs=1, source="folder").rows


def _hub_rows(folder: Path, config: str = "default") -> list[dict]:
    """The Hub path after download: split name -> local Parquet files of the Parquet branch."""
    files = {p.name: [str(f) for f in sorted(p.glob("*.parquet"))] for p in (folder / config).iterdir()}
    data = config_from_files(DATASET, config, "0" * 40, files)
    return measure_config(data, n_configs=1, source="hub").rows


def _pylist(tables: pa.Table | list[pa.Table]) -> list[dict]:
    return [row for t in (tables if isinstance(tables, list) else [tables]) for row in t.to_pylist()]


def _check(rows: list[dict], splits: dict[str, Any], text: list[str] | None = None) -> None:
    """Every row's figures equal the reference's, for the text columns the engine used."""
    assert rows
    reference_splits = {s: _pylist(t) for s, t in splits.items()}
    for row in rows:
        assert text is None or row["text_columns"] == text
        expected = lle_reference(reference_splits, row["text_columns"], row["label_column"])
        for key in FIGURE_COLUMNS:
            e, r = row[key], expected[key]
            if key.endswith("test_biased") and e is not None and r is not None:
                assert e == pytest.approx(r, abs=1e-9), key
            else:
                assert e == r, key


def _assert_refusal(exc: SurveyError, *words: str) -> None:
    message = str(exc)
    assert "\n" not in message and "Traceback" not in message
    assert DATASET in message or "in-memory" in message
    for word in words:
        assert word in message, message


# --- columns whose names differ only by case ------------------------------------------------

CASE_TRAIN = pa.table({"Text": ["a", "a", "b", "c"], "text": ["x", "y", "z", "w"]})
CASE_TEST = pa.table({"Text": ["a", "a", "b", "c"], "text": ["x", "y", "z", "q"]})


@pytest.mark.slow
def test_case_differing_names_folder(tmp_path):
    folder = _write(tmp_path, {"train": CASE_TRAIN, "test": CASE_TEST})
    (row,) = _folder_rows(folder)
    assert row["text_columns"] == ["Text", "text"]
    assert (row["text_leaks_train_wrt_test"], row["text_duplication_train"]) == (3, 0)
    _check([row], {"train": CASE_TRAIN, "test": CASE_TEST})


@pytest.mark.slow
def test_case_differing_names_hub_path(tmp_path):
    folder = _write(tmp_path, {"train": CASE_TRAIN, "test": CASE_TEST})
    (row,) = _hub_rows(folder)
    assert (row["text_leaks_train_wrt_test"], row["text_duplication_train"]) == (3, 0)


@pytest.mark.slow
def test_case_differing_names_in_memory():
    (row,) = measure({"train": CASE_TRAIN, "test": CASE_TEST})
    assert (row["text_leaks_train_wrt_test"], row["text_duplication_train"]) == (3, 0)
    _check([row], {"train": CASE_TRAIN, "test": CASE_TEST})


@pytest.mark.slow
def test_case_differing_names_examples_use_the_right_columns():
    rows = measure({"train": CASE_TRAIN, "test": CASE_TEST}, examples=5)
    assert rows[0]["text_leaks_train_wrt_test"] == 3


@pytest.mark.slow
def test_empty_column_name_is_measured(tmp_path):
    train = pa.table({"": ["a", "b", "b"], "label": [0, 1, 1]})
    test = pa.table({"": ["a", "c"], "label": [1, 0]})
    folder = _write(tmp_path, {"train": train, "test": test})
    rows = _folder_rows(folder)
    _check(rows, {"train": train, "test": test}, text=[""])
    assert rows[0]["text_leaks_train_wrt_test"] == 1


# --- dictionary<string> and string_view are text --------------------------------------------

def _dictionary(values: list[str], dictionary: list[str]) -> pa.Array:
    return pa.DictionaryArray.from_arrays(pa.array([dictionary.index(v) for v in values], pa.int32()), pa.array(dictionary))


@pytest.mark.slow
def test_dictionary_strings_are_text_and_compared_by_value(tmp_path):
    # two files with different dictionaries: equal strings must still match
    train = pa.table({"text": _dictionary(["p", "q", "q"], ["p", "q"]), "label": [0, 1, 1]})
    test = pa.table({"text": _dictionary(["q", "p", "r"], ["r", "q", "p"]), "label": [1, 0, 0]})
    assert infer_roles(features_from_arrow(train.schema)).text_columns == ("text",)  # crawl: not not_text
    folder = _write(tmp_path, {"train": train, "test": test})
    rows = _folder_rows(folder)
    _check(rows, {"train": train, "test": test}, text=["text"])
    assert rows[0]["text_leaks_train_wrt_test"] == 2
    outcome = audit(str(folder))  # audit: exit 0, not 2
    assert not outcome.errors and outcome.rows


@pytest.mark.slow
def test_pandas_categorical_is_text(tmp_path):
    pd = pytest.importorskip("pandas")
    train = pa.Table.from_pandas(pd.DataFrame({"text": pd.Categorical(["a", "b", "b"])}), preserve_index=False)
    test = pa.Table.from_pandas(pd.DataFrame({"text": pd.Categorical(["b", "c"])}), preserve_index=False)
    rows = _folder_rows(_write(tmp_path, {"train": train, "test": test}))
    _check(rows, {"train": train, "test": test}, text=["text"])


@pytest.mark.slow
@pytest.mark.parametrize("string_type", [pa.string_view(), pa.large_string()], ids=str)
def test_string_view_and_large_string_are_text(tmp_path, string_type):
    train = pa.table({"text": pa.array(["a", "b", "b", None], string_type)})
    test = pa.table({"text": pa.array(["b", None, "c"], string_type)})
    assert infer_roles(features_from_arrow(train.schema)).text_columns == ("text",)
    _check(measure({"train": train, "test": test}), {"train": train, "test": test}, text=["text"])
    _check(_folder_rows(_write(tmp_path, {"train": train, "test": test})), {"train": train, "test": test}, text=["text"])


def _dictionary_width(values: list[str], width: pa.DataType) -> pa.Array:
    categories = sorted(set(values))
    return pa.DictionaryArray.from_arrays(pa.array([categories.index(v) for v in values], width), pa.array(categories))


@pytest.mark.slow
@pytest.mark.parametrize("path", ["folder", "hub"])
def test_shards_differing_in_string_layout_or_dictionary_width_are_measured(tmp_path, path):
    """pandas writes int8 codes for few categories and int16 for more; a writer may use large_string."""
    splits = {
        "train": [pa.table({"text": _dictionary_width(["a", "b", "b"], pa.int8())}),
                  pa.table({"text": pa.array(["c", "a"], pa.large_string())})],
        "test": [pa.table({"text": _dictionary_width(["b", "c"], pa.int16())}),
                 pa.table({"text": pa.array(["a", "d", "d"], pa.string())})],
    }
    folder = _write(tmp_path, splits)
    rows = _folder_rows(folder) if path == "folder" else _hub_rows(folder)
    _check(rows, splits, text=["text"])
    assert rows[0]["text_leaks_train_wrt_test"] == 3


# --- the adversarial pass: many small hostile datasets ----------------------------------------

def _pair(names: list[str], train_rows: list[tuple], test_rows: list[tuple]) -> dict[str, pa.Table]:
    def table(rows):
        return pa.table([pa.array([r[i] for r in rows], pa.string()) for i in range(len(names))], names=names)

    return {"train": table(train_rows), "test": table(test_rows)}


TRAIN2 = [("a", "x"), ("a", "x"), ("b", "y"), ("c", "z")]
TEST2 = [("a", "x"), ("b", "q"), ("c", "z"), ("c", "z")]


def _case_names(names: list[str]) -> Callable[[], dict]:
    return lambda: _pair(names, TRAIN2, TEST2)


def _many_columns() -> dict:
    def table(rows):
        cols = {f"num_{i}": pa.array([i] * len(rows), pa.int64()) for i in range(999)}
        cols["text"] = pa.array(rows, pa.string())
        return pa.table(cols)

    return {"train": table(["a", "b", "b"]), "test": table(["b", "c", "a"])}


def _list_with_nulls() -> dict:
    t = pa.list_(pa.string())
    return {
        "train": pa.table({"tokens": pa.array([["a", None], ["a", None], [None], None, []], t)}),
        "test": pa.table({"tokens": pa.array([["a", None], [None], None, [], ["a"]], t)}),
    }


def _all_null() -> dict:
    return {"train": pa.table({"text": pa.array([None, None], pa.string())}), "test": pa.table({"text": pa.array([None], pa.string())})}


def _struct_text() -> dict:
    t = pa.struct([("en", pa.string()), ("fr", pa.string())])
    rows_train = [{"en": "a", "fr": "b"}, {"en": "a", "fr": "b"}, {"en": None, "fr": None}, None]
    rows_test = [{"en": "a", "fr": "b"}, None, {"en": None, "fr": None}, {"en": "a", "fr": None}]
    return {"train": pa.table({"translation": pa.array(rows_train, t)}),
            "test": pa.table({"translation": pa.array(rows_test, t)})}


def _long_strings() -> dict:
    big = "x" * (1 << 20)
    return {"train": pa.table({"text": [big, big + "y", "a"]}), "test": pa.table({"text": [big, big + "z", big]})}


def _dup_non_role_column() -> dict:
    def table(texts):
        return pa.table([pa.array(texts), pa.array([1] * len(texts)), pa.array([2] * len(texts))], names=["text", "id", "id"])

    return {"train": table(["a", "b", "b"]), "test": table(["a", "c"])}


def _alias_lookalikes() -> dict:
    # names that look like the engine's own aliases, in a shuffled order
    names = ["t1", "c0", "t0", "h_text", "s"]
    rows = lambda texts: pa.table([pa.array([f"{n}:{v}" for v in texts]) for n in names], names=names)  # noqa: E731
    return {"train": rows(["a", "b", "b"]), "test": rows(["b", "a", "c"])}


def _unicode_normalisation() -> dict:
    return {"train": pa.table({"text": ["é", "e\u0301", "😀", "ß"]}), "test": pa.table({"text": ["e\u0301", "ss", "😀"]})}


def _float_labels_with_nan() -> dict:
    return {
        "train": pa.table({"text": ["a", "a", "b", "c"], "score": [math.nan, math.nan, 0.0, 1.5]}),
        "test": pa.table({"text": ["a", "b", "c"], "score": [math.nan, -0.0, 1.5]}),
    }


def _int_labels_with_nulls() -> dict:
    return {
        "train": pa.table({"text": ["a", "a", "b", "c"], "label": pa.array([None, None, 1, 2], pa.int64())}),
        "test": pa.table({"text": ["a", "b", "c"], "label": pa.array([None, 1, None], pa.int64())}),
    }


# (id, splits factory, text columns the engine must use) -- measured, figures equal the reference
MEASURED = [
    ("quotes", _case_names(['a"b', "it's"]), ['a"b', "it's"]),
    ("semicolon_injection", _case_names(["x; DROP TABLE rows_all; --", "y"]), ["x; DROP TABLE rows_all; --", "y"]),
    ("unicode_names", _case_names(["текст", "中文 😀"]), ["текст", "中文 😀"]),
    ("spaces_and_newline", _case_names([" text ", "a\nb"]), [" text ", "a\nb"]),
    ("sql_keywords", _case_names(["select", "from"]), ["select", "from"]),
    ("leading_digits", _case_names(["1text", "2"]), ["1text", "2"]),
    ("case_triple", _case_names(["TEXT", "Text"]), ["TEXT", "Text"]),
    ("alias_lookalikes", _alias_lookalikes, ["t1", "c0", "t0", "h_text", "s"]),
    ("thousand_columns", _many_columns, ["text"]),
    ("list_with_null_elements", _list_with_nulls, ["tokens"]),
    ("all_null_text", _all_null, ["text"]),
    ("struct_text", _struct_text, ["translation"]),
    ("one_megabyte_strings", _long_strings, ["text"]),
    ("duplicate_non_role_column", _dup_non_role_column, ["text"]),
    ("unicode_values_not_normalised", _unicode_normalisation, ["text"]),
    ("int_labels_with_nulls", _int_labels_with_nulls, ["text"]),
]


@pytest.mark.parametrize("factory,text", [pytest.param(f, t, id=i) for i, f, t in MEASURED])
@pytest.mark.parametrize("path", ["folder", "hub", "memory"])
@pytest.mark.slow
def test_hostile_dataset_is_measured_exactly(tmp_path, factory, text, path):
    splits = {k: v for k, v in factory().items() if v is not None}
    if path == "memory":
        rows = measure(splits, dataset_id=DATASET)
    else:
        folder = _write(tmp_path, splits)
        rows = _folder_rows(folder) if path == "folder" else _hub_rows(folder)
    _check(rows, splits, text=text)


@pytest.mark.slow
def test_float_label_nan_equals_nan_as_in_the_survey():
    """The survey keyed rows by str(), so NaN matched NaN ('nan' == 'nan'); -0.0 and 0.0 compare equal
    as numbers. The reference compares distinct NaN objects as unequal, so it is given str keys."""
    splits = _float_labels_with_nan()
    (row,) = measure(splits, dataset_id=DATASET, text_columns=["text"], label_columns=["score"])
    as_str = {s: [{"text": r["text"], "score": "nan" if r["score"] != r["score"] else float(r["score"]) + 0.0}
                  for r in t.to_pylist()] for s, t in splits.items()}
    expected = lle_reference(as_str, ["text"], "score")
    assert {k: row[k] for k in FIGURE_COLUMNS} == pytest.approx(expected)
    assert row["text_and_label_leaks_train_wrt_test"] == 3  # (a, NaN), (b, ±0.0), (c, 1.5)


# --- refused with one clear line --------------------------------------------------------------

def _refuse_duplicate_text_name(tmp_path) -> Exception:
    table = lambda texts: pa.table([pa.array(texts), pa.array(texts)], names=["text", "text"])  # noqa: E731
    folder = _write(tmp_path, {"train": table(["a"]), "test": table(["a", "b"])})
    with pytest.raises(SurveyError) as info:
        _folder_rows(folder)
    return info.value


def _refuse_duplicate_name_in_memory(tmp_path) -> Exception:
    table = lambda texts: pa.table([pa.array(texts), pa.array(texts)], names=["text", "text"])  # noqa: E731
    with pytest.raises(SurveyError) as info:
        measure({"train": table(["a"]), "test": table(["a", "b"])}, dataset_id=DATASET)
    return info.value


def _refuse_empty_test(tmp_path) -> Exception:
    folder = _write(tmp_path, {"train": pa.table({"text": ["a"]}), "test": pa.table({"text": pa.array([], pa.string())})})
    with pytest.raises(SurveyError) as info:
        _folder_rows(folder)
    return info.value


def _refuse_missing_shard_column(tmp_path) -> Exception:
    shards = [pa.table({"text": ["a"], "extra": ["e"]}), pa.table({"text": ["b"]})]
    folder = _write(tmp_path, {"train": pa.table({"text": ["a"], "extra": ["e"]}), "test": shards})
    with pytest.raises(SurveyError) as info:
        _folder_rows(folder)
    return info.value


def _refuse_metadata_naming_absent_column(tmp_path) -> Exception:
    import json

    meta = {b"huggingface": json.dumps({"info": {"features": {"TEXT": {"_type": "Value", "dtype": "string"}}}}).encode()}
    table = lambda texts: pa.table({"text": texts}).replace_schema_metadata(meta)  # noqa: E731
    folder = _write(tmp_path, {"train": table(["a"]), "test": table(["a", "b"])})
    with pytest.raises(SurveyError) as info:
        _folder_rows(folder)
    return info.value


def _refuse_null_type_only(tmp_path) -> Exception:
    folder = _write(tmp_path, {"train": pa.table({"text": pa.nulls(2)}), "test": pa.table({"text": pa.nulls(2)})})
    with pytest.raises(SurveyError) as info:
        _folder_rows(folder)
    return info.value


REFUSED = [
    ("duplicate_text_name_in_file", _refuse_duplicate_text_name, ("'text'", "[default]")),
    ("duplicate_text_name_in_memory", _refuse_duplicate_name_in_memory, ("'text'", "[default]")),
    ("test_split_with_zero_rows", _refuse_empty_test, ("zero rows",)),
    ("column_missing_in_one_shard", _refuse_missing_shard_column, ("schema differs",)),
    ("metadata_names_absent_column", _refuse_metadata_naming_absent_column, ("'TEXT'",)),
    ("null_typed_column_only", _refuse_null_type_only, ("unsupported",)),
]


@pytest.mark.slow
@pytest.mark.parametrize("make,words", [pytest.param(m, w, id=i) for i, m, w in REFUSED])
def test_hostile_dataset_is_refused_in_one_line(tmp_path, make, words):
    _assert_refusal(make(tmp_path), *words)
