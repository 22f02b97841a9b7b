"""Benchmark: a Hub-wide crawl, simulated. Calls per listed dataset, and what they cost in quota.

    python benchmarks/bench_hubscale.py [--n 100000] [--baseline-n 20000] [--hub 1500000]

The stand-in (``hubsurvey_standin.hubscale``, in a process of its own) lists ``--n`` listing-only
datasets, each generated from its index; only the datasets a crawl resolves get (a few cached)
Parquet files. The crawl runs unpaced (``rate=0``, ``file_rate=0``) end to end through HTTP, and the request
counts it makes are measured; the wall time at the Hub's quotas is projected from them, linearly to
``--hub`` datasets. Beside it, in the same run, the baseline: the crawler as it was before the
listing decided from cards (git revision ``BASELINE_REVISION``: two API calls, the branch's commit
and its tree, for every dataset the tags do not exclude), over the first ``--baseline-n`` datasets.
Then one incremental night: 1% of the datasets change (new sha, new ``lastModified``) and
``crawl(since_last=True)`` lists newest first down to the previous listing's high-water mark.

The metadata mix (shares of listed datasets) and why:

- 2% gated, 0.05% disabled. Gating is for licensed or personal data and big releases: a small
  minority; private datasets are not listed to an anonymous or other user's listing at all.
- Cards: 20% no YAML card (``cardData`` is present only when the README has YAML; web uploads and
  ``upload_folder`` of raw files often have none); 8% a YAML card that names no splits (license,
  tags); 27% a card whose ``configs[].data_files`` name the splits but carries no ``dataset_info``
  (hand-written cards, robot-episode cards); 45% ``dataset_info`` with split sizes and features:
  ``datasets.push_to_hub`` writes it on every push, and most uploads from Python go through it.
- Splits: 80% train only (a pushed DataFrame, synthetic and preference sets, robot episodes,
  scraped corpora), 8% train+test, 4% train+validation+test (benchmarks and academic sets), 8%
  other names (evaluation logs split by timestamp, "latest").
- Rows: 35% under 1K, 25% 1K-10K, 20% 10K-100K, 13% 100K-1M, 7% 1M or more (most Hub datasets
  are small; the ``size_categories`` buckets of hub_api.md).
- Modality: 50% text, 10% text with images or tables, 15% image, 12% tabular, 5% audio, 8% time
  series/video. ``modality:*`` tags on 85% (the Hub derives ``modality``/``format`` tags for the
  datasets its viewer reads, as in hub_api.md's captured item); ``size_categories`` tags on 35%.
- 92% have a Parquet export (the viewer converts most datasets; scripts and odd formats fail).

Cards tell the truth in the simulation: the eligible count is checked against the mix's truth.
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing as mp
import os
import resource
import subprocess
import sys
import tempfile
import time
import types
from pathlib import Path
from typing import Any

BASELINE_REVISION = "2ade42b"  # the crawler before the listing decided from cards
QUOTAS = {  # API and resolver calls per 5-minute window (hub_api.md, "Rate limits")
    "anonymous": (500, 3_000),
    "free": (1_000, 5_000),
    "PRO": (2_500, 12_000),
}
WINDOW_S = 300


def serve(root: str, page_size: int, conn: Any, quota: tuple[int, int, float] | None = None) -> None:
    """The stand-in, in its own process (its own core and GIL): answers control messages.

    ``quota``: (API, resolver calls per window, real seconds per Hub second): the stand-in then
    enforces the Hub's fixed windows on that compressed clock (``hubsurvey_standin.Quota``)."""
    from hubsurvey_standin import Quota, StandinHub

    enforced = Quota(api=quota[0], resolvers=quota[1], window=WINDOW_S, clock_scale=quota[2]) if quota else None
    with StandinHub(Path(root), page_size=page_size, quota=enforced) as hub:
        conn.send(hub.url)
        while True:
            message = conn.recv()
            if message == "stats":
                conn.send(hub.stats())
            elif message == "quota_log":
                conn.send(dict(enforced.log) if enforced else {})
            elif message == "reset":
                hub.reset_stats()
                conn.send(True)
            elif message == "advance":
                changed = hub.catalog.filler.advance()
                hub.catalog.touched()
                conn.send(changed)
            else:
                conn.send(True)
                return


class Standin:
    def __init__(self, root: Path, page_size: int, quota: tuple[int, int, float] | None = None):
        self._conn, child = mp.Pipe()
        self._process = mp.get_context("spawn").Process(target=serve, args=(str(root), page_size, child, quota),
                                                        daemon=True)
        self._process.start()
        self.url = self._conn.recv()

    def ask(self, message: str) -> Any:
        self._conn.send(message)
        return self._conn.recv()

    def stop(self) -> None:
        self.ask("stop")
        self._process.join(10)


