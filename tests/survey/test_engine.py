"""The engine against the published LLE row and a plain-Python reference on real and random data."""

from __future__ import annotations

import string

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import shared_index
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hubsurvey.core.figures import EXACT_METHOD, LLE_METHOD, figure_names
from hubsurvey.core.roles import resolve_roles
from hubsurvey.survey.api import measure
from hubsurvey.survey.measure import measure_config
from hubsurvey.survey.sources import FolderSource, check_config
from hubsurvey_standin.reference import exact_reference, lle_reference

# LLE's figures (lle_reference) and the exact ones (exact_reference); the near-duplicate figures
# depend on MinHash-LSH's recall and are checked against their own reference in test_near.py
FIGURE_COLUMNS = figure_names(LLE_METHOD) + figure_names(EXACT_METHOD)
MEASURED = [LLE_METHOD, EXACT_METHOD]  # the near method is not compared here: no need to run it


def _figures(row: dict) -> dict:
    return {c: row[c] for c in FIGURE_COLUMNS}


def _reference_rows(data, text_columns, label_column) -> dict:
    splits = {}
    for name, split in data.splits.items():
        tables = [pq.read_table(f) for f in split.files] if split.files else [split.table]
        splits[name] = [row for t in tables for row in t.to_pylist()]
    return reference(splits, text_columns, label_column)


def reference(splits, text_columns, label_column) -> dict:
    """Every figure, from the plain-Python references (no code shared with the engine)."""
    out = dict(lle_reference(splits, text_columns, label_column))
    for profile in ("raw", "normalized"):
        out.update(exact_reference(splits, text_columns, label_column, profile))
    return out


def _assert_same(engine: dict, reference: dict) -> None:
    for key in FIGURE_COLUMNS:
        e, r = engine[key], reference[key]
        if key.endswith(("test_biased", "_pct")) and e is not None and r is not None:
            assert e == pytest.approx(r, abs=1e-9), key
        else:
            assert e == r, key


@pytest.mark.slow
def test_conll2003_ner_tags_reproduces_published_row(shared_datasets):
    source = FolderSource(shared_datasets / "eriktks__conll2003")
    result = measure_config(source.load("conll2003"), n_configs=1, source="folder")
    row = next(r for r in result.rows if r["label_column"] == "ner_tags")
    assert row["dataset_name"] == "conll2003(ner_tags)"
    text = [row[f"text_{f}"] for f in ("leaks_train_wrt_test", "leaks_validation_wrt_test", "duplication_train", "duplication_validation", "duplication_test")]
    label = [row[f"text_and_label_{f}"] for f in ("leaks_train_wrt_test", "leaks_validation_wrt_test", "duplication_train", "duplication_validation", "duplication_test")]
    assert text == [78, 25, 1350, 180, 269]
    assert label == [73, 23, 1348, 179, 266]
    assert round(row["text_test_biased"], 3) == 10.049
    assert round(row["text_and_label_test_biased"], 3) == 9.818
    assert row["difference_annotation"] == 7.0


CONFIGS = [(e["id"], c) for e in shared_index() for c in e["configs"]]
# README's command checks, on real data, the smallest config of the five datasets whose smallest config
# is smallest (five datasets, so five shapes of data: a `sample` of the sweep); CI checks every config.
_SMALLEST = sorted(min((sum(splits.values()), e["id"], c) for c, splits in e["configs"].items()) for e in shared_index())
SAMPLE_CONFIGS = {(d, c) for _, d, c in _SMALLEST[:5]}


@pytest.mark.parametrize("dataset_id,config", [
    pytest.param(d, c, marks=[pytest.mark.slow, pytest.mark.sample] if (d, c) in SAMPLE_CONFIGS else pytest.mark.slow)
    for d, c in CONFIGS
] or [pytest.param(None, None, marks=pytest.mark.skip("no shared datasets"))])
def test_every_shared_config_equals_reference(shared_datasets, dataset_id, config):
    source = FolderSource(shared_datasets / dataset_id.replace("/", "__"))
    data = check_config(source.load(config))
    roles = resolve_roles(data.features, dataset_id, config)
    result = measure_config(data, n_configs=len(source.configs()), source="folder", methods=MEASURED)
    assert len(result.rows) == max(1, len(roles.label_columns))
    for row in result.rows:
        assert row["text_columns"] == list(roles.text_columns)
        _assert_same(row, _reference_rows(data, roles.text_columns, row["label_column"]))


# --- property-based: random small splits with planted duplicates, NULLs, unicode, lists ---------

ALPHABET = string.ascii_letters[:4] + " éß中😀\u0301"  # combining accent: NFC variants stay distinct
texts = st.one_of(st.none(), st.text(alphabet=ALPHABET, max_size=4))
token_lists = st.one_of(st.none(), st.lists(st.one_of(st.none(), st.text(alphabet=ALPHABET, max_size=3)), max_size=3))


