"""A silent Hub and a dripping file server: how long a command is held, baseline beside new, in one run.

Two targets, each measured with default settings for both sides, at the same time (one stand-in
per side, on 127.0.0.1):

1. ``audit owner/name`` against a Hub that accepts connections and never answers: the new side
   should end in at most 90 s, with one line and exit code 4;
2. ``run --job-timeout 15 --max-hours 0.01`` against a Hub whose file bodies drip (1 byte every
   0.5 s), after a clean crawl: the new side should end by ``--max-hours`` plus 60 s (96 s).

The baseline is another install of hubsurvey (default: the system ``python``, whose editable
install is the main checkout); the new side is this interpreter. A side still running at the cap
is stopped and reported as such.

    python benchmarks/bench_silent_hub.py [--baseline-python python] [--cap 200]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from hubsurvey_standin import Faults, Scope, StandinHub, generate_minihub

CLI = "import sys; from hubsurvey.cli import app; sys.argv[0] = 'hubsurvey'; app()"
MAX_HOURS = 0.01


def run_cli(python: str, args: list[str], env: dict[str, str], cwd: Path, cap: float) -> dict:
    started = time.monotonic()
    proc = subprocess.Popen([python, "-c", CLI, *args], env=env, cwd=cwd, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        _, err = proc.communicate(timeout=cap)
        code: int | str = proc.returncode
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
        code = f"still running at {cap:.0f} s (stopped)"
    lines = [line for line in err.strip().splitlines() if line.strip()]
    return {"seconds": round(time.monotonic() - started, 1), "exit": code, "stderr_lines": len(lines),
            "last_line": lines[-1][:160] if lines else ""}


def side_env(hub: StandinHub, work: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HUBSURVEY_", "HF_"))}
    env.update({"HF_ENDPOINT": hub.url, "HUBSURVEY_CACHE_DIR": str(work / "cache"), "HF_HUB_DISABLE_TELEMETRY": "1"})
    return env


def silent_audit(python: str, root: Path, work: Path, cap: float) -> dict:
    with StandinHub(root, faults=Faults(hang_every=1)) as hub:
        return run_cli(python, ["audit", "mini-nlp/toy_ner", "--db", str(work / "audit.duckdb")],
                       side_env(hub, work), work, cap)


def dripping_run(python: str, root: Path, work: Path, cap: float) -> dict:
    with StandinHub(root) as hub:
        env = side_env(hub, work)
        db = str(work / "run.duckdb")
        crawl = run_cli(python, ["crawl", "--rate", "0", "--file-rate", "0", "--db", db], env, work, cap)
        if crawl["exit"] != 0:
            return {"crawl failed": crawl}
        hub.set_faults(Faults(drip_ms=500, scope=Scope(categories=frozenset({"resolve_get"}))))
        return run_cli(python, ["run", "--job-timeout", "15", "--max-hours", str(MAX_HOURS), "--no-crossleaks",
                                "--report-dir", str(work / "out"), "--db", db], env, work, cap)


def both(target, root: Path, baseline: str, cap: float) -> dict[str, dict]:
    results: dict[str, dict] = {}
    with tempfile.TemporaryDirectory() as tmp:
        def one(name: str, python: str) -> None:
            work = Path(tmp) / name
            work.mkdir()
            results[name] = target(python, root, work, cap)

        threads = [threading.Thread(target=one, args=(n, p)) for n, p in (("baseline", baseline), ("new", sys.executable))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--baseline-python", default="python", help="the baseline's interpreter [python]")
    parser.add_argument("--cap", type=float, default=200.0, help="seconds after which a side is stopped [200]")
    args = parser.parse_args()
    print(f"load average: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f}")
    with tempfile.TemporaryDirectory() as tmp:
        root = generate_minihub(Path(tmp) / "hub", seed=0)
        for title, target, goal in (
            ("audit owner/name, silent Hub", silent_audit, "<= 90 s, one line, exit 4"),
            (f"run --job-timeout 15 --max-hours {MAX_HOURS}, dripping files", dripping_run,
             f"<= {MAX_HOURS * 3600 + 60:.0f} s (--max-hours + 60 s)"),
        ):
            results = both(target, root, args.baseline_python, args.cap)
            print(f"\n{title} (target: {goal})")
            for side in ("baseline", "new"):
                print(f"  {side:9} {json.dumps(results[side])}")
    print(f"\nload average: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f}")


if __name__ == "__main__":
    main()
