"""What the site shows beside the text comparison: groups shared across splits
(``group_measurements``, ``groups-2026``), time order (``time_measurements``, ``time-2026``) and
each config's statement of what was checked (``measurements.checks``).

One self-contained data function per page section (:func:`beside_section`), fed by the queries
here; its template is ``templates/site_beside.html.j2``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from hubsurvey.core import figures

#: The group columns of the site batch's current revisions.
GROUP_PAGE_SQL = """
SELECT g.* FROM group_measurements g
WHERE g.dataset_id IN (SELECT dataset_id FROM site_ids)
  AND EXISTS (SELECT 1 FROM site_current m WHERE m.dataset_id = g.dataset_id AND m.revision_sha = g.revision_sha
                                             AND m.config = g.config)
ORDER BY g.dataset_id, g.config, g.group_column"""
#: The date columns of the site batch's current revisions.
TIME_PAGE_SQL = GROUP_PAGE_SQL.replace("group_measurements", "time_measurements").replace("g.group_column", "g.date_column")

#: The group figures the page shows, each a count with its percentage (the results dataset has them all).
GROUP_SHOWN = ("test_rows_group_in_train", "test_rows_group_in_validation", "test_groups_in_train",
               "validation_rows_group_in_train")


def checks_list(value: Any) -> list[dict[str, Any]]:
    """A row's ``checks`` as a list (empty: measured before the statement)."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return []
    return value if isinstance(value, list) else []


#: Reasons a check did not run that every config without it gives, said briefly on a dataset page
#: and in full once, on the site's glossary page (templates/site_figures.html.j2).
BRIEF_WHY_NOT = {
    "no group column (id-like columns whose values repeat within a split, or declared)": "no group column",
}


def _check_words(check: Mapping[str, Any]) -> str:
    """What one check ran with, or why it did not, in a few words."""
    if not check.get("ran"):
        why = str(check.get("why_not") or "")
        return BRIEF_WHY_NOT.get(why, why)
    if check.get("check") == "semantic":  # paraphrase candidates for review: never a figure
        return (f"cosine >= {check.get('threshold')}, {check.get('model')}: "
                f"{check.get('test_rows_with_candidates')} test rows with candidates for review")
    if check.get("threshold") is not None:
        return f"Jaccard >= {check['threshold']}"
    if check.get("columns"):
        return ", ".join(map(str, check["columns"]))
    if check.get("benchmarks"):
        return ", ".join(map(str, check["benchmarks"]))
    return ""


def _pct(value: Any) -> str:
    return figures.published(value, figures.Format.PERCENT)


def _count(count: Any, percent: Any) -> str:
    cell = figures.published(count, figures.Format.COUNT)
    return f"{cell} ({_pct(percent)})" if percent is not None else cell


def beside_section(rows: Sequence[Mapping[str, Any]], groups: Sequence[Mapping[str, Any]],
                   dates: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """One config's section: its measurement rows (one per label column), its group and date
    columns' rows. ``{groups, dates, checks}``, every value a published string (the template
    escapes them); None when nothing of it was measured (rows of an older hubsurvey). The blank-row
    figures, columns of ``measurements``, are a method of the page's figures table (``site.figure_table``)."""
    splits = [s for s in figures.SPLITS if rows and rows[0].get(f"rows_{s}") is not None]
    definitions = {c.name: c.definition for c in figures.group_columns()}
    group_rows = [{
        "column": g["group_column"], "source": g["source"], "numbering_reused": g["numbering_reused"],
        "in_verdict": g["in_verdict"],
        "cells": {name: _count(g.get(name), g.get(f"{name}_pct")) for name in GROUP_SHOWN},
        "concentration": {s: {"groups": figures.published(g.get(f"groups_{s}"), figures.Format.COUNT),
                              "rows_per_group": (f"{g[f'rows_per_group_{s}']:.1f}" if g.get(f"rows_per_group_{s}") is not None
                                                 else figures.NR),
                              "largest": _pct(g.get(f"largest_group_pct_{s}"))} for s in splits},
    } for g in groups]
    date_rows = [{
        "column": d["date_column"], "source": d["source"],
        "ranges": {s: (f"{d.get(f'first_date_{s}')} .. {d.get(f'last_date_{s}')}" if d.get(f"first_date_{s}") else figures.NR)
                   for s in splits},
        "train_after": _count(d.get("train_rows_after_test_start"), d.get("train_rows_after_test_start_pct")),
        "validation_after": _count(d.get("validation_rows_after_test_start"), d.get("validation_rows_after_test_start_pct")),
        "overlap_days": figures.published(d.get("train_test_overlap_days"), figures.Format.FLOAT),
    } for d in dates]
    checks = [{"check": c.get("check"), "ran": bool(c.get("ran")), "words": _check_words(c)}
              for c in checks_list(rows[0].get("checks") if rows else None)]
    if not (group_rows or date_rows or checks):
        return None
    return {"splits": splits, "groups": group_rows, "dates": date_rows, "checks": checks,
            "group_titles": {name: next(f.title for f in figures.GROUP_FIGURES if f.name == name) for name in GROUP_SHOWN},
            "group_definitions": {name: definitions[name] for name in GROUP_SHOWN}}
