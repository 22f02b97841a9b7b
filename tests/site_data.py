"""A results DB of N synthetic datasets for the site's browser tests and benchmark, fast at any N.

Schema-true by construction: one real dataset is audited (its measurement rows, examples and the
columns' types are what the engine writes), then cloned N times with other ids, revisions and
figures, written through the Store in one transaction (``store.insert_many``), with crawl records
(task categories), contamination rows, cross-dataset overlaps and families for some of them, the
models declaring the contaminated ones, a clean test split for some, and two survey runs (the
second measured a few datasets at a new revision), so every section of the site has rows.

    synthetic_db(Path("/tmp/site-bench/r.duckdb"), 100_000)
"""

from __future__ import annotations

import hashlib
import json
import random
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from hubsurvey.core.store import Store, insert_many

T0 = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
T1 = T0 + timedelta(days=1)  # the second run
TASKS = ("text-classification", "token-classification", "question-answering", "summarization", "translation")
BATCH = 20_000


def _template(tmp: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The measurement rows and examples of one real audit (a small folder with leaks and duplicates)."""
    from hubsurvey.survey.audit import audit

    folder = tmp / "owner__template"
    texts = {"train": [f"row {i} of the train split" for i in range(40)] + ["shared text"] * 2,
             "test": [f"row {i} of the train split" for i in range(3)] + ["test only"] * 2 + ["shared text"]}
    for split, rows in texts.items():
        out = folder / "default" / split
        out.mkdir(parents=True)
        pq.write_table(pa.table({"text": rows, "label": [i % 2 for i in range(len(rows))]}), out / "0000.parquet")
    db = tmp / "template.duckdb"
    outcome = audit(str(folder), db=db, dataset_id="owner/template")
    assert not outcome.errors, outcome.errors
    with Store(db, read_only=True) as store:
        return (store.records("SELECT * FROM measurements"), store.records("SELECT * FROM examples"))


def _sha(*parts: object) -> str:
    return hashlib.sha1("\0".join(map(str, parts)).encode()).hexdigest()


def dataset_ids(n: int) -> list[str]:
    return [f"owner{i % 997}/dataset-{i:06d}" for i in range(n)]


def synthetic_db(db: Path, n: int, seed: int = 0) -> Path:
    """Write ``n`` synthetic surveyed datasets into ``db`` (a new file); return it."""
    rng = random.Random(seed)
    with tempfile.TemporaryDirectory() as tmp:
        rows, examples = _template(Path(tmp))
    ids = dataset_ids(n)
    with Store(db) as store, store.transaction() as con:
        for start in range(0, n, BATCH):
            measured, kept, crawled, contaminated, exposed, cleaned = [], [], [], [], [], []
            for i in range(start, min(n, start + BATCH)):
                dataset_id, sha = ids[i], _sha("rev", i)
                leaks, dups = rng.choice((0, 0, 0, 1, 3, 12)), rng.choice((0, 0, 1, 2))
                pct = 0.0 if not leaks + dups else round(rng.uniform(0.01, 30.0), 3)
                # every 200th dataset: first measured clean by run 1 at an older revision, then by run 2
                nights = ((_sha("old", i), 0, 0, 0.0, T0, "run-1"), (sha, leaks, dups, pct, T1, "run-2")) \
                    if i % 200 == 0 else ((sha, leaks, dups, pct, T0, "run-1"),)
                for revision, n_leaks, n_dups, n_pct, when, run_id in nights:
                    for row in rows:
                        measured.append({**row, "dataset_id": dataset_id, "revision_sha": revision, "source": "hub",
                                         "measurement_id": f"{dataset_id}@{revision}/default#{row['label_column']}",
                                         "dataset_name": dataset_id.split("/")[1], "parquet_sha": _sha("parquet", revision),
                                         "text_leaks_train_wrt_test": n_leaks, "text_duplication_test": n_dups,
                                         "normalized_contaminated_test_pct": n_pct, "near_contaminated_test_pct": n_pct,
                                         "normalized_test_rows_contaminated": n_leaks + n_dups,
                                         "test_rows_near_contaminated": n_leaks + n_dups, "measured_at": when,
                                         "run_id": run_id})
                kept += [{**e, "dataset_id": dataset_id, "revision_sha": sha} for e in examples[:3]]
                crawled.append({"dataset_id": dataset_id, "sha": sha, "status": "eligible", "first_seen": T0,
                                "last_seen": T0, "tags": [f"task_categories:{TASKS[i % len(TASKS)]}", "language:en"]})
                if i % 50 == 0:
                    contaminated.append({
                        "dataset_id": dataset_id, "revision_sha": sha, "config": "default", "split": "test",
                        "split_name": "test", "rows_split": 6, "text_columns": ["text"], "benchmark_id": "bench/mmlu",
                        "benchmark_config": "all", "benchmark_split": "test", "benchmark_revision": _sha("bench"),
                        "contaminated_rows": 1, "contaminated_pct": 16.667,
                        "examples": json.dumps([{"position": 0, "item": 3, "match": "row 0 of", "passage": "row 0"}]),
                        "candidates": 1, "verified": 1, "method": "bench-2026", "method_version": 1,
                        "tool_version": rows[0]["tool_version"], "measured_at": T0, "run_id": None})
                    exposed += [{
                        "model_id": f"maker{(i + k) % 37}/model-{i % 101}", "model_sha": _sha("model", i, k),
                        "declared_by": "card:datasets", "dataset_id": dataset_id, "revision_sha": sha,
                        "config": "default", "split": "test", "split_name": "test", "text_columns": ["text"],
                        "benchmark_id": "bench/mmlu", "benchmark_config": "all", "benchmark_split": "test",
                        "benchmark_revision": _sha("bench"), "contaminated_rows": 1, "rows_split": 6,
                        "contaminated_pct": 16.667, "method": "exposure-2026", "method_version": 1,
                        "tool_version": rows[0]["tool_version"], "looked_up_at": T0, "run_id": None} for k in range(3)]
                if i % 100 == 0:
                    cleaned.append({
                        "dataset_id": dataset_id, "revision_sha": sha, "parquet_sha": _sha("parquet", sha),
                        "config": "default", "profile": "normalized", "text_columns": ["text"], "test_split": "test",
                        "rows_test": 6, "rows_kept": 6 - min(6, leaks + dups),
                        "dropped": json.dumps({"train": min(6, leaks), "validation": 0,
                                               "repeated": min(6 - min(6, leaks), dups), "near": 0}),
                        "kept_positions": list(range(6 - min(6, leaks + dups))), "test_fingerprint": "hs1:" + sha[:32],
                        "clean_fingerprint": "hs1:" + sha[8:40], "near": None, "method": "exact-2026",
                        "method_version": 1, "tool_version": rows[0]["tool_version"], "cleaned_at": T0, "run_id": None})
            insert_many(con, "measurements", measured)
            insert_many(con, "examples", kept)
            insert_many(con, "datasets", crawled)
            for table, new in (("contamination", contaminated), ("model_exposure", exposed), ("clean_test", cleaned)):
                if new:
                    insert_many(con, table, new)
        # a family of copies every 1000 datasets, and one leak between neighbours
        overlaps, families = [], []
        for i in range(0, n - 1, 1000):
            a, b = ids[i], ids[i + 1]
            overlaps.append({"test_dataset": a, "test_config": "default", "test_revision": _sha("rev", i),
                             "source_dataset": b, "source_config": "default", "source_split": "train",
                             "source_revision": _sha("rev", i + 1), "rows": 2, "test_rows": 6, "pct": 33.33,
                             "relation": "leak", "copy_threshold": 0.8, "method": "cross-2026", "method_version": 1,
                             "tool_version": rows[0]["tool_version"], "computed_at": T0, "run_id": None})
            members = sorted([b, ids[i + 2]]) if i + 2 < n else [b]
            families += [{"dataset_id": m, "family_id": members[0], "members": members, "computed_at": T0,
                          "run_id": None} for m in members]
        if overlaps:
            insert_many(con, "cross_overlaps", overlaps)
            insert_many(con, "dataset_families", families)
        insert_many(con, "runs", [{"run_id": run_id, "command": "run", "args": "{}", "started_at": at,
                                   "finished_at": at + timedelta(hours=1), "status": "done", "counts": "{}",
                                   "tool_version": rows[0]["tool_version"]} for run_id, at in (("run-1", T0), ("run-2", T1))])
    return db
