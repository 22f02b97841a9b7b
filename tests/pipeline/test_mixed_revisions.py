"""Partial re-measures keep every config's newest rows and the findings say so; a one-off folder
audit never displaces a dataset's Hub rows (survey results and one-off audits stay apart)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from hubsurvey.analysis.export import export_results
from hubsurvey.analysis.findings import findings
from hubsurvey.analysis.report import render_report
from hubsurvey.cli import app
from hubsurvey.core.store import Store
from hubsurvey.survey.audit import audit

DATASET = "acme/two-configs"


def _write(folder: Path, config: str, train: list[str], test: list[str]) -> None:
    for split, texts in (("train", train), ("test", test)):
        out = folder / config / split
        out.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.table({"text": pa.array(texts, pa.string())}), out / "0000.parquet")


def _two_config_folder(root: Path) -> Path:
    folder = root / "acme__two-configs"
    _write(folder, "alpha", ["a", "b", "c"], ["a", "x"])
    _write(folder, "beta", ["p", "q"], ["p", "q", "r"])
    return folder


def _current(db: Path) -> dict[str, tuple[str, int]]:
    with Store(db, read_only=True) as store:
        rows = store.records("SELECT config, revision_sha, text_leaks_train_wrt_test FROM current_measurements WHERE dataset_id = $d", {"d": DATASET})
    return {r["config"]: (r["revision_sha"], r["text_leaks_train_wrt_test"]) for r in rows}


@pytest.mark.slow
def test_a_partial_re_measure_keeps_both_configs_and_the_finding_names_the_dataset(tmp_path):
    db = tmp_path / "r.duckdb"
    folder = _two_config_folder(tmp_path)
    first = audit(str(folder), db=db, dataset_id=DATASET)
    assert not first.errors and len(first.results) == 2
    with Store(db, read_only=True) as store:
        assert findings(store)["mixed_revisions"] == []
        render_report(store, tmp_path / "before")
    assert "No dataset is partially re-measured" in (tmp_path / "before" / "REPORT.md").read_text()

    # alpha changes (a new revision of the folder) and only alpha is re-measured
    _write(folder, "alpha", ["a", "b", "c", "x"], ["a", "x"])
    second = audit(str(folder), db=db, dataset_id=DATASET, config="alpha")
    assert not second.errors
    current = _current(db)
    assert set(current) == {"alpha", "beta"}
    assert current["alpha"][0] != current["beta"][0]
    assert current["alpha"][1] == 2 and current["beta"][1] == 2  # alpha's new figures, beta's old ones

    with Store(db, read_only=True) as store:
        (mixed,) = findings(store)["mixed_revisions"]
        lle = store.records("SELECT * FROM lle")
        paths = export_results(store, tmp_path / "export")
        render_report(store, tmp_path / "report")
    assert mixed["dataset_id"] == DATASET and mixed["revisions"] == 2 and mixed["configs"] == 2
    assert mixed["newest_revision"] == current["alpha"][0] and mixed["stale_configs"] == "beta"
    assert mixed["oldest_measured_at"] < mixed["newest_measured_at"]
    assert len(lle) == 2
    results = next(p for p in paths if p.name == "results.csv").read_text()
    assert "alpha" in results and "beta" in results
    md = (tmp_path / "report" / "REPORT.md").read_text()
    html = (tmp_path / "report" / "report.html").read_text()
    assert "**Partially re-measured.** 1 dataset(s)" in md and f"| {DATASET} | 2 | 2 |" in md
    assert "Partially re-measured." in html and "<td>beta</td>" in html

    r = CliRunner().invoke(app, ["sql", "--db", str(db), "SELECT dataset_id, stale_configs FROM findings_mixed_revisions"])
    assert r.exit_code == 0 and DATASET in r.stdout, r.output


@pytest.mark.slow
def test_a_folder_audit_never_displaces_the_hub_rows(tmp_path):
    db = tmp_path / "r.duckdb"
    folder = _two_config_folder(tmp_path)
    # Hub rows, written through the store as a survey job does: the measured rows, source 'hub', at a Hub sha
    measured = audit(str(folder), db=None, dataset_id=DATASET)
    hub_sha = "1" * 40
    with Store(db) as store:
        for result in measured.results:
            rows = [{**row, "source": "hub", "revision_sha": hub_sha,
                     "measurement_id": row["measurement_id"].replace(f"@{row['revision_sha']}/", f"@{hub_sha}/")}
                    for row in result.rows]
            store.replace_measurements(DATASET, hub_sha, result.config, rows)
    # a one-off audit of a changed local copy of the same dataset
    _write(folder, "alpha", ["a", "b", "c", "x", "y"], ["a", "x", "y"])
    local = audit(str(folder), db=db, dataset_id=DATASET)
    assert not local.errors
    with Store(db, read_only=True) as store:
        sources = store.records("SELECT source, count(*) AS n FROM measurements GROUP BY source ORDER BY source")
        current = store.records("SELECT config, source, revision_sha FROM current_measurements ORDER BY config")
        lle = store.records("SELECT * FROM lle")
        paths = export_results(store, tmp_path / "export")
        assert findings(store)["mixed_revisions"] == []
    assert sources == [{"source": "folder", "n": 2}, {"source": "hub", "n": 2}]  # the audit is kept, apart
    assert current == [{"config": "alpha", "source": "hub", "revision_sha": hub_sha},
                       {"config": "beta", "source": "hub", "revision_sha": hub_sha}]
    assert len(lle) == 2
    results = next(p for p in paths if p.name == "results.csv").read_text()
    assert hub_sha in results and local.results[0].revision_sha not in results
