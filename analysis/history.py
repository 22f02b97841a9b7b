"""History across nights: every revision a survey measured, and what changed since the last run.

:func:`history` is one dataset's rows of the store's ``history`` view (``hubsurvey history`` prints
them; the site shows them on the dataset's page). :func:`since_last_run` compares the survey now
with the survey as it stood when the previous completed run ended (the report's "Since the last
run" section): datasets new to the survey, verdicts that changed, new contamination with
benchmarks, new leaks across datasets.

A dataset's verdict here is the report's (findings_dataset_verdict), computed in
:func:`dataset_verdicts` from the history rows by :mod:`hubsurvey.analysis.verdicts` (the one
function every surface judges a config or a dataset with), so that the survey now and the survey
then are judged by the same code; the tests check it equals the findings view on the current rows.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from hubsurvey.analysis.examples import resolve_dataset
from hubsurvey.analysis.findings import create_views
from hubsurvey.analysis.verdicts import dataset_verdicts as judge_datasets
from hubsurvey.core.errors import BadInputError
from hubsurvey.core.history import VERDICTS, history_view_sql
from hubsurvey.core.store import Store

#: The runs whose end is a point to compare with: survey runs that completed.
SURVEY_COMMAND = "run"
COMPLETED = "done"


def _ensure_view(store: Store) -> None:
    """A DB last written by a hubsurvey without the history view (views are recreated by writers)
    gets it as a TEMP view, so that reading it never needs a write."""
    found = store.query("SELECT count(*) FROM duckdb_views() WHERE view_name = 'history'")[1][0][0]
    if not found:
        store.con.execute(f"CREATE OR REPLACE TEMP VIEW history AS {history_view_sql()}")


def history(store: Store, dataset_id: str, config: str | None = None) -> list[dict[str, Any]]:
    """One dataset's rows of the ``history`` view: every revision measured of each (config, label
    column), oldest first, with its ``revision_sha``, ``parquet_sha``, ``measured_at``, ``run_id``,
    ``verdict`` and headline figures (NULL: NR, or not measured by that method).

    ``dataset_id``: an id, or the name part of exactly one measured id. An unknown dataset, or a
    config it never had, raises :class:`BadInputError` (one line, exit 2).
    """
    _ensure_view(store)
    dataset_id = resolve_dataset(store, dataset_id, any_revision=True)
    rows = store.records("SELECT * FROM history WHERE dataset_id = $d", {"d": dataset_id})
    if config is not None:
        configs = sorted({r["config"] for r in rows})
        rows = [r for r in rows if r["config"] == config]
        if not rows:
            raise BadInputError(f"{dataset_id}: no config {config!r} was measured (configs: {', '.join(configs)})")
    return rows


# --- a dataset's verdict, from its rows --------------------------------------------------------------

def dataset_verdicts(rows: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Each dataset's verdict over its rows (one revision per config: the survey at one moment), as
    findings_dataset_verdict judges it, by :func:`hubsurvey.analysis.verdicts.dataset_verdict`: on
    the first basis of near, exact, LLE that measured every row, the basis' worst measure among the
    rows, and clean only when every row is. ``config``: the config the verdict comes from."""
    rows = list(rows)
    out = {}
    for dataset_id, judged in judge_datasets(rows).items():
        own = judged.configs
        out[dataset_id] = {"dataset_id": dataset_id, "verdict": judged.verdict, "verdict_basis": judged.basis,
                           "measure": max((c.value or 0.0 for c in own), default=0.0),
                           "config": judged.decided_by.config, "configs": len({c.config for c in own}),
                           "revisions": sorted({c.revision_sha for c in own if c.revision_sha is not None})}
    return out


# --- since the last run ------------------------------------------------------------------------------

def previous_run(store: Store) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """The latest survey run (the one a report is written by or after) and the completed survey run
    before it (None: there is none)."""
    runs = store.records("SELECT run_id, status, started_at, finished_at FROM runs WHERE command = $c "
                         "ORDER BY started_at DESC, run_id DESC", {"c": SURVEY_COMMAND})
    if not runs:
        return None, None
    latest = runs[0]
    before = [r for r in runs[1:] if r["status"] == COMPLETED and r["finished_at"] is not None
              and r["started_at"] <= latest["started_at"]]
    return latest, before[0] if before else None


_STATE_AT = """
    -- the survey as it stood at $cutoff: what current_measurements showed then (each (dataset, config)
    -- at its newest revision measured by then; a one-off audit only for a dataset with no Hub rows)
    -- as current_measurements, a config the dataset's crawled revision no longer has is left out
    SELECT * FROM history h
    WHERE measured_at <= $cutoff
      AND (source = 'hub' OR NOT EXISTS (SELECT 1 FROM history o WHERE o.dataset_id = h.dataset_id
                                         AND o.source = 'hub' AND o.measured_at <= $cutoff))
      AND NOT (source = 'hub' AND EXISTS (SELECT 1 FROM datasets d
                                          WHERE d.dataset_id = h.dataset_id AND d.configs IS NOT NULL
                                            AND NOT list_contains(json_keys(d.configs), h.config)))
    QUALIFY revision_sha = first_value(revision_sha) OVER (
        PARTITION BY dataset_id, config, source = 'hub' ORDER BY measured_at DESC, revision_sha)
"""


def _rank(verdict: str) -> int:
    return VERDICTS.index(verdict)