def baseline_crawl() -> Any:
    """The crawl function of ``BASELINE_REVISION``, with that revision's rules, run on today's client."""
    def source(path: str) -> str:
        return subprocess.run(["git", "show", f"{BASELINE_REVISION}:{path}"], capture_output=True, text=True, check=True,
                              cwd=Path(__file__).resolve().parents[1]).stdout

    old_rules = sys.modules["baseline_rules"] = types.ModuleType("baseline_rules")  # dataclasses look their module up
    exec(compile(source("crawler/rules.py"), "baseline_rules", "exec"), old_rules.__dict__)
    code = source("crawler/crawl.py").replace("from hubsurvey.crawler import rules\n", "import baseline_rules as rules\n")
    code = code.replace("from hubsurvey.crawler.rules import CrawlFilters\n", "from baseline_rules import CrawlFilters\n")
    old = sys.modules["baseline_crawl"] = types.ModuleType("baseline_crawl")
    exec(compile(code, "baseline_crawl", "exec"), old.__dict__)
    return old


def truth(n: int) -> dict[str, int]:
    """What the mix says the crawl must find, from the stand-in's own generator."""
    from hubsurvey_standin.hubscale import HubScale, _split_rows

    scale = HubScale(n)
    eligible = 0
    for i in range(n):
        t = scale.traits(i)
        rows = sum(_split_rows(t).values())
        if (not t["gated"] and not t["disabled"] and t["export"] and "test" in t["splits"] and t["kind"] == "text"
                and rows < 1_000_000):
            eligible += 1
    return {"eligible": eligible}


def hours(api: float, resolvers: float, quota: tuple[int, int]) -> float:
    """Wall hours to spend these calls at a quota, the two buckets drawn in parallel."""
    return max(api / quota[0], resolvers / quota[1]) * WINDOW_S / 3600


def compression_for(api_rate: float, resolver_rate: float, quota: tuple[int, int], headroom: float) -> float:
    """Hub seconds per real second at which the crawl stays bound by the quota, not by this machine:
    unpaced, it spends the binding bucket's quota in 1/``headroom`` of a window's real time. At most
    100 (a 300-second window in 3 real seconds)."""
    needed = max(quota[0] / max(api_rate, 1e-9), quota[1] / max(resolver_rate, 1e-9))
    return min(100.0, WINDOW_S / (headroom * needed))


