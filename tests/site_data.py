"""A results DB of N synthetic datasets for the site's browser tests and benchmark, fast at any N.

Schema-true by construction: one real dataset is audited (its measurement rows, examples and the
columns' types are what the engine writes), then cloned N times with other ids, revisions and
figures, written through the Store in one transaction (``store.insert_many``), with crawl records
(task categories), contamination rows, cross-dataset overlaps and families for some of them.

    synthetic_db(Path("/tmp/site-bench/r.duckdb"), 100_000)
"""

from __future__ import annotations

import hashlib
import json
import random
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from hubsurvey.core.store import Store, insert_many

T0 = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
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
            measured, kept, crawled, contaminated = [], [], [], []
            for i in range(start, min(n, start + BATCH)):
                dataset_id, sha = ids[i], _sha("rev", i)
                leaks, dups = rng.choice((0, 0, 0, 1, 3, 12)), rng.choice((0, 0, 1, 2))
                pct = 0.0 if not leaks + dups else round(rng.uniform(0.01, 30.0), 3)
                for row in rows:
                    measured.append({**row, "dataset_id": dataset_id, "revision_sha": sha, "source": "hub",
                                     "measurement_id": f"{dataset_id}@{sha}/default#{row['label_column']}",
                                     "dataset_name": dataset_id.split("/")[1], "parquet_sha": _sha("parquet", i),
                                     "text_leaks_train_wrt_test": leaks, "text_duplication_test": dups,
                                     "normalized_contaminated_test_pct": pct, "near_contaminated_test_pct": pct,
                                     "normalized_test_rows_contaminated": leaks + dups,
                                     "test_rows_near_contaminated": leaks + dups, "measured_at": T0})
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
            insert_many(con, "measurements", measured)
            insert_many(con, "examples", kept)
            insert_many(con, "datasets", crawled)
            if contaminated:
                insert_many(con, "contamination", contaminated)
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
    return db
