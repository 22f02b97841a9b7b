"""Findings on a DB built by surveying the mini-hub equal values computed by hand from its
planted truth (truth.json), in plain Python, independently of the SQL."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from hubsurvey.analysis.findings import findings
from hubsurvey.core.hub import HubClient
from hubsurvey.core.store import Store
from hubsurvey.pipeline import RunOptions, run_survey
from hubsurvey_standin import StandinHub, generate_minihub

# Surveying the mini-hub (a stand-in server and two worker processes) takes seconds.
pytestmark = pytest.mark.slow

THRESHOLDS = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0,
              10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0]


@pytest.fixture(scope="module")
def surveyed(tmp_path_factory) -> tuple[Path, list[dict], dict[str, str]]:
    """The surveyed DB, the planted figures of every measured config, and each dataset's planted
    crawl outcome (``eligible``, an exclusion reason, or ``error:<cause>``)."""
    tmp = tmp_path_factory.mktemp("minihub-findings")
    root = generate_minihub(tmp / "hub", seed=0)
    with StandinHub(root) as hub:
        client = HubClient(endpoint=hub.url, token=False, rate=0, file_rate=0, cache_dir=tmp / "cache")
        summary = run_survey(tmp / "r.duckdb", client, None, RunOptions(workers=2))
    assert summary.failed == 0
    truth = json.loads((root / "truth.json").read_text())
    return tmp / "r.duckdb", [t["figures"] for t in truth["measurements"]], truth["expected"]


def _pct(n: int, d: int) -> float | None:
    return round(100.0 * n / d, 2) if d else None


def test_split_findings_equal_hand_computed(surveyed):
    db, truth, _ = surveyed
    with Store(db) as store:
        got = {(r["split"], r["key"]): r for r in findings(store)["splits"]}
    for key in ("text", "text_and_label"):
        for split in ("train", "validation", "test"):
            if split == "test":
                pairs = [(f[f"{key}_leaks_train_wrt_test"], f[f"{key}_leaks_validation_wrt_test"]) for f in truth]
                leaks = [(a or 0) + (b or 0) for a, b in pairs if a is not None or b is not None]
            else:
                column = f"{key}_leaks_{split}_wrt_test"
                leaks = [f[column] for f in truth if f[column] is not None]
            dups = [f[f"{key}_duplication_{split}"] for f in truth if f[f"{key}_duplication_{split}"] is not None]
            row = got[(split, key)]
            assert (row["with_leak"], row["leak_denominator"]) == (sum(x > 0 for x in leaks), len(leaks)), (split, key)
            assert row["pct_with_leak"] == _pct(sum(x > 0 for x in leaks), len(leaks))
            with_duplicate = (row["with_duplicate"], row["duplicate_denominator"])
            assert with_duplicate == (sum(x > 0 for x in dups), len(dups)), (split, key)
    # The mini-hub has a dataset without a validation split and one without a label column:
    assert got[("validation", "text")]["leak_denominator"] < got[("train", "text")]["leak_denominator"]
    assert got[("train", "text_and_label")]["leak_denominator"] < got[("train", "text")]["leak_denominator"]


def test_test_bias_and_annotation_findings_equal_hand_computed(surveyed):
    db, truth, _ = surveyed
    with Store(db) as store:
        result = findings(store)
    rows = {r["threshold_pct"]: r for r in result["test_bias"]}
    assert sorted(rows) == THRESHOLDS
    for key in ("text", "text_and_label"):
        values = [round(f[f"{key}_test_biased"], 3) for f in truth if f[f"{key}_test_biased"] is not None]
        for threshold in THRESHOLDS:
            at_least = sum(v >= threshold for v in values)
            assert rows[threshold][f"{key}_at_least"] == at_least, (key, threshold)
            assert rows[threshold][f"{key}_denominator"] == len(values)
    diffs = [f["difference_annotation"] for f in truth if f["difference_annotation"] is not None]
    (annotation,) = result["annotation"]
    assert annotation["with_difference"] == sum(d > 0 for d in diffs) and annotation["denominator"] == len(diffs)
    assert 0 < annotation["with_difference"] < annotation["denominator"]  # the mini-hub plants relabelled leaks


def test_exclusions_by_reason_come_from_the_crawl(surveyed):
    db, _, expected = surveyed
    with Store(db) as store:
        failures = findings(store)["failures"]
        excluded = dict(store.query(
            "SELECT exclusion_reason, count(*) FROM datasets WHERE status = 'excluded' GROUP BY 1"
        )[1])
    reported = {r["reason"]: r["count"] for r in failures if r["kind"] == "excluded dataset"}
    assert reported == excluded
    # Every planted dataset is listed but the private one (the survey has no token).
    listed = sum(outcome != "error:private" for outcome in expected.values())
    assert all(r["denominator"] == listed for r in failures if r["kind"] == "excluded dataset")
    # The planted exclusion reasons (not errors, found by reading files) are counted exactly.
    planted = Counter(o for o in expected.values() if o != "eligible" and not o.startswith("error:"))
    assert planted["gated"] and planted["not_text"]  # the mini-hub plants both
    assert {reason: excluded.get(reason, 0) for reason in planted} == dict(planted)


def test_per_column_figures_stored_by_the_survey_equal_the_truth(surveyed):
    """The survey stores each multi-column config's figures per text column (column_measurements),
    equal to truth.json's, and findings_shared_columns counts those configs."""
    db, _, _ = surveyed
    truth = json.loads((db.parent / "hub" / "truth.json").read_text())["measurements"]
    planted = {(m["dataset_id"], m["config"], m["label_column"]): m["per_column"] for m in truth if "per_column" in m}
    with Store(db) as store:
        stored = store.records("SELECT * FROM column_measurements")
        overview = findings(store)["shared_columns_overview"][0]
    got: dict[tuple, dict] = {}
    for r in stored:
        figures = {k: v for k, v in r.items() if k in planted[(r["dataset_id"], r["config"], r["label_column"])]
                   [r["text_column"]][r["profile"]]}
        got.setdefault((r["dataset_id"], r["config"], r["label_column"]), {}).setdefault(r["text_column"], {})[r["profile"]] = figures
    assert got.keys() == planted.keys()
    for key, by_column in planted.items():
        for column, by_profile in by_column.items():
            for profile, figures in by_profile.items():
                for name, value in figures.items():
                    found = got[key][column][profile][name]
                    assert found == pytest.approx(value) if isinstance(value, float) else found == value, (key, column, name)
    assert overview["configs"] == len({(d, c) for d, c, _ in planted})
    assert overview["configs_shared"] >= 2  # the shared passages and the shared premises
