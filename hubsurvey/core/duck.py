"""DuckDB connections as hubsurvey opens them: without DuckDB's progress bar, and stopped with the command.

DuckDB draws an unlabelled bar on stdout for any query running over two seconds, terminal or not
(a fingerprint's read feeding a compiled pass is such a query): it would land in a command's output,
a pipe, or a JSON document. Every connection of hubsurvey goes through :func:`connect` (or
:func:`quiet` for one opened with arguments of its own); the command's own progress goes to stderr.
"""

from __future__ import annotations

from typing import Any

import duckdb

from hubsurvey.core.signals import interrupt_on_stop


def quiet(con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyConnection:
    """``con`` without DuckDB's progress bar (a setting of the connection, not a global one), and
    interrupted at once when the command is asked to stop (``hubsurvey.core.signals``)."""
    con.execute("SET enable_progress_bar = false")
    interrupt_on_stop(con)
    return con


def connect(database: str = ":memory:", **kwargs: Any) -> duckdb.DuckDBPyConnection:
    """``duckdb.connect`` without the progress bar."""
    return quiet(duckdb.connect(database, **kwargs))
