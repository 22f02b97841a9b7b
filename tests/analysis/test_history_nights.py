"""Two nights of a survey through the stand-in: night 1 surveys the mini-hub (plus one clean dataset),
a dataset gets new data between the nights (a commit to the stand-in), night 2 measures it again.
The history (view, function, command, export, the site's dataset page) shows both revisions with
their figures, and the report's "Since the last run" section (and the site's index) shows what the
change did: a verdict that got worse, new contamination with a benchmark, a new leak across datasets. Figures are checked against plain
Python over the rows that were committed, and against plain SQL over ``measurements``."""

from __future__ import annotations

import csv
import io
import json
import random
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml
from conftest import benchmarks_file
from test_site import article
from test_site_results import Tables, tables_of
from typer.testing import CliRunner

from hubsurvey.analysis.card import render_card
from hubsurvey.analysis.export import export_results
from hubsurvey.analysis.findings import findings
from hubsurvey.analysis.history import dataset_verdicts, history, since_last_run
from hubsurvey.analysis.render import pct3
from hubsurvey.analysis.report import render_report
from hubsurvey.analysis.site import build_site, dataset_href
from hubsurvey.cli import app
from hubsurvey.core.hub import HubClient
from hubsurvey.core.store import Store
from hubsurvey.pipeline import RunOptions, run_survey
from hubsurvey_standin import StandinHub, generate_minihub
from hubsurvey_standin import parquetio as pio

pytestmark = pytest.mark.slow

CHANGED = "mini-lab/fresh_reviews"  # clean on night 1; night 2 copies test rows and more into train
LEAKED_FROM = "mini-nlp/topics_no_val"  # some of its test rows land in CHANGED's train on night 2
BENCHMARK = "mini-nlp/qa_small"  # one of its test contexts lands in CHANGED's train on night 2
FEATURES = {"text": pio.value("string"), "label": pio.class_label(["negative", "positive"])}
COPIED_TEST_ROWS = 5
COPIED_FOREIGN_ROWS = 8


def _sentences(seed: int, n: int) -> list[str]:
    """Distinct sentences of words no other mini-hub dataset uses (nothing near them elsewhere)."""
    g = random.Random(seed)
    vocabulary = [f"{a}{b}" for a in ("zor", "quel", "brim", "vant", "oslo", "pek") for b in ("ak", "um", "ix", "ond")]
    out: list[str] = []
    while len(out) < n:
        text = " ".join(g.choice(vocabulary) for _ in range(9)) + f" n{len(out)}"
        if text not in out:
            out.append(text)
    return out


def _parquet(texts: list[str]) -> bytes:
    return pio.parquet_bytes({"text": texts, "label": [i % 2 for i in range(len(texts))]}, FEATURES)


def _split_texts(root: Path, dataset: str, split: str, column: str) -> list[str]:
    files = sorted((root / dataset.replace("/", "__") / "default" / split).glob("*.parquet"))
    return [t for f in files for t in pq.read_table(f).column(column).to_pylist()]


def _add_clean_dataset(root: Path) -> tuple[list[str], list[str]]:
    """One more dataset in the mini-hub: train and test disjoint, no duplicates (verdict clean)."""
    texts = _sentences(7, 80)
    train, test = texts[:60], texts[60:]
    folder = root / CHANGED.replace("/", "__") / "default"
    for split, rows in (("train", train), ("test", test)):
        (folder / split).mkdir(parents=True)
        (folder / split / "0000.parquet").write_bytes(_parquet(rows))
    index = json.loads((root / "index.json").read_text())
    entries = index if isinstance(index, list) else index["datasets"]
    entries.append({"id": CHANGED, "tags": ["task_categories:text-classification", "language:en", "modality:text",
                                            "format:parquet", "size_categories:n<1K"]})
    (root / "index.json").write_text(json.dumps(index, indent=1))
    return train, test


def _lle_reference(train: list[str], test: list[str]) -> dict[str, float | int]:
    """The LLE text figures of a train/test pair, in plain Python (no validation split)."""
    leaks = len(set(train) & set(test))
    duplicates = len(test) - len(set(test))
    return {"text_leaks_train_wrt_test": leaks, "text_duplication_test": duplicates,
            "text_test_biased": round((leaks + duplicates) / len(test) * 100, 3)}


