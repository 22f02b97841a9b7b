"""Contamination with benchmarks (bench-2026): the benchmarks file, the index through the stand-in,
the planted truth of the mini-hub, false candidates never reported, a plain-Python reference on the
shared datasets, the run and the `contamination` command, and the scan as Dask tasks."""

from __future__ import annotations

import json
import unicodedata
from pathlib import Path

import pyarrow as pa
import pytest
from conftest import benchmarks_file, standin_client
from typer.testing import CliRunner

from hubsurvey.cli import app
from hubsurvey.core.errors import BadInputError
from hubsurvey.core.roles import resolve_roles
from hubsurvey.core.store import Store
from hubsurvey.survey import contamination as c
from hubsurvey.survey.sources import FolderSource, check_config
from hubsurvey_standin import StandinHub


def truth_of(minihub: Path) -> dict:
    return json.loads((minihub / "truth.json").read_text())


def counts(rows: list[dict]) -> dict[tuple, int]:
    return {(r["dataset_id"], r["config"], r["split"], r["benchmark_id"], r["benchmark_config"], r["benchmark_split"]):
            r["contaminated_rows"] for r in rows}


def text_columns(truth: dict) -> dict[tuple[str, str], list[str]]:
    return {(m["dataset_id"], m["config"]): m["text_columns"] for m in truth["measurements"]}


def scan_minihub(minihub: Path, index: c.BenchmarkIndex, truth: dict) -> list[dict]:
    rows = []
    for (dataset_id, config), columns in sorted(text_columns(truth).items()):
        data = FolderSource(minihub / dataset_id.replace("/", "__"), dataset_id).load(config)
        rows += c.config_rows(data, columns, index)
    return rows


@pytest.fixture(scope="module")
def hub_index(minihub, tmp_path_factory) -> c.BenchmarkIndex:
    """The mini-hub's benchmarks indexed through the stand-in, as a run does."""
    benchmarks = c.load_benchmarks(benchmarks_file(tmp_path_factory.mktemp("b") / "b.toml", truth_of(minihub)["benchmarks"]))
    with StandinHub(minihub) as hub:
        client = standin_client(hub, tmp_path_factory.mktemp("cache"))
        index, failed = c.index_from_hub(benchmarks, client)
        shas = {b.id: client.dataset_info(b.id).sha for b in benchmarks}
    assert not failed
    assert [b.revision_sha for b in index.benchmarks] == [shas[b.id] for b in benchmarks]  # revisions recorded
    return index


# --- the benchmarks file ------------------------------------------------------------------------------

def test_the_default_benchmarks_file_names_widely_used_benchmarks():
    shipped = c.load_benchmarks()
    keys = {b.key for b in shipped}
    assert "openai/gsm8k/main/test" in keys and "cais/mmlu/all/test" in keys
    assert {"Rowan/hellaswag", "allenai/ai2_arc", "truthfulqa/truthful_qa", "openai/openai_humaneval",
            "allenai/winogrande"} <= {b.id for b in shipped}
    assert all(b.text_columns for b in shipped)
    gsm8k = next(b for b in shipped if b.id == "openai/gsm8k")
    assert gsm8k.text_columns == ("question",)


@pytest.mark.parametrize("text, message", [
    ("", "no [[benchmark]] table"),
    ("[[benchmark]]\nid = 'a/b'\nconfig = 'c'\nsplit = 'test'\n", "missing text_columns"),
    ("[[benchmark]]\nid = 'a/b'\nconfig = '../x'\nsplit = 'test'\ntext_columns = ['q']\n", "plain name"),
    ("[[benchmark]]\nid = 'a/b'\nconfig = 'c'\nsplit = 'test'\ntext_columns = []\n", "non-empty list"),
    ("[[benchmark\n", "not valid TOML"),
])
def test_a_bad_benchmarks_file_is_one_line(tmp_path, text, message):
    path = tmp_path / "b.toml"
    path.write_text(text)
    with pytest.raises(BadInputError, match=message.replace("[", r"\[")):
        c.load_benchmarks(path)


