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
import weakref
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import duckdb

from hubsurvey.core.figures import EXACT_METHOD, LLE_METHOD, NEAR_METHOD
from hubsurvey.core.history import VERDICT_CAUTION_BELOW, VERDICT_MINOR_BELOW
from hubsurvey.core.store import Store

SQL_FILE = Path(__file__).with_name("findings.sql")

#: The method names findings.sql uses, defined from the registry as SQL macros (``near_method()``),
#: so the SQL never spells them.
METHOD_MACROS: dict[str, str] = {"lle_method": LLE_METHOD, "exact_method": EXACT_METHOD, "near_method": NEAR_METHOD}

#: The prefix of every findings view: ``findings_<key>`` is ``findings()[<key>]``.
VIEW_PREFIX = "findings_"

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


def sql_string(value: str) -> str:
    """A SQL string literal (quotes doubled); for the registry's constants, which DuckDB cannot bind
    inside a macro."""
    return "'" + value.replace("'", "''") + "'"


#: The verdict thresholds findings.sql uses (in %), declared once in hubsurvey/core/history.py, whose
#: history view grades each row by the same rule.
THRESHOLD_MACROS: dict[str, float] = {"verdict_minor_below": VERDICT_MINOR_BELOW,
                                      "verdict_caution_below": VERDICT_CAUTION_BELOW}


def method_macros() -> list[str]:
    """The statements that define :data:`METHOD_MACROS` and :data:`THRESHOLD_MACROS` (run before
    findings.sql's own)."""
    return [f"CREATE OR REPLACE TEMP MACRO {name}() AS {sql_string(value)}" for name, value in METHOD_MACROS.items()] \
        + [f"CREATE OR REPLACE TEMP MACRO {name}() AS {value!r}" for name, value in THRESHOLD_MACROS.items()]


def load_sql() -> tuple[list[str], dict[str, str]]:
    """findings.sql's setup statements (the method macros first) and its views."""
    setup, views = parse_sql(SQL_FILE.read_text(encoding="utf-8"))
    return method_macros() + setup, views


def findings_views(views: Iterable[str]) -> dict[str, str]:
    """findings() key -> view, for every ``findings_<key>`` view among ``views`` (in their order)."""
    return {name.removeprefix(VIEW_PREFIX): name for name in views if name.startswith(VIEW_PREFIX)}


#: findings() key -> the TEMP view that computes it (see findings.sql for each definition): every
#: ``findings_*`` view, so a new view is a new finding with no other edit.
FINDINGS: dict[str, str] = findings_views(load_sql()[1])


def _connection(store: Store | duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyConnection:
    return store.con if isinstance(store, Store) else store


#: connection -> the statements its findings views and macros were created from. They are TEMP
#: (they live as long as the connection), and every output asks for them (a site five times, a
#: publish four): created again each time, DuckDB bound all of them anew, 0.3-0.4 s a time.
_CREATED: weakref.WeakKeyDictionary[duckdb.DuckDBPyConnection, tuple[list[str], dict[str, str]]] = \
    weakref.WeakKeyDictionary()


def create_views(store: Store | duckdb.DuckDBPyConnection) -> list[str]:
    """Create (or replace) every findings TEMP view on the store's connection; return their names.

    A connection that already has them, from the same findings.sql, keeps them."""
    con = _connection(store)
    setup, views = load_sql()
    if _CREATED.get(con) == (setup, views):
        return list(views)
    for statement in setup:
        con.execute(statement)
    for name, body in views.items():
        con.execute(f"CREATE OR REPLACE TEMP VIEW {name} AS\n{body}")
    _CREATED[con] = (setup, views)
    return list(views)


def findings(store: Store | duckdb.DuckDBPyConnection, top_n: int = DEFAULT_TOP_N) -> dict[str, list[dict[str, Any]]]:
    """Every finding as a list of row dicts, keyed as in :data:`FINDINGS`.

    ``top_test_biased`` keeps the ``top_n`` highest-ranked rows (the view ranks them all).
    """
    con = _connection(store)
    out: dict[str, list[dict[str, Any]]] = {}
    for key, view in findings_views(create_views(con)).items():
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
