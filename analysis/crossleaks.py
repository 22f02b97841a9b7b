"""Leaks across datasets (method ``cross-2026``): every test split against every other dataset's splits.

The survey keeps, for each measured (dataset, revision, config, split), one 64-bit hash of each
row's ``normalized`` text key with its row position, as Parquet beside the DB
(:func:`hubsurvey.core.store.fingerprints_dir`, indexed by the ``fingerprints`` table).
:func:`crossleaks` joins them in DuckDB, out of core (a memory limit; DuckDB spills beyond it):

- **overlap** of a test split A (dataset, config) with a split S of another dataset B: the test
  rows of A (row positions, so a test text repeated twice counts twice) whose hash occurs in S.
  It is a hash join of A's rows on the distinct hashes of S; ``pct`` is over A's test rows.
- **copy** (A is a copy of B): at least ``copy_threshold`` (default 0.8) of A's test rows are in
  B's test split, and their train splits agree: at least ``copy_threshold`` of A's train rows are
  in B's train split, or neither has a train split. A mirror, fork or re-upload.
- **family**: datasets joined by copy relations, in either direction (connected components); its
  id is its smallest dataset id (``dataset_families``).
- **leak**: A's test rows in B's train or validation split, B outside A's family: a fork is never
  reported as leaking into itself (``relation = 'family'`` then).
- **shared_test**: A's test rows in B's test split without A being a copy of B, nor in its family.

Only fingerprints of the revision the findings use (``current_measurements``) and of the current
hash scheme are read; configs without them are counted as ``missing`` (measured before hubsurvey
kept fingerprints: the next ``run`` measures them again). Two different texts share a 64-bit hash
with probability 2^-64 per pair of rows, so an overlap of n test rows with m source rows holds a
false match with probability about n*m/2^64 (5e-8 for a million rows each).

``crossleaks`` computes; the store writes (``Store.replace_cross_overlaps``): analysis never writes
the DB itself.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

import duckdb
import pyarrow as pa

from hubsurvey import __version__
from hubsurvey.core.errors import BadInputError, StoreError
from hubsurvey.core.store import FINGERPRINT_HASH, Store, now

CROSS_METHOD = "cross-2026"
CROSS_METHOD_VERSION = 1
DEFAULT_COPY_THRESHOLD = 0.8
DEFAULT_MEMORY_LIMIT = "2GB"


@dataclass
class CrossSummary:
    """What one :func:`crossleaks` found."""

    test_splits: int = 0  # test splits compared (dataset, config) with fingerprints
    files: int = 0  # fingerprint files read
    rows: int = 0  # fingerprint rows read
    missing: int = 0  # current (dataset, config)s without a test fingerprint file
    pairs: int = 0  # cross_overlaps rows
    copies: int = 0
    leaks: int = 0
    families: int = 0
    seconds: float = 0.0

    def as_json(self) -> dict[str, Any]:
        return asdict(self)

    def line(self) -> str:
        return (f"crossleaks: {self.test_splits} test split(s) against {self.files} fingerprint file(s) "
                f"({self.rows} rows): {self.pairs} overlap(s), {self.leaks} leak(s), {self.copies} copy relation(s), "
                f"{self.families} famil{'y' if self.families == 1 else 'ies'}"
                + (f"; {self.missing} config(s) without fingerprints (measured again by the next run)" if self.missing else "")
                + f" in {self.seconds:.1f} s")


def current_fingerprints(store: Store) -> list[dict[str, Any]]:
    """The fingerprint files of the revisions the findings use, under the current hash scheme:
    ``dataset_id, config, split, revision_sha, rows, filename`` (an absolute path)."""
    rows = store.records(
        """SELECT f.dataset_id, f.config, f.split, f.revision_sha, f.rows, f.path FROM fingerprints f
           JOIN (SELECT DISTINCT dataset_id, config, revision_sha FROM current_measurements) m
             USING (dataset_id, config, revision_sha)
           WHERE f.hash = $h ORDER BY f.dataset_id, f.config, f.split""",
        {"h": FINGERPRINT_HASH},
    )
    root = store.fingerprints_dir
    out = []
    for r in rows:
        path = root / r.pop("path")
        if path.resolve().is_relative_to(root.resolve()) and path.is_file():
            out.append({**r, "filename": str(path)})
    return out


def _register_files(store: Store, files: list[dict[str, Any]]) -> None:
    store.con.register("cross_files", pa.Table.from_pylist(files, schema=pa.schema([
        ("dataset_id", pa.string()), ("config", pa.string()), ("split", pa.string()), ("revision_sha", pa.string()),
        ("rows", pa.int64()), ("filename", pa.string())])))


def _scan(split_filter: str) -> str:
    """SQL reading the registered fingerprint files (``$paths``), hive partitioned, with each row's
    identity from the index (joined on the file name and the revision inside the file)."""
    return f"""
        SELECT f.dataset_id, f.config, f.split, p.row, p.hash
        FROM read_parquet($paths, hive_partitioning = true, filename = true) p
        JOIN cross_files f ON f.filename = p.filename AND f.revision_sha = p.revision_sha
        WHERE {split_filter}"""


def _settings(store: Store, memory_limit: str) -> dict[str, Any]:
    old = {name: store.con.execute(f"SELECT current_setting('{name}')").fetchone()[0]
           for name in ("memory_limit", "preserve_insertion_order")}
    store.con.execute("SET memory_limit = $m", {"m": memory_limit})
    store.con.execute("SET preserve_insertion_order = false")  # lets the joins and aggregates spill
    return old


def _restore(store: Store, old: Mapping[str, Any]) -> None:
    store.con.execute("SET memory_limit = $m", {"m": old["memory_limit"]})
    store.con.execute(f"SET preserve_insertion_order = {'true' if str(old['preserve_insertion_order']).lower() == 'true' else 'false'}")


def overlaps_sql() -> str:
    """Every (test split A, split S of another dataset) with at least one test row of A in S:
    the test rows (positions) of A whose hash is among S's distinct hashes."""
    return f"""
        WITH probe AS ({_scan("p.split = 'test'")}),
             source AS (SELECT DISTINCT dataset_id, config, split, hash FROM ({_scan("true")}))
        SELECT t.dataset_id AS test_dataset, t.config AS test_config,
               s.dataset_id AS source_dataset, s.config AS source_config, s.split AS source_split,
               count(*) AS rows
        FROM probe t JOIN source s ON s.hash = t.hash AND s.dataset_id <> t.dataset_id
        GROUP BY ALL"""


