"""Benchmark: leaks across datasets (``crossleaks``) over a survey of 5M+ rows, against plain Python, in the same run.

    python benchmarks/bench_crossleaks.py [--datasets 200] [--rows 25000] [--out /tmp/hubsurvey-bench-cross]
        [--memory-limit 256MB,2GB]

The survey: every config of ``../shared/datasets`` (when the folder is there) plus ``--datasets``
generated datasets of ``--rows`` rows each (80% / 10% / 10%, texts of 8-20 words from a 50,000-word
vocabulary), with cross-dataset relations planted at known places:

- forks: a dataset copied whole under a new id (every split), ``--forks`` of them;
- leaks: 30% of one dataset's test rows copied into another dataset's train split, ``--leaks`` of them;
- contamination: a generated benchmark of 1,500 items (6-60 words, a fifth shorter than 13), whose
  passages (13-20 words, title case, doubled spaces) are put inside 0.5% of the train rows of the
  datasets in no fork or leak, and whose short items (upper case) replace 0.1% of them.

Each is audited once (``audit --no-near``, which writes the fingerprints), then, each in its own
subprocess (its own peak RSS):

- ``crossleaks``: ``analysis.crossleaks.crossleaks`` end to end (read the fingerprint Parquet, the
  DuckDB hash join, copy agreement, families, the store's write), once per ``--memory-limit``;
- ``python``: the same overlap counts with plain Python (a dict from hash to the splits holding it,
  built from the same Parquet files), the baseline;
- ``contamination``: the 13-gram check of every split of the survey against the generated benchmark
  and, when the shared datasets are there, four of their test sets (gsm8k, rotten_tomatoes, trec,
  conll2003): ``contamination.scan_split`` over the Parquet files, one split per worker thread at a
  time, with one worker per core (as a survey scans in its jobs, a worker per core) and with one;
- ``python-set``: the same check with Python sets of 13-word tuples and of whole texts over the
  same files (``to_pylist``, ``normalize_text``-equivalent, ``str.split``), the baseline.

Prints wall time, rows/s and peak RSS of each, whether the counts agree, whether every planted fork
came out as a copy and every planted leak as a leak, and whether the 13-gram check found exactly
the rows the Python sets found, the planted ones among them.
"""

from __future__ import annotations

