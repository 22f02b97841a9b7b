"""One quota per token across a cluster: 429s and window use, shared limits beside each worker alone.

The stand-in enforces a resolver quota (default 6 file requests per 300-second window on a clock 100
times faster: a window in 3 real seconds) while the mini-hub is surveyed, in one run, four ways:

- ``dask shared``: K Dask worker processes drawing on one ``LimitsService`` (the new path);
- ``dask alone``: the same cluster, each worker pacing alone (the old path: K times the quota);
- ``local``: the local executor, whose coordinator downloads for its workers;
- ``crawl``: a crawl alone under an API quota (default 3 calls per 100-second window).

For each it prints the requests served and refused per window, the 429s after the first window
(target 0), and the least-used full window (target at least 90%).

    python benchmarks/bench_cluster_quota.py [--workers 3] [--resolvers 6] [--api 3]
"""

from __future__ import annotations

import argparse
import logging
import tempfile
import time
from pathlib import Path

from hubsurvey.core.hub import HubClient
from hubsurvey.core.store import Store
from hubsurvey.crawler.crawl import crawl
from hubsurvey.pipeline import RunOptions, run_survey
from hubsurvey.survey.executors.dask import DaskExecutor
from hubsurvey_standin import Quota, StandinHub, generate_minihub


def windows(quota: Quota, bucket: str) -> list[tuple[int, int, int]]:
    return sorted((index, served, refused) for (b, index), (served, refused) in quota.log.items() if b == bucket)


def verdict(name: str, quota: Quota, bucket: str, per_window: int, seconds: float) -> None:
    log = windows(quota, bucket)
    after_first = sum(refused for index, _, refused in log if index > 0)
    full = [served for index, served, _ in log[1:-1]]
    least = min(full) / per_window if full else float("nan")
    print(f"{name:12} {bucket:9} windows {len(log):3}  429s in the first window {sum(r for i, _, r in log if i == 0):3}  "
          f"after it {after_first:3} (target 0)  least-used full window {least:6.1%} (target >= 90%)  {seconds:6.1f} s")
    print(f"{'':12} per window (served, refused): {[(s, r) for _, s, r in log]}")


def survey(hubroot: Path, tmp: Path, name: str, resolvers: int, options: RunOptions) -> None:
    quota = Quota(api=0, resolvers=resolvers, window=300, clock_scale=0.01)
    with StandinHub(hubroot, quota=quota) as hub:
        client = HubClient(endpoint=hub.url, token=False, cache_dir=tmp / name / "cache", clock_scale=0.01,
                           max_wait=0.05, deadline=30)
        started = time.monotonic()
        summary = run_survey(tmp / name / "r.duckdb", client, None, options)
        seconds = time.monotonic() - started
    assert summary.failed == 0, summary
    verdict(name, quota, "resolvers", resolvers, seconds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument("--resolvers", type=int, default=6, help="file requests per window")
    parser.add_argument("--api", type=int, default=3, help="API calls per window, for the crawl")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    import distributed

    tmp = Path(tempfile.mkdtemp(prefix="bench-cluster-quota-"))
    hubroot = generate_minihub(tmp / "hub", seed=0)
    print(f"mini-hub survey under {args.resolvers} file requests per window; {args.workers} Dask worker processes")
    with distributed.LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster:
        common = {"executor": "dask", "executor_options": {"dask": cluster.scheduler_address}, "crossleaks": False, "exposure": False}
        survey(hubroot, tmp, "dask shared", args.resolvers, RunOptions(**common))
        DaskExecutor.share_limits = False
        try:
            survey(hubroot, tmp, "dask alone", args.resolvers, RunOptions(**common))
        except AssertionError as e:
            print(f"dask alone: jobs failed ({e})")
        finally:
            DaskExecutor.share_limits = True
    survey(hubroot, tmp, "local", args.resolvers, RunOptions(workers=2, crossleaks=False, exposure=False))
    quota = Quota(api=args.api, resolvers=0, window=100, clock_scale=0.01)
    with StandinHub(hubroot, quota=quota, page_size=2) as hub, Store(tmp / "crawl.duckdb") as store:
        client = HubClient(endpoint=hub.url, token=False, cache_dir=tmp / "crawl-cache", clock_scale=0.01,
                           max_wait=0.05, deadline=30)
        started = time.monotonic()
        crawl(store, client)
        verdict("crawl", quota, "api", args.api, time.monotonic() - started)


if __name__ == "__main__":
    main()
