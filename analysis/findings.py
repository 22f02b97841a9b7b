"""The survey's findings: named SQL views over the results store, defined in ``findings.sql``.

Each finding is written once, in SQL, with its definition in a comment beside it. The views are
TEMP views created on the caller's connection (nothing is written to the DB file, no migration),
so they work on a read-only connection too: ``hubsurvey sql "SELECT * FROM findings_splits"``.

Unit of every percentage: one row of ``current_measurements``, i.e. one (dataset, config, label
column) at the newest measured revision, as the 2024 LLE survey counted. NR (NULL) figures are
left out of denominators, never counted as 0.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import duckdb

from hubsurvey.core.store import Store

SQL_FILE = Path(__file__).with_name("findings.sql")

#: findings() key -> the TEMP view that computes it (see findings.sql for each definition).
FINDINGS: dict[str, str] = {
    "overview": "findings_overview",
    "splits": "findings_splits",
    "test_bias": "findings_test_bias",
    "annotation": "findings_annotation",
    "top_test_biased": "findings_top_test_biased",
    "by_task_category": "findings_by_task_category",
    "failures": "findings_failures",
    "exact_configs": "findings_exact_configs",
    "verdict_rules": "findings_verdict_rules",
    "dataset_verdict": "findings_dataset_verdict",
    "raw_vs_normalized": "findings_raw_vs_normalized",
    "normalization_gain": "findings_normalization_gain",
    "label_conflicts": "findings_label_conflicts",
    "validation_leaks": "findings_validation_leaks",
    "near_configs": "findings_near_configs",
    "near_vs_exact": "findings_near_vs_exact",
    "near_gain": "findings_near_gain",
    "near_label_conflicts": "findings_near_label_conflicts",
    "near_curve": "findings_near_curve",
    "mixed_revisions": "findings_mixed_revisions",
    "cross_top_leaks": "findings_cross_top_leaks",
    "cross_overview": "findings_cross_overview",
    "cross_families": "findings_cross_families",
    # contamination with benchmarks
    "contamination": "findings_contamination",
    "contamination_pairs": "findings_contamination_pairs",
    "contamination_overview": "findings_contamination_overview",
}

DEFAULT_TOP_N = 20

_VIEW_HEADER = re.compile(r"^-- view: ([a-z_][a-z0-9_]*)[ \t]*$", re.MULTILINE)


def parse_sql(text: str) -> tuple[list[str], dict[str, str]]:
    """Split findings.sql into its setup statements and its ``{view name: SELECT}`` blocks."""
    parts = _VIEW_HEADER.split(text)
    setup = [s.strip() for s in _statements(parts[0]) if s.strip()]
    views: dict[str, str] = {}
    for name, body in zip(parts[1::2], parts[2::2]):
        body = body.strip().rstrip(";").strip()
        if not body or ";" in _strip_comments(body):
            raise ValueError(f"findings.sql: view {name} must be exactly one SELECT statement")
        views[name] = body
    return setup, views


def _strip_comments(sql: str) -> str:
    return "\n".join(line.split("--", 1)[0] for line in sql.splitlines())


def _statements(sql: str) -> list[str]:
    """The ';'-terminated statements of a block of SQL that has no ';' inside strings."""
    return list(_strip_comments(sql).split(";"))


def load_sql() -> tuple[list[str], dict[str, str]]:
    return parse_sql(SQL_FILE.read_text(encoding="utf-8"))


def _connection(store: Store | duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyConnection:
    return store.con if isinstance(store, Store) else store


def create_views(store: Store | duckdb.DuckDBPyConnection) -> list[str]:
    """Create (or replace) every findings TEMP view on the store's connection; return their names."""
    con = _connection(store)
    setup, views = load_sql()
    for statement in setup:
        con.execute(statement)
    for name, body in views.items():
        con.execute(f"CREATE OR REPLACE TEMP VIEW {name} AS\n{body}")
    return list(views)


def findings(store: Store | duckdb.DuckDBPyConnection, top_n: int = DEFAULT_TOP_N) -> dict[str, list[dict[str, Any]]]:
    """Every finding as a list of row dicts, keyed as in :data:`FINDINGS`.

    ``top_test_biased`` keeps the ``top_n`` highest-ranked rows (the view ranks them all).
    """
    con = _connection(store)
    create_views(con)
    out: dict[str, list[dict[str, Any]]] = {}
    for key, view in FINDINGS.items():
        sql = f"SELECT * FROM {view}"
        params: dict[str, Any] = {}
        if key == "top_test_biased":
            sql += " WHERE rank <= $n ORDER BY rank"
            params = {"n": int(top_n)}
        result = con.execute(sql, params)
        names = [d[0] for d in result.description]
        out[key] = [dict(zip(names, row)) for row in result.fetchall()]
    return out


def latest_run(store: Store | duckdb.DuckDBPyConnection, command_like: str = "%") -> dict[str, Any] | None:
    """The newest survey ``runs`` row whose command is LIKE ``command_like`` (for provenance), or None.

    One-off ``audit`` runs and ``crossleaks`` runs (which measure nothing) are not survey runs:
    they never stand as the survey's provenance.
    """
    con = _connection(store)
    result = con.execute(
        "SELECT * FROM runs WHERE command LIKE $c AND command NOT IN ('audit', 'crossleaks') "
        "ORDER BY started_at DESC, run_id DESC LIMIT 1",
        {"c": command_like},
    )
    names = [d[0] for d in result.description]
    row = result.fetchone()
    return dict(zip(names, row)) if row else None
