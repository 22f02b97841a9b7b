"""Benchmark: hubsurvey's near-duplicate measurement end to end, against datasketch, in the same run.

    python benchmarks/bench_near.py [--rows 1000000] [--out /tmp/hubsurvey-bench] [--timeout 900]

The dataset is ``near_data.generate_near``'s: the engine benchmark's 1M rows (800k / 100k / 100k)
with 4,000 near-duplicate pairs planted at known positions (truth.json, each with its exact
Jaccard). Each side runs in its own subprocess (its own peak RSS):

- ``hubsurvey``: ``measure_config`` with the near method alone, end to end: read, normalize,
  shingles, one-permutation MinHash, LSH bands, sketch filter, exact verification, the figures;
- ``datasketch``: datasketch MinHash + MinHashLSH on the same shingles, every candidate verified
  (``bench_near_candidates.py``'s runner, the reference library for MinHash-LSH).

Prints wall time, rows/s, peak RSS and the recall on the planted pairs at J >= 0.8 and >= 0.6
(precision is 1 by construction: every reported pair is verified). The targets: >= 50,000
rows/s, peak RSS <= 1.5 GB, recall >= 0.95.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from near_data import generate_near


def child(folder: Path) -> None:
    from hubsurvey.core.figures import NEAR_METHOD
    from hubsurvey.survey import near
    from hubsurvey.survey.measure import measure_config
    from hubsurvey.survey.normalize import normalize_text
    from hubsurvey.survey.sources import FolderSource

    truth = json.loads((folder / "truth.json").read_text())
    found: dict[str, object] = {}
    original = near.find_pairs

    def capture(texts, query, params, **kwargs):  # the engine's verified pairs, for the recall
        result = original(texts, query, params, **kwargs)
        found["pairs"] = {(texts[a], texts[b]) for a, b in result.pairs.tolist()}
        return result

    near.find_pairs = capture
    data = FolderSource(folder).load("default")
    started = time.perf_counter()
    result = measure_config(data, n_configs=1, source="folder", methods=[NEAR_METHOD], examples=0)
    seconds = time.perf_counter() - started
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    import pyarrow.parquet as pq

    texts = {s: pq.read_table(folder / "default" / s / "0000.parquet", columns=["text"]).column(0) for s in ("train", "validation", "test")}
    pairs = found["pairs"]
    recall = {}
    for tau in (0.8, 0.6):
        want = [p for p in truth["pairs"] if p["j"] >= tau]
        got = 0
        for p in want:
            a = normalize_text(texts[p["a_split"]][p["a"]].as_py())
            b = normalize_text(texts[p["b_split"]][p["b"]].as_py())
            got += a == b or (a, b) in pairs or (b, a) in pairs
        recall[str(tau)] = [got, len(want)]
    (row,) = result.rows
    print(json.dumps({"seconds": seconds, "peak_rss_mb": peak_mb, "rows": sum(s.num_rows for s in data.splits.values()),
                      "near": json.loads(row["near"]), "recall": recall,
                      "figures": {k: row[k] for k in ("test_rows_near_train", "test_rows_near_repeated",
                                                      "validation_rows_near_train", "near_contaminated_test_pct",
                                                      "test_rows_near_train_conflicting_label")}}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--out", type=Path, default=Path("/tmp/hubsurvey-bench"))
    parser.add_argument("--timeout", type=float, default=900)
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--generate", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child)
        return
    if args.generate:
        print(generate_near(args.out, args.rows)[0])
        return
    # Generated in a child: a child process starts with its parent's peak RSS as its own on Linux,
    # so a parent that had held the generated tables would inflate both peaks below.
    made = subprocess.run([sys.executable, __file__, "--generate", "--rows", str(args.rows), "--out", str(args.out)],
                          check=True, capture_output=True, text=True)
    folder = Path(made.stdout.strip().splitlines()[-1])
    truth = json.loads((folder / "truth.json").read_text())
    print(f"dataset: {folder} ({args.rows:,} rows, {len(truth['pairs'])} planted pairs)")
    runs = {
        "hubsurvey": [sys.executable, __file__, "--child", str(folder)],
        "datasketch": [sys.executable, str(Path(__file__).parent / "bench_near_candidates.py"), "--child", "datasketch",
                       "--folder", str(folder)],
    }
    results = {}
    for name, cmd in runs.items():
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
        except subprocess.TimeoutExpired:
            print(f"{name}: timeout after {args.timeout:.0f} s")
            continue
        if proc.returncode:
            print(f"{name}: failed: {proc.stderr.strip()[-1500:]}")
            continue
        results[name] = json.loads(proc.stdout.strip().splitlines()[-1])
    print(f"\n{'':12}{'wall s':>8}{'rows/s':>10}{'peak MB':>9}{'recall@0.8':>16}{'recall@0.6':>16}")
    for name, r in results.items():
        rec = {t: f"{g}/{w} {g / w if w else 1:.3f}" for t, (g, w) in r["recall"].items()}
        print(f"{name:12}{r['seconds']:>8.1f}{r['rows'] / r['seconds']:>10,.0f}{r['peak_rss_mb']:>9.0f}{rec['0.8']:>16}{rec['0.6']:>16}")
    if "hubsurvey" in results:
        print("hubsurvey near:", json.dumps(results["hubsurvey"]["near"]))
        print("hubsurvey figures:", json.dumps(results["hubsurvey"]["figures"]))
    if "hubsurvey" in results and "datasketch" in results:
        print(f"speed-up: {results['datasketch']['seconds'] / results['hubsurvey']['seconds']:.1f}x")


if __name__ == "__main__":
    main()
