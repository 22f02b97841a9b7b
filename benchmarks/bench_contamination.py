"""Benchmark: the 13-gram contamination check (survey/contamination.py) against a plain Python-set
implementation, in the same run, on generated rows.

    python benchmarks/bench_contamination.py [--rows 3000000] [--items 1500] [--baseline-rows 300000]

The data: rows of 8 to 40 words drawn (Zipf) from a 20,000-word vocabulary, with some non-ASCII
words; a benchmark of ``--items`` items of 6 to 60 words from the same vocabulary (about a fifth
shorter than 13 words, matched whole). 0.5% of the rows hold a benchmark passage of 13 to 20 words
(cased, with doubled spaces), 0.1% a whole short item in upper case.

- ``engine``: ``contamination.scan_batches`` over the rows in batches of ``BATCH_ROWS`` (normalization
  included), one thread per core (its default), then on one thread;
- ``python-set``: the same definition with Python sets of 13-word tuples and of whole texts, row by
  row (``normalize_text``, ``str.split``), on the first ``--baseline-rows`` rows (its rows/s does
  not depend on how many: it is linear); both are checked to find the same rows on those.

Prints both rows/s side by side, their ratio (the target is >= 10x), the candidate stage's
alternatives measured on the same hashes (the scan's compiled key set, a DuckDB hash join, numpy
isin, rbloom from Python when installed), and the peak RSS of the process.
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
import unicodedata

import numpy as np
import pyarrow as pa

from hubsurvey.survey import contamination as c

NGRAM = 13


def generate(rows: int, items: int, seed: int = 0) -> tuple[list[str], list[str]]:
    rng = np.random.default_rng(seed)
    vocab = np.array([f"w{i}" for i in range(20_000)], dtype=object)
    rare = np.arange(2_000, 20_000, 97)
    vocab[rare] = [f"wé{i}" for i in rare]  # rare non-ASCII words: about 5% of the rows take the slow path
    weights = 1.0 / np.arange(1, len(vocab) + 1) ** 1.05
    weights /= weights.sum()

    def texts(n: int, lo: int, hi: int) -> list[str]:
        lengths = rng.integers(lo, hi + 1, n)
        words = vocab[rng.choice(len(vocab), int(lengths.sum()), p=weights)]
        ends = np.cumsum(lengths)
        return [" ".join(words[e - k:e]) for e, k in zip(ends, lengths)]

    bench = texts(items, 6, 60)
    out = []
    for start in range(0, rows, 500_000):
        out += texts(min(500_000, rows - start), 8, 40)
    long_items = [b.split() for b in bench if len(b.split()) >= NGRAM]
    short_items = [b for b in bench if len(b.split()) < NGRAM]
    for i in rng.choice(rows, rows // 200, replace=False):  # 0.5%: a passage inside the row
        item = long_items[rng.integers(len(long_items))]
        k = int(rng.integers(NGRAM, min(20, len(item)) + 1))
        at = int(rng.integers(0, len(item) - k + 1))
        passage = "  ".join(item[at:at + k]).title()
        words = out[i].split(" ")
        cut = int(rng.integers(0, len(words) + 1))
        out[i] = " ".join([*words[:cut], passage, *words[cut:]])
    for i in rng.choice(rows, rows // 1000, replace=False):  # 0.1%: a whole short item
        out[i] = short_items[rng.integers(len(short_items))].upper()
    return out, bench


def python_set(rows: list[str], bench: list[str]) -> set[int]:
    """The definition, with Python sets: the baseline."""
    def norm(s: str) -> str:
        return " ".join(unicodedata.normalize("NFKC", s).casefold().split())

    grams: set[tuple[str, ...]] = set()
    whole: set[str] = set()
    for item in bench:
        words = norm(item).split()
        if len(words) < NGRAM:
            whole.add(" ".join(words))
        else:
            grams.update(tuple(words[i:i + NGRAM]) for i in range(len(words) - NGRAM + 1))
    found = set()
    for position, row in enumerate(rows):
        text = norm(row)
        if text in whole:
            found.add(position)
            continue
        words = text.split()
        if any(tuple(words[i:i + NGRAM]) in grams for i in range(len(words) - NGRAM + 1)):
            found.add(position)
    return found


def engine(rows: pa.Array, index: c.BenchmarkIndex, batch: int = c.BATCH_ROWS, threads: int | None = None) -> set[int]:
    """The engine over Arrow strings, as the survey reads them from Parquet."""
    batches = ([rows.slice(start, batch)] for start in range(0, len(rows), batch))
    return c.scan_batches(batches, index, threads=threads)[1][0].rows


def candidate_stages(index: c.BenchmarkIndex, queries: int = 5_000_000) -> list[tuple[str, float]]:
    """The candidate stage's alternatives on the same random 64-bit hashes (most are misses)."""
    import duckdb

    rng = np.random.default_rng(2)
    keys = index.grams.column("key").to_numpy()
    q = np.concatenate([rng.integers(0, 2**63, queries - 1000, dtype=np.int64).view(np.uint64), keys[:1000]])
    out = []
    index.gram_keys.contains(q[:10])  # compiled once (numba's cache), not timed
    t = time.perf_counter()
    index.gram_keys.contains(q)
    out.append(("key set (the scan's)", time.perf_counter() - t))
    con = duckdb.connect()
    con.register("q", pa.table({"key": q}))
    con.register("g", index.grams.select(["key"]))
    t = time.perf_counter()
    con.execute("SELECT count(*) FROM q SEMI JOIN g USING (key)").fetchone()
    out.append(("duckdb hash join", time.perf_counter() - t))
    t = time.perf_counter()
    np.isin(q, keys)
    out.append(("numpy isin", time.perf_counter() - t))
    try:
        import rbloom
    except ImportError:
        out.append(("rbloom (not installed)", float("nan")))
    else:
        bloom = rbloom.Bloom(max(1, len(keys)), 0.01, hash_func=lambda x: x - 2**63)
        bloom.update(keys.tolist())
        t = time.perf_counter()
        [h in bloom for h in q.tolist()]
        out.append(("rbloom, from Python", time.perf_counter() - t))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=3_000_000)
    parser.add_argument("--items", type=int, default=1_500)
    parser.add_argument("--baseline-rows", type=int, default=300_000)
    args = parser.parse_args()
    t = time.perf_counter()
    rows, bench = generate(args.rows, args.items)
    print(f"generated {len(rows):,} rows, {len(bench):,} benchmark items in {time.perf_counter() - t:.1f} s", flush=True)
    t = time.perf_counter()
    index = c.index_from_tables([(c.Benchmark("bench/generated", "default", "test", ("text",)), None,
                                  pa.table({"text": bench}))])
    print(f"index: {index.grams.num_rows:,} distinct 13-grams, {index.shorts.num_rows:,} short items, "
          f"built in {time.perf_counter() - t:.2f} s", flush=True)

    arrow_rows = pa.array(rows, pa.string())  # the survey reads Arrow from Parquet: not timed
    t = time.perf_counter()
    c.scan([arrow_rows.slice(0, 10)], index)  # warm-up: the power tables, the thread's DuckDB connection
    print(f"warm-up {time.perf_counter() - t:.2f} s (once per process, not timed)", flush=True)
    t = time.perf_counter()
    got = engine(arrow_rows, index)
    engine_s = time.perf_counter() - t
    t = time.perf_counter()
    engine(arrow_rows, index, threads=1)  # one core: what the speed-up owes to threads
    one_core_s = time.perf_counter() - t
    n = min(args.baseline_rows, len(rows))
    # the machine is shared: the engine runs again on the baseline's rows just before and after it,
    # so that one ratio compares the two under the same load
    t = time.perf_counter()
    engine(arrow_rows.slice(0, n), index)
    before = time.perf_counter() - t
    t = time.perf_counter()
    want = python_set(rows[:n], bench)
    base_s = time.perf_counter() - t
    t = time.perf_counter()
    engine(arrow_rows.slice(0, n), index)
    after = time.perf_counter() - t
    same = {p for p in got if p < n} == want
    print(f"\n{'implementation':<28}{'rows':>12}{'seconds':>10}{'rows/s':>14}{'contaminated':>14}")
    print(f"{'engine (scan)':<28}{len(rows):>12,}{engine_s:>10.2f}{len(rows) / engine_s:>14,.0f}{len(got):>14,}")
    print(f"{'engine (scan), one thread':<28}{len(rows):>12,}{one_core_s:>10.2f}{len(rows) / one_core_s:>14,.0f}")
    print(f"{'python-set baseline':<28}{n:>12,}{base_s:>10.2f}{n / base_s:>14,.0f}{len(want):>14,}")
    print(f"{'engine, same rows, around it':<28}{n:>12,}{(before + after) / 2:>10.2f}{2 * n / (before + after):>14,.0f}")
    print(f"speed-up: {len(rows) / engine_s / (n / base_s):.1f}x over the whole run "
          f"({len(rows) / one_core_s / (n / base_s):.1f}x on one thread), "
          f"{base_s / ((before + after) / 2):.1f}x on the same rows under the same load (target >= 10x); "
          f"same rows on the first {n:,}: {same}")
    print("\ncandidate stage, 5,000,000 hashes against the index's:")
    for name, seconds in candidate_stages(index):
        print(f"  {name:<24}{seconds:>8.2f} s")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"\npeak RSS: {peak:,.0f} MB (the process: generated rows, Python-set baseline and engine)")
    if not same:
        sys.exit(1)


if __name__ == "__main__":
    main()
