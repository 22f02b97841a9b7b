"""The near stage's golden check: `hubsurvey audit --json` on every shared config, by two installs.

    python benchmarks/near_audit_compare.py --python /usr/bin/python3 --out /tmp/near-before
    python benchmarks/near_audit_compare.py --python /work/venv-x/bin/python --out /tmp/near-after
    python benchmarks/near_audit_compare.py --compare /tmp/near-before /tmp/near-after

The first two write one ``<dataset>__<config>.json`` per config (each audit in its own process, its
own throw-away DB); ``--compare`` says which differ. The provenance keys the compiled pass added
(``ADDED``: the text cap and how many texts it cut) are the only keys allowed to be new, and only
with the values a config whose texts all fit gives them.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

SHARED = Path(os.environ.get("HUBSURVEY_SHARED_DATASETS", Path(__file__).resolve().parents[2] / "shared" / "datasets"))
#: near.parameters keys new with the compiled pass: the cap, and that no text of a shared config reached it
ADDED = {"max_text_chars": 1_000_000, "texts_cut": 0}


def run(python: str, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for entry in json.loads((SHARED / "index.json").read_text()):
        folder = SHARED / entry["id"].replace("/", "__")
        for config in entry["configs"]:
            with tempfile.TemporaryDirectory() as tmp:
                proc = subprocess.run([python, "-m", "hubsurvey.cli", "audit", str(folder), "--config", config, "--json",
                                       "--db", str(Path(tmp) / "r.duckdb")], capture_output=True, text=True, cwd=tmp)
            name = f"{folder.name}__{config}.json"
            if proc.returncode:
                print(f"{name}: exit {proc.returncode}: {proc.stderr.strip()[-300:]}")
            (out / name).write_text(proc.stdout)
            print(name, "written", flush=True)


def _without_added(rows: list[dict]) -> tuple[list[dict], list[str]]:
    """The rows without the added keys, and any added key whose value is not the expected one."""
    wrong = []
    for row in rows:
        parameters = (row.get("near") or {}).get("parameters") or {}
        for key, value in ADDED.items():
            if key in parameters and parameters.pop(key) != value:
                wrong.append(key)
    return rows, wrong


def compare(before: Path, after: Path) -> int:
    files = sorted(p.name for p in before.glob("*.json"))
    differ = 0
    for name in files:
        old, wrong_before = _without_added(json.loads((before / name).read_text()))  # a before run may hold them too
        new, wrong = _without_added(json.loads((after / name).read_text()))
        wrong += wrong_before
        if old != new or wrong:
            differ += 1
            print(f"DIFFERS: {name} {wrong or ''}")
    print(f"{len(files) - differ} of {len(files)} configs identical")
    return 1 if differ or not files else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--compare", nargs=2, type=Path, metavar=("BEFORE", "AFTER"))
    args = parser.parse_args()
    if args.compare:
        sys.exit(compare(*args.compare))
    run(args.python, args.out)


if __name__ == "__main__":
    main()