# --- the engine on small cases --------------------------------------------------------------------------

ITEMS = ["Natalia sold clips to 48 of her friends in April, and then she sold half as many clips in May.",
         "What is two plus two", "Ünïcode Straße ﬁne words here"]


def small_index(hash_bits: int = 64) -> c.BenchmarkIndex:
    return c.index_from_tables([(c.Benchmark("x/bench", "main", "test", ("q",)), "r1", pa.table({"q": ITEMS}))],
                               hash_bits=hash_bits)


@pytest.mark.slow
def test_passages_and_short_items_are_found_case_and_whitespace_aside():
    rows = ["blah NATALIA sold clips to 48\tof her  friends in april, and then she sold more",  # 13 words: a passage
            "natalia sold clips to 48 of her friends in april, and then",  # 12 words of a long item: not enough
            " WHAT is two\nplus two ",  # a short item, whole
            "so what is two plus two",  # a short item inside a longer text: not whole
            "ünïcode strasse fine words here",  # casefold ß -> ss, NFKC ﬁ -> fi
            None, ""]
    (found,) = c.scan([pa.array(rows)], small_index())
    assert found.rows == {0, 2, 4}
    ex = found.summary()["examples"]
    assert [(e["position"], e["item"], e["match"]) for e in ex] == [(0, 0, "13-gram"), (2, 1, "whole"), (4, 2, "whole")]
    assert ex[0]["passage"] == "natalia sold clips to 48 of her friends in april, and then she"


@pytest.mark.slow
def test_a_passage_across_two_rows_or_two_items_is_not_a_match():
    words = ITEMS[0].split()
    rows = [" ".join(words[:7]), " ".join(words[7:13])]  # 13 words, split over two consecutive rows
    (found,) = c.scan([pa.array(rows)], small_index())
    assert found.rows == set()
    # the index holds no window across two items: the end of one and the start of the next
    index = c.index_from_tables([(c.Benchmark("x/b", "c", "test", ("q",)), None,
                                  pa.table({"q": [" ".join(["alpha"] * 13), " ".join(["beta"] * 13)]}))])
    (found,) = c.scan([pa.array([" ".join(["alpha"] * 6 + ["beta"] * 7)])], index)
    assert found.rows == set()


@pytest.mark.slow
def test_list_struct_and_multi_column_rows():
    index = small_index()
    tokens = pa.array([ITEMS[0].split(), ["what", None, "is"], None])
    other = pa.array(["what is two plus two", "x", "y"])
    (found,) = c.scan([tokens, other], index)
    # row 0: the tokens hold the passage; row 0's second column is a short item on its own too
    assert found.rows == {0}
    structs = pa.array([{"a": "What is", "b": "two plus two"}, {"a": None, "b": "no"}])
    (found,) = c.scan([structs], index)
    assert found.rows == {0}


def test_words_are_the_normalized_profile_split():
    from hubsurvey.survey.normalize import normalize_text

    hostile = ["a\x1cb", "tab\tsep", "\uff26\uff35\uff2c\uff2c width", "İstanbul", "ǅ titlecase", "x\u00a0y", "\u2028line", "",
               "emoji 😍 ok", "  lead", "trail  ", "ß", "a\u200bb", "MiXeD CaSe"]
    want = [normalize_text(s).split() for s in hostile]
    assert c.words(pa.array(hostile)).to_pylist() == want
    assert c.words(pa.array(hostile, pa.large_string())).to_pylist() == want
    assert c.words(pa.array(["x", *hostile]).slice(1)).to_pylist() == want  # a slice: its own bytes only
    assert c.words(pa.array(["plain", "words only"])).to_pylist() == [["plain"], ["words", "only"]]


def test_fnv1a_is_the_published_function():
    assert c.fnv1a("a") == 0xAF63DC4C8601EC8C  # FNV-1a's published 64-bit value for "a"
    assert c.fnv1a("") == 0xCBF29CE484222325  # the offset basis