def train_agreement_sql() -> str:
    """For the candidate copies (``cross_candidates``: A's test mostly in B's test), A's train rows
    whose hash occurs in B's train split."""
    return f"""
        WITH a AS ({_scan("p.split = 'train'")}),
             b AS (SELECT DISTINCT dataset_id, config, hash FROM ({_scan("p.split = 'train'")}))
        SELECT c.test_dataset, c.test_config, c.source_dataset, c.source_config, count(*) AS rows
        FROM cross_candidates c
        JOIN a ON a.dataset_id = c.test_dataset AND a.config = c.test_config
        JOIN b ON b.dataset_id = c.source_dataset AND b.config = c.source_config AND b.hash = a.hash
        GROUP BY ALL"""


def families_of(edges: Iterable[tuple[str, str]]) -> dict[str, list[str]]:
    """Connected components of the copy edges (undirected): dataset -> its family's members, sorted.
    The family id is ``members[0]``, the smallest dataset id."""
    parent: dict[str, str] = {}

    def find(x: str) -> str:
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for a, b in edges:
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    groups: dict[str, list[str]] = {}
    for x in list(parent):
        groups.setdefault(find(x), []).append(x)
    return {x: sorted(members) for members in groups.values() for x in members}


def crossleaks(store: Store, *, copy_threshold: float = DEFAULT_COPY_THRESHOLD, memory_limit: str = DEFAULT_MEMORY_LIMIT,
               run_id: str | None = None) -> CrossSummary:
    """Join every dataset's test split fingerprints against every other dataset's splits, classify
    each overlap (copy, leak, shared_test, family), group copies into families, and replace the
    ``cross_overlaps`` and ``dataset_families`` tables (see the module docstring for each rule).

    ``store`` must be open for writing. ``copy_threshold`` is a fraction in (0, 1]; DuckDB works
    within ``memory_limit`` (e.g. ``"2GB"``) and spills to disk beyond it.
    """
    if not 0 < copy_threshold <= 1:
        raise BadInputError(f"--copy-threshold must be in (0, 1], not {copy_threshold}")
    started = time.perf_counter()
    summary = CrossSummary()
    files = current_fingerprints(store)
    current = store.query("SELECT count(*) FROM (SELECT DISTINCT dataset_id, config FROM current_measurements)")[1][0][0]
    tests = {(f["dataset_id"], f["config"]): f for f in files if f["split"] == "test"}
    summary.missing = current - len(tests)
    summary.test_splits, summary.files, summary.rows = len(tests), len(files), sum(f["rows"] for f in files)
    overlaps: list[dict[str, Any]] = []
    families: dict[str, list[str]] = {}
    if tests:
        paths = {"paths": [f["filename"] for f in files]}
        by_key = {(f["dataset_id"], f["config"], f["split"]): f for f in files}
        old = _settings(store, memory_limit)
        _register_files(store, files)
        try:
            found = store.records(overlaps_sql(), paths)
            candidates = [r for r in found if r["source_split"] == "test"
                          and r["rows"] >= copy_threshold * tests[(r["test_dataset"], r["test_config"])]["rows"]]
            agree: dict[tuple[str, str, str, str], int] = {}
            if candidates:
                keys = ("test_dataset", "test_config", "source_dataset", "source_config")
                store.con.register("cross_candidates", pa.Table.from_pylist([{k: c[k] for k in keys} for c in candidates]))
                try:
                    agree = {tuple(r[k] for k in keys): r["rows"] for r in store.records(train_agreement_sql(), paths)}
                finally:
                    store.con.unregister("cross_candidates")
        except duckdb.Error as e:
            raise StoreError(f"crossleaks: {' '.join(str(e).split())}") from None
        finally:
            store.con.unregister("cross_files")
            _restore(store, old)
        copies = set()
        for c in candidates:
            a_train = by_key.get((c["test_dataset"], c["test_config"], "train"))
            b_train = by_key.get((c["source_dataset"], c["source_config"], "train"))
            key = (c["test_dataset"], c["test_config"], c["source_dataset"], c["source_config"])
            if (a_train is None and b_train is None) or (
                    a_train is not None and b_train is not None and agree.get(key, 0) >= copy_threshold * a_train["rows"]):
                copies.add(key)
        families = families_of((a, b) for a, _, b, _ in copies)
        stamp = now()
        for r in sorted(found, key=lambda r: (r["test_dataset"], r["test_config"], r["source_dataset"], r["source_config"],
                                              r["source_split"])):
            test = tests[(r["test_dataset"], r["test_config"])]
            key = (r["test_dataset"], r["test_config"], r["source_dataset"], r["source_config"])
            same_family = families.get(r["test_dataset"], [r["test_dataset"]]) == families.get(r["source_dataset"])
            if r["source_split"] == "test":
                relation = "copy" if key in copies else "family" if same_family else "shared_test"
            else:
                relation = "family" if same_family else "leak"
            overlaps.append({
                **r, "test_revision": test["revision_sha"],
                "source_revision": by_key[(r["source_dataset"], r["source_config"], r["source_split"])]["revision_sha"],
                "test_rows": test["rows"], "pct": 100.0 * r["rows"] / test["rows"] if test["rows"] else 0.0,
                "relation": relation, "copy_threshold": copy_threshold, "method": CROSS_METHOD, "method_version": CROSS_METHOD_VERSION,
                "tool_version": __version__, "computed_at": stamp, "run_id": run_id,
            })
        summary.copies = len(copies)
        summary.leaks = sum(o["relation"] == "leak" for o in overlaps)
    stamp = now()
    family_rows = [{"dataset_id": d, "family_id": members[0], "members": members, "computed_at": stamp, "run_id": run_id}
                   for d, members in sorted(families.items())]
    store.replace_cross_overlaps(overlaps, family_rows)
    summary.pairs = len(overlaps)
    summary.families = len({r["family_id"] for r in family_rows})
    summary.seconds = time.perf_counter() - started
    return summary


