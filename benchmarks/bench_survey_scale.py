"""Benchmark: the first full survey, measured on a sample and projected to the Hub.

    python benchmarks/bench_survey_scale.py [--eligible 60] [--workers 2] [--rounds 1] [--hub 1500000]

The stand-in (in a process of its own) lists the first datasets of the Hub-scale mix
(``hubsurvey_standin.hubscale``), as many as hold ``--eligible`` eligible datasets, and serves their
Parquet exports at their simulated size (``sized_files``: text of a realistic length, labels,
planted copies; ``hubsurvey_standin.sizedfiles``). It enforces the free plan's quotas (1,000 API and
5,000 resolver calls per 300-second window) on a clock ``--compression`` times faster, and logs
the calls it served and refused in each window.

Then, for each executor, on a fresh DB and a fresh cache, ``run_survey`` runs crawl → queue →
download → measure → store end to end (no exposure, crossleaks or report), its client paced as a
user's (the free plan, following the ``RateLimit`` headers): the local executor (``--workers``
processes, downloads prefetched by the coordinator) and a Dask cluster of ``--workers`` worker
processes (``distributed.LocalCluster(processes=True)``, its scheduler and workers on loopback,
started before the run is timed). ``--rounds`` repeats the pair, alternating which goes first.
The stand-in generates every file once before the first run (a crawl, not timed) and keeps them
in a cache folder, so that no run pays for the generation.

It prints, side by side: rows/s, the per-config overhead (slot seconds per job beyond
measurement), bytes and resolver calls per row, calls per config, and each bucket's use per window
(429s). Then it projects the first full survey of ``--hub`` listed datasets (the mix's eligible
datasets and rows, counted from the stand-in's own generator) on ``--machines`` two-core
machines for the free and PRO plans, and an incremental night (1% changed), against the targets
(first survey in 8 h or less on 4 two-core machines with a free token; a night in 30 min or less on
one machine), naming what binds: compute, bytes (at ``--bandwidth-mb`` MB/s a machine) or quota.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

WINDOW_S = 300  # the Hub's quota window, Hub seconds
PLANS = {"free": (1_000, 5_000), "pro": (2_500, 12_000)}  # hubsurvey.core.settings.PLANS (API, resolvers) per window
TARGET_FIRST_H, TARGET_FIRST_MACHINES, TARGET_NIGHT_MIN = 8.0, 4, 30.0
CORES = 2  # a machine of the projection, as this one


# --- the stand-in, in a process of its own ----------------------------------------------------------

def serve(root: str, conn: Any, quota: tuple[int, int, float], page_size: int = 1000) -> None:
    """The stand-in, enforcing ``quota`` (API, resolver calls per window, real seconds per Hub second),
    listing ``page_size`` datasets a page; answers control messages: stats, quota_log, reset,
    generated, stop."""
    from hubsurvey_standin import Quota, StandinHub

    def fresh() -> Quota:
        return Quota(api=quota[0], resolvers=quota[1], window=WINDOW_S, clock_scale=quota[2])

    with StandinHub(Path(root), quota=fresh(), page_size=page_size) as hub:
        conn.send(hub.url)
        while True:
            message = conn.recv()
            if message == "stats":
                conn.send(hub.stats())
            elif message == "quota_log":
                conn.send(dict(hub.quota.log) if hub.quota else {})
            elif message == "generated":
                conn.send(hub.catalog.filler.files.generated)
            elif message == "pregenerate":  # every eligible file made once, here, not under a request's deadline
                scale = hub.catalog.filler
                for i in range(scale.count):
                    if scale.design(i) is not None:
                        for blob in scale.repo(i).parquet.files.values():
                            blob.size  # noqa: B018 - makes the file
                conn.send(scale.files.generated)
            elif message == "reset":
                hub.reset_stats()
                hub.quota = fresh()
                conn.send(True)
            elif message == "unpaced":
                hub.quota = None
                conn.send(True)
            else:
                conn.send(True)
                return


class Standin:
    def __init__(self, root: Path, quota: tuple[int, int, float], page_size: int = 1000):
        self._conn, child = mp.Pipe()
        self._process = mp.get_context("spawn").Process(target=serve, args=(str(root), child, quota, page_size),
                                                        daemon=True)
        self._process.start()
        self.url = self._conn.recv()
        self.pid = int(self._process.pid or 0)

    def ask(self, message: str) -> Any:
        self._conn.send(message)
        return self._conn.recv()

    def stop(self) -> None:
        self.ask("stop")
        self._process.join(10)


# --- the sample and the mix ---------------------------------------------------------------------------

@dataclass
class Mix:
    """The Hub-scale mix over ``listed`` datasets: eligible configs and their rows."""

    listed: int
    eligible: int = 0
    rows: int = 0
    style_rows: dict[str, int] = field(default_factory=dict)  # rows by the text's style (short, medium, long)

    @classmethod
    def of(cls, listed: int, stride: int = 1) -> Mix:
        """Counted from the stand-in's generator, every ``stride``-th dataset (scaled up)."""
        from hubsurvey_standin.hubscale import HubScale, _split_rows

        scale, mix = HubScale(listed, sized_files=True), cls(listed)
        for i in range(0, listed, stride):
            t = scale.traits(i)
            if scale.eligible(t):
                rows = stride * sum(_split_rows(t).values())
                style = scale.design(i, t).style  # type: ignore[union-attr]
                mix.eligible += stride
                mix.rows += rows
                mix.style_rows[style] = mix.style_rows.get(style, 0) + rows
        return mix


