"""The SQL the registry's figures generate: the engine's per-key tables and SELECT items, and the
``lle`` views.

The figures and their own SQL are declared in :mod:`hubsurvey.core.figures`; this module turns
the declarations into whole statements (the engine, ``survey/metrics.py``, runs them; the store
creates the views). A new figure needs no edit here.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from hubsurvey.core import figures
from hubsurvey.core.figures import (
    Column,
    Format,
    Grain,
    KeyKind,
    NearGrain,
    Profile,
    ProfileFigure,
    SideFigure,
    SideGrain,
)

#: Python's whitespace (``str.split()``): ASCII controls 9-13 and 28-31, U+0085 and Unicode's
#: separators (Zs, Zl, Zp), as an RE2 class. tests/test_side_figures.py checks it on every code point.
WHITESPACE_CLASS = r"[\t\n\x{0B}\x{0C}\r\x{1C}-\x{1F}\x{85}\pZ]"


def blank_sql(value: str, sql_type: str) -> str:
    """SQL true when a text value (``value``, of DuckDB type ``sql_type``) is blank: NULL, or a
    string of nothing but whitespace (the empty string included), or a list whose elements are all
    blank (the empty list included). A value of another type (a struct) is blank only when NULL."""
    def blank_string(v: str) -> str:
        return f"regexp_full_match({v}, '{WHITESPACE_CLASS}*')"

    if sql_type == "VARCHAR":
        return f"({value} IS NULL OR {blank_string(value)})"
    if re.fullmatch(r"VARCHAR(\[\])+", sql_type):
        flat = value
        for _ in range(sql_type.count("[]") - 1):
            flat = f"flatten({flat})"
        each = blank_string("x")
        return f"({value} IS NULL OR coalesce(list_bool_and(list_transform({flat}, lambda x: x IS NULL OR {each})), true))"
    return f"({value} IS NULL)"


def side_figures_sql(declared: Iterable[SideFigure], grain: SideGrain) -> list[str]:
    """The SELECT items of ``declared``'s figures of one grain (count, then percentage), named as stored."""
    items = []
    for f in declared:
        if f.grain is not grain:
            continue
        value = _nr_guard(f.sql, f.needs, f.needs_any)
        items.append(f"{value} AS {f.name}")
        if f.percent:
            name, denominator, _ = f.percent
            items.append(f"({value}) / nullif({denominator}, 0) * 100 AS {name}")
    return items


#: The rows of each split holding a key, as SELECT items over ``rows_all`` grouped by key: the
#: ``n_<split>`` columns of every per-key table.
SPLIT_COUNTS = ", ".join(f"count(*) FILTER (WHERE split = '{s}') AS n_{s}" for s in figures.SPLITS)


def _nr_guard(sql: str, needs: Iterable[str], needs_any: Iterable[str] = ()) -> str:
    conditions = [f"$has_{split}" for split in needs]
    if tuple(needs_any):
        conditions.append("(" + " OR ".join(f"$has_{split}" for split in needs_any) + ")")
    if not conditions:
        return sql
    return f"CASE WHEN {' AND '.join(conditions)} THEN {sql} END"


def profile_figures_sql(profile: Profile, grain: Grain, declared: Iterable[ProfileFigure] = figures.PROFILE_FIGURES) -> list[str]:
    """The SELECT items of a profile's figures of one grain (count, then percentage), named as stored.

    ``$rows_<split>`` binds the split's row count; ``$has_<split>`` says which splits exist.
    ``declared``: the figures to pick from (``per_column_figures()`` for one text column).
    """
    items = []
    for f in declared:
        if f.grain is not grain:
            continue
        count = _nr_guard(f.sql.replace("{p}", f"{profile.name}_"), f.needs, f.needs_any)
        items.append(f"{count} AS {f.name(profile)}")
        if f.percent:
            stem, split = f.percent
            # an empty split has no percentage (NR), not 0 / 0 = NaN
            items.append(f"({count}) / nullif(${'rows_' + split}, 0) * 100 AS {profile.name}_{stem}")
    return items


def per_key_sql(key: Sequence[str], source: str = "rows_all") -> str:
    """The TEXT grain's table: ``rows_all`` grouped by ``key`` (SQL expressions), one row per distinct
    key: ``k0..`` (the key) and ``n_train``, ``n_validation``, ``n_test``, the rows of each split holding it.
    ``source``: ``rows_column`` for one text column (then the COLUMN grain's table, see :func:`per_column_key_sql`)."""
    aliases = ", ".join(f"{k} AS k{i}" for i, k in enumerate(key))
    extra = PER_COLUMN_COUNTS if source == PER_COLUMN_SOURCE else ""
    return f"""
SELECT {aliases},          -- one row per distinct key: how many rows of each split hold it
       {SPLIT_COUNTS}{extra}
FROM {source}
GROUP BY {', '.join(key)}
"""