@pytest.mark.slow
def test_false_candidates_are_never_reported():
    """A candidate stage with a very high false-positive rate (the join keeps 4 bits of each hash:
    1 in 16 windows is a candidate): every candidate is verified, the results are identical."""
    rows = pa.array([f"row {i} " + ITEMS[0] if i % 7 == 0 else f"unrelated words number {i} " * 10
                     for i in range(300)] + ["what is two plus two", "what is two plus three"])
    exact = c.scan([rows], small_index())
    weak = c.scan([rows], small_index(hash_bits=4))
    assert [f.summary()["examples"] for f in weak] == [f.summary()["examples"] for f in exact]
    assert [f.rows for f in weak] == [f.rows for f in exact] and exact[0].rows
    assert weak[0].candidates - weak[0].verified > 5 * weak[0].verified  # many false candidates, all rejected
    assert exact[0].candidates == exact[0].verified  # with 64 bits: none


@pytest.mark.slow
def test_the_index_saves_and_loads_the_same(tmp_path):
    index = small_index()
    loaded = c.BenchmarkIndex.load(index.save(tmp_path / "index"))
    assert loaded.describe() == index.describe()
    assert loaded.grams.equals(index.grams) and loaded.shorts.equals(index.shorts)


# --- the mini-hub's planted truth ---------------------------------------------------------------------

def test_the_planted_contamination_equals_truth(minihub, hub_index):
    truth = truth_of(minihub)
    got = scan_minihub(minihub, hub_index, truth)
    assert counts(got) == counts(truth["contamination"])
    planted = {k: n for k, n in counts(truth["contamination"]).items() if n}
    # the plants: whole copies (case, whitespace), passages in longer texts, a list column, a second column
    for dataset in ("topics_no_val", "reviews_valid", "intents_dev", "toy_ner", "nli_pairs"):
        assert any(k[0] == f"mini-nlp/{dataset}" and k[2] == "train" for k in planted), dataset
    assert all(r["candidates"] >= r["verified"] >= r["contaminated_rows"] for r in got)
    # a benchmark's own test split is never checked against itself
    assert not any((r["dataset_id"], r["split"]) == (r["benchmark_id"], r["benchmark_split"]) for r in got)


def test_planted_counts_survive_a_tiny_candidate_filter(minihub, hub_index):
    truth = truth_of(minihub)
    weak = c.BenchmarkIndex(hub_index.benchmarks, hash_bits=6)
    assert counts(scan_minihub(minihub, weak, truth)) == counts(truth["contamination"])


# --- a plain-Python reference on the shared datasets ---------------------------------------------------

def _norm(value) -> str:
    if value is None:
        return ""
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, list):
        return " ".join(t for t in (_norm(v) for v in value) if t)
    if not isinstance(value, str):
        return ""
    return " ".join(unicodedata.normalize("NFKC", value).casefold().split())


def reference(items: list[str], rows: list[list], n: int = 13) -> set[int]:
    """Sets of word 13-gram tuples and of short items' texts; shares no code with the engine."""
    grams, whole = set(), set()
    for item in items:
        w = item.split()
        if len(w) >= n:
            grams.update(tuple(w[i:i + n]) for i in range(len(w) - n + 1))
        elif w:
            whole.add(" ".join(w))
    found = set()
    for position, values in enumerate(rows):
        parts = [_norm(v) for v in values]
        text = " ".join(p for p in parts if p)
        w = text.split()
        units = {text, *parts} if len(parts) > 1 else {text}
        if units & whole or any(tuple(w[i:i + n]) in grams for i in range(len(w) - n + 1)):
            found.add(position)
    return found


SHARED_BENCHMARKS = [("openai__gsm8k", "main", "test", ["question"]),
                     ("cornell-movie-review-data__rotten_tomatoes", "default", "test", ["text"]),
                     ("CogComp__trec", "default", "test", ["text"]),
                     ("eriktks__conll2003", "conll2003", "test", ["tokens"])]