def windows_served(log: dict[tuple[str, int], list[int]], quota: tuple[int, int]) -> dict[str, Any]:
    """Per bucket, from the stand-in's quota log: calls served per full window after the first (the
    first is learnt, the last is cut short by the end of the crawl) as shares of the quota, and
    the 429s in the first window and after it."""
    last = max((index for _, index in log), default=0)
    figures: dict[str, Any] = {"windows": last + 1}
    for bucket, limit in zip(("api", "resolvers"), quota):
        full = [log.get((bucket, index), [0, 0])[0] / limit for index in range(1, last)]
        figures[bucket] = {
            "served": [log.get((bucket, index), [0, 0])[0] for index in range(last + 1)],
            "mean": sum(full) / len(full) if full else math.nan,
            "min": min(full) if full else math.nan,
            "refused_first": log.get((bucket, 0), [0, 0])[1],
            "refused_after": sum(refused for (b, index), (_, refused) in log.items() if b == bucket and index > 0),
        }
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=100_000, help="datasets listed by the stand-in (end to end)")
    parser.add_argument("--baseline-n", type=int, default=20_000, help="datasets crawled by the baseline")
    parser.add_argument("--hub", type=int, default=1_500_000, help="datasets on the Hub (the projection's scale)")
    parser.add_argument("--page-size", type=int, default=1000)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--paced-n", type=int, default=50_000,
                        help="datasets listed for the quota-enforced run (free quota, compressed clock); 0: skip it")
    parser.add_argument("--compression", type=float, default=None,
                        help="Hub seconds per real second for that run (default: from the unpaced run's call rate, "
                             "so that the quota, not this machine, bounds it)")
    parser.add_argument("--headroom", type=float, default=2.0,
                        help="with the default compression: the unpaced crawl spends a window's quota in 1/headroom of it")
    args = parser.parse_args()

    from hubsurvey.core.hub import HubClient
    from hubsurvey.core.store import Store
    from hubsurvey.crawler.crawl import crawl
    from hubsurvey.crawler.rules import CrawlFilters

    work = Path(tempfile.mkdtemp(prefix="hubsurvey-bench-hubscale-"))
    (work / "hub").mkdir()
    (work / "hub" / "index.json").write_text(json.dumps({"datasets": [], "hubscale": {"count": args.n, "seed": 0}}))
    print(f"load average before: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f}")
    hub = Standin(work / "hub", args.page_size)
    try:
        def measured(run) -> dict[str, Any]:
            hub.ask("reset")
            client = HubClient(endpoint=hub.url, token=False, rate=0, file_rate=0)  # 0: unpaced (None follows the quota)
            started = time.perf_counter()
            summary = run(client)
            seconds = time.perf_counter() - started
            stats = hub.ask("stats")
            return {"summary": summary, "seconds": seconds, "list": stats["list"],
                    "api": stats["list"] + stats["info"] + stats["tree"] + stats["refs"] + stats["parquet_api"],
                    "resolvers": stats["resolve_get"] + stats["resolve_head"], "resolutions": stats["info"] + stats["tree"],
                    "client_api": client.calls, "client_files": client.file_calls}

        with Store(work / "new.duckdb") as store:
            first = measured(lambda c: crawl(store, c, workers=args.workers))
            by = dict(store.query("SELECT decided_by, count(*) FROM datasets GROUP BY 1")[1])
            parquet_reasons = dict(store.query(
                "SELECT coalesce(exclusion_reason, 'eligible'), count(*) FROM datasets"
                " WHERE decided_by IN ('parquet', 'card') GROUP BY 1")[1])
            decisions = store.query("SELECT dataset_id, status, exclusion_reason, total_rows FROM datasets ORDER BY 1")[1]
            changed = hub.ask("advance")
            night = measured(lambda c: crawl(store, c, workers=args.workers, since_last=True))
        rss_new = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        # The same crawl listing every Parquet branch (one API call each), on a Hub as it was before the night
        hub.stop()
        hub = Standin(work / "hub", args.page_size)
        with Store(work / "listed.duckdb") as store:
            listed = measured(lambda c: crawl(store, c, CrawlFilters(list_every_branch=True), workers=args.workers))
            listed_decisions = store.query("SELECT dataset_id, status, exclusion_reason, total_rows FROM datasets ORDER BY 1")[1]
        old = baseline_crawl()
        with Store(work / "old.duckdb") as store:
            base = measured(lambda c: old.crawl(store, c, old.CrawlFilters(limit=args.baseline_n), workers=args.workers))
    finally:
        hub.stop()
    expected = truth(args.n)
    paced = quota_enforced_run(args, work, first) if args.paced_n else None

    s, b, nt = first["summary"], base["summary"], night["summary"]
    scale_new, scale_base = args.hub / s.listed, args.hub / b.listed
    print(f"load average after: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f}; "
          f"peak RSS of the crawling process {rss_new:.0f} MB")
    print(f"eligible found {s.eligible:,}, by the mix's truth {expected['eligible']:,}: "
          f"{'equal' if s.eligible == expected['eligible'] else 'DIFFERENT'}")
    print(f"decided from the listing {by.get('listing', 0):,}, from the Parquet branch "
          f"{by.get('parquet', 0) + by.get('card', 0):,}: listed {by.get('parquet', 0):,}, its files named by the card "
          f"{by.get('card', 0):,} (of which {', '.join(f'{k} {v:,}' for k, v in sorted(parquet_reasons.items()))})")
    print(f"API calls for the datasets the listing or the card decided: "
          f"{first['resolutions'] - by.get('parquet', 0)} (resolution calls {first['resolutions']:,} = datasets whose "
          f"Parquet branch was listed {by.get('parquet', 0):,})")
    print(f"every dataset's decision and rows, card-named files against every branch listed: "
          f"{'equal' if decisions == listed_decisions else 'DIFFERENT'} ({len(decisions):,} datasets)")

    rows: list[tuple[str, str, str]] = []

    def shown(value: Any) -> str:
        return value if isinstance(value, str) else f"{value:,.3f}" if isinstance(value, float) else f"{value:,}"

    def row(name: str, new: Any, old: Any, every: Any = "-") -> None:
        rows.append((name, shown(new), shown(every), shown(old)))

    ls = listed["summary"]
    scale_listed = args.hub / ls.listed
    api_listed, res_listed = listed["api"] * scale_listed, listed["resolvers"] * scale_listed
    cpu_listed = listed["seconds"] * scale_listed / 3600

    row("datasets listed (end to end)", s.listed, b.listed, ls.listed)
    row("eligible", s.eligible, b.eligible, ls.eligible)
    row("unpaced wall time, s", f"{first['seconds']:.1f}", f"{base['seconds']:.1f}", f"{listed['seconds']:.1f}")
    row("listing calls", first["list"], base["list"], listed["list"])
    row("API calls per listed dataset", first["api"] / s.listed, base["api"] / b.listed, listed["api"] / ls.listed)
    row("API calls per eligible dataset", first["api"] / max(1, s.eligible), base["api"] / max(1, b.eligible),
        listed["api"] / max(1, ls.eligible))
    row("resolver calls per listed dataset", first["resolvers"] / s.listed, base["resolvers"] / b.listed,
        listed["resolvers"] / ls.listed)
    row("resolver calls per eligible dataset", first["resolvers"] / max(1, s.eligible), base["resolvers"] / max(1, b.eligible),
        listed["resolvers"] / max(1, ls.eligible))
    api_hub, res_hub = first["api"] * scale_new, first["resolvers"] * scale_new
    api_base, res_base = base["api"] * scale_base, base["resolvers"] * scale_base
    row(f"projected API calls, {args.hub:,} datasets", round(api_hub), round(api_base), round(api_listed))
    row(f"projected resolver calls, {args.hub:,} datasets", round(res_hub), round(res_base), round(res_listed))
    cpu_new, cpu_base = first["seconds"] * scale_new / 3600, base["seconds"] * scale_base / 3600
    row("projected unpaced time (this machine), h", f"{cpu_new:.1f}", f"{cpu_base:.1f}", f"{cpu_listed:.1f}")
    for plan, quota in QUOTAS.items():
        row(f"projected first crawl, {plan} quota, h", f"{max(cpu_new, hours(api_hub, res_hub, quota)):.1f}",
            f"{max(cpu_base, hours(api_base, res_base, quota)):.1f}", f"{max(cpu_listed, hours(api_listed, res_listed, quota)):.1f}")
    # If the Hub caps expanded listing pages at 50 items (as for trees; unconfirmed for /api/datasets):
    extra = math.ceil(args.hub / 50) - math.ceil(args.hub / args.page_size)
    row("  same, free quota, pages of 50 (unconfirmed cap), h", f"{hours(api_hub + extra, res_hub, QUOTAS['free']):.1f}",
        f"{hours(api_base + extra, res_base, QUOTAS['free']):.1f}", f"{hours(api_listed + extra, res_listed, QUOTAS['free']):.1f}")

    # The night: 1% changed, found by lastModified; scaled by the changed count.
    changed_hub = args.hub / 100
    resolutions_per_changed = night["resolutions"] / max(1, changed)
    margin = changed_hub / 24  # an hour of changes read past the high-water mark
    night_api = math.ceil((changed_hub + margin) / args.page_size) + resolutions_per_changed * changed_hub
    night_res = night["resolvers"] / max(1, changed) * changed_hub
    # The baseline lists the whole Hub every night and resolves again the changed datasets it resolved before.
    base_night_api = math.ceil(args.hub / args.page_size) + (base["api"] - base["list"]) * scale_base / 100
    base_night_res = base["resolvers"] * scale_base / 100
    row("night: datasets changed (end to end)", changed, "-")
    row("night: listing calls (end to end)", night["list"], "-")
    row("night: API calls per changed dataset", night["api"] / max(1, changed), "-")
    row("night: datasets re-resolved (end to end)", nt.resolved, "-")
    for plan, quota in QUOTAS.items():
        row(f"projected night (1% changed), {plan} quota, min",
            f"{hours(night_api, night_res, quota) * 60:.0f}", f"{hours(base_night_api, base_night_res, quota) * 60:.0f}")

    print(f"\n{'':58}{'hubsurvey':>14}{'every branch':>14}{'baseline':>14}")
    for name, new, every, old in rows:
        print(f"{name:58}{new:>14}{every:>14}{old:>14}")
    print(f"(hubsurvey and 'every branch' (crawl --list-every-branch: no file named from the card) over {s.listed:,} "
          f"listed, baseline ({BASELINE_REVISION}) over the first {b.listed:,}; "
          f"projections linear to {args.hub:,}; the baseline night lists the whole Hub and re-resolves the changed)")


    if paced is not None:
        print_quota_enforced(paced, first, args.hub)