def styles_of(listed: int) -> dict[str, str]:
    """Each eligible dataset's text style, by id."""
    from hubsurvey_standin.hubscale import HubScale

    scale = HubScale(listed, sized_files=True)
    return {scale.props(i)["id"]: scale.design(i).style for i in range(listed) if scale.design(i) is not None}  # type: ignore[union-attr]


def sample_size(eligible: int) -> int:
    """The fewest first-listed datasets holding ``eligible`` eligible ones (night 0 lists index order)."""
    from hubsurvey_standin.hubscale import HubScale

    scale, found, i = HubScale(10**9), 0, 0
    while found < eligible:
        found += scale.eligible(scale.traits(i))
        i += 1
    return i


# --- one timed run -------------------------------------------------------------------------------------

class CpuTime:
    """CPU seconds of this process and its descendants (worker processes, Dask's nanny and workers)
    over a span, sampled every half second, leaving out the stand-in's process: what the survey
    costs whatever else the machine runs."""

    def __init__(self, exclude: int):
        import psutil

        self._me, self._exclude = psutil.Process(), exclude
        self._first: dict[int, float] = {}
        self._last: dict[int, float] = {}
        self._own = time.process_time()
        self._sample(baseline=True)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _sample(self, baseline: bool = False) -> None:
        import psutil

        for p in self._me.children(recursive=True):
            try:
                if p.pid == self._exclude or self._exclude in {a.pid for a in p.parents()}:
                    continue
                t = p.cpu_times()
            except psutil.Error:
                continue
            # a process started during the span counts from zero, one there before from its first sample
            self._first.setdefault(p.pid, t.user + t.system if baseline else 0.0)
            self._last[p.pid] = t.user + t.system

    def _run(self) -> None:
        while not self._stop.wait(0.5):
            self._sample()

    def stop(self) -> float:
        self._stop.set()
        self._thread.join()
        self._sample()
        own = time.process_time() - self._own
        return own + sum(self._last[pid] - first for pid, first in self._first.items())


@dataclass
class Timed:
    """A step of the run, timed, with the stand-in's counts at its start and end."""

    step: Any
    hub: Standin
    seconds: float = 0.0
    cpu: float = 0.0
    before: dict[str, int] = field(default_factory=dict)
    after: dict[str, int] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return str(self.step.name)

    def __getattr__(self, name: str) -> Any:
        """What the step says of its counts (its lines, its place in the run's row) is the step's own."""
        if name.startswith("_") or name == "step":
            raise AttributeError(name)
        return getattr(self.step, name)

    def run(self, ctx: Any) -> Any:
        self.before = self.hub.ask("stats")
        cpu = CpuTime(exclude=self.hub.pid)
        started = time.perf_counter()
        try:
            return self.step.run(ctx)
        finally:
            self.seconds = time.perf_counter() - started
            self.cpu = cpu.stop()
            self.after = self.hub.ask("stats")

    def calls(self) -> dict[str, int]:
        d = {k: self.after.get(k, 0) - self.before.get(k, 0) for k in self.after}
        return {"api": sum(v for k, v in d.items() if k not in ("resolve_get", "resolve_head", "faults_injected", "resolve_bytes")),
                "resolvers": d.get("resolve_get", 0) + d.get("resolve_head", 0), "bytes": d.get("resolve_bytes", 0)}


