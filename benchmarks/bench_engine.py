"""Benchmark: the DuckDB engine against the survey's naive method, on one generated 1M-row dataset.

    python benchmarks/bench_engine.py [--rows 1000000] [--out /tmp/hubsurvey-bench]

Generates splits of 80% / 10% / 10% (800k / 100k / 100k by default), texts of about 20 words and
one ClassLabel, with planted leaks and duplicates. Each method runs in its own subprocess, so each
one's peak RSS is its own; both must produce identical figures. Prints a side-by-side table.
The naive method is the survey's: ``datasets`` ``.map`` building ``str`` keys, then Python sets.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

from hubsurvey.core.figures import LLE_METHOD, figure_names

FIGURES = figure_names(LLE_METHOD)  # the naive method computes the LLE figures

def generate(out: Path, rows: int, seed: int = 0) -> Path:
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    root = out / f"bench__synthetic-{rows}" / "default"
    if (root / "test" / "0000.parquet").exists():
        return root.parent
    rng = np.random.default_rng(seed)
    vocab = np.array([f"w{i}" for i in range(20000)])
    sizes = {"train": rows * 8 // 10, "validation": rows // 10, "test": rows - rows * 8 // 10 - rows // 10}
    features = {"text": {"dtype": "string", "_type": "Value"}, "label": {"names": [f"c{i}" for i in range(5)], "_type": "ClassLabel"}}
    meta = {b"huggingface": json.dumps({"info": {"features": features}}).encode()}
    made = {}
    for split, n in sizes.items():
        lengths = rng.integers(15, 26, n)
        words = vocab[rng.integers(0, len(vocab), int(lengths.sum()))]
        texts = [" ".join(chunk) for chunk in np.split(words, np.cumsum(lengths)[:-1])]
        labels = rng.integers(0, 5, n)
        # Planted duplicates (1% of rows repeat an earlier row) and leaks (1% of test in train/val).
        dup = rng.choice(n, n // 100, replace=False)
        for i in dup:
            j = int(rng.integers(0, n))
            texts[i], labels[i] = texts[j], labels[j] if rng.random() < 0.8 else (labels[j] + 1) % 5
        made[split] = (texts, labels)
    test_texts, test_labels = made["test"]
    for split in ("train", "validation"):
        texts, labels = made[split]
        for k, i in enumerate(rng.choice(len(texts), len(test_texts) // 100, replace=False)):
            texts[i] = test_texts[k]
            labels[i] = test_labels[k] if k % 3 else (test_labels[k] + 1) % 5
    for split, (texts, labels) in made.items():
        folder = root / split
        folder.mkdir(parents=True, exist_ok=True)
        table = pa.table({"text": texts, "label": pa.array(labels, pa.int64())}).replace_schema_metadata(meta)
        pq.write_table(table, folder / "0000.parquet")
    return root.parent


def run_engine(folder: Path) -> dict:
    from hubsurvey.survey.measure import measure_config
    from hubsurvey.survey.sources import FolderSource

    source = FolderSource(folder)
    (row,) = measure_config(source.load("default"), n_configs=1, source="folder", methods=(LLE_METHOD,), examples=0).rows
    return {k: row[k] for k in FIGURES}


def run_naive(folder: Path) -> dict:
    """The survey's way: datasets + .map(str) + Python sets (no DuckDB)."""
    import tempfile

    import datasets

    datasets.disable_progress_bars()
    files = {s: str(folder / "default" / s / "0000.parquet") for s in ("train", "validation", "test")}
    # A fresh cache every run: a warm datasets cache would replay an earlier run's .map results.
    cache = tempfile.mkdtemp(prefix="hubsurvey-naive-")
    dd = datasets.load_dataset("parquet", data_files=files, cache_dir=cache)

    def keys(example):
        return {"k_text": str(example["text"]), "k_label": str(example["text"]) + str(example["label"])}

    mapped = {s: dd[s].map(keys) for s in dd}
    out = {}
    for prefix, col in (("text", "k_text"), ("text_and_label", "k_label")):
        lists = {s: mapped[s][col] for s in mapped}
        sets = {s: set(v) for s, v in lists.items()}
        out[f"{prefix}_leaks_train_wrt_test"] = len(sets["train"] & sets["test"])
        out[f"{prefix}_leaks_validation_wrt_test"] = len(sets["validation"] & sets["test"])
        for s in ("train", "validation", "test"):
            out[f"{prefix}_duplication_{s}"] = len(lists[s]) - len(sets[s])
        out[f"{prefix}_test_biased"] = (out[f"{prefix}_leaks_train_wrt_test"] + out[f"{prefix}_duplication_test"]) / len(lists["test"]) * 100
    import shutil

    shutil.rmtree(cache, ignore_errors=True)
    out["difference_annotation"] = float(abs(
        (out["text_leaks_train_wrt_test"] - out["text_and_label_leaks_train_wrt_test"])
        + (out["text_leaks_validation_wrt_test"] - out["text_and_label_leaks_validation_wrt_test"])
    ))
    return out


def child(method: str, folder: Path) -> None:
    started = time.perf_counter()
    figures = run_engine(folder) if method == "engine" else run_naive(folder)
    seconds = time.perf_counter() - started
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"seconds": seconds, "peak_rss_mb": peak_mb, "figures": figures}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--out", type=Path, default=Path("/tmp/hubsurvey-bench"))
    parser.add_argument("--child", choices=["engine", "naive"], help=argparse.SUPPRESS)
    parser.add_argument("--folder", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.folder)
        return
    started = time.perf_counter()
    folder = generate(args.out, args.rows)
    print(f"dataset: {folder} ({args.rows:,} rows; generated/reused in {time.perf_counter() - started:.1f} s)")
    results = {}
    for method in ("engine", "naive"):
        proc = subprocess.run(
            [sys.executable, __file__, "--child", method, "--folder", str(folder)],
            check=True, capture_output=True, text=True,
        )
        results[method] = json.loads(proc.stdout.strip().splitlines()[-1])
    e, n = results["engine"], results["naive"]
    same = e["figures"] == n["figures"]
    print(f"{'method':<8}{'wall s':>10}{'peak RSS MB':>14}")
    for name in ("engine", "naive"):
        print(f"{name:<8}{results[name]['seconds']:>10.2f}{results[name]['peak_rss_mb']:>14.0f}")
    print(f"speed-up (naive / engine): {n['seconds'] / e['seconds']:.1f}x   identical figures: {same}")
    print("figures:", json.dumps(e["figures"]))
    if not same:
        print("naive figures:", json.dumps(n["figures"]))
        sys.exit(1)


if __name__ == "__main__":
    main()