def quota_enforced_run(args: argparse.Namespace, work: Path, unpaced: dict[str, Any]) -> dict[str, Any]:
    """The crawl against the stand-in enforcing the free quota on a compressed clock, the client
    following the quota as a user runs it (no ``rate``/``file_rate``; the free plan, a token's)."""
    from hubsurvey.core.hub import HubClient
    from hubsurvey.core.store import Store
    from hubsurvey.crawler.crawl import crawl

    quota = QUOTAS["free"]
    compression = args.compression or compression_for(unpaced["api"] / unpaced["seconds"],
                                                      unpaced["resolvers"] / unpaced["seconds"], quota, args.headroom)
    root = work / "paced-hub"
    root.mkdir()
    (root / "index.json").write_text(json.dumps({"datasets": [], "hubscale": {"count": args.paced_n, "seed": 0}}))
    print(f"quota-enforced run: {args.paced_n:,} datasets, free quota {quota[0]:,} API / {quota[1]:,} resolver calls "
          f"per {WINDOW_S} s, clock compressed {compression:.1f}x (a window in {WINDOW_S / compression:.1f} real s); "
          f"load average {os.getloadavg()[0]:.2f}", flush=True)
    hub = Standin(root, args.page_size, quota=(quota[0], quota[1], 1 / compression))
    try:
        client = HubClient(endpoint=hub.url, token=False, plan="free", clock_scale=1 / compression)
        with Store(work / "paced.duckdb") as store:
            started = time.perf_counter()
            summary = crawl(store, client, workers=args.workers)
            seconds = time.perf_counter() - started
        log = hub.ask("quota_log")
        stats = hub.ask("stats")
    finally:
        hub.stop()
    return {"summary": summary, "seconds": seconds, "compression": compression, "quota": quota,
            "windows": windows_served(log, quota), "stats": stats, "n": args.paced_n}