#: The rows of one text column's key (``rows_all`` without the rows whose value of the column is
#: empty or NULL, with ``text_in_train``): the source of the COLUMN grain's table.
PER_COLUMN_SOURCE = "rows_column"


PER_COLUMN_COUNTS = ",\n       count(*) FILTER (WHERE split = 'test' AND NOT text_in_train) AS n_test_text_not_in_train"


def per_column_rows_sql(kept: Sequence[str], key: Sequence[str], per_key: str) -> str:
    """The rows of ``rows_all`` as the COLUMN grain reads them: ``split``, ``pos``, the ``kept``
    columns (the labels, each text column's hash) and ``text_in_train``: the row's whole text
    ``key`` (SQL expressions, as grouped in ``per_key``, the TEXT grain's table) occurs in train.
    ``rows_column`` is those of them whose hash of the one column measured is set."""
    on = " AND ".join(f"k.k{i} IS NOT DISTINCT FROM {k}" for i, k in enumerate(key))
    return f"""
SELECT split, pos, {', '.join(kept)},
       EXISTS (SELECT 1 FROM {per_key} AS k WHERE k.n_train > 0 AND {on}) AS text_in_train
FROM rows_all
"""


def per_pair_sql(key: Sequence[str], label: str, source: str = "rows_all") -> str:
    """The LABEL grain's table: ``rows_all`` grouped by (text key, label), one row per distinct pair:
    ``k0..``, ``label`` and ``n_<split>``. The label is compared exactly (a list as a whole)."""
    aliases = ", ".join(f"{k} AS k{i}" for i, k in enumerate(key))
    return f"""
SELECT {aliases}, {label} AS label,   -- one row per distinct (text key, label)
       {SPLIT_COUNTS}
FROM {source}
GROUP BY {', '.join(key)}, {label}
"""


def per_text_sql(width: int, per_key: str, per_pair: str) -> str:
    """The LABEL_TEXT grain's table, from the two above: one row per text key held by two or more
    rows (a text held by one row carries one label), with ``n_<split>``, ``labels_<split>`` (its
    distinct labels in the split) and ``test_label_not_in_train`` (a test label of the text is never
    its label in train, though the text is in train)."""
    k = [f"k{i}" for i in range(width)]
    on = " AND ".join(f"p.{c} IS NOT DISTINCT FROM r.{c}" for c in k)
    counts = ", ".join(f"sum(n_{s})::BIGINT AS n_{s}" for s in figures.SPLITS)
    labels = ",\n       ".join(f"count(*) FILTER (WHERE n_{s} > 0) AS labels_{s}" for s in figures.SPLITS)
    return f"""
SELECT {', '.join(f'p.{c}' for c in k)}, {counts},
       {labels},
       bool_or(n_test > 0 AND n_train = 0) AND sum(n_train) > 0 AS test_label_not_in_train
FROM {per_pair} AS p
SEMI JOIN (SELECT {', '.join(k)} FROM {per_key} WHERE n_train + n_validation + n_test > 1) AS r ON {on}
GROUP BY {', '.join(f'p.{c}' for c in k)}
"""


def aggregate_sql(items: Iterable[str], table: str) -> str:
    """One SELECT of figures (``items``: aggregates, named as stored) over a per-key ``table``."""
    select = ",\n    ".join(items)
    return f"SELECT\n    {select}\nFROM {table}"


def near_keys_sql() -> str:
    """The near KEY grain's table, from ``near_texts(k, n_train, n_validation, n_test, first_test)``
    (one row per distinct normalized text key) and ``near_pairs(a, b, jaccard)`` (every verified
    pair of different keys at >= the lowest threshold, in both directions). Only the keys held by
    test or validation rows: every near figure counts those rows."""
    return """
WITH neighbours AS (       -- per key: its best near key in train and validation, its earliest near test row
    SELECT p.a AS k,
           max(p.jaccard) FILTER (WHERE o.n_train > 0) AS best_train,
           max(p.jaccard) FILTER (WHERE o.n_validation > 0) AS best_validation,
           min(o.first_test) FILTER (WHERE o.n_test > 0 AND p.jaccard >= $threshold) AS earliest_near_test
    FROM near_pairs AS p JOIN near_texts AS o ON o.k = p.b
    GROUP BY p.a
)
SELECT t.*, n.best_train, n.best_validation, n.earliest_near_test
FROM near_texts AS t LEFT JOIN neighbours AS n USING (k)
WHERE t.n_test > 0 OR t.n_validation > 0
"""


