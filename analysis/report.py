"""The survey report: ``REPORT.md`` and a self-contained ``report.html`` rendered from the findings.

``hubsurvey report`` is a thin layer over :func:`render_report`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hubsurvey.analysis.findings import DEFAULT_TOP_N, findings
from hubsurvey.analysis.render import DEFINITIONS, environment, provenance
from hubsurvey.core.store import Store

REPORT_MD = "REPORT.md"
REPORT_HTML = "report.html"
TITLE = "Leaks and duplicates in Hugging Face Hub datasets: survey results"
KEY_LABELS = {"text": "text", "text_and_label": "text+label"}


def report_context(store: Store, top_n: int = DEFAULT_TOP_N) -> dict[str, Any]:
    """Everything the report templates use (findings, provenance, definitions, verdicts)."""
    found = findings(store, top_n=top_n)
    overview = found["overview"][0]
    top = found["top_test_biased"]
    return {
        "title": TITLE,
        "f": found,
        "o": overview,
        "a": found["annotation"][0],
        "p": provenance(store, overview),
        "top_n": top_n,
        "ranked": top[0]["rows_ranked"] if top else 0,
        "definitions": DEFINITIONS,
        "key_labels": KEY_LABELS,
        # the verdict rule is defined once, in findings.sql (findings_verdict_rules)
        "verdict_rules": found["verdict_rules"],
        "verdicts": found["dataset_verdict"],
    }


def render_markdown(context: dict[str, Any]) -> str:
    return environment().get_template("REPORT.md.j2").render(context)


def render_html(context: dict[str, Any]) -> str:
    from hubsurvey.analysis.charts import charts

    return environment().get_template("report.html.j2").render(context, charts=charts(context["f"]))


def render_report(store: Store, out_dir: str | Path, top_n: int = DEFAULT_TOP_N) -> list[Path]:
    """Write ``REPORT.md`` and ``report.html`` into ``out_dir``; return their paths."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    context = report_context(store, top_n=top_n)
    md_path, html_path = out / REPORT_MD, out / REPORT_HTML
    md_path.write_text(render_markdown(context), encoding="utf-8")
    html_path.write_text(render_html(context), encoding="utf-8")
    return [md_path, html_path]
