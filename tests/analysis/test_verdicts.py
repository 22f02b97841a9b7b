"""A verdict per config (hubsurvey.analysis.verdicts): the rule as docs/method.md states it, applied
by a plain-Python reference to made-up rows; on real audits, each row's verdict equals the history
view's and each dataset's verdict, basis and deciding figure equal findings_dataset_verdict's."""

from __future__ import annotations

import json

import pytest
from test_analysis_fixtures import build_planted_db

from hubsurvey.analysis.findings import create_views
from hubsurvey.analysis.history import _ensure_view
from hubsurvey.analysis.verdicts import config_verdicts, dataset_verdict, dataset_verdicts, rule
from hubsurvey.core.figures import EXACT_METHOD, LLE_METHOD, NEAR_METHOD
from hubsurvey.core.store import Store

ALL = {LLE_METHOD: 1, EXACT_METHOD: 1, NEAR_METHOD: 1}
NEAR_OK = json.dumps({"status": "measured", "tau": 0.8})


def _row(config: str, *, near=None, near_rows=None, exact=None, exact_rows=None, biased=0.0, leaks=0, dups=0,
         methods=ALL, near_json=NEAR_OK, label=None):
    return {"dataset_id": "me/ds", "config": config, "label_column": label, "revision_sha": "abc",
            "methods": json.dumps(methods), "near": near_json,
            "near_contaminated_test_pct": near, "test_rows_near_contaminated": near_rows,
            "normalized_contaminated_test_pct": exact, "normalized_test_rows_contaminated": exact_rows,
            "text_test_biased": biased, "text_leaks_train_wrt_test": leaks, "text_leaks_validation_wrt_test": None,
            "text_duplication_test": dups}


def _reference(value: float | None, contaminated: int) -> str:
    """The rule as docs/method.md states it: clean at 0 contaminated rows, else by the figure as
    published (3 decimals), NULL as 0: below 1 minor, below 5 caution, else unreliable."""
    if contaminated == 0:
        return "clean"
    v = round(value or 0.0, 3)
    return "minor" if v < 1 else "caution" if v < 5 else "unreliable"


@pytest.mark.parametrize("value", [0.0, 0.0004, 0.5, 0.9994, 0.9995, 1.0, 4.9995, 4.9994, 5.0, 8.047, 100.0, None])
@pytest.mark.parametrize("contaminated", [0, 1, 7])
def test_each_basis_grades_its_figure_as_the_reference(value, contaminated):
    rows = [_row("near", near=value, near_rows=contaminated, exact=99.0, exact_rows=99),
            _row("exact", exact=value, exact_rows=contaminated, methods={LLE_METHOD: 1, EXACT_METHOD: 1}),
            _row("lle", biased=value, leaks=contaminated, methods={LLE_METHOD: 1})]
    got = config_verdicts(rows)
    assert [v.basis for v in got] == [NEAR_METHOD, EXACT_METHOD, LLE_METHOD]
    assert [v.figure for v in got] == ["near_contaminated_test_pct", "normalized_contaminated_test_pct", "text_test_biased"]
    for v in got:
        assert v.verdict == _reference(value, contaminated), v
        assert v.value == (None if value is None else round(value, 3))
        assert v.rule == rule(v.basis, v.verdict) and v.figure in v.reason and v.verdict in v.reason


def test_a_near_row_that_was_not_measured_falls_back_to_exact():
    not_measured = _row("a", near=None, near_rows=None, exact=2.0, exact_rows=3,
                        near_json=json.dumps({"status": "not measured"}))
    collided = _row("b", exact=0.0, exact_rows=0, near_json=json.dumps({"status": "NR: hash collision"}))
    no_json = _row("c", exact=6.0, exact_rows=1, near_json=None)
    assert [v.basis for v in config_verdicts([not_measured, collided, no_json])] == [EXACT_METHOD] * 3
    assert [v.verdict for v in config_verdicts([not_measured, collided, no_json])] == ["caution", "clean", "unreliable"]


