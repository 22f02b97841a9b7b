"""Benchmark: hubsurvey's near-duplicate stage end to end, old and new, against datasketch and rensa, in one run.

    python benchmarks/bench_near.py [--rows 1000000] [--out /tmp/hubsurvey-bench] [--repeat 3] [--timeout 900]

The dataset is ``near_data.generate_near``'s: the engine benchmark's 1M rows (800k / 100k / 100k)
with 4,000 near-duplicate pairs planted at known positions (truth.json, each with its exact
Jaccard). Each side runs in its own subprocess (its own peak RSS), one after the other:

- ``compiled``: ``measure_config`` with the near method alone, end to end (read, normalize, the
  compiled pass of ``survey/near.py``, sketch filter, exact verification, the figures), on all
  cores (numba's default: one thread per core);
- ``compiled-warm``: the same in a process that has measured the dataset once already, untimed: a
  survey worker's steady state (its process measures config after config, so numba's kernels, the
  character table and DuckDB are loaded once), where ``compiled`` is a first measurement, as
  ``hubsurvey audit`` makes it. Its peak RSS is the larger of the two measurements';
- ``compiled-1t``: the same on one thread (``NUMBA_NUM_THREADS=1``): its ratio to ``numpy-1t`` is the
  single-thread speed-up, which the machine's load affects far less than a rate;
- ``numpy-1t``: the same stage with the numpy path the compiled pass replaced (``tests/near_numpy.py``:
  one thread, as it always was);
- ``datasketch`` and ``rensa``: datasketch MinHash + MinHashLSH, and rensa's Rust MinHash + LSH, on
  the same shingles, every candidate verified (``bench_near_candidates.py``'s runners; rensa only
  if it is installed);
- ``before`` (with ``--before PYTHON``): the same stage run by hubsurvey as it was before the
  compiled pass, the very stage the rate target's "now about 71k rows/s" measured, installed in an
  environment of its own whose interpreter is ``PYTHON``::

      git worktree add /tmp/before e997ff0^ && python -m venv /tmp/before-env
      /tmp/before-env/bin/pip install -e /tmp/before

  Its rate here says how fast this machine is against the one where the target was set, and the
  benchmark prints the target in this machine's terms.

Then whole processes, median of ``--repeat``: ``hubsurvey audit`` (the compiled pass), the same
with the numpy path, and ``audit --no-near``, each with its peak RSS; and, round by round, what the
near stage adds to an audit (``audit`` less the ``--no-near`` audit of the same round): its seconds,
its share of the audit and its rate.

Prints wall time, CPU time, rows/s, peak RSS and the recall on the planted pairs at J >= 0.8 and
>= 0.6 (precision is 1 by construction: every reported pair is verified), and the 1-minute load
average when each run started and ended: the machine is shared, so rates move with it. A probe
of the machine's own speed (MD5 and a Python loop, code that is not hubsurvey's) is printed at
the start and at the end, so that runs on different days can be compared. The
targets: >= 400,000 rows/s on 2 cores and peak RSS <= 800 MB for the stage; whole process,
``audit`` <= 2x ``audit --no-near`` and <= 800 MB.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

TESTS = Path(__file__).resolve().parents[1] / "tests"  # the numpy reference: tests/near_numpy.py
RATE_TARGET = 400_000  # rows/s, the stage on 2 cores
NUMPY_PATH_RATE_THEN = 71_000  # rows/s: the stage before the compiled pass, on the machine where the target was set


def _use_numpy_path() -> None:
    """Swap the engine's near stage for the numpy path the compiled pass replaced."""
    sys.path.insert(0, str(TESTS))
    import near_numpy
    import numpy as np

    from hubsurvey.survey import near

    def numpy_path(source, params, **kwargs):  # it took every text as Python strings, as the engine gave them then
        texts, queries = [], []
        for batch, query in source.batches():
            texts += batch.to_pylist() if hasattr(batch, "to_pylist") else list(batch)
            queries.append(query)
        return near_numpy.find_pairs(texts, np.concatenate(queries), params)

    near.find_pairs_in = numpy_path


