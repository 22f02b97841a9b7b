"""Benchmarks from local files: a JSONL, a CSV and a Parquet eval set planted with items of a shared
config's test split, checked by `audit --benchmarks` against the plain-Python 13-gram reference; the
refusals (a path leaving the benchmarks file's folder, a missing file, an unknown column); a run,
`contamination` and every output searched for the private items; the results dataset's manifest
against plain SQL."""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pa_csv
import pyarrow.parquet as pq
import pytest
from conftest import benchmarks_file, standin_client
from test_contamination import _norm, reference, truth_of
from typer.testing import CliRunner

from hubsurvey.cli import app
from hubsurvey.core.errors import BadInputError, UsageError
from hubsurvey.core.store import Store
from hubsurvey.survey import contamination as c

SURVEYED = "cornell-movie-review-data__rotten_tomatoes"  # one config (default), one text column (text)
#: in every private item that is not a surveyed text: no output may hold it
SECRET = "zqxv7731 internal eval"
FILES = {"qa.jsonl": "local:qa", "qa-sheet.csv": "local:qa-sheet", "qa-table.parquet": "local:qa-table"}


@dataclass
class Plant:
    folder: Path  # the benchmarks file's folder
    toml: Path
    items: list[str]  # the raw items, in each file in this order
    secrets: list[str]  # items no surveyed split holds (whole strings to search for)


def plant_items(texts: list[str], secrets: int = 3) -> tuple[list[str], list[str]]:
    """Items from a split's texts: long texts behind a private preamble (they share every 13-gram of
    the text, never the preamble), a passage of 13 words cut from the middle of a text, a short
    text whole in upper case, and private items found nowhere."""
    long = [t for t in texts if len(t.split()) >= 20]
    short = [t for t in texts if 0 < len(t.split()) < 8]
    items = [f"{SECRET} preamble {n}: {t}" for n, t in enumerate(long[:40:4])]
    words = long[-1].split()
    items.append(" ".join(words[3:16]))
    items += [t.upper() for t in short[:2]]
    private = [f"{SECRET} private question {n} about the held out quarterly evaluation of our model" for n in range(secrets)]
    return items + private, private


def write_eval_files(folder: Path, items: list[str]) -> None:
    """The same items as JSONL, CSV (with a second column) and Parquet."""
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "qa.jsonl", "w", encoding="utf-8") as f:
        for n, item in enumerate(items):
            f.write(json.dumps({"question": item, "id": n}) + "\n")
    pa_csv.write_csv(pa.table({"id": list(range(len(items))), "question": items}), folder / "qa-sheet.csv")
    pq.write_table(pa.table({"question": items}), folder / "qa-table.parquet")


def local_toml(path: Path, files: list[str], column: str = "question", extra: str = "") -> Path:
    path.write_text("".join(f'[[benchmark]]\npath = "evals/{f}"\ntext_columns = ["{column}"]\n\n' for f in files) + extra)
    return path


@pytest.fixture(scope="module")
def plant(shared_datasets, tmp_path_factory) -> Plant:
    folder = tmp_path_factory.mktemp("bench")
    test = pq.read_table(shared_datasets / SURVEYED / "default" / "test").column("text").to_pylist()
    items, secrets = plant_items(test)
    write_eval_files(folder / "evals", items)
    return Plant(folder, local_toml(folder / "benchmarks.toml", list(FILES)), items, secrets)


def split_rows(root: Path, split: str) -> list[list]:
    return [[v] for v in pq.read_table(root / SURVEYED / "default" / split).column("text").to_pylist()]


@pytest.fixture(scope="module")
def audited(plant, shared_datasets, tmp_path_factory) -> tuple[Path, str]:
    db = tmp_path_factory.mktemp("db") / "r.duckdb"
    result = CliRunner().invoke(app, ["audit", str(shared_datasets / SURVEYED), "--no-near", "--benchmarks",
                                      str(plant.toml), "--db", str(db)])
    return db, result.output


# --- the check ------------------------------------------------------------------------------------------

@pytest.mark.slow
def test_a_local_entry_is_a_local_benchmark_named_after_its_file(plant):
    benchmarks = c.load_benchmarks(plant.toml)
    assert [b.id for b in benchmarks] == list(FILES.values())
    assert all(b.is_local and (b.config, b.split) == ("default", "test") for b in benchmarks)
    assert [Path(b.path or "") for b in benchmarks] == [(plant.folder / "evals" / f).resolve() for f in FILES]
    assert not any(b.is_local for b in c.load_benchmarks())  # the shipped list: Hub benchmarks


