"""Benchmark: survey the 23 configs of ../shared/datasets served by the local Hub stand-in.

    python benchmarks/bench_survey.py [--shared ../shared/datasets]

Runs the whole pipeline (crawl → queue → download → measure → store, report off) with a cold and a
warm huggingface_hub cache, with 1 and 2 workers, each on a fresh DB. The baseline, in the same
run, is the measurement alone: ``hubsurvey.survey.audit.audit`` on the local folders, one after the other,
with no Hub, no queue and no DB. The per-config overhead is what the pipeline adds to it.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--shared", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "datasets")
    args = parser.parse_args()
    if not (args.shared / "index.json").exists():
        raise SystemExit(f"{args.shared}: no shared datasets here")

    from hubsurvey.core.hub import HubClient
    from hubsurvey.pipeline import RunOptions, run_survey
    from hubsurvey.survey.audit import audit
    from hubsurvey_standin import StandinHub

    work = Path(tempfile.mkdtemp(prefix="hubsurvey-bench-survey-"))
    started = time.perf_counter()
    configs = 0
    for folder in sorted(p for p in args.shared.iterdir() if p.is_dir()):
        configs += len(audit(str(folder)).results)
    baseline = time.perf_counter() - started

    results = []
    with StandinHub(args.shared) as hub:
        for workers in (1, 2):
            cache = work / f"cache-{workers}"
            for label in ("cold", "warm"):
                if label == "cold":
                    shutil.rmtree(cache, ignore_errors=True)
                db = work / f"{label}-{workers}.duckdb"
                client = HubClient(endpoint=hub.url, token=False, rate=0, file_rate=0, cache_dir=cache)
                t = time.perf_counter()
                summary = run_survey(db, client, None, RunOptions(workers=workers))
                wall = time.perf_counter() - t
                assert summary.failed == 0 and summary.done == configs, summary
                results.append((label, workers, wall, summary))

    print(f"{configs} configs; baseline (measurement only, sequential, local files): {baseline:.1f} s, "
          f"{baseline / configs:.2f} s/config\n")
    print(f"{'cache':<6}{'workers':>8}{'wall s':>9}{'configs/min':>13}{'overhead s/config':>19}{'measure s (sum)':>17}")
    for label, workers, wall, summary in results:
        overhead = (wall - baseline) / configs
        print(f"{label:<6}{workers:>8}{wall:>9.1f}{configs / wall * 60:>13.0f}{overhead:>19.2f}{summary.measure_seconds:>17.1f}")
    print("\noverhead = (pipeline wall - baseline wall) / configs; negative means the workers' parallelism "
          "more than pays for crawl, downloads and the queue.")


if __name__ == "__main__":
    main()
