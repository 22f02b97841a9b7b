"""The figures of each text column alone (exact-2026 per column) against a plain-Python reference.

The engine's ``per_column`` figures are compared with ``per_column_reference`` (standin/reference.py,
no code shared with the engine) on planted QA and NLI data, on every shared config with two text
columns or more, and on random data (Hypothesis). The reference itself is checked on hand-counted cases.
"""

from __future__ import annotations

import pyarrow as pa
import pytest
from conftest import shared_index
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_exact_reference import _load_rows

from hubsurvey.core.figures import EXACT_METHOD, LLE_METHOD, per_column_columns
from hubsurvey.core.roles import resolve_roles
from hubsurvey.survey.api import measure
from hubsurvey.survey.measure import measure_config
from hubsurvey.survey.sources import FolderSource, check_config
from hubsurvey_standin.reference import PROFILES, per_column_reference

NAMES = [c.name for c in per_column_columns()]
MEASURED = [LLE_METHOD, EXACT_METHOD]


def _reference(splits, text_columns, label_column) -> dict:
    """{column: {profile: figures}} from the reference, named as the engine names them."""
    return {column: {profile: {k.removeprefix(f"{profile}_"): v for k, v in
                               per_column_reference(splits, text_columns, column, label_column, profile).items()}
                     for profile in PROFILES}
            for column in text_columns}


def _assert_same(engine: dict, reference: dict) -> None:
    assert set(engine) == set(reference)
    for column, by_profile in reference.items():
        assert set(engine[column]) == set(PROFILES)
        for profile, figures in by_profile.items():
            found = engine[column][profile]
            assert set(found) == set(NAMES), (column, profile)
            for name in NAMES:
                e, r = found[name], figures[name]
                if name.endswith("_pct") and e is not None and r is not None:
                    assert e == pytest.approx(r, abs=1e-9), (column, profile, name)
                else:
                    assert e == r, (column, profile, name)


def _table(rows: list[dict]) -> pa.Table:
    return pa.Table.from_pylist(rows) if rows else pa.table({})


# --- planted QA and NLI data, counted by hand -------------------------------------------------------

PASSAGES = ["The Nile flows north.", "Paris is in France.", "Bees make honey."]


def _qa_splits() -> dict[str, list[dict]]:
    """Questions split at random while they share passages: the passage leaks, the row does not."""
    train = [{"context": PASSAGES[0], "question": "Which way does the Nile flow?", "answer": "north"},
             {"context": PASSAGES[1], "question": "Where is Paris?", "answer": "France"},
             {"context": "", "question": "Empty passage?", "answer": "yes"}]
    test = [{"context": PASSAGES[0], "question": "What flows north?", "answer": "the Nile"},        # passage in train
            {"context": PASSAGES[1].upper(), "question": "Paris is in which country?", "answer": "France"},  # normalized only
            {"context": PASSAGES[1], "question": "Where is Paris?", "answer": "France"},             # the whole row in train
            {"context": PASSAGES[2], "question": "Who makes honey?", "answer": "bees"},              # nothing in train
            {"context": "", "question": "Another empty passage?", "answer": "no"},                   # empty: never matched
            {"context": None, "question": "No passage?", "answer": "no"}]                            # NULL: never matched
    return {"train": train, "test": test}


@pytest.mark.slow
def test_qa_passages_shared_across_splits_are_counted_per_column():
    splits = _qa_splits()
    rows = measure({s: _table(r) for s, r in splits.items()}, text_columns=["context", "question"],
                   label_columns=["answer"])
    per_column = rows[0]["per_column"]
    _assert_same(per_column, _reference(splits, ["context", "question"], "answer"))
    context = per_column["context"]
    assert context["raw"]["test_rows_in_train"] == 2  # rows 0 and 2 (the empty and NULL passages never match)
    assert context["raw"]["test_rows_column_in_train_only"] == 1  # row 0: row 2's whole text is in train
    assert context["normalized"]["test_rows_column_in_train_only"] == 2  # and the upper-cased passage
    assert context["raw"]["test_rows_repeated"] == 0  # the empty and the NULL passage are not repeats
    assert context["normalized"]["test_rows_column_in_train_only_pct"] == pytest.approx(2 / 6 * 100)
    assert per_column["question"]["raw"]["test_rows_column_in_train_only"] == 0  # no question shared alone
    # The whole text key's figures are unchanged: the passage is in train, the row is not.
    assert rows[0]["raw_test_rows_in_train"] == 1 and rows[0]["normalized_test_rows_in_train"] == 1