@pytest.mark.slow
def test_audit_checks_jsonl_csv_and_parquet_as_the_reference(plant, audited, shared_datasets):
    db, output = audited
    with Store(db, read_only=True) as store:
        rows = store.records("SELECT * FROM contamination ORDER BY benchmark_id, split")
        indexed = store.records("SELECT * FROM benchmarks ORDER BY benchmark_id")
    # the revision is the file's sha256, the items all of its rows
    shas = {FILES[f]: hashlib.sha256((plant.folder / "evals" / f).read_bytes()).hexdigest() for f in FILES}
    assert {b["benchmark_id"]: b["revision_sha"] for b in indexed} == shas
    assert {b["items"] for b in indexed} == {len(plant.items)} and {b["status"] for b in indexed} == {"indexed"}
    assert {r["benchmark_revision"] for r in rows} == set(shas.values()) and len(rows) == 3 * 3
    items = [_norm(i) for i in plant.items]
    truth = {s: len(reference(items, split_rows(shared_datasets, s))) for s in ("train", "validation", "test")}
    assert {(r["benchmark_id"], r["split"]): r["contaminated_rows"] for r in rows} == {
        (b, s): n for b in FILES.values() for s, n in truth.items()}
    assert truth["test"] >= 13  # the planted items: 10 long texts, a passage, 2 short texts (more when repeated)
    for r in rows:  # each row's examples: the surveyed passage, the item's index, never the item
        for e in json.loads(r["examples"]):
            assert set(e) == {"position", "item", "match", "passage"} and isinstance(e["item"], int)
            assert SECRET not in e["passage"] and e["match"] in ("13-gram", "whole")
    assert f"against local:qa [default/test] @ {shas['local:qa'][:12]}: {truth['test']} of 1066 rows" in output


@pytest.mark.slow
def test_the_manifest_is_the_checks_as_plain_sql_says(audited, tmp_path):
    from hubsurvey.analysis.checks_manifest import CHECKS_MANIFEST_PATH
    from hubsurvey.analysis.export import export_results

    db, _ = audited
    with Store(db, read_only=True) as store:
        export_results(store, tmp_path / "out")
        sums = store.records("SELECT dataset_id, benchmark_id, benchmark_config, benchmark_split, benchmark_revision, "
                             "sum(contaminated_rows) AS n, sum(rows_split) AS rows FROM contamination "
                             "GROUP BY ALL ORDER BY ALL")
    (manifest,) = [json.loads(line) for line in (tmp_path / "out" / CHECKS_MANIFEST_PATH).read_text().splitlines()]
    assert manifest["dataset_id"] == "cornell-movie-review-data/rotten_tomatoes"

    def entries(key: str) -> list[tuple]:
        return [(manifest["dataset_id"], e["benchmark_id"], e["benchmark_config"], e["benchmark_split"], e["revision"],
                 e["contaminated_rows"], e["rows_checked"]) for e in manifest[key]]

    assert entries("contamination_checks_failed") == [tuple(r.values()) for r in sums if r["n"] > 0]
    assert entries("contamination_checks_passed") == [tuple(r.values()) for r in sums if r["n"] == 0]
    assert manifest["contamination_checks_failed"] and manifest["contamination_checks_not_run"] == []
    assert json.loads((tmp_path / "out" / ".hubsurvey-export.json").read_text())["files"].count(CHECKS_MANIFEST_PATH) == 1


@pytest.mark.slow
def test_no_output_of_an_audit_holds_a_private_item(plant, audited, tmp_path):
    from hubsurvey.analysis.publish import build_folder
    from hubsurvey.analysis.report import render_report

    db, output = audited
    with Store(db, read_only=True) as store:
        outputs = {"db": _every_text(store), "audit": output}
        build_folder(store, tmp_path / "publish", "me/results")
        render_report(store, tmp_path / "report")
    outputs |= {str(p): p.read_text(encoding="utf-8", errors="replace") for p in tmp_path.rglob("*") if p.is_file()}
    assert len(outputs) > 8 and "local:qa" in outputs["db"] and any("local:qa" in t for t in outputs.values() if t != outputs["db"])
    for where, text in outputs.items():
        assert SECRET not in text and not any(s in text for s in plant.secrets), where