def test_the_dataset_is_its_worst_config_on_the_dataset_basis_and_names_it():
    rows = [_row("emotion", near=0.4, near_rows=3, exact=0.2, exact_rows=2),
            _row("hate", near=9.1, near_rows=30, exact=8.047, exact_rows=25),
            _row("stance", near=0.0, near_rows=0, exact=0.0, exact_rows=0),
            # measured without near: the whole dataset falls back to the exact basis
            _row("zzz", exact=0.5, exact_rows=1, methods={LLE_METHOD: 1, EXACT_METHOD: 1})]
    judged = dataset_verdict(rows)
    assert judged.basis == EXACT_METHOD and judged.verdict == "unreliable"
    assert judged.decided_by.config == "hate" and judged.decided_by.value == 8.047
    assert [c.verdict for c in judged.configs] == ["minor", "unreliable", "clean", "minor"]
    assert judged.reason.startswith("unreliable, from config hate: normalized_contaminated_test_pct 8.047%")
    assert json.loads(json.dumps(judged.as_dict()))["decided_by"]["config"] == "hate"
    # every config measured by near: the near basis decides (its figures are never below exact's)
    near = dataset_verdict(rows[:3])
    assert near.basis == NEAR_METHOD and near.decided_by.figure == "near_contaminated_test_pct"
    # a tie in verdict and figure: the first config by name
    tie = dataset_verdict([_row("b", near=0.0, near_rows=1), _row("a", near=0.0, near_rows=2)])
    assert tie.verdict == "minor" and tie.decided_by.config == "a"
    with pytest.raises(ValueError, match="one dataset"):
        dataset_verdict([])


def _check_db(db) -> int:
    """Every row's verdict is the history view's; every dataset's verdict, basis and deciding figure
    are findings_dataset_verdict's. Returns the datasets checked."""
    with Store(db, read_only=True) as store:
        create_views(store)
        _ensure_view(store)
        current = store.records("SELECT * FROM current_measurements ORDER BY dataset_id, config, label_column NULLS FIRST")
        history = {(r["dataset_id"], r["config"], r["label_column"], r["revision_sha"]): r["verdict"]
                   for r in store.records("SELECT * FROM history")}
        findings = {r["dataset_id"]: r for r in store.records("SELECT * FROM findings_dataset_verdict")}
    for v in config_verdicts(current):
        assert v.verdict == history[(v.dataset_id, v.config, v.label_column, v.revision_sha)], v
    judged = dataset_verdicts(current)
    assert set(judged) == set(findings)
    measure = {NEAR_METHOD: ("worst_near_contaminated_test_pct", "worst_near_config"),
               EXACT_METHOD: ("worst_normalized_contaminated_test_pct", "worst_exact_config"),
               LLE_METHOD: ("worst_text_test_biased", "worst_config")}
    for dataset_id, j in judged.items():
        f = findings[dataset_id]
        assert (j.verdict, j.basis) == (f["verdict"], f["verdict_basis"]), dataset_id
        figure, config = measure[j.basis]
        assert (j.decided_by.value or 0.0) == (f[figure] or 0.0), dataset_id
        if j.verdict != "clean":  # the config findings names as the worst is the one the verdict comes from
            assert j.decided_by.config == f[config], dataset_id
    return len(judged)


@pytest.mark.slow
def test_on_the_planted_audits_every_verdict_equals_the_sql(tmp_path):
    assert _check_db(build_planted_db(tmp_path)) == 4


@pytest.mark.slow
def test_on_tweet_eval_the_verdict_comes_from_hate(shared_datasets, tmp_path):
    """tweet_eval's configs differ: its dataset verdict is one config's, and says which."""
    from hubsurvey.survey.audit import audit

    db = tmp_path / "tweet.duckdb"
    outcome = audit(str(shared_datasets / "cardiffnlp__tweet_eval"), near=False, db=db)
    assert not outcome.errors
    assert _check_db(db) == 1
    judged = dataset_verdict(outcome.rows)  # an audit's rows, straight from audit(): the same verdict
    with Store(db, read_only=True) as store:
        create_views(store)
        assert judged.verdict == store.records("SELECT verdict FROM findings_dataset_verdict")[0]["verdict"]
    by_config = {c.config: c.verdict for c in judged.configs}
    assert len(set(by_config.values())) > 1  # the configs' verdicts differ: one verdict for all would hide it
    assert f"from config {judged.decided_by.config}" in judged.reason