# --- the rows behind a pair (``hubsurvey show A --source B``) ---------------------------------------


def find_cross_rows(store: Store, test_dataset: str, source_dataset: str, *, test_config: str | None = None,
                    source_config: str | None = None, source_split: str | None = None,
                    limit: int = 20) -> list[dict[str, Any]]:
    """The test rows of ``test_dataset`` whose normalized text hash occurs in ``source_dataset``:
    per (test config, test row), the source config and split, the source row positions (first 10)
    and the hash. Read from the fingerprint files of the current revisions; at most ``limit``
    test rows per (test config, source config, source split), in test row order."""
    files = [f for f in current_fingerprints(store) if f["dataset_id"] in (test_dataset, source_dataset)]
    if not any(f["dataset_id"] == test_dataset and f["split"] == "test" for f in files):
        raise BadInputError(f"{test_dataset}: no fingerprints of its test split in this DB (measure it with `run` or `audit`)")
    if not any(f["dataset_id"] == source_dataset for f in files):
        raise BadInputError(f"{source_dataset}: no fingerprints in this DB (measure it with `run` or `audit`)")
    _register_files(store, files)
    try:
        return store.records(
            f"""WITH t AS ({_scan("p.split = 'test' AND f.dataset_id = $a AND ($ac IS NULL OR f.config = $ac)")}),
                     s AS ({_scan("f.dataset_id = $b AND ($bc IS NULL OR f.config = $bc) AND ($bs IS NULL OR f.split = $bs)")})
                SELECT t.config AS test_config, t.row AS test_row, s.config AS source_config, s.split AS source_split,
                       list(s.row ORDER BY s.row)[1:10] AS source_rows, count(*) AS source_rows_total, t.hash
                FROM t JOIN s ON s.hash = t.hash
                GROUP BY t.config, t.row, s.config, s.split, t.hash
                QUALIFY row_number() OVER (PARTITION BY t.config, s.config, s.split ORDER BY t.row) <= $limit
                ORDER BY test_config, source_config, source_split, test_row""",
            {"paths": [f["filename"] for f in files], "a": test_dataset, "ac": test_config, "b": source_dataset,
             "bc": source_config, "bs": source_split, "limit": limit},
        )
    finally:
        store.con.unregister("cross_files")