@pytest.mark.slow
def test_the_engine_equals_a_plain_python_reference_on_the_shared_datasets(shared_datasets):
    import pyarrow.parquet as pq

    tables = []
    for folder, config, split, columns in SHARED_BENCHMARKS:
        files = sorted((shared_datasets / folder / config / split).glob("*.parquet"))
        bench = c.Benchmark(folder.replace("__", "/"), config, split, tuple(columns))
        tables.append((bench, None, pq.read_table(files, columns=columns)))
    index = c.index_from_tables(tables)
    items = [[_norm(r[c0]) if len(cols) == 1 else " ".join(_norm(r[x]) for x in cols)
              for r in t.to_pylist() for c0 in [cols[0]]] for (_, _, t), (*_, cols) in zip(tables, SHARED_BENCHMARKS)]
    totals: dict[str, int] = {}
    checked = 0
    for entry in sorted(p for p in shared_datasets.iterdir() if p.is_dir()):
        source = FolderSource(entry)
        for config in source.configs():
            data = check_config(source.load(config))
            roles = resolve_roles(data.features, data.dataset_id, data.config, None)
            for canonical, split in data.splits.items():
                table = pq.read_table(list(split.files), columns=list(roles.text_columns))
                rows = [list(r.values()) for r in table.to_pylist()]
                _, found = c.scan_split(split.files, roles.text_columns, index)
                for f, bench_items in zip(found, items):
                    b = index.benchmarks[f.bench].benchmark
                    if c.is_own_split(b, data.dataset_id, config, split.source_name):
                        continue
                    assert f.rows == reference(bench_items, rows), (data.dataset_id, config, canonical, b.key)
                    totals[b.key] = totals.get(b.key, 0) + len(f.rows)
                checked += 1
    assert checked > 50
    assert totals["openai/gsm8k/main/test"] > 0  # gsm8k's train split shares passages with its test split


# --- the run and the command ---------------------------------------------------------------------------

@pytest.mark.slow
def test_a_run_with_benchmarks_stores_the_truth_and_the_command_agrees(minihub, tmp_path):
    from hubsurvey.analysis.findings import create_views
    from hubsurvey.pipeline import RunOptions, run_survey

    truth = truth_of(minihub)
    bench_file = benchmarks_file(tmp_path / "bench.toml", truth["benchmarks"])
    db = tmp_path / "r.duckdb"
    with StandinHub(minihub) as hub:
        client = standin_client(hub, tmp_path / "cache")
        summary = run_survey(db, client, None, RunOptions(workers=2, benchmarks=str(bench_file)))
        assert summary.status == "done" and summary.failed == 0
        with Store(db) as store:
            stored = store.records("SELECT * FROM contamination")
            benchmarks = store.records("SELECT * FROM benchmarks ORDER BY benchmark_id")
            shas = {b["id"]: client.dataset_info(b["id"]).sha for b in truth["benchmarks"]}
            create_views(store)
            lines = {r["dataset_id"]: r for r in store.records("SELECT * FROM findings_contamination")}
        assert counts(stored) == counts(truth["contamination"])
        assert {b["benchmark_id"]: b["revision_sha"] for b in benchmarks} == shas
        assert all(b["status"] == "indexed" for b in benchmarks)
        assert all(r["benchmark_revision"] == shas[r["benchmark_id"]] for r in stored)
        contaminated = {k[0] for k, n in counts(truth["contamination"]).items() if n}
        assert {d for d, r in lines.items() if r["status"] == "contaminated"} == contaminated
        assert lines["mini-lab/messy_text"]["line"].startswith("checked against 2 benchmarks at revisions ")
        assert lines["mini-lab/messy_text"]["line"].endswith(": clean")
        assert "contaminated (mini-nlp/qa_small" in lines["mini-nlp/intents_dev"]["line"]
        # the mini-hub's fork of sentiment (a family, found by crossleaks) holds the benchmark's own test
        # set: kept in the table, not counted in its line
        with Store(db) as store:
            create_views(store)
            copies = store.records("SELECT dataset_id, split, contaminated_rows, rows_split "
                                   "FROM findings_contamination_pairs WHERE benchmark_copy")
        assert [(r["dataset_id"], r["split"]) for r in copies] == [("mini-forks/sentiment_mirror", "test")]
        assert copies[0]["contaminated_rows"] == copies[0]["rows_split"]
        assert "in default/test" not in lines["mini-forks/sentiment_mirror"]["line"]

        # the command alone, checking everything again (downloads again through the job path)
        result = CliRunner().invoke(app, ["contamination", "--benchmarks", str(bench_file), "--recheck",
                                          "--rate", "0", "--file-rate", "0", "--db", str(db)],
                                    env={"HF_ENDPOINT": hub.url, "HUBSURVEY_CACHE_DIR": str(tmp_path / "cache2")})
    assert result.exit_code == 0, result.output
    assert "configs checked" not in result.output and "config(s) checked" in result.output
    with Store(db) as store:
        again = store.records("SELECT * FROM contamination")
        (run,) = store.records("SELECT * FROM runs WHERE command = 'contamination'")
    assert counts(again) == counts(stored) and run["status"] == "done"
    assert sorted(json.dumps(json.loads(r["examples"])) for r in again) == sorted(json.dumps(json.loads(r["examples"])) for r in stored)

    # the line per dataset in the results export, the card and the report
    from hubsurvey.analysis.card import render_card
    from hubsurvey.analysis.export import CONTAMINATION_CSV_PATH, export_results
    from hubsurvey.analysis.report import render_report

    line = lines["mini-nlp/intents_dev"]["line"]
    with Store(db, read_only=True) as store:
        written = export_results(store, tmp_path / "export")
        card = render_card(store, "me/results", [p.relative_to(tmp_path / "export").as_posix() for p in written])
        md, html = render_report(store, tmp_path / "report")
    exported = (tmp_path / "export" / CONTAMINATION_CSV_PATH).read_text()
    assert line in exported and "mini-lab/messy_text,clean," in exported
    from hubsurvey.analysis.render import md as markdown

    assert markdown(line) in card and f"`{CONTAMINATION_CSV_PATH}`" in card
    assert markdown(line) in md.read_text() and "## 11. Contamination with benchmarks" in md.read_text()
    assert line in html.read_text() and "11. Contamination with benchmarks" in html.read_text()