import argparse
import json
import os
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
    # a benchmark and its items planted in the train rows of the datasets in no fork or leak
    bench_lengths = rng.integers(6, 61, 1_500)
    bench_words = vocab[rng.integers(0, 2_000, int(bench_lengths.sum()))]  # the commoner words
    bench = [" ".join(chunk) for chunk in np.split(bench_words, np.cumsum(bench_lengths)[:-1])]
    pq.write_table(pa.table({"text": bench}), out / "benchmark.parquet")
    long_items = [b.split() for b in bench if len(b.split()) >= 13]
    short_items = [b for b in bench if len(b.split()) < 13]
    touched = {n for pair in [*fork_pairs, *leak_pairs] for n in pair}
    planted: dict[str, list[int]] = {}
    for name in names:
        if name in touched:
            continue
        train = texts[name]["train"]
        where = rng.choice(len(train), len(train) // 200 + len(train) // 1000, replace=False)
        for k, i in enumerate(where):
            if k < len(train) // 200:
                item = long_items[rng.integers(len(long_items))]
                n = int(rng.integers(13, min(20, len(item)) + 1))
                at = int(rng.integers(0, len(item) - n + 1))
                row = train[i].split(" ")
                cut = int(rng.integers(0, len(row) + 1))
                train[i] = " ".join([*row[:cut], "  ".join(item[at:at + n]).title(), *row[cut:]])
            else:
                train[i] = short_items[rng.integers(len(short_items))].upper()
        planted[name] = sorted(int(i) for i in where)
    for name in names:
        for split, values in texts[name].items():
            folder = out / name.replace("/", "__") / "default" / split
            folder.mkdir(parents=True, exist_ok=True)
            table = pa.table({"text": values, "label": pa.array(rng.integers(0, 3, len(values)), pa.int64())})
            pq.write_table(table.replace_schema_metadata(meta), folder / "0000.parquet")
    plan = {"datasets": names, "forks": fork_pairs, "leaks": leak_pairs, "rows": rows, "contaminated": planted}
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


SHARED_BENCHMARKS = [("openai__gsm8k", "main", "test", ["question"]),
                     ("cornell-movie-review-data__rotten_tomatoes", "default", "test", ["text"]),
                     ("CogComp__trec", "default", "test", ["text"]),
                     ("eriktks__conll2003", "conll2003", "test", ["tokens"])]


def survey_splits(out: Path, plan: dict, shared: Path | None) -> list[tuple[str, str, str, list[str], list[str]]]:
    """(dataset, config, split, Parquet files, text columns) of every split of the survey."""
    from hubsurvey.core.roles import resolve_roles
    from hubsurvey.survey.sources import FolderSource, check_config

    folders = [(out / name.replace("/", "__"), name) for name in plan["datasets"]]
    if shared is not None:
        folders += [(p, None) for p in sorted(p for p in shared.iterdir() if p.is_dir())]
    splits = []
    for folder, name in folders:
        source = FolderSource(folder, name)
        for config in source.configs():
            data = check_config(source.load(config))
            roles = resolve_roles(data.features, data.dataset_id, data.config, None)
            for split in data.splits.values():
                splits.append((data.dataset_id, config, split.source_name, list(split.files), list(roles.text_columns)))
    return splits


def benchmark_tables(out: Path, shared: Path | None) -> list[tuple[str, list[str], object]]:
    """(benchmark id, text columns, Arrow table) of the benchmarks the check uses."""
    import pyarrow.parquet as pq

    tables = [("bench-gen/benchmark", ["text"], pq.read_table(out / "benchmark.parquet"))]
    for folder, config, split, columns in (SHARED_BENCHMARKS if shared is not None else []):
        files = sorted((shared / folder / config / split).glob("*.parquet"))
        if files:
            tables.append((folder.replace("__", "/"), columns, pq.read_table(files, columns=columns)))
    return tables


def child_contamination(out: Path, plan: dict, shared: Path | None, workers: int) -> None:
    """The engine: every split scanned by ``scan_split``, ``workers`` splits at a time (a survey scans
    inside its measuring jobs, one worker per core; 1: one core)."""
    from concurrent.futures import ThreadPoolExecutor

    import pyarrow as pa

    from hubsurvey.survey import contamination as c

    started = time.perf_counter()
    splits = survey_splits(out, plan, shared)
    index = c.index_from_tables([(c.Benchmark(b, "default", "test", tuple(cols)), None, t)
                                 for b, cols, t in benchmark_tables(out, shared)])
    c.scan([pa.array(["warm up"])], index)  # the compiled pass loads from numba's cache, once
    ready = time.perf_counter()
    found, rows = {}, 0
    with ThreadPoolExecutor(workers) as pool:
        scanned = pool.map(lambda s: c.scan_split(s[3], s[4], index, threads=1), splits)
        for (dataset, config, split, _, _), (n, per_bench) in zip(splits, scanned):
            rows += n
            for f in per_bench:
                if f.rows:
                    found[f"{dataset}|{config}|{split}|{f.bench}"] = sorted(f.rows)
    seconds = time.perf_counter() - started
    print(json.dumps({"seconds": seconds, "scan_seconds": time.perf_counter() - ready,
                      "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                      "rows": rows, "found": found}))


def _norm_value(value: object) -> str:
    import unicodedata

    if value is None:
        return ""
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, list):
        return " ".join(t for t in (_norm_value(v) for v in value) if t)
    if not isinstance(value, str):
        return ""
    return " ".join(unicodedata.normalize("NFKC", value).casefold().split())


def child_python_sets(out: Path, plan: dict, shared: Path | None) -> None:
    """The baseline: the definition with Python sets over the same files."""
    import pyarrow.parquet as pq

    started = time.perf_counter()
    splits = survey_splits(out, plan, shared)
    indexes = []
    for _, columns, table in benchmark_tables(out, shared):
        grams: set[tuple[str, ...]] = set()
        whole: set[str] = set()
        for values in zip(*(table.column(col).to_pylist() for col in columns)):
            words = " ".join(t for t in map(_norm_value, values) if t).split()
            if len(words) >= 13:
                grams.update(tuple(words[i:i + 13]) for i in range(len(words) - 12))
            elif words:
                whole.add(" ".join(words))
        indexes.append((grams, whole))
    ready = time.perf_counter()
    found, rows = {}, 0
    for dataset, config, split, files, columns in splits:
        table = pq.read_table(files, columns=columns)
        hits: list[list[int]] = [[] for _ in indexes]
        for position, values in enumerate(zip(*(table.column(col).to_pylist() for col in columns))):
            parts = [_norm_value(v) for v in values]
            text = " ".join(p for p in parts if p)
            words = text.split()
            units = {text, *parts} if len(parts) > 1 else {text}
            windows = {tuple(words[i:i + 13]) for i in range(len(words) - 12)}
            for b, (grams, whole) in enumerate(indexes):
                if units & whole or not windows.isdisjoint(grams):
                    hits[b].append(position)
        rows += table.num_rows
        for b, positions in enumerate(hits):
            if positions:
                found[f"{dataset}|{config}|{split}|{b}"] = positions
    seconds = time.perf_counter() - started
    print(json.dumps({"seconds": seconds, "scan_seconds": time.perf_counter() - ready,
                      "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                      "rows": rows, "found": found}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--datasets", type=int, default=200)
    parser.add_argument("--rows", type=int, default=25_000)
    parser.add_argument("--forks", type=int, default=10)
    parser.add_argument("--leaks", type=int, default=20)
    parser.add_argument("--out", type=Path, default=Path("/tmp/hubsurvey-bench-cross"))
    parser.add_argument("--shared", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "datasets")
    parser.add_argument("--memory-limit", default="256MB,2GB", help="DuckDB memory limits to run crossleaks under")
    parser.add_argument("--child", choices=("crossleaks", "python", "prepare", "contamination", "python-sets"),
                        help=argparse.SUPPRESS)
    parser.add_argument("--limit", help=argparse.SUPPRESS)
    parser.add_argument("--workers", type=int, help=argparse.SUPPRESS)
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
    if args.child in ("contamination", "python-sets"):
        plan = json.loads((out / "plan.json").read_text())
        if args.child == "contamination":
            child_contamination(out, plan, shared, args.workers)
        else:
            child_python_sets(out, plan, shared)
        return
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

    # the 13-gram check over the same survey, against the plain Python sets
    cores = os.cpu_count() or 1
    checks = {}
    for name, workers in ((f"engine, {cores} workers", cores), ("engine, 1 worker", 1), ("python sets", 0)):
        child = ["--child", "contamination", "--workers", str(workers)] if workers else ["--child", "python-sets"]
        proc = subprocess.run([*base, *child], check=True, capture_output=True, text=True)
        checks[name] = json.loads(proc.stdout.strip().splitlines()[-1])
    python = checks["python sets"]
    print(f"\n{'13-gram check':22}{'wall s':>8}{'scan s':>8}{'rows':>12}{'scan rows/s':>13}{'vs python':>10}"
          f"{'peak MB':>9}{'splits hit':>11}")
    for name, r in checks.items():
        print(f"{name:22}{r['seconds']:>8.1f}{r['scan_seconds']:>8.1f}{r['rows']:>12,}{r['rows'] / r['scan_seconds']:>13,.0f}"
              f"{python['scan_seconds'] / r['scan_seconds']:>9.1f}x{r['peak_rss_mb']:>9.0f}{len(r['found']):>11}")
    print("(wall: the child process end to end, reading the survey's configs and building the index included; "
          "scan: the 13-gram check of every row, which the speed-up compares; target >= 10x)")
    same = all(r["found"] == python["found"] for r in checks.values())
    print(f"contaminated rows: engine == Python sets: {same} ({sum(map(len, python['found'].values())):,} rows in "
          f"{len(python['found'])} (split, benchmark) pairs)")
    engine = checks[f"engine, {cores} workers"]
    planted_ok = all(set(rows) <= set(engine["found"].get(f"{name}|default|train|0", []))
                     for name, rows in plan["contaminated"].items())
    print(f"planted contamination found: {planted_ok} ({sum(map(len, plan['contaminated'].values())):,} rows in "
          f"{len(plan['contaminated'])} train splits)")


if __name__ == "__main__":
    main()
