"""Contamination with benchmarks, the whole check in one place: index the benchmarks, check the
surveyed configs against them, and the two steps a run takes.

The engine (the 13-gram scan, the index) is :mod:`hubsurvey.survey.contamination`; a job checks
its own config while its files are on disk (:func:`hubsurvey.survey.jobs.run_job`, rows written in
the job's transaction by :meth:`hubsurvey.core.queue.JobQueue.record`). Here:

- :class:`BenchmarksStep` (``run --benchmarks FILE``): index the benchmarks into the run's scratch
  folder, before the jobs, which load it (:func:`saved_index`);
- :class:`ContaminationStep`: after the jobs, check the configs they did not (measured before
  this run, or by a run without these benchmarks);
- :func:`run_contamination`: ``hubsurvey contamination``, the check alone, as a run of its own.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hubsurvey import __version__
from hubsurvey.core.errors import UsageError
from hubsurvey.core.hub import HubClient
from hubsurvey.core.queue import JobSettings, QueuedJob
from hubsurvey.core.runs import Runs
from hubsurvey.core.steps import Counts, RunContext, RunEnd, Step
from hubsurvey.core.store import Store, now
from hubsurvey.survey import contamination as bench
from hubsurvey.survey.jobs import JobSpec, discard_downloads, download, error_outcome
from hubsurvey.survey.sources import config_from_files

log = logging.getLogger(__name__)

#: the run's saved benchmark index, in its scratch folder
INDEX_FOLDER = "benchmarks-index"


def saved_index(ctx: RunContext) -> str | None:
    """The folder of the benchmark index the run's :class:`BenchmarksStep` saved (None: none)."""
    if not ctx.options.benchmarks or ctx.scratch is None or not (ctx.scratch / INDEX_FOLDER).is_dir():
        return None
    return str(ctx.scratch / INDEX_FOLDER)


def check_benchmarks_file(benchmarks_file: str | Path | None, executor: str = "local") -> list[bench.Benchmark]:
    """The benchmarks of a file (None or 'default': the shipped one), checked before a run starts:
    a bad file is refused in one line (exit 2), and so is a local benchmark on an executor other than
    ``local``: its jobs would carry the private items to the cluster's machines."""
    benchmarks = bench.load_benchmarks(None if benchmarks_file in (None, "default") else benchmarks_file)
    local = [b.id for b in benchmarks if b.is_local]
    if local and executor != "local":
        raise UsageError(f"{benchmarks_file}: local benchmarks ({', '.join(local)}) never leave this machine: run "
                         f"them with --executor local, or `hubsurvey contamination` here after the {executor} run")
    return benchmarks


def not_indexed(store: Store, run_id: str | None) -> list[str]:
    """One line per benchmark the run could not index (recorded as failed in ``benchmarks``)."""
    rows = store.records("SELECT benchmark_id, benchmark_config, benchmark_split, error_message FROM benchmarks "
                         "WHERE status = 'failed' AND run_id IS NOT DISTINCT FROM $r ORDER BY ALL", {"r": run_id})
    out = []
    for r in rows:
        key = f"{r['benchmark_id']}/{r['benchmark_config']}/{r['benchmark_split']}"
        why = r["error_message"] or "not indexed"
        out.append(why if key in why or r["benchmark_id"] in why else f"benchmark {key}: {why}")
    return out


@dataclass
class BenchmarksStep(Step):
    """Index the run's benchmarks file (``run --benchmarks``) for the jobs (indexing records each
    benchmark's revision in the ``benchmarks`` table); its counts: the benchmarks it could not
    index, one line each, when there are any."""

    name: str = "benchmarks"

    def run(self, ctx: RunContext) -> Counts:
        if not ctx.options.benchmarks or ctx.scratch is None:
            return {}
        check_benchmarks_file(ctx.options.benchmarks, ctx.options.executor)
        index_benchmarks(ctx.store, ctx.client, ctx.options.benchmarks, run_id=ctx.run_id).save(
            ctx.scratch / INDEX_FOLDER)
        failed = not_indexed(ctx.store, ctx.run_id)
        return {"not_indexed": failed} if failed else {}

    def errors(self, counts: Counts) -> list[str]:
        return list(counts.get("not_indexed", []))


