"""The near-duplicate method (near-2026) as the engine computes it: shingles and Jaccard against
plain Python, planted cases, NR rules, sampling. Recall, precision and the invariants on every
shared config, against the exhaustive plain-Python reference, are in test_near_recall.py."""

from __future__ import annotations

import dataclasses

import near_numpy
import numpy as np
import pyarrow as pa
import pytest

from hubsurvey.survey import near
from hubsurvey.survey.api import measure
from hubsurvey.survey.metrics import Engine
from hubsurvey.survey.normalize import normalize_text

SENTENCE = "the committee will meet on thursday to discuss the new budget for the regional library"


def _shingles(text: str, n: int = 5) -> set[str]:
    """Plain Python: the definition (docs/method.md), for checking the numpy hashing."""
    return {text[i:i + n] for i in range(len(text) - n + 1)} if len(text) >= n else {text}


def _jaccard(a: str, b: str) -> float:
    sa, sb = _shingles(a), _shingles(b)
    return len(sa & sb) / len(sa | sb)


def _near(train, test, validation=None, *, train_labels=None, test_labels=None):
    tables = {"train": pa.table({"text": train, "label": train_labels or [0] * len(train)}),
              "test": pa.table({"text": test, "label": test_labels or [0] * len(test)})}
    if validation is not None:
        tables["validation"] = pa.table({"text": validation, "label": [0] * len(validation)})
    (row,) = measure(tables, text_columns=["text"], label_columns=["label"])
    return row


# --- shingles and Jaccard: the numpy hashing against plain Python sets ----------------------------

@pytest.mark.slow
@pytest.mark.parametrize("texts", [
    ["hello world", "hello world!", "", "ab", "abcde", "abcdef", "中文数据很好用", "hello world", "😀😀😀😀😀😀", "a\u0301bcdef"],
    [SENTENCE, SENTENCE.replace("thursday", "friday"), SENTENCE[::-1], SENTENCE.upper()],
])
def test_shingle_sets_and_jaccard_equal_plain_python(texts):
    hashes, text_of = near.shingle_hashes(texts, 5)
    for i, text in enumerate(texts):
        assert len(set(hashes[text_of == i].tolist())) == len(_shingles(text))
    pairs = np.array([(a, b) for a in range(len(texts)) for b in range(a + 1, len(texts))])
    assert near.jaccard(pairs, texts, 5).tolist() == pytest.approx([_jaccard(texts[a], texts[b]) for a, b in pairs])


def test_densify_fills_every_bin_and_keeps_identical_signatures_identical():
    """On the numpy reference, which the compiled pass equals bit for bit (test_near_compiled.py)."""
    empty = near._EMPTY
    sig = np.array([[5, empty, 7, empty], [empty, empty, empty, 9]], dtype=np.uint64)
    out = near_numpy.densify(sig)
    assert (out != empty).all()
    assert out[0, 0] == 5 and out[0, 2] == 7 and out[1, 3] == 9  # a filled bin keeps its own value
    assert set(out[0].tolist()) <= {5, 7} and set(out[1].tolist()) == {9}  # the others borrow a real one
    # identical sparse signatures stay identical (two copies of a short text still meet)
    assert (near_numpy.densify(np.array([sig[1], sig[1]]))[0] == near_numpy.densify(np.array([sig[1], sig[1]]))[1]).all()


