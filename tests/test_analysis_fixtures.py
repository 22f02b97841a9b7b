"""Known inputs for the analysis tests: small Parquet datasets with planted leaks and duplicates,
audited into a DB by the real pipeline (hubsurvey.survey.audit.audit), plus crawl and job records,
and a runs row written the way the product writes it (a ``run`` of the pipeline, with HF_TOKEN set).

The figures each dataset must produce are worked out by hand in PLANTED (and checked against the
audit in test_planted_figures), so every findings value in test_analysis.py is hand-computed.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from hubsurvey.core.store import Store, insert
from hubsurvey.survey.audit import audit

T0 = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
SECRET = "hf_planted_secret_value_0123456789"

# split -> rows; a row is (text, label) or (text,) for a dataset without a label column.
DATASETS: dict[str, dict[str, list[tuple]]] = {
    # train leaks t0 (same label) and t1 (other label); validation leaks t2; one train duplicate.
    "acme/alpha": {
        "train": [("t0", 0), ("t1", 1), ("a0", 0), ("a1", 0), ("a2", 0), ("a2", 0)],
        "validation": [("t2", 0), ("b0", 0)],
        "test": [(f"t{i}", 0) for i in range(10)],
    },
    # no validation split (every validation figure NR); u0 twice in test with two labels.
    "acme/beta": {
        "train": [("v0", 0), ("v1", 0)],
        "test": [("u0", 0), ("u1", 0), ("u2", 0), ("u0", 1)],
    },
    # no label column (every text+label figure and difference_annotation NR).
    "acme/gamma": {
        "train": [("w0",), ("c0",), ("c0",), ("c0",)],
        "validation": [("w1",), ("w2",), ("d0",)],
        "test": [("w0",), ("w1",), ("w2",), ("w3",), ("w4",), ("w4",)],
    },
    # clean.
    "acme/delta": {
        "train": [("e0", 0), ("e1", 1)],
        "validation": [("f0", 0)],
        "test": [("g0", 0), ("g1", 1)],
    },
}

# The figures, by hand (NR = None). test_biased = (leaks_train + duplication_test) / len(test) * 100.
PLANTED: dict[str, dict[str, float | int | None]] = {
    "acme/alpha": dict(
        text_leaks_train_wrt_test=2, text_leaks_validation_wrt_test=1,
        text_duplication_train=1, text_duplication_validation=0, text_duplication_test=0,
        text_test_biased=20.0,
        text_and_label_leaks_train_wrt_test=1, text_and_label_leaks_validation_wrt_test=1,
        text_and_label_duplication_train=1, text_and_label_duplication_validation=0,
        text_and_label_duplication_test=0, text_and_label_test_biased=10.0,
        difference_annotation=1.0,  # |(2 - 1) + (1 - 1)|
    ),
    "acme/beta": dict(
        text_leaks_train_wrt_test=0, text_leaks_validation_wrt_test=None,
        text_duplication_train=0, text_duplication_validation=None, text_duplication_test=1,
        text_test_biased=25.0,
        text_and_label_leaks_train_wrt_test=0, text_and_label_leaks_validation_wrt_test=None,
        text_and_label_duplication_train=0, text_and_label_duplication_validation=None,
        text_and_label_duplication_test=0, text_and_label_test_biased=0.0,
        difference_annotation=0.0,
    ),
    "acme/gamma": dict(
        text_leaks_train_wrt_test=1, text_leaks_validation_wrt_test=2,
        text_duplication_train=2, text_duplication_validation=0, text_duplication_test=1,
        text_test_biased=100 * 2 / 6,
        text_and_label_leaks_train_wrt_test=None, text_and_label_leaks_validation_wrt_test=None,
        text_and_label_duplication_train=None, text_and_label_duplication_validation=None,
        text_and_label_duplication_test=None, text_and_label_test_biased=None,
        difference_annotation=None,
    ),
    "acme/delta": dict(
        text_leaks_train_wrt_test=0, text_leaks_validation_wrt_test=0,
        text_duplication_train=0, text_duplication_validation=0, text_duplication_test=0,
        text_test_biased=0.0,
        text_and_label_leaks_train_wrt_test=0, text_and_label_leaks_validation_wrt_test=0,
        text_and_label_duplication_train=0, text_and_label_duplication_validation=0,
        text_and_label_duplication_test=0, text_and_label_test_biased=0.0,
        difference_annotation=0.0,
    ),
}


def write_folder(root: Path, dataset_id: str, splits: dict[str, list[tuple]]) -> Path:
    """``<root>/<owner>__<name>/default/<split>/0000.parquet`` (the Hub's Parquet-branch layout)."""
    folder = root / dataset_id.replace("/", "__")
    for split, rows in splits.items():
        columns = {"text": pa.array([r[0] for r in rows], pa.string())}
        if rows and len(rows[0]) > 1:
            columns["label"] = pa.array([r[1] for r in rows], pa.int64())
        out = folder / "default" / split
        out.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.table(columns), out / "0000.parquet")
    return folder


