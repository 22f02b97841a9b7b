"""The analysis steps of a run: leaks across datasets, then the report."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from hubsurvey.analysis.crossleaks import CrossSummary, crossleaks
from hubsurvey.analysis.report import render_report
from hubsurvey.core.errors import StoreError, one_line
from hubsurvey.core.steps import Counts, Recorded, RunContext, RunEnd, Step
from hubsurvey.core.store import now

log = logging.getLogger(__name__)


@dataclass
class CrossleaksStep(Step):
    """Every test split against every other dataset's splits (:func:`crossleaks`), within 60% of a
    worker's memory ceiling (skipped by ``crossleaks=False``).

    The measurements are stored by then: a failure here is logged and kept in the run's counts
    (``{"error": one line}``), and the run goes on to its report; `hubsurvey crossleaks` retries it.
    """

    name: str = "crossleaks"
    recorded = Recorded(always=True)  # null when the run skipped it

    def run(self, ctx: RunContext) -> Counts:
        if not ctx.options.crossleaks:
            return {}
        ctx.phase("crossleaks")
        try:
            found = crossleaks(ctx.store, copy_threshold=ctx.options.copy_threshold,
                               memory_limit=f"{int(ctx.options.memory_mb * 0.6)}MB", run_id=ctx.run_id).as_json()
        except StoreError as e:
            log.warning("crossleaks failed: %s", one_line(e))
            found = {"error": one_line(e)}
        ctx.snapshot()
        return found

    def summary(self, counts: Counts, end: RunEnd) -> list[str]:
        if not counts:
            return []
        if "error" in counts:
            return [f"crossleaks failed: {counts['error']} (run `hubsurvey crossleaks` again)"]
        return [CrossSummary(**counts).line()]


@dataclass
class ReportStep(Step):
    """Write REPORT.md and report.html into ``report_dir`` (none: no report); the report shows how
    the run ends (its status as of now). Its files go to ``ctx.files``, which ``run`` prints; no counts."""

    name: str = "report"

    def run(self, ctx: RunContext) -> Counts:
        ctx.phase("reporting")
        if ctx.options.report_dir is not None:
            final_run = {"run_id": ctx.run_id, "status": ctx.status.value, "finished_at": now()}
            ctx.files += [Path(p) for p in render_report(ctx.store, ctx.options.report_dir, final_run=final_run)]
        return {}

    def summary(self, counts: Counts, end: RunEnd) -> list[str]:
        return ["report: " + ", ".join(end.files)] if end.files else []
