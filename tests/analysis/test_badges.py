"""The shields.io endpoint badges (analysis/badges.py): the figure and colour of each dataset from a DB
of planted datasets, NR in grey, the thresholds read from the verdict rules, and the results
dataset's badges/<safe name>.json files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_analysis_fixtures import audit_folder, write_folder

from hubsurvey.analysis import badges as b
from hubsurvey.core.store import Store, safe_name

# dataset -> (train texts, test texts); the percentage each gives, counted by hand (normalized
# profile: a test row in train, or repeating an earlier test row, counts)
PLANTED = {
    "acme/clean": (["x"], [f"c{i}" for i in range(4)]),  # 0 of 4
    "acme/minor": (["m0"], [f"m{i}" for i in range(200)]),  # 1 of 200: 0.5%
    "acme/caution": (["K0"], [f"k{i}" for i in range(40)]),  # k0 = K0 once case-folded: 1 of 40: 2.5%
    "acme/unreliable": (["u0"], ["u0", "u1", "u1"]),  # u0 in train, u1 repeated: 2 of 3: 66.667%
    "odd/na me<&\"": (["q"], ["q", "r", "s", "t", "v", "w", "y", "z"]),  # 1 of 8: 12.5%
}
EXPECTED = {
    "acme/clean": ("0%", "brightgreen"),
    "acme/minor": ("0.5%", "green"),
    "acme/caution": ("2.5%", "orange"),
    "acme/unreliable": ("66.667%", "red"),
    "odd/na me<&\"": ("12.5%", "red"),
}


@pytest.fixture(scope="module")
def db(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("badges")
    db = root / "results.duckdb"
    for dataset_id, (train, test) in PLANTED.items():
        folder = write_folder(root / "data", dataset_id.replace(" ", "_").replace("<", "_").replace("&", "_").replace('"', "_"),
                              {"train": [(t, 0) for t in train], "test": [(t, 0) for t in test]})
        audit_folder(folder, db, dataset_id=dataset_id)
    return db


@pytest.mark.slow
def test_each_dataset_gets_its_figure_and_colour(db):
    with Store(db, read_only=True) as store:
        got = b.read_badges(store)
        worst = dict(store.query("SELECT dataset_id, max(normalized_contaminated_test_pct) FROM current_measurements "
                                 "GROUP BY ALL")[1])
    assert list(got) == sorted(PLANTED)
    for dataset_id, badge in got.items():
        assert list(badge) == ["schemaVersion", "label", "message", "color"]
        assert badge["schemaVersion"] == 1 and badge["label"] == "test contamination"
        assert (badge["message"], badge["color"]) == EXPECTED[dataset_id], dataset_id
        assert badge["message"] == f"{round(worst[dataset_id], 3):g}%"  # the stored figure, as published


def test_a_dataset_not_measured_by_the_exact_method_is_grey_nr():
    rules = [{"basis": "exact-2026", "ord": 1, "verdict": "clean", "at_least_pct": None, "below_pct": None}]
    row = {"dataset_id": "o/n", "configs": 2, "configs_exact": 1, "worst_normalized_contaminated_test_pct": 0.0,
           "normalized_test_rows_contaminated": 0}
    assert b.badges([row], rules) == {"o/n": {"schemaVersion": 1, "label": "test contamination", "message": "NR",
                                               "color": "lightgrey"}}
    unmeasured = {**row, "configs_exact": 0, "worst_normalized_contaminated_test_pct": None}
    assert b.badges([unmeasured], rules)["o/n"]["color"] == "lightgrey"


@pytest.mark.slow
def test_the_thresholds_come_from_the_verdict_rules(db):
    with Store(db, read_only=True) as store:
        b.read_badges(store)  # creates the views
        rows = store.records("SELECT * FROM findings_dataset_verdict")
        rules = store.records("SELECT * FROM findings_verdict_rules")
    assert b.badges(rows, rules)["acme/caution"]["color"] == "orange"
    stricter = [{**r, "below_pct": 2.0} if r["verdict"] == "caution" else
                {**r, "at_least_pct": 2.0} if r["verdict"] == "unreliable" else r for r in rules]
    assert b.badges(rows, stricter)["acme/caution"]["color"] == "red"
    looser = [{**r, "below_pct": 3.0} if r["verdict"] == "minor" else
              {**r, "at_least_pct": 3.0} if r["verdict"] == "caution" else r for r in rules]
    assert b.badges(rows, looser)["acme/caution"]["color"] == "green"


@pytest.mark.slow
def test_badge_files_are_json_under_safe_names(db, tmp_path):
    from hubsurvey.analysis.publish import build_folder, is_owned

    with Store(db, read_only=True) as store:
        files = b.badge_files(store)
        built = build_folder(store, tmp_path / "out", "me/results", report=False)
    assert sorted(files) == sorted(f"badges/{safe_name(d)}.json" for d in PLANTED)
    assert "badges/odd%2Fna%20me%3C%26%22.json" in files  # one path component, whatever the name
    for path, data in files.items():
        assert (tmp_path / "out" / path).read_bytes() == data
        assert json.loads(data) in [{"schemaVersion": 1, "label": "test contamination", "message": m, "color": c}
                                    for m, c in EXPECTED.values()]
        assert is_owned(path)  # a badge no longer produced is deleted by the next push
    assert {f.path_in_repo for f in built} >= set(files)
    assert all((tmp_path / "out" / p).resolve().parent == (tmp_path / "out" / "badges").resolve() for p in files)
