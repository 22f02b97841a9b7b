"""The contamination manifest of the results dataset (``contamination_manifest.jsonl``): per
surveyed dataset, the benchmark checks it passed and failed, each benchmark with its revision.

One JSON object per dataset of ``current_measurements``, sorted by dataset id::

    {"dataset_id": "...", "revisions": ["<sha>"],
     "contamination_checks_passed": [check, ...],
     "contamination_checks_failed": [check, ...],
     "contamination_checks_not_run": [{"benchmark_id", "benchmark_config", "benchmark_split",
                                       "revision", "reason"}, ...]}

A check is one benchmark (id, config, split) at one benchmark revision, over the dataset's
current configs checked against it (``findings_contamination_pairs``, a split that is the
benchmark's own test set under another name left out, as ``findings_contamination`` does):
``{"benchmark_id", "benchmark_config", "benchmark_split", "revision", "configs", "rows_checked",
"contaminated_rows", "method", "method_version", "tool_versions"}``.

- **passed**: checked, and 0 rows contaminated in every split checked;
- **failed**: at least one row contaminated (13 consecutive words of an item, or the whole text
  of an item shorter than 13 words, every match verified word for word: one row is enough);
- **not run**, neither passed nor failed: a benchmark of the ``benchmarks`` table the dataset
  has no check against at its current revision; ``reason`` is why the benchmark could not be
  indexed (its ``error_message``) or that the dataset was not checked against it.

It holds ids, revisions and counts only: nothing of a benchmark's items, so a local benchmark's
private items never reach the results dataset. The file depends only on the DB's content.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hubsurvey.analysis.findings import create_views
from hubsurvey.core.store import Store

CHECKS_MANIFEST_PATH = "contamination_manifest.jsonl"

_BENCHMARK = ("benchmark_id", "benchmark_config", "benchmark_split")

_CHECKS = """
SELECT dataset_id, benchmark_id, benchmark_config, benchmark_split, benchmark_revision AS revision,
       list(DISTINCT config ORDER BY config) AS configs, sum(rows_split)::BIGINT AS rows_checked,
       sum(contaminated_rows)::BIGINT AS contaminated_rows, any_value(method) AS method,
       max(method_version) AS method_version, list(DISTINCT tool_version ORDER BY tool_version) AS tool_versions
FROM findings_contamination_pairs
WHERE NOT benchmark_copy
GROUP BY dataset_id, benchmark_id, benchmark_config, benchmark_split, benchmark_revision
ORDER BY dataset_id, benchmark_id, benchmark_config, benchmark_split, benchmark_revision NULLS FIRST
"""


def has_checks(store: Store) -> bool:
    """Whether any benchmark was indexed or checked (else the results dataset has no manifest)."""
    return bool(store.query("SELECT (SELECT count(*) FROM benchmarks) + (SELECT count(*) FROM contamination)")[1][0][0])


def checks_manifest(store: Store) -> list[dict[str, Any]]:
    """The manifest's objects, one per surveyed dataset (see the module doc)."""
    create_views(store)
    datasets = store.records("SELECT dataset_id, list(DISTINCT revision_sha ORDER BY revision_sha) AS revisions "
                             "FROM current_measurements GROUP BY dataset_id ORDER BY dataset_id")
    benchmarks = store.records("SELECT benchmark_id, benchmark_config, benchmark_split, revision_sha, status, "
                               "error_message FROM benchmarks ORDER BY benchmark_id, benchmark_config, benchmark_split")
    checks: dict[str, list[dict[str, Any]]] = {}
    for row in store.records(_CHECKS):
        checks.setdefault(row.pop("dataset_id"), []).append(row)
    out = []
    for d in datasets:
        mine = checks.get(d["dataset_id"], [])
        checked = {tuple(c[k] for k in _BENCHMARK) for c in mine}
        not_run = [{**{k: b[k] for k in _BENCHMARK}, "revision": b["revision_sha"],
                    "reason": (f"not indexed: {b['error_message']}" if b["status"] == "failed"
                               else "not checked at the dataset's current revision")}
                   for b in benchmarks if tuple(b[k] for k in _BENCHMARK) not in checked]
        out.append({"dataset_id": d["dataset_id"], "revisions": list(d["revisions"]),
                    "contamination_checks_passed": [c for c in mine if c["contaminated_rows"] == 0],
                    "contamination_checks_failed": [c for c in mine if c["contaminated_rows"] > 0],
                    "contamination_checks_not_run": not_run})
    return out


def write_checks_manifest(store: Store, path: Path) -> Path | None:
    """``contamination_manifest.jsonl``, or nothing when no benchmark was ever indexed or checked."""
    if not has_checks(store):
        return None
    lines = [json.dumps(obj, ensure_ascii=False, default=str) for obj in checks_manifest(store)]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8", newline="")
    return path
