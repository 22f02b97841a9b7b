"""`audit` ends each config with its verdict: config, label column, verdict and the figure that
decided it, on stdout and in the JSON, the same verdict the DB's `history` view gives the row."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import SHARED_DATASETS
from typer.testing import CliRunner

from hubsurvey.cli import app
from hubsurvey.core.store import Store

SHARED = SHARED_DATASETS
runner = CliRunner()

#: the keys of an audit --json object before verdicts: kept, none renamed
KEYS_BEFORE = {"dataset_id", "config", "label_column", "text_columns", "exact", "near", "fingerprints",
               "text_leaks_train_wrt_test", "text_test_biased"}


def _history(db: Path) -> dict[tuple[str, str | None], dict]:
    """The SQL twin: each current row's verdict as the history view judges it."""
    from hubsurvey.analysis.history import _ensure_view

    with Store(db) as store:
        _ensure_view(store)
        rows = store.records("SELECT config, label_column, verdict, verdict_basis FROM history WHERE is_current")
    return {(r["config"], r["label_column"]): r for r in rows}


@pytest.mark.parametrize("dataset, near", [("cardiffnlp__tweet_eval", False), ("eriktks__conll2003", True)])
@pytest.mark.slow
def test_audit_ends_each_config_with_its_verdict_and_the_json_carries_it(tmp_path, dataset, near):
    folder = SHARED / dataset
    if not folder.is_dir():
        pytest.skip("the shared datasets are absent")
    db = tmp_path / "r.duckdb"
    flags = [] if near else ["--no-near"]
    table = runner.invoke(app, ["audit", str(folder), "--db", str(db), "--examples", "0", *flags])
    assert table.exit_code == 0, table.output
    as_json = runner.invoke(app, ["audit", str(folder), "--db", str(db), "--examples", "0", "--json", *flags])
    assert as_json.exit_code == 0, as_json.output
    objs = json.loads(as_json.stdout)
    twin = _history(db)
    assert len(objs) == len(twin) > 0
    lines = table.stdout.splitlines()
    for obj in objs:
        assert set(obj) >= KEYS_BEFORE
        verdict = obj["verdict"]
        key = (obj["config"], obj["label_column"])
        assert (verdict["config"], verdict["label_column"]) == key
        assert (verdict["verdict"], verdict["basis"]) == (twin[key]["verdict"], twin[key]["verdict_basis"])
        # the figure that decided it, as the row's own published figure
        assert verdict["figure"] == {"near-2026": "near_contaminated_test_pct",
                                     "exact-2026": "normalized_contaminated_test_pct"}[verdict["basis"]]
        figure = obj["near"][verdict["figure"]] if verdict["basis"] == "near-2026" \
            else obj["exact"]["normalized"]["contaminated_test_pct"]
        assert verdict["value"] == (None if figure is None else round(figure, 3))
        # the table's block of this config and label column ends with the same verdict, in one line
        header = next(i for i, text in enumerate(lines) if text.startswith(f"{obj['dataset_id']} @ ")
                      and f"  config={key[0]}  label={key[1] or '(none)'}  " in text)
        end = next(i for i in range(header + 1, len(lines)) if not lines[i].startswith("  "))
        assert lines[end] == f"verdict {key[0]} [{key[1] or '(no label)'}]: {verdict['reason']}"
    assert table.stdout.count("\nverdict ") == len(objs)
