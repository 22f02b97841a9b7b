"""Benchmark: a config's measurement time with and without the per-column figures, in the same run.

    python benchmarks/bench_per_column.py [--rows 1000000] [--out /tmp/hubsurvey-bench] [--repeat 3]

Two datasets, each measured by LLE and the exact method (the near-duplicate method has its own
benchmark and does not depend on the per-column figures), once with ``Engine.per_column`` off (the
baseline: what a config cost before) and once with it on:

- the largest shared config with several text columns: PierreColombo/miam ``maptask`` (35,938 rows,
  three text columns: Speaker, Utterance, Dialogue_Act), from ../shared/datasets;
- the 1M-row data of ``benchmarks/near_data.py`` (80% / 10% / 10%, texts of about 20 words, one
  ClassLabel, planted near-duplicates) with a second text column, ``context``: one of rows / 4
  passages of 40 words, picked at random for each row of every split, so that passages are shared
  across splits as a QA dataset's are (the text column stays as it is).

Each measurement runs in its own subprocess (its peak RSS is its own), the two sides interleaved
``--repeat`` times (a change of load hits both alike); the medians are printed side by side with the
load average of each run, and the per-column figures found. The LLE and exact figures must be
identical with and without: the script exits 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from near_data import SPLITS, generate_near

SIDES = ("without", "with")
SHARED = Path(__file__).resolve().parents[2] / "shared" / "datasets"


def with_contexts(out: Path, rows: int) -> Path:
    """near_data's dataset with a ``context`` column of shared passages (cached on disk)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    base, _ = generate_near(out, rows)
    target = out / f"bench__contexts-{rows}"
    if (target / "default" / "test" / "0000.parquet").exists():
        return target
    rng = np.random.default_rng(7)
    words = np.array([f"p{i}" for i in range(5000)])
    passages = [" ".join(words[rng.integers(0, len(words), 40)]) for _ in range(max(1, rows // 4))]
    for split in SPLITS:
        table = pq.read_table(base / "default" / split / "0000.parquet")
        picked = rng.integers(0, len(passages), table.num_rows)
        context = pa.array([passages[i] for i in picked])
        folder = target / "default" / split
        folder.mkdir(parents=True, exist_ok=True)
        # the features metadata names the columns: a string column is added to it
        meta = dict(table.schema.metadata or {})
        info = json.loads(meta[b"huggingface"])
        info["info"]["features"]["context"] = {"dtype": "string", "_type": "Value"}
        table = table.append_column("context", context).replace_schema_metadata(
            {**meta, b"huggingface": json.dumps(info).encode()})
        pq.write_table(table, folder / "0000.parquet")
    return target


def child(side: str, folder: Path, config: str) -> None:
    from hubsurvey.core.figures import EXACT_METHOD, LLE_METHOD
    from hubsurvey.survey.measure import measure_config
    from hubsurvey.survey.metrics import Engine
    from hubsurvey.survey.sources import FolderSource

    Engine.per_column = side == "with"
    data = FolderSource(folder).load(config)
    started = time.perf_counter()
    result = measure_config(data, n_configs=1, source="folder", methods=(LLE_METHOD, EXACT_METHOD), examples=0)
    seconds = time.perf_counter() - started
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    row = result.rows[0]
    figures = {k: v for k, v in row.items() if k.startswith(("text_", "raw_", "normalized_"))}
    print(json.dumps({"seconds": seconds, "peak_rss_mb": peak_mb, "load": os.getloadavg()[:2], "figures": figures,
                      "text_columns": row["text_columns"], "per_column": row.get("per_column")}, default=str))


def compare(name: str, folder: Path, config: str, repeat: int) -> bool:
    """Both sides ``repeat`` times interleaved; print the medians side by side. True if a figure differs."""
    runs: dict[str, list[dict]] = {side: [] for side in SIDES}
    for _ in range(repeat):
        for side in SIDES:
            proc = subprocess.run([sys.executable, __file__, "--child", side, "--folder", str(folder), "--config", config],
                                  check=True, capture_output=True, text=True)
            runs[side].append(json.loads(proc.stdout.strip().splitlines()[-1]))
    first = runs["with"][0]
    print(f"\n{name} [{config}]: text columns {', '.join(first['text_columns'])}; median of {repeat} interleaved runs")
    print(f"{'per-column figures':<20}{'wall s':>9}{'x without':>11}{'peak RSS MB':>13}   load (1 min-5 min) of each run")
    base = statistics.median(r["seconds"] for r in runs["without"])
    for side in SIDES:
        rs = runs[side]
        seconds = statistics.median(r["seconds"] for r in rs)
        loads = " ".join(f"{r['load'][0]:.1f}-{r['load'][1]:.1f}" for r in rs)
        print(f"{side:<20}{seconds:>9.2f}{seconds / base:>11.2f}{max(r['peak_rss_mb'] for r in rs):>13.0f}   {loads}")
    same = all(r["figures"] == runs["without"][0]["figures"] for side in SIDES for r in runs[side])
    print(f"LLE and exact figures identical with and without: {same}")
    for column, by_profile in (first["per_column"] or {}).items():
        raw, norm = by_profile["raw"], by_profile["normalized"]
        print(f"  {column:<14} test rows in train raw {raw['test_rows_in_train']!s:>8} normalized "
              f"{norm['test_rows_in_train']!s:>8}; column in train, text not raw "
              f"{raw['test_rows_column_in_train_only']!s:>8} normalized {norm['test_rows_column_in_train_only']!s:>8}")
    return not same


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--out", type=Path, default=Path("/tmp/hubsurvey-bench"))
    parser.add_argument("--repeat", type=int, default=3, help="runs of each side, interleaved; the median is shown")
    parser.add_argument("--child", choices=SIDES, help=argparse.SUPPRESS)
    parser.add_argument("--folder", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--config", default="default", help=argparse.SUPPRESS)
    parser.add_argument("--generate", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.folder, args.config)
        return
    if args.generate:
        print(str(with_contexts(args.out, args.rows)))
        return
    # Generated in a child, so that no measuring process starts with the generator's peak RSS.
    proc = subprocess.run([sys.executable, __file__, "--generate", "--rows", str(args.rows), "--out", str(args.out)],
                          check=True, capture_output=True, text=True)
    print(f"load average at the start: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    failed = False
    maptask = SHARED / "PierreColombo__miam"
    if maptask.exists():
        failed |= compare("PierreColombo/miam", maptask, "maptask", args.repeat)
    else:
        print(f"\n{maptask} is absent: the shared config is skipped")
    failed |= compare(f"near_data + context ({args.rows:,} rows)", Path(proc.stdout.strip().splitlines()[-1]),
                      "default", args.repeat)
    if failed:
        sys.exit(1)


if __name__ == "__main__":
    main()
