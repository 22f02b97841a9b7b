"""The exact findings (exact-2026): the verdict on contaminated_test_pct, its LLE fallback, and the
shares of datasets with normalized-only contamination, label conflicts and train↔validation leaks.

Small folders with planted rows are audited by the real pipeline; two configs are then turned into
rows "measured before the exact method" (methods NULL, exact figures NULL), as an old DB holds them.
Every expectation below is worked out by hand in the comments of EXACT_DATASETS.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from hubsurvey.analysis.findings import findings
from hubsurvey.core.figures import EXACT_METHOD, LLE_METHOD, NEAR_METHOD, figure_names
from hubsurvey.core.store import Store, quote_ident
from hubsurvey.survey.audit import audit

# The fixture audits eight small configs (about 2 s): the fast tier leaves this module out.
pytestmark = pytest.mark.slow

# dataset id -> config -> split -> rows; a row is (text,), (text, label) or (text, label, topic_label).
EXACT_DATASETS: dict[str, dict[str, dict[str, list[tuple]]]] = {
    # Only the normalized profile finds anything. raw: 0 contaminated. normalized: test "hello world"
    # is train's "Hello  World" (1 of 4 test rows = 25 %), with another label (a normalized conflict);
    # validation "B " is train's "b" (1 of 1 validation rows). LLE: no leak, no duplicate ("clean").
    "x/normgain": {"default": {
        "train": [("Hello  World", 0), ("b", 0)],
        "validation": [("B ", 0)],
        "test": [("hello world", 1), ("c", 0), ("d", 0), ("e", 0)],
    }},
    # raw = normalized: test "b" is in train (and validation): 1 of 4 test rows (25 %), label 1 where
    # train has only 0 (conflicting label); "a" has two labels in train (a conflicting text);
    # validation "b" is in train: 1 of 1 validation rows.
    "x/conflict": {"default": {
        "train": [("a", 0), ("a", 1), ("b", 0)],
        "validation": [("b", 0)],
        "test": [("b", 1), ("c", 0), ("d", 0), ("e", 0)],
    }},
    # nothing at all.
    "x/clean": {"default": {
        "train": [("a", 0)],
        "validation": [("z", 0)],
        "test": [("c", 0), ("d", 0)],
    }},
    # no label column (label figures NR), no validation split (validation figures NR).
    # raw 0; normalized: test "A" is train's "a": 1 of 2 test rows (50 %).
    "x/nolabel": {"default": {
        "train": [("a",)],
        "test": [("A",), ("b",)],
    }},
    # two label columns: two result rows whose text figures repeat. Contaminated: "a" in train, and
    # the second "c": 2 of 4 test rows (50 %), counted once for the config, not once per label column.
    # label: "a" has label 0 in train and test (same label). topic_label: 1 in test, 0 in train (a
    # conflicting label).
    "x/twolabels": {"default": {
        "train": [("a", 0, 0), ("b", 0, 0)],
        "test": [("a", 0, 1), ("c", 0, 0), ("c", 0, 0), ("d", 0, 0)],
    }},
    # measured before the exact method (made so below): LLE text_test_biased = 1 leak / 50 = 2.0 %:
    # 'caution' on the LLE fallback; its NULL exact figures must not make it clean.
    "x/old": {"default": {
        "train": [("a", 0)],
        "test": [("a", 0)] + [(f"o{i}", 0) for i in range(49)],
    }},
    # c1 measured by the exact method (clean), c2 before it (made so below), with an LLE leak:
    # text_test_biased 1 / 4 = 25 %. The dataset falls back to LLE: unreliable, not clean from c1.
    "x/mixed": {
        "c1": {"train": [("x", 0)], "test": [("y", 0), ("z", 0)]},
        "c2": {"train": [("a", 0)], "test": [("a", 0), ("b", 0), ("c", 0), ("d", 0)]},
    },
}
#: (dataset, config) made "measured before the exact method".
NOT_EXACT = (("x/old", "default"), ("x/mixed", "c2"))
#: (dataset, config) made "measured without the near-duplicate method" (--no-near): judged on the exact
#: figure. Every other config is measured by near-2026 too, and judged on it (tests/analysis/test_analysis_near.py);
#: here its near figures equal the normalized ones: the planted texts that are not identical after
#: normalization are shorter than 5 characters, one shingle each, so their Jaccard is 0.
NOT_NEAR = (("x/normgain", "default"),)


def write_configs(root: Path, dataset_id: str, configs: dict[str, dict[str, list[tuple]]]) -> Path:
    """``<root>/<owner>__<name>/<config>/<split>/0000.parquet``: text, then label and topic_label."""
    folder = root / dataset_id.replace("/", "__")
    for config, splits in configs.items():
        for split, rows in splits.items():
            columns = {"text": pa.array([r[0] for r in rows], pa.string())}
            for i, name in enumerate(("label", "topic_label"), start=1):
                if len(rows[0]) > i:
                    columns[name] = pa.array([r[i] for r in rows], pa.int64())
            out = folder / config / split
            out.mkdir(parents=True, exist_ok=True)
            pq.write_table(pa.table(columns), out / "0000.parquet")
    return folder


def unmeasure_exact(store: Store, dataset_id: str, config: str) -> None:
    """Make a config's rows look measured before the exact method: methods and exact figures NULL."""
    sets = ", ".join(f"{quote_ident(c)} = NULL" for c in ("methods", *figure_names(EXACT_METHOD)))
    store.con.execute(f"UPDATE measurements SET {sets} WHERE dataset_id = $d AND config = $c",
                      {"d": dataset_id, "c": config})


