"""Benchmark: leaks across datasets (``crossleaks``) over a survey of 5M+ rows, against plain Python, in the same run.

    python benchmarks/bench_crossleaks.py [--datasets 200] [--rows 25000] [--out /tmp/hubsurvey-bench-cross]
        [--memory-limit 256MB,2GB]

The survey: every config of ``../shared/datasets`` (when the folder is there) plus ``--datasets``
generated datasets of ``--rows`` rows each (80% / 10% / 10%, texts of 8-20 words from a 50,000-word
vocabulary), with cross-dataset relations planted at known places:

- forks: a dataset copied whole under a new id (every split), ``--forks`` of them;
- leaks: 30% of one dataset's test rows copied into another dataset's train split, ``--leaks`` of them.

Each is audited once (``audit --no-near``, which writes the fingerprints), then, each in its own
subprocess (its own peak RSS):

- ``crossleaks``: ``analysis.crossleaks.crossleaks`` end to end (read the fingerprint Parquet, the
  DuckDB hash join, copy agreement, families, the store's write), once per ``--memory-limit``;
- ``python``: the same overlap counts with plain Python (a dict from hash to the splits holding it,
  built from the same Parquet files), the baseline.

Prints wall time, fingerprint rows/s and peak RSS of each, whether the counts agree, and whether
every planted fork came out as a copy and every planted leak as a leak.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

SPLITS = {"train": 0.8, "validation": 0.1, "test": 0.1}


def generate(out: Path, datasets: int, rows: int, forks: int, leaks: int, seed: int = 7) -> dict:
    """Write the generated datasets as folders (``org__name/default/<split>/0000.parquet``) and return the plan."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    plan_path = out / "plan.json"
    if plan_path.exists():
        return json.loads(plan_path.read_text())
    rng = np.random.default_rng(seed)
    vocab = np.array([f"{chr(97 + i % 26)}{chr(97 + i // 26 % 26)}{i}" for i in range(50_000)])
    features = {"text": {"dtype": "string", "_type": "Value"}, "label": {"names": ["a", "b", "c"], "_type": "ClassLabel"}}
    meta = {b"huggingface": json.dumps({"info": {"features": features}}).encode()}
    names = [f"bench-gen/d{i:03d}" for i in range(datasets)]
    texts: dict[str, dict[str, list[str]]] = {}
    for name in names:
        texts[name] = {}
        for split, share in SPLITS.items():
            n = int(rows * share)
            lengths = rng.integers(8, 21, n)
            words = vocab[rng.integers(0, len(vocab), int(lengths.sum()))]
            texts[name][split] = [" ".join(chunk) for chunk in np.split(words, np.cumsum(lengths)[:-1])]
    order = rng.permutation(datasets)
    fork_pairs = [(names[order[2 * k]], names[order[2 * k + 1]]) for k in range(forks)]  # (original, fork)
    for original, fork in fork_pairs:
        texts[fork] = {s: list(v) for s, v in texts[original].items()}
    rest = [names[i] for i in order[2 * forks:]]
    leak_pairs = [(rest[2 * k], rest[2 * k + 1]) for k in range(leaks)]  # (test of a, in train of b)
    for a, b in leak_pairs:
        test = texts[a]["test"]
        picked = rng.choice(len(test), int(len(test) * 0.3), replace=False)
        train = texts[b]["train"]
        for k, i in enumerate(rng.choice(len(train), len(picked), replace=False)):
            train[i] = test[picked[k]]
    for name in names:
        for split, values in texts[name].items():
            folder = out / name.replace("/", "__") / "default" / split
            folder.mkdir(parents=True, exist_ok=True)
            table = pa.table({"text": values, "label": pa.array(rng.integers(0, 3, len(values)), pa.int64())})
            pq.write_table(table.replace_schema_metadata(meta), folder / "0000.parquet")
    plan = {"datasets": names, "forks": fork_pairs, "leaks": leak_pairs, "rows": rows}
    plan_path.write_text(json.dumps(plan))
    return plan


def build_survey(out: Path, plan: dict, shared: Path | None) -> Path:
    """Audit every dataset into one DB (once; reused), the fingerprints beside it."""
    from hubsurvey.survey.audit import audit

    db = out / "survey.duckdb"
    if (out / "survey.done").exists():
        return db
    folders = [out / name.replace("/", "__") for name in plan["datasets"]]
    if shared is not None:
        folders += sorted(p for p in shared.iterdir() if p.is_dir())
    started = time.perf_counter()
    for folder in folders:
        outcome = audit(str(folder), db=db, near=False, examples=0)
        if outcome.errors:
            print(f"  {folder.name}: {outcome.errors}", file=sys.stderr)
    (out / "survey.done").write_text("")
    print(f"survey: {len(folders)} datasets audited in {time.perf_counter() - started:.0f} s")
    return db


def child_crossleaks(db: Path, memory_limit: str) -> None:
    from hubsurvey.analysis.crossleaks import crossleaks
    from hubsurvey.core.store import Store

    started = time.perf_counter()
    with Store(db) as store:
        summary = crossleaks(store, memory_limit=memory_limit)
        found = store.records("SELECT test_dataset, test_config, source_dataset, source_config, source_split, rows, relation "
                              "FROM cross_overlaps")
    seconds = time.perf_counter() - started
    print(json.dumps({"seconds": seconds, "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                      "rows": summary.rows, "files": summary.files, "summary": summary.as_json(),
                      "found": [[r["test_dataset"], r["test_config"], r["source_dataset"], r["source_config"],
                                 r["source_split"], r["rows"], r["relation"]] for r in found]}, default=str))