@pytest.mark.slow
def test_nli_premises_shared_across_splits_with_labels():
    premise = "A man plays a guitar on stage."
    train = [{"premise": premise, "hypothesis": "A man performs music.", "label": 0},
             {"premise": premise, "hypothesis": "A woman sleeps.", "label": 2}]
    test = [{"premise": premise, "hypothesis": "Someone is outdoors.", "label": 1},
            {"premise": premise, "hypothesis": "A man performs music.", "label": 1},  # the pair in train, another label
            {"premise": "A dog runs.", "hypothesis": "An animal moves.", "label": 0}]
    splits = {"train": train, "test": test}
    rows = measure({s: _table(r) for s, r in splits.items()}, text_columns=["premise", "hypothesis"],
                   label_columns=["label"])
    per_column = rows[0]["per_column"]
    _assert_same(per_column, _reference(splits, ["premise", "hypothesis"], "label"))
    p = per_column["premise"]["raw"]
    assert p["test_rows_in_train"] == 2 and p["test_rows_column_in_train_only"] == 1
    assert p["test_rows_in_train_same_label"] == 0 and p["test_rows_in_train_conflicting_label"] == 2
    assert p["conflicting_texts_train"] == 1 and p["conflicting_texts_test"] == 0  # labels 0, 2 in train; 1, 1 in test
    assert per_column["hypothesis"]["raw"]["test_rows_column_in_train_only"] == 0


@pytest.mark.slow
def test_one_text_column_has_no_per_column_figures():
    rows = measure({"train": _table([{"text": "a"}]), "test": _table([{"text": "a"}])}, text_columns=["text"])
    assert "per_column" not in rows[0]


@pytest.mark.slow
def test_without_train_the_train_figures_are_nr():
    splits = {"test": [{"a": "x", "b": "y"}, {"a": "x", "b": "z"}]}
    rows = measure({"test": _table(splits["test"])}, text_columns=["a", "b"])
    per_column = rows[0]["per_column"]
    _assert_same(per_column, _reference(splits, ["a", "b"], None))
    assert per_column["a"]["raw"]["test_rows_column_in_train_only"] is None
    assert per_column["a"]["raw"]["test_rows_repeated"] == 1


# --- real data: every shared config with two text columns or more ----------------------------------


#: The shared configs with two text columns or more (the last test checks that this is all of them).
MULTI = [
    ("openai/gsm8k", "main"),
    *(("PierreColombo/miam", c) for c in ("dihana", "ilisten", "loria", "maptask", "vm2")),
    *(("eusip/silicone", c) for c in ("iemocap", "maptask", "meld_e", "meld_s", "oasis", "sem")),
    ("google/code_x_glue_cc_code_to_code_trans", "default"),
    ("iabufarha/ar_sarcasm", "default"),
    *(("universal-dependencies/universal_dependencies", c) for c in ("cop_scriptorium", "cs_cltt")),
    ("community-datasets/definite_pronoun_resolution", "plain_text"),
] if shared_index() else []
#: README's command's `sample` of the sweep (1,886 rows, three text columns); CI takes every config
SAMPLE = {("community-datasets/definite_pronoun_resolution", "plain_text")}


def _shared_params():
    if not MULTI:
        return [pytest.param(None, marks=pytest.mark.skip("no shared datasets"))]
    return [pytest.param(case, id="/".join(case), marks=[pytest.mark.slow, pytest.mark.sample] if case in SAMPLE else pytest.mark.slow) for case in MULTI]


@pytest.mark.parametrize("case", _shared_params())
def test_every_multi_column_shared_config_equals_reference(shared_datasets, case):
    """The slow tier runs all 17; miam/maptask (35,938 rows) is the largest."""
    dataset_id, config = case
    source = FolderSource(shared_datasets / dataset_id.replace("/", "__"))
    data = check_config(source.load(config))
    text_columns = list(resolve_roles(data.features, dataset_id, config).text_columns)
    splits = _load_rows(data)
    for row in measure_config(data, n_configs=len(source.configs()), source="folder", methods=MEASURED).rows:
        _assert_same(row["per_column"], _reference(splits, text_columns, row["label_column"]))


