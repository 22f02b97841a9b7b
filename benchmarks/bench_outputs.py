"""Benchmark: the outputs of a survey (report, site, a publish dry run) as whole processes, this
checkout against the hubsurvey installed beside another Python, in alternating pairs, on one DB.

    python benchmarks/bench_outputs.py --before PYTHON [--db results.duckdb] [--pairs 5]

- ``new``: ``python -m hubsurvey.cli`` of this checkout's install;
- ``before``: the same command run by ``PYTHON``, whose hubsurvey is the code to compare with. One
  way to get it (as ``bench_site.py`` says)::

      pip install --no-deps --target /tmp/before-pkg <checkout of the code before>
      printf '#!/bin/sh\\nPYTHONPATH=/tmp/before-pkg exec %s "$@"\\n' "$(which python)" > /tmp/before-python

Without ``--db``, ``hubsurvey demo`` builds a results DB first, in a temporary folder. For each
command it prints the median wall seconds of each side, the median of the ratios taken pair by pair,
and whether both sides wrote the same files, byte for byte.
"""

from __future__ import annotations

import argparse
import filecmp
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

COMMANDS = {
    "report": ["report", "--out", "{out}"],
    "site": ["site", "--out", "{out}"],
    "publish (dry run)": ["publish", "--repo", "someone/results", "--out", "{out}"],
}


def run(python: str, argv: list[str], cwd: Path) -> float:
    started = time.perf_counter()
    done = subprocess.run([python, "-m", "hubsurvey.cli", *argv], capture_output=True, text=True, cwd=cwd)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{python} {' '.join(argv)} exited {done.returncode}: {done.stderr[-500:]}")
    return wall


def same_files(a: Path, b: Path) -> bool:
    """Whether two folders hold the same files with the same bytes."""
    compared = filecmp.dircmp(a, b)
    if compared.left_only or compared.right_only or compared.funny_files:
        return False
    _, mismatch, errors = filecmp.cmpfiles(a, b, compared.common_files, shallow=False)
    return not mismatch and not errors and all(same_files(a / d, b / d) for d in compared.common_dirs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", required=True, help="a Python whose hubsurvey is the baseline")
    parser.add_argument("--db", type=Path, help="results DB (default: the demo's, built first)")
    parser.add_argument("--pairs", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-outputs-") as scratch_name:
        scratch = Path(scratch_name)
        db = args.db
        if db is None:
            subprocess.run([sys.executable, "-m", "hubsurvey.cli", "demo"], cwd=scratch, check=True, capture_output=True)
            db = scratch / "hubsurvey-demo" / "results.duckdb"
        with open("/proc/loadavg") as f:
            print(f"db: {db}  load average before: {' '.join(f.read().split()[:3])}")
        sides = {"new": sys.executable, "before": args.before}
        for side, python in sides.items():
            where = subprocess.run([python, "-c", "import hubsurvey; print(hubsurvey.__file__)"], cwd=scratch,
                                   capture_output=True, text=True, check=True).stdout.strip()
            print(f"{side}: {where}")
        for name, template in COMMANDS.items():
            walls: dict[str, list[float]] = {side: [] for side in sides}
            ratios, same = [], True
            for i in range(args.pairs):
                outs = {}
                for side, python in sides.items():
                    outs[side] = scratch / f"{name.split()[0]}-{side}-{i}"
                    argv = [part.format(out=outs[side]) for part in template] + ["--db", str(db)]
                    walls[side].append(run(python, argv, scratch))
                ratios.append(walls["new"][-1] / walls["before"][-1])
                same = same and same_files(outs["new"], outs["before"])
            print(f"{name:18} new {statistics.median(walls['new']):5.2f} s | before {statistics.median(walls['before']):5.2f} s"
                  f" | new/before {statistics.median(ratios):.2f}x (pairs {min(ratios):.2f}-{max(ratios):.2f})"
                  f"  same files: {same}", flush=True)
        with open("/proc/loadavg") as f:
            print(f"load average after: {' '.join(f.read().split()[:3])}")


if __name__ == "__main__":
    main()
