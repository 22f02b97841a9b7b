"""Hostile layouts and column names: one split in two layouts is refused in one line (never counted
twice), nested shards are measured, and any column name a dataset can have is measurable.

Every measured case is checked against the plain-Python reference (``lle_reference``)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from test_hostile_data import _check

from hubsurvey.core.errors import BadInputError
from hubsurvey.core.hub import RepoFile
from hubsurvey.core.queue import JobSettings, QueuedJob
from hubsurvey.core.splits import branch_layouts, file_layout, folder_layout
from hubsurvey.survey.jobs import JobSpec, run_job
from hubsurvey.survey.measure import measure_config
from hubsurvey.survey.sources import FolderSource, HubSource

DATASET = "hostile/ds"
TRAIN = pa.table({"text": ["a", "b", "b", "c"], "label": [0, 1, 1, 0]})
TEST = pa.table({"text": ["a", "d"], "label": [0, 1]})


def _folder(tmp_path: Path, files: dict[str, pa.Table]) -> Path:
    """``files``: path inside the config folder -> table."""
    root = tmp_path / DATASET.replace("/", "__")
    for relative, table in files.items():
        path = root / "default" / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(table, path)
    return root


def _rows(root: Path) -> list[dict]:
    return measure_config(FolderSource(root).load("default"), n_configs=1, source="folder").rows


def _refused(root: Path) -> str:
    with pytest.raises(BadInputError) as info:
        FolderSource(root).load("default")
    return str(info.value)


# --- one split in two layouts ---------------------------------------------------------------

TWO_LAYOUTS = [
    ("folder_and_file", {"test/0000.parquet": TEST, "test.parquet": TEST}, "test.parquet, test/"),
    ("full_and_partial", {"test/0000.parquet": TEST, "partial-test/0000.parquet": TEST}, "partial-test/, test/"),
    ("file_and_shards", {"test.parquet": TEST, "test-00000-of-00001.parquet": TEST},
     "test-*-of-00001.parquet, test.parquet"),
    ("two_shard_sets", {"test-00000-of-00001.parquet": TEST, "test-00000-of-00002.parquet": TEST,
                        "test-00001-of-00002.parquet": TEST}, "test-*-of-00001.parquet, test-*-of-00002.parquet"),
    ("train_in_two", {"train/0000.parquet": TRAIN, "train.parquet": TRAIN, "test.parquet": TEST}, "train.parquet, train/"),
    ("partial_folder_and_file", {"partial-test/0000.parquet": TEST, "test.parquet": TEST}, "partial-test/, test.parquet"),
]


@pytest.mark.parametrize("files,named", [pytest.param(f, n, id=i) for i, f, n in TWO_LAYOUTS])
def test_a_split_in_two_layouts_is_refused_in_one_line(tmp_path, files, named):
    has_train = any(path.startswith("train") for path in files)
    message = _refused(_folder(tmp_path, files if has_train else {"train/0000.parquet": TRAIN, **files}))
    assert "\n" not in message and message.startswith(f"{DATASET} [default]: split ")
    assert f"layouts ({named})" in message and "twice" in message


@pytest.mark.slow
def test_two_layouts_of_one_split_are_never_both_counted_in_audit(tmp_path):
    from hubsurvey.survey.audit import audit

    root = _folder(tmp_path, {"train/0000.parquet": TRAIN, "test/0000.parquet": TEST, "test.parquet": TEST})
    outcome = audit(str(root), db=tmp_path / "r.duckdb")
    assert not outcome.rows and len(outcome.errors) == 1 and "2 layouts" in str(outcome.errors[0])
    assert outcome.exit_code == 2


@pytest.mark.slow
@pytest.mark.parametrize("files", [
    {"test-part0/0000.parquet": TEST, "test-part1/0000.parquet": TEST},  # one export cut in parts
    {"partial-test/0000.parquet": TEST},  # a partial export alone
    {"test-00000-of-00002.parquet": TEST, "test-00001-of-00002.parquet": TEST},  # one sharded export
], ids=["parts_of_one_export", "partial_alone", "one_shard_set"])
def test_one_export_in_several_files_is_measured_once(tmp_path, files):
    root = _folder(tmp_path, {"train/0000.parquet": TRAIN, **files})
    rows = _rows(root)
    tests = list(files.values())
    assert rows[0]["rows_test"] == sum(t.num_rows for t in tests)
    _check(rows, {"train": TRAIN, "test": tests})


def test_layout_names():
    assert folder_layout("train-part3") == "train/" and folder_layout("partial-train") == "partial-train/"
    assert file_layout("test-00001-of-00004") == "test-*-of-00004.parquet" and file_layout("test") == "test.parquet"
    assert branch_layouts(["c/test/0.parquet", "c/partial-test/0.parquet", "c/test-part1/0.parquet"]) == {
        "test": ["test/", "partial-test/", "test/"]}


class _BranchClient:
    """The Parquet branch of one dataset, from local files: what HubSource asks a HubClient."""

    endpoint = "http://stand-in"

    def __init__(self, files: dict[str, Path]):
        self.files = files
        self.downloads: list[str] = []

    def parquet_tree(self, repo_id, revision="refs/convert/parquet"):
        return [RepoFile(p, f.stat().st_size) for p, f in self.files.items()]

    def dataset_info(self, repo_id, revision=None):
        return type("Info", (), {"sha": "1" * 40})()

    def parquet_sha(self, repo_id):
        return "2" * 40

    def download(self, repo_id, path, revision):
        self.downloads.append(path)
        return self.files[path]


def _branch(tmp_path: Path, files: dict[str, pa.Table]) -> _BranchClient:
    out = {}
    for relative, table in files.items():
        local = tmp_path / "branch" / relative
        local.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(table, local)
        out[relative] = local
    return _BranchClient(out)


def test_the_hub_path_refuses_full_and_partial_exports_of_one_split_before_downloading(tmp_path):
    client = _branch(tmp_path, {"default/train/0000.parquet": TRAIN, "default/test/0000.parquet": TEST,
                                "default/partial-test/0000.parquet": TEST})
    with pytest.raises(BadInputError, match=r"split 'test' is stored in 2 layouts \(partial-test/, test/\)"):
        HubSource(DATASET, client).load("default")
    assert client.downloads == []


def test_a_job_refuses_full_and_partial_exports_of_one_split(tmp_path):
    """The run path: the crawl's file list reaches the worker, which refuses it as bad input."""
    client = _branch(tmp_path, {"default/test/0000.parquet": TEST, "default/partial-test/0000.parquet": TEST})
    files = {"test": sorted(client.files)}
    spec = JobSpec(QueuedJob("j", DATASET, "1" * 40, "default", 1, files), JobSettings(keep_cache=True),
                   local_files={"test": [str(client.files[p]) for p in files["test"]]})
    outcome = run_job(spec)
    assert not outcome.ok and outcome.error_class == "bad_input" and not outcome.transient
    assert "2 layouts" in outcome.message