def run_once(executor: str, args: argparse.Namespace, hub: Standin, work: Path, tag: str,
             dask_address: str | None) -> dict[str, Any]:
    from hubsurvey.core.hub import HubClient
    from hubsurvey.core.store import Store
    from hubsurvey.pipeline import RunOptions, run_steps, run_survey

    hub.ask("reset")
    db, cache = work / f"{tag}.duckdb", work / f"cache-{tag}"
    client = HubClient(endpoint=hub.url, token=False, plan="free", clock_scale=1 / args.compression, cache_dir=cache)
    steps = [Timed(s, hub) for s in run_steps() if s.name in ("crawl", "measure")]
    options = RunOptions(workers=args.workers, executor=executor,
                         executor_options={"dask": dask_address} if executor == "dask" else {},
                         crossleaks=False, exposure=False, cache_dir=cache, max_cache_gb=args.cache_gb)
    started = time.perf_counter()
    summary = run_survey(db, client, None, options, steps=steps)
    wall = time.perf_counter() - started
    with Store(db) as store:
        columns = store.query("SELECT DISTINCT dataset_id, unnest(text_columns) FROM measurements "
                              "UNION SELECT DISTINCT dataset_id, label_column FROM measurements WHERE label_column IS NOT NULL")[1]
        per_job = store.query(
            "SELECT j.dataset_id, j.seconds, max(coalesce(m.rows_train, 0) + coalesce(m.rows_validation, 0) + coalesce(m.rows_test, 0)) "
            "FROM jobs j JOIN measurements m ON m.dataset_id = j.dataset_id AND m.config = j.config "
            "WHERE j.status = 'done' GROUP BY j.job_id, j.dataset_id, j.seconds")[1]
        jobs = store.query("SELECT dataset_id, configs FROM datasets WHERE dataset_id IN "
                           "(SELECT dataset_id FROM jobs WHERE status = 'done')")[1] if args.column_share else []
    shutil.rmtree(cache, ignore_errors=True)
    crawl, measure = steps
    m = summary.steps.get("measure", {})
    return {"executor": executor, "wall": wall, "crawl": crawl, "measure": measure, "counts": m,
            "crawl_counts": summary.steps.get("crawl", {}), "quota": hub.ask("quota_log"),
            "measured_columns": columns, "jobs": jobs, "per_job": per_job}


# --- figures -------------------------------------------------------------------------------------------

