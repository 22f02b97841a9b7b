"""Models that declare contaminated training data (exposure-2026), through the stand-in: the planted
models appear for the contaminated datasets only, the cap, incremental lookups (counted requests),
Hub faults during the listing, the command, the run's step, the view, the report and the export."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import standin_client
from huggingface_hub import HfApi
from typer.testing import CliRunner

from hubsurvey import __version__
from hubsurvey.cli import app
from hubsurvey.core.figures import LLE_METHOD
from hubsurvey.core.hub import MODEL_EXPAND, HubClient
from hubsurvey.core.splits import SPLIT_ALIASES
from hubsurvey.core.steps import RunContext, RunOptions
from hubsurvey.core.store import Store, insert, now
from hubsurvey.survey import contamination as bench
from hubsurvey.survey import exposure as ex
from hubsurvey_standin import Faults, StandinHub
from hubsurvey_standin.faults import Scope


def truth_of(minihub: Path) -> dict:
    return json.loads((minihub / "truth.json").read_text())


def sha_of(hub: StandinHub, dataset_id: str) -> str:
    return hub.catalog.get(dataset_id).main.sha


def measure(store: Store, dataset_id: str, config: str, sha: str, text_columns: list[str]) -> None:
    """A survey row of (dataset, config) at ``sha``: what current_measurements needs to call it current."""
    with store.transaction() as con:
        insert(con, "measurements", {
            "measurement_id": f"{dataset_id}@{sha}/{config}", "dataset_id": dataset_id, "revision_sha": sha,
            "config": config, "text_columns": text_columns, "roles_source": "inferred", "dataset_name": dataset_id,
            "test_split": "test", "rows_test": 1, "source": "hub", "method": LLE_METHOD, "method_version": 1,
            "tool_version": __version__, "measured_at": now()})


def check(store: Store, minihub: Path, hub: StandinHub, dataset_id: str, config: str, sha: str,
          counts: dict[tuple[str, str], int] | None = None) -> None:
    """The contamination check's rows of one config at ``sha``, as the 13-gram scan finds them (the
    mini-hub's truth, which tests/survey/test_contamination.py shows the scan equals), or ``counts``
    ((canonical split, benchmark id) -> rows) in their place."""
    truth = truth_of(minihub)
    own = next(e["configs"] for e in json.loads((minihub / "index.json").read_text())["datasets"] if e["id"] == dataset_id)
    text_columns = next(m["text_columns"] for m in truth["measurements"] if (m["dataset_id"], m["config"]) == (dataset_id, config))
    rows = []
    for t in truth["contamination"]:
        if (t["dataset_id"], t["config"]) != (dataset_id, config):
            continue
        split_name = next(s for s in own[config] if SPLIT_ALIASES[s] == t["split"])
        n = t["contaminated_rows"] if counts is None else counts.get((t["split"], t["benchmark_id"]), 0)
        total = own[config][split_name]
        rows.append({"dataset_id": dataset_id, "revision_sha": sha, "config": config, "split": t["split"],
                     "split_name": split_name, "rows_split": total, "text_columns": text_columns,
                     "benchmark_id": t["benchmark_id"], "benchmark_config": t["benchmark_config"],
                     "benchmark_split": t["benchmark_split"], "benchmark_revision": sha_of(hub, t["benchmark_id"]),
                     "contaminated_rows": n, "contaminated_pct": 100 * n / total, "examples": [], "candidates": n,
                     "verified": n, "method": bench.METHOD, "method_version": bench.METHOD_VERSION,
                     "tool_version": __version__, "measured_at": now(), "run_id": None})
    checked = [(b["id"], b["config"], b["split"]) for b in truth["benchmarks"]]
    store.replace_contamination(dataset_id, sha, config, checked, rows)


def survey_db(path: Path, minihub: Path, hub: StandinHub) -> Path:
    """A DB holding every eligible mini-hub config measured at its current sha and checked against
    the mini-hub's benchmarks."""
    with Store(path) as store:
        for m in truth_of(minihub)["measurements"]:
            sha = sha_of(hub, m["dataset_id"])
            if not store.query("SELECT 1 FROM measurements WHERE measurement_id = $i",
                               {"i": f"{m['dataset_id']}@{sha}/{m['config']}"})[1]:
                measure(store, m["dataset_id"], m["config"], sha, m["text_columns"])
                check(store, minihub, hub, m["dataset_id"], m["config"], sha)
    return path