# --- refusals ---------------------------------------------------------------------------------------------

@pytest.fixture
def evals(tmp_path) -> Path:
    """A benchmarks file's folder with its eval files, beside a file outside it."""
    folder = tmp_path / "benchmarks"
    write_eval_files(folder / "evals", ["one item of a private eval set", "another item"])
    (tmp_path / "outside.jsonl").write_text('{"question": "outside"}\n')
    (folder / "evals" / "link.jsonl").symlink_to(tmp_path / "outside.jsonl")
    return folder


@pytest.mark.slow
@pytest.mark.parametrize("entry, cause", [
    ('path = "../outside.jsonl"', "goes up with '..'"),
    ('path = "evals/../../outside.jsonl"', "goes up with '..'"),
    ('path = "/etc/passwd.jsonl"', "an absolute path"),
    ('path = "evals/link.jsonl"', "leaves the benchmarks file's folder (through a symlink)"),
    ('path = "evals/qa.txt"', "unknown format '.txt'"),
    ('path = "evals/qa.jsonl"\nname = "a/b"', "'a/b' is not a plain name"),
    ('path = "evals/qa.jsonl"\nid = "x/y"', "takes path, text_columns and name, not id"),
    ('path = "evals/qa-table.parquet"\nname = "qa"', "local:qa/default/test is listed twice"),
    ('id = "local:qa"\nconfig = "default"\nsplit = "test"', "'local:qa' names a local benchmark: give its file with path"),
])
def test_a_path_out_of_the_folder_refuses_the_file_before_anything_runs(evals, entry, cause, shared_datasets):
    toml = evals / "b.toml"
    toml.write_text(f'[[benchmark]]\npath = "evals/qa.jsonl"\ntext_columns = ["question"]\n\n'
                    f'[[benchmark]]\n{entry}\ntext_columns = ["question"]\n')
    with pytest.raises(BadInputError, match=r"benchmark 2\b.*" + re.escape(cause)):
        c.load_benchmarks(toml)
    db = evals / "r.duckdb"
    for args in (["audit", str(shared_datasets / SURVEYED)], ["run", "--no-crossleaks"]):
        result = CliRunner().invoke(app, [*args, "--benchmarks", str(toml), "--db", str(db)])
        assert result.exit_code == 2, result.output
        (line,) = [x for x in result.output.splitlines() if x.startswith("error:")]
        assert "benchmark 2" in line and cause in line
        assert not db.exists()  # refused before the DB is touched


def test_local_benchmarks_never_go_to_a_cluster(evals):
    from hubsurvey.commands.survey import RUN

    toml = local_toml(evals / "b.toml", ["qa.jsonl"])
    with pytest.raises(UsageError, match=r"local benchmarks \(local:qa\) never leave this machine"):
        RUN.value({"executor": "dask", "dask": "tcp://127.0.0.1:1", "benchmarks": str(toml)})
    assert RUN.value({"benchmarks": str(toml)}).benchmarks == str(toml)