@pytest.mark.slow
def test_the_command_refuses_a_missing_db_and_an_unreachable_hub(tmp_path):
    runner = CliRunner()
    missing = runner.invoke(app, ["contamination", "--db", str(tmp_path / "none.duckdb")])
    assert missing.exit_code == 3 and "no such results DB" in missing.output
    assert not (tmp_path / "none.duckdb").exists()
    Store(tmp_path / "r.duckdb").close()
    offline = runner.invoke(app, ["contamination", "--db", str(tmp_path / "r.duckdb"), "--rate", "0"],
                            env={"HF_ENDPOINT": "http://127.0.0.1:9"})  # nothing listens on port 9
    assert offline.exit_code == 4, offline.output
    with Store(tmp_path / "r.duckdb") as store:
        (run,) = store.records("SELECT status, error_class FROM runs WHERE command = 'contamination'")
    assert run == {"status": "failed", "error_class": "offline"}


# --- Dask -------------------------------------------------------------------------------------------

@pytest.mark.slow
def test_the_13gram_scan_runs_as_dask_tasks(minihub, hub_index):
    distributed = pytest.importorskip("distributed")
    data = FolderSource(minihub / "mini-nlp__intents_dev", "mini-nlp/intents_dev").load("default")
    train = data.splits["train"]
    batches = list(c.iter_batches(train.files, ["text"], batch_rows=50))
    assert len(batches) > 3
    _, local = c.scan_split(train.files, ["text"], hub_index, batch_rows=50)
    with distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        found = c.dask_scan(client, batches, hub_index)
        tasks = client.run_on_scheduler(lambda dask_scheduler: list(dask_scheduler.task_prefixes))
    assert [f.summary() for f in found] == [f.summary() for f in local]
    assert found[0].rows and "scan_part" in tasks  # the batches ran as tasks of contamination._scan_part