def print_quota_enforced(paced: dict[str, Any], unpaced: dict[str, Any], hub_size: int) -> None:
    """The enforced run beside what the unpaced run projects for the same datasets at the same quota."""
    quota, w, s = paced["quota"], paced["windows"], paced["summary"]
    scale = s.listed / unpaced["summary"].listed  # the unpaced run's calls, scaled to this run's datasets
    api, resolvers = unpaced["api"] * scale, unpaced["resolvers"] * scale
    simulated = paced["seconds"] * paced["compression"]
    projected_unpaced = hours(api, resolvers, quota) * 3600

    def share(bucket: str, key: str) -> str:
        value = w[bucket][key]
        return "-" if math.isnan(value) else f"{value * quota[0 if bucket == 'api' else 1] :,.0f} ({value:.0%})"

    rows = [
        ("datasets listed (end to end)", f"{s.listed:,}", f"{s.listed:,}"),
        ("eligible", f"{s.eligible:,}", f"{round(unpaced['summary'].eligible * scale):,}"),
        ("clock compression (Hub s per real s)", f"{paced['compression']:.1f}", "-"),
        ("real elapsed, s", f"{paced['seconds']:.1f}", "-"),
        ("windows used", f"{w['windows']}", f"{math.ceil(max(api / quota[0], resolvers / quota[1]))}"),
        ("API calls (served)", f"{sum(w['api']['served']):,}", f"{round(api):,}"),
        ("resolver calls (served)", f"{sum(w['resolvers']['served']):,}", f"{round(resolvers):,}"),
        ("API calls per full window after the first, mean", share("api", "mean"), f"{quota[0]:,} (100%)"),
        ("  min", share("api", "min"), "-"),
        ("resolver calls per full window after the first, mean", share("resolvers", "mean"), "-"),
        ("  min", share("resolvers", "min"), "-"),
        ("429s in the first window (API / resolvers)",
         f"{w['api']['refused_first']} / {w['resolvers']['refused_first']}", "-"),
        ("429s after the first window (target 0)",
         f"{w['api']['refused_after']} / {w['resolvers']['refused_after']}", "-"),
        ("simulated wall time at the free quota, Hub s", f"{simulated:,.0f}", f"{projected_unpaced:,.0f}"),
        (f"projected first crawl, {hub_size:,} datasets, free quota, h",
         f"{simulated * hub_size / s.listed / 3600:.1f}", f"{projected_unpaced * hub_size / s.listed / 3600:.1f}"),
    ]
    print(f"\nquota enforced by the stand-in (free: {quota[0]:,} API / {quota[1]:,} resolver calls per {WINDOW_S} s)")
    print(f"{'':58}{'enforced, paced':>16}{'unpaced, projected':>20}")
    for name, new, old in rows:
        print(f"{name:58}{new:>16}{old:>20}")
    print(f"API calls served per window: {w['api']['served']}")
    print(f"resolver calls served per window: {w['resolvers']['served']}")
    print("(simulated wall time = real elapsed x compression; the projection is linear in datasets listed; the unpaced "
          "column spends both buckets in full, in parallel, from the unpaced run's calls per dataset)")


if __name__ == "__main__":
    main()
