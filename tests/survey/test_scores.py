"""Scores at risk (scores-2026): reading the scores models report (model-index, .eval_results through
a benchmark's eval.yaml), and the view that puts each beside what the declared training data holds
of the evaluated split, compared with plain-Python computations over the shared datasets, through
the stand-in end to end."""

from __future__ import annotations

import json
import shutil
import unicodedata
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from huggingface_hub import HfApi
from typer.testing import CliRunner

from hubsurvey.analysis.crossleaks import crossleaks
from hubsurvey.cli import app
from hubsurvey.core.hub import HubClient
from hubsurvey.core.store import Store
from hubsurvey.survey import scores as sc
from hubsurvey.survey.audit import audit
from hubsurvey_standin import StandinHub
from hubsurvey_standin.reference import normalize_value

runner = CliRunner()


# --- reading what a card and a repo say (fast) -------------------------------------------------------

def test_model_index_gives_one_score_per_metric_and_skips_what_names_no_dataset():
    card = {"model-index": [{"name": "m", "results": [
        {"task": {"type": "token-classification"},
         "dataset": {"type": "eriktks/conll2003", "config": "conll2003", "split": "test"},
         "metrics": [{"type": "f1", "value": 0.91, "verified": True}, {"type": "accuracy", "value": "98.5%"},
                     {"type": "loss", "value": "n/a"}]},
        {"dataset": {"name": "no id"}, "metrics": [{"type": "f1", "value": 1}]},
        {"dataset": {"type": "a/b"}, "metrics": []},
        "not a result"]}]}
    found, skipped = sc.model_index_results(card)
    assert [(r["dataset_id"], r["config"], r["split_reported"], r["metric"], r["value"], r["verified"]) for r in found] == [
        ("eriktks/conll2003", "conll2003", "test", "f1", 0.91, True),
        ("eriktks/conll2003", "conll2003", "test", "accuracy", 98.5, False),
        ("eriktks/conll2003", "conll2003", "test", "loss", None, False)]
    assert skipped == 3
    assert sc.model_index_results({"model-index": "nonsense"}) == ([], 0)
    assert sc.model_index_results(None) == ([], 0)


def test_eval_results_and_eval_yaml():
    body = b"- dataset: {id: cais/hle, task_id: hle}\n  value: 20.9\n  verifyToken: abc\n- dataset: {id: x/y}\n  value: 3\n- value: 1\n"
    found, skipped = sc.eval_results_entries(body, ".eval_results/hle.yaml")
    assert [(r["dataset_id"], r["task"], r["value"], r["verified"], r["source_file"]) for r in found] == [
        ("cais/hle", "hle", 20.9, True, ".eval_results/hle.yaml"), ("x/y", None, 3.0, False, ".eval_results/hle.yaml")]
    assert skipped == 1
    assert sc.eval_results_entries(b"{{{ not yaml", "f.yaml") == ([], 1)
    tasks = sc.eval_yaml_tasks(b"name: b\ntasks:\n- id: main\n  config: default\n  split: test\n- name: other\n  subset: s\n")
    assert tasks == {"main": {"config": "default", "split": "test"}, "other": {"config": "s", "split": None}}
    assert sc.eval_yaml_tasks(None) == {} and sc.eval_yaml_tasks(b"- a list") == {}


def test_a_declaration_is_the_cards_datasets_never_a_tag_alone():
    assert sc.declared_datasets({"datasets": "a/b"}) == ["a/b"]
    assert sc.declared_datasets({"datasets": ["c/d", "a/b", "a/b", 3]}) == ["a/b", "c/d"]
    assert sc.declared_datasets({}) == [] and sc.declared_datasets(None) == []


# --- through the stand-in, on the shared datasets ------------------------------------------------------

CONLL, TWEET, MIAM, SILICONE = "eriktks/conll2003", "cardiffnlp/tweet_eval", "PierreColombo/miam", "eusip/silicone"
SURVEYED = [(CONLL, "conll2003"), (TWEET, "hate"), (MIAM, "maptask"), (SILICONE, "maptask")]