def unmeasure_near(store: Store, dataset_id: str, config: str) -> None:
    """Make a config's rows look measured with --no-near: near-2026 out of methods, near figures NULL."""
    sets = ", ".join(f"{quote_ident(c)} = NULL" for c in ("near", "near_curve", *figure_names(NEAR_METHOD)))
    store.con.execute(f"UPDATE measurements SET {sets}, methods = json_object($l, 1, $e, 1)"
                      " WHERE dataset_id = $d AND config = $c",
                      {"d": dataset_id, "c": config, "l": LLE_METHOD, "e": EXACT_METHOD})


@pytest.fixture(scope="module")
def exact_db(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("exact")
    db = root / "results.duckdb"
    for dataset_id, configs in EXACT_DATASETS.items():
        outcome = audit(str(write_configs(root, dataset_id, configs)), db=db, dataset_id=dataset_id)
        assert not outcome.errors, outcome.errors
    with Store(db) as store:
        for dataset_id, config in NOT_EXACT:
            unmeasure_exact(store, dataset_id, config)
        for dataset_id, config in NOT_NEAR:
            unmeasure_near(store, dataset_id, config)
    return db


@pytest.fixture(scope="module")
def found(exact_db):
    with Store(exact_db, read_only=True) as store:
        return findings(store)


def test_planted_exact_figures(exact_db):
    """The inputs have the hand-computed figures the findings below rest on."""
    with Store(exact_db, read_only=True) as store:
        rows = store.records(
            "SELECT dataset_id, config, label_column, methods, raw_test_rows_contaminated AS raw,"
            " normalized_test_rows_contaminated AS norm, raw_test_rows_in_train_conflicting_label AS conflict,"
            " raw_conflicting_texts_train AS texts, normalized_validation_rows_in_train AS val"
            " FROM current_measurements ORDER BY ALL")
    got = {(r["dataset_id"], r["config"], r["label_column"]): (r["raw"], r["norm"], r["conflict"], r["texts"], r["val"])
           for r in rows}
    assert got == {
        ("x/clean", "default", "label"): (0, 0, 0, 0, 0),
        ("x/conflict", "default", "label"): (1, 1, 1, 1, 1),
        ("x/mixed", "c1", "label"): (0, 0, 0, 0, None),
        ("x/mixed", "c2", "label"): (None, None, None, None, None),  # not measured by exact-2026
        ("x/nolabel", "default", None): (0, 1, None, None, None),
        ("x/normgain", "default", "label"): (0, 1, 0, 0, 1),
        ("x/old", "default", "label"): (None, None, None, None, None),
        ("x/twolabels", "default", "label"): (2, 2, 0, 0, None),
        ("x/twolabels", "default", "topic_label"): (2, 2, 1, 0, None),
    }
    assert {(r["dataset_id"], r["config"]) for r in rows if r["methods"] is None} == set(NOT_EXACT)


def test_overview_counts_exact_rows(found):
    o = found["overview"][0]
    # 9 rows, of which x/old and x/mixed c2 were not measured by exact-2026
    assert (o["measurement_rows"], o["rows_exact"], o["datasets"], o["datasets_exact"]) == (9, 7, 7, 6)
    assert o["methods"] == "exact-2026 v1, groups-2026 v1, lle-2024 v1, near-2026 v1, rows-2026 v1, time-2026 v1"


def test_exact_configs_take_text_figures_once_and_leave_unmeasured_configs_out(found):
    configs = {(r["dataset_id"], r["config"]): r for r in found["exact_configs"]}
    assert set(configs) == {("x/clean", "default"), ("x/conflict", "default"), ("x/mixed", "c1"),
                            ("x/nolabel", "default"), ("x/normgain", "default"), ("x/twolabels", "default")}
    two = configs[("x/twolabels", "default")]
    assert (two["label_columns"], two["raw_test_rows_contaminated"], two["raw_contaminated_test_pct"]) == (2, 2, 50.0)
    assert two["raw_test_rows_in_train_conflicting_label"] == 1  # the worst label column (topic_label)
    assert configs[("x/nolabel", "default")]["label_columns"] == 0
    assert configs[("x/nolabel", "default")]["raw_conflicting_texts"] is None  # NR: no label column
    assert configs[("x/conflict", "default")]["raw_conflicting_texts"] == 1  # "a" in train


def test_verdict_uses_normalized_contamination_and_falls_back_to_lle(found):
    got = {r["dataset_id"]: (r["verdict"], r["verdict_basis"], r["worst_normalized_contaminated_test_pct"],
                             r["worst_raw_contaminated_test_pct"], r["worst_text_test_biased"],
                             r["worst_near_contaminated_test_pct"])
           for r in found["dataset_verdict"]}
    assert got == {
        # measured without near (NOT_NEAR): the exact rule. Only normalized contamination: LLE would say
        # clean (0 leaks, 0 duplicates)
        "x/normgain": ("unreliable", "exact-2026", 25.0, 0.0, 0.0, None),
        # measured by near-2026 too: judged on near_contaminated_test_pct, here equal to the normalized one
        "x/conflict": ("unreliable", "near-2026", 25.0, 25.0, 25.0, 25.0),
        "x/clean": ("clean", "near-2026", 0.0, 0.0, 0.0, 0.0),
        "x/nolabel": ("unreliable", "near-2026", 50.0, 0.0, 0.0, 50.0),
        "x/twolabels": ("unreliable", "near-2026", 50.0, 50.0, 50.0, 50.0),
        # not measured by exact-2026: the LLE rule on text_test_biased, never "clean" by NULLs
        "x/old": ("caution", "lle-2024", None, None, 2.0, None),
        # one config measured, one not: the whole dataset falls back; c1 alone would be clean
        "x/mixed": ("unreliable", "lle-2024", 0.0, 0.0, 25.0, 0.0),
    }
    by_id = {r["dataset_id"]: r for r in found["dataset_verdict"]}
    assert (by_id["x/mixed"]["configs"], by_id["x/mixed"]["configs_exact"]) == (2, 1)
    assert (by_id["x/old"]["configs_exact"], by_id["x/old"]["normalized_test_rows_contaminated"]) == (0, None)
    assert by_id["x/twolabels"]["normalized_test_rows_contaminated"] == 2  # once per config
    assert [r["dataset_id"] for r in found["dataset_verdict"]][-1] == "x/clean"  # worst first


def test_verdict_rules_state_every_basis(found):
    rules = [(r["basis"], r["verdict"], r["at_least_pct"], r["below_pct"]) for r in found["verdict_rules"]]
    grades = [("clean", None, None), ("minor", None, 1.0), ("caution", 1.0, 5.0), ("unreliable", 5.0, None)]
    assert rules == [(b, *g) for b in ("near-2026", "exact-2026", "lle-2024") for g in grades]
    exact = {r["verdict"]: r["rule"] for r in found["verdict_rules"] if r["basis"] == "exact-2026"}
    assert exact["caution"] == "not clean, worst normalized contaminated_test_pct ≥ 1% and below 5%"
    assert exact["clean"].startswith("0 contaminated test rows (normalized profile")


def test_raw_vs_normalized_per_dataset(found):
    got = {r["dataset_id"]: (r["configs_exact"], r["rows_test"], r["raw_test_rows_contaminated"],
                             r["raw_contaminated_test_pct"], r["normalized_test_rows_contaminated"],
                             r["normalized_contaminated_test_pct"], r["extra_test_rows"], r["extra_pct_points"])
           for r in found["raw_vs_normalized"]}
    assert got == {
        "x/normgain": (1, 4, 0, 0.0, 1, 25.0, 1, 25.0),
        "x/nolabel": (1, 2, 0, 0.0, 1, 50.0, 1, 50.0),
        "x/conflict": (1, 4, 1, 25.0, 1, 25.0, 0, 0.0),
        "x/twolabels": (1, 4, 2, 50.0, 2, 50.0, 0, 0.0),
        "x/clean": (1, 2, 0, 0.0, 0, 0.0, 0, 0.0),
        "x/mixed": (1, 2, 0, 0.0, 0, 0.0, 0, 0.0),  # c1 only; x/old is absent
    }
    assert [r["dataset_id"] for r in found["raw_vs_normalized"]][:2] == ["x/nolabel", "x/normgain"]


def test_normalization_gain_share(found):
    # normalized > raw: normgain, nolabel of the 6 datasets measured by exact-2026 (x/old left out);
    # extra rows 1 + 1 over 4 + 4 + 2 + 2 + 4 + 2 = 18 test rows
    assert found["normalization_gain"] == [{
        "datasets_with_more": 2, "datasets": 6, "pct_datasets_with_more": 33.33,
        "extra_test_rows": 2, "test_rows": 18, "extra_pct_of_test_rows": 11.11,
        "raw_test_rows_contaminated": 3, "normalized_test_rows_contaminated": 5,
        "max_extra_pct_points": 50.0, "max_extra_dataset": "x/nolabel",
        "median_extra_pct_points_of_gainers": 37.5,
    }]


def test_label_conflict_share(found):
    # denominator: datasets with a label column measured by exact-2026: normgain, conflict, clean,
    # twolabels, mixed (c1) = 5 (nolabel has none; x/old not measured).
    # raw: conflict (test/train and "a" in train), twolabels (topic_label); normalized: + normgain
    assert found["label_conflicts"] == [
        {"profile": "raw", "with_conflict": 2, "datasets": 5, "pct_with_conflict": 40.0,
         "with_test_train_conflict": 2, "pct_with_test_train_conflict": 40.0,
         "with_within_split_conflict": 1, "pct_with_within_split_conflict": 20.0, "test_rows_conflicting": 2},
        {"profile": "normalized", "with_conflict": 3, "datasets": 5, "pct_with_conflict": 60.0,
         "with_test_train_conflict": 3, "pct_with_test_train_conflict": 60.0,
         "with_within_split_conflict": 1, "pct_with_within_split_conflict": 20.0, "test_rows_conflicting": 3},
    ]


def test_validation_leak_share(found):
    # denominator: datasets with train and validation measured by exact-2026: normgain, conflict, clean
    # raw: conflict's "b"; normalized: + normgain's "B "; 1 validation row each
    assert found["validation_leaks"] == [
        {"profile": "raw", "with_leak": 1, "datasets": 3, "pct_with_leak": 33.33,
         "validation_rows_in_train": 1, "validation_rows": 3, "pct_validation_rows_in_train": 33.33},
        {"profile": "normalized", "with_leak": 2, "datasets": 3, "pct_with_leak": 66.67,
         "validation_rows_in_train": 2, "validation_rows": 3, "pct_validation_rows_in_train": 66.67},
    ]


def test_exact_findings_on_an_empty_store(tmp_path):
    with Store(tmp_path / "empty.duckdb") as store:
        found = findings(store)
    assert found["dataset_verdict"] == [] and found["raw_vs_normalized"] == [] and found["exact_configs"] == []
    gain = found["normalization_gain"][0]
    assert (gain["datasets_with_more"], gain["datasets"], gain["pct_datasets_with_more"]) == (0, 0, None)
    assert [(r["profile"], r["datasets"], r["pct_with_conflict"]) for r in found["label_conflicts"]] == [
        ("raw", 0, None), ("normalized", 0, None)]
    assert [(r["profile"], r["datasets"], r["pct_with_leak"]) for r in found["validation_leaks"]] == [
        ("raw", 0, None), ("normalized", 0, None)]


# --- report, chart, card, export -------------------------------------------------------------------


def test_report_explains_the_basis_and_shows_the_exact_findings(exact_db, tmp_path):
    from hubsurvey.analysis.report import render_report

    with Store(exact_db, read_only=True) as store:
        md_path, html_path = render_report(store, tmp_path)
    md, html = md_path.read_text(), html_path.read_text()
    verdicts = md.split("## 7. Can I trust this dataset?")[1].split("\n## ")[0]
    # dataset | verdict | basis | worst near | in config | near rows | worst normalized | worst raw | in config |
    # normalized rows | raw rows | worst text test_biased | in config | configs | near | exact | test rows | ...
    # the fallback: NR near and exact figures, judged on LLE's text_test_biased
    assert ("| x/old | caution | lle-2024 | NR | NR | NR | NR | NR | NR | NR | NR | 2.0% | default | 1 | 0 | 0 | 50 "
            "| 1 | NR | 0 |") in verdicts
    assert ("| x/mixed | unreliable | lle-2024 | 0.0% | c1 | 0 | 0.0% | 0.0% | c1 | 0 | 0 | 25.0% | c2 | 2 | 1 | 1 | 6 "
            "| 1 | NR | 0 |") in verdicts
    # measured without near: the exact rule
    assert ("| x/normgain | unreliable | exact-2026 | NR | NR | NR | 25.0% | 0.0% | default | 1 | 0 | 0.0% | default "
            "| 1 | 0 | 1 |") in verdicts
    assert "falls back to the LLE rule (basis lle-2024)" in verdicts
    assert "| caution | lle-2024 | 1 | 7 | 14.29% |" in verdicts
    exact = md.split("## 8. Beyond LLE")[1].split("\n## ")[0]
    assert "6 of 7 datasets (7 of 9 result rows)" in " ".join(exact.split())
    assert "| x/nolabel | 1 | 2 | 0 | 0.00% | 1 | 50.00% | 1 | +50.00 |" in exact
    assert "| x/normgain | 1 | 4 | 0 | 0.00% | 1 | 25.00% | 1 | +25.00 |" in exact
    assert "x/conflict |" not in exact.split("The datasets that gain")[1]  # gains only
    assert ("| normalized contamination exceeds raw | normalized vs raw | 2 | 6 | 33.33% | 2 more contaminated test "
            "rows of 18 (11.11%); largest gain +50.00 points (x/nolabel) |") in exact
    assert 'id="chart-raw-vs-normalized"' in html and "hubsurvey show &lt;dataset&gt;" in html


def test_contamination_chart_shows_the_gainers_first(found, monkeypatch):
    pytest.importorskip("matplotlib")
    from hubsurvey.analysis import charts

    monkeypatch.setattr(charts, "_png", lambda fig: fig)
    fig = charts.contamination_chart(found["raw_vs_normalized"])
    left, right = fig.axes
    names = [t.get_text() for t in left.get_yticklabels()][::-1]  # drawn bottom-up
    assert names[:2] == ["x/nolabel", "x/normgain"] and len(names) == 6
    assert [round(b.get_width(), 2) for b in right.patches][::-1][:3] == [50.0, 25.0, 0.0]
    assert charts.contamination_chart([]) is None


def test_card_documents_the_exact_columns_and_findings(exact_db):
    from hubsurvey.analysis.card import render_card

    with Store(exact_db, read_only=True) as store:
        text = render_card(store, "me/results")
    assert ("| `normalized_contaminated_test_pct` | exact-2026 | normalized_test_rows_contaminated / rows_test × 100, "
            "in %; never NR |") in text
    assert ("| `raw_validation_rows_in_train` | exact-2026 | validation rows whose text key occurs in train (the "
            "train↔validation leaks LLE does not measure); raw profile; NR when no train split or no validation split |") in text
    assert "| `text_test_biased` | lle-2024 |" in text and "| `methods` |  | the methods whose figures" in text
    assert "- **key profile**: every exact figure is measured twice" in text
    assert "| train↔validation leak | raw | 1 | 3 | 33.33% |" in text
    assert "| caution | lle-2024 | 1 | 7 | 14.29% |" in text


def test_export_has_every_registry_column_and_methods(exact_db, tmp_path):
    import csv

    from hubsurvey.analysis.export import columns, export_results

    with Store(exact_db, read_only=True) as store:
        export_results(store, tmp_path, lle_compat=True)
    table = pq.read_table(tmp_path / "data" / "train-00000-of-00001.parquet")
    assert set(figure_names(EXACT_METHOD)) < set(table.column_names) and "methods" in table.column_names
    assert table.column_names == list(columns())
    rows = {(r["dataset_id"], r["config"]): r for r in table.to_pylist() if r["label_column"] != "topic_label"}
    assert rows[("x/old", "default")]["methods"] is None and rows[("x/old", "default")]["raw_test_rows_contaminated"] is None
    assert rows[("x/normgain", "default")]["normalized_test_rows_contaminated"] == 1
    with open(tmp_path / "results.csv", newline="") as fh:
        by_id = {(r["dataset_id"], r["config"]): r for r in csv.DictReader(fh)}
    assert by_id[("x/old", "default")]["methods"] == "NR"
    assert by_id[("x/normgain", "default")]["normalized_contaminated_test_pct"] == "25.0"
    header = (tmp_path / "lle.csv").read_text().splitlines()[0].split(";")
    assert len(header) == 14 and not any(name.startswith(("raw_", "normalized_")) for name in header)