def declared(store: Store) -> dict[str, list[str]]:
    """dataset -> the models stored as declaring it, sorted."""
    out: dict[str, list[str]] = {}
    for dataset_id, model_id in store.query("SELECT DISTINCT dataset_id, model_id FROM model_exposure ORDER BY ALL")[1]:
        out.setdefault(dataset_id, []).append(model_id)
    return out


# --- the stand-in speaks what huggingface_hub sends ------------------------------------------------------

def test_the_standin_lists_models_as_huggingface_hub_asks_for_them(minihub):
    with StandinHub(minihub, page_size=2, valid_tokens={"hf_approved"}) as hub:
        api = HfApi(endpoint=hub.url, token=False)
        listed = list(api.list_models(filter="dataset:mini-nlp/sentiment", expand=list(MODEL_EXPAND)))
        pages = hub.stats()["models"]
        limited = [m.id for m in api.list_models(filter="dataset:mini-nlp/sentiment", limit=3)]
        both = [m.id for m in api.list_models(filter=["dataset:mini-nlp/intents_dev", "dataset:mini-lab/messy_text"])]
        private = [m.id for m in HfApi(endpoint=hub.url, token="hf_approved").list_models(
            filter="dataset:mini-nlp/intents_dev")]
        public = [m.id for m in api.list_models(filter="dataset:mini-nlp/intents_dev")]
        default = next(iter(api.list_models(search="nli-base")))
    assert [m.id for m in listed] == [f"mini-models/sentiment-ft-{n}" for n in range(5)]
    assert pages == 3  # five models, two a page: the Link pages were followed
    assert all(m.sha and m.card_data.datasets == ["mini-nlp/sentiment"] and "dataset:mini-nlp/sentiment" in m.tags
               for m in listed)
    assert limited == [f"mini-models/sentiment-ft-{n}" for n in range(3)]
    assert both == []  # every filter must match: no model declares both
    assert public == ["mini-models/intent-classifier"]
    assert private == ["mini-models/intent-classifier", "mini-models/private-tuned"]  # an approved token sees it
    assert default.card_data is None and default.sha is None and "dataset:mini-nlp/nli_pairs" in default.tags


def test_the_client_sends_its_token_with_the_listing(minihub, tmp_path):
    with StandinHub(minihub, valid_tokens={"hf_approved"}) as hub:
        approved = standin_client(hub, tmp_path / "cache", token="hf_approved")
        anonymous = standin_client(hub, tmp_path / "cache")
        seen = [m.id for m in approved.list_models_declaring("mini-nlp/intents_dev", limit=10)]
        public = [m.id for m in anonymous.list_models_declaring("mini-nlp/intents_dev", limit=10)]
    assert seen == ["mini-models/intent-classifier", "mini-models/private-tuned"]
    assert public == ["mini-models/intent-classifier"]


# --- the lookup -------------------------------------------------------------------------------------------