@st.composite
def split_tables(draw):
    n_text = draw(st.integers(1, 2))
    use_lists = draw(st.booleans())
    has_validation = draw(st.booleans())
    has_train = draw(st.booleans()) or not has_validation
    pool_size = draw(st.integers(1, 6))  # a small pool forces duplicates and leaks
    pool = [
        {
            **{f"t{i}": draw(token_lists if (use_lists and i == 0) else texts) for i in range(n_text)},
            "label": draw(st.one_of(st.none(), st.integers(0, 2))),
            "tags": draw(st.lists(st.integers(0, 2), max_size=3)),
        }
        for _ in range(pool_size)
    ]
    names = ["test"] + (["train"] if has_train else []) + (["validation"] if has_validation else [])
    splits = {}
    for name in names:
        size = draw(st.integers(1 if name == "test" else 0, 12))
        splits[name] = [dict(draw(st.sampled_from(pool))) for _ in range(size)]
    return splits, [f"t{i}" for i in range(n_text)], use_lists


def _arrow(rows, text_columns, use_lists):
    fields = [pa.field(c, pa.list_(pa.string()) if (use_lists and c == "t0") else pa.string()) for c in text_columns]
    fields += [pa.field("label", pa.int64()), pa.field("tags", pa.list_(pa.int64()))]
    schema = pa.schema(fields)
    return pa.Table.from_pylist(rows, schema=schema)


@pytest.mark.slow
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(split_tables())
def test_engine_equals_reference_on_random_splits(case):
    splits, text_columns, use_lists = case
    tables = {name: _arrow(rows, text_columns, use_lists) for name, rows in splits.items()}
    rows = measure(tables, text_columns=text_columns, label_columns=["label", "tags"])
    assert [r["label_column"] for r in rows] == ["label", "tags"]
    for row in rows:
        _assert_same(row, reference(splits, text_columns, row["label_column"]))


@pytest.mark.slow
def test_null_texts_are_duplicates_of_each_other_but_not_of_the_string_none():
    tables = {
        "train": pa.table({"text": [None, "None"]}),
        "test": pa.table({"text": [None, None, "x"]}),
    }
    row = measure(tables)[0]
    assert row["text_leaks_train_wrt_test"] == 1  # the NULL, not "None"
    assert row["text_duplication_test"] == 1


@pytest.mark.slow
def test_no_label_column_gives_text_figures_and_nr_label_figures():
    tables = {"train": pa.table({"text": ["a", "b"]}), "test": pa.table({"text": ["a", "a"]})}
    (row,) = measure(tables)
    assert row["label_column"] is None
    assert row["text_leaks_train_wrt_test"] == 1 and row["text_duplication_test"] == 1
    assert row["text_test_biased"] == 100.0
    assert all(row[c] is None for c in FIGURE_COLUMNS if c.startswith("text_and_label"))
    assert row["difference_annotation"] is None


@pytest.mark.slow
def test_datasetdict_api_matches_arrow_api():
    import datasets

    features = datasets.Features({"text": datasets.Value("string"), "label": datasets.ClassLabel(names=["a", "b"])})
    dd = datasets.DatasetDict(
        {
            "train": datasets.Dataset.from_dict({"text": ["x", "y", "y"], "label": [0, 1, 1]}, features=features),
            "dev": datasets.Dataset.from_dict({"text": ["x"], "label": [1]}, features=features),
            "test": datasets.Dataset.from_dict({"text": ["x", "z", "q"], "label": [1, 0, 0]}, features=features).select([0, 1]),
        }
    )
    (row,) = measure(dd)
    assert row["label_column"] == "label" and row["validation_split"] == "dev"
    assert row["rows_test"] == 2
    expected = reference(
        {"train": dd["train"].to_list(), "validation": dd["dev"].to_list(), "test": dd["test"].to_list()}, ["text"], "label"
    )
    _assert_same(row, expected)
    assert row["difference_annotation"] == 1.0  # x leaks from train with another label, from dev with the same


@pytest.mark.parametrize("dataset, config", [("eriktks__conll2003", "conll2003"), ("dair-ai__emotion", "split")])
@pytest.mark.slow
def test_real_hash_collisions_fall_back_to_exact_values(shared_datasets, monkeypatch, dataset, config):
    """A weak hash (4 values) collides for real; the engine must detect it and group by the values."""
    from hubsurvey.survey.metrics import Engine

    data = check_config(FolderSource(shared_datasets / dataset).load(config))
    keys_used = []
    original = Engine._key

    def spy(self, hash_column, value_columns, table):
        keys_used.append(original(self, hash_column, value_columns, table))
        return keys_used[-1]

    monkeypatch.setattr(Engine, "_key", spy)
    monkeypatch.setattr(Engine, "hash_sql", "(hash({}) % 4)")
    rows = measure_config(data, n_configs=1, source="folder", methods=MEASURED).rows
    assert keys_used and all(not k[0].startswith("h_") for k in keys_used)  # every key fell back to values
    for row in rows:
        _assert_same(row, _reference_rows(data, row["text_columns"], row["label_column"]))
    # With the real hash the check passes on the same data, and the figures are the same.
    monkeypatch.setattr(Engine, "hash_sql", "hash({})")
    keys_used.clear()
    assert [_figures(r) for r in measure_config(data, n_configs=1, source="folder", methods=MEASURED).rows] == [_figures(r) for r in rows]
    assert all(k[0].startswith("h_") for k in keys_used)
