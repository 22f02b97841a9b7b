"""Benchmark: a command's start-up and exit, against the command line as it was before.

    python benchmarks/bench_startup.py [--pairs 7] [--rows 1000000] [--out /tmp/hubsurvey-bench]

Two commands, each run both ways in alternating pairs (new, old, new, old...), as whole processes,
in the same call:

- ``hubsurvey --help``;
- ``hubsurvey audit`` of ``bench_engine.py``'s generated dataset (``--rows``; ``--json --examples 0``,
  a fresh DB each run), whose figures must be the same both ways.

"New" is the console command (``python -m hubsurvey.cli``: ``cli.main``, which imports only the
command it runs and ends without the interpreter's teardown). "Old" is the command line as it was:
every command's module imported first (``cli.command_functions()``), then ``cli.app()``, which ends
as any Python function does. It prints the median wall seconds of each, and the median of the
ratios taken pair by pair (a drift of the machine's speed moves both sides of a pair).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_engine import generate

NEW = [sys.executable, "-m", "hubsurvey.cli"]
OLD = [sys.executable, "-c", "import sys; import hubsurvey.cli as cli; cli.command_functions(); "
                             "sys.argv[0] = 'hubsurvey'; cli.app()"]


def timed(argv: list[str]) -> tuple[float, str]:
    """(wall seconds, stdout) of one whole process."""
    started = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, timeout=600)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv[:4])}... exited {done.returncode}: {done.stderr[-500:]}")
    return wall, done.stdout


def figures(stdout: str) -> list[dict]:
    """The audit's JSON without what differs from run to run (ids, times)."""
    def keep(value):
        if isinstance(value, dict):
            return {k: keep(v) for k, v in value.items() if not k.endswith(("_at", "run_id", "seconds"))}
        return [keep(v) for v in value] if isinstance(value, list) else value
    return keep(json.loads(stdout))


def pairs(name: str, args_of, n: int) -> None:
    """Run ``n`` pairs, print the medians and the pair-by-pair ratio."""
    new, old, ratios, same = [], [], [], True
    for i in range(n):
        a = timed(NEW + args_of(i, "new"))
        b = timed(OLD + args_of(i, "old"))
        new.append(a[0])
        old.append(b[0])
        ratios.append(a[0] / b[0])
        if name.startswith("audit"):
            same = same and figures(a[1]) == figures(b[1])
    line = (f"{name:40} new {statistics.median(new):6.2f} s   old {statistics.median(old):6.2f} s   "
            f"new/old {statistics.median(ratios):.2f}x (pairs: {min(ratios):.2f}-{max(ratios):.2f})")
    print(line + (f"   same figures: {same}" if name.startswith("audit") else ""), flush=True)


def arguments(doc: str) -> argparse.Namespace:
    """``--pairs``, ``--rows`` and ``--out``, as the whole-process audit benchmarks take them."""
    parser = argparse.ArgumentParser(description=doc.split("\n")[0])
    parser.add_argument("--pairs", type=int, default=7)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--out", type=Path, default=Path(tempfile.gettempdir()) / "hubsurvey-bench")
    return parser.parse_args()


def main() -> None:
    args = arguments(__doc__)
    with open("/proc/loadavg") as f:
        print(f"load average before: {' '.join(f.read().split()[:3])}")
    pairs("hubsurvey --help", lambda i, side: ["--help"], args.pairs)
    folder = generate(args.out, args.rows)
    with tempfile.TemporaryDirectory(prefix="hubsurvey-startup-") as tmp:
        pairs(f"audit of {args.rows:,} rows", lambda i, side: ["audit", str(folder), "--json", "--examples", "0",
                                                                "--db", f"{tmp}/{side}-{i}.duckdb"], args.pairs)
    with open("/proc/loadavg") as f:
        print(f"load average after: {' '.join(f.read().split()[:3])}")


if __name__ == "__main__":
    main()