def test_the_planted_models_appear_for_the_contaminated_datasets_only(minihub, tmp_path):
    truth = truth_of(minihub)
    with StandinHub(minihub) as hub:
        db = survey_db(tmp_path / "r.duckdb", minihub, hub)
        client = standin_client(hub, tmp_path / "cache")
        with Store(db) as store:
            summary = ex.lookup_exposure(store, client)
            stored, rows = declared(store), store.records("SELECT * FROM model_exposure")
            lookups = {r["dataset_id"]: r for r in store.records("SELECT * FROM exposure_lookups")}
        requests = hub.stats()["models"]
        paced = (client.calls, client.file_calls)
        # the library's own listing, against the same stand-in, is the reference
        api = HfApi(endpoint=hub.url, token=False)
        reference = {d: [m.id for m in api.list_models(filter=f"dataset:{d}")] for d in truth["exposure"]}
        shas = {m["id"]: m["sha"] for m in hub.catalog.models.values()}
    expected = {d: sorted(models) for d, models in truth["exposure"].items() if models}
    assert stored == expected == {d: sorted(m) for d, m in reference.items() if m}
    assert set(lookups) == set(truth["exposure"])  # every contaminated dataset, and only those, was listed
    assert requests == len(truth["exposure"]) == summary.looked_up == summary.contaminated
    assert paced == (requests, 0)  # every listing went through the client's API bucket
    assert summary.counts() == {"datasets_contaminated": 8, "datasets_looked_up": 8, "datasets_unchanged": 0,
                                "datasets_capped": 0, "models": 10, "datasets_failed": 0, "datasets_left": 0,
                                "datasets_cleared": 0}
    flat = {m for models in stored.values() for m in models}
    assert "mini-models/clean-lm" not in flat  # it declares clean datasets only
    assert "mini-models/private-tuned" not in flat  # private: not listed without a token
    by_model = {r["model_id"]: r for r in rows}
    assert by_model["mini-models/ner-tagged"]["declared_by"] == ex.DECLARED_BY_TAG  # its card names no dataset
    assert by_model["mini-models/topic-tagger"]["declared_by"] == ex.DECLARED_BY_CARD  # datasets: as one string
    assert all(r["model_sha"] == shas[r["model_id"]] for r in rows)
    # one row per (model, contaminated split and benchmark), with the contamination check's counts
    contaminated = {(t["dataset_id"], t["split"], t["benchmark_id"]): t["contaminated_rows"]
                    for t in truth["contamination"] if t["contaminated_rows"]}
    got = {(r["model_id"], r["dataset_id"], r["split"], r["benchmark_id"]): r["contaminated_rows"] for r in rows}
    assert got == {(m, d, s, b): n for (d, s, b), n in contaminated.items() for m in expected.get(d, [])}
    assert all(r["method"] == ex.METHOD and r["tool_version"] == __version__ and r["revision_sha"] for r in rows)
    assert all(lk["status"] == "listed" and lk["capped"] is False and lk["max_models"] == ex.DEFAULT_MAX_MODELS
               for lk in lookups.values())


def test_the_cap_is_kept_and_recorded(minihub, tmp_path):
    with StandinHub(minihub, page_size=2) as hub:
        db = survey_db(tmp_path / "r.duckdb", minihub, hub)
        client = standin_client(hub, tmp_path / "cache")
        with Store(db) as store:
            summary = ex.lookup_exposure(store, client, max_models=3)
            capped = store.records("SELECT * FROM exposure_lookups WHERE dataset_id = 'mini-nlp/sentiment'")[0]
            three = declared(store)["mini-nlp/sentiment"]
            others = store.records("SELECT capped, models FROM exposure_lookups WHERE dataset_id <> 'mini-nlp/sentiment'")
            from hubsurvey.analysis.findings import create_views

            create_views(store)
            (overview,) = store.records("SELECT * FROM findings_model_exposure_overview")
            # five models declare it: a cap of five keeps them all and is not reached
            again = ex.lookup_exposure(store, client, max_models=5)
            five = store.records("SELECT capped, models FROM exposure_lookups WHERE dataset_id = 'mini-nlp/sentiment'")[0]
    assert (capped["models"], capped["capped"], capped["max_models"]) == (3, True, 3)
    assert three == [f"mini-models/sentiment-ft-{n}" for n in range(3)]  # the Hub's first three (ids sort as listed)
    assert all(o["capped"] is False and o["models"] <= 1 for o in others)
    assert summary.capped == 1 and summary.models == {*three, "mini-models/intent-classifier",
                                                      "mini-models/review-sentiment", "mini-models/nli-base",
                                                      "mini-models/topic-tagger", "mini-models/ner-tagged"}
    assert overview["datasets_capped"] == 1 and overview["capped_datasets"] == "mini-nlp/sentiment"
    assert overview["max_models"] == "3" and overview["models"] == 8 and overview["benchmarks"] == 2
    assert again.looked_up == 8  # the cap changed: every dataset is listed again
    assert five == {"capped": False, "models": 5}