@dataclass
class Figures:
    """One executor's measured figures, per slot (worker process) where it says so."""

    executor: str
    configs: int
    failed: int
    rows: int
    slots: int
    measure_wall: float
    crawl_wall: float
    measure_seconds: float
    job_seconds: float
    bytes: int
    resolvers: int
    api: int
    crawl_api: int
    crawl_resolvers: int
    listed: int
    quota: dict[tuple[str, int], list[int]]
    cpu: float  # CPU seconds of the survey's processes over the measure step
    jobs: list[tuple[float, int, str]]  # (job seconds, rows, text style) of each job done
    style_bytes: dict[str, tuple[int, int]]  # style -> (bytes of its files, rows)

    @classmethod
    def of(cls, r: dict[str, Any], slots: int, styles: dict[str, str], style_bytes: dict[str, tuple[int, int]]) -> Figures:
        m, crawl, measure = r["counts"], r["crawl"].calls(), r["measure"].calls()
        return cls(r["executor"], int(m.get("done", 0)), int(m.get("failed", 0)), int(m.get("data_rows", 0)), slots,
                   r["measure"].seconds, r["crawl"].seconds, float(m.get("measure_seconds", 0.0)),
                   float(m.get("job_seconds", 0.0)), measure["bytes"], measure["resolvers"], measure["api"],
                   crawl["api"], crawl["resolvers"], int(r["crawl_counts"].get("listed", 0)), r["quota"], r["measure"].cpu,
                   [(float(s), int(n), styles[d]) for d, s, n in r["per_job"]], style_bytes)

    @property
    def busy(self) -> float:
        """The survey's CPU seconds over what the machine's cores could give in the measure wall:
        below 1, the jobs waited for a core (a shared machine) or for the Hub."""
        return self.cpu / (CORES * self.measure_wall)

    @property
    def rows_per_s(self) -> float:
        return self.rows / self.measure_wall

    @property
    def per_job(self) -> float:
        """Seconds of a job whatever its rows: the median job of at most 1,000 rows (else none)."""
        small = sorted(s for s, n, _ in self.jobs if n <= 1_000)
        return small[len(small) // 2] if small else 0.0

    def per_row(self, style: str | None = None) -> float:
        """Seconds a row of that style (None: any) beyond :attr:`per_job`, from the jobs of that style."""
        jobs = [(s, n) for s, n, st in self.jobs if style is None or st == style]
        if not jobs:
            return self.per_row()
        return max(0.0, sum(s - self.per_job for s, _ in jobs)) / max(1, sum(n for _, n in jobs))

    @property
    def idle(self) -> float:
        """Slot seconds a config outside its job: the coordinator, the queue, idle slots at the end."""
        return (self.measure_wall * self.slots - sum(s for s, _, _ in self.jobs)) / max(1, self.configs)

    def bytes_per_row(self, style: str | None = None) -> float:
        b, n = self.style_bytes.get(style, (0, 0)) if style else (self.bytes, self.rows)
        return b / n if n else self.bytes / max(1, self.rows)

    @property
    def overhead(self) -> float:
        """Slot seconds a config beyond its measurement: (wall x slots - measurement) / configs."""
        return (self.measure_wall * self.slots - self.measure_seconds) / max(1, self.configs)

    @property
    def job_overhead(self) -> float:
        """Seconds a job spent beyond its measurement, inside the job (a download on Dask)."""
        return (self.job_seconds - self.measure_seconds) / max(1, self.configs)

    def machine_hours(self, configs: float, style_rows: dict[str, float]) -> float:
        """Hours of one machine like this one (``slots`` worker processes) for this work."""
        rows = sum(n * self.per_row(style) for style, n in style_rows.items())
        return (rows + configs * (self.per_job + self.idle)) / self.slots / 3600

    def windows(self, bucket: str) -> tuple[list[int], int]:
        last = max((index for _, index in self.quota), default=-1)
        served = [self.quota.get((bucket, k), [0, 0])[0] for k in range(last + 1)]
        return served, sum(r for (b, _), (_, r) in self.quota.items() if b == bucket)


def quota_hours(api: float, resolvers: float, plan: str) -> float:
    """Hours to spend these calls at a plan's quota, both buckets drawn in parallel."""
    q = PLANS[plan]
    return max(api / q[0], resolvers / q[1]) * WINDOW_S / 3600


def projection(f: Figures, mix: Mix, machines: int, plan: str, bandwidth: float, share: float = 1.0) -> dict[str, Any]:
    """Hours of the survey of ``share`` of the mix's datasets on ``machines`` machines: the crawl
    (quota-bound), then the measurement (compute, bytes and the downloads' quota, whichever binds)."""
    configs = mix.eligible * share
    style_rows = {style: n * share for style, n in mix.style_rows.items()}
    listed = mix.listed * share
    crawl_api = f.crawl_api / f.listed * listed
    crawl_res = f.crawl_resolvers / f.listed * listed
    api, res = f.api / max(1, f.configs) * configs, f.resolvers / max(1, f.configs) * configs
    compute = f.machine_hours(configs, style_rows) / machines
    quiet = compute * min(1.0, f.busy)  # the same work on unshared cores, CPU-bound
    data = sum(n * f.bytes_per_row(style) for style, n in style_rows.items()) / (bandwidth * 1e6 * machines) / 3600
    crawl = quota_hours(crawl_api, crawl_res, plan)
    downloads = quota_hours(api, res, plan)
    measure = max(compute, data, downloads)
    return {"crawl": crawl, "compute": compute, "quiet": quiet, "bytes": data, "quota": downloads, "measure": measure,
            "sequential": crawl + measure, "overlapped": max(compute, data, quota_hours(crawl_api + api, crawl_res + res, plan)),
            "overlapped_quota": quota_hours(crawl_api + api, crawl_res + res, plan),
            "limit": {compute: "compute", data: "bytes", downloads: "quota"}[measure]}


def column_share(result: dict[str, Any], url: str) -> tuple[int, int, dict[str, int], dict[str, int]]:
    """Bytes of the downloaded files' columns, of the columns the measurement never measured, by
    column, and by dataset (read from each file's footer: its column chunks' compressed sizes)."""
    from hubsurvey.core.hub import HubClient

    client = HubClient(endpoint=url, token=False, rate=0, file_rate=0)
    measured: dict[str, set[str]] = {}
    for dataset, column in result["measured_columns"]:
        measured.setdefault(dataset, set()).add(column)
    total, unmeasured, by_column, by_dataset = 0, 0, {}, {}
    for dataset, configs in result["jobs"]:
        for splits in (json.loads(configs) if isinstance(configs, str) else configs).values():
            for split in splits.values():
                for path in split["files"]:
                    meta = client.parquet_footer(dataset, path)
                    for g in range(meta.num_row_groups):
                        group = meta.row_group(g)
                        for c in range(group.num_columns):
                            chunk = group.column(c)
                            name = chunk.path_in_schema.split(".")[0]
                            total += chunk.total_compressed_size
                            by_dataset[dataset] = by_dataset.get(dataset, 0) + chunk.total_compressed_size
                            if name not in measured.get(dataset, set()):
                                unmeasured += chunk.total_compressed_size
                                by_column[name] = by_column.get(name, 0) + chunk.total_compressed_size
    return total, unmeasured, by_column, by_dataset


# --- main ----------------------------------------------------------------------------------------------

def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--eligible", type=int, default=60, help="eligible datasets in the sample")
    parser.add_argument("--workers", type=int, default=2, help="worker processes of each executor")
    parser.add_argument("--rounds", type=int, default=1, help="rounds of the pair of runs, alternating which goes first")
    parser.add_argument("--executors", default="local,dask")
    parser.add_argument("--hub", type=int, default=1_500_000, help="datasets listed on the Hub (the projection's scale)")
    parser.add_argument("--mix-stride", type=int, default=10, help="count the mix over every N-th of --hub datasets")
    parser.add_argument("--machines", default="1,2,4,8", help="two-core machines to project on")
    parser.add_argument("--bandwidth-mb", type=float, default=50.0, help="download MB/s of one machine (an assumption)")
    parser.add_argument("--compression", type=float, default=30.0, help="Hub seconds per real second of the enforced quota")
    parser.add_argument("--cache-gb", type=float, default=20.0, help="each run's download cache budget")
    parser.add_argument("--standin-cache-gb", type=float, default=12.0, help="the stand-in's cache of generated files")
    parser.add_argument("--no-column-share", dest="column_share", action="store_false",
                        help="skip the share of downloaded bytes in columns never measured")
    args = parser.parse_args()
    executors = [e.strip() for e in args.executors.split(",") if e.strip()]
    machines = [int(m) for m in args.machines.split(",")]

    work = Path(tempfile.mkdtemp(prefix="hubsurvey-bench-survey-scale-"))
    listed = sample_size(args.eligible)
    sample = Mix.of(listed)
    (work / "hub").mkdir()
    (work / "hub" / "index.json").write_text(json.dumps({"datasets": [], "hubscale": {
        "count": listed, "seed": 0, "sized_files": True, "cache_dir": str(work / "standin-cache"),
        "cache_gb": args.standin_cache_gb}}))
    started = time.perf_counter()
    mix = Mix.of(args.hub, args.mix_stride)
    mix_seconds = time.perf_counter() - started
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}; {os.cpu_count()} cores")
    print(f"sample: the first {listed:,} listed datasets, {sample.eligible} eligible, {sample.rows:,} rows "
          f"({sample.rows / max(1, sample.eligible):,.0f} a config; "
          + ", ".join(f"{st} text {n / max(1, sample.rows):.0%}" for st, n in sorted(sample.style_rows.items())) + " of the rows)")
    print(f"the Hub's mix: {args.hub:,} listed, {mix.eligible:,} eligible ({mix.eligible / args.hub:.1%}), "
          f"{mix.rows:,} rows ({mix.rows / max(1, mix.eligible):,.0f} a config; every {args.mix_stride}th dataset "
          f"counted, {mix_seconds:.0f} s)")

    hub = Standin(work / "hub", (PLANS["free"][0], PLANS["free"][1], 1 / args.compression))
    cluster = None
    try:
        started = time.perf_counter()
        warm_up(hub, work)
        print(f"stand-in: {hub.ask('generated')} files generated in {time.perf_counter() - started:.0f} s "
              "(once, before the timed runs)", flush=True)
        dask_address = None
        if "dask" in executors:
            cluster, dask_address = start_cluster(args)
        results: dict[str, list[dict[str, Any]]] = {e: [] for e in executors}
        for k in range(args.rounds):
            for executor in executors if k % 2 == 0 else executors[::-1]:
                print(f"round {k + 1}: {executor} ... (load average {os.getloadavg()[0]:.2f})", flush=True)
                results[executor].append(run_once(executor, args, hub, work, f"{executor}-{k}", dask_address))
        share = column_share(results[executors[0]][0], hub.url) if args.column_share else None
        regenerated = hub.ask("generated")
    finally:
        if cluster is not None:
            cluster.close()
        hub.stop()
        shutil.rmtree(work, ignore_errors=True)

    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}; stand-in files generated in all: {regenerated}")
    styles = styles_of(listed)
    style_bytes: dict[str, tuple[int, int]] = {}
    if share is not None:
        rows_of = {d: n for d, _, n in results[executors[0]][0]["per_job"]}
        for dataset, size in share[3].items():
            b, n = style_bytes.get(styles[dataset], (0, 0))
            style_bytes[styles[dataset]] = (b + size, n + rows_of.get(dataset, 0))
    figures = {e: [Figures.of(r, args.workers, styles, style_bytes) for r in rs] for e, rs in results.items()}
    report(figures, args, mix, machines, share)


