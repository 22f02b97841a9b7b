"""The LLE figures, computed in DuckDB SQL (definitions: ../shared/reference/lle_method.md).

The engine is pure: it reads the split files (or in-memory Arrow tables) given to it, and returns
plain dicts. No network and no results DB, so the same function runs in a local worker process or
on a Dask worker.

How the SQL works, in one paragraph: every split is projected to its key columns and stacked into
one relation ``rows_all(split, k0, k1, ...)``. ``GROUP BY split, keys`` gives one row per distinct
key of each split with its row count (``n``). Regrouping that by the key alone tells, for each
distinct key, in which splits it occurs. GROUP BY compares values exactly, treats NULL as equal to
NULL (as ``str(None)`` did in the survey) and compares lists element by element, so no string
conversion is needed and nothing is lost to hashing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator, Mapping, Sequence

import duckdb

from hubsurvey.store import quote_ident
from survey.sources import CANONICAL_SPLITS, ConfigData, SplitData

FIGURE_NAMES = (
    "leaks_train_wrt_test",
    "leaks_validation_wrt_test",
    "duplication_train",
    "duplication_validation",
    "duplication_test",
    "test_biased",
)

# The figures for one key kind, given a CTE per_split(split, <key>, n) before it. Each line is one definition.
#   leaks_<src>_wrt_test = |set(K(src)) ∩ set(K(test))|      (distinct keys in both)
#   duplication_<split>  = len(split) − |set(K(split))|      (rows beyond the first of each key)
#   test_biased          = (leaks_train_wrt_test + duplication_test) / len(test) × 100
# A figure whose split is absent is NULL (NR); $has_<split> says which splits exist. NR train leaks
# count as 0 in test_biased, so a test-only dataset still reports its own duplication.
FIGURES_SQL = """
per_key AS (          -- one row per distinct key: which splits hold it
    SELECT bool_or(split = 'train')      AS in_train,
           bool_or(split = 'validation') AS in_validation,
           bool_or(split = 'test')       AS in_test
    FROM per_split
    GROUP BY {key}
), leaks AS (
    SELECT count(*) FILTER (WHERE in_train AND in_test)      AS train_test,
           count(*) FILTER (WHERE in_validation AND in_test) AS validation_test
    FROM per_key
), dups AS (               -- rows minus distinct keys, per split
    SELECT sum(n - 1) FILTER (WHERE split = 'train')      AS train,
           sum(n - 1) FILTER (WHERE split = 'validation') AS validation,
           sum(n - 1) FILTER (WHERE split = 'test')       AS test
    FROM per_split
)
SELECT
    CASE WHEN $has_train      THEN leaks.train_test END                       AS leaks_train_wrt_test,
    CASE WHEN $has_validation THEN leaks.validation_test END                  AS leaks_validation_wrt_test,
    CASE WHEN $has_train      THEN coalesce(dups.train, 0) END                AS duplication_train,
    CASE WHEN $has_validation THEN coalesce(dups.validation, 0) END           AS duplication_validation,
    coalesce(dups.test, 0)                                                    AS duplication_test,
    (CASE WHEN $has_train THEN leaks.train_test ELSE 0 END + coalesce(dups.test, 0))
        * 100.0 / $rows_test                                                  AS test_biased
FROM leaks, dups
"""

# difference_annotation = |(text_leaks_train − tl_leaks_train) + (text_leaks_val − tl_leaks_val)|,
# NR terms taken as 0; computed from the two result rows above.
DIFFERENCE_SQL = """
SELECT abs((coalesce($t_train, 0) - coalesce($tl_train, 0))
         + (coalesce($t_validation, 0) - coalesce($tl_validation, 0)))::DOUBLE
