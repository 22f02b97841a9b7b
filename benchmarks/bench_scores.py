"""Benchmark: the Hub calls of the scores step per surveyed dataset, beside the exposure step's (the baseline), at Hub scale.

    python benchmarks/bench_scores.py [--datasets 200] [--models 300] [--max-models 100] [--page-size 100]
        [--eval-share 0.05] [--benchmarks 20] [--out /tmp/hubsurvey-bench-scores]

A results DB of ``--datasets`` surveyed Hub datasets (synthetic measurement rows; every dataset also
contaminated by one benchmark, so that exposure lists every one of them too) and a stand-in serving
``--models`` models per dataset, each declaring its dataset and reporting two model-index scores on it
(the Trainer's shape); ``--eval-share`` of them also hold an ``.eval_results`` file naming one of
``--benchmarks`` benchmarks, each with an ``eval.yaml``. The listing pages hold ``--page-size``
models (the Hub's models listing: 1000 [unconfirmed]), so the cap (``--max-models``, + 1 to know
whether the Hub has more) decides how many pages a dataset costs.

Measured, in one run, alternating nothing (the counts are not timings):
- exposure: ``lookup_exposure`` (the baseline), then again (nothing changed: no call);
- scores: ``lookup_scores``, then again (nothing changed: no call), then ``relookup``;
- API calls (listing pages) and file calls (``.eval_results`` files, ``eval.yaml``) per dataset,
  from the client's counters and the stand-in's request counts; and the wall time of each.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path


def _index(dataset: str) -> list[dict]:
    return [{"name": "m", "results": [{"task": {"type": "text-classification"},
                                       "dataset": {"type": dataset, "name": dataset, "config": "default", "split": split},
                                       "metrics": [{"type": "accuracy", "value": 0.9}]} for split in ("test", "validation")]}]


def write_models(root: Path, datasets: list[str], models: int, eval_share: float, benchmarks: int) -> int:
    """The models root (index.json); returns the models holding an .eval_results file."""
    entries, with_files = [], 0
    every = max(1, round(1 / eval_share)) if eval_share > 0 else 0
    for d, dataset in enumerate(datasets):
        for n in range(models):
            entry = {"id": f"org{d}/model-{n}", "cardData": {"datasets": [dataset], "model-index": _index(dataset)}}
            if every and n % every == 0:
                bench = f"bench/b{(d + n) % benchmarks}"
                entry["eval_results"] = {"bench.yaml": [{"dataset": {"id": bench, "task_id": "main"}, "value": 50.0}]}
                with_files += 1
            entries.append(entry)
    evals = {f"bench/b{b}": {"tasks": [{"id": "main", "config": "default", "split": "test"}]} for b in range(benchmarks)}
    bench_entries = [{"id": f"bench/b{b}"} for b in range(benchmarks)]
    (root / "index.json").write_text(json.dumps({"datasets": bench_entries, "models": entries, "evals": evals}))
    return with_files


def fill_db(db: Path, datasets: list[str]) -> None:
    from hubsurvey import __version__
    from hubsurvey.core.figures import LLE_METHOD
    from hubsurvey.core.store import Store, insert, now
    from hubsurvey.survey import contamination as bench

    with Store(db) as store, store.transaction() as con:
        for dataset in datasets:
            sha = "a" * 40
            insert(con, "measurements", {
                "measurement_id": f"{dataset}@{sha}/default", "dataset_id": dataset, "revision_sha": sha,
                "config": "default", "text_columns": ["text"], "roles_source": "inferred", "dataset_name": dataset,
                "train_split": "train", "test_split": "test", "rows_train": 1000, "rows_test": 100,
                "source": "hub", "method": LLE_METHOD, "method_version": 1, "tool_version": __version__,
                "measured_at": now()})
            insert(con, "contamination", {
                "dataset_id": dataset, "revision_sha": sha, "config": "default", "split": "train", "split_name": "train",
                "rows_split": 1000, "text_columns": ["text"], "benchmark_id": "bench/b0", "benchmark_config": "default",
                "benchmark_split": "test", "benchmark_revision": "b" * 40, "contaminated_rows": 3,
                "contaminated_pct": 0.3, "examples": "[]", "candidates": 3, "verified": 3, "method": bench.METHOD,
                "method_version": bench.METHOD_VERSION, "tool_version": __version__, "measured_at": now(), "run_id": None})


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", type=int, default=200)
    ap.add_argument("--models", type=int, default=300, help="models declaring each dataset")
    ap.add_argument("--max-models", type=int, default=100)
    ap.add_argument("--page-size", type=int, default=100)
    ap.add_argument("--eval-share", type=float, default=0.05)
    ap.add_argument("--benchmarks", type=int, default=20)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()

    from hubsurvey.core.hub import HubClient
    from hubsurvey.core.store import Store
    from hubsurvey.survey.exposure import lookup_exposure
    from hubsurvey.survey.scores import lookup_scores
    from hubsurvey_standin import StandinHub

    out = args.out or Path(tempfile.mkdtemp(prefix="hubsurvey-bench-scores-"))
    out.mkdir(parents=True, exist_ok=True)
    datasets = [f"org{d}/data-{d}" for d in range(args.datasets)]
    root = out / "hub"
    root.mkdir(exist_ok=True)
    with_files = write_models(root, datasets, args.models, args.eval_share, args.benchmarks)
    db = out / "r.duckdb"
    for p in (db, Path(f"{db}.wal")):
        p.unlink(missing_ok=True)
    fill_db(db, datasets)
    print(json.dumps({"datasets": args.datasets, "models_per_dataset": args.models, "max_models": args.max_models,
                      "page_size": args.page_size, "models_with_eval_results": with_files,
                      "benchmarks": args.benchmarks}), flush=True)
    results = {}
    with StandinHub(root, page_size=args.page_size) as hub, Store(db) as store:
        client = HubClient(endpoint=hub.url, token=False, rate=0, file_rate=0, cache_dir=out / "cache")

        def measure(name: str, run) -> None:
            calls, files, before = client.calls, client.file_calls, hub.stats()
            started = time.perf_counter()
            summary = run()
            seconds = time.perf_counter() - started
            after = hub.stats()
            api, file_calls = client.calls - calls, client.file_calls - files
            results[name] = row = {
                "step": name, "api_calls": api, "file_calls": file_calls,
                "api_per_dataset": round(api / args.datasets, 3), "files_per_dataset": round(file_calls / args.datasets, 3),
                "standin_models_requests": after.get("models", 0) - before.get("models", 0),
                "standin_resolve_requests": after.get("resolve_get", 0) - before.get("resolve_get", 0),
                "seconds": round(seconds, 2), "counts": summary.counts()}
            print(json.dumps(row), flush=True)

        measure("exposure", lambda: lookup_exposure(store, client, max_models=args.max_models))
        measure("exposure, nothing changed", lambda: lookup_exposure(store, client, max_models=args.max_models))
        measure("scores", lambda: lookup_scores(store, client, max_models=args.max_models))
        measure("scores, nothing changed", lambda: lookup_scores(store, client, max_models=args.max_models))
        measure("scores, relookup", lambda: lookup_scores(store, client, max_models=args.max_models, relookup=True))
        stored = store.query("SELECT count(*) FROM reported_scores")[1][0][0]
    pages = -(-(args.max_models + 1) // args.page_size)
    print(f"scores: {results['scores']['api_per_dataset']} API call(s) per dataset (pages of {args.page_size} up to the "
          f"cap {args.max_models} + 1: {pages} expected), {results['scores']['files_per_dataset']} file call(s) per "
          f"dataset; exposure (baseline): {results['exposure']['api_per_dataset']} API call(s) per contaminated "
          f"dataset; unchanged: {results['scores, nothing changed']['api_calls']} and "
          f"{results['exposure, nothing changed']['api_calls']} call(s); {stored} scores stored")
    ok = (results["scores"]["api_calls"] == results["scores"]["standin_models_requests"]
          and results["scores, nothing changed"]["api_calls"] == 0)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