def warm_up(hub: Standin, work: Path) -> None:
    """Every eligible file generated once, in the stand-in, untimed (its cache folder keeps them for
    the runs); then a crawl and the audit of the smallest eligible dataset, unpaced, so that numba's
    compiled passes are in its on-disk cache before any worker needs them."""
    from hubsurvey.core.hub import HubClient
    from hubsurvey.core.store import Store
    from hubsurvey.crawler.crawl import crawl
    from hubsurvey.survey.audit import audit

    hub.ask("pregenerate")
    hub.ask("unpaced")
    client = HubClient(endpoint=hub.url, token=False, rate=0, file_rate=0, cache_dir=work / "warm-cache")
    with Store(work / "warm-up.duckdb") as store:
        crawl(store, client)
        smallest = store.query("SELECT dataset_id FROM datasets WHERE status = 'eligible' ORDER BY total_rows LIMIT 1")[1]
    if smallest:  # numba's compiled passes, compiled into its on-disk cache before any worker needs them
        audit(smallest[0][0], client=client)
    shutil.rmtree(work / "warm-cache", ignore_errors=True)


def start_cluster(args: argparse.Namespace) -> tuple[Any, str]:
    """A Dask cluster of ``--workers`` worker processes on loopback, one thread each (the run's Hub
    settings, the plan and the compressed clock among them, travel with each job)."""
    from distributed import LocalCluster

    cluster = LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True, host="127.0.0.1",
                           dashboard_address=":0", memory_limit=0)
    return cluster, cluster.scheduler_address


