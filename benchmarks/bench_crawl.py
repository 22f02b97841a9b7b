"""Benchmark: crawl a stand-in Hub that lists 100,000 datasets.

    python benchmarks/bench_crawl.py [--filler 100000] [--baseline-limit 5000]

Prints, side by side, hubsurvey's crawl of the whole listing and a naive baseline crawler on the
first ``--baseline-limit`` datasets: the baseline lists without ``expand``, calls ``dataset_info``
for every dataset, lists the Parquet tree of every dataset and downloads every file of the
candidates to count rows (what a crawler written without the listing's metadata or ranged reads
does). Both run unpaced against the local stand-in, so the figures are request counts and the
crawler's own overhead, not Hub latency.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import pyarrow.parquet as pq


def naive(hub_url: str, limit: int, cache: Path) -> dict:
    from huggingface_hub import HfApi, hf_hub_download

    api = HfApi(endpoint=hub_url, token=False)
    started = time.perf_counter()
    listed = eligible = 0
    for item in api.list_datasets(limit=limit):
        listed += 1
        try:
            info = api.dataset_info(item.id)
        except Exception:  # disabled, missing
            continue
        if info.gated or info.private or info.disabled:
            continue
        try:
            files = [f.path for f in api.list_repo_tree(item.id, repo_type="dataset", revision="refs/convert/parquet", recursive=True) if f.path.endswith(".parquet")]
        except Exception:
            continue
        if not any("/test/" in f for f in files):
            continue
        rows = 0
        for f in files:
            try:
                rows += pq.ParquetFile(hf_hub_download(item.id, f, repo_type="dataset", revision="refs/convert/parquet", endpoint=hub_url, token=False, cache_dir=cache)).metadata.num_rows
            except Exception:
                rows = None
                break
        if rows is not None and rows < 1_000_000:
            eligible += 1
    return {"listed": listed, "eligible": eligible, "seconds": time.perf_counter() - started}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--filler", type=int, default=100_000)
    parser.add_argument("--baseline-limit", type=int, default=5000)
    args = parser.parse_args()

    from hubsurvey.core.hub import HubClient
    from hubsurvey.core.store import Store
    from hubsurvey.crawler.crawl import crawl
    from hubsurvey_standin import StandinHub, generate_minihub

    work = Path(tempfile.mkdtemp(prefix="hubsurvey-bench-crawl-"))
    root = generate_minihub(work / "hub", seed=0, filler=args.filler)
    with StandinHub(root, page_size=1000) as hub:
        client = HubClient(endpoint=hub.url, token=False, rate=0, file_rate=0)
        with Store(work / "r.duckdb") as store:
            summary = crawl(store, client, workers=4)
        ours = hub.stats()
        hub.reset_stats()
        base = naive(hub.url, args.baseline_limit, work / "cache")
        theirs = hub.stats()

    def per(n: int, d: int) -> str:
        return f"{n / d:.2f}" if d else "n/a"

    api_ours = ours["list"] + ours["info"] + ours["tree"] + ours["refs"]
    file_ours = ours["resolve_head"] + ours["resolve_get"]
    api_base = theirs["list"] + theirs["info"] + theirs["tree"] + theirs["refs"]
    file_base = theirs["resolve_head"] + theirs["resolve_get"]
    rows = [
        ("datasets listed", summary.listed, base["listed"]),
        ("eligible", summary.eligible, base["eligible"]),
        ("wall time, s", f"{summary.seconds:.1f}", f"{base['seconds']:.1f}"),
        ("datasets/s", f"{summary.listed / summary.seconds:.0f}", f"{base['listed'] / base['seconds']:.0f}"),
        ("listing requests", ours["list"], theirs["list"]),
        ("listing requests per 1,000 listed", per(ours["list"] * 1000, summary.listed), per(theirs["list"] * 1000, base["listed"])),
        ("API requests (info, tree, refs) per eligible", per(api_ours - ours["list"], summary.eligible), per(api_base - theirs["list"], base["eligible"])),
        ("file requests per eligible", per(file_ours, summary.eligible), per(file_base, base["eligible"])),
        ("requests per eligible, all kinds", per(api_ours - ours["list"] + file_ours, summary.eligible), per(api_base - theirs["list"] + file_base, base["eligible"])),
    ]
    print(f"{'':48}{'hubsurvey':>14}{'naive':>14}")
    for name, a, b in rows:
        print(f"{name:48}{a!s:>14}{b!s:>14}")
    print(f"(hubsurvey over all {summary.listed:,} listed; naive over the first {base['listed']:,}; excluded: {dict(summary.excluded)})")


if __name__ == "__main__":
    main()