"""


@dataclass(frozen=True)
class Measurement:
    """The LLE figures of one (dataset, config, label column)."""

    label_column: str | None
    text_columns: tuple[str, ...]
    figures: dict[str, Any]  # text_* and text_and_label_* figures + difference_annotation


class Engine:
    """Measures one config. Use as a context manager; it owns one in-memory DuckDB connection."""

    def __init__(self, data: ConfigData, *, threads: int | None = None, memory_limit: str | None = None):
        self.data = data
        self.con = duckdb.connect(":memory:")
        if threads:
            self.con.execute(f"SET threads = {int(threads)}")
        if memory_limit:
            self.con.execute("SET memory_limit = $m", {"m": memory_limit})
        self.con.execute("SET preserve_insertion_order = false")  # not needed; lets GROUP BY spill
        self.rows = {name: split.num_rows for name, split in data.splits.items()}
        for name, split in data.splits.items():
            self._register(name, split)

    def __enter__(self) -> "Engine":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.con.close()

    def _register(self, name: str, split: SplitData) -> None:
        view = quote_ident(f"split_{name}")
        if split.table is not None:
            self.con.register(f"arrow_{name}", split.table)
            self.con.execute(f"CREATE VIEW {view} AS SELECT * FROM {quote_ident('arrow_' + name)}")
        else:
            # read_parquet takes the file list as a bound parameter: no path is pasted into SQL.
            rel = self.con.read_parquet(list(split.files))
            rel.create_view(f"split_{name}")

    def _stack(self, columns: Sequence[str]) -> str:
        """SQL for rows_all(split, k0, k1, ...) over the present splits."""
        keys = ", ".join(f"{quote_ident(c)} AS k{i}" for i, c in enumerate(columns))
        return " UNION ALL ".join(
            f"SELECT '{name}' AS split, {keys} FROM {quote_ident('split_' + name)}"
            for name in CANONICAL_SPLITS
            if name in self.data.splits
        )

    def _figures(self, per_split_table: str, width: int, prefix: str) -> dict[str, Any]:
        key = ", ".join(f"k{i}" for i in range(width))
        sql = f"WITH per_split AS (SELECT * FROM {per_split_table}), " + FIGURES_SQL.format(key=key)
        params = {f"has_{s}": s in self.data.splits for s in ("train", "validation")}
        params["rows_test"] = self.rows["test"]
        row = self.con.execute(sql, params).fetchone()
        return {f"{prefix}_{name}": value for name, value in zip(FIGURE_NAMES, row)}

    def measure(self, text_columns: Sequence[str], label_columns: Sequence[str]) -> list[Measurement]:
        """One Measurement per label column (or one with label_column None when there is none)."""
        text_columns = tuple(text_columns)
        n = len(text_columns)
        key = ", ".join(f"k{i}" for i in range(n))
        # Distinct text keys per split, kept for all label columns.
        self.con.execute(
            f"CREATE OR REPLACE TEMP TABLE per_split_text AS "
            f"SELECT split, {key}, count(*) AS n FROM ({self._stack(text_columns)}) GROUP BY ALL"
        )
        text = self._figures("per_split_text", n, "text")
        if not label_columns:
            figures = dict(text)
            figures.update({f"text_and_label_{f}": None for f in FIGURE_NAMES})
            figures["difference_annotation"] = None
            return [Measurement(None, text_columns, figures)]
        out = []
        for label in label_columns:
            self.con.execute(
                f"CREATE OR REPLACE TEMP TABLE per_split_label AS "
                f"SELECT split, {key}, k{n}, count(*) AS n "
                f"FROM ({self._stack(text_columns + (label,))}) GROUP BY ALL"
            )
            with_label = self._figures("per_split_label", n + 1, "text_and_label")
            diff = self.con.execute(
                DIFFERENCE_SQL,
                {
                    "t_train": text["text_leaks_train_wrt_test"],
                    "tl_train": with_label["text_and_label_leaks_train_wrt_test"],
                    "t_validation": text["text_leaks_validation_wrt_test"],
                    "tl_validation": with_label["text_and_label_leaks_validation_wrt_test"],
                },
            ).fetchone()[0]
            out.append(Measurement(label, text_columns, {**text, **with_label, "difference_annotation": diff}))
        self.con.execute("DROP TABLE IF EXISTS per_split_label")
        return out

    def top_examples(self, text_columns: Sequence[str], limit: int = 5) -> dict[str, list[dict[str, Any]]]:
        """The most repeated leaked and duplicated text keys, with their row counts per split."""
        cols = ", ".join(f"k{i}" for i in range(len(text_columns)))
        base = (
            f"SELECT {cols}, "
            + ", ".join(f"count(*) FILTER (WHERE split = '{s}') AS {s}" for s in CANONICAL_SPLITS)
            + f" FROM ({self._stack(tuple(text_columns))}) GROUP BY ALL"
        )
        leaked = self.con.execute(
            f"SELECT * FROM ({base}) WHERE test > 0 AND (train > 0 OR validation > 0) "
            f"ORDER BY train + validation + test DESC, {cols} LIMIT $limit",
            {"limit": limit},
        )
        leaked_rows = _rows(leaked, text_columns)
        duplicated = self.con.execute(
            f"SELECT * FROM ({base}) WHERE train > 1 OR validation > 1 OR test > 1 "
            f"ORDER BY greatest(train, validation, test) DESC, {cols} LIMIT $limit",
            {"limit": limit},
        )
        return {"leaked": leaked_rows, "duplicated": _rows(duplicated, text_columns)}


def _rows(result: duckdb.DuckDBPyConnection, text_columns: Sequence[str]) -> list[dict[str, Any]]:
    names = [d[0] for d in result.description]
    out = []
    for row in result.fetchall():
        rec = dict(zip(names, row))
        text = {c: rec.pop(f"k{i}") for i, c in enumerate(text_columns)}
        out.append({"text": text, "counts": rec})
    return out


def measure_config(data: ConfigData, text_columns: Sequence[str], label_columns: Sequence[str], **engine_options: Any) -> list[Measurement]:
    """Convenience: open an Engine, measure, close."""
    with Engine(data, **engine_options) as engine:
        return engine.measure(text_columns, label_columns)


def iter_figure_columns() -> Iterator[str]:
    """Stored figure columns, in the published order."""
    for prefix in ("text", "text_and_label"):
        for name in FIGURE_NAMES:
            yield f"{prefix}_{name}"
    yield "difference_annotation"