def _index(name: str, dataset: str, config: str, split: str, metric: str = "f1", value: float = 0.9) -> list[dict]:
    return [{"name": name, "results": [{"task": {"type": "text-classification"},
                                        "dataset": {"type": dataset, "config": config, "split": split},
                                        "metrics": [{"type": metric, "value": value}]}]}]


MODELS = [
    # the same dataset: test and validation scores of a model trained on conll2003
    {"id": "ner/conll-bert", "cardData": {
        "datasets": [CONLL], "base_model": "bert-base-cased",
        "model-index": [{"name": "conll-bert", "results": [
            {"task": {"type": "token-classification"}, "dataset": {"type": CONLL, "config": "conll2003", "split": s},
             "metrics": [{"type": "f1", "value": v}]} for s, v in (("test", 0.91), ("validation", 0.95))]}]}},
    {"id": "tw/hate-roberta", "cardData": {"datasets": [TWEET], "model-index": _index("h", TWEET, "hate", "test")}},
    # another surveyed dataset: trained on miam, scored on silicone's maptask test
    {"id": "da/miam-trained", "cardData": {"datasets": [MIAM], "model-index": _index("m", SILICONE, "maptask", "test", "accuracy")}},
    # a benchmark: trained on tweet_eval (its hate config surveyed), scored on the offensive benchmark
    # through .eval_results, whose task eval.yaml maps to offensive/test
    {"id": "tw/offense-eval", "cardData": {"datasets": [TWEET]},
     "eval_results": {"offensive.yaml": [{"dataset": {"id": TWEET, "task_id": "offensive"}, "value": 77.0}]}},
    # undeclared: a score on conll2003 with no training data declared (listed through the tag the
    # Hub derives from the model-index)
    {"id": "ner/zero-shot", "cardData": {"model-index": _index("z", CONLL, "conll2003", "test")}},
]
EVALS = {TWEET: {"name": "tweet_eval", "tasks": [{"id": "offensive", "config": "offensive", "split": "test"}]}}


def _rows(shared: Path, dataset: str, config: str, split: str) -> list[dict]:
    folder = shared / dataset.replace("/", "__") / config / split
    return [r for f in sorted(folder.glob("*.parquet")) for r in pq.read_table(f).to_pylist()]


def _key(row: dict, columns: list[str], profile: str) -> tuple:
    values = [row[c] for c in columns]
    if profile == "normalized":
        values = [normalize_value(v) for v in values]
    return tuple(json.dumps(v, sort_keys=True, ensure_ascii=False) for v in values)


def in_train(evaluated: list[dict], train: list[dict], columns: list[str], profile: str) -> int:
    """Evaluated rows whose text key (the text columns, raw or normalized) is among train's: plain Python."""
    keys = {_key(r, columns, profile) for r in train}
    return sum(_key(r, columns, profile) in keys for r in evaluated)


def _words(value) -> str:
    if value is None:
        return ""
    if isinstance(value, list):
        return " ".join(t for t in (_words(v) for v in value) if t)
    return " ".join(unicodedata.normalize("NFKC", str(value)).casefold().split())


def passages(rows: list[dict], columns: list[str], items: list[str]) -> int:
    """Rows holding 13 consecutive words of an item, or whose text equals an item shorter than 13
    words: plain Python over sets of 13-word tuples (the 13-gram check's definition)."""
    grams = {tuple(w[i:i + 13]) for w in (t.split() for t in items) if len(w) >= 13 for i in range(len(w) - 12)}
    whole = {t for t in items if 0 < len(t.split()) < 13}
    n = 0
    for r in rows:
        parts = [_words(r[c]) for c in columns]
        text = " ".join(p for p in parts if p)
        w = text.split()
        units = {text, *parts} if len(parts) > 1 else {text}
        n += any(u in whole for u in units) or any(tuple(w[i:i + 13]) in grams for i in range(len(w) - 12))
    return n