def report(figures: dict[str, list[Figures]], args: argparse.Namespace, mix: Mix, machines: list[int],
           share: tuple[int, int, dict[str, int]] | None) -> None:
    names = list(figures)
    runs = [(name, k, f) for name in names for k, f in enumerate(figures[name])]
    header = "".join(f"{f'{name} #{k + 1}':>16}" for name, k, _ in runs)
    print(f"\n{'measured (' + str(args.workers) + ' worker processes each)':<58}{header}")

    def line(label: str, value: Callable[[Figures], str]) -> None:
        print(f"{label:<58}" + "".join(f"{value(f):>16}" for _, _, f in runs))

    line("configs done (failed)", lambda f: f"{f.configs} ({f.failed})")
    line("rows measured", lambda f: f"{f.rows:,}")
    line("crawl wall, s (paced)", lambda f: f"{f.crawl_wall:.1f}")
    line("measure wall, s", lambda f: f"{f.measure_wall:.1f}")
    line("rows/s (measure wall)", lambda f: f"{f.rows_per_s:,.0f}")
    line(f"CPU s of the survey's processes (share of {CORES} cores)", lambda f: f"{f.cpu:,.0f} ({f.busy:.0%})")
    line(f"rows/s if CPU-bound on {CORES} unshared cores", lambda f: f"{f.rows / f.cpu * CORES:,.0f}")
    line("measurement, slot s (sum over jobs)", lambda f: f"{f.measure_seconds:.1f}")
    line("per-config overhead, slot s beyond measurement", lambda f: f"{f.overhead:.2f}")
    line("  of which inside the job (download on Dask), s", lambda f: f"{f.job_overhead:.2f}")
    line("job seconds = a + b x rows: a (median job of <= 1,000 rows), s", lambda f: f"{f.per_job:.2f}")
    for style in ("short", "medium", "long"):
        line(f"  b, {style} text ({sum(1 for _, _, st in figures[names[0]][0].jobs if st == style)} configs), us a row",
             lambda f, st=style: f"{f.per_row(st) * 1e6:.2f}")
    line("  b, all rows, us a row", lambda f: f"{f.per_row() * 1e6:.2f}")
    line("slot s a config outside its job", lambda f: f"{f.idle:.2f}")
    line("bytes downloaded per row", lambda f: f"{f.bytes / max(1, f.rows):.1f}")
    for style in ("short", "medium", "long"):
        line(f"  {style} text (column chunks)", lambda f, st=style: f"{f.bytes_per_row(st):.1f}")
    line("MB downloaded", lambda f: f"{f.bytes / 1e6:,.0f}")
    line("resolver calls per row (x 1,000)", lambda f: f"{f.resolvers / max(1, f.rows) * 1000:.3f}")
    line("resolver calls per config", lambda f: f"{f.resolvers / max(1, f.configs):.2f}")
    line("API calls per config (measure)", lambda f: f"{f.api / max(1, f.configs):.2f}")
    line("crawl: API calls per listed dataset", lambda f: f"{f.crawl_api / max(1, f.listed):.3f}")
    line("crawl: resolver calls per listed dataset", lambda f: f"{f.crawl_resolvers / max(1, f.listed):.3f}")
    for bucket, quota in zip(("api", "resolvers"), PLANS["free"]):
        line(f"429s, {bucket} bucket (quota {quota:,} per window)", lambda f, b=bucket: f"{f.windows(b)[1]}")
    print(f"\nquota use per window (free plan enforced, a {WINDOW_S} s window in {WINDOW_S / args.compression:.0f} real s):")
    for name, k, f in runs:
        for bucket in ("api", "resolvers"):
            served, refused = f.windows(bucket)
            print(f"  {name} #{k + 1} {bucket:<9} served {served}, refused {refused}")

    best = {name: min(fs, key=lambda f: f.measure_wall) for name, fs in figures.items()}
    print(f"\nprojection: {mix.listed:,} listed, {mix.eligible:,} eligible configs, {mix.rows / 1e9:.2f} billion rows ("
          + ", ".join(f"{st} text {n / max(1, mix.rows):.0%}" for st, n in sorted(mix.style_rows.items())) + "); "
          f"two-core machines of {args.workers} worker processes; {args.bandwidth_mb:.0f} MB/s a machine (assumed); "
          "each executor's fastest run")
    print(f"{'':34}{'compute h':>10}{'unshared':>9}{'bytes h':>9}{'crawl h':>9}{'dl quota h':>11}{'crawl+measure h':>16}"
          f"{'overlapped h':>13}  limit")
    for name, f in best.items():
        for plan in PLANS:
            for n in machines:
                p = projection(f, mix, n, plan, args.bandwidth_mb)
                print(f"{name + ', ' + plan + ', ' + str(n) + ' machine(s)':34}{p['compute']:>10.1f}{p['quiet']:>9.1f}{p['bytes']:>9.1f}"
                      f"{p['crawl']:>9.1f}{p['quota']:>11.1f}{p['sequential']:>16.1f}{p['overlapped']:>13.1f}  {p['limit']}")
    print("\nincremental night (1% of the datasets changed), one machine")
    print(f"{'':34}{'compute min':>12}{'unshared':>9}{'bytes min':>10}{'crawl min':>10}{'dl quota min':>13}{'total min':>10}  limit")
    for name, f in best.items():
        for plan in PLANS:
            p = projection(f, mix, 1, plan, args.bandwidth_mb, share=0.01)
            print(f"{name + ', ' + plan:34}{p['compute'] * 60:>12.1f}{p['quiet'] * 60:>9.1f}{p['bytes'] * 60:>10.1f}{p['crawl'] * 60:>10.1f}"
                  f"{p['quota'] * 60:>13.1f}{p['sequential'] * 60:>10.1f}  {p['limit']}")

    print("\ntargets")
    for name, f in best.items():
        p = projection(f, mix, TARGET_FIRST_MACHINES, "free", args.bandwidth_mb)
        night = projection(f, mix, 1, "free", args.bandwidth_mb, share=0.01)
        verdict = lambda hours, target: "met" if hours <= target else "NOT met"  # noqa: E731
        print(f"  {name}: first survey, {TARGET_FIRST_MACHINES} machines, free token: compute {p['compute']:.1f} h "
              f"({verdict(p['compute'], TARGET_FIRST_H)}), quota {p['crawl'] + p['quota']:.1f} h (crawl {p['crawl']:.1f} + "
              f"downloads {p['quota']:.1f}; {verdict(p['crawl'] + p['quota'], TARGET_FIRST_H)}), bytes {p['bytes']:.1f} h; "
              f"crawl then measure {p['sequential']:.1f} h ({verdict(p['sequential'], TARGET_FIRST_H)}, target "
              f"{TARGET_FIRST_H:.0f} h), during the crawl (run --measure-during-crawl) {p['overlapped']:.1f} h "
              f"({verdict(p['overlapped'], TARGET_FIRST_H)}; quota {p['overlapped_quota']:.1f} h); "
              f"the measurement's limit: {p['limit']}")
        quiet = max(p["quiet"], p["bytes"], p["quota"])
        print(f"  {name}: the same on unshared cores (CPU-bound): compute {p['quiet']:.1f} h "
              f"({verdict(p['quiet'], TARGET_FIRST_H)}); crawl then measure {p['crawl'] + quiet:.1f} h "
              f"({verdict(p['crawl'] + quiet, TARGET_FIRST_H)}), during the crawl "
              f"{max(p['quiet'], p['bytes'], p['overlapped_quota']):.1f} h "
              f"({verdict(max(p['quiet'], p['bytes'], p['overlapped_quota']), TARGET_FIRST_H)}); the measurement's limit: "
              f"{'compute' if quiet == p['quiet'] else 'bytes' if quiet == p['bytes'] else 'quota'}")
        print(f"  {name}: night, one machine, free token: {night['sequential'] * 60:.0f} min "
              f"({verdict(night['sequential'] * 60, TARGET_NIGHT_MIN)}, target {TARGET_NIGHT_MIN:.0f} min); "
              f"the measurement's limit: {night['limit']}; on unshared cores "
              f"{(night['crawl'] + max(night['quiet'], night['bytes'], night['quota'])) * 60:.0f} min")
    if share is not None:
        total, unmeasured, by_column, _ = share
        print(f"\nbytes downloaded in columns the measurement never measures (only the fingerprint reads them): "
              f"{unmeasured / max(1, total):.1%} of {total / 1e6:,.0f} MB ("
              + ", ".join(f"{name} {size / 1e6:,.1f} MB" for name, size in sorted(by_column.items())) + ")")
    print("(slot s: seconds of one worker process; compute h = (rows x b + configs x (a + slot s outside the job)) / "
          "slots / machines; unshared: compute h x the survey's CPU share of the cores, the same work CPU-bound on cores "
          "nobody else uses; quota is the token's, shared by every machine; crawl+measure: as `run` does, the crawl "
          "first; overlapped: if the measurement ran beside the crawl)")


if __name__ == "__main__":
    main()