@pytest.mark.slow
def test_a_benchmark_that_cannot_be_read_fails_alone(evals, shared_datasets):
    evals_dir = evals / "evals"
    (evals_dir / "broken.csv").write_text(f"question,x\nfine,1\n{SECRET} leaked,in,an,error\n")
    (evals_dir / "empty.jsonl").write_text("")
    os.mkfifo(evals_dir / "pipe.jsonl")  # never read: a FIFO is no regular file (and would block)
    toml = local_toml(evals / "b.toml", ["qa.jsonl", "missing.parquet", "broken.csv", "empty.jsonl", "pipe.jsonl"])
    toml.write_text(toml.read_text() + '[[benchmark]]\npath = "evals/qa-table.parquet"\ntext_columns = ["prompt"]\n')
    db = evals / "r.duckdb"
    result = CliRunner().invoke(app, ["audit", str(shared_datasets / "CogComp__trec"), "--no-near", "--benchmarks",
                                      str(toml), "--db", str(db)])
    assert result.exit_code == 1, result.output  # partial: measured, some benchmarks not
    errors = [x for x in result.output.splitlines() if x.startswith("error:")]
    assert errors == [
        "error: benchmark local:broken: broken.csv is not valid CSV (CSV parse error: Expected 2 columns, got 4)",
        "error: benchmark local:empty: empty.jsonl is not valid JSONL (Empty JSON file)",
        "error: benchmark local:missing: no such file missing.parquet",
        "error: benchmark local:pipe: pipe.jsonl is not a regular file",
        "error: benchmark local:qa-table: no column prompt in qa-table.parquet (has: question)",
    ]
    assert SECRET not in result.output
    with Store(db, read_only=True) as store:
        status = dict(store.query("SELECT benchmark_id, status FROM benchmarks")[1])
        checked = store.query("SELECT DISTINCT benchmark_id FROM contamination")[1]
        messages = " ".join(r[0] for r in store.query("SELECT error_message FROM benchmarks WHERE status = 'failed'")[1])
    assert status == {"local:qa": "indexed", **{f"local:{n}": "failed" for n in ("missing", "broken", "empty", "pipe", "qa-table")}}
    assert checked == [("local:qa",)] and SECRET not in messages and str(evals) not in messages
    # in the results dataset's manifest, a benchmark that could not be indexed is neither passed nor failed
    from hubsurvey.analysis.checks_manifest import checks_manifest

    with Store(db, read_only=True) as store:
        (manifest,) = checks_manifest(store)
    assert [e["benchmark_id"] for e in manifest["contamination_checks_passed"]] == ["local:qa"]
    assert manifest["contamination_checks_failed"] == []
    not_run = {e["benchmark_id"]: e["reason"] for e in manifest["contamination_checks_not_run"]}
    assert not_run["local:missing"] == "not indexed: benchmark local:missing: no such file missing.parquet"
    assert set(not_run) == set(status) - {"local:qa"}


@pytest.mark.slow
def test_the_command_exits_partial_when_a_local_benchmark_cannot_be_read(evals):
    db = evals / "r.duckdb"
    Store(db).close()
    toml = local_toml(evals / "b.toml", ["qa.jsonl", "gone.jsonl"])
    result = CliRunner().invoke(app, ["contamination", "--benchmarks", str(toml), "--db", str(db)],
                                env={"HF_ENDPOINT": "http://127.0.0.1:9"})  # never asked: both are local
    assert result.exit_code == 1, result.output
    assert "local:qa [default/test] @ " in result.output
    assert [x for x in result.output.splitlines() if x.startswith("error:")] == [
        "error: benchmark local:gone: no such file gone.jsonl"]
    with Store(db, read_only=True) as store:
        (run,) = store.records("SELECT status FROM runs WHERE command = 'contamination'")
    assert run["status"] == "done"  # the check ran; the benchmark's failure is its own row


@pytest.mark.slow
def test_a_file_swapped_for_a_symlink_after_loading_is_refused(evals, tmp_path):
    (bench,) = c.load_benchmarks(local_toml(evals / "b.toml", ["qa.jsonl"]))
    assert c.index_local(bench).items == ["one item of a private eval set", "another item"]
    (evals / "evals" / "qa.jsonl").unlink()
    (evals / "evals" / "qa.jsonl").symlink_to(tmp_path / "outside.jsonl")
    with pytest.raises(BadInputError, match=r"local:qa: qa\.jsonl changed into a symlink"):
        c.index_local(bench)


def test_a_run_prints_each_benchmark_it_could_not_index_and_exits_partial():
    from hubsurvey.pipeline import RunSummary

    line = "benchmark local:qa: no such file qa.jsonl"
    summary = RunSummary("run-1", "done", steps={"measure": {"done": 1}, "benchmarks": {"not_indexed": [line]}})
    assert summary.lines()[-1] == f"error: {line}" and summary.partial
    clean = RunSummary("run-1", "done", steps={"measure": {}, "benchmarks": {}})
    assert not any(x.startswith("error:") for x in clean.lines()) and not clean.partial


# --- a run, the command, every output -------------------------------------------------------------------

def _every_text(store: Store) -> str:
    """Every value of every table and view of the DB, as text."""
    names = [r[0] for r in store.query("SELECT table_name FROM information_schema.tables "
                                       "WHERE table_schema = 'main' ORDER BY ALL")[1]]
    out = []
    for name in names:
        out.append(json.dumps(store.query(f'SELECT * FROM "{name}"')[1], default=str, ensure_ascii=False))
    return "\n".join(out)


