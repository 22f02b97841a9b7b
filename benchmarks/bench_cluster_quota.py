"""One quota per token across a cluster: 429s and window use, shared limits beside each worker alone.

The stand-in enforces a resolver quota (default 6 file requests per 1500-second window on a clock 100
times faster: a window in 15 real seconds) while tiny datasets are crawled, then surveyed, in one run,
four ways:

- ``dask shared``: K Dask worker processes drawing on one ``LimitsService`` (the new path);
- ``dask alone``: the same cluster, each worker pacing alone (the old path: K times the quota);
- ``local``: the local executor, whose coordinator downloads for its workers;
- ``crawl``: a crawl alone under an API quota (default 3 calls per 100-second window).

For each it prints the requests served and refused per window, the 429s after the first window
(target 0), and the least-used full window of the downloads (target at least 90%).

    python benchmarks/bench_cluster_quota.py [--workers 3] [--datasets 12] [--resolvers 6] [--window 1500] [--api 3]
"""

from __future__ import annotations

import argparse
import logging
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from hubsurvey.core.hub import HubClient
from hubsurvey.core.store import Store
from hubsurvey.crawler.crawl import crawl
from hubsurvey.pipeline import RunOptions, run_survey
from hubsurvey.survey.executors.dask import DaskExecutor
from hubsurvey_standin import Quota, StandinHub, generate_minihub
from hubsurvey_standin.catalog import write_tiny_hub


def windows(quota: Quota, bucket: str) -> list[tuple[int, int, int]]:
    return sorted((index, served, refused) for (b, index), (served, refused) in quota.log.items() if b == bucket)


def report(name: str, quota: Quota, bucket: str, per_window: int, after: int, seconds: float) -> None:
    """429s after the first window, and the least-used full window of the part after window ``after``."""
    log = windows(quota, bucket)
    served = {index: s for index, s, _ in log}
    refused_after_first = sum(r for index, _, r in log if index > 0)
    ours = [index for index in served if index > after]
    full = [served.get(index, 0) for index in range(min(ours) + 1, max(ours))] if ours else []
    least = f"{min(full) / per_window:6.1%}" if full else "   n/a"
    print(f"{name:12} {bucket:9} windows {len(log):3}  429s: first window {sum(r for i, _, r in log if i == 0):3}, "
          f"after it {refused_after_first:3} (target 0)  least-used full window {least} (target >= 90%)  {seconds:6.1f} s")
    print(f"{'':12} per window (served, refused): {[(s, r) for _, s, r in log]}")


def survey(hubroot: Path, tmp: Path, name: str, resolvers: int, window: int, options: RunOptions) -> None:
    """A crawl, then the survey's downloads, under one resolver quota."""
    quota = Quota(api=0, resolvers=resolvers, window=window, clock_scale=0.01)
    with StandinHub(hubroot, quota=quota) as hub:
        client = HubClient(endpoint=hub.url, token=False, cache_dir=tmp / name / "cache", clock_scale=0.01,
                           max_wait=0.05, deadline=30)
        with Store(tmp / name / "r.duckdb") as store:
            crawl(store, client)
        crawled = max(index for (_, index) in quota.log)
        started = time.monotonic()
        summary = run_survey(tmp / name / "r.duckdb", client, None, replace(options, crawl=False))
        seconds = time.monotonic() - started
    if summary.failed:
        print(f"{name}: {summary.failed} job(s) failed")
    report(name, quota, "resolvers", resolvers, crawled, seconds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument("--datasets", type=int, default=12, help="tiny datasets of three files each")
    parser.add_argument("--resolvers", type=int, default=6, help="file requests per window")
    parser.add_argument("--window", type=int, default=1500, help="the window in Hub seconds (a hundredth of it real)")
    parser.add_argument("--api", type=int, default=3, help="API calls per window, for the crawl")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    import distributed

    tmp = Path(tempfile.mkdtemp(prefix="bench-cluster-quota-"))
    hubroot = write_tiny_hub(tmp / "hub", args.datasets)
    print(f"{args.datasets * 3} downloads under {args.resolvers} file requests per {args.window / 100:g} s window; "
          f"{args.workers} Dask worker processes of 2 threads")
    with distributed.LocalCluster(n_workers=args.workers, threads_per_worker=2, processes=True,
                                  dashboard_address=None) as cluster:
        common = RunOptions(executor="dask", executor_options={"dask": cluster.scheduler_address}, crossleaks=False,
                            exposure=False, near=False)
        survey(hubroot, tmp, "dask shared", args.resolvers, args.window, common)
        DaskExecutor.share_limits = False
        try:
            survey(hubroot, tmp, "dask alone", args.resolvers, args.window, common)
        finally:
            DaskExecutor.share_limits = True
    survey(hubroot, tmp, "local", args.resolvers, args.window,
           RunOptions(workers=2, crossleaks=False, exposure=False, near=False))
    quota = Quota(api=args.api, resolvers=0, window=100, clock_scale=0.01)
    with StandinHub(generate_minihub(tmp / "minihub", seed=0), quota=quota, page_size=2) as hub, \
            Store(tmp / "crawl.duckdb") as store:
        client = HubClient(endpoint=hub.url, token=False, cache_dir=tmp / "crawl-cache", clock_scale=0.01,
                           max_wait=0.05, deadline=30)
        started = time.monotonic()
        crawl(store, client)
        report("crawl", quota, "api", args.api, 0, time.monotonic() - started)


if __name__ == "__main__":
    main()