def _agreement(a: set[str], b: set[str], bins: int = 128, band_rows: int = 4, seeds: range = range(40)):
    """Mean share of agreeing signature bins and of agreeing LSH bands of two shingle sets, over seeds
    (the numpy reference's signatures and bands, which the compiled pass's equal)."""
    texts = sorted(a | b)
    bins_agree, bands_agree = [], []
    for seed in seeds:
        hashes, _ = near.shingle_hashes(texts, 5, seed)  # 5-character texts: one shingle each, in order
        h = dict(zip(texts, hashes.tolist()))
        flat = np.array([h[t] for t in sorted(a)] + [h[t] for t in sorted(b)], dtype=np.uint64)
        owner = np.array([0] * len(a) + [1] * len(b))
        sig = near_numpy.densify(near_numpy.signatures(flat, owner, 2, bins))
        bins_agree.append((sig[0] == sig[1]).mean())
        bands = near_numpy.band_hashes(sig, band_rows)
        bands_agree.append((bands[0] == bands[1]).mean())
    return float(np.mean(bins_agree)), float(np.mean(bands_agree))


@pytest.mark.slow
@pytest.mark.parametrize("size", [12, 40, 400])  # sparse (most bins empty) to dense signatures
def test_densified_bins_agree_with_probability_jaccard_and_bands_with_its_power(size):
    """The property LSH rests on, for short and long texts alike: a bin agrees with probability J,
    a band of r bins with about J^r (rotation densification broke the second for short texts)."""
    shared = [f"s{i:04d}" for i in range(size // 2)]
    a = set(shared) | {f"a{i:04d}" for i in range(size - len(shared))}
    b = set(shared) | {f"b{i:04d}" for i in range(size - len(shared))}
    j = len(a & b) / len(a | b)  # 1/3
    bins_agree, bands_agree = _agreement(a, b)
    assert bins_agree == pytest.approx(j, abs=0.05)
    assert bands_agree < 3 * j**4 + 0.01  # rotation gave ~J for a 12-shingle text: whole bands copied one bin


# --- planted cases ------------------------------------------------------------------------------

@pytest.mark.slow
def test_one_word_edit_punctuation_and_case_are_near_but_a_new_sentence_is_not():
    edit = SENTENCE.replace("thursday", "friday")
    assert _jaccard(normalize_text(edit), SENTENCE) >= 0.8
    row = _near([SENTENCE, "an unrelated line about cooking pasta at home tonight"],
                [edit, SENTENCE.capitalize() + ".", "the weather is cold and grey in the north of england"])
    assert row["test_rows_near_train"] == 2 and row["test_rows_near_train_pct"] == pytest.approx(200 / 3)
    assert row["normalized_test_rows_in_train"] == 0  # the exact method sees none of them
    assert row["test_rows_near_repeated"] == 1  # the second near-copy repeats the first
    assert row["test_rows_near_contaminated"] == 2 and row["near_contaminated_test_pct"] == pytest.approx(200 / 3)


@pytest.mark.slow
def test_short_texts_below_n_match_only_whole():
    row = _near(["ok", "yes"], ["ok", "ok!", "no"])
    assert row["test_rows_near_train"] == 1  # "ok" is train's "ok"; "ok!" shares no shingle with it


@pytest.mark.slow
def test_a_flipped_label_is_a_near_conflict():
    edit = SENTENCE.replace("budget", "budgets")
    row = _near([SENTENCE], [edit, SENTENCE + " too"], train_labels=[1], test_labels=[0, 1])
    assert row["test_rows_near_train"] == 2
    assert row["test_rows_near_train_conflicting_label"] == 1  # the first: all its near train rows say 1


@pytest.mark.slow
def test_near_repeated_counts_positions_and_contaminated_counts_each_row_once():
    edit = SENTENCE.replace("library", "libraries")
    # test: [edit, SENTENCE (in train too), edit again]: rows 1 and 2 repeat row 0; row 1 is in train
    row = _near([SENTENCE], [edit, SENTENCE, edit])
    assert row["test_rows_near_train"] == 3
    assert row["test_rows_near_repeated"] == 2
    assert row["test_rows_near_contaminated"] == 3


@pytest.mark.slow
def test_validation_figures_and_nr_without_splits():
    edit = SENTENCE.replace("meet", "gather")
    row = _near([SENTENCE], ["something else entirely, nothing to see"], validation=[edit, "x"])
    assert row["validation_rows_near_train"] == 1 and row["validation_rows_near_train_pct"] == 50.0
    assert row["test_rows_near_validation"] == 0
    no_train = measure({"test": pa.table({"text": [SENTENCE, SENTENCE]})}, text_columns=["text"])[0]
    assert no_train["test_rows_near_train"] is None and no_train["test_rows_near_repeated"] == 1
    assert no_train["test_rows_near_train_conflicting_label"] is None  # no label column


@pytest.mark.slow
def test_sampling_over_the_budget_is_recorded(monkeypatch):
    monkeypatch.setattr(Engine, "near_params", dataclasses.replace(Engine.near_params, max_texts=3))
    train = [f"train sentence number {i} about things" for i in range(20)]
    tables = {"train": pa.table({"text": train}), "test": pa.table({"text": [train[0] + "!", "x"]})}
    engine_rows = measure(tables, text_columns=["text"])
    info = __import__("json").loads(engine_rows[0]["near"])
    assert info["sampled"] is True and info["texts"] == 22 and info["texts_compared"] < 22


# --- the texts the pass is given: the normalized profile of each distinct row, whatever the layout --

_COLUMN_KINDS = {
    "fixed_size_list": lambda values: pa.array(values, pa.list_(pa.string(), 2)),
    "list": lambda values: pa.array(values, pa.list_(pa.string())),
    "large_list": lambda values: pa.array(values, pa.large_list(pa.string())),
}


@pytest.mark.slow
@pytest.mark.parametrize(("kind", "stored"), [(kind, stored) for kind in [*_COLUMN_KINDS, "string_view", "dictionary", "large_string"]
                                               for stored in ("table", "files")
                                               if (kind, stored) != ("string_view", "files")])  # Parquet stores it as a string
def test_the_pass_gets_each_rows_normalized_text_from_files_and_tables(tmp_path, monkeypatch, kind, stored):
    """The near stage reads its texts from the splits themselves (pyarrow, not DuckDB): a fixed-size
    list, as pyarrow reads one from Parquet, a dictionary or a view must still reach the pass folded,
    exactly as ``normalize_text`` of each value (joined as ``row_texts`` joins them)."""
    import pyarrow.parquet as pq

    from hubsurvey.core.figures import NEAR_METHOD
    from hubsurvey.core.roles import RoleOverrides
    from hubsurvey.survey.measure import measure_config
    from hubsurvey.survey.sources import FolderSource

    rng = __import__("random").Random(5)
    words = ["The Sniper", "the  TERRORIST", "Ünïcödé Ärger", "naruto", "Code Geass", "ﬁne"]
    rows = {split: [(f"{rng.choice(words)} {i % 7} {rng.choice(words).upper()}", [rng.choice(words), rng.choice(words)])
                    for i in range(n)] for split, n in (("train", 40), ("test", 15))}

    def table(pairs):
        text = [t for t, _ in pairs]
        lists = [v for _, v in pairs]
        if kind in _COLUMN_KINDS:
            return pa.table({"sentence": text, "candidates": _COLUMN_KINDS[kind](lists), "label": [0] * len(pairs)})
        column = {"string_view": pa.array(text, pa.string_view()), "dictionary": pa.array(text).dictionary_encode(),
                  "large_string": pa.array(text, pa.large_string())}[kind]
        return pa.table({"sentence": column, "label": [0] * len(pairs)})
    tables = {split: table(pairs) for split, pairs in rows.items()}
    text_columns = ["sentence", "candidates"] if kind in _COLUMN_KINDS else ["sentence"]
    given: list[str] = []
    original = near.sketch_batches

    def capture(batches, capacity, params, **kwargs):
        def tap():
            for batch in batches:
                given.extend(batch.to_pylist() if hasattr(batch, "to_pylist") else list(batch))
                yield batch
        return original(tap(), capacity, params, **kwargs)

    near.warm_up()
    near._warmed()  # its own few texts are not the data's
    monkeypatch.setattr(near, "sketch_batches", capture)
    if stored == "table":
        measure(tables, text_columns=text_columns, label_columns=["label"])
    else:
        for split, t in tables.items():
            (tmp_path / "default" / split).mkdir(parents=True)
            pq.write_table(t, tmp_path / "default" / split / "0000.parquet")
        data = FolderSource(tmp_path).load("default")
        overrides = RoleOverrides({data.dataset_id: {"*": {"text": text_columns, "labels": ["label"]}}})
        measure_config(data, n_configs=1, source="folder", methods=[NEAR_METHOD], overrides=overrides)
    expected = set()
    for pairs in rows.values():
        for text, values in pairs:
            parts = [normalize_text(text)] + ([" ".join(normalize_text(v) for v in values)] if kind in _COLUMN_KINDS else [])
            expected.add(" ".join(p for p in parts if p))
    assert set(given) == expected and len(given) == len(expected)


@pytest.mark.slow
def test_the_near_method_alone_gives_the_figures_it_gives_beside_the_others(shared_datasets, monkeypatch):
    """Measured alone, the near method skips the raw profile's GROUP BYs (LLE's figures, which it
    would drop) and gives the same near figures, per label column, as a measurement of every method.
    It groups the rows by their normalized key once (``near_texts``) and checks the hash there."""
    import json

    from hubsurvey.core.figures import NEAR_METHOD, figure_columns
    from hubsurvey.survey.measure import measure_config
    from hubsurvey.survey.sources import FolderSource

    data = FolderSource(shared_datasets / "dair-ai__emotion").load("split")
    everything = measure_config(data, n_configs=1, source="folder", examples=0).rows
    grouped: list[str] = []
    keyed: list[str] = []
    original = Engine._label_figures
    original_key = Engine._key

    def spy(self, profile, *args, **kwargs):
        grouped.append(profile.name)
        return original(self, profile, *args, **kwargs)

    def key_spy(self, hash_column, values, table):
        keyed.append(table)
        return original_key(self, hash_column, values, table)

    monkeypatch.setattr(Engine, "_label_figures", spy)
    monkeypatch.setattr(Engine, "_key", key_spy)
    alone = measure_config(data, n_configs=1, source="folder", methods=[NEAR_METHOD], examples=0).rows
    assert grouped == []
    assert keyed == []  # no GROUP BY of its own for the hash check
    assert json.loads(alone[0]["near"])["status"] == "measured"
    near_columns = [c.name for c in figure_columns(NEAR_METHOD)]
    assert len(alone) == len(everything) == 1 and near_columns
    assert {n: alone[0][n] for n in near_columns} == {n: everything[0][n] for n in near_columns}
    assert everything[0]["test_rows_near_train"] > 0  # emotion's test split has near train rows
    assert alone[0].get("text_leaks_train_wrt_test") is None


@pytest.mark.slow
def test_the_near_method_alone_gives_nr_when_the_normalized_hash_collides(shared_datasets, monkeypatch):
    """The near method measured alone checks the normalized hash on its own keys: a hash that
    collides gives the NR status and no near figure."""
    import json

    from hubsurvey.core.figures import NEAR_METHOD, figure_columns
    from hubsurvey.survey.measure import measure_config
    from hubsurvey.survey.sources import FolderSource

    data = FolderSource(shared_datasets / "dair-ai__emotion").load("split")
    near_columns = [c.name for c in figure_columns(NEAR_METHOD)]
    monkeypatch.setattr(Engine, "hash_sql", "(hash({}) % 4)")  # 16k texts on 4 hash values
    weak = measure_config(data, n_configs=1, source="folder", methods=[NEAR_METHOD], examples=0).rows
    assert json.loads(weak[0]["near"])["status"] == "NR: the normalized text hash collides"
    assert all(weak[0][n] is None for n in near_columns)