def child(folder: Path, numpy_path: bool, warm: bool = False) -> None:
    import numpy as np

    if numpy_path:
        _use_numpy_path()
    from hubsurvey.survey import near
    from hubsurvey.survey.normalize import normalize_text
    from hubsurvey.survey.sources import FolderSource

    truth = json.loads((folder / "truth.json").read_text())
    found: dict[str, object] = {}
    original = near.find_pairs_in

    def capture(source, params, **kwargs):  # the engine's verified pairs, for the recall
        result = original(source, params, **kwargs)
        if not hasattr(source, "_where"):  # the warm-up's few texts, not the engine's
            return result
        # Where each paired text was read (split, row position): its string is read after the
        # clock stops, so that the recall's bookkeeping is not timed as the stage's work.
        codes = np.concatenate([np.full(len(p), c, dtype=np.int8) for c, p in source._where])
        positions = np.concatenate([p for _, p in source._where])
        used = np.unique(result.pairs)
        found["at"] = {u: (source.splits[codes[u]], int(positions[u])) for u in used.tolist()}
        found["pairs"] = result.pairs.tolist()
        return result

    near.find_pairs_in = capture
    data = FolderSource(folder).load("default")
    if warm:  # once untimed: what a survey worker has done before its next config
        _timed_stage(data)
        data = FolderSource(folder).load("default")
    result, seconds, cpu = _timed_stage(data)
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    import pyarrow.parquet as pq

    texts = {s: pq.read_table(folder / "default" / s / "0000.parquet", columns=["text"]).column(0) for s in ("train", "validation", "test")}
    text_of = {u: normalize_text(texts[split][pos].as_py()) for u, (split, pos) in found["at"].items()}
    pairs = {(text_of[a], text_of[b]) for a, b in found["pairs"]}
    recall = {}
    for tau in (0.8, 0.6):
        want = [p for p in truth["pairs"] if p["j"] >= tau]
        got = 0
        for p in want:
            a = normalize_text(texts[p["a_split"]][p["a"]].as_py())
            b = normalize_text(texts[p["b_split"]][p["b"]].as_py())
            got += a == b or (a, b) in pairs or (b, a) in pairs
        recall[str(tau)] = [got, len(want)]
    print(_stage_json(data, result, seconds, cpu, peak_mb, recall=recall))


def _timed_stage(data: Any) -> tuple[Any, float, float]:
    """``measure_config`` with the near method alone on ``data``: its result, wall and CPU seconds."""
    from hubsurvey.core.figures import NEAR_METHOD
    from hubsurvey.survey.measure import measure_config

    started, cpu0 = time.perf_counter(), time.process_time()
    result = measure_config(data, n_configs=1, source="folder", methods=[NEAR_METHOD], examples=0)
    return result, time.perf_counter() - started, time.process_time() - cpu0


def _stage_json(data: Any, result: Any, seconds: float, cpu: float, peak_mb: float, **extra: Any) -> str:
    """A timed stage's line: its times, peak, rows, near provenance and figures (and ``extra``)."""
    (row,) = result.rows
    return json.dumps({"seconds": seconds, "cpu": cpu, "peak_rss_mb": peak_mb, "rows": sum(s.num_rows for s in data.splits.values()),
                       "near": json.loads(row["near"]), **extra,
                       "figures": {k: row[k] for k in ("test_rows_near_train", "test_rows_near_repeated",
                                                       "validation_rows_near_train", "near_contaminated_test_pct",
                                                       "test_rows_near_train_conflicting_label")}})


def child_before(folder: Path) -> None:
    """The stage as the hubsurvey installed beside this interpreter measures it (``--before``): wall,
    CPU, peak RSS and its figures, as ``child`` prints them."""
    from hubsurvey.survey.sources import FolderSource

    imported = Path(sys.modules["hubsurvey"].__file__).resolve()
    if Path(__file__).resolve().parents[1] in imported.parents:
        sys.exit(f"--before: {sys.executable} imports this checkout's hubsurvey ({imported.parent}), not the code before")
    data = FolderSource(folder).load("default")
    result, seconds, cpu = _timed_stage(data)
    print(_stage_json(data, result, seconds, cpu, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024))