@pytest.fixture(scope="module")
def nights(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("nights")
    root = generate_minihub(tmp / "hub", seed=0)
    train1, test = _add_clean_dataset(root)
    truth = json.loads((root / "truth.json").read_text())
    bench = benchmarks_file(tmp / "bench.toml", truth["benchmarks"])
    db = tmp / "r.duckdb"
    foreign_test = _split_texts(root, LEAKED_FROM, "test", "text")
    foreign = foreign_test[:COPIED_FOREIGN_ROWS]
    passage = _split_texts(root, BENCHMARK, "test", "context")[0]
    train2 = train1 + test[:COPIED_TEST_ROWS] + foreign + [passage]
    with StandinHub(root) as hub:
        client = HubClient(endpoint=hub.url, token=False, rate=0, file_rate=0, cache_dir=tmp / "cache")
        def options(night: str) -> RunOptions:
            return RunOptions(workers=2, benchmarks=str(bench), report_dir=tmp / night)

        first = run_survey(db, client, None, options("night1"))
        assert first.status == "done" and first.failed == 0, first
        with Store(db, read_only=True) as store:
            after_one = {"since": since_last_run(store), "history": history(store, CHANGED)}
            export_results(store, tmp / "export1")
        sha1 = client.dataset_info(CHANGED).sha
        sha2 = hub.commit_data(CHANGED, {"default/train/0000.parquet": _parquet(train2),
                                         "default/test/0000.parquet": _parquet(test)})
        second = run_survey(db, client, None, options("night2"))
        assert second.status == "done" and second.failed == 0, second
        assert client.dataset_info(CHANGED).sha == sha2 != sha1
    return {"db": db, "tmp": tmp, "sha1": sha1, "sha2": sha2, "train1": train1, "train2": train2, "test": test,
            "foreign": foreign, "foreign_test": foreign_test, "after_one": after_one, "first": first, "second": second}


def test_history_holds_both_revisions_with_their_figures(nights):
    with Store(nights["db"], read_only=True) as store:
        rows = history(store, CHANGED)
        plain = store.records("SELECT revision_sha, text_leaks_train_wrt_test, text_duplication_test, "
                              "round(text_test_biased, 3) AS text_test_biased, round(normalized_contaminated_test_pct, 3) "
                              "AS normalized_contaminated_test_pct, run_id, parquet_sha FROM measurements "
                              "WHERE dataset_id = $d ORDER BY measured_at", {"d": CHANGED})
    assert [r["revision_sha"] for r in rows] == [nights["sha1"], nights["sha2"]]
    assert [r["is_current"] for r in rows] == [False, True]
    assert [r["run_id"] for r in rows] == [nights["first"].run_id, nights["second"].run_id]
    assert rows[0]["measured_at"] < rows[1]["measured_at"]
    for row, train in zip(rows, (nights["train1"], nights["train2"])):
        expected = _lle_reference(train, nights["test"])
        assert {k: row[k] for k in expected} == expected
        assert row["text_leaks_validation_wrt_test"] is None  # NR: no validation split
        assert row["parquet_sha"] and row["parquet_sha"] != row["revision_sha"]
    assert rows[0]["text_test_biased"] == 0 and rows[1]["text_test_biased"] == COPIED_TEST_ROWS / 20 * 100
    assert [r["verdict"] for r in rows] == ["clean", "unreliable"]
    assert [r["verdict_basis"] for r in rows] == ["near-2026", "near-2026"]
    # the view's figures are the stored ones, typed as published
    assert [{k: r[k] for k in plain[0]} for r in rows] == plain
    # contamination with benchmarks: checked both nights, the new revision holds the qa_small context
    assert [r["benchmarks_checked"] for r in rows] == [2, 2]
    assert [r["benchmarks_contaminating"] for r in rows] == [0, 1]
    assert rows[1]["benchmark_contaminated_rows"] >= 1


def test_after_one_night_there_is_nothing_to_compare(nights):
    since = nights["after_one"]["since"]
    assert since["previous_run"] is None and since["latest_run"]["run_id"] == nights["first"].run_id
    assert since["new_datasets"] == since["verdict_changes"] == since["new_contamination"] == since["new_cross_leaks"] == []
    assert [r["revision_sha"] for r in nights["after_one"]["history"]] == [nights["sha1"]]
    assert not list((nights["tmp"] / "export1").rglob("history*"))  # one revision each: no history config
    md = (nights["tmp"] / "night1" / "REPORT.md").read_text()
    assert "## Since the last run\n\nThis is the first completed survey run of this DB" in md


def test_since_the_last_run_shows_the_change(nights):
    with Store(nights["db"], read_only=True) as store:
        since = since_last_run(store)
    assert since["previous_run"]["run_id"] == nights["first"].run_id
    assert since["latest_run"]["run_id"] == nights["second"].run_id
    assert since["new_datasets"] == []
    (change,) = since["verdict_changes"]  # the other datasets were not measured again
    assert (change["dataset_id"], change["before"], change["after"], change["change"]) == (CHANGED, "clean", "unreliable", "worse")
    assert change["revisions_before"] == [nights["sha1"]] and change["revisions_after"] == [nights["sha2"]]
    assert [(c["dataset_id"], c["benchmark_id"]) for c in since["new_contamination"]] == [(CHANGED, BENCHMARK)]
    leaks = {(c["test_dataset"], c["source_dataset"], c["source_split"]): c for c in since["new_cross_leaks"]}
    leak = leaks[(LEAKED_FROM, CHANGED, "train")]
    copied = set(nights["foreign"])  # the test rows of LEAKED_FROM holding a copied text (its duplicates too)
    assert leak["rows"] == sum(t in copied for t in nights["foreign_test"]) >= COPIED_FOREIGN_ROWS
    assert leak["source_revision"] == nights["sha2"]
    assert all(CHANGED in (c["test_dataset"], c["source_dataset"]) for c in since["new_cross_leaks"])

    md = (nights["tmp"] / "night2" / "REPORT.md").read_text()
    section = md.split("## Since the last run\n")[1].split("\n## ")[0]
    assert f"run {nights['first'].run_id} ended" in section
    assert f"| {CHANGED} | clean | unreliable | worse | 0.0% | 25.0% | near-2026 | {nights['sha1'][:12]} |" in section
    assert f"| {CHANGED} | {BENCHMARK} [default/test] |" in section
    assert f"| {LEAKED_FROM} | default | {CHANGED} | default | train | {leak['rows']} |" in section
    # the standalone report, after the run, says the same
    with Store(nights["db"], read_only=True) as store:
        render_report(store, nights["tmp"] / "again")
    again = (nights["tmp"] / "again" / "REPORT.md").read_text()
    # the section, not the whole file: the provenance states the run's end, which the report written
    # inside the run shows as it stood then (a minute may pass before the run records it)
    assert again.split("## Since the last run\n")[1].split("\n## ")[0] == section


def test_dataset_verdicts_equal_the_report_verdicts(nights):
    with Store(nights["db"], read_only=True) as store:
        rows = store.records("SELECT * FROM history WHERE is_current")
        report = {r["dataset_id"]: (r["verdict"], r["verdict_basis"]) for r in findings(store)["dataset_verdict"]}
    mine = {d: (v["verdict"], v["verdict_basis"]) for d, v in dataset_verdicts(rows).items()}
    assert mine == report and len(mine) > 10


def test_the_history_config_holds_both_revisions(nights):
    with Store(nights["db"], read_only=True) as store:
        written = export_results(store, nights["tmp"] / "export2")
        stored = store.query("SELECT dataset_id, config, coalesce(label_column, ''), revision_sha, "
                             "round(text_test_biased, 3) FROM measurements ORDER BY ALL")[1]
    names = {p.relative_to(nights["tmp"] / "export2").as_posix() for p in written}
    assert {"data/history-00000-of-00001.parquet", "history.csv"} <= names
    table = pq.read_table(nights["tmp"] / "export2" / "data" / "history-00000-of-00001.parquet").to_pylist()
    mine = [r for r in table if r["dataset_id"] == CHANGED]
    assert [r["revision_sha"] for r in mine] == [nights["sha1"], nights["sha2"]]
    assert all(r["text_leaks_validation_wrt_test"] is None for r in mine)  # NR is null in Parquet
    # every measured row, each revision once, with its stored figure
    assert sorted((r["dataset_id"], r["config"], r["label_column"] or "", r["revision_sha"], r["text_test_biased"])
                  for r in table) == stored
    with Store(nights["db"], read_only=True) as store:
        card = render_card(store, "me/results", sorted(names))
    configs = yaml.safe_load(card.split("---\n")[1])["configs"]
    assert {"config_name": "history", "data_files": [{"split": "train", "path": "data/history-*.parquet"}]} in configs
    assert 'history = load_dataset("me/results", "history", split="train")' in card
    with open(nights["tmp"] / "export2" / "history.csv", newline="") as f:
        mine_csv = [r for r in csv.DictReader(f) if r["dataset_id"] == CHANGED]
    assert [r["revision_sha"] for r in mine_csv] == [nights["sha1"], nights["sha2"]]
    assert all(r["text_leaks_validation_wrt_test"] == "NR" for r in mine_csv)  # NR is "NR" in the CSV
    assert [r["text_test_biased"] for r in mine_csv] == ["0.0", "25.0"]


def test_the_history_command(nights):
    runner = CliRunner()
    db = str(nights["db"])
    result = runner.invoke(app, ["history", CHANGED, "--format", "json", "--db", db])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    assert [(r["revision_sha"], r["config"], r["label_column"], r["verdict"]) for r in rows] == [
        (nights["sha1"], "default", "label", "clean"), (nights["sha2"], "default", "label", "unreliable")]
    assert rows[0]["text_leaks_validation_wrt_test"] is None and rows[1]["text_test_biased"] == 25.0
    assert rows[0]["measured_at"] < rows[1]["measured_at"]

    table = runner.invoke(app, ["history", "fresh_reviews", "--db", db])  # the name part alone
    assert table.exit_code == 0, table.output
    lines = table.stdout.splitlines()
    assert lines[0] == f"{CHANGED}: 2 revision(s) measured"
    assert nights["sha1"][:12] in lines[3] and "clean" in lines[3] and "unreliable" in lines[4]
    assert lines[-1] == "(2 rows)"

    as_csv = runner.invoke(app, ["history", CHANGED, "--config", "default", "--format", "csv", "--db", db])
    assert as_csv.exit_code == 0, as_csv.output
    rows_csv = list(csv.DictReader(io.StringIO(as_csv.stdout)))
    assert [r["revision_sha"] for r in rows_csv] == [nights["sha1"], nights["sha2"]]
    assert {r["text_leaks_validation_wrt_test"] for r in rows_csv} == {"NR"}

    unknown = runner.invoke(app, ["history", "nobody/nothing", "--db", db])
    assert unknown.exit_code == 2
    assert unknown.stderr.strip() == ("error: nobody/nothing: not measured in this DB "
                                      "(run `hubsurvey audit nobody/nothing` or a survey first)")
    no_config = runner.invoke(app, ["history", CHANGED, "--config", "xx", "--db", db])
    assert no_config.exit_code == 2 and "no config 'xx' was measured (configs: default)" in no_config.stderr


def test_the_site_after_night_two_shows_both_revisions_and_the_worse_verdict(nights, tmp_path):
    site = tmp_path / "site"
    with Store(nights["db"], read_only=True) as store:
        build_site(store, site)
        names, rows = store.query("SELECT * FROM history WHERE dataset_id = $d ORDER BY measured_at", {"d": CHANGED})
        since = since_last_run(store)
    # the changed dataset's article: its history table is the view's rows, both revisions (the columns that matter)
    page = Tables(article(site, CHANGED))
    shown = page.rows("history")
    at = {name: i for i, name in enumerate(names)}
    assert [(r[0], r[2], r[5], r[8]) for r in shown] == [
        (v[at["config"]], v[at["revision_sha"]][:12], v[at["verdict"]], pct3(v[at["normalized_contaminated_test_pct"]]))
        for v in rows]
    assert [r[2] for r in shown] == [nights["sha1"][:12], nights["sha2"][:12]]
    assert [r[5] for r in shown] == ["clean", "unreliable"]
    # the index: the worse verdict since the last run, linked to the page; the new contamination and leak
    index = tables_of(site / "index.html")
    assert index.rows("since-verdicts") == [[CHANGED, "clean", "unreliable", "worse", "0.0%", "25.0%", "near-2026",
                                             nights["sha1"][:12], nights["sha2"][:12]]]
    ((link,),) = index.links("since-verdicts")
    assert link == dataset_href(CHANGED)
    assert [(r[0], r[1]) for r in index.rows("since-contamination")] == [(CHANGED, f"{BENCHMARK} [default/test]")]
    assert [(r[0], r[2], r[4], r[5]) for r in index.rows("since-cross")] == [
        (c["test_dataset"], c["source_dataset"], c["source_split"], str(c["rows"])) for c in since["new_cross_leaks"]]
    assert (LEAKED_FROM, CHANGED) in {(r[0], r[2]) for r in index.rows("since-cross")}