def test_a_lookup_lists_again_only_what_changed(minihub, tmp_path):
    with StandinHub(minihub) as hub:
        db = survey_db(tmp_path / "r.duckdb", minihub, hub)
        client = standin_client(hub, tmp_path / "cache")
        with Store(db) as store:
            ex.lookup_exposure(store, client)
            first = store.records("SELECT * FROM model_exposure WHERE dataset_id = 'mini-nlp/intents_dev'")
            hub.reset_stats()
            unchanged = ex.lookup_exposure(store, client)
            assert hub.stats()["models"] == 0  # nothing changed: no listing call at all
            assert (unchanged.looked_up, unchanged.unchanged) == (0, 8)

            # the contamination of one dataset changes (a check against a new benchmark revision finds more)
            check(store, minihub, hub, "mini-nlp/intents_dev", "default", sha_of(hub, "mini-nlp/intents_dev"),
                  {("train", "mini-nlp/qa_small"): 9})
            changed = ex.lookup_exposure(store, client)
            assert hub.stats()["models"] == 1 and (changed.looked_up, changed.unchanged) == (1, 7)
            (row,) = store.records("SELECT * FROM model_exposure WHERE dataset_id = 'mini-nlp/intents_dev'")
            assert (first[0]["contaminated_rows"], row["contaminated_rows"]) == (6, 9)

            # a new revision of another one, measured and checked again: the same contamination, a new revision
            hub.reset_stats()
            new_sha = "ab" * 20
            hub.set_sha("mini-nlp/topics_no_val", new_sha)
            measure(store, "mini-nlp/topics_no_val", "default", new_sha, ["text"])
            check(store, minihub, hub, "mini-nlp/topics_no_val", "default", new_sha)
            moved = ex.lookup_exposure(store, client)
            assert hub.stats()["models"] == 1 and moved.looked_up == 1
            assert store.query("SELECT DISTINCT revision_sha FROM model_exposure "
                               "WHERE dataset_id = 'mini-nlp/topics_no_val'")[1] == [(new_sha,)]
            assert store.query("SELECT revision_sha FROM exposure_lookups "
                               "WHERE dataset_id = 'mini-nlp/topics_no_val'")[1] == [(new_sha,)]

            # a dataset whose new check finds nothing is not listed, and loses the models it had
            hub.reset_stats()
            check(store, minihub, hub, "mini-nlp/toy_ner", "default", sha_of(hub, "mini-nlp/toy_ner"), {})
            cleaned = ex.lookup_exposure(store, client)
            assert hub.stats()["models"] == 0 and (cleaned.contaminated, cleaned.cleared) == (7, 1)
            assert store.records("SELECT count(*) AS n FROM model_exposure WHERE dataset_id = 'mini-nlp/toy_ner'") == [{"n": 0}]
            assert store.records("SELECT status, models FROM exposure_lookups WHERE dataset_id = 'mini-nlp/toy_ner'") == \
                [{"status": "clean", "models": 0}]
            assert ex.lookup_exposure(store, client).cleared == 0  # once
            hub.reset_stats()
            assert ex.lookup_exposure(store, client, relookup=True).looked_up == 7 and hub.stats()["models"] == 7