@pytest.mark.slow
def test_a_run_and_the_command_keep_the_private_items_on_the_machine(tmp_path, caplog, monkeypatch):
    """A run through the stand-in with a local benchmark beside the mini-hub's Hub benchmarks, then
    `contamination --recheck`, the report, the export and the publish folder: the counts equal the
    reference, and no output (the DB's every table and view, its file, the report, the results
    dataset, the logs, the command's output, the run's scratch) holds a private item."""
    import logging
    import tempfile

    from hubsurvey.analysis.checks_manifest import CHECKS_MANIFEST_PATH
    from hubsurvey.analysis.publish import build_folder
    from hubsurvey.pipeline import RunOptions, run_survey
    from hubsurvey.survey.sources import FolderSource
    from hubsurvey_standin import StandinHub, generate_minihub

    caplog.set_level(logging.DEBUG)
    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))  # the run's scratch, to look at afterwards
    minihub = generate_minihub(tmp_path / "hub", seed=0)
    truth = truth_of(minihub)
    contexts = pq.read_table(minihub / "mini-nlp__qa_small" / "default" / "test").column("context").to_pylist()
    items, secrets = plant_items(contexts)
    write_eval_files(tmp_path / "bench" / "evals", items)
    toml = benchmarks_file(tmp_path / "bench" / "benchmarks.toml", truth["benchmarks"])
    toml.write_text(toml.read_text() + '[[benchmark]]\npath = "evals/qa.jsonl"\ntext_columns = ["question"]\n')
    db, report = tmp_path / "r.duckdb", tmp_path / "report"
    with StandinHub(minihub) as hub:
        client = standin_client(hub, tmp_path / "cache")
        summary = run_survey(db, client, None, RunOptions(workers=2, benchmarks=str(toml), report_dir=str(report)))
        assert summary.status == "done" and summary.failed == 0
        result = CliRunner().invoke(app, ["contamination", "--benchmarks", str(toml), "--recheck", "--rate", "0",
                                          "--file-rate", "0", "--db", str(db)],
                                    env={"HF_ENDPOINT": hub.url, "HUBSURVEY_CACHE_DIR": str(tmp_path / "cache2")})
    assert result.exit_code == 0, result.output
    assert "local:qa [default/test] @ " + hashlib.sha256((tmp_path / "bench/evals/qa.jsonl").read_bytes()).hexdigest()[:12] in result.output
    with Store(db) as store:
        stored = store.records("SELECT * FROM contamination WHERE benchmark_id = 'local:qa'")
        every = _every_text(store)
        published = build_folder(store, tmp_path / "publish", "me/results")
    # the counts: the plain-Python reference over the mini-hub's folders
    normalized = [_norm(i) for i in items]
    columns = {(m["dataset_id"], m["config"]): m["text_columns"] for m in truth["measurements"]}
    for r in stored:
        split = FolderSource(minihub / r["dataset_id"].replace("/", "__"), r["dataset_id"]).load(r["config"]).splits[r["split"]]
        rows = [list(x.values()) for x in pq.read_table(list(split.files), columns=columns[(r["dataset_id"], r["config"])]).to_pylist()]
        assert r["contaminated_rows"] == len(reference(normalized, rows)), (r["dataset_id"], r["split"])
    assert sum(r["contaminated_rows"] for r in stored) > 0 and {r["dataset_id"] for r in stored} >= {"mini-nlp/qa_small"}
    # the manifest: the local benchmark failed where its rows are contaminated, with its revision
    manifest = {m["dataset_id"]: m for m in map(json.loads, (tmp_path / "publish" / CHECKS_MANIFEST_PATH).read_text().splitlines())}
    hit = {r["dataset_id"] for r in stored if r["contaminated_rows"]}
    for dataset_id, m in manifest.items():
        failed = {e["benchmark_id"] for e in m["contamination_checks_failed"]}
        assert ("local:qa" in failed) == (dataset_id in hit)
    assert CHECKS_MANIFEST_PATH in [f.path_in_repo for f in published]
    # no output holds a private item, nor any item's private preamble
    outputs = {"db": every, "db file": db.read_bytes().decode("utf-8", "replace"), "command": result.output,
               "logs": "\n".join(r.getMessage() for r in caplog.records)}
    for folder in (report, tmp_path / "publish"):
        outputs |= {str(p): p.read_text(encoding="utf-8", errors="replace") for p in folder.rglob("*") if p.is_file()}
    assert len(outputs) > 8
    for where, text in outputs.items():
        assert SECRET not in text and not any(s in text for s in secrets), where
    assert not list((tmp_path / "tmp").glob("hubsurvey-run-*"))  # the run's saved index went with its scratch
