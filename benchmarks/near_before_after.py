"""Benchmark: the near stage and the whole ``audit`` process of this checkout against another install's, interleaved.

    python benchmarks/near_before_after.py --baseline-python /usr/bin/python3 [--out /tmp/hubsurvey-bench-near] [--repeat 3]

``bench_near.py`` compares the compiled pass with the numpy path, datasketch and rensa inside one
checkout; this script puts two checkouts side by side on the same data, in the same run: the
baseline install (``--baseline-python``: a Python whose ``hubsurvey`` is the other checkout, e.g.
main) and this one (the Python running the script). Each side's near stage (``bench_near.py
--child`` of its own checkout) and its whole ``audit --json`` and ``audit --no-near`` processes
run one after the other, ``--repeat`` times, alternating; the medians are printed with the
1-minute load average when each run started and ended.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from bench_near import _run, median_runs


def _checkout_of(python: str) -> Path:
    """The checkout a Python's ``hubsurvey`` is installed from (run outside any checkout)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = subprocess.run([python, "-c", "import hubsurvey, pathlib; print(pathlib.Path(hubsurvey.__file__).parents[1])"],
                             capture_output=True, text=True, check=True, cwd=tmp)
    return Path(out.stdout.strip())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--baseline-python", required=True)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--out", type=Path, default=Path("/tmp/hubsurvey-bench-near"))
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=900)
    args = parser.parse_args()
    sides = {"baseline": args.baseline_python, "this": sys.executable}
    checkouts = {name: _checkout_of(python) for name, python in sides.items()}
    here = Path(__file__).resolve()
    made = subprocess.run([sys.executable, str(here.parent / "bench_near.py"), "--generate", "--rows", str(args.rows),
                           "--out", str(args.out)], check=True, capture_output=True, text=True)
    folder = Path(made.stdout.strip().splitlines()[-1])
    print(f"dataset: {folder}; baseline: {checkouts['baseline']}; this: {checkouts['this']}")
    runs: dict[str, list[dict]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        os.chdir(tmp)  # `python -m hubsurvey.cli` in a checkout would import that checkout, not the install
        for name, python in sides.items():  # untimed: each checkout's kernels compiled into numba's cache
            _run([python, str(checkouts[name] / "benchmarks" / "bench_near.py"), "--child", str(folder)], args.timeout)
        for i in range(args.repeat):
            for name, python in sides.items():
                bench = str(checkouts[name] / "benchmarks" / "bench_near.py")
                runs.setdefault(f"{name}: near stage", []).append(_run([python, bench, "--child", str(folder)], args.timeout))
                for kind, extra in (("audit", []), ("audit --no-near", ["--no-near"])):
                    db = str(Path(tmp) / f"{name}-{kind[-7:]}-{i}.duckdb")
                    cmd = [python, "-m", "hubsurvey.cli", "audit", str(folder), "--json", "--examples", "0", "--db", db, *extra]
                    runs.setdefault(f"{name}: {kind}", []).append(_run([sys.executable, str(here.parent / "bench_near.py"),
                                                                         "--measure", *cmd], args.timeout))
    print(f"\nmedian of {args.repeat}, alternating")
    print(f"{'':27}{'wall s':>8}{'cpu s':>8}{'rows/s':>10}{'peak MB':>9}  loads")
    medians = {}
    for name, rs in runs.items():
        median, loads = median_runs(rs)
        if median is None:
            print(f"{name:27}{rs[0].get('error', '?')[:60]}")
            continue
        wall = medians[name] = median["seconds"]
        cpu = f"{median['cpu']:8.1f}" if "cpu" in median else f"{'':8}"
        rows = next((r["rows"] for r in rs if "rows" in r), None)
        rate = f"{rows / wall:10,.0f}" if rows is not None else f"{'':10}"
        print(f"{name:27}{wall:8.1f}{cpu}{rate}{median['peak_rss_mb']:9.0f}  {loads}")
    for name in sides:
        if f"{name}: audit" in medians and f"{name}: audit --no-near" in medians:
            print(f"{name}: audit / audit --no-near: {medians[f'{name}: audit'] / medians[f'{name}: audit --no-near']:.2f}x")
    stage = [runs.get(f"{name}: near stage", [{}])[0] for name in sides]
    if all("figures" in s for s in stage):
        same = stage[0]["figures"] == stage[1]["figures"] and stage[0]["near"] == stage[1]["near"] \
            and stage[0]["recall"] == stage[1]["recall"]
        print(f"near figures, provenance and recall identical on both sides: {same}; recall {json.dumps(stage[1]['recall'])}")


if __name__ == "__main__":
    main()