def render_cross_rows(test_dataset: str, source_dataset: str, rows: list[dict[str, Any]],
                      overlaps: list[dict[str, Any]]) -> str:
    """The pair's overlaps (from cross_overlaps) and the rows behind them, as text."""
    lines = []
    for o in overlaps:
        lines.append(f"{o['test_dataset']} [{o['test_config']}] test: {o['rows']} of {o['test_rows']} rows "
                     f"({o['pct']:.1f}%) in {o['source_dataset']} [{o['source_config']}] {o['source_split']}: {o['relation']}")
    if not rows:
        lines.append(f"(no test row of {test_dataset} has its normalized text in {source_dataset})")
    heading = None
    for r in rows:
        this = (r["test_config"], r["source_config"], r["source_split"])
        if this != heading:
            heading = this
            lines.append(f"{test_dataset} [{r['test_config']}] test -> {source_dataset} [{r['source_config']}] {r['source_split']}:")
        more = f" (+{r['source_rows_total'] - len(r['source_rows'])})" if r["source_rows_total"] > len(r["source_rows"]) else ""
        lines.append(f"  test@{r['test_row']:<8} {r['source_split']}@{','.join(map(str, r['source_rows']))}{more}"
                     f"  hash {r['hash']:016x}")
    return "\n".join(lines)


def pair_overlaps(store: Store, test_dataset: str, source_dataset: str) -> list[dict[str, Any]]:
    """The cross_overlaps rows of one (test dataset, source dataset) pair."""
    return store.records(
        "SELECT * FROM cross_overlaps WHERE test_dataset = $a AND source_dataset = $b "
        "ORDER BY test_config, source_config, source_split", {"a": test_dataset, "b": source_dataset})