def measure_process(cmd: list[str]) -> None:
    """Run ``cmd`` as this process's only child; print its wall time and peak RSS (JSON)."""
    started = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if proc.returncode:
        sys.exit(f"exit {proc.returncode}: {proc.stderr.strip()[-1500:]}")
    print(json.dumps({"seconds": seconds, "peak_rss_mb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024}))


def _run(cmd: list[str], timeout: float, env: dict[str, str] | None = None) -> dict:
    """One child's JSON line, with the load average when it started and ended (or why it has none)."""
    load = os.getloadavg()[0]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return {"error": f"timeout after {timeout:.0f} s", "load": (load, os.getloadavg()[0])}
    if proc.returncode:
        return {"error": f"failed: {proc.stderr.strip()[-1500:]}", "load": (load, os.getloadavg()[0])}
    return json.loads(proc.stdout.strip().splitlines()[-1]) | {"load": (load, os.getloadavg()[0])}


def median_runs(rs: list[dict]) -> tuple[dict[str, float] | None, str]:
    """One side's repeated runs: the medians of those that finished (wall ``seconds``, ``cpu`` when
    measured, ``peak_rss_mb``; None when none did) and every run's loads, for one printed row."""
    ok = [r for r in rs if "seconds" in r]
    loads = " ".join(_load(r) for r in rs)
    if not ok:
        return None, loads
    medians = {key: statistics.median(r[key] for r in ok) for key in ("seconds", "cpu", "peak_rss_mb") if key in ok[0]}
    return medians, loads


def _load(r: dict) -> str:
    return f"{r['load'][0]:.1f}-{r['load'][1]:.1f}"


def machine_probe() -> str:
    """The machine's speed at this moment, apart from hubsurvey's code: wall seconds, best of 3, for
    two fixed pieces of work on one thread (MD5 of 64 MB, and a Python loop of 5M additions). On a
    shared virtual machine the same code runs at very different speeds from one hour to the next;
    these two say how much of a rate is the machine's."""
    import hashlib
    import timeit

    block = bytes(range(256)) * (1 << 18)
    md5 = min(timeit.repeat(lambda: hashlib.md5(block).digest(), number=1, repeat=3))
    loop = min(timeit.repeat("for i in range(5_000_000): total += i", "total = 0", number=1, repeat=3))
    return f"MD5 of 64 MB {md5:.3f} s, Python loop {loop:.3f} s (one thread, best of 3)"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--out", type=Path, default=Path("/tmp/hubsurvey-bench"))
    parser.add_argument("--repeat", type=int, default=3, help="whole-process runs of each kind (the median is shown)")
    parser.add_argument("--timeout", type=float, default=900)
    parser.add_argument("--before", type=Path, metavar="PYTHON",
                        help="the interpreter of an environment where hubsurvey from before the compiled pass is installed "
                             "(see above): its stage runs too, as the rate target's own baseline")
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--child-before", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--numpy-path", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--warm", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--generate", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--measure", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        measure_process(args.measure)
        return
    if args.child:
        child(args.child, args.numpy_path, args.warm)
        return
    if args.child_before:
        child_before(args.child_before)
        return
    if args.generate:  # imported here: it imports hubsurvey, which --child-before takes from its own environment
        from near_data import generate_near
        print(generate_near(args.out, args.rows)[0])
        return
    # Generated in a child: a child process starts with its parent's peak RSS as its own on Linux,
    # so a parent that had held the generated tables would inflate both peaks below.
    made = subprocess.run([sys.executable, __file__, "--generate", "--rows", str(args.rows), "--out", str(args.out)],
                          check=True, capture_output=True, text=True)
    folder = Path(made.stdout.strip().splitlines()[-1])
    truth = json.loads((folder / "truth.json").read_text())
    print(f"dataset: {folder} ({args.rows:,} rows, {len(truth['pairs'])} planted pairs); {os.cpu_count()} cores")
    print(f"machine probe at the start: {machine_probe()}")
    candidates = Path(__file__).parent / "bench_near_candidates.py"
    one_thread = os.environ | {"NUMBA_NUM_THREADS": "1"}
    runs: dict[str, tuple[list[str], dict[str, str] | None]] = {
        "compiled": ([sys.executable, __file__, "--child", str(folder)], None),
        "compiled-warm": ([sys.executable, __file__, "--child", str(folder), "--warm"], None),
        "compiled-1t": ([sys.executable, __file__, "--child", str(folder)], one_thread),
        "numpy-1t": ([sys.executable, __file__, "--child", str(folder), "--numpy-path"], one_thread),
        "datasketch": ([sys.executable, str(candidates), "--child", "datasketch", "--folder", str(folder)], None),
    }
    if args.before:
        runs["before"] = ([str(args.before), __file__, "--child-before", str(folder)], None)
    try:
        import rensa  # noqa: F401
        runs["rensa"] = ([sys.executable, str(candidates), "--child", "rensa-flags", "--folder", str(folder)], None)
    except ImportError:
        print("rensa: not installed, left out")
    # Untimed: numba compiles the kernels into its cache on a checkout's first run (30 s here), which
    # is not the stage's time; every timed run below loads them from the cache.
    warm = _run(runs["compiled"][0], args.timeout)
    print(f"  warm-up (numba's cache): {warm.get('error') or format(warm['seconds'], '.1f') + ' s'} (load {_load(warm)})")
    results = {}
    for name, (cmd, env) in runs.items():
        results[name] = _run(cmd, args.timeout, env)
        r = results[name]
        print(f"  {name}: {r.get('error') or format(r['seconds'], '.1f') + ' s'} (load {_load(r)})", flush=True)
    print("\nthe near stage (measure_config, near method alone; datasketch and rensa: shingles, LSH, verification)")
    print(f"{'':13}{'wall s':>8}{'cpu s':>8}{'rows/s':>10}{'peak MB':>9}{'recall@0.8':>16}{'recall@0.6':>16}{'load':>11}")
    for name, r in results.items():
        if "error" in r:
            print(f"{name:13}{r['error'][:60]:>60}{_load(r):>11}")
            continue
        rec = {t: f"{g}/{w} {g / w if w else 1:.3f}" for t, (g, w) in r["recall"].items()} if "recall" in r else {"0.8": "-", "0.6": "-"}
        print(f"{name:13}{r['seconds']:>8.1f}{r['cpu']:>8.1f}{r['rows'] / r['seconds']:>10,.0f}{r['peak_rss_mb']:>9.0f}"
              f"{rec['0.8']:>16}{rec['0.6']:>16}{_load(r):>11}")
    if "near" in results.get("compiled", {}):
        print("compiled near:", json.dumps(results["compiled"]["near"]))
        print("compiled figures:", json.dumps(results["compiled"]["figures"]))
    if all("figures" in results.get(k, {}) for k in ("compiled", "numpy-1t")):
        same = (results["compiled"]["figures"] == results["numpy-1t"]["figures"]
                and results["compiled"]["near"] == results["numpy-1t"]["near"])
        print(f"compiled and numpy figures and provenance identical: {same}")
    if all("seconds" in results.get(k, {}) for k in ("compiled-1t", "numpy-1t")):
        print(f"single-thread speed-up, compiled vs numpy (same run): {results['numpy-1t']['seconds'] / results['compiled-1t']['seconds']:.1f}x wall, "
              f"{results['numpy-1t']['cpu'] / results['compiled-1t']['cpu']:.1f}x cpu")
    if all("seconds" in results.get(k, {}) for k in ("compiled", "compiled-warm", "numpy-1t")):
        # The rate target in this machine's terms: the numpy path is the stage the target's
        # "now about 71k rows/s" measured, so 400k is that stage's rate times 400 / 71.
        numpy_s = results["numpy-1t"]["seconds"]
        print(f"the stage on 2 cores against the numpy path (same run): {numpy_s / results['compiled']['seconds']:.2f}x, "
              f"{numpy_s / results['compiled-warm']['seconds']:.2f}x warm; the rate target is "
              f"{RATE_TARGET / NUMPY_PATH_RATE_THEN:.2f}x ({RATE_TARGET:,} against the numpy path's {NUMPY_PATH_RATE_THEN:,} rows/s "
              f"where it was set)")
    if all("seconds" in results.get(k, {}) for k in ("compiled", "compiled-warm", "before")):
        before = results["before"]
        same = before["figures"] == results["compiled"]["figures"] and all(
            before["near"].get(k) == v for k, v in results["compiled"]["near"].items() if k in before["near"])
        rate = {k: results[k]["rows"] / results[k]["seconds"] for k in ("compiled", "compiled-warm", "before")}
        print(f"the stage on 2 cores against the code before the compiled pass (same run): "
              f"{rate['compiled'] / rate['before']:.2f}x, {rate['compiled-warm'] / rate['before']:.2f}x warm "
              f"(the target: {RATE_TARGET / NUMPY_PATH_RATE_THEN:.2f}x); figures identical: {same}")
        print(f"that code ran at {rate['before']:,.0f} rows/s here, against {NUMPY_PATH_RATE_THEN:,} where the target "
              f"was set: the target in this machine's terms is {RATE_TARGET * rate['before'] / NUMPY_PATH_RATE_THEN:,.0f} rows/s, "
              f"and the stage ran at {rate['compiled']:,.0f} ({rate['compiled-warm']:,.0f} warm)")
    if all("seconds" in results.get(k, {}) for k in ("compiled", "compiled-warm")):
        print(f"a survey worker's next config (compiled-warm) against a first measurement (compiled): "
              f"{results['compiled-warm']['seconds']:.1f} s against {results['compiled']['seconds']:.1f} s")
    for base in ("datasketch", "rensa"):
        if all("seconds" in results.get(k, {}) for k in ("compiled", base)):
            print(f"speed-up vs {base}: {results[base]['seconds'] / results['compiled']['seconds']:.1f}x")
    whole_process(folder, args.repeat, args.timeout, args.rows)
    print(f"\nmachine probe at the end: {machine_probe()}")


def whole_process(folder: Path, repeat: int, timeout: float, rows: int) -> None:
    """``hubsurvey audit`` on the dataset as a whole process, the compiled pass, the numpy path and
    ``--no-near``, interleaved ``repeat`` times; the medians."""
    numpy_audit = f"import sys; sys.path.insert(0, {str(Path(__file__).parent)!r}); import bench_near; bench_near._use_numpy_path(); "\
        "from hubsurvey.cli import app; app()"
    kinds = {"audit": ([sys.executable, "-m", "hubsurvey.cli"], []),
             "audit (numpy)": ([sys.executable, "-c", numpy_audit], []),
             "audit --no-near": ([sys.executable, "-m", "hubsurvey.cli"], ["--no-near"])}
    runs: dict[str, list[dict]] = {k: [] for k in kinds}
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(repeat):
            for kind, (program, extra) in kinds.items():
                cmd = [*program, "audit", str(folder), "--json", "--examples", "0", "--db", str(Path(tmp) / f"{i}-{len(runs[kind])}-{kind[:5]}.duckdb"), *extra]
                runs[kind].append(_run([sys.executable, __file__, "--measure", *cmd], timeout))
    print(f"\nwhole process: hubsurvey audit --json on the dataset, median of {repeat}")
    print(f"{'':17}{'wall s':>8}{'peak MB':>9}{'loads':>30}")
    medians = {}
    for kind, rs in runs.items():
        median, loads = median_runs(rs)
        if median is None:
            print(f"{kind:17}{rs[0].get('error', '?')[:60]}")
            continue
        medians[kind] = median["seconds"]
        print(f"{kind:17}{medians[kind]:>8.1f}{median['peak_rss_mb']:>9.0f}{loads:>30}")
    if "audit --no-near" in medians:
        for kind in ("audit", "audit (numpy)"):
            if kind in medians:
                print(f"{kind} / audit --no-near: {medians[kind] / medians['audit --no-near']:.2f}x")
        # What the near stage adds to an audit, run by run (each audit beside the --no-near one of
        # its round): the measure of "the near stage is 83% of the time" where the targets were set.
        for kind in ("audit", "audit (numpy)"):
            rounds = [(a["seconds"], b["seconds"]) for a, b in zip(runs[kind], runs["audit --no-near"])
                      if "seconds" in a and "seconds" in b]
            if rounds:
                added = statistics.median(a - b for a, b in rounds)
                share = statistics.median((a - b) / a for a, b in rounds)
                print(f"{kind}: the near stage adds {added:.1f} s (median of {len(rounds)} rounds), "
                      f"{share:.0%} of the audit, {rows / added:,.0f} rows/s")


if __name__ == "__main__":
    main()
