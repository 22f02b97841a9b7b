"""Sources, roles, the store and `hubsurvey audit`: layouts, bad input, NR, replacement, JSON."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from hubsurvey.cli import app

# The published LLE table's columns (lbourdois/LLE, "valididation" spelling corrected): the
# contract the lle view and audit --json keep. Written out here on purpose, not taken from the code.
LLE_JSON_KEYS = (
    "dataset_name",
    "text_leaks_train_wrt_test",
    "text_leaks_validation_wrt_test",
    "text_duplication_train",
    "text_duplication_validation",
    "text_duplication_test",
    "text_test_biased",
    "text_and_label_leaks_train_wrt_test",
    "text_and_label_leaks_validation_wrt_test",
    "text_and_label_duplication_train",
    "text_and_label_duplication_validation",
    "text_and_label_duplication_test",
    "text_and_label_test_biased",
    "difference_annotation_in_train_and_validation_splits",
)
from hubsurvey.core.errors import BadInputError
from hubsurvey.core.roles import infer_roles
from hubsurvey.core.store import Store
from hubsurvey.survey.audit import audit
from hubsurvey.survey.sample import PLANTED, write_sample

runner = CliRunner()
FEATURES = {"text": {"dtype": "string", "_type": "Value"}, "label": {"names": ["a", "b"], "_type": "ClassLabel"}}


def write_split(folder: Path, table: pa.Table, features: dict | None = FEATURES) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    if features is not None:
        table = table.replace_schema_metadata({b"huggingface": json.dumps({"info": {"features": features}}).encode()})
    pq.write_table(table, folder / "0000.parquet")


def small(texts, labels=None) -> pa.Table:
    return pa.table({"text": pa.array(texts, pa.string()), "label": pa.array(labels or [0] * len(texts), pa.int64())})


@pytest.fixture
def good(tmp_path) -> Path:
    root = tmp_path / "org__good"
    write_split(root / "default" / "train", small(["a", "b", "b"]))
    write_split(root / "default" / "test", small(["a", "c"]))
    return root


def count_rows(db: Path) -> int:
    with Store(db) as store:
        return store.query("SELECT count(*) FROM measurements")[1][0][0]


# --- the embedded sample --------------------------------------------------------------------------

@pytest.mark.slow
def test_sample_planted_counts_are_found(tmp_path):
    root = write_sample(tmp_path / "hubsurvey__sample")
    outcome = audit(str(root), db=tmp_path / "r.duckdb")
    (row,) = outcome.rows
    assert {k: row[k] for k in PLANTED} == PLANTED
    assert row["text_test_biased"] == pytest.approx((40 + 9) / 500 * 100)


# --- layouts ----------------------------------------------------------------------------------------

@pytest.mark.slow
def test_split_file_layout_and_aliases(tmp_path):
    root = tmp_path / "flat"
    (root / "cfg").mkdir(parents=True)
    pq.write_table(small(["a", "b"]), root / "cfg" / "train.parquet")
    pq.write_table(small(["a"]), root / "cfg" / "valid.parquet")
    pq.write_table(small(["a", "a"]), root / "cfg" / "test-00000-of-00001.parquet")
    (row,) = audit(str(root)).rows
    assert row["validation_split"] == "valid" and row["config"] == "cfg"
    assert (row["text_leaks_train_wrt_test"], row["text_leaks_validation_wrt_test"], row["text_duplication_test"]) == (1, 1, 1)


@pytest.mark.slow
def test_save_to_disk_folder(tmp_path):
    import datasets  # here, not at import: collecting the module needs no `datasets` (a second of imports)

    features = datasets.Features({"sentence": datasets.Value("string"), "label": datasets.ClassLabel(names=["x", "y"])})
    dd = datasets.DatasetDict(
        {
            "train": datasets.Dataset.from_dict({"sentence": ["p", "q"], "label": [0, 1]}, features=features),
            "test": datasets.Dataset.from_dict({"sentence": ["q", "q"], "label": [0, 0]}, features=features),
        }
    )
    dd.save_to_disk(str(tmp_path / "saved"))
    (row,) = audit(str(tmp_path / "saved")).rows
    assert row["label_column"] == "label" and row["text_columns"] == ["sentence"]
    assert row["text_leaks_train_wrt_test"] == 1 and row["text_and_label_leaks_train_wrt_test"] == 0


# --- roles ----------------------------------------------------------------------------------------

def test_roles_inference_rules():
    features = {
        "id": {"dtype": "string", "_type": "Value"},
        "premise": {"dtype": "string", "_type": "Value"},
        "hypothesis": {"dtype": "string", "_type": "Value"},
        "label": {"names": ["e", "n", "c"], "_type": "ClassLabel"},
        "score": {"dtype": "float32", "_type": "Value"},
        "image": {"_type": "Image"},
        "langs": {"feature": {"dtype": "string", "_type": "Value"}, "_type": "List"},
        "answers": {"text": {"feature": {"dtype": "string", "_type": "Value"}, "_type": "List"},
                    "answer_start": {"feature": {"dtype": "int32", "_type": "Value"}, "_type": "List"}},
        "translation": {"en": {"dtype": "string", "_type": "Value"}, "fr": {"dtype": "string", "_type": "Value"}},
        "star_rating": {"dtype": "int64", "_type": "Value"},
        "stars": {"dtype": "int64", "_type": "Value"},
    }
    roles = infer_roles(features)
    assert roles.text_columns == ("premise", "hypothesis", "translation")
    assert roles.label_columns == ("label",)
    assert roles.ignored["id"] == "id-like" and roles.ignored["image"] == "media"
    assert roles.ignored["langs"] == "metadata" and roles.ignored["stars"] == "number, not a label"
    assert "answers" in roles.ignored and "star_rating" in roles.ignored


@pytest.mark.slow
def test_roles_override_file_takes_precedence(tmp_path, good):
    roles = tmp_path / "roles.toml"
    roles.write_text('["org/good"."*"]\ntext = ["text"]\nlabels = []\n')
    (row,) = audit(str(good), roles_file=roles).rows
    assert row["label_column"] is None and row["roles_source"] == "override"


# --- bad input: one clear line, nothing half-written ------------------------------------------------

def _bad_cases(tmp_path: Path) -> dict[str, tuple[Path, str]]:
    cases = {}
    root = tmp_path / "org__notest"
    write_split(root / "default" / "train", small(["a"]))
    cases["no test split"] = (root, "no test split")
    root = tmp_path / "org__truncated"
    write_split(root / "default" / "train", small(["a"]))
    write_split(root / "default" / "test", small(["a"]))
    data = (root / "default" / "test" / "0000.parquet").read_bytes()
    (root / "default" / "test" / "0000.parquet").write_bytes(data[: len(data) // 2])
    cases["truncated parquet"] = (root, "test: unreadable Parquet")
    root = tmp_path / "org__mismatch"
    write_split(root / "default" / "train", small(["a"]))
    write_split(root / "default" / "test", pa.table({"text": ["a"], "label": pa.array(["x"])}), None)
    cases["schemas disagree"] = (root, "schema differs")
    root = tmp_path / "org__empty"
    write_split(root / "default" / "train", small(["a"]))
    write_split(root / "default" / "test", small([]))
    cases["zero-row test"] = (root, "zero rows")
    root = tmp_path / "org__numbers"
    feats = {"x": {"dtype": "float64", "_type": "Value"}, "label": FEATURES["label"]}
    write_split(root / "default" / "train", pa.table({"x": [1.0], "label": [0]}), feats)
    write_split(root / "default" / "test", pa.table({"x": [1.0], "label": [0]}), feats)
    cases["unsupported types"] = (root, "only unsupported column types")
    return cases


@pytest.mark.parametrize("case", ["no test split", "truncated parquet", "schemas disagree", "zero-row test", "unsupported types"])
@pytest.mark.slow
def test_bad_input_is_one_line_naming_dataset_config_and_cause(tmp_path, good, case):
    db = tmp_path / "r.duckdb"
    assert runner.invoke(app, ["audit", str(good), "--db", str(db)]).exit_code == 0
    before = count_rows(db)
    root, cause = _bad_cases(tmp_path)[case]
    result = runner.invoke(app, ["audit", str(root), "--db", str(db)])
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, lines
    dataset_id = root.name.replace("__", "/")
    assert lines[0].startswith(f"error: {dataset_id} [default"), lines[0]
    assert cause in lines[0]
    if case in ("truncated parquet", "zero-row test"):
        assert "/test]" in lines[0]  # the split is named
    assert count_rows(db) == before  # nothing lost, nothing half-written


def test_unsafe_config_names_are_refused(tmp_path, good):
    for name in ("../etc", "a/b", ".."):
        with pytest.raises(BadInputError, match="unsafe config name"):
            audit(str(good), config=name)
    result = runner.invoke(app, ["audit", str(good), "--config", "../x"])
    assert result.exit_code == 2 and "unsafe config name" in result.stderr


def test_unsafe_split_name_from_a_hub_listing_is_refused():
    from hubsurvey.core.hub import RepoFile
    from hubsurvey.survey.sources import HubSource

    class FakeClient:  # only the tree listing is consulted before the name check
        def parquet_tree(self, repo_id):
            return [RepoFile("default/test/0000.parquet", 1), RepoFile("default/../0000.parquet", 1)]

    source = HubSource("org/x", FakeClient(), sha="0" * 40)
    with pytest.raises(BadInputError, match=r"org/x: unsafe split name '\.\.'"):
        source.load("default")


@pytest.mark.slow
def test_one_bad_config_does_not_stop_the_others(tmp_path):
    root = tmp_path / "org__multi"
    write_split(root / "ok" / "train", small(["a"]))
    write_split(root / "ok" / "test", small(["a"]))
    write_split(root / "broken" / "train", small(["a"]))
    result = runner.invoke(app, ["audit", str(root), "--db", str(tmp_path / "r.duckdb")])
    assert result.exit_code == 1  # partial
    assert "org/multi [broken]: no test split" in result.stderr
    assert count_rows(tmp_path / "r.duckdb") == 1


# --- store --------------------------------------------------------------------------------------------

@pytest.mark.slow
def test_nr_is_null_in_tables_and_NR_in_the_view(tmp_path):
    root = tmp_path / "org__noval"
    write_split(root / "default" / "train", small(["a", "b"]))
    write_split(root / "default" / "test", small(["a", "a"]))
    db = tmp_path / "r.duckdb"
    audit(str(root), db=db)
    with Store(db) as store:
        (row,) = store.records("SELECT * FROM measurements")
        assert row["text_leaks_validation_wrt_test"] is None and row["text_duplication_validation"] is None
        assert row["rows_validation"] is None
        names, (view,) = store.query("SELECT * FROM lle")
    assert names == list(LLE_JSON_KEYS)
    lle = dict(zip(names, view))
    assert lle["text_leaks_validation_wrt_test"] == "NR" and lle["text_and_label_duplication_validation"] == "NR"
    assert lle["text_test_biased"] == "100.0%" and lle["difference_annotation_in_train_and_validation_splits"] == "0.0"


@pytest.mark.slow
def test_lle_view_formats_the_published_row(tmp_path, shared_datasets):
    db = tmp_path / "r.duckdb"
    audit(str(shared_datasets / "eriktks__conll2003"), db=db)
    with Store(db) as store:
        _, rows = store.query("SELECT * FROM lle WHERE dataset_name = 'conll2003(ner_tags)'")
    assert ";".join(rows[0]) == "conll2003(ner_tags);78;25;1350;180;269;10.049%;73;23;1348;179;266;9.818%;7.0"


@pytest.mark.slow
def test_measuring_again_replaces_and_never_duplicates(tmp_path, good):
    db = tmp_path / "r.duckdb"
    audit(str(good), db=db)
    audit(str(good), db=db)
    with Store(db) as store:
        rows = store.records("SELECT dataset_id, revision_sha, config, label_column, text_columns, rows_train, rows_test, tool_version, method, measured_at FROM measurements")
    assert len(rows) == 1
    row = rows[0]
    assert row["dataset_id"] == "org/good" and len(row["revision_sha"]) == 40
    assert (row["rows_train"], row["rows_test"], row["method"]) == (3, 2, "lle-2024")
    # A new revision of the data is a new row; the lle view shows only the newest revision.
    write_split(good / "default" / "test", small(["a", "b", "d"]))
    audit(str(good), db=db)
    with Store(db) as store:
        assert store.query("SELECT count(*) FROM measurements")[1][0][0] == 2
        assert store.query("SELECT count(*) FROM lle")[1][0][0] == 1


@pytest.mark.slow
def test_store_refuses_a_newer_schema(tmp_path):
    db = tmp_path / "r.duckdb"
    Store(db).close()
    con = duckdb.connect(str(db))
    con.execute("INSERT INTO schema_version VALUES (999, now())")
    con.close()
    result = runner.invoke(app, ["audit", "--db", str(db)])
    assert result.exit_code == 3 and "schema version 999" in result.stderr


# --- CLI ------------------------------------------------------------------------------------------------

@pytest.mark.slow
def test_audit_json_keys_and_types(tmp_path, good):
    result = runner.invoke(app, ["audit", str(good), "--json", "--db", str(tmp_path / "r.duckdb")])
    assert result.exit_code == 0
    (obj,) = json.loads(result.stdout)
    assert list(obj) == [*list(LLE_JSON_KEYS), "dataset_id", "config", "label_column", "text_columns", "exact", "near",
                         "fingerprints", "rows", "groups", "dates", "checks", "verdict"]
    assert obj["verdict"]["config"] == obj["config"] and obj["verdict"]["label_column"] == obj["label_column"]
    assert obj["rows"]["test_rows_blank_text"] == 0 and obj["groups"] == [] and obj["dates"] == []
    assert [c["check"] for c in obj["checks"] if c["ran"]] == ["lle", "exact_raw", "exact_normalized", "near", "blank_rows"]
    assert obj["text_leaks_train_wrt_test"] == 1 and isinstance(obj["text_duplication_train"], int)
    # the exact figures, under their own key: train a b b, test a c
    exact = obj["exact"]
    assert exact["method"] == "exact-2026" and set(exact) == {"method", "raw", "normalized"}
    assert exact["raw"]["test_rows_in_train"] == 1 and exact["raw"]["test_rows_in_train_pct"] == 50.0
    assert exact["raw"]["test_rows_in_validation"] is None and exact["raw"]["test_rows_repeated"] == 0
    assert exact["raw"]["test_rows_contaminated"] == 1 and exact["normalized"]["contaminated_test_pct"] == 50.0
    assert obj["text_test_biased"] == 50.0 and obj["text_leaks_validation_wrt_test"] is None
    assert obj["difference_annotation_in_train_and_validation_splits"] == 0.0
    assert obj["text_columns"] == ["text"] and obj["dataset_id"] == "org/good"
    # the near-duplicate figures, under theirs: test "a" is train's "a" (J = 1), "c" is near nothing
    near = obj["near"]
    assert near["method"] == "near-2026" and near["parameters"]["threshold"] == 0.8
    assert near["test_rows_near_train"] == 1 and near["near_contaminated_test_pct"] == 50.0
    assert near["test_rows_near_validation"] is None and near["curve"][0] == {"threshold": 0.9, "test_rows_near_train": 1}
    # each split's content fingerprint; null for the absent validation split
    assert set(obj["fingerprints"]) == {"train", "validation", "test"} and obj["fingerprints"]["validation"] is None
    assert obj["fingerprints"]["train"].startswith("hs1:") and len(obj["fingerprints"]["test"]) == 36


@pytest.mark.slow
def test_audit_default_runs_the_sample_with_examples(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["audit", "--examples", "3"])
    assert result.exit_code == 0, result.output
    assert "exact (rows, each once)" in result.stdout and "9.8%" in result.stdout
    assert "hubsurvey show hubsurvey/sample-reviews" in result.stdout
    with Store(tmp_path / "results.duckdb", read_only=True) as store:
        ranks = store.query("SELECT max(rank), count(*) FROM examples")[1][0]
    assert ranks[0] == 3 and ranks[1] > 3  # bounded by --examples, per kind


@pytest.mark.slow
def test_examples_report_counts_per_split(tmp_path, good):
    (result,) = audit(str(good), examples=5).results
    by_kind = {(e["profile"], e["kind"]): e for e in result.examples if e["label_column"] is None}
    leaked = by_kind["raw", "leak_train_test"]
    assert json.loads(leaked["key"]) == {"text": "a"}
    assert (leaked["rows_train"], leaked["rows_validation"], leaked["rows_test"]) == (1, None, 1)
    assert json.loads(leaked["positions"]) == {"test": [0], "train": [0]}
    duplicated = by_kind["raw", "duplicate_train"]
    assert json.loads(duplicated["key"]) == {"text": "b"} and json.loads(duplicated["positions"]) == {"train": [1, 2]}
    assert ("raw", "duplicate_test") not in by_kind  # test a c has no duplicate


def test_missing_target_is_bad_input(tmp_path):
    target = str(tmp_path / "nope" / "..x")
    result = runner.invoke(app, ["audit", target])
    assert result.exit_code == 2 and result.stdout == ""
    # one line that names the target and says what is wrong with it
    assert result.stderr == f"error: {target}: neither a folder nor a Hub id\n"


# --- a Hub id, through huggingface_hub against the stand-in serving the real datasets ------------

@pytest.mark.slow
def test_audit_hub_id_reproduces_the_published_row(shared_datasets, tmp_path, monkeypatch):
    import huggingface_hub.constants

    from hubsurvey_standin import StandinHub

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "cache"))  # a cold cache
    monkeypatch.setenv("HUBSURVEY_CACHE_DIR", str(tmp_path / "cache"))  # the survey's own cache, cold
    with StandinHub(shared_datasets) as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        result = runner.invoke(app, ["audit", "eriktks/conll2003", "--json", "--db", str(tmp_path / "r.duckdb")])
        stats = hub.stats()
    assert result.exit_code == 0, result.output
    row = next(o for o in json.loads(result.stdout) if o["label_column"] == "ner_tags")
    assert row["dataset_name"] == "conll2003(ner_tags)"
    assert [row[k] for k in LLE_JSON_KEYS[1:6]] == [78, 25, 1350, 180, 269]
    assert row["text_test_biased"] == 10.049 and row["text_and_label_test_biased"] == 9.818
    assert stats["tree"] == 1 and stats["resolve_get"] == 3  # one listing, only the three split files
    with Store(tmp_path / "r.duckdb") as store:
        (sha, source), = store.query("SELECT DISTINCT revision_sha, source FROM measurements")[1]
    assert source == "hub" and len(sha) == 40


def test_audit_hub_errors_are_one_line(shared_datasets, tmp_path, monkeypatch):
    from hubsurvey_standin import StandinHub

    with StandinHub(shared_datasets) as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        missing = runner.invoke(app, ["audit", "nobody/nothing", "--db", str(tmp_path / "r.duckdb")])
        bad_config = runner.invoke(app, ["audit", "CogComp/trec", "--config", "nope", "--db", str(tmp_path / "r.duckdb")])
    assert missing.exit_code == 2 and len(missing.stderr.strip().splitlines()) == 1
    assert missing.stderr.startswith("error: nobody/nothing:")
    assert bad_config.exit_code == 2 and "CogComp/trec [nope]: no such config" in bad_config.stderr


# --- Ctrl-C or SIGTERM inside a query ----------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("command", ["audit", "clean"])
def test_a_stop_inside_a_query_ends_the_command_and_takes_no_further_config(tmp_path, monkeypatch, command):
    """DuckDB ends a query that Ctrl-C or SIGTERM interrupts with its own error, an Exception: the
    command stops there as the signal asked (the run recorded interrupted, what was stored kept),
    where it once called it a bug in hubsurvey, one config's error, and went on to the others. The
    query ends when the signal arrives: DuckDB's client looks for a signal only between a query's
    tasks, and this one's single task (a range scan) once ran its whole 8-10 s first."""
    import signal
    import threading
    import time

    from hubsurvey.core import duck
    from hubsurvey.core.signals import STOP_REQUESTED, sigterm_as_ctrl_c
    from hubsurvey.survey import audit as audit_module
    from hubsurvey.survey import clean as clean_module

    if threading.current_thread() is not threading.main_thread():
        pytest.skip("a signal handler can be set on the main thread only")
    root = tmp_path / "org__three"
    for name in ("c0", "c1", "c2"):
        write_split(root / name / "train", small(["a", "b", "b"]))
        write_split(root / name / "test", small(["a", "c"]))
    module, name = (audit_module, "measure_config") if command == "audit" else (clean_module, "clean_config")
    taken, started, real = [], [], getattr(module, name)

    def per_config(data, *args, **kwargs):
        taken.append(data.config)
        if data.config == "c1":  # a query long enough for the signal to land inside it
            # to the main thread, which waits on the query: DuckDB ends it at once only then
            timer = threading.Timer(0.2, signal.pthread_kill, (threading.main_thread().ident, signal.SIGTERM))
            timer.start()
            started.append(time.monotonic())
            try:
                duck.connect().execute("SELECT sum(hash(range)) FROM range(2000000000)").fetchall()
            finally:
                timer.cancel()
        return real(data, *args, **kwargs)

    monkeypatch.setattr(module, name, per_config)
    db = tmp_path / "r.duckdb"
    run = (lambda: audit(str(root), db=db, near=False, examples=0)) if command == "audit" else (
        lambda: clean_module.clean(str(root), out=tmp_path / "clean", db=db))
    try:
        with sigterm_as_ctrl_c(), pytest.raises(KeyboardInterrupt) as stopped:
            run()
        took = time.monotonic() - started[0]
        assert STOP_REQUESTED.is_set()
        # the query's own error taken for the stop, or the handler's stop if it ran first
        cause = stopped.value.__cause__
        assert cause is None or isinstance(cause, duckdb.InterruptException) or "Query interrupted" in str(cause), cause
    finally:
        STOP_REQUESTED.clear()
    assert taken == ["c0", "c1"]
    assert took < 3, took  # at the signal (0.2 s), not at the query's end
    with Store(db) as store:
        assert store.query("SELECT status FROM runs")[1] == [("interrupted",)]
        if command == "audit":
            assert [c for (c,) in store.query("SELECT config FROM measurements")[1]] == ["c0"]