@pytest.fixture(scope="module")
def shared_scores(shared_datasets, tmp_path_factory):
    """The four configs audited through the stand-in (tweet_eval's checked against its offensive
    test split as a benchmark), crossleaks, then the scores lookup against the same stand-in."""
    tmp = tmp_path_factory.mktemp("scores")
    models = tmp / "models"
    models.mkdir()
    (models / "index.json").write_text(json.dumps({"datasets": [], "models": MODELS, "evals": EVALS}))
    bench = tmp / "benchmarks.toml"
    bench.write_text(f'[[benchmark]]\nid = "{TWEET}"\nconfig = "offensive"\nsplit = "test"\ntext_columns = ["text"]\n')
    db = tmp / "r.duckdb"
    with StandinHub([shared_datasets, models]) as hub:
        client = HubClient(endpoint=hub.url, token=False, rate=0, file_rate=0, cache_dir=tmp / "cache", max_wait=0.05)
        for dataset, config in SURVEYED:
            outcome = audit(dataset, config=config, db=db, near=False, examples=0, client=client,
                            benchmarks_file=bench if dataset == TWEET else None)
            assert not outcome.errors, outcome.errors
        with Store(db) as store:
            crossleaks(store)
            before = hub.stats()
            summary = sc.lookup_scores(store, client, max_models=10)
            stats = {k: hub.stats()[k] - before.get(k, 0) for k in ("models", "resolve_get")}
        yield {"db": db, "summary": summary, "stats": stats, "url": hub.url, "tmp": tmp, "hub": hub, "client": client}


def _view(db: Path) -> dict[tuple, dict]:
    with Store(db, read_only=True) as store:
        rows = store.records("SELECT * FROM scores_at_risk")
    return {(r["model_id"], r["dataset_id"], r["split"]): r for r in rows}


def _text_columns(db: Path, dataset: str, config: str) -> list[str]:
    with Store(db, read_only=True) as store:
        return list(store.records("SELECT text_columns FROM current_measurements WHERE dataset_id = $d AND config = $c",
                                  {"d": dataset, "c": config})[0]["text_columns"])


@pytest.mark.slow
def test_the_same_dataset_counts_equal_plain_python(shared_datasets, shared_scores):
    db = shared_scores["db"]
    view = _view(db)
    columns = _text_columns(db, CONLL, "conll2003")
    train = _rows(shared_datasets, CONLL, "conll2003", "train")
    for split in ("test", "validation"):
        rows = _rows(shared_datasets, CONLL, "conll2003", split)
        got = view[("ner/conll-bert", CONLL, split)]
        assert got["rows_evaluated"] == len(rows)
        assert got["rows_in_training_raw"] == in_train(rows, train, columns, "raw")
        assert got["rows_in_training_normalized"] == in_train(rows, train, columns, "normalized")
        assert got["status"] == "at_risk" and got["measured_by"] == "exact-2026"
        assert got["rows_in_training_pct"] == pytest.approx(100 * got["rows_in_training_normalized"] / len(rows))
    test = view[("ner/conll-bert", CONLL, "test")]
    assert (test["rows_in_training_raw"], test["rows_evaluated"]) == (126, 3453)  # the known figure
    assert "base_model not followed: bert-base-cased" in test["note"]
    hate = view[("tw/hate-roberta", TWEET, "test")]
    rows, train = _rows(shared_datasets, TWEET, "hate", "test"), _rows(shared_datasets, TWEET, "hate", "train")
    hate_columns = _text_columns(db, TWEET, "hate")
    assert hate["rows_in_training_raw"] == in_train(rows, train, hate_columns, "raw") == 233
    assert hate["rows_in_training_normalized"] == in_train(rows, train, hate_columns, "normalized")
    assert hate["rows_evaluated"] == 2970 and hate["status"] == "at_risk"


@pytest.mark.slow
def test_another_dataset_counts_equal_plain_python(shared_datasets, shared_scores):
    db = shared_scores["db"]
    got = _view(db)[("da/miam-trained", SILICONE, "test")]
    rows = _rows(shared_datasets, SILICONE, "maptask", "test")
    train = _rows(shared_datasets, MIAM, "maptask", "train")
    want = in_train(rows, train, _text_columns(db, SILICONE, "maptask"), "normalized")
    assert _text_columns(db, SILICONE, "maptask") == _text_columns(db, MIAM, "maptask")  # one key on both sides
    assert got["rows_in_training_normalized"] == want > 0
    assert got["rows_in_training_raw"] is None and got["measured_by"] == "cross-2026"  # crossleaks: normalized only
    assert got["status"] == "at_risk" and got["rows_evaluated"] == len(rows)