@pytest.mark.slow
def test_multi_lists_every_shared_config_with_several_text_columns(shared_datasets):
    found = []
    for entry in shared_index():
        source = FolderSource(shared_datasets / entry["id"].replace("/", "__"))
        for config in entry["configs"]:
            data = check_config(source.load(config))
            if len(resolve_roles(data.features, entry["id"], config).text_columns) > 1:
                found.append((entry["id"], config))
    assert sorted(found) == sorted(MULTI)


# --- random data -----------------------------------------------------------------------------------

VALUES = [None, "", " ", "a", "A", " a", "b", "\uff21"]


@st.composite
def random_splits(draw):
    """Small splits of two or three text columns drawn from a few values (empties, NULLs, case and
    width variants), so that columns collide often while whole rows do not; a label column or none."""
    n_text = draw(st.integers(2, 3))
    lists = draw(st.booleans())
    value = st.sampled_from(VALUES)
    first = st.one_of(st.none(), st.lists(value, max_size=2)) if lists else value
    row = st.fixed_dictionaries({"t0": first, **{f"t{i}": value for i in range(1, n_text)},
                                 "label": st.sampled_from([None, 0, 1])})
    splits = {"test": draw(st.lists(row, min_size=1, max_size=8))}
    for name in ("train", "validation"):
        if draw(st.booleans()):
            splits[name] = draw(st.lists(row, min_size=1, max_size=8))
    return splits, [f"t{i}" for i in range(n_text)], lists, draw(st.booleans())


@pytest.mark.slow  # 0.2-0.4 s an example: each is a whole measurement
@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(random_splits())
def test_random_splits_equal_reference(case):
    splits, text_columns, lists, labelled = case
    schema = pa.schema([("t0", pa.list_(pa.string()) if lists else pa.string()),
                        *((c, pa.string()) for c in text_columns[1:]), ("label", pa.int64())])
    tables = {s: pa.Table.from_pylist(rows, schema=schema) for s, rows in splits.items()}
    rows = measure(tables, text_columns=text_columns, label_columns=["label"] if labelled else [])
    _assert_same(rows[0]["per_column"], _reference(splits, text_columns, "label" if labelled else None))


# --- stored: column_measurements, written with the measurement rows --------------------------------


@pytest.mark.slow
def test_audit_stores_one_row_per_column_and_profile_with_provenance(tmp_path, shared_datasets):
    from hubsurvey import __version__
    from hubsurvey.core.store import Store
    from hubsurvey.survey.audit import audit

    db = tmp_path / "results.duckdb"
    target = shared_datasets / "community-datasets__definite_pronoun_resolution"
    outcome = audit(str(target), near=False, examples=0, db=db)
    (row,) = outcome.rows
    with Store(db, read_only=True) as store:
        stored = store.records("SELECT * FROM column_measurements ORDER BY text_column, profile")
        again = store.records("SELECT count(*) AS n FROM measurements")
    assert again == [{"n": 1}]
    assert [(r["text_column"], r["profile"]) for r in stored] == [
        (c, p) for c in sorted(row["text_columns"]) for p in sorted(PROFILES)]
    for r in stored:
        assert (r["dataset_id"], r["revision_sha"], r["config"], r["label_column"]) == (
            row["dataset_id"], row["revision_sha"], row["config"], row["label_column"])
        assert r["text_columns"] == row["text_columns"]
        assert (r["method"], r["method_version"], r["tool_version"]) == (EXACT_METHOD, 1, __version__)
        assert r["measured_at"] is not None
        assert {n: r[n] for n in NAMES} == row["per_column"][r["text_column"]][r["profile"]]
    # Measured again: the config's rows are replaced, not added to.
    audit(str(target), near=False, examples=0, db=db)
    with Store(db, read_only=True) as store:
        assert store.records("SELECT count(*) AS n FROM column_measurements") == [{"n": len(stored)}]


# --- audit --json and the table --------------------------------------------------------------------