# --- nested shards -------------------------------------------------------------------------------

@pytest.mark.slow
def test_nested_shards_in_a_folder_are_measured(tmp_path):
    train_parts = [TRAIN.slice(0, 2), TRAIN.slice(2)]
    root = _folder(tmp_path, {"train/part-0/0000.parquet": train_parts[0], "train/part-1/0000.parquet": train_parts[1],
                              "test/0000.parquet": TEST})
    rows = _rows(root)
    assert rows[0]["rows_train"] == 4 and rows[0]["train_split"] == "train"
    _check(rows, {"train": train_parts, "test": TEST})


@pytest.mark.slow
def test_nested_and_flat_shards_of_one_split_are_all_measured(tmp_path):
    root = _folder(tmp_path, {"train/0000.parquet": TRAIN.slice(0, 1), "train/deep/er/0001.parquet": TRAIN.slice(1),
                              "test/a/0000.parquet": TEST})
    rows = _rows(root)
    assert (rows[0]["rows_train"], rows[0]["rows_test"]) == (4, 2)
    _check(rows, {"train": [TRAIN.slice(0, 1), TRAIN.slice(1)], "test": TEST})


@pytest.mark.slow
def test_nested_shards_on_the_hub_path_are_downloaded_and_measured(tmp_path):
    client = _branch(tmp_path, {"default/train/part-0/0000.parquet": TRAIN, "default/test/0000.parquet": TEST})
    data = HubSource(DATASET, client).load("default")
    assert sorted(client.downloads) == ["default/test/0000.parquet", "default/train/part-0/0000.parquet"]
    rows = measure_config(data, n_configs=1, source="hub").rows
    assert rows[0]["rows_train"] == 4
    _check(rows, {"train": TRAIN, "test": TEST})


@pytest.mark.slow
def test_the_crawl_resolves_nested_shards_and_the_run_measures_them(tmp_path):
    from hubsurvey.core.hub import HubClient
    from hubsurvey.core.store import Store
    from hubsurvey.pipeline import RunOptions, run_survey
    from hubsurvey_standin import StandinHub
    from hubsurvey_standin.catalog import write_hub_root

    root = write_hub_root(tmp_path / "hub", {"nest/ds": {"default/train/part-0/0000.parquet": TRAIN,
                                                         "default/test/0000.parquet": TEST}})
    with StandinHub(root) as hub:
        client = HubClient(endpoint=hub.url, token=False, rate=None, file_rate=None, cache_dir=tmp_path / "c", max_wait=0.05)
        summary = run_survey(tmp_path / "r.duckdb", client, None, RunOptions(workers=1))
    assert summary.failed == 0
    with Store(tmp_path / "r.duckdb") as store:
        (row,) = store.records("SELECT * FROM current_measurements")
    assert row["rows_train"] == 4
    _check([row], {"train": TRAIN, "test": TEST})


# --- any column name is measurable --------------------------------------------------------------

ODD_NAMES = ["file_row_number", "FILE_ROW_NUMBER", "filename", "file_index", "pos", "frn", "c0", "rowid",
             'say "hi"', "it's", "  spaced  ", "ÜñÎçødé 文字", "x" * 300, "\x1b]0;title\x07", "select", "*"]


@pytest.mark.slow
@pytest.mark.parametrize("name", ODD_NAMES,
                         ids=lambda n: repr(n)[:24])
@pytest.mark.parametrize("role", ["text", "extra"])
def test_any_column_name_is_measured(tmp_path, name, role):
    """The odd name is the text column, or an extra column beside it (which DuckDB still reads)."""
    def table(texts):
        columns = {name: texts} if role == "text" else {"text": texts, name: [f"{t}!" for t in texts]}
        return pa.table(columns)

    train, test = table(["a", "b", "b", "c"]), table(["b", "d"])
    rows = _rows(_folder(tmp_path, {"train/0000.parquet": train, "test/0000.parquet": test}))
    _check(rows, {"train": train, "test": test})
    assert rows[0]["text_leaks_train_wrt_test"] == 1
