"""Benchmark: the split fingerprint's cost, beside the measurement it is stored with, in the same run.

    python benchmarks/bench_fingerprint.py [--rows 1000000] [--out /tmp/hubsurvey-bench] [--shared DIR]

Two configs: the near-duplicate benchmark's data (``near_data.py``, 1M rows by default) and the
largest shared config by rows (unimelb-nlp/wikiann ``en``: token lists and tag lists). For each, side
by side: the engine's measurement of every figure (LLE, exact, near; no examples), the baseline; the
fingerprint of all its splits (``hubsurvey.core.fingerprint``, read from the Parquet files, what
``audit`` adds); and the plain-Python reference of the same definition (``tests/fingerprint_reference.py``),
which the vectorized code must equal. Prints seconds, the fingerprint's share of the measurement,
and the 1-minute load average before and after (the machine is shared).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))


def bench(folder: Path, config: str) -> dict[str, object]:
    import pyarrow.parquet as pq
    from fingerprint_reference import reference_fingerprint

    from hubsurvey.core.fingerprint import files_fingerprint
    from hubsurvey.core.roles import resolve_roles
    from hubsurvey.survey.metrics import Engine
    from hubsurvey.survey.sources import FolderSource, check_config

    data = check_config(FolderSource(folder).load(config))
    roles = resolve_roles(data.features, data.dataset_id, data.config, None)
    started = time.perf_counter()
    with Engine(data) as engine:
        engine.measure(roles.text_columns, roles.label_columns)
    measured = time.perf_counter() - started
    started = time.perf_counter()
    fingerprints = {name: files_fingerprint(split.files) for name, split in data.splits.items()}
    fingerprinted = time.perf_counter() - started
    started = time.perf_counter()
    reference = {}
    for name, split in data.splits.items():
        table = pq.read_table(list(split.files))
        reference[name] = reference_fingerprint(table.schema.names, table.to_pylist())
    referenced = time.perf_counter() - started
    return {"rows": sum(s.num_rows for s in data.splits.values()), "measure": measured, "fingerprint": fingerprinted,
            "reference": referenced, "equal": fingerprints == reference, "test": fingerprints["test"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--out", type=Path, default=Path("/tmp/hubsurvey-bench"))
    parser.add_argument("--shared", type=Path, default=HERE.parents[1] / "shared" / "datasets")
    args = parser.parse_args()
    from near_data import generate_near

    cases = [(f"near_data {args.rows}", generate_near(args.out, args.rows)[0], "default")]
    if (args.shared / "unimelb-nlp__wikiann").is_dir():
        cases.append(("wikiann en (shared)", args.shared / "unimelb-nlp__wikiann", "en"))
    print(f"{'config':22}{'rows':>10}{'measure s':>11}{'fingerprint s':>15}{'share':>8}{'reference s':>13}"
          f"{'equal':>7}  load before/after")
    for name, folder, config in cases:
        load = os.getloadavg()[0]
        r = bench(folder, config)
        share = f"{r['fingerprint'] / r['measure']:.0%}"  # type: ignore[operator]
        print(f"{name:22}{r['rows']:>10}{r['measure']:>11.2f}{r['fingerprint']:>15.2f}{share:>8}{r['reference']:>13.2f}"
              f"{r['equal']!s:>7}  {load:.2f}/{os.getloadavg()[0]:.2f}   test {r['test']}")


if __name__ == "__main__":
    main()