def test_a_hub_fault_during_a_listing_is_classified_and_the_lookup_goes_on(minihub, tmp_path):
    faults = Faults(hostile_every=1, hostile="html", scope=Scope(frozenset({"models"}), "mini-nlp/intents_dev"))
    with StandinHub(minihub) as hub:
        db = survey_db(tmp_path / "r.duckdb", minihub, hub)
        client = standin_client(hub, tmp_path / "cache", max_attempts=2)
        with Store(db) as store:
            ex.lookup_exposure(store, client)
            before = store.records("SELECT * FROM model_exposure WHERE dataset_id = 'mini-nlp/intents_dev' ORDER BY ALL")
            # its contamination changes, and the Hub answers its listing with an HTML page
            check(store, minihub, hub, "mini-nlp/intents_dev", "default", sha_of(hub, "mini-nlp/intents_dev"),
                  {("train", "mini-nlp/qa_small"): 9})
            check(store, minihub, hub, "mini-nlp/nli_pairs", "default", sha_of(hub, "mini-nlp/nli_pairs"),
                  {("train", "mini-nlp/qa_small"): 3})
            hub.set_faults(faults)
            hub.reset_stats()
            summary = ex.lookup_exposure(store, client)
            failed = store.records("SELECT * FROM exposure_lookups WHERE dataset_id = 'mini-nlp/intents_dev'")[0]
            kept = store.records("SELECT * FROM model_exposure WHERE dataset_id = 'mini-nlp/intents_dev' ORDER BY ALL")
            nli = store.records("SELECT contaminated_rows FROM model_exposure WHERE dataset_id = 'mini-nlp/nli_pairs' "
                                "AND benchmark_id = 'mini-nlp/qa_small'")
            assert hub.stats()["models"] == 3  # two attempts at the faulty listing, one for the other
            hub.set_faults(Faults())
            hub.reset_stats()
            retried = ex.lookup_exposure(store, client)
            assert hub.stats()["models"] == 1  # only the failed listing, again
            healed = store.records("SELECT contaminated_rows, status FROM model_exposure JOIN exposure_lookups "
                                   "USING (dataset_id) WHERE dataset_id = 'mini-nlp/intents_dev'")
    assert (summary.looked_up, len(summary.failed)) == (1, 1)
    (line,) = summary.failed
    assert line.startswith("listing the models that declare mini-nlp/intents_dev") and "not JSON" in line
    assert (failed["status"], failed["error_class"], failed["error_message"]) == ("failed", "hub_fault", line)
    assert failed["contamination_digest"] is None and failed["models"] is None
    assert kept == before  # the earlier listing's rows stay as they were
    assert nli == [{"contaminated_rows": 3}]  # the other dataset was listed
    assert retried.looked_up == 1 and retried.unchanged == 7
    assert healed == [{"contaminated_rows": 9, "status": "listed"}]


def test_an_unreachable_hub_ends_the_lookup_and_the_command_says_so(minihub, tmp_path):
    with StandinHub(minihub) as hub:
        db = survey_db(tmp_path / "r.duckdb", minihub, hub)
    offline = HubClient(endpoint="http://127.0.0.1:9", token=False, rate=0, cache_dir=tmp_path / "c")
    with Store(db) as store:
        summary = ex.lookup_exposure(store, offline)
        lookups = store.records("SELECT status, error_class FROM exposure_lookups")
    assert isinstance(summary.stopped, ex.HubUnreachableError)
    assert (summary.looked_up, len(summary.failed), summary.left) == (0, 1, 7)
    assert lookups == [{"status": "failed", "error_class": "offline"}]
    result = CliRunner().invoke(app, ["exposure", "--db", str(db), "--rate", "0"], env={"HF_ENDPOINT": "http://127.0.0.1:9"})
    assert result.exit_code == 4, result.output
    with Store(db) as store:
        (run,) = store.records("SELECT status, error_class, counts FROM runs WHERE command = 'exposure'")
    assert (run["status"], run["error_class"]) == ("failed", "offline")
    assert json.loads(run["counts"])["datasets_left"] == 7
    missing = CliRunner().invoke(app, ["exposure", "--db", str(tmp_path / "none.duckdb")])
    assert missing.exit_code == 3 and "no such results DB" in missing.output
    assert not (tmp_path / "none.duckdb").exists()


