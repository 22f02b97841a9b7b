"""The store's migrations: numbered SQL files (``NNN_what.sql``, shipped as package data), each
applied once, in order, in one transaction (:meth:`hubsurvey.core.store.Store._migrate`; a DB
records the numbers applied in ``schema_version``).

Migrations hold tables. The views are derived from the method registry: a DB opened for writing
has them recreated when they are not this registry's (their comment signs them), and gains then the
figure columns a migration does not name. A new table or column is a new file numbered after the
last; a released file never changes. One line of the first file is the registry's: the LLE figure
columns (which never change) stand where it says ``{lle_figure_columns}``.
"""

from __future__ import annotations

import re
from importlib import resources

from hubsurvey.core import figures

_NAME = re.compile(r"(\d{3})_[a-z0-9_]+\.sql")


def _lle_figure_columns() -> str:
    return ",\n    ".join(f"{c.name} {c.sql_type}" for c in figures.figure_columns(figures.LLE_METHOD)) + ","


def load() -> list[str]:
    """The migrations' SQL, in order (the first is number 1); numbers without a gap, checked."""
    found = sorted((m.group(1), f) for f in resources.files(__package__).iterdir() if (m := _NAME.fullmatch(f.name)))
    numbers = [int(number) for number, _ in found]
    if numbers != list(range(1, len(found) + 1)):
        raise RuntimeError(f"the migrations must be numbered 1 to {len(found)} without a gap, not {numbers}")
    return [f.read_text(encoding="utf-8").replace("{lle_figure_columns}", _lle_figure_columns()) for _, f in found]


MIGRATIONS: list[str] = load()
SCHEMA_VERSION = len(MIGRATIONS)
