"""The near-duplicate findings (near-2026): near vs exact contamination, label-conflicting
near-duplicates, the threshold curve aggregated, and the verdict on near_contaminated_test_pct with its
exact and LLE fallbacks; the report's section 9, its charts and the card.

Measurement rows are planted with the Store (no audit: fast), their figures chosen by hand in NEAR_ROWS
and every expectation below worked out from them in the comments. Rows measured before the near method
(methods without "near-2026", near NULL), before the exact method (methods NULL), and with a near
status that says it computed nothing ("NR: ...") are planted too: the near findings must leave them out.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from hubsurvey.analysis.findings import findings
from hubsurvey.core import figure_docs, figures
from hubsurvey.core.figures import EXACT_METHOD, LLE_METHOD, NEAR_METHOD
from hubsurvey.core.store import Store

ALL = {LLE_METHOD: 1, EXACT_METHOD: 1, NEAR_METHOD: 1}
NO_NEAR = {LLE_METHOD: 1, EXACT_METHOD: 1}
NEAR_INFO = {"threshold": 0.8, "curve": [0.9, 0.8, 0.7, 0.6], "shingle": "char-5", "minhash": "oph-128",
             "bands": 32, "band_rows": 4, "status": "measured", "texts": 100, "candidates": 10, "pairs": 5,
             "capped": False}

# (dataset, config, label columns): the row's splits, its figures and how it was measured.
#   rows:   (train, validation, test) rows (None: no such split)
#   exact:  (normalized_test_rows_contaminated, normalized_test_rows_in_train_conflicting_label per label column)
#   near:   (test_rows_near_train, test_rows_near_validation, test_rows_near_repeated,
#            test_rows_near_contaminated, validation_rows_near_train,
#            test_rows_near_train_conflicting_label per label column)
#   curve:  test_rows_near_train at 0.9, 0.8, 0.7, 0.6 (None: no train split, NR)
#   lle:    (text_leaks_train_wrt_test, text_leaks_validation_wrt_test, text_duplication_test)
#   methods / info: the row's methods JSON and near JSON
NEAR_ROWS: list[dict[str, Any]] = [
    # one-word edits: exact 1 of 50 (2 %: caution on the exact rule), near 6 of 50 (12 %: unreliable);
    # 2 test rows whose near train rows all carry another label, none exactly; its candidates were capped
    dict(dataset="n/edits", config="default", labels=["label"], rows=(100, 20, 50), exact=(1, [0]),
         near=(5, 1, 0, 6, 2, [2]), curve=[3, 5, 8, 10], lle=(1, 0, 0), info={**NEAR_INFO, "capped": True}),
    # near = exact: 1 of 200 (0.5 %, minor); the near conflict is also an exact one
    dict(dataset="n/same", config="default", labels=["label"], rows=(100, None, 200), exact=(1, [1]),
         near=(1, None, 0, 1, None, [1]), curve=[1, 1, 1, 3], lle=(1, None, 0)),
    # nothing
    dict(dataset="n/clean", config="default", labels=["label"], rows=(10, None, 10), exact=(0, [0]),
         near=(0, None, 0, 0, None, [0]), curve=[0, 0, 0, 0], lle=(0, None, 0)),
    # two configs. c1 has no label column (label figures NR): exact 0, near 3 of 100 (3 %).
    # c2 has two label columns (two rows, the text figures repeat): exact 4 = near 4 of 100 (4 %);
    # conflicts: label 0, topic 1 (near and exact): the config keeps its worst label column.
    dict(dataset="n/two", config="c1", labels=[None], rows=(100, None, 100), exact=(0, [None]),
         near=(3, None, 0, 3, None, [None]), curve=[2, 3, 3, 4], lle=(0, None, 0)),
    dict(dataset="n/two", config="c2", labels=["label", "topic"], rows=(100, None, 100), exact=(4, [0, 1]),
         near=(4, None, 0, 4, None, [0, 1]), curve=[4, 4, 4, 5], lle=(4, None, 0)),
    # no train split: near_train, the curve and the conflicts are NR; near 2 of 10 (20 %) via validation
    dict(dataset="n/notrain", config="default", labels=["label"], rows=(None, 10, 10), exact=(1, [None]),
         near=(None, 2, 0, 2, None, [None]), curve=None, lle=(None, 1, 0)),
    # measured with --no-near: exact 2 of 40 = 5 % (unreliable on the exact rule); near left out
    dict(dataset="n/nonear", config="default", labels=["label"], rows=(40, None, 40), exact=(2, [0]),
         near=None, curve=None, lle=(2, None, 0), methods=NO_NEAR),
    # measured before the exact method: LLE only, test_biased 1 / 200 = 0.5 % (minor on the LLE rule)
    dict(dataset="n/old", config="default", labels=["label"], rows=(100, None, 200), exact=None,
         near=None, curve=None, lle=(1, None, 0), methods=None),
    # c1 measured by every method (0), c2 without near: exact 1 of 100 (1 %): the dataset falls back to
    # the exact rule (caution), not to near's 0
    dict(dataset="n/mixed", config="c1", labels=["label"], rows=(20, None, 20), exact=(0, [0]),
         near=(0, None, 0, 0, None, [0]), curve=[0, 0, 0, 0], lle=(0, None, 0)),
    dict(dataset="n/mixed", config="c2", labels=["label"], rows=(100, None, 100), exact=(1, [0]),
         near=None, curve=None, lle=(1, None, 0), methods=NO_NEAR),
    # methods names near-2026 but its status says nothing was computed (figures NULL): not measured
    dict(dataset="n/collide", config="default", labels=["label"], rows=(10, None, 10), exact=(0, [0]),
         near=None, curve=None, lle=(0, None, 0),
         info={**NEAR_INFO, "status": "NR: the normalized text hash collides"}),
]
MEASURED_AT = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


def _pct(n: int | None, d: int | None) -> float | None:
    return None if n is None or not d else n / d * 100


def measurement_rows(spec: dict[str, Any]) -> list[dict[str, Any]]:
    """The ``measurements`` rows of one planted (dataset, config): one per label column."""
    train, validation, test = spec["rows"]
    methods = spec.get("methods", ALL)
    measured_near = spec["near"] is not None
    info = spec.get("info", NEAR_INFO if measured_near else None)
    out = []
    for i, label in enumerate(spec["labels"]):
        row: dict[str, Any] = {
            "measurement_id": f"{spec['dataset']}@sha/{spec['config']}#{label or ''}",
            "dataset_id": spec["dataset"], "revision_sha": "sha", "config": spec["config"],
            "label_column": label, "text_columns": ["text"], "roles_source": "inferred",
            "dataset_name": f"{spec['dataset'].split('/')[1]},{spec['config']}({label})",
            "train_split": "train" if train is not None else None,
            "validation_split": "validation" if validation is not None else None, "test_split": "test",
            "rows_train": train, "rows_validation": validation, "rows_test": test,
            "source": "folder", "method": LLE_METHOD, "method_version": 1, "tool_version": "0.1.0",
            "measured_at": MEASURED_AT, "run_id": None, "methods": methods,
            "near": json.dumps(info) if info is not None else None,
            "near_curve": json.dumps([{"threshold": t, "test_rows_near_train": n}
                                      for t, n in zip(figures.NEAR_CURVE, spec["curve"])]) if spec["curve"] else None,
        }
        leaks_train, leaks_validation, duplicates = spec["lle"]
        row.update(text_leaks_train_wrt_test=leaks_train, text_leaks_validation_wrt_test=leaks_validation,
                   text_duplication_test=duplicates,
                   text_test_biased=((leaks_train or 0) + duplicates) / test * 100)
        if spec["exact"] is not None:
            contaminated, conflicts = spec["exact"]
            row.update(normalized_test_rows_contaminated=contaminated,
                       normalized_contaminated_test_pct=_pct(contaminated, test),
                       raw_test_rows_contaminated=contaminated, raw_contaminated_test_pct=_pct(contaminated, test),
                       normalized_test_rows_in_train_conflicting_label=conflicts[i])
        if spec["near"] is not None:
            near_train, near_validation, repeated, contaminated, validation_near, conflicts = spec["near"]
            row.update(test_rows_near_train=near_train, test_rows_near_train_pct=_pct(near_train, test),
                       test_rows_near_validation=near_validation,
                       test_rows_near_validation_pct=_pct(near_validation, test),
                       test_rows_near_repeated=repeated, test_rows_near_repeated_pct=_pct(repeated, test),
                       test_rows_near_contaminated=contaminated, near_contaminated_test_pct=_pct(contaminated, test),
                       validation_rows_near_train=validation_near,
                       validation_rows_near_train_pct=_pct(validation_near, validation),
                       test_rows_near_train_conflicting_label=conflicts[i],
                       test_rows_near_train_conflicting_label_pct=_pct(conflicts[i], test))
        out.append(row)
    return out


@pytest.fixture(scope="module")
def near_db(tmp_path_factory) -> Path:
    db = tmp_path_factory.mktemp("near") / "results.duckdb"
    with Store(db) as store:
        for spec in NEAR_ROWS:
            store.replace_measurements(spec["dataset"], "sha", spec["config"], measurement_rows(spec))
    return db


@pytest.fixture(scope="module")
def found(near_db):
    with Store(near_db, read_only=True) as store:
        return findings(store)


@pytest.mark.slow
def test_overview_counts_the_rows_measured_by_near(found):
    o = found["overview"][0]
    # 12 rows of 9 datasets; near-measured: edits, same, clean, two (3 rows), mixed c1, notrain = 8 rows,
    # 6 datasets (nonear, old, mixed c2 lack near-2026; collide's status says nothing was measured)
    assert (o["measurement_rows"], o["datasets"], o["rows_near"], o["datasets_near"]) == (12, 9, 8, 6)
    assert (o["near_thresholds"], o["near_shingles"]) == ("0.8", "char-5")
    assert (o["rows_exact"], o["datasets_exact"]) == (11, 8)  # every dataset but n/old


@pytest.mark.slow
def test_near_configs_take_text_figures_once_and_the_worst_label_column(found):
    configs = {(r["dataset_id"], r["config"]): r for r in found["near_configs"]}
    assert set(configs) == {("n/edits", "default"), ("n/same", "default"), ("n/clean", "default"),
                            ("n/two", "c1"), ("n/two", "c2"), ("n/notrain", "default"), ("n/mixed", "c1")}
    c2 = configs[("n/two", "c2")]
    assert (c2["label_columns"], c2["test_rows_near_contaminated"], c2["near_contaminated_test_pct"]) == (2, 4, 4.0)
    assert (c2["test_rows_near_train_conflicting_label"], c2["normalized_test_rows_in_train_conflicting_label"]) == (1, 1)
    assert configs[("n/two", "c1")]["test_rows_near_train_conflicting_label"] is None  # NR: no label column
    edits = configs[("n/edits", "default")]
    assert (edits["threshold"], edits["capped"], edits["exact"]) == (0.8, True, True)


@pytest.mark.slow
def test_near_vs_exact_per_dataset(found):
    # (configs, test rows, exact rows, exact %, near rows, near %, extra rows, extra points (pooled),
    #  worst exact %, worst near %, worst near config, rise of the worst config in points)
    got = {r["dataset_id"]: (r["configs_near"], r["rows_test"], r["normalized_test_rows_contaminated"],
                             r["normalized_contaminated_test_pct"], r["near_test_rows_contaminated"],
                             r["near_contaminated_test_pct"], r["extra_test_rows"], r["extra_pct_points"],
                             r["worst_normalized_contaminated_test_pct"], r["worst_near_contaminated_test_pct"],
                             r["worst_near_config"], r["worst_extra_pct_points"])
           for r in found["near_vs_exact"]}
    assert got == {
        "n/edits": (1, 50, 1, 2.0, 6, 12.0, 5, 10.0, 2.0, 12.0, "default", 10.0),
        "n/notrain": (1, 10, 1, 10.0, 2, 20.0, 1, 10.0, 10.0, 20.0, "default", 10.0),
        # pooled: 4 of 200 exact, 3 + 4 = 7 of 200 near; its worst config (c2, 4 %) gains nothing
        "n/two": (2, 200, 4, 2.0, 7, 3.5, 3, 1.5, 4.0, 4.0, "c2", 0.0),
        "n/same": (1, 200, 1, 0.5, 1, 0.5, 0, 0.0, 0.5, 0.5, "default", 0.0),
        "n/clean": (1, 10, 0, 0.0, 0, 0.0, 0, 0.0, 0.0, 0.0, "default", 0.0),
        "n/mixed": (1, 20, 0, 0.0, 0, 0.0, 0, 0.0, 0.0, 0.0, "c1", 0.0),  # c1 only: c2 was not measured by near
    }
    # largest pooled gain first (ties: more extra rows, then id)
    assert [r["dataset_id"] for r in found["near_vs_exact"]] == [
        "n/edits", "n/notrain", "n/two", "n/clean", "n/mixed", "n/same"]
    assert {r["dataset_id"]: r["capped"] for r in found["near_vs_exact"]}["n/edits"] is True


@pytest.mark.slow
def test_near_gain_share(found):
    # near > exact: edits, notrain, two of the 6 datasets measured by both methods (nonear, old, collide
    # left out); extra rows 5 + 1 + 3 = 9 over 50 + 10 + 200 + 200 + 10 + 20 = 490 test rows (1.84 %);
    # exact 1 + 1 + 4 + 1 = 7, near 6 + 2 + 7 + 1 = 16; the worst configs rise by 10, 10 and 0 points
    assert found["near_gain"] == [{
        "datasets_with_more": 3, "datasets": 6, "pct_datasets_with_more": 50.0,
        "extra_test_rows": 9, "test_rows": 490, "extra_pct_of_test_rows": 1.84,
        "normalized_test_rows_contaminated": 7, "near_test_rows_contaminated": 16,
        "max_worst_extra_pct_points": 10.0, "max_extra_dataset": "n/edits",
        "median_worst_extra_pct_points_of_gainers": 10.0, "datasets_capped": 1,
    }]


@pytest.mark.slow
def test_near_label_conflict_share(found):
    # denominator: datasets with a near-measured config that has a label column and a train split:
    # edits, same, clean, two (c2 only), mixed (c1) = 5 (notrain: NR; nonear, old, collide: not measured).
    # near conflicts: edits 2, same 1, two 1 (topic) = 3 datasets, 4 test rows of 50 + 200 + 10 + 100 + 20
    # = 380; only edits has no exact conflict (same's and two's are exact too)
    assert found["near_label_conflicts"] == [{
        "with_conflict": 3, "datasets": 5, "pct_with_conflict": 60.0,
        "test_rows_conflicting": 4, "test_rows": 380, "pct_test_rows_conflicting": 1.05,
        "with_conflict_beyond_exact": 1, "pct_with_conflict_beyond_exact": 20.0,
    }]


@pytest.mark.slow
def test_near_curve_aggregated(found):
    # datasets with a curve: edits (of 50), same (of 200), clean (of 10), two (c1 + c2, once each though
    # c2 has two rows: of 200), mixed (c1, of 20) = 5; notrain has no train split (NR).
    # per-dataset % at 0.9: 6, 0.5, 0, 3, 0 -> median 0.5; 0.8: 10, 0.5, 0, 3.5, 0; 0.7: 16, 0.5, 0, 3.5, 0;
    # 0.6: 20, 1.5, 0, 4.5, 0 -> median 1.5. Pooled rows over 480 test rows: 10, 13, 16, 22.
    got = [(r["threshold"], r["with_near_train"], r["datasets"], r["pct_with_near_train"],
            r["median_test_rows_near_train_pct"], r["test_rows_near_train"], r["test_rows"], r["pct_test_rows_near_train"])
           for r in found["near_curve"]]
    assert got == [
        (0.9, 3, 5, 60.0, 0.5, 10, 480, 2.08),
        (0.8, 3, 5, 60.0, 0.5, 13, 480, 2.71),
        (0.7, 3, 5, 60.0, 0.5, 16, 480, 3.33),
        (0.6, 3, 5, 60.0, 1.5, 22, 480, 4.58),
    ]
    assert [r["threshold"] for r in found["near_curve"]] == sorted(figures.NEAR_CURVE, reverse=True)


@pytest.mark.slow
def test_verdict_uses_near_then_exact_then_lle(found):
    got = {r["dataset_id"]: (r["verdict"], r["verdict_basis"], r["worst_near_contaminated_test_pct"],
                             r["worst_normalized_contaminated_test_pct"], r["worst_text_test_biased"])
           for r in found["dataset_verdict"]}
    assert got == {
        # near 12 % (exact alone would say caution: 2 %)
        "n/edits": ("unreliable", "near-2026", 12.0, 2.0, 2.0),
        "n/notrain": ("unreliable", "near-2026", 20.0, 10.0, 0.0),
        "n/two": ("caution", "near-2026", 4.0, 4.0, 4.0),
        "n/same": ("minor", "near-2026", 0.5, 0.5, 0.5),
        "n/clean": ("clean", "near-2026", 0.0, 0.0, 0.0),
        # not measured by near: the exact rule, never "clean" by NULL near figures
        "n/nonear": ("unreliable", "exact-2026", None, 5.0, 5.0),
        "n/mixed": ("caution", "exact-2026", 0.0, 1.0, 1.0),  # c1's near 0 does not clear c2
        "n/collide": ("clean", "exact-2026", None, 0.0, 0.0),
        # not measured by exact either: the LLE rule
        "n/old": ("minor", "lle-2024", None, None, 0.5),
    }
    by_id = {r["dataset_id"]: r for r in found["dataset_verdict"]}
    assert (by_id["n/two"]["configs"], by_id["n/two"]["configs_near"], by_id["n/two"]["near_test_rows_contaminated"],
            by_id["n/two"]["worst_near_config"]) == (2, 2, 7, "c2")
    assert (by_id["n/mixed"]["configs_near"], by_id["n/mixed"]["configs_exact"]) == (1, 2)
    # worst first: by verdict, then by the basis' measure, then by id
    assert [r["dataset_id"] for r in found["dataset_verdict"]] == [
        "n/notrain", "n/edits", "n/nonear", "n/two", "n/mixed", "n/old", "n/same", "n/clean", "n/collide"]


@pytest.mark.slow
def test_verdict_rules_state_three_bases(found):
    rules = [(r["basis"], r["verdict"], r["at_least_pct"], r["below_pct"]) for r in found["verdict_rules"]]
    grades = [("clean", None, None), ("minor", None, 1.0), ("caution", 1.0, 5.0), ("unreliable", 5.0, None)]
    assert rules == [(b, *g) for b in ("near-2026", "exact-2026", "lle-2024") for g in grades]
    near = {r["verdict"]: r["rule"] for r in found["verdict_rules"] if r["basis"] == "near-2026"}
    assert near["caution"] == "not clean, worst near_contaminated_test_pct ≥ 1% and below 5%"
    assert near["clean"].startswith("0 near-contaminated test rows")


@pytest.mark.slow
def test_near_findings_on_an_empty_store(tmp_path):
    with Store(tmp_path / "empty.duckdb") as store:
        found = findings(store)
    assert found["near_configs"] == [] and found["near_vs_exact"] == []
    gain = found["near_gain"][0]
    assert (gain["datasets_with_more"], gain["datasets"], gain["pct_datasets_with_more"]) == (0, 0, None)
    conflicts = found["near_label_conflicts"][0]
    assert (conflicts["with_conflict"], conflicts["datasets"], conflicts["pct_with_conflict"]) == (0, 0, None)
    assert [(r["threshold"], r["datasets"], r["pct_with_near_train"], r["median_test_rows_near_train_pct"])
            for r in found["near_curve"]] == [(t, 0, None, None) for t in (0.9, 0.8, 0.7, 0.6)]
    o = found["overview"][0]
    assert (o["rows_near"], o["datasets_near"], o["near_thresholds"]) == (0, 0, None)


def test_stated_defaults_agree_with_the_method():
    """The defaults the report states when no row was measured are what a default measurement records."""
    from hubsurvey.analysis import render
    from hubsurvey.survey.near import NearParams

    recorded = NearParams().describe()
    stated = render.near_setting({})
    assert stated == {"near_tau": f"{recorded['threshold']:g} (the default)",
                      "near_shingle": f"{recorded['shingle']} (the default)"}
    assert tuple(recorded["curve"]) == figures.NEAR_CURVE


# --- report, charts, card ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def report(near_db, tmp_path_factory):
    from hubsurvey.analysis.report import render_report

    out = tmp_path_factory.mktemp("report")
    with Store(near_db, read_only=True) as store:
        md_path, html_path = render_report(store, out)
    return md_path.read_text(), html_path.read_text()


@pytest.mark.slow  # the report fixture renders a whole report: several seconds
def test_report_verdict_section_states_the_near_basis_and_its_fallbacks(report):
    md, _ = report
    section = md.split("## 7. Can I trust this dataset?")[1].split("\n## ")[0]
    near_rules, rest = " ".join(section.split()).split("falls back to the exact rule")
    exact_rules, lle_rules = rest.split("falls back to the LLE rule")
    assert "- **unreliable**: not clean, worst near_contaminated_test_pct ≥ 5%" in near_rules
    assert "τ = 0.8" in near_rules and "char-5" in near_rules
    assert "- **minor**: not clean, worst normalized contaminated_test_pct below 1%" in exact_rules
    assert "- **caution**: not clean, worst text test_biased ≥ 1% and below 5%" in lle_rules
    assert "| unreliable | near-2026 | 2 | 9 | 22.22% |" in section  # edits, notrain
    assert "| clean | exact-2026 | 1 | 9 | 11.11% |" in section  # collide
    # dataset | verdict | basis | worst near | in config | near rows | worst normalized | worst raw | in config |
    # normalized rows | raw rows | worst text test_biased | in config | configs | near | exact | test rows | leaks, dups
    assert ("| n/edits | unreliable | near-2026 | 12.0% | default | 6 | 2.0% | 2.0% | default | 1 | 1 | 2.0% | default "
            "| 1 | 1 | 1 | 50 | 1 | 0 | 0 |") in section
    assert ("| n/mixed | caution | exact-2026 | 0.0% | c1 | 0 | 1.0% | 1.0% | c2 | 1 | 1 | 1.0% | c2 "
            "| 2 | 1 | 2 | 120 | 1 | NR | 0 |") in section
    assert ("| n/old | minor | lle-2024 | NR | NR | NR | NR | NR | NR | NR | NR | 0.5% | default "
            "| 1 | 0 | 0 | 200 | 1 | NR | 0 |") in section


@pytest.mark.slow  # the report fixture renders a whole report: several seconds
def test_report_near_section(report):
    md, html = report
    section = md.split("## 9. Near-duplicates")[1].split("\n## ")[0]
    text = " ".join(section.split())
    assert "6 of 9 datasets (8 of 12 result rows)" in text
    assert ("| near contamination exceeds exact | measured by both methods | 3 | 6 | 50.00% | 9 more test rows "
            "near-contaminated than contaminated, of 490 (1.84%); worst config rises by up to +10.00 points (n/edits), "
            "median +10.00 |") in section
    assert ("| label-conflicting near-duplicate | with a label column and a train split | 3 | 5 | 60.00% | 4 test rows "
            "of 380 (1.05%); with no exact conflict: 1 datasets (20.00%) |") in section
    assert "For 1 of them the LSH candidates were capped" in text
    # the gainers, largest gain first: dataset | configs | test rows | exact rows | % | near rows | % | extra rows |
    # extra points | worst config | worst exact | worst near | rise
    gainers = section.split("The datasets that gain")[1].split("**Similar text")[0]
    assert "| n/edits | 1 | 50 | 1 | 2.00% | 6 | 12.00% | 5 | +10.00 | default | 2.0% | 12.0% | +10.00 |" in gainers
    assert "| n/two | 2 | 200 | 4 | 2.00% | 7 | 3.50% | 3 | +1.50 | c2 | 4.0% | 4.0% | +0.00 |" in gainers
    assert gainers.index("n/edits") < gainers.index("n/notrain") < gainers.index("n/two")
    assert "n/same" not in gainers  # gains only
    assert "3 of 5 datasets (60.00%) have a test row whose near-duplicates in train all carry another label" in text
    assert "In 1 datasets (20.00%) there is no exact one" in text
    assert "| 0.6 | 3 | 5 | 60.00% | 1.50% | 22 | 480 | 4.58% |" in section
    assert "`hubsurvey show <dataset> --kind near`" in section
    assert "- **test_rows_near_train_conflicting_label**: test rows with train rows at Jaccard" in md
    assert 'id="chart-near-curve"' in html and 'id="chart-near-vs-exact"' in html
    assert "hubsurvey show &lt;dataset&gt; --kind near" in html
    cells = r"\s*".join(rf"<td[^>]*>{re.escape(c)}</td>" for c in ("n/edits", "unreliable", "near-2026", "12.0%"))
    assert re.search(cells, html)


@pytest.mark.slow  # renders a whole report or card (matplotlib, every findings view): several seconds
def test_report_escapes_hub_text_in_the_near_section(tmp_path):
    from hubsurvey.analysis.report import render_report

    evil = "x/<script>alert(1)</script>|*"
    spec = dict(NEAR_ROWS[0], dataset=evil)
    with Store(tmp_path / "evil.duckdb") as store:
        store.replace_measurements(evil, "sha", "default", measurement_rows(spec))
        md_path, html_path = render_report(store, tmp_path / "out")
    md, html = md_path.read_text(), html_path.read_text()
    assert "<script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "<script>" not in md and r"x/&lt;script&gt;alert(1)&lt;/script&gt;\|\*" in md


@pytest.mark.slow
def test_near_curve_chart_draws_each_threshold(found, monkeypatch):
    pytest.importorskip("matplotlib")
    from hubsurvey.analysis import charts

    monkeypatch.setattr(charts, "_png", lambda fig: fig)
    fig = charts.near_curve_chart(found["near_curve"])
    left, right = fig.axes
    (share,) = left.get_lines()
    assert list(share.get_xdata()) == [0.6, 0.7, 0.8, 0.9] and list(share.get_ydata()) == [60.0] * 4
    median, pooled = right.get_lines()
    assert list(median.get_ydata()) == [1.5, 0.5, 0.5, 0.5]
    assert list(pooled.get_ydata()) == [4.58, 3.33, 2.71, 2.08]
    # nothing measured: no chart (the report keeps its table)
    assert charts.near_curve_chart([dict(r, datasets=0) for r in found["near_curve"]]) is None


@pytest.mark.slow
def test_near_vs_exact_chart_shows_the_gainers_first(found, monkeypatch):
    pytest.importorskip("matplotlib")
    from hubsurvey.analysis import charts

    monkeypatch.setattr(charts, "_png", lambda fig: fig)
    fig = charts.near_vs_exact_chart(found["near_vs_exact"])
    left, right = fig.axes
    names = [t.get_text() for t in left.get_yticklabels()][::-1]  # drawn bottom-up
    # ties on the gain (edits, notrain: +10.00) go to the most near-contaminated
    assert names[:3] == ["n/notrain", "n/edits", "n/two"] and len(names) == 6
    assert [round(b.get_width(), 2) for b in right.patches][::-1][:3] == [10.0, 10.0, 1.5]
    assert charts.near_vs_exact_chart([]) is None


def test_charts_without_matplotlib_name_every_chart(monkeypatch):
    from hubsurvey.analysis import charts

    monkeypatch.setattr(charts, "available", lambda: False)
    assert charts.charts({}) == dict.fromkeys(charts.CHARTS)
    assert {"near_curve", "near_vs_exact"} <= set(charts.CHARTS)


@pytest.mark.slow  # renders a whole report or card (matplotlib, every findings view): several seconds
def test_card_documents_the_near_columns_provenance_and_findings(near_db):
    from hubsurvey.analysis.card import render_card

    with Store(near_db, read_only=True) as store:
        text = render_card(store, "me/results")
    # every near column from the registry, with its NR rule
    for column in figures.figure_columns(NEAR_METHOD):
        assert re.search(rf"^\| `{column.name}` \| near-2026 \| .*{re.escape(figure_docs.nr_rule(column))} \|$", text,
                         re.MULTILINE), column.name
    assert ("| `test_rows_near_train_conflicting_label` | near-2026 | test rows with train rows at Jaccard &gt;= tau, "
            "none of which carries the test row's label") in text
    # the near method's provenance columns, and their meaning
    assert re.search(r"^\| `near` \| near-2026 \| how the near-duplicate figures were measured", text, re.MULTILINE)
    assert re.search(r"^\| `near_curve` \| near-2026 \| test_rows_near_train at each threshold", text, re.MULTILINE)
    assert "- **near**: how the row's near figures were measured, as JSON: threshold" in text
    assert "- **shingles**: the character n-grams of that text (n = 5 by default" in text
    # the findings and the verdict basis
    assert "| near contamination exceeds exact | measured by both methods | 3 | 6 | 50.00% |" in text
    assert "| label-conflicting near-duplicate | with a label column and a train split | 3 | 5 | 60.00% |" in text
    assert "| 0.9 | 3 | 5 | 60.00% | 0.50% | 10 | 480 | 2.08% |" in text
    assert "| unreliable | near-2026 | 2 | 9 | 22.22% |" in text
    assert "judged on its worst\n`near_contaminated_test_pct`" in text
    assert "--kind leaks|duplicates|conflicts|near" in text
