"""How ``audit`` prints the figures of each text column alone (``figures.per_column_columns()``).

A measured row carries them as ``per_column``: ``{column: {profile: {figure: value}}}``, for a
config with two text columns or more (absent otherwise). ``audit --json`` shows them under
``exact.per_column`` with the names ``exact.raw`` uses; the table shows a few of them per column.
"""

from __future__ import annotations

from typing import Any

from hubsurvey.core import figures

#: The figures the table shows for each text column (JSON has them all).
SHOWN = ("test_rows_in_train", "test_rows_column_in_train_only", "test_rows_contaminated")


def per_column_json(row: dict[str, Any]) -> dict[str, dict[str, dict[str, Any]]] | None:
    """``{column: {"raw": {...}, "normalized": {...}}}`` with JSON numbers (NR: null); None when
    the row has no per-column figures (one text column), so that the key is left out."""
    per_column = row.get("per_column")
    if not per_column:
        return None
    columns = figures.per_column_columns()
    return {column: {profile: {c.name: figures.json_value(found.get(c.name), c.fmt) for c in columns}
                     for profile, found in by_profile.items()}
            for column, by_profile in per_column.items()}


def render_per_column(row: dict[str, Any]) -> str:
    """The per-column block under the exact figures: per text column, count (percent of test) per profile."""
    per_column = row.get("per_column")
    if not per_column:
        return ""
    by_name = {c.name: c for c in figures.per_column_columns()}
    titles = {f.stem: f.title for f in figures.per_column_figures()}
    profiles = figures.PROFILES
    lines = [f"  {'per text column (rows, each once)':34}" + "".join(f"{p.name:>18}" for p in profiles)]
    for column, by_profile in per_column.items():
        lines.append(f"  {column}")
        for name in SHOWN:
            count = by_name[name]
            percent = next((c for c in by_name.values() if c.figure is count.figure and c.percent_of), None)
            cells = []
            for profile in profiles:
                found = by_profile.get(profile.name, {})
                cell = figures.published(found.get(name), figures.Format.COUNT)
                if percent is not None and found.get(percent.name) is not None:
                    cell += f" ({figures.published(found[percent.name], figures.Format.PERCENT)})"
                cells.append(cell)
            lines.append(f"    {titles[name]:32}" + "".join(f"{c:>18}" for c in cells))
    return "\n".join(lines)