@pytest.mark.slow
def test_audit_json_carries_per_column_under_exact_and_leaves_it_out_for_one_text_column(tmp_path, shared_datasets):
    import json

    from typer.testing import CliRunner

    from hubsurvey.cli import app

    runner = CliRunner()
    db = str(tmp_path / "r.duckdb")
    multi = runner.invoke(app, ["audit", str(shared_datasets / "openai__gsm8k"), "--json", "--no-near", "--db", db])
    assert multi.exit_code == 0, multi.output
    (row,) = json.loads(multi.stdout)
    exact = row["exact"]
    assert list(exact["per_column"]) == ["question", "answer"]
    extra = {c.name for c in per_column_columns() if c.figure.grain.value == "column"}
    for by_profile in exact["per_column"].values():
        assert list(by_profile) == ["raw", "normalized"]
        for profile, found in by_profile.items():
            assert set(found) - extra == set(exact[profile])  # the names of exact.raw, and the column's own
    # no gsm8k question and no answer occurs in both splits
    assert exact["per_column"]["answer"]["raw"]["test_rows_in_train"] == 0
    single = runner.invoke(app, ["audit", str(shared_datasets / "CogComp__trec"), "--json", "--no-near", "--db", db])
    assert single.exit_code == 0, single.output
    assert all("per_column" not in r["exact"] for r in json.loads(single.stdout))
    table = runner.invoke(app, ["audit", str(shared_datasets / "iabufarha__ar_sarcasm"), "--no-near", "--db", db])
    assert table.exit_code == 0, table.output
    block = table.stdout.split("per text column (rows, each once)")[1].splitlines()
    assert block[1] == "  tweet" and block[3].split() == ["column", "in", "train,", "text", "not", "0", "(0.0%)", "0", "(0.0%)"]
    assert "1980 (93.839%)" in table.stdout  # source: a test row's source in train while its tweet is new


# --- findings and the report -----------------------------------------------------------------------


@pytest.mark.slow  # three audits and a report
def test_findings_and_report_show_the_columns_whose_values_are_in_train(tmp_path, shared_datasets):
    from hubsurvey.analysis.findings import findings
    from hubsurvey.analysis.report import render_report
    from hubsurvey.core.store import Store
    from hubsurvey.survey.audit import audit

    db = tmp_path / "results.duckdb"
    for name in ("iabufarha__ar_sarcasm", "openai__gsm8k", "CogComp__trec"):
        audit(str(shared_datasets / name), near=False, examples=0, db=db)
    with Store(db) as store:
        found = findings(store)
        md, _ = render_report(store, tmp_path / "report")
        # every label column of ar_sarcasm holds the same text figures: the view takes them once
        stored = store.records("SELECT DISTINCT dataset_id, config, text_column, test_rows_column_in_train_only AS n "
                               "FROM column_measurements WHERE profile = 'normalized'")
    rows = found["shared_columns"]
    assert sorted((r["dataset_id"], r["text_column"], r["normalized_test_rows_column_in_train_only"]) for r in rows) == \
        sorted((r["dataset_id"], r["text_column"], r["n"]) for r in stored)
    assert len(rows) == 4  # trec has one text column: not measured per column
    top = rows[0]
    assert (top["dataset_id"], top["text_column"], top["normalized_test_rows_column_in_train_only"]) == (
        "iabufarha/ar_sarcasm", "source", 1980)
    assert top["normalized_text_test_rows_in_train"] == 130 and top["rows_test"] == 2110
    assert found["shared_columns_overview"] == [{"configs": 2, "text_columns": 4, "configs_shared": 1,
                                                 "pct_configs_shared": 50.0}]
    text = md.read_text()
    assert "Passages and premises shared across splits" in text
    line = next(line for line in text.splitlines() if "| source |" in line)
    assert line == "| iabufarha/ar_sarcasm | default | source | 1980 | 2110 | 93.84% | 130 |"