def child_python(db: Path) -> None:
    """The baseline: plain Python over the same files (hash -> the (dataset, config, split)s holding it)."""
    import pyarrow.parquet as pq

    from hubsurvey.analysis.crossleaks import current_fingerprints
    from hubsurvey.core.store import Store

    started = time.perf_counter()
    with Store(db, read_only=True) as store:
        files = current_fingerprints(store)
    holders: dict[int, set[tuple[str, str, str]]] = {}
    tests = []
    rows = 0
    for f in files:
        hashes = pq.read_table(f["filename"], columns=["hash"]).column(0).to_pylist()
        rows += len(hashes)
        where = (f["dataset_id"], f["config"], f["split"])
        for h in hashes:
            holders.setdefault(h, set()).add(where)
        if f["split"] == "test":
            tests.append((f["dataset_id"], f["config"], hashes))
    counts: dict[tuple, int] = {}
    for dataset, config, hashes in tests:
        for h in hashes:
            for source in holders[h]:
                if source[0] != dataset:
                    key = (dataset, config, *source)
                    counts[key] = counts.get(key, 0) + 1
    seconds = time.perf_counter() - started
    print(json.dumps({"seconds": seconds, "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                      "rows": rows, "found": [[*k, n] for k, n in sorted(counts.items())]}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--datasets", type=int, default=200)
    parser.add_argument("--rows", type=int, default=25_000)
    parser.add_argument("--forks", type=int, default=10)
    parser.add_argument("--leaks", type=int, default=20)
    parser.add_argument("--out", type=Path, default=Path("/tmp/hubsurvey-bench-cross"))
    parser.add_argument("--shared", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "datasets")
    parser.add_argument("--memory-limit", default="256MB,2GB", help="DuckDB memory limits to run crossleaks under")
    parser.add_argument("--child", choices=("crossleaks", "python", "prepare"), help=argparse.SUPPRESS)
    parser.add_argument("--limit", help=argparse.SUPPRESS)
    args = parser.parse_args()
    out = args.out / f"{args.datasets}x{args.rows}"
    db = out / "survey.duckdb"
    if args.child == "crossleaks":
        child_crossleaks(db, args.limit)
        return
    if args.child == "python":
        child_python(db)
        return
    shared = args.shared if args.shared.is_dir() else None
    if args.child == "prepare":
        out.mkdir(parents=True, exist_ok=True)
        build_survey(out, generate(out, args.datasets, args.rows, args.forks, args.leaks), shared)
        return
    # Prepared in a child: a child process starts with its parent's peak RSS as its own on Linux.
    base = [sys.executable, __file__, "--datasets", str(args.datasets), "--rows", str(args.rows), "--forks", str(args.forks),
            "--leaks", str(args.leaks), "--out", str(args.out), "--shared", str(args.shared)]
    subprocess.run([*base, "--child", "prepare"], check=True)
    plan = json.loads((out / "plan.json").read_text())
    print(f"survey: {len(plan['datasets'])} generated datasets of {args.rows:,} rows"
          + (f" + every config of {shared}" if shared else " (no shared datasets)")
          + f"; planted: {len(plan['forks'])} forks, {len(plan['leaks'])} leaks (30% of a test split in a train split)")
    results = {}
    for limit in args.memory_limit.split(","):
        proc = subprocess.run([*base, "--child", "crossleaks", "--limit", limit], check=True, capture_output=True, text=True)
        results[f"crossleaks {limit}"] = json.loads(proc.stdout.strip().splitlines()[-1])
    proc = subprocess.run([*base, "--child", "python"], check=True, capture_output=True, text=True)
    results["python sets"] = json.loads(proc.stdout.strip().splitlines()[-1])
    print(f"\n{'':22}{'wall s':>8}{'rows':>12}{'rows/s':>12}{'peak MB':>9}{'overlaps':>10}")
    for name, r in results.items():
        print(f"{name:22}{r['seconds']:>8.1f}{r['rows']:>12,}{r['rows'] / r['seconds']:>12,.0f}{r['peak_rss_mb']:>9.0f}{len(r['found']):>10}")
    first = next(iter(results.values()))
    sql_counts = {tuple(f[:5]): f[5] for f in first["found"]}
    py_counts = {tuple(f[:5]): f[5] for f in results["python sets"]["found"]}
    print(f"overlap counts: crossleaks == plain Python: {sql_counts == py_counts} ({len(sql_counts)} pairs)")
    relation = {(f[0], f[2], f[4]): f[6] for f in first["found"]}
    forks_ok = sum(relation.get((fork, original, "test")) == "copy" for original, fork in plan["forks"])
    leaks_ok = sum(relation.get((a, b, "train")) == "leak" for a, b in plan["leaks"])
    print(f"planted forks found as copies: {forks_ok}/{len(plan['forks'])}; planted leaks found as leaks: {leaks_ok}/{len(plan['leaks'])}")
    print("crossleaks:", json.dumps(first["summary"]))


if __name__ == "__main__":
    main()