@pytest.mark.slow
def test_a_benchmark_score_through_eval_yaml_counts_equal_plain_python(shared_datasets, shared_scores):
    db = shared_scores["db"]
    got = _view(db)[("tw/offense-eval", TWEET, "test")]
    items = [_words(r["text"]) for r in _rows(shared_datasets, TWEET, "offensive", "test")]
    want = passages(_rows(shared_datasets, TWEET, "hate", "train"), _text_columns(db, TWEET, "hate"), items)
    assert (got["source"], got["source_file"], got["config"], got["task"]) == (
        "eval_results", ".eval_results/offensive.yaml", "offensive", "offensive")
    assert got["training_rows_with_passages"] == want
    assert got["rows_evaluated"] == len(items) and got["measured_by"] == "bench-2026"
    assert got["status"] == ("at_risk" if want else "clean")


@pytest.mark.slow
def test_undeclared_is_never_clean_and_the_lookup_is_bounded(shared_scores):
    view = _view(shared_scores["db"])
    got = view[("ner/zero-shot", CONLL, "test")]
    assert got["declared_datasets"] == [] and got["status"] == "undeclared"
    assert got["rows_in_training_raw"] is None and got["rows_in_training_normalized"] is None
    assert len(view) == 6
    summary, stats = shared_scores["summary"], shared_scores["stats"]
    # one listing page per surveyed dataset, one file call for the .eval_results file, one for eval.yaml
    assert summary.surveyed == 4 and summary.looked_up == 4 and summary.scores == 6
    assert (summary.api_calls, summary.file_calls) == (stats["models"], stats["resolve_get"]) == (4, 2)
    with Store(shared_scores["db"], read_only=True) as store:
        lookups = store.records("SELECT dataset_id, models, capped, scores, api_calls, status FROM score_lookups ORDER BY 1")
    assert [(r["dataset_id"], r["capped"], r["status"]) for r in lookups] == [(d, False, "listed") for d in sorted(
        d for d, _ in SURVEYED)]


@pytest.mark.slow
def test_the_command_lists_again_only_what_changed_and_records_the_cap(shared_scores, tmp_path, monkeypatch):
    db = tmp_path / "r.duckdb"
    shutil.copy(shared_scores["db"], db)
    monkeypatch.setenv("HF_ENDPOINT", shared_scores["url"])
    unchanged = runner.invoke(app, ["scores", "--db", str(db), "--rate", "0", "--max-models", "10"])  # the fixture's cap
    assert unchanged.exit_code == 0, unchanged.output
    assert "0 listed on the Hub" in unchanged.stdout and "4 unchanged" in unchanged.stdout
    capped = runner.invoke(app, ["scores", "--db", str(db), "--rate", "0", "--max-models", "1"])
    assert capped.exit_code == 0, capped.output
    with Store(db, read_only=True) as store:
        rows = store.records("SELECT dataset_id, models, capped FROM score_lookups WHERE dataset_id = $d", {"d": CONLL})
        runs = store.records("SELECT command, status FROM runs WHERE command = 'scores' ORDER BY started_at")
    assert rows == [{"dataset_id": CONLL, "models": 1, "capped": True}]  # two models are listed by conll2003
    assert [r["status"] for r in runs] == ["done", "done"]


