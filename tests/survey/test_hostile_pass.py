"""An adversarial pass over local folders: odd layouts, names, encodings, schema drifts, empty
files and zero-row splits, odd labels. Each case states its plain expectation: measured with the
reference's figures (``lle_reference``), or refused in one line naming dataset, config and cause."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from test_hostile_data import _check

from hubsurvey.core.errors import SurveyError
from hubsurvey.survey.measure import measure_config
from hubsurvey.survey.sources import FolderSource

DATASET = "pass/ds"
TRAIN = pa.table({"text": ["a", "b", "b", "c"], "label": [0, 1, 1, 0]})
TEST = pa.table({"text": ["a", "d", "d"], "label": [0, 1, 0]})


def _write(root: Path, files: dict[str, pa.Table | bytes]) -> Path:
    folder = root / DATASET.replace("/", "__")
    for relative, content in files.items():
        path = folder / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            pq.write_table(content, path)
    return folder


def _rows(folder: Path, config: str = "default") -> list[dict]:
    return measure_config(FolderSource(folder).load(config), n_configs=1, source="folder").rows


def _table(text: list, label: list | None = None, label_type: pa.DataType | None = None) -> pa.Table:
    columns = {"text": pa.array(text, pa.string())}
    if label is not None:
        columns["label"] = pa.array(label, label_type)
    return pa.table(columns)


# (id, files, the splits the reference measures, or None when refused, words of the refusal)
Case = tuple[str, Callable[[], dict], Callable[[], dict] | None, tuple[str, ...]]

CASES: list[Case] = [
    # layouts
    ("upper_case_split_and_file", lambda: {"default/TEST/0.parquet": TEST, "default/test.parquet": TEST},
     None, ("'TEST'", "'test'")),
    ("three_parts_and_partial", lambda: {"default/train-part0/0.parquet": TRAIN, "default/train-part1/0.parquet": TRAIN,
                                         "default/partial-train/0.parquet": TRAIN, "default/test/0.parquet": TEST},
     None, ("split 'train'", "2 layouts")),
    ("junk_files_beside_shards", lambda: {"default/train/0.parquet": TRAIN, "default/train/README.md": b"# hi",
                                          "default/train/.DS_Store": b"\0\0", "default/test/0.parquet": TEST},
     lambda: {"train": TRAIN, "test": TEST}, ()),
    ("editor_checkpoint_copy_is_not_a_shard", lambda: {"default/train/0.parquet": TRAIN,
                                                       "default/train/.ipynb_checkpoints/0-checkpoint.parquet": TRAIN,
                                                       "default/test/0.parquet": TEST},
     lambda: {"train": TRAIN, "test": TEST}, ()),
    ("deep_nesting", lambda: {"default/train/a/b/c/d/0.parquet": TRAIN, "default/test/x/0.parquet": TEST},
     lambda: {"train": TRAIN, "test": TEST}, ()),
    ("shards_out_of_name_order", lambda: {"default/train/10.parquet": TRAIN.slice(2), "default/train/9.parquet": TRAIN.slice(0, 2),
                                          "default/test/0.parquet": TEST},
     lambda: {"train": [TRAIN.slice(2), TRAIN.slice(0, 2)], "test": TEST}, ()),  # sorted as strings: 10 before 9
    # empty files and zero-row splits
    ("zero_row_train", lambda: {"default/train/0.parquet": TRAIN.slice(0, 0), "default/test/0.parquet": TEST},
     lambda: {"train": TRAIN.slice(0, 0), "test": TEST}, ()),
    ("empty_shard_among_test_shards", lambda: {"default/train/0.parquet": TRAIN, "default/test/0.parquet": TEST.slice(0, 0),
                                               "default/test/1.parquet": TEST},
     lambda: {"train": TRAIN, "test": [TEST.slice(0, 0), TEST]}, ()),
    ("one_row_test", lambda: {"default/train/0.parquet": TRAIN, "default/test/0.parquet": TEST.slice(0, 1)},
     lambda: {"train": TRAIN, "test": TEST.slice(0, 1)}, ()),
    ("zero_row_validation", lambda: {"default/train/0.parquet": TRAIN, "default/validation/0.parquet": TRAIN.slice(0, 0),
                                     "default/test/0.parquet": TEST},
     lambda: {"train": TRAIN, "validation": TRAIN.slice(0, 0), "test": TEST}, ()),
    ("truncated_parquet_file", lambda: {"default/train/0.parquet": TRAIN, "default/test/0.parquet": b"PAR1garbage"},
     None, ("unreadable",)),
    ("zero_byte_parquet_file", lambda: {"default/train/0.parquet": TRAIN, "default/test/0.parquet": b""},
     None, ("unreadable",)),
    # schema drifts
    ("label_int32_vs_int64", lambda: {"default/train/0.parquet": _table(["a", "b"], [0, 1], pa.int32()),
                                      "default/test/0.parquet": _table(["a"], [0], pa.int64())},
     None, ("schema differs", "int32", "int64")),
    ("column_order_differs", lambda: {"default/train/0.parquet": TRAIN, "default/test/0.parquet": TEST.select(["label", "text"])},
     None, ("schema differs",)),
    ("text_column_renamed_in_test", lambda: {"default/train/0.parquet": TRAIN,
                                             "default/test/0.parquet": TEST.rename_columns(["Text", "label"])},
     None, ("schema differs",)),
    # odd labels and values
    ("all_null_labels", lambda: {"default/train/0.parquet": _table(["a", "b"], [None, None], pa.int64()),
                                 "default/test/0.parquet": _table(["a", "c"], [None, None], pa.int64())},
     lambda: {"train": _table(["a", "b"], [None, None], pa.int64()), "test": _table(["a", "c"], [None, None], pa.int64())}, ()),
    ("extreme_int_labels", lambda: {"default/train/0.parquet": _table(["a", "a", "b"], [2**63 - 1, -(2**63), 0], pa.int64()),
                                    "default/test/0.parquet": _table(["a", "b"], [2**63 - 1, 1], pa.int64())},
     lambda: {"train": _table(["a", "a", "b"], [2**63 - 1, -(2**63), 0], pa.int64()),
              "test": _table(["a", "b"], [2**63 - 1, 1], pa.int64())}, ()),
    ("bool_labels", lambda: {"default/train/0.parquet": _table(["a", "a", "b"], [True, False, True], pa.bool_()),
                             "default/test/0.parquet": _table(["a", "b"], [True, True], pa.bool_())},
     lambda: {"train": _table(["a", "a", "b"], [True, False, True], pa.bool_()),
              "test": _table(["a", "b"], [True, True], pa.bool_())}, ()),
    ("nul_inside_text", lambda: {"default/train/0.parquet": _table(["a\x00b", "a", "a\x00"]),
                                 "default/test/0.parquet": _table(["a", "a\x00b", "b"])},
     lambda: {"train": _table(["a\x00b", "a", "a\x00"]), "test": _table(["a", "a\x00b", "b"])}, ()),
    ("escapes_inside_text", lambda: {"default/train/0.parquet": _table(["\x1b[2J", "\x1b]0;t\x07", "x"]),
                                     "default/test/0.parquet": _table(["\x1b[2J", "y"])},
     lambda: {"train": _table(["\x1b[2J", "\x1b]0;t\x07", "x"]), "test": _table(["\x1b[2J", "y"])}, ()),
    ("whitespace_only_differences", lambda: {"default/train/0.parquet": _table(["a", "a ", " a", "a\t"]),
                                             "default/test/0.parquet": _table(["a", "a  "])},
     lambda: {"train": _table(["a", "a ", " a", "a\t"]), "test": _table(["a", "a  "])}, ()),
    ("huge_string_label", lambda: {"default/train/0.parquet": _table(["a", "b"], ["L" * 100_000, "x"], pa.string()),
                                   "default/test/0.parquet": _table(["a", "b"], ["L" * 100_000, "y"], pa.string())},
     None, ()),  # the label is text too; measured (figures checked against the reference below)
    ("duplicates_across_test_shards", lambda: {"default/train/0.parquet": TRAIN, "default/test/0.parquet": TEST,
                                               "default/test/1.parquet": TEST},
     lambda: {"train": TRAIN, "test": [TEST, TEST]}, ()),
    ("engine_alias_names", lambda: {"default/train/0.parquet": pa.table({"split": ["a", "b"], "h_text": ["x", "y"], "rows_all": ["1", "2"]}),
                                    "default/test/0.parquet": pa.table({"split": ["a", "c"], "h_text": ["x", "z"], "rows_all": ["1", "3"]})},
     lambda: {"train": pa.table({"split": ["a", "b"], "h_text": ["x", "y"], "rows_all": ["1", "2"]}),
              "test": pa.table({"split": ["a", "c"], "h_text": ["x", "z"], "rows_all": ["1", "3"]})}, ()),
    ("dictionary_encoded_label", lambda: {"default/train/0.parquet": pa.table({"text": ["a", "b"], "label": pa.array(["p", "q"]).dictionary_encode()}),
                                          "default/test/0.parquet": pa.table({"text": ["a", "b"], "label": pa.array(["p", "p"]).dictionary_encode()})},
     lambda: {"train": pa.table({"text": ["a", "b"], "label": ["p", "q"]}), "test": pa.table({"text": ["a", "b"], "label": ["p", "p"]})}, ()),
]


@pytest.mark.parametrize("files,expected,words", [pytest.param(f, e, w, id=i) for i, f, e, w in CASES])
@pytest.mark.slow
def test_adversarial_case(tmp_path, files, expected, words):
    folder = _write(tmp_path, files())
    if expected is None and words:
        with pytest.raises(SurveyError) as info:
            _rows(folder)
        message = str(info.value)
        assert "\n" not in message and DATASET in message and "[default" in message, message
        for word in words:
            assert word in message, message
        return
    rows = _rows(folder)
    if expected is None:  # measured; the reference reads the same files
        splits = {s: pq.read_table(p) for s, p in (("train", folder / "default/train/0.parquet"),
                                                 ("test", folder / "default/test/0.parquet"))}
    else:
        splits = expected()
    _check(rows, splits)


def test_a_hidden_folder_is_not_a_config(tmp_path):
    folder = _write(tmp_path, {"en/train/0.parquet": TRAIN, "en/test/0.parquet": TEST,
                               ".cache/test/0.parquet": TEST, ".git/test/0.parquet": TEST})
    assert FolderSource(folder).configs() == ["en"]


@pytest.mark.slow
def test_a_long_config_name_gets_a_fingerprint_path_within_limits(tmp_path):
    from hubsurvey.core.store import Store

    name = "c" * 240
    folder = _write(tmp_path, {f"{name}/train/0.parquet": TRAIN, f"{name}/test/0.parquet": TEST})
    from hubsurvey.survey.audit import audit

    outcome = audit(str(folder), db=tmp_path / "r.duckdb")
    assert not outcome.errors and outcome.rows
    with Store(tmp_path / "r.duckdb") as store:
        (path,) = store.query("SELECT DISTINCT path FROM fingerprints WHERE split = 'test'")[1][0]
    assert all(len(part.encode()) < 255 for part in path.split("/"))


@pytest.mark.slow
def test_a_token_inside_the_data_is_never_stored(tmp_path, monkeypatch):
    """The token as a value of the dataset (a leaked-credentials dataset): examples are stored scrubbed."""
    from hubsurvey.core.settings import register_token
    from hubsurvey.core.store import Store
    from hubsurvey.survey.audit import audit

    token = "hf_InsideTheRows_abcdef0123456789"
    monkeypatch.setenv("HF_TOKEN", token)
    register_token()  # as every command does at start: the settings' token is what the scrubber removes
    folder = _write(tmp_path, {"default/train/0.parquet": _table([token, token, "x"]),
                               "default/test/0.parquet": _table([token, "y"])})
    outcome = audit(str(folder), db=tmp_path / "r.duckdb", examples=5)
    assert outcome.rows and outcome.rows[0]["text_leaks_train_wrt_test"] == 1  # figures are the data's
    with Store(tmp_path / "r.duckdb") as store:
        keys = [r[0] for r in store.query("SELECT CAST(key AS VARCHAR) FROM examples")[1]]
    assert keys and all(token not in k for k in keys) and any("***" in k for k in keys)


@pytest.mark.slow
def test_a_token_in_a_config_folder_name_reaches_no_file_name(tmp_path, monkeypatch):
    from hubsurvey.core.settings import register_token
    from hubsurvey.core.store import Store
    from hubsurvey.survey.audit import audit

    token = "hf_InTheConfigName_abcdef0123456789"
    monkeypatch.setenv("HF_TOKEN", token)
    register_token()  # as every command does at start
    folder = _write(tmp_path, {f"x{token}/train/0.parquet": TRAIN, f"x{token}/test/0.parquet": TEST})
    db = tmp_path / "out" / "r.duckdb"
    db.parent.mkdir()
    audit(str(folder), db=db)
    written = [str(p) for p in db.parent.rglob("*")]
    assert written and not [p for p in written if token in p]
    with Store(db) as store:
        assert store.query("SELECT DISTINCT config FROM measurements")[1] == [("x***",)]


@pytest.mark.slow
def test_an_error_line_for_a_config_with_a_newline_stays_one_line(tmp_path):
    from typer.testing import CliRunner

    from hubsurvey.cli import app

    folder = _write(tmp_path, {"a\nb/train/0.parquet": TRAIN})
    result = CliRunner().invoke(app, ["audit", str(folder), "--db", str(tmp_path / "r.duckdb")])
    assert result.exit_code == 2
    (line,) = result.stderr.strip().splitlines()
    assert "a\\nb" in line