def near_labels_sql(key: str, label: str) -> str:
    """The near LABEL grain's table: one row per (normalized text key, label) of the test rows of
    ``rows_all`` (``key`` and ``label`` are its columns), with whether the text is near train at
    tau and whether one of those train rows carries the same label (compared exactly)."""
    return f"""
WITH test_labels AS (
    SELECT {key} AS k, {label} AS label, count(*) AS n_test FROM rows_all WHERE split = 'test' GROUP BY ALL
), near_train AS (         -- each test key's train keys at >= tau: its own, and its near keys in train
    SELECT k AS a, k AS b FROM near_keys WHERE n_test > 0 AND n_train > 0
    UNION ALL
    SELECT p.a, p.b FROM near_pairs AS p JOIN near_texts AS o ON o.k = p.b
    WHERE p.jaccard >= $threshold AND o.n_train > 0
), train_labels AS (
    SELECT DISTINCT {key} AS k, {label} AS label FROM rows_all
    WHERE split = 'train' AND {key} IN (SELECT b FROM near_train)
), same AS (
    SELECT DISTINCT nt.a AS k, tl.label FROM near_train AS nt JOIN train_labels AS tl ON tl.k = nt.b
)
SELECT t.k, t.label, t.n_test,
       t.k IN (SELECT a FROM near_train) AS near_train,
       EXISTS (SELECT 1 FROM same AS s WHERE s.k = t.k AND s.label IS NOT DISTINCT FROM t.label) AS near_train_same_label
FROM test_labels AS t
"""


def near_figures_sql(grain: NearGrain) -> list[str]:
    """The SELECT items of the near figures of one grain (count, then percentage), named as stored."""
    items = []
    for f in figures.NEAR_FIGURES:
        if f.grain is not grain:
            continue
        count = _nr_guard(f.sql, f.needs, f.needs_any)
        items.append(f"{count} AS {f.name}")
        if f.percent:
            stem, split = f.percent
            items.append(f"({count}) / nullif(${'rows_' + split}, 0) * 100 AS {stem}")
    return items


def near_curve_sql(thresholds: Sequence[float]) -> str:
    """test_rows_near_train at each threshold (bound as $t0, $t1, ...), over ``near_keys``."""
    return "SELECT " + ", ".join(
        f"{figures.NEAR_CURVE_SQL.replace('$t', f'$t{i}')} AS at_{i}" for i in range(len(thresholds))
    ) + " FROM near_keys"


def lle_items(kind: KeyKind) -> list[str]:
    """The SELECT items of the LLE key figures of one key kind, named as stored."""
    return [f"{_nr_guard(f.sql, f.needs)} AS {f.name(kind)}" for f in figures.KEY_FIGURES]


def row_grain_sql(profile: Profile, names: Iterable[str]) -> str:
    """One SELECT of a profile's row-grain figures from ``figures``, a one-row table of ``names``
    (the other figures of the row, bound as ``$<name>``)."""
    values = ", ".join(f"${n} AS {n}" for n in names)
    items = ", ".join(profile_figures_sql(profile, Grain.ROW))
    return f"WITH figures AS (SELECT {values}) SELECT {items} FROM figures"


def row_figures_sql() -> str:
    """One SELECT giving every RowFigure from a one-row table ``figures`` of the other figures."""
    return "SELECT " + ", ".join(f"{f.sql} AS {f.name}" for f in figures.ROW_FIGURES) + " FROM figures"


def _published_sql(column: Column, source: str) -> str:
    """SQL for a figure as the published table writes it: 'NR', 78, '10.049%', '7.0'."""
    if column.fmt is Format.PERCENT:
        return f"coalesce(CAST(round({source}, 3) AS VARCHAR) || '%', '{figures.NR}')"
    return f"coalesce(CAST({source} AS VARCHAR), '{figures.NR}')"


def _typed_sql(column: Column, source: str) -> str:
    """SQL for a figure as a number: the published value (percent rounded to 3 decimals), NULL for NR."""
    return f"round({source}, 3)" if column.fmt is Format.PERCENT else source


def lle_view_sql(source: str = "current_measurements") -> str:
    """The ``lle`` view: the published table, 14 text columns, 'NR' for NULL."""
    cols = ",\n    ".join(f"{_published_sql(c, c.name)} AS {c.published_name}" for c in figures.figure_columns(figures.LLE_METHOD))
    return f"SELECT\n    dataset_name,\n    {cols}\nFROM {source}\nORDER BY dataset_name"


def lle_typed_view_sql(source: str = "current_measurements") -> str:
    """The ``lle_typed`` view: the ``lle`` view's columns as numbers (NULL for NR), plus the row's identity."""
    cols = ",\n    ".join(f"{_typed_sql(c, c.name)} AS {c.published_name}" for c in figures.figure_columns(figures.LLE_METHOD))
    return (
        f"SELECT\n    dataset_name,\n    {cols},\n    dataset_id, revision_sha, config, label_column\n"
        f"FROM {source}\nORDER BY dataset_name"
    )
