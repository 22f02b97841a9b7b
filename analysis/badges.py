"""A shields.io endpoint badge per surveyed dataset: its test contamination, from the results DB.

A badge is the JSON a shields.io *endpoint* badge reads
(``https://img.shields.io/endpoint?url=<where the JSON is served>``)::

    {"schemaVersion": 1, "label": "test contamination", "message": "2.1%", "color": "orange"}

The message is the dataset's worst ``normalized_contaminated_test_pct`` over its configs (the figure
``hubsurvey check`` tests by default, and the exact verdict's measure: test rows in train or
validation, or repeating an earlier test row, under the normalized profile), as published (3
decimals, trailing zeros dropped). Its colour follows the exact basis' rules of
``findings_verdict_rules`` (their thresholds are written once, there):

===============  ==============================================  ===============
verdict          rule                                            colour
===============  ==============================================  ===============
clean            0 contaminated test rows in every config        ``brightgreen``
minor            not clean, worst below 1%                       ``green``
caution          at least 1% and below 5%                        ``orange``
unreliable       at least 5%                                     ``red``
NR               a config not measured by the exact method       ``lightgrey``
===============  ==============================================  ===============

:func:`badges` is a pure function of the DB rows (``findings_dataset_verdict`` and the rules);
:func:`read_badges` reads them, :func:`badge_files` gives each badge's path and bytes, so that the
results dataset (``analysis/publish.py``) and a static site write the same files.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from hubsurvey.analysis.findings import create_views
from hubsurvey.core.figures import EXACT_METHOD, NR
from hubsurvey.core.store import Store, safe_name

LABEL = "test contamination"
#: a badge's folder in the results dataset (and a site)
BADGES_DIR = "badges"
COLORS = {"clean": "brightgreen", "minor": "green", "caution": "orange", "unreliable": "red"}
NR_COLOR = "lightgrey"


def badge(row: Mapping[str, Any], rules: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """One dataset's badge from its ``findings_dataset_verdict`` row and the exact basis' rules
    (``findings_verdict_rules`` rows: verdict, at_least_pct, below_pct, in ``ord`` order)."""
    worst = row.get("worst_normalized_contaminated_test_pct")
    if worst is None or row.get("configs_exact") != row.get("configs"):  # an unmeasured config never looks clean
        return {"schemaVersion": 1, "label": LABEL, "message": NR, "color": NR_COLOR}
    clean = not row.get("normalized_test_rows_contaminated")
    verdict = next(r["verdict"] for r in rules
                   if (r["verdict"] == "clean") == clean
                   and (r["at_least_pct"] is None or worst >= r["at_least_pct"])
                   and (r["below_pct"] is None or worst < r["below_pct"]))
    return {"schemaVersion": 1, "label": LABEL, "message": f"{round(worst, 3):g}%", "color": COLORS[verdict]}


def badges(rows: Sequence[Mapping[str, Any]], rules: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """``{dataset_id: badge}`` for every dataset row, in the rows' order (pure: rows in, badges out)."""
    exact_rules = sorted((r for r in rules if r["basis"] == EXACT_METHOD), key=lambda r: r["ord"])
    return {row["dataset_id"]: badge(row, exact_rules) for row in rows}


def read_badges(store: Store) -> dict[str, dict[str, Any]]:
    """Every surveyed dataset's badge (``current_measurements``), by dataset id, sorted."""
    create_views(store)
    rows = store.records("SELECT dataset_id, configs, configs_exact, worst_normalized_contaminated_test_pct, "
                         "normalized_test_rows_contaminated FROM findings_dataset_verdict ORDER BY dataset_id")
    rules = store.records("SELECT basis, ord, verdict, at_least_pct, below_pct FROM findings_verdict_rules")
    return badges(rows, rules)


def badge_path(dataset_id: str) -> str:
    """Where a dataset's badge goes, relative to the folder: ``badges/<safe name>.json`` (one path
    component from the Hub name, so it never leaves its folder)."""
    return f"{BADGES_DIR}/{safe_name(dataset_id)}.json"


def badge_files(store: Store) -> dict[str, bytes]:
    """``{relative path: JSON bytes}`` of every dataset's badge, for whoever writes them."""
    return {badge_path(d): (json.dumps(b, ensure_ascii=False) + "\n").encode("utf-8")
            for d, b in read_badges(store).items()}