@pytest.mark.slow  # two audits and two exports
def test_export_writes_the_per_column_table_only_when_there_is_one(tmp_path, shared_datasets):
    import csv

    import pyarrow.parquet as pq

    from hubsurvey.analysis.card import render_card
    from hubsurvey.analysis.export import COLUMN_CSV_PATH, COLUMN_PARQUET_PATH, export_results
    from hubsurvey.core.store import Store
    from hubsurvey.survey.audit import audit

    single, multi = tmp_path / "single.duckdb", tmp_path / "multi.duckdb"
    audit(str(shared_datasets / "CogComp__trec"), near=False, examples=0, db=single)
    audit(str(shared_datasets / "openai__gsm8k"), near=False, examples=0, db=multi)
    with Store(single) as store:
        files = {p.relative_to(tmp_path / "a").as_posix() for p in export_results(store, tmp_path / "a")}
    assert COLUMN_PARQUET_PATH not in files and COLUMN_CSV_PATH not in files
    with Store(multi) as store:
        files = {p.relative_to(tmp_path / "b").as_posix() for p in export_results(store, tmp_path / "b")}
        stored = store.records("SELECT * FROM column_measurements ORDER BY text_column DESC, profile")
        card = render_card(store, "someone/results", sorted(files))
    assert {COLUMN_PARQUET_PATH, COLUMN_CSV_PATH} <= files
    table = pq.read_table(tmp_path / "b" / COLUMN_PARQUET_PATH).to_pylist()
    assert [(r["text_column"], r["profile"]) for r in table] == [
        ("question", "normalized"), ("question", "raw"), ("answer", "normalized"), ("answer", "raw")]  # key order
    assert sorted(table, key=lambda r: (r["text_column"], r["profile"]), reverse=False) == \
        sorted(stored, key=lambda r: (r["text_column"], r["profile"]))
    with open(tmp_path / "b" / COLUMN_CSV_PATH, newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 4 and rows[0]["test_rows_in_validation"] == "NR"  # gsm8k has no validation split
    assert "config_name: column_measurements" in card and "data/column_measurements-*.parquet" in card


# --- the mini-hub: planted passages and premises, their truth computed in plain Python -------------


@pytest.mark.slow  # generates the mini-hub, measures four datasets
def test_minihub_shared_passages_and_premises_equal_their_truth(minihub):
    import json

    truth = [m for m in json.loads((minihub / "truth.json").read_text())["measurements"] if "per_column" in m]
    assert {m["dataset_id"] for m in truth} == {"mini-nlp/nli_pairs", "mini-nlp/qa_small", "mini-nlp/qa_shared_contexts",
                                                "mini-nlp/nli_shared_premises"}
    for m in truth:
        source = FolderSource(minihub / m["dataset_id"].replace("/", "__"))
        result = measure_config(source.load(m["config"]), n_configs=1, source="folder", methods=MEASURED)
        (row,) = [r for r in result.rows if r["label_column"] == m["label_column"]]
        assert row["text_columns"] == m["text_columns"]
        _assert_same(row["per_column"], m["per_column"])
    planted = {m["dataset_id"]: m["per_column"] for m in truth}
    # most test passages are in train while their question is not; the whole rows planted are not counted
    context = planted["mini-nlp/qa_shared_contexts"]["context"]["normalized"]
    assert context["test_rows_column_in_train_only"] > 0.6 * context["test_rows_in_train"]
    premise = planted["mini-nlp/nli_shared_premises"]["premise"]["raw"]
    assert premise["test_rows_column_in_train_only"] > 0.6 * premise["test_rows_in_train"]
    assert premise["test_rows_in_train_conflicting_label"] > 0  # a premise carries three labels


@pytest.mark.slow
def test_a_column_hash_that_collides_falls_back_to_the_values(monkeypatch):
    """With a hash of four values, different passages share one: the check sees it and the column's
    rows are grouped by their values instead, giving the reference's figures."""
    from hubsurvey.survey.metrics import Engine

    checked: list[tuple[str, bool]] = []
    original = Engine._hash_is_exact

    def spy(self, hash_column, values, table):
        checked.append((table, original(self, hash_column, values, table)))
        return checked[-1][1]

    monkeypatch.setattr(Engine, "_hash_is_exact", spy)
    monkeypatch.setattr(Engine, "hash_sql", "(hash({}) % 4)")
    splits = _qa_splits()
    rows = measure({s: _table(r) for s, r in splits.items()}, text_columns=["context", "question"],
                   label_columns=["answer"])
    assert ("keys_column", False) in checked  # a column's key fell back to its values
    _assert_same(rows[0]["per_column"], _reference(splits, ["context", "question"], "answer"))