def test_the_command_lists_and_records_a_run(minihub, tmp_path):
    with StandinHub(minihub) as hub:
        db = survey_db(tmp_path / "r.duckdb", minihub, hub)
        env = {"HF_ENDPOINT": hub.url}
        first = CliRunner().invoke(app, ["exposure", "--db", str(db), "--rate", "0", "--max-models", "2"], env=env)
        second = CliRunner().invoke(app, ["exposure", "--db", str(db), "--rate", "0", "--max-models", "2"], env=env)
        requests = hub.stats()["models"]
    assert first.exit_code == 0, first.output
    assert "exposure: 8 contaminated dataset(s), 8 listed on the Hub (1 at the cap), 0 unchanged" in first.output
    assert "findings_model_exposure" in first.output
    assert second.exit_code == 0 and "0 listed on the Hub (0 at the cap), 8 unchanged" in second.output
    assert requests == 8
    with Store(db) as store:
        runs = store.records("SELECT status, args, counts FROM runs WHERE command = 'exposure' ORDER BY started_at")
    assert [r["status"] for r in runs] == ["done", "done"]
    assert json.loads(runs[0]["args"]) == {"max_models": 2, "relookup": False}
    assert json.loads(runs[0]["counts"])["datasets_capped"] == 1


def test_the_step_runs_after_contamination_unless_switched_off(minihub, tmp_path):
    from hubsurvey.pipeline import run_steps

    names = [s.name for s in run_steps()]
    assert names.index("exposure") == names.index("contamination") + 1
    with StandinHub(minihub) as hub:
        db = survey_db(tmp_path / "r.duckdb", minihub, hub)
        client = standin_client(hub, tmp_path / "cache")
        with Store(db) as store:
            def ctx(**options) -> RunContext:
                return RunContext(store, client, client.settings, RunOptions(**options), "run-test")

            assert ex.ExposureStep().run(ctx(exposure=False)) == {}
            assert hub.stats()["models"] == 0
            pending = ctx()
            pending.counts["measure"] = {"left_pending": 1}  # the jobs are not all done: the next run looks up
            assert ex.ExposureStep().run(pending) == {}
            counts = ex.ExposureStep().run(ctx(max_models=1))
            assert counts["datasets_looked_up"] == 8 and counts["datasets_capped"] == 1
            assert store.query("SELECT DISTINCT run_id FROM model_exposure")[1] == [("run-test",)]
    with Store(tmp_path / "empty.duckdb") as store:  # nothing contaminated: nothing to record, no call
        empty = RunContext(store, client, client.settings, RunOptions(), "run-empty")
        assert ex.ExposureStep().run(empty) == {}


# --- the view, the report, the export ----------------------------------------------------------------------

