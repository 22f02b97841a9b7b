"""The survey report: ``REPORT.md`` and a self-contained ``report.html`` rendered from the findings.

``hubsurvey report`` is a thin layer over :func:`render_report`.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hubsurvey.analysis.findings import DEFAULT_TOP_N, findings
from hubsurvey.analysis.render import (
    DEFINITIONS,
    EXACT_DEFINITIONS,
    NEAR_DEFINITIONS,
    cross_setting,
    environment,
    near_setting,
    near_vs_exact_table,
    provenance,
    raw_vs_normalized_table,
    shared_tables,
)
from hubsurvey.core.figures import EXACT_METHOD, LLE_METHOD, NEAR_METHOD
from hubsurvey.core.store import Store

REPORT_MD = "REPORT.md"
REPORT_HTML = "report.html"
TITLE = "Leaks and duplicates in Hugging Face Hub datasets: survey results"
KEY_LABELS = {"text": "text", "text_and_label": "text+label"}


#: The fields of a run's final state that a report written at the end of that run shows.
FINAL_RUN_FIELDS = ("status", "finished_at", "counts")


def with_final_run(p: dict[str, Any], final_run: Mapping[str, Any] | None) -> dict[str, Any]:
    """The provenance with the latest run's final state, as the run that writes the report knows it.

    A run writes its report just before it records its final state, so the DB still says
    ``running``; ``final_run`` (``run_id``, ``status``, ``finished_at``, ``counts``) is applied to the
    latest run when it is that run (or names no run).
    """
    run = p.get("run")
    if not final_run or not run or final_run.get("run_id", run.get("run_id")) != run.get("run_id"):
        return p
    return {**p, "run": {**run, **{k: final_run[k] for k in FINAL_RUN_FIELDS if k in final_run}}}


def report_context(
    store: Store, top_n: int = DEFAULT_TOP_N, final_run: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """Everything the report templates use (findings, provenance, definitions, verdicts, exact and
    near-duplicate findings).

    ``final_run``: the final state of the run writing this report (see :func:`with_final_run`).
    """
    found = findings(store, top_n=top_n)
    overview = found["overview"][0]
    top = found["top_test_biased"]
    context: dict[str, Any] = {
        "title": TITLE,
        "f": found,
        "o": overview,
        "a": found["annotation"][0],
        "p": with_final_run(provenance(store, overview), final_run),
        "top_n": top_n,
        "ranked": top[0]["rows_ranked"] if top else 0,
        "definitions": DEFINITIONS,
        "key_labels": KEY_LABELS,
        **cross_setting(found),
        # the verdict rules are defined once, in findings.sql (findings_verdict_rules), per basis:
        # near-2026 first, then the exact and the LLE fallbacks
        "verdict_rules": [r for r in found["verdict_rules"] if r["basis"] == NEAR_METHOD],
        "exact_rules": [r for r in found["verdict_rules"] if r["basis"] == EXACT_METHOD],
        "fallback_rules": [r for r in found["verdict_rules"] if r["basis"] == LLE_METHOD],
        "verdicts": found["dataset_verdict"],
        "exact_definitions": EXACT_DEFINITIONS,
        "gain": found["normalization_gain"][0],
        # the datasets whose normalized contamination exceeds the raw one, most extra rows first
        "gainers": [r for r in found["raw_vs_normalized"] if r["extra_test_rows"] > 0][:top_n],
        "gainers_total": sum(1 for r in found["raw_vs_normalized"] if r["extra_test_rows"] > 0),
        "near_definitions": NEAR_DEFINITIONS,
        **near_setting(overview),
        "near_gain": found["near_gain"][0],
        "near_conflicts": found["near_label_conflicts"][0],
        # the datasets whose near contamination exceeds the exact one, largest gain first
        "near_gainers": [r for r in found["near_vs_exact"] if r["extra_test_rows"] > 0][:top_n],
        "near_gainers_total": sum(1 for r in found["near_vs_exact"] if r["extra_test_rows"] > 0),
        # contamination with benchmarks: the line per dataset and the overview
        "contamination": found["contamination"],
        "contamination_overview": found["contamination_overview"][0],
        # the most contaminated splits, a benchmark's own test set under another name (a fork) left out
        "contamination_pairs": [r for r in found["contamination_pairs"]
                                if r["contaminated_rows"] > 0 and not r["benchmark_copy"]][:top_n],
    }
    context["tables"] = shared_tables(found, context["p"], KEY_LABELS)
    context["tables"]["raw_vs_normalized"] = raw_vs_normalized_table(context["gainers"])
    context["tables"]["near_vs_exact"] = near_vs_exact_table(context["near_gainers"])
    return context


def render_markdown(context: dict[str, Any]) -> str:
    return environment().get_template("REPORT.md.j2").render(context)


def render_html(context: dict[str, Any]) -> str:
    from hubsurvey.analysis.charts import charts

    return environment().get_template("report.html.j2").render(context, charts=charts(context["f"]))


def render_report(
    store: Store, out_dir: str | Path, top_n: int = DEFAULT_TOP_N, final_run: Mapping[str, Any] | None = None
) -> list[Path]:
    """Write ``REPORT.md`` and ``report.html`` into ``out_dir``; return their paths.

    A run that writes its own report passes ``final_run={"run_id", "status", "finished_at"}``, so the
    report shows its final state rather than "running" (the DB records it a moment later).
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    context = report_context(store, top_n=top_n, final_run=final_run)
    md_path, html_path = out / REPORT_MD, out / REPORT_HTML
    md_path.write_text(render_markdown(context), encoding="utf-8")
    html_path.write_text(render_html(context), encoding="utf-8")
    return [md_path, html_path]
