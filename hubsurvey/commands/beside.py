"""How ``audit`` prints what it measures beside the text comparison: blank rows and NULL labels
(``rows-2026``), groups shared across splits (``groups-2026``), time order (``time-2026``) and the
statement of what was checked.

A measured row carries the blank-row figures as columns, its config's group and date columns as
``groups`` and ``dates`` (lists of ``{group_column | date_column, source, ..., figures}``) and the
statement as ``checks`` (JSON text). ``audit --json`` shows them under ``rows``, ``groups``,
``dates`` and ``checks``; the table shows a line or two for each.
"""

from __future__ import annotations

import json
from typing import Any

from hubsurvey.core import figures
from hubsurvey.core.safety import visible


def checks_of(row: dict[str, Any]) -> list[dict[str, Any]] | None:
    """The row's statement of what was checked (None: measured before it)."""
    checks = row.get("checks")
    return json.loads(checks) if isinstance(checks, str) else checks


def _figures_json(found: dict[str, Any], columns: list[figures.Column]) -> dict[str, Any]:
    return {c.name: figures.json_value(found.get(c.name), c.fmt) if c.sql_type != "TIMESTAMP"
            else (found[c.name].isoformat() if found.get(c.name) is not None else None) for c in columns}


def beside_json(row: dict[str, Any]) -> dict[str, Any]:
    """``{"rows": {...}, "groups": [...], "dates": [...], "checks": [...]}`` of one row (NR: null);
    a key whose method was not measured is null."""
    rows_columns = figures.figure_columns(figures.ROWS_METHOD)
    measured = any(row.get(c.name) is not None for c in rows_columns)
    keep = ("group_column", "date_column", "source", "numbering_reused", "in_verdict")
    return {
        "rows": {"method": figures.ROWS_METHOD, **_figures_json(row, rows_columns)} if measured else None,
        "groups": [{**{k: g[k] for k in keep if k in g}, **_figures_json(g, figures.group_columns())}
                   for g in row["groups"]] if row.get("groups") is not None else None,
        "dates": [{**{k: d[k] for k in keep if k in d}, **_figures_json(d, figures.time_columns())}
                  for d in row["dates"]] if row.get("dates") is not None else None,
        "checks": checks_of(row),
    }


def _cell(value: Any, percent: Any = None) -> str:
    cell = figures.published(value, figures.Format.COUNT)
    return cell + (f" ({figures.published(percent, figures.Format.PERCENT)})" if percent is not None else "")


def render_beside(row: dict[str, Any]) -> str:
    """The block under the near figures: blank rows, each group and date column, what was checked."""
    lines = []
    splits = [s for s in figures.SPLITS if row.get(f"rows_{s}") is not None]
    if any(row.get(f"{s}_rows_blank_text") is not None for s in splits):
        lines.append(f"  {'blank text (rows)':34}" + "".join(
            f"{s + ' ' + _cell(row.get(f'{s}_rows_blank_text'), row.get(f'{s}_rows_blank_text_pct')):>22}" for s in splits))
        if row.get("label_column"):
            lines.append(f"  {'NULL label (rows)':34}" + "".join(
                f"{s + ' ' + _cell(row.get(f'{s}_rows_null_label'), row.get(f'{s}_rows_null_label_pct')):>22}" for s in splits))
    for g in row.get("groups") or []:
        mark = "  [numbering restarts per split: not in the verdict]" if g["numbering_reused"] else ""
        lines.append(f"  group {visible(str(g['group_column']), one_line=True)} ({g['source']}){mark}")
        lines.append(f"    {'test rows, group in train':32}{_cell(g.get('test_rows_group_in_train'), g.get('test_rows_group_in_train_pct')):>22}"
                     f"   groups shared {_cell(g.get('test_groups_in_train'))} of {_cell(g.get('groups_test'))}")
        if g.get("test_rows_group_in_validation") is not None:
            lines.append(f"    {'test rows, group in validation':32}"
                         f"{_cell(g.get('test_rows_group_in_validation'), g.get('test_rows_group_in_validation_pct')):>22}")
    for d in row.get("dates") or []:
        lines.append(f"  dates {visible(str(d['date_column']), one_line=True)} ({d['source']}): train rows after the first test date "
                     f"{_cell(d.get('train_rows_after_test_start'), d.get('train_rows_after_test_start_pct'))}, "
                     f"train/test overlap {figures.published(d.get('train_test_overlap_days'), figures.Format.FLOAT)} days")
    checks = checks_of(row)
    if checks:
        ran = [c["check"] for c in checks if c["ran"]]
        not_ran = [c["check"] for c in checks if not c["ran"]]
        lines.append(f"  {'checked':34}{', '.join(ran)}" + (f"; not checked: {', '.join(not_ran)}" if not_ran else ""))
    return "\n".join(lines)
