"""The engine: computes the registry's figures (``hubsurvey.core.figures``) in DuckDB SQL.

The method, in words: ``docs/method.md``.

The engine is pure: it reads the split files (or in-memory Arrow tables) given to it, and returns
plain dicts. No network and no results DB, so the same function runs in a local worker process or
on a Dask worker.

How the SQL works, in one paragraph: every split is projected to its key columns and stacked into
one table ``rows_all(split, t0.., l0.., h_text, h_l0..)``, read once. ``GROUP BY key`` gives one
row per distinct key with its row count in each split; every figure is a sum over those rows. The key is a 64-bit hash of the values when
a check proves it collision-free on this data (``_key``), else the values themselves. GROUP BY and
DISTINCT compare values exactly, treat NULL as equal to NULL (as ``str(None)`` did in the survey)
and compare lists element by element, so no string conversion is needed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import duckdb
import pyarrow as pa

from hubsurvey.core import figures as registry
from hubsurvey.core.errors import BadInputError
from hubsurvey.core.splits import CANONICAL_SPLITS
from hubsurvey.core.store import quote_ident
from hubsurvey.survey.sources import ConfigData, SplitData

# The figures' SQL is declared in the method registry (hubsurvey.core.figures), next to their
# definitions; the engine only builds rows_all and runs it.

@dataclass(frozen=True)
class Measurement:
    """The LLE figures of one (dataset, config, label column)."""

    label_column: str | None
    text_columns: tuple[str, ...]
    figures: dict[str, Any]  # text_* and text_and_label_* figures + difference_annotation


class Engine:
    """Measures one config. Use as a context manager; it owns one in-memory DuckDB connection."""

    #: The 64-bit hash of a key, as SQL around its columns; a test swaps in a weak one to force
    #: real collisions and exercise the exact fallback of ``_key``.
    hash_sql = "hash({})"

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

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.con.close()

    def _register(self, name: str, split: SplitData) -> None:
        """A view ``split_<name>`` over the split's Parquet files (read by DuckDB) or Arrow table.

        The dataset's column names never reach SQL: DuckDB identifiers are case-insensitive even
        when quoted (``Text`` and ``text`` would resolve to one column), and a name may hold any
        character. ``_stack`` renames every column by position instead.
        """
        view = f"split_{name}"  # canonical split names only: train, validation, test
        if split.table is not None:
            self.con.register(f"arrow_{name}", split.table)
            self.con.execute(f"CREATE VIEW {view} AS SELECT * FROM arrow_{name}")
        else:
            # read_parquet takes the file list as a bound parameter: no path is pasted into SQL.
            self.con.read_parquet(list(split.files)).create_view(view)

    def _position(self, schema: pa.Schema, column: str) -> int:
        """The index of ``column`` in the data, matched exactly; refuse a missing or repeated name."""
        found = schema.get_all_field_indices(column)
        if len(found) != 1:
            why = "is not in the data" if not found else f"names {len(found)} columns"
            raise BadInputError(f"{self.data.where()}: column {column!r} {why}; it cannot be measured unambiguously")
        return found[0]

    def _stack(self, aliases: Mapping[str, str]) -> str:
        """SQL for ``(split, <alias>...)`` over the present splits.

        ``aliases`` maps a positional alias (``t0``, ``l0``) to the dataset's column name. Each
        view's columns are renamed ``c0..c<n-1>`` by position (``FROM view AS s(c0, ...)``), so
        the SQL holds no dataset name; check_config has proved every split has the same schema.
        """
        schema = self.data.splits["test"].schema()
        picked = ", ".join(f"c{self._position(schema, column)} AS {alias}" for alias, column in aliases.items())
        renamed = ", ".join(f"c{i}" for i in range(len(schema)))
        selects = []
        for name in CANONICAL_SPLITS:
            if name in self.data.splits:
                width = len(self.con.table(f"split_{name}").columns)
                if width != len(schema):  # never expected: DuckDB and Arrow disagree on the columns
                    raise BadInputError(
                        f"{self.data.where(self.data.splits[name].source_name)}: "
                        f"DuckDB reads {width} columns where Arrow has {len(schema)}"
                    )
                selects.append(f"SELECT '{name}' AS split, {picked} FROM split_{name} AS s({renamed})")
        return " UNION ALL ".join(selects)

    def _load(self, text_columns: Sequence[str], label_columns: Sequence[str]) -> None:
        """rows_all(split, t*, l*, h_text, h_l*): the key columns and their 64-bit hashes, one pass."""
        aliases = {f"t{i}": c for i, c in enumerate(text_columns)}
        aliases.update({f"l{j}": c for j, c in enumerate(label_columns)})
        text = ", ".join(f"t{i}" for i in range(len(text_columns)))
        h = self.hash_sql
        hashed = [f"{h.format(text)} AS h_text"] + [f"{h.format(f'{text}, l{j}')} AS h_l{j}" for j in range(len(label_columns))]
        stacked = self._stack(aliases)
        self.con.execute(f"CREATE OR REPLACE TEMP TABLE rows_all AS SELECT *, {', '.join(hashed)} FROM ({stacked})")
        self._loaded = tuple(text_columns)

    def _key(self, hash_column: str, value_columns: str) -> str:
        """The hash when it is exact for this data, else the values themselves.

        Grouping by a 64-bit hash is several times faster than grouping by long strings, but two
        different keys could share a hash. A collision can only hide among hash groups of more
        than one row, so those (few: the duplicates and leaks) are checked against the values.
        """
        exact = self.con.execute(
            f"""
            WITH repeated AS (SELECT {hash_column} AS h FROM rows_all GROUP BY h HAVING count(*) > 1)
            SELECT (SELECT count(*) FROM (SELECT DISTINCT {hash_column}, {value_columns} FROM rows_all
                                          WHERE {hash_column} IN (SELECT h FROM repeated)))
                 = (SELECT count(*) FROM repeated)
            """
        ).fetchone()[0]
        return hash_column if exact else value_columns

    def _figures(self, key: str, kind: registry.KeyKind) -> dict[str, Any]:
        """The registry's key figures of one key kind, named with its prefix."""
        params: dict[str, Any] = {f"has_{s}": s in self.data.splits for s in ("train", "validation")}
        params["rows_test"] = self.rows["test"]
        result = self.con.execute(registry.key_figures_sql(key), params)
        names = [d[0] for d in result.description]
        return {f"{kind.prefix}_{name}": value for name, value in zip(names, result.fetchone() or ())}

    def _row_figures(self, figures: dict[str, Any]) -> dict[str, Any]:
        """The registry's row figures, from the key figures of the same row."""
        values = ", ".join(f"${name} AS {quote_ident(name)}" for name in figures)
        result = self.con.execute(f"WITH figures AS (SELECT {values}) {registry.row_figures_sql()}", figures)
        names = [d[0] for d in result.description]
        return dict(zip(names, result.fetchone() or ()))

    def measure(self, text_columns: Sequence[str], label_columns: Sequence[str]) -> list[Measurement]:
        """One Measurement per label column (or one with label_column None when there is none)."""
        text_columns, label_columns = tuple(text_columns), tuple(label_columns)
        self._load(text_columns, label_columns)
        text_values = ", ".join(f"t{i}" for i in range(len(text_columns)))
        text = self._figures(self._key("h_text", text_values), registry.TEXT)
        if not label_columns:
            # No label column: every figure that needs one is NR.
            figures = {c.name: text.get(c.name) for c in registry.figure_columns()}
            return [Measurement(None, text_columns, figures)]
        out = []
        for j, label in enumerate(label_columns):
            with_label = self._figures(self._key(f"h_l{j}", f"{text_values}, l{j}"), registry.TEXT_AND_LABEL)
            figures = {**text, **with_label}
            figures.update(self._row_figures(figures))
            out.append(Measurement(label, text_columns, {c.name: figures[c.name] for c in registry.figure_columns()}))
        return out

    def top_examples(self, text_columns: Sequence[str], limit: int = 5) -> dict[str, list[dict[str, Any]]]:
        """The most repeated leaked and duplicated text keys, with their row counts per split."""
        # measure() has normally loaded these text columns already
        if getattr(self, "_loaded", None) != tuple(text_columns):
            self._load(text_columns, ())
        cols = ", ".join(f"k{i}" for i in range(len(text_columns)))
        keys = ", ".join(f"t{i} AS k{i}" for i in range(len(text_columns)))
        base = (
            f"SELECT {cols}, "
            + ", ".join(f"count(*) FILTER (WHERE split = '{s}') AS {s}" for s in CANONICAL_SPLITS)
            + f" FROM (SELECT split, {keys} FROM rows_all) GROUP BY ALL"
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
