"""Benchmark: the exact method's cost, against the LLE figures alone, in the same run.

    python benchmarks/bench_exact.py [--rows 1000000] [--out /tmp/hubsurvey-bench]

Two datasets: the engine benchmark's (80% / 10% / 10%, texts of about 20 words, one ClassLabel,
planted leaks and duplicates; the budget is set on it), and a copy with what only the
normalized profile sees: 1% of test rows copied
into train with their case and whitespace changed, 1% of test rows repeating another test row in
upper case, and 5% of rows with non-ASCII words (the normalization's slow path). Three audits of
it, each in its own subprocess (so each peak RSS is its own):

- ``lle``: the LLE figures alone (the baseline);
- ``exact``: every figure, both profiles, no examples;
- ``exact+examples``: every figure and the default 20 examples per kind (what ``audit`` does).

Prints wall time, peak RSS and the ratio to the baseline; the budget is 2x and 600 MB.
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
from bench_engine import generate

MODES = ("lle", "exact", "exact+examples")


def generate_variants(out: Path, rows: int) -> Path:
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    base = generate(out, rows)
    target = out / f"bench__variants-{rows}"
    if (target / "default" / "test" / "0000.parquet").exists():
        return target
    rng = np.random.default_rng(1)
    tables = {s: pq.read_table(base / "default" / s / "0000.parquet") for s in ("train", "validation", "test")}
    meta = tables["test"].schema.metadata
    test_texts = tables["test"].column("text").to_pylist()
    for split, table in tables.items():
        texts = table.column("text").to_pylist()
        n = len(texts)
        for i in rng.choice(n, n // 20, replace=False):  # 5% non-ASCII: accents and a CJK word
            texts[i] = texts[i].replace("w1", "wé1", 1) + " 数据"
        if split == "train":  # 1% of test, copied with case and whitespace changed
            for k, i in enumerate(rng.choice(n, len(test_texts) // 100, replace=False)):
                texts[i] = "  " + test_texts[-1 - k].upper().replace(" ", "\t ", 3) + " "
        if split == "test":  # 1% repeat another test row in upper case
            for i in rng.choice(n // 2, n // 100, replace=False):
                texts[n - 1 - i] = texts[i].upper()
        folder = target / "default" / split
        folder.mkdir(parents=True, exist_ok=True)
        new = table.set_column(table.schema.get_field_index("text"), "text", pa.array(texts))
        pq.write_table(new.replace_schema_metadata(meta), folder / "0000.parquet")
    return target


def child(mode: str, folder: Path) -> None:
    from hubsurvey.core.figures import EXACT_METHOD, LLE_METHOD
    from hubsurvey.survey.measure import measure_config
    from hubsurvey.survey.sources import FolderSource

    data = FolderSource(folder).load("default")
    started = time.perf_counter()
    # the near-duplicate method has its own benchmark (bench_near.py)
    methods = (LLE_METHOD,) if mode == "lle" else (LLE_METHOD, EXACT_METHOD)
    result = measure_config(data, n_configs=1, source="folder", methods=methods,
                            examples=20 if mode == "exact+examples" else 0)
    seconds = time.perf_counter() - started
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    (row,) = result.rows
    figures = {k: v for k, v in row.items() if k.startswith(("text_", "raw_", "normalized_"))}
    print(json.dumps({"seconds": seconds, "peak_rss_mb": peak_mb, "examples": len(result.examples), "figures": figures},
                     default=str))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--out", type=Path, default=Path("/tmp/hubsurvey-bench"))
    parser.add_argument("--repeat", type=int, default=5, help="runs of each mode, interleaved; the median is shown")
    parser.add_argument("--child", choices=MODES, help=argparse.SUPPRESS)
    parser.add_argument("--generate", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--folder", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.folder)
        return
    if args.generate:
        print(json.dumps([str(generate(args.out, args.rows)), str(generate_variants(args.out, args.rows))]))
        return
    # Generated in a child: a child process starts with its parent's peak RSS as its own on Linux,
    # so a parent that had held the generated tables would inflate every figure below.
    proc = subprocess.run([sys.executable, __file__, "--generate", "--rows", str(args.rows), "--out", str(args.out)],
                          check=True, capture_output=True, text=True)
    failed = False
    for folder in json.loads(proc.stdout.strip().splitlines()[-1]):
        failed |= compare(Path(folder), args.rows, args.repeat)
    if failed:
        sys.exit(1)


def compare(folder: Path, rows: int, repeat: int) -> bool:
    """Run the three modes on one dataset, ``repeat`` times interleaved (a load change hits every
    mode alike), and print the medians side by side; True if the LLE figures differ."""
    import statistics

    print(f"\ndataset: {folder.name} ({rows:,} rows), median of {repeat} interleaved runs")
    runs: dict[str, list[dict]] = {mode: [] for mode in MODES}
    for _ in range(repeat):
        for mode in MODES:
            proc = subprocess.run([sys.executable, __file__, "--child", mode, "--folder", str(folder)],
                                  check=True, capture_output=True, text=True)
            runs[mode].append(json.loads(proc.stdout.strip().splitlines()[-1]))
    results = {mode: {**rs[0], "seconds": statistics.median(r["seconds"] for r in rs),
                      "peak_rss_mb": max(r["peak_rss_mb"] for r in rs)} for mode, rs in runs.items()}
    base = results["lle"]
    print(f"{'mode':<16}{'wall s':>9}{'x LLE':>8}{'peak RSS MB':>13}{'examples':>10}   (peak: the largest of the runs)")
    for mode in MODES:
        r = results[mode]
        print(f"{mode:<16}{r['seconds']:>9.2f}{r['seconds'] / base['seconds']:>8.2f}{r['peak_rss_mb']:>13.0f}{r['examples']:>10}")
    lle_same = all(results["exact"]["figures"][k] == v for k, v in base["figures"].items())
    print(f"LLE figures identical with and without the exact method: {lle_same}")
    exact = results["exact"]["figures"]
    for stem in ("test_rows_in_train", "test_rows_repeated", "test_rows_contaminated", "contaminated_test_pct",
                 "test_rows_in_train_conflicting_label"):
        print(f"  {stem:<40} raw {exact[f'raw_{stem}']!s:>22}   normalized {exact[f'normalized_{stem}']!s:>22}")
    return not lle_same


if __name__ == "__main__":
    main()
