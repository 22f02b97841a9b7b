"""Benchmark: opening the results DB for writing, a fresh file and an existing one, this checkout
against the hubsurvey installed beside another Python, in alternating pairs.

    python benchmarks/bench_store_open.py --before PYTHON [--pairs 5] [--opens 15]

Every command that writes (``audit``, ``run``, ``crawl``, ``crossleaks``...) opens the DB this way,
and so does nearly every test. Each side runs in a process of its own: it opens ``--opens`` fresh
DBs and opens each again, and prints the median of each. ``PYTHON``'s hubsurvey is the code to
compare with; one way to get it (as ``bench_outputs.py`` says)::

    pip install --no-deps --target /tmp/before-pkg <checkout of the code before>
    printf '#!/bin/sh\\nPYTHONPATH=/tmp/before-pkg exec %s "$@"\\n' "$(which python)" > /tmp/before-python

It prints, per side, the median over the pairs of each median, the median of the ratios taken pair
by pair, and whether both sides made the same schema: every table's columns in order (name, type,
nullability, default), every constraint, and every view's columns.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys

SIDE = r"""
import json, os, statistics, sys, tempfile, time
import duckdb
from hubsurvey.core.store import Store

opens = int(sys.argv[1])
folder = tempfile.mkdtemp()
Store(os.path.join(folder, "warm.duckdb")).close()  # imports and first-use costs out of the figures
fresh, again = [], []
for i in range(opens):
    path = os.path.join(folder, f"s{i}.duckdb")
    started = time.perf_counter()
    Store(path).close()
    fresh.append(time.perf_counter() - started)
    started = time.perf_counter()
    Store(path).close()
    again.append(time.perf_counter() - started)
con = duckdb.connect(path, read_only=True)
schema = {
    "columns": con.execute(
        "SELECT table_name, column_index, column_name, data_type, is_nullable, column_default FROM duckdb_columns() "
        "WHERE database_name = current_database() ORDER BY ALL").fetchall(),
    "constraints": con.execute(
        "SELECT table_name, constraint_type, constraint_text FROM duckdb_constraints() "
        "WHERE database_name = current_database() ORDER BY ALL").fetchall(),
}
print(json.dumps({"fresh": statistics.median(fresh), "existing": statistics.median(again), "schema": schema},
                 default=str))
"""


def side(python: str, opens: int) -> dict:
    done = subprocess.run([python, "-c", SIDE, str(opens)], capture_output=True, text=True, cwd="/")
    if done.returncode != 0:
        raise SystemExit(f"{python} exited {done.returncode}: {done.stderr[-500:]}")
    return json.loads(done.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", required=True, help="a Python whose hubsurvey is the baseline")
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--opens", type=int, default=15, help="DBs opened by each side in each pair")
    args = parser.parse_args()
    new: list[dict] = []
    before: list[dict] = []
    for _ in range(args.pairs):
        new.append(side(sys.executable, args.opens))
        before.append(side(args.before, args.opens))
    same = all(n["schema"] == b["schema"] for n, b in zip(new, before))
    for what, label in (("fresh", "a fresh DB"), ("existing", "an existing DB")):
        a = statistics.median(n[what] for n in new)
        b = statistics.median(o[what] for o in before)
        ratios = sorted(n[what] / o[what] for n, o in zip(new, before))
        print(f"open {label:15} new {a * 1000:5.0f} ms | before {b * 1000:5.0f} ms | "
              f"new/before {statistics.median(ratios):.2f}x (pairs {ratios[0]:.2f}-{ratios[-1]:.2f})  same schema: {same}")


if __name__ == "__main__":
    main()