@dataclass
class ContaminationStep(Step):
    """Check the configs the jobs did not check against the run's benchmarks (once every job is
    done: with jobs left pending, the next run does it)."""

    name: str = "contamination"

    def run(self, ctx: RunContext) -> Counts:
        index = saved_index(ctx)
        if index is None or ctx.left_pending:
            return {}
        ctx.phase("contamination")
        return check_contamination(ctx.store, ctx.client, index, run_id=ctx.run_id, workers=ctx.options.workers).counts()

    def summary(self, counts: Counts, end: RunEnd) -> list[str]:
        # the configs the jobs did not check, when there were any
        return ["contamination: " + json.dumps(counts, sort_keys=True)] if any(counts.values()) else []


def index_benchmarks(store: Store, client: HubClient, benchmarks_file: str | Path | None, *,
                     run_id: str | None = None) -> bench.BenchmarkIndex:
    """Index the benchmarks of a file (None or 'default': the shipped one) through the Hub client and
    record them; a benchmark that cannot be indexed is recorded as failed, the others are used."""
    path = None if benchmarks_file in (None, "default") else benchmarks_file
    index, failed = bench.index_from_hub(bench.load_benchmarks(path), client, log=log)
    indexed_at = now()
    common = {"method": bench.METHOD, "method_version": bench.METHOD_VERSION, "tool_version": __version__,
              "indexed_at": indexed_at, "run_id": run_id}
    rows = [{"benchmark_id": d["id"], "benchmark_config": d["config"], "benchmark_split": d["split"],
             "text_columns": d["text_columns"], "revision_sha": d["revision_sha"], "parquet_sha": d["parquet_sha"],
             "items": d["items"], "short_items": d["short_items"], "status": "indexed", "error_message": None, **common}
            for d in index.describe()]
    rows += [{"benchmark_id": b.id, "benchmark_config": b.config, "benchmark_split": b.split,
              "text_columns": list(b.text_columns), "revision_sha": None, "parquet_sha": None, "items": None,
              "short_items": None, "status": "failed", "error_message": why, **common} for b, why in failed]
    store.record_benchmarks(rows)
    return index


@dataclass
class ContaminationSummary:
    checked: int = 0  # configs checked
    failed: list[str] = field(default_factory=list)  # one line each
    contaminated: int = 0  # (split, benchmark) rows with contaminated rows
    not_indexed: list[str] = field(default_factory=list)  # benchmarks that could not be indexed, one line each

    def counts(self) -> dict[str, Any]:
        return {"configs_checked": self.checked, "configs_failed": len(self.failed), "contaminated_pairs": self.contaminated}