def test_the_view_the_report_and_the_results_dataset(minihub, tmp_path):
    from hubsurvey.analysis.card import render_card
    from hubsurvey.analysis.export import EXPOSURE_CSV_PATH, EXPOSURE_PARQUET_PATH, export_results
    from hubsurvey.analysis.findings import create_views
    from hubsurvey.analysis.report import render_report

    with StandinHub(minihub) as hub:
        db = survey_db(tmp_path / "r.duckdb", minihub, hub)
        with Store(db) as store:
            ex.lookup_exposure(store, standin_client(hub, tmp_path / "cache"))
    with Store(db, read_only=True) as store:
        create_views(store)
        view = store.records("SELECT * FROM findings_model_exposure")
        written = export_results(store, tmp_path / "export")
        card = render_card(store, "me/results", [p.relative_to(tmp_path / "export").as_posix() for p in written])
        md, html = render_report(store, tmp_path / "report")
    pairs = {(r["benchmark_id"], r["model_id"]): r for r in view}
    review = pairs[("mini-nlp/qa_small", "mini-models/review-sentiment")]
    assert review["datasets"] == "mini-nlp/reviews_valid (4 rows in default/train)"
    assert (review["contaminated_rows"], review["datasets_declared"], review["benchmark_copy"]) == (4, 1, False)
    assert review["contaminated_pct"] == round(100 * 4 / review["rows"], 2)
    sentiment = pairs[("mini-nlp/sentiment", "mini-models/sentiment-ft-0")]
    assert sentiment["datasets"] == "mini-nlp/sentiment (18 rows in default/train, 7 rows in default/validation)"
    assert sentiment["contaminated_rows"] == 25
    assert [r["contaminated_rows"] for r in view] == sorted((r["contaminated_rows"] for r in view), reverse=True)
    # every (benchmark, model) the stored rows hold, once
    truth = truth_of(minihub)
    expected = {(t["benchmark_id"], m) for t in truth["contamination"] if t["contaminated_rows"]
                for m in truth["exposure"][t["dataset_id"]]}
    assert set(pairs) == expected
    report = md.read_text()
    assert "## 12. Models that declare contaminated training data" in report
    assert "| mini-nlp/qa_small [default/test] | mini-models/intent-classifier | card:datasets |" in report
    assert "not what the models saw" in report and "12. Models that declare contaminated training data" in html.read_text()
    csv_text = (tmp_path / "export" / EXPOSURE_CSV_PATH).read_text()
    assert csv_text.splitlines()[0].startswith("benchmark_id,benchmark_config,benchmark_split,benchmark_revisions,model_id")
    assert len(csv_text.splitlines()) == len(view) + 1
    import pyarrow.parquet as pq

    assert pq.read_table(tmp_path / "export" / EXPOSURE_PARQUET_PATH).num_rows == len(view)
    assert "config_name: model_exposure" in card and f"`{EXPOSURE_CSV_PATH}`" in card



# --- the whole run ------------------------------------------------------------------------------------------

def benchmarks_file(path: Path, benchmarks: list[dict]) -> Path:
    path.write_text("".join(f"[[benchmark]]\nid = {json.dumps(b['id'])}\nconfig = {json.dumps(b['config'])}\n"
                            f"split = {json.dumps(b['split'])}\ntext_columns = {json.dumps(b['text_columns'])}\n\n"
                            for b in benchmarks))
    return path


