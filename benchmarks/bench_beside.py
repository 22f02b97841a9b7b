"""Benchmark: a config's measurement time with and without the figures beside the text comparison
(blank rows, groups shared across splits, time order), in the same run.

    python benchmarks/bench_beside.py [--rows 1000000] [--repeat 4]

Generated data, 80% / 10% / 10%: a text of 8 words drawn from 50,000, a ``thread_id`` of 20,000
threads (a group column, inferred: an id-like name whose values repeat), a ``created_at`` date over
2,000 days (a date column) and an integer label. Each round measures LLE and the exact method, once
alone (the baseline) and once with rows-2026, groups-2026 and time-2026, the two sides alternated
(a change of load hits both alike); the medians are printed with the load average. The LLE and exact
figures must be identical with and without: the script exits 1 otherwise.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np
import pyarrow as pa

from hubsurvey.core import figures
from hubsurvey.survey.measure import measure_config
from hubsurvey.survey.sources import ConfigData, SplitData, check_config


def _split(rng: np.random.Generator, n: int) -> pa.Table:
    words = rng.integers(0, 50_000, size=(n, 8))
    return pa.table({"text": [" ".join(f"w{x}" for x in row) for row in words],
                     "thread_id": [f"t{x}" for x in rng.integers(0, 20_000, n)],
                     "created_at": pa.array(np.datetime64("2020-01-01") + rng.integers(0, 2_000, n).astype("timedelta64[D]")),
                     "label": rng.integers(0, 5, n)})


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=4)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    sizes = {"train": args.rows * 8 // 10, "validation": args.rows // 10, "test": args.rows // 10}
    data = check_config(ConfigData("bench/beside", "default", "r", {s: SplitData(s, s, (), _split(rng, n))
                                                                    for s, n in sizes.items()}, {}, ()))
    base = [figures.LLE_METHOD, figures.EXACT_METHOD]
    sides = {"without": base, "with": [*base, figures.ROWS_METHOD, figures.GROUPS_METHOD, figures.TIME_METHOD]}
    times: dict[str, list[float]] = {"without": [], "with": []}
    found: dict[str, dict] = {}
    for r in range(args.repeat):
        for name in ("without", "with") if r % 2 == 0 else ("with", "without"):
            started = time.perf_counter()
            result = measure_config(data, n_configs=1, source="memory", examples=0, methods=sides[name],
                                    engine_options={"threads": 2})
            times[name].append(time.perf_counter() - started)
            found[name] = result.rows[0]
    kept = [c.name for c in figures.figure_columns() if c.method in base]
    same = all(found["with"][n] == found["without"][n] for n in kept)
    with_, without = statistics.median(times["with"]), statistics.median(times["without"])
    print(f"{args.rows:,} rows, load {os.getloadavg()[0]:.1f}: lle+exact {without:.2f} s, with rows, groups and time "
          f"{with_:.2f} s (+{with_ - without:.2f} s, {100 * (with_ - without) / without:.0f}%); "
          f"groups {[(g['group_column'], g['test_rows_group_in_train']) for g in found['with']['groups']]}; "
          f"dates {[(d['date_column'], d['train_rows_after_test_start']) for d in found['with']['dates']]}; "
          f"LLE and exact figures {'identical' if same else 'DIFFERENT'}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