@pytest.mark.slow
def test_the_standin_serves_model_info_files_and_eval_yaml(tmp_path):
    (tmp_path / "index.json").write_text(json.dumps({"datasets": [], "models": MODELS[3:]}))
    with StandinHub(tmp_path) as hub:
        api = HfApi(endpoint=hub.url, token=False)
        info = api.model_info("tw/offense-eval")
        assert ".eval_results/offensive.yaml" in [s.rfilename for s in info.siblings]
        client = HubClient(endpoint=hub.url, token=False, rate=0, file_rate=0, cache_dir=tmp_path / "c", max_wait=0.05)
        body = client.small_file("tw/offense-eval", ".eval_results/offensive.yaml")
        assert sc.eval_results_entries(body, "f")[0][0]["value"] == 77.0
        assert client.small_file("tw/offense-eval", ".eval_results/missing.yaml") is None
        listed = client.list_models_declaring(CONLL, limit=5, expand=("sha", "cardData", "siblings"), raw=True)
        assert [m["id"] for m in listed] == ["ner/zero-shot"]  # the tag the Hub derives from its model-index
        assert listed[0]["cardData"]["model-index"][0]["results"][0]["dataset"]["type"] == CONLL


@pytest.mark.slow
def test_a_hub_fault_is_one_line_the_earlier_scores_stay_and_the_next_lookup_lists_it_again(shared_scores, tmp_path):
    from hubsurvey_standin import Faults
    from hubsurvey_standin.faults import Scope

    db = tmp_path / "r.duckdb"
    shutil.copy(shared_scores["db"], db)
    hub, client = shared_scores["hub"], shared_scores["client"]
    with Store(db) as store:
        before = store.records("SELECT * FROM reported_scores ORDER BY score_id")
        hub.set_faults(Faults(hostile_every=1, hostile="html", scope=Scope(frozenset({"models"}), CONLL)))
        try:
            failed = sc.lookup_scores(store, client, max_models=10, relookup=True)
        finally:
            hub.set_faults(Faults())
        lookup = store.records("SELECT status, error_class, error_message, models FROM score_lookups "
                               "WHERE dataset_id = $d", {"d": CONLL})[0]
        kept = store.records("SELECT * EXCLUDE (looked_up_at) FROM reported_scores WHERE listed_via = $d "
                             "ORDER BY score_id", {"d": CONLL})
        again = sc.lookup_scores(store, client, max_models=10)
    (line,) = failed.failed
    assert CONLL in line and "not JSON" in line and "\n" not in line
    assert (lookup["status"], lookup["error_class"], lookup["error_message"], lookup["models"]) == (
        "failed", "hub_fault", line, None)
    assert kept == [{k: v for k, v in r.items() if k != "looked_up_at"} for r in before if r["listed_via"] == CONLL]
    assert failed.looked_up == 3  # the other datasets were listed
    assert (again.looked_up, again.unchanged) == (1, 3)  # only the failed one, again


@pytest.mark.slow
def test_the_report_the_results_dataset_the_site_and_notify_show_them(shared_scores, tmp_path):
    from hubsurvey.analysis.export import SCORES_CSV_PATH, SCORES_PARQUET_PATH, export_results
    from hubsurvey.analysis.notify import candidate, render_message
    from hubsurvey.analysis.report import render_report
    from hubsurvey.analysis.site import build_site, dataset_page_path

    db = shared_scores["db"]
    view = _view(db)
    at_risk = sorted(k for k, r in view.items() if r["status"] == "at_risk")
    with Store(db, read_only=True) as store:
        render_report(store, tmp_path / "report")
        export_results(store, tmp_path / "export")
        build_site(store, tmp_path / "site")
        conll = candidate(store, {"dataset_id": CONLL, "verdict": "unreliable", "verdict_basis": "text", "pct": 10.0},
                          "normalized")
    report = (tmp_path / "report" / "REPORT.md").read_text()
    section = report[report.index("Scores at risk"):report.index("## Since the last run")]
    assert f"{len(at_risk)} are **at risk**" in section and "1 come from a model" in section
    assert all(model in section for model, _, _ in at_risk)
    exported = pq.read_table(tmp_path / "export" / SCORES_PARQUET_PATH).to_pylist()
    assert len(exported) == len(view) and "run_id" not in exported[0]
    assert (tmp_path / "export" / SCORES_CSV_PATH).read_text().count("\n") == len(view) + 1
    page = (tmp_path / "site" / "scores.html").read_text()
    assert page.count('data-field="score_model"') == len(at_risk) and 'id="scores-filter"' in page
    conll_page = (tmp_path / "site" / dataset_page_path(CONLL)).read_text()
    assert conll_page.count('data-field="score_flag"') == 3  # two at risk, one undeclared
    assert 'class="flag flag-at_risk">at risk' in conll_page and 'class="flag flag-undeclared">undeclared' in conll_page
    message = render_message(conll)
    assert conll.scores == {"reported": 3, "at_risk": 2}
    assert "2 of the 3 scores that Hub models report on this dataset" in message
    _search_in_a_browser(tmp_path / "site" / "scores.html", len(at_risk))