def since_last_run(store: Store) -> dict[str, Any]:
    """What changed between the end of the previous completed survey run and now.

    Returns ``{"latest_run", "previous_run"`` (run_id, status, started_at, finished_at; None when
    absent), ``"new_datasets"`` (datasets the survey now shows that nothing had measured by then,
    with their verdict), ``"verdict_changes"`` (datasets whose verdict differs: before, after,
    ``change`` 'worse' or 'better', the revisions then and now), ``"new_contamination"`` ((dataset,
    benchmark) pairs with contaminated rows now and none then), ``"new_cross_leaks"`` (leaks across
    datasets of which one side is a revision measured since then: with both sides unchanged, the
    previous run's crossleaks compared the same rows), and ``"datasets"`` (how many the survey shows
    now)}. Without a previous completed run every list is empty.
    """
    _ensure_view(store)
    latest, before = previous_run(store)
    now_rows = store.records("SELECT * FROM history WHERE is_current")
    now = dataset_verdicts(now_rows)
    out: dict[str, Any] = {"latest_run": latest, "previous_run": before, "datasets": len(now),
                           "new_datasets": [], "verdict_changes": [], "new_contamination": [], "new_cross_leaks": []}
    if before is None:
        return out
    cutoff: datetime = before["finished_at"]
    then = dataset_verdicts(store.records(_STATE_AT, {"cutoff": cutoff}))
    measured_then = {r[0] for r in store.query("SELECT DISTINCT dataset_id FROM history WHERE measured_at <= $cutoff",
                                               {"cutoff": cutoff})[1]}
    out["new_datasets"] = [now[d] for d in now if d not in measured_then]
    for dataset_id, after in now.items():
        earlier = then.get(dataset_id)
        if earlier is None or earlier["verdict"] == after["verdict"]:
            continue
        out["verdict_changes"].append({
            "dataset_id": dataset_id, "before": earlier["verdict"], "after": after["verdict"],
            "change": "worse" if _rank(after["verdict"]) > _rank(earlier["verdict"]) else "better",
            "basis_before": earlier["verdict_basis"], "basis_after": after["verdict_basis"],
            "measure_before": earlier["measure"], "measure_after": after["measure"],
            "revisions_before": earlier["revisions"], "revisions_after": after["revisions"]})
    out["verdict_changes"].sort(key=lambda c: (c["change"] != "worse", -_rank(c["after"]), c["dataset_id"]))
    out["new_contamination"] = _new_contamination(store, cutoff)
    out["new_cross_leaks"] = _new_cross_leaks(store, cutoff)
    return out


def _new_contamination(store: Store, cutoff: datetime) -> list[dict[str, Any]]:
    """(dataset, benchmark) pairs contaminated at the current revisions and not in the state at the cutoff."""
    create_views(store)
    return store.records(f"""
        WITH then_rows AS ({_STATE_AT}),
        before AS (
            SELECT DISTINCT k.dataset_id, k.benchmark_id, k.benchmark_config, k.benchmark_split
            FROM contamination k
            JOIN (SELECT DISTINCT dataset_id, config, revision_sha FROM then_rows) t USING (dataset_id, config, revision_sha)
            WHERE k.contaminated_rows > 0 AND k.measured_at <= $cutoff
        )
        SELECT p.dataset_id, p.benchmark_id, p.benchmark_config, p.benchmark_split,
               sum(p.contaminated_rows)::BIGINT AS contaminated_rows,
               string_agg(DISTINCT p.config || '/' || p.split_name, ', ' ORDER BY p.config || '/' || p.split_name) AS splits,
               string_agg(DISTINCT left(p.revision_sha, 12), ', ') AS revisions
        FROM findings_contamination_pairs p
        WHERE p.contaminated_rows > 0 AND NOT p.benchmark_copy
          AND NOT EXISTS (SELECT 1 FROM before b WHERE b.dataset_id = p.dataset_id AND b.benchmark_id = p.benchmark_id
                          AND b.benchmark_config = p.benchmark_config AND b.benchmark_split = p.benchmark_split)
        GROUP BY ALL
        ORDER BY contaminated_rows DESC, p.dataset_id, p.benchmark_id, p.benchmark_config, p.benchmark_split""",
        {"cutoff": cutoff})


def _new_cross_leaks(store: Store, cutoff: datetime) -> list[dict[str, Any]]:
    """The leaks across datasets (cross_overlaps, relation 'leak') one of whose sides is a revision
    first measured after the cutoff, largest first."""
    return store.records("""
        WITH seen AS (SELECT DISTINCT dataset_id, revision_sha FROM measurements WHERE measured_at <= $cutoff)
        SELECT test_dataset, test_config, source_dataset, source_config, source_split, rows, test_rows,
               round(pct, 2) AS pct, test_revision, source_revision
        FROM cross_overlaps c
        WHERE relation = 'leak'
          AND (NOT EXISTS (SELECT 1 FROM seen s WHERE s.dataset_id = c.test_dataset AND s.revision_sha = c.test_revision)
               OR NOT EXISTS (SELECT 1 FROM seen s WHERE s.dataset_id = c.source_dataset AND s.revision_sha = c.source_revision))
        ORDER BY rows DESC, pct DESC, test_dataset, test_config, source_dataset, source_config, source_split""",
        {"cutoff": cutoff})


#: The history rows as exported (the results dataset's ``history`` config), in the view's order.
HISTORY_EXPORT_QUERY = ("SELECT * FROM history "
                        "ORDER BY dataset_id, config, label_column NULLS FIRST, measured_at, revision_sha, source")


def has_history(store: Store) -> bool:
    """Whether the survey measured some (dataset, config, label column) from the Hub at two revisions
    or more (a later night measured a changed dataset again): then the results dataset carries the
    ``history`` config. One-off audits of folders alone never add it."""
    _ensure_view(store)
    return bool(store.query(
        "SELECT count(*) FROM (SELECT 1 FROM history WHERE source = 'hub' GROUP BY dataset_id, config, label_column "
        "HAVING count(DISTINCT revision_sha) > 1)")[1][0][0])

