"""Benchmark: a whole ``audit`` of the 1M-row benchmark, against the same code with its memory as it was.

    python benchmarks/bench_audit.py [--pairs 7] [--rows 1000000] [--out /tmp/hubsurvey-bench]

Runs ``hubsurvey audit DIR --json --examples 0`` (a fresh DB each run) as whole processes, in
alternating pairs (new, old, new, old...), with the near stage and without it (``--no-near``):

- "new" is the console command as it is;
- "old" is the same code with numpy's arrays of 4 MB or more on 2 MB pages (numpy's default,
  which ``hubsurvey.core.memory.ordinary_pages`` turns off) and the cross-dataset fingerprint files
  dictionary-encoded in every column (pyarrow's default), as they were.

It prints, per side, the median wall seconds, CPU seconds (user and system, the kernel's own
accounting of the finished process) and peak memory, the median of the wall ratios taken pair by
pair, and whether both sides stored the same figures.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_engine import generate
from bench_startup import arguments, figures

NEW = [sys.executable, "-m", "hubsurvey.cli"]
OLD = [sys.executable, "-c", """
import sys, pyarrow.parquet as pq
import hubsurvey.core.store as store, hubsurvey.survey.metrics as metrics
metrics.ordinary_pages = lambda: None  # numpy's 2 MB pages, as before

class _Parquet:  # pyarrow's default encoding of the fingerprint files, as before
    def __getattr__(self, name):
        return getattr(pq, name)
    def write_table(self, table, where, use_dictionary=None, **options):
        return pq.write_table(table, where, **options)

store.pq = _Parquet()
from hubsurvey.cli import main
sys.argv[0] = "hubsurvey"
main()
"""]


def run(argv: list[str]) -> tuple[float, float, float, str]:
    """(wall s, CPU s, peak MB, stdout) of one whole process."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        started = time.perf_counter()
        process = subprocess.Popen(argv, stdout=out, stderr=err, text=True)
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - started
        process.returncode = os.waitstatus_to_exitcode(status)
        if process.returncode != 0:
            err.seek(0)
            raise SystemExit(f"{' '.join(argv[:4])}... exited {process.returncode}: {err.read()[-500:]}")
        out.seek(0)
        return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, out.read()


def pairs(name: str, data: Path, extra: list[str], n: int, out: Path) -> None:
    sides: dict[str, list[tuple[float, float, float]]] = {"new": [], "old": []}
    ratios, same = [], True
    for i in range(n):
        got = {}
        for side, command in (("new", NEW), ("old", OLD)):
            db = out / f"audit-{side}-{i}.duckdb"
            wall, cpu, peak, stdout = run([*command, "audit", str(data), "--db", str(db), "--json", "--examples", "0", *extra])
            sides[side].append((wall, cpu, peak))
            got[side] = (wall, figures(stdout))
        ratios.append(got["new"][0] / got["old"][0])
        same = same and got["new"][1] == got["old"][1]

    def median(side: str, k: int) -> float:
        return statistics.median(run[k] for run in sides[side])
    print(f"{name:22}" + "".join(f" {side} {median(side, 0):5.2f} s wall {median(side, 1):5.2f} s CPU {median(side, 2):4.0f} MB  |"
                                 for side in sides)
          + f" new/old {statistics.median(ratios):.2f}x (pairs: {min(ratios):.2f}-{max(ratios):.2f})  same figures: {same}",
          flush=True)


def main() -> None:
    args = arguments(__doc__)
    data = generate(args.out, args.rows)
    with tempfile.TemporaryDirectory(prefix="bench-audit-") as scratch:
        run([*NEW, "audit", str(data), "--db", f"{scratch}/warm.duckdb", "--json", "--examples", "0"])  # compiled kernels
        with open("/proc/loadavg") as f:
            print(f"load average before: {' '.join(f.read().split()[:3])}")
        pairs(f"audit of {args.rows:,} rows", data, [], args.pairs, Path(scratch))
        pairs("audit --no-near", data, ["--no-near"], args.pairs, Path(scratch))
        with open("/proc/loadavg") as f:
            print(f"load average after: {' '.join(f.read().split()[:3])}")


if __name__ == "__main__":
    main()