def check_contamination(store: Store, client: HubClient, index: bench.BenchmarkIndex | str | Path, *, run_id: str | None = None,
                        only_missing: bool = True, progress: Callable[[str], None] | None = None,
                        workers: int | None = None) -> ContaminationSummary:
    """Check the surveyed configs (``current_measurements`` read from the Hub) against a benchmark
    index (a ``BenchmarkIndex`` or a saved one's folder): each config's files are downloaded again
    through the job download path (pinned to the Parquet commit it was measured at), scanned and
    deleted, ``workers`` configs at a time (default: one per core; threads: the downloads wait on
    the network and the scan releases the GIL), each written by this thread as it is done.
    ``only_missing``: skip configs already checked against every benchmark at its revision."""
    if not isinstance(index, bench.BenchmarkIndex):
        index = bench.load_index(index)
    checked = [(b.benchmark.id, b.benchmark.config, b.benchmark.split) for b in index.benchmarks]
    summary = ContaminationSummary()
    if not checked:
        return summary
    targets = store.records(
        """SELECT m.dataset_id, m.revision_sha, m.config, any_value(m.text_columns) AS text_columns,
                  any_value(m.parquet_sha) AS parquet_sha, any_value(d.configs) AS configs
           FROM current_measurements m JOIN datasets d USING (dataset_id)
           WHERE m.source = 'hub' GROUP BY m.dataset_id, m.revision_sha, m.config ORDER BY ALL""")
    revisions = {(b.benchmark.id, b.benchmark.config, b.benchmark.split): b.revision_sha for b in index.benchmarks}
    todo = []
    for t in targets:
        if only_missing:
            have = store.query(
                "SELECT DISTINCT benchmark_id, benchmark_config, benchmark_split, benchmark_revision FROM contamination "
                "WHERE dataset_id = $d AND revision_sha = $r AND config = $c",
                {"d": t["dataset_id"], "r": t["revision_sha"], "c": t["config"]})[1]
            if {(i, c, s) for i, c, s, rev in have if rev == revisions[(i, c, s)]} >= set(checked):
                continue
        todo.append(t)
    workers = max(1, workers or os.cpu_count() or 1)

    def check(t: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]] | None, str | None]:
        where = f"{t['dataset_id']} [{t['config']}]"
        if progress:
            progress(where)
        try:
            return t, _contamination_rows(t, client, index, run_id, threads=1 if workers > 1 else None), None
        except Exception as e:  # one config that cannot be read never stops the check
            return t, None, error_outcome(e, where).message or where

    pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="contamination")
    try:
        for t, rows, error in pool.map(check, todo):  # in order; each config's rows in one write
            if rows is None:
                summary.failed.append(error or t["dataset_id"])
                continue
            store.replace_contamination(t["dataset_id"], t["revision_sha"], t["config"], checked, rows)
            summary.checked += 1
            summary.contaminated += sum(1 for r in rows if r["contaminated_rows"])
    finally:  # stopped (Ctrl-C, an error): the configs not yet started are dropped, not checked first
        pool.shutdown(wait=True, cancel_futures=True)
    return summary


def _contamination_rows(t: dict[str, Any], client: HubClient, index: bench.BenchmarkIndex, run_id: str | None,
                        threads: int | None) -> list[dict[str, Any]]:
    """One surveyed config's contamination rows: download its splits (the job path), scan, delete."""
    configs = json.loads(t["configs"]) if isinstance(t["configs"], str) else (t["configs"] or {})
    files = {s: v["files"] for s, v in configs.get(t["config"], {}).items()}
    job = QueuedJob(f"{t['dataset_id']}@{t['revision_sha']}/{t['config']}", t["dataset_id"], t["revision_sha"],
                    t["config"], len(configs), files, parquet_sha=t["parquet_sha"])
    spec = local = JobSpec(job, JobSettings(hub=client.settings))
    try:
        local = download(spec, client)
        data = config_from_files(job.dataset_id, job.config, job.revision_sha, local.local_files or {})
        return bench.config_rows(data, list(t["text_columns"]), index, run_id=run_id, threads=threads)
    finally:
        discard_downloads(local)


def run_contamination(db: str | Path, client: HubClient, benchmarks_file: str | Path | None = None, *,
                      recheck: bool = False, progress: Callable[[str], None] | None = None,
                      workers: int | None = None) -> tuple[bench.BenchmarkIndex, ContaminationSummary]:
    """``hubsurvey contamination``: index the benchmarks, check every surveyed config (those not yet
    checked against them at their revisions, unless ``recheck``); recorded as a ``contamination`` run.
    Returns (the index, the summary)."""
    summary = ContaminationSummary()
    args = {"benchmarks": str(benchmarks_file) if benchmarks_file else "default", "recheck": recheck}
    check_benchmarks_file(benchmarks_file)  # a bad file is refused before the DB is opened
    with Store(db) as store, Runs(store).recording("contamination", args) as recording:
        recording.counts = lambda: summary.counts()
        index = index_benchmarks(store, client, benchmarks_file, run_id=recording.run_id)
        summary = check_contamination(store, client, index, run_id=recording.run_id, only_missing=not recheck,
                                      progress=progress, workers=workers)
        summary.not_indexed = not_indexed(store, recording.run_id)
    return index, summary