def audit_folder(folder: Path, db: Path, dataset_id: str | None = None) -> None:
    outcome = audit(str(folder), db=db, dataset_id=dataset_id)
    assert not outcome.errors, outcome.errors


_BUILT: dict[bool, Path] = {}  # crawl -> a folder built once per test session, copied for each caller


def build_planted_db(root: Path, *, crawl: bool = True) -> Path:
    """Audit the planted datasets into ``root/results.duckdb``; add crawl/job/run records.

    ``acme/alpha`` is first audited at an older revision with other content (no leaks at all):
    the findings must only count its newest revision (current_measurements).
    The folder is built once per session and copied: every caller gets its own identical DB.
    """
    if crawl not in _BUILT:
        built = Path(tempfile.mkdtemp(prefix="hubsurvey-planted-")) / "root"
        _build_planted_db(built, crawl=crawl)
        _BUILT[crawl] = built
    shutil.copytree(_BUILT[crawl], root, dirs_exist_ok=True)
    return root / "results.duckdb"


def _build_planted_db(root: Path, *, crawl: bool) -> Path:
    db = root / "results.duckdb"
    old = write_folder(root / "old", "acme/alpha", {"train": [("z0", 0)], "test": [("z1", 0)]})
    audit_folder(old, db)
    for dataset_id, splits in DATASETS.items():
        audit_folder(write_folder(root / "data", dataset_id, splits), db)
    with Store(db) as store:
        # make the revisions' order explicit (audits within one test can share a timestamp)
        store.con.execute(
            "UPDATE measurements SET measured_at = $t WHERE dataset_id = 'acme/alpha' AND rows_test = 1",
            {"t": T0 - timedelta(days=30)},
        )
        store.con.execute("UPDATE measurements SET measured_at = $t WHERE rows_test <> 1", {"t": T0})
        if crawl:
            add_crawl_records(store)
    if crawl:
        record_run(db)
    return db


def add_crawl_records(store: Store) -> None:
    """datasets: alpha, beta, gamma eligible (delta never crawled) and three excluded; six jobs
    (three failed); one run whose arguments include a secret that must never be shown."""
    con = store.con
    tags = {
        # a repeated tag counts once
        "acme/alpha": ["task_categories:text-classification", "language:en", "task_categories:text-classification"],
        "acme/beta": ["task_categories:text-classification", "task_categories:token-classification"],
        "acme/gamma": ["language:en", "modality:text"],
        "x/gated1": ["task_categories:text-classification"],
        "x/gated2": [],
        "x/notest": [],
    }
    reasons = {"x/gated1": "gated", "x/gated2": "gated", "x/notest": "no_test_split"}
    for dataset_id, ds_tags in tags.items():
        insert(con, "datasets", {
            "dataset_id": dataset_id, "tags": ds_tags,
            "status": "excluded" if dataset_id in reasons else "eligible",
            "exclusion_reason": reasons.get(dataset_id),
            "first_seen": T0, "last_seen": T0,
        })
    jobs = [
        ("acme/alpha", "done", None), ("acme/beta", "done", None), ("acme/gamma", "done", None),
        ("x/broken1", "failed", "unreadable"), ("x/broken2", "failed", "unreadable"),
        ("x/weird", "failed", "bad_input"),
    ]
    for dataset_id, status, error_class in jobs:
        insert(con, "jobs", {
            "job_id": f"{dataset_id}@{'0' * 40}/default", "dataset_id": dataset_id, "revision_sha": "0" * 40,
            "config": "default", "status": status, "error_class": error_class, "queued_at": T0,
        })


def record_run(db: Path) -> None:
    """A ``runs`` row as the product writes it: a pipeline run (nothing left to measure: no crawl, and the
    eligible datasets above have no sha), given the arguments ``hubsurvey run`` gives it, with the
    token set in the environment and in the client. No secret may reach any output from there."""
    from hubsurvey.core.hub import HubClient
    from hubsurvey.crawler.rules import CrawlFilters
    from hubsurvey.pipeline import RunOptions, run_survey

    previous = os.environ.get("HF_TOKEN")
    os.environ["HF_TOKEN"] = SECRET
    try:
        client = HubClient(endpoint="http://127.0.0.1:9", token=SECRET, rate=0, file_rate=0)
        filters = CrawlFilters(task_categories=["text-classification"], limit=100)
        args = {"filters": filters.as_json(), "workers": 1, "max_hours": 0.0, "dask": False, "db": str(db)}
        summary = run_survey(db, client, filters, RunOptions(crawl=False, workers=1), args=args)
        assert summary.status == "done" and summary.queued == 0, summary
    finally:
        if previous is None:
            os.environ.pop("HF_TOKEN", None)
        else:
            os.environ["HF_TOKEN"] = previous