@pytest.mark.slow
def test_runs_list_the_models_once_and_again_when_a_revision_changes(minihub, tmp_path):
    from hubsurvey.pipeline import run_survey

    truth = truth_of(minihub)
    options = RunOptions(workers=2, benchmarks=str(benchmarks_file(tmp_path / "b.toml", truth["benchmarks"])),
                         crossleaks=False)
    db = tmp_path / "r.duckdb"
    with StandinHub(minihub, page_size=2) as hub:
        client = standin_client(hub, tmp_path / "cache")
        first = run_survey(db, client, None, options)
        listed = hub.stats()["models"]
        with Store(db) as store:
            stored = declared(store)
        hub.reset_stats()
        second = run_survey(db, client, None, options)
        assert hub.stats()["models"] == 0  # nothing changed: no listing call
        # a new revision of one contaminated dataset, measured and checked again; the Hub answers its
        # listing with an HTML page: a Hub fault, and the run goes on to the end
        hub.set_sha("mini-nlp/intents_dev", "cd" * 20)
        hub.set_faults(Faults(hostile_every=1, hostile="html", scope=Scope(frozenset({"models"}), "mini-nlp/intents_dev")))
        faulty = run_survey(db, client, None, options)
        with Store(db) as store:
            (failed,) = store.records("SELECT status, error_class FROM exposure_lookups WHERE dataset_id = 'mini-nlp/intents_dev'")
        hub.set_faults(Faults())
        hub.reset_stats()
        third = run_survey(db, client, None, options)  # listed again alone
        relisted = hub.stats()["models"]
        with Store(db) as store:
            revisions = store.query("SELECT DISTINCT revision_sha FROM model_exposure WHERE dataset_id = 'mini-nlp/intents_dev'")[1]
            runs = [json.loads(c) for (c,) in store.query("SELECT counts FROM runs WHERE command = 'run' ORDER BY started_at")[1]]
    assert first.status == second.status == third.status == "done"
    assert stored == {d: sorted(m) for d, m in truth["exposure"].items() if m}
    # sentiment's five models take three pages of two; the scores step lists the same datasets for their
    # models' cards (its own calls, counted in its step)
    assert listed == len(truth["exposure"]) + 2 + first.steps["scores"]["api_calls"]
    assert first.steps["exposure"]["datasets_looked_up"] == len(truth["exposure"])
    assert second.steps["exposure"] == {**first.steps["exposure"], "datasets_looked_up": 0, "models": 0,
                                        "datasets_unchanged": len(truth["exposure"])}
    assert faulty.status == "done" and (faulty.failed, faulty.done) == (0, 1)
    assert faulty.steps["exposure"]["datasets_failed"] == 1 and faulty.steps["exposure"]["datasets_looked_up"] == 0
    assert failed == {"status": "failed", "error_class": "hub_fault"}
    assert (third.steps["exposure"]["datasets_looked_up"], third.steps["exposure"]["datasets_failed"]) == (1, 0)
    assert relisted == 1 + third.steps.get("scores", {}).get("api_calls", 0)
    assert revisions == [("cd" * 20,)]
    # recorded with each run
    assert [(r["exposure"]["datasets_looked_up"], r["exposure"]["datasets_failed"]) for r in runs] == \
        [(len(truth["exposure"]), 0), (0, 0), (0, 1), (1, 0)]


def test_a_model_the_hub_lists_twice_counts_once(minihub, tmp_path):
    class Repeating(HubClient):
        """The stand-in's listings, each model given twice (pages that moved while being read)."""

        def list_models_declaring(self, dataset_id: str, *, limit: int) -> list:
            models = super().list_models_declaring(dataset_id, limit=limit)
            return [m for m in models for _ in range(2)][:limit]

    with StandinHub(minihub) as hub:
        db = survey_db(tmp_path / "r.duckdb", minihub, hub)
        client = Repeating(endpoint=hub.url, token=False, rate=0, cache_dir=tmp_path / "cache")
        with Store(db) as store:
            ex.lookup_exposure(store, client, max_models=4)
            rows = store.records("SELECT model_id, count(*) AS n FROM model_exposure "
                                 "WHERE dataset_id = 'mini-nlp/reviews_valid' GROUP BY ALL")
            lookup = store.records("SELECT models FROM exposure_lookups WHERE dataset_id = 'mini-nlp/reviews_valid'")
    assert rows == [{"model_id": "mini-models/review-sentiment", "n": 2}]  # its two (split, benchmark) rows, once
    assert lookup == [{"models": 1}]


@pytest.mark.parametrize("kind", ["html", "malformed_json", "truncated_json", "json_object", "redirect_loop"])
def test_a_hostile_answer_to_the_models_listing_is_a_hub_fault(minihub, tmp_path, kind):
    from hubsurvey.core.errors import HubFaultError

    faults = Faults(hostile_every=1, hostile=kind, scope=Scope(frozenset({"models"}), "mini-nlp/intents_dev"))
    with StandinHub(minihub, faults=faults) as hub:
        client = standin_client(hub, tmp_path / "cache", max_attempts=1)
        with pytest.raises(HubFaultError, match="listing the models that declare mini-nlp/intents_dev"):
            client.list_models_declaring("mini-nlp/intents_dev", limit=10)
        # the fault aims at one dataset's listing: the others are answered
        assert [m.id for m in client.list_models_declaring("mini-nlp/nli_pairs", limit=10)] == ["mini-models/nli-base"]