def _search_in_a_browser(page_path: Path, rows: int) -> None:
    """The ranking's search box in headless Chromium: shown and filtering with script, absent without
    (the whole table is there). Skipped without playwright or the system's Chromium."""
    chromium = Path("/usr/bin/chromium")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        return
    if not chromium.exists():
        return
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(chromium), args=["--no-sandbox", "--disable-gpu"])
        try:
            page = browser.new_page()
            page.goto(page_path.as_uri())
            assert page.is_visible("#scores-filter") and page.inner_text("#scores-count") == f"{rows} of {rows} shown"
            page.fill("#scores-filter", "zero-shot-nothing")
            assert page.inner_text("#scores-count") == f"0 of {rows} shown"
            page.fill("#scores-filter", "conll-bert validation")
            shown = page.query_selector_all("#scores-table tbody tr:not([hidden])")
            assert len(shown) == 1 and "conll-bert" in shown[0].inner_text()
            plain = browser.new_page(java_script_enabled=False)
            plain.goto(page_path.as_uri())
            assert not plain.is_visible("#scores-filter")
            assert len(plain.query_selector_all("#scores-table tbody tr")) == rows
        finally:
            browser.close()


def test_the_scores_step_runs_after_crossleaks_and_before_the_report():
    from hubsurvey.core.steps import RunOptions
    from hubsurvey.pipeline import run_steps

    names = [s.name for s in run_steps()]
    assert names.index("crossleaks") < names.index("scores") < names.index("report")
    assert names.index("exposure") < names.index("scores")
    assert RunOptions().scores is True and RunOptions(scores=False).as_json()["scores"] is False


@pytest.mark.slow
def test_a_gated_benchmark_leaves_its_split_unknown_and_fails_nothing(tmp_path):
    (tmp_path / "index.json").write_text(json.dumps({
        "datasets": [{"id": "org/gated-bench", "gated": "manual"}, {"id": "org/open-bench"}],
        "evals": {"org/gated-bench": {"tasks": [{"id": "main", "config": "default", "split": "test"}]},
                  "org/open-bench": {"tasks": [{"id": "main", "config": "default", "split": "test"}]}}}))
    with StandinHub(tmp_path) as hub:
        client = HubClient(endpoint=hub.url, token=False, rate=0, file_rate=0, cache_dir=tmp_path / "c", max_wait=0.05)
        benchmarks = sc._Benchmarks(client)
        assert benchmarks.split_of("org/gated-bench", "main") is None
        assert benchmarks.split_of("org/open-bench", "main") == {"config": "default", "split": "test"}
        assert benchmarks.split_of("org/open-bench", None) == {"config": "default", "split": "test"}  # its one task
        assert benchmarks.split_of("not a dataset id", "main") is None


@pytest.mark.slow
def test_out_of_time_leaves_the_datasets_not_listed_for_the_next_lookup(shared_scores, tmp_path):
    db = tmp_path / "r.duckdb"
    shutil.copy(shared_scores["db"], db)
    answers = iter([False, True])
    with Store(db) as store:
        cut = sc.lookup_scores(store, shared_scores["client"], max_models=10, relookup=True,
                               out_of_time=lambda: next(answers, True))
        rest = sc.lookup_scores(store, shared_scores["client"], max_models=5)  # a new cap: every one is due
    assert (cut.looked_up, cut.left) == (1, 3) and "3 left for the next lookup" in cut.line()
    assert (rest.looked_up, rest.left) == (4, 0)
