"""Benchmark: a first survey that measures during its crawl, against one that crawls first.

    python benchmarks/bench_crawl_beside.py [--eligible 60] [--api-per-window 20] [--page-size 50] [--rounds 2]

On a first survey the crawl is bound by the token's API quota (5.8 h of a free token for the Hub),
while the workers could already measure what it found. This runs the same survey twice on the same
sample, alternating which goes first, each on a fresh DB and cache: ``run`` as it runs by default
(the crawl, then the measurement) and ``run --measure-during-crawl`` (each page's eligible datasets
queued as the crawl writes it). The stand-in is ``bench_survey_scale.py``'s (the Hub-scale mix, its
eligible datasets served at their simulated size), listing ``--page-size`` datasets a page and
enforcing ``--api-per-window`` API calls (5,000 resolver calls) per 300-second window on a clock
``--compression`` times faster, so that the crawl of the sample is quota-bound as a first survey's
is. Local executor, ``--workers`` processes.

It prints each run's wall time, its crawl's seconds, when its first job started, the 429s, and
the time saved; then the first full survey on the Hub both ways, from bench_survey_scale's figures
(``--crawl-h`` and ``--compute-h``): crawl then measure, against measuring beside the crawl.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
import bench_survey_scale as scale


def run_once(beside: bool, args: argparse.Namespace, hub: scale.Standin, work: Path, tag: str) -> dict[str, Any]:
    from hubsurvey.core.hub import HubClient
    from hubsurvey.core.store import Store
    from hubsurvey.pipeline import RunOptions, run_steps, run_survey

    hub.ask("reset")
    db, cache = work / f"{tag}.duckdb", work / f"cache-{tag}"
    client = HubClient(endpoint=hub.url, token=False, plan="free", clock_scale=1 / args.compression, cache_dir=cache)
    steps = [s for s in run_steps() if s.name in ("crawl", "measure")]
    options = RunOptions(workers=args.workers, crossleaks=False, exposure=False, scores=False, cache_dir=cache,
                         measure_during_crawl=beside)
    started = time.time()
    summary = run_survey(db, client, None, options, steps=steps)
    wall = time.time() - started
    with Store(db) as store:
        first_job, listing_done = store.query(
            "SELECT epoch((SELECT min(started_at) FROM jobs)), epoch((SELECT max(completed_at) FROM crawl_listings))")[1][0]
        rows = store.query("SELECT count(*), sum(coalesce(rows_train, 0) + coalesce(rows_validation, 0) + coalesce(rows_test, 0)) "
                           "FROM measurements")[1][0]
    shutil.rmtree(cache, ignore_errors=True)
    quota = hub.ask("quota_log")
    return {"wall": wall, "crawl_s": summary.steps["crawl"]["seconds"], "done": summary.done, "failed": summary.failed,
            "first_job_s": first_job - started, "listing_done_s": listing_done - started, "rows": rows,
            "refused": {b: sum(r for (bucket, _), (_, r) in quota.items() if bucket == b) for b in ("api", "resolvers")},
            "listed": summary.steps["crawl"]["listed"], "api_calls": summary.steps["crawl"]["api_calls"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--eligible", type=int, default=60, help="eligible datasets in the sample")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=2, help="pairs of runs, alternating which goes first")
    parser.add_argument("--api-per-window", type=int, default=20, help="the API quota the stand-in enforces per window")
    parser.add_argument("--page-size", type=int, default=50, help="datasets a listing page")
    parser.add_argument("--compression", type=float, default=30.0, help="Hub seconds per real second")
    parser.add_argument("--crawl-h", type=float, default=5.8, help="the Hub's first crawl, free token, h (bench_survey_scale)")
    parser.add_argument("--compute-h", type=float, default=4.2,
                        help="the Hub's first measurement on 4 two-core machines, h (bench_survey_scale, local)")
    parser.add_argument("--quota-h", type=float, default=7.4,
                        help="the crawl's and the downloads' calls together at a free token's quota, h (bench_survey_scale)")
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="hubsurvey-bench-crawl-beside-"))
    listed = scale.sample_size(args.eligible)
    (work / "hub").mkdir()
    (work / "hub" / "index.json").write_text(json.dumps({"datasets": [], "hubscale": {
        "count": listed, "seed": 0, "sized_files": True, "cache_dir": str(work / "standin-cache"), "cache_gb": 12.0}}))
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}; {os.cpu_count()} cores")
    print(f"sample: the first {listed:,} listed datasets of the Hub-scale mix, {args.eligible} eligible; "
          f"{args.page_size} a page; {args.api_per_window} API calls per {scale.WINDOW_S} s window, "
          f"a window in {scale.WINDOW_S / args.compression:.0f} real s; {args.workers} local worker processes")
    hub = scale.Standin(work / "hub", (args.api_per_window, scale.PLANS["free"][1], 1 / args.compression),
                        page_size=args.page_size)
    results: dict[bool, list[dict[str, Any]]] = {False: [], True: []}
    try:
        started = time.perf_counter()
        scale.warm_up(hub, work)
        print(f"stand-in: files generated and kernels compiled in {time.perf_counter() - started:.0f} s (untimed)", flush=True)
        for k in range(args.rounds):
            for beside in (False, True) if k % 2 == 0 else (True, False):
                print(f"round {k + 1}: {'during the crawl' if beside else 'crawl first'} ... "
                      f"(load average {os.getloadavg()[0]:.2f})", flush=True)
                results[beside].append(run_once(beside, args, hub, work, f"{int(beside)}-{k}"))
    finally:
        hub.stop()
        shutil.rmtree(work, ignore_errors=True)
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")

    def med(beside: bool, key: str) -> float:
        return statistics.median(r[key] for r in results[beside])

    print(f"\n{'median of ' + str(args.rounds) + ' runs each':44}{'crawl first':>14}{'during crawl':>14}")
    for label, key, fmt in (("run wall, s", "wall", "{:.1f}"), ("crawl, s", "crawl_s", "{:.1f}"),
                            ("first job started after, s", "first_job_s", "{:.1f}"),
                            ("listing completed after, s", "listing_done_s", "{:.1f}")):
        print(f"{label:44}{fmt.format(med(False, key)):>14}{fmt.format(med(True, key)):>14}")
    for label, pick in (("configs done (failed)", lambda r: f"{r['done']} ({r['failed']})"),
                        ("rows stored, dataset rows measured", lambda r: f"{r['rows'][0]}, {r['rows'][1]:,}"),
                        ("crawl: listed, API calls", lambda r: f"{r['listed']}, {r['api_calls']}"),
                        ("429s: api, resolvers", lambda r: f"{r['refused']['api']}, {r['refused']['resolvers']}")):
        for name, beside in (("crawl first", False), ("during the crawl", True)):
            print(f"{label + ', ' + name:60}{' / '.join(pick(r) for r in results[beside])}")
    saved = med(False, "wall") - med(True, "wall")
    print(f"\nsaved by measuring during the crawl: {saved:.1f} s of {med(False, 'wall'):.1f} s ({saved / med(False, 'wall'):.0%}); "
          f"the run took {med(True, 'wall') / max(med(True, 'crawl_s'), 1e-9):.2f}x its crawl")
    sequential, beside = args.crawl_h + args.compute_h, max(args.crawl_h, args.compute_h, args.quota_h)
    print(f"the first full survey, 4 two-core machines, free token (crawl {args.crawl_h:.1f} h, measurement "
          f"{args.compute_h:.1f} h, the token's buckets for both {args.quota_h:.1f} h): crawl first {sequential:.1f} h, "
          f"during the crawl {beside:.1f} h plus the last page's jobs "
          f"(target 8 h: {'met' if beside <= 8 else 'NOT met; the quota binds'})")


if __name__ == "__main__":
    main()
