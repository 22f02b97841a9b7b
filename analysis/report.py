"""The survey report: ``REPORT.md`` and a self-contained ``report.html``, one list of sections.

The report is :data:`SECTIONS`: each section names its title, the findings views it reads, its tables
and its charts; its prose is the block of the same name in ``templates/report_sections.md.j2``, written
once, in Markdown. ``REPORT.md`` prints each section's Markdown as it is; ``report.html`` converts the
same Markdown to HTML (raw HTML in it is escaped, never passed through) and adds the charts. A new
section is one findings view (``findings.sql``) and one entry here, with its prose block.

``hubsurvey report`` is a thin layer over :func:`render_report`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hubsurvey.analysis.crossleaks import CROSS_METHOD
from hubsurvey.analysis.findings import DEFAULT_TOP_N, findings
from hubsurvey.analysis.history import since_last_run
from hubsurvey.analysis.render import (
    DEFINITIONS,
    EXACT_DEFINITIONS,
    KEY_LABELS,
    NEAR_DEFINITIONS,
    Table,
    cross_leaks_table,
    cross_overview_table,
    cross_setting,
    environment,
    exact_shares_table,
    markdown_html,
    near_curve_table,
    near_setting,
    near_shares_table,
    near_vs_exact_table,
    num,
    overview_table,
    pct,
    provenance,
    provenance_table,
    raw_vs_normalized_table,
    splits_table,
    verdict_summary_table,
)
from hubsurvey.core.figures import EXACT_METHOD, LLE_METHOD, NEAR_METHOD
from hubsurvey.core.history import VERDICTS
from hubsurvey.core.outputs import output_folder
from hubsurvey.core.store import Store

REPORT_MD = "REPORT.md"
REPORT_HTML = "report.html"
TITLE = "Leaks and duplicates in Hugging Face Hub datasets: survey results"
#: The template that holds every section's prose, one block per section (named by its key).
SECTIONS_TEMPLATE = "report_sections.md.j2"
#: The prose before the first section (under the title): a block of SECTIONS_TEMPLATE too.
INTRO = "intro"

#: What a section's derived values and tables are computed from: ``f`` (its findings views only),
#: ``o`` (the overview), ``p`` (the provenance), ``top_n``, and the values its ``derive`` adds.
SectionContext = Mapping[str, Any]


@dataclass(frozen=True)
class Chart:
    """A chart of report.html (charts.charts() draws it by ``name``); REPORT.md has none."""

    name: str
    html_id: str
    alt: str


@dataclass(frozen=True)
class Section:
    """One section of the report.

    ``key``: its prose block in SECTIONS_TEMPLATE, its HTML anchor and ``number.<key>`` in the prose.
    ``title``: its heading, a Jinja template over the section's context (``Top {{ top_n }} rows ...``).
    ``views``: the findings it reads (``findings_<view>`` in findings.sql); its prose sees only these, as ``f``.
    ``derive``: values computed from them (e.g. the datasets that gain), added to the prose's context.
    ``tables``: name -> builder; the prose lays them out with ``table(tables.<name>)``.
    ``charts``: drawn at the top of the section in report.html.
    ``numbered``: numbered sections get "N. " before their title, counted in list order.
    ``prose``: the section's Markdown (a Jinja template), for a section with no block of its own in
    SECTIONS_TEMPLATE; a section has one or the other.
    """

    key: str
    title: str
    views: tuple[str, ...] = ()
    derive: Callable[[SectionContext], dict[str, Any]] | None = None
    tables: Mapping[str, Callable[[SectionContext], Table]] = field(default_factory=dict)
    charts: tuple[Chart, ...] = ()
    numbered: bool = True
    prose: str | None = None


@dataclass(frozen=True)
class RenderedSection:
    key: str
    heading: str  # "1. Leaks and duplicates per split"
    markdown: str  # the body, without the heading
    charts: tuple[Chart, ...]


def _verdicts(c: SectionContext) -> dict[str, Any]:
    # the verdict rules are defined once, in findings.sql (findings_verdict_rules), per basis:
    # near-2026 first, then the exact and the LLE fallbacks
    rules = c["f"]["verdict_rules"]
    return {
        "verdict_rules": [r for r in rules if r["basis"] == NEAR_METHOD],
        "exact_rules": [r for r in rules if r["basis"] == EXACT_METHOD],
        "fallback_rules": [r for r in rules if r["basis"] == LLE_METHOD],
        "verdicts": c["f"]["dataset_verdict"],
    }


#: Per basis, the findings_dataset_verdict columns of the deciding figure's worst value and its config.
_DECIDING_COLUMNS = {NEAR_METHOD: ("near_contaminated_test_pct", "worst_near_contaminated_test_pct", "worst_near_config"),
                     EXACT_METHOD: ("normalized_contaminated_test_pct", "worst_normalized_contaminated_test_pct",
                                    "worst_exact_config"),
                     LLE_METHOD: ("text_test_biased", "worst_text_test_biased", "worst_config")}


def _at_a_glance(c: SectionContext) -> dict[str, Any]:
    """The verdicts first: datasets per verdict, and the worst ``top_n`` datasets, each with the
    config its verdict comes from and the figure that decided it (the figure
    analysis.verdicts.dataset_verdict decides on; the tests check they agree)."""
    rows = c["f"]["dataset_verdict"]
    counts = {v: sum(r["verdict"] == v for r in rows) for v in VERDICTS}
    worst = []
    for r in rows[:c["top_n"]]:
        figure, value, config = _DECIDING_COLUMNS[r["verdict_basis"]]
        worst.append({"dataset_id": r["dataset_id"], "verdict": r["verdict"], "basis": r["verdict_basis"],
                      "figure": figure, "value": r[value], "config": r[config] if r["verdict"] != VERDICTS[0] else None})
    return {"glance_counts": counts, "glance_total": len(rows), "glance_worst": worst}


def _gainers(rows: list[dict[str, Any]], top_n: int) -> tuple[list[dict[str, Any]], int]:
    """The datasets whose figure rises (``extra_test_rows`` > 0), the first ``top_n``, and how many rise."""
    rising = [r for r in rows if r["extra_test_rows"] > 0]
    return rising[:top_n], len(rising)


def _exact(c: SectionContext) -> dict[str, Any]:
    # the datasets whose normalized contamination exceeds the raw one, most extra rows first
    gainers, total = _gainers(c["f"]["raw_vs_normalized"], c["top_n"])
    return {"gain": c["f"]["normalization_gain"][0], "gainers": gainers, "gainers_total": total}


def _near(c: SectionContext) -> dict[str, Any]:
    # the datasets whose near contamination exceeds the exact one, largest gain first
    gainers, total = _gainers(c["f"]["near_vs_exact"], c["top_n"])
    return {"near_gain": c["f"]["near_gain"][0], "near_conflicts": c["f"]["near_label_conflicts"][0],
            "near_gainers": gainers, "near_gainers_total": total}


def _contamination(c: SectionContext) -> dict[str, Any]:
    f = c["f"]
    return {
        "contamination": f["contamination"],
        "contamination_overview": f["contamination_overview"][0],
        # the most contaminated splits, a benchmark's own test set under another name (a fork) left out
        "contamination_pairs": [r for r in f["contamination_pairs"]
                                if r["contaminated_rows"] > 0 and not r["benchmark_copy"]][:c["top_n"]],
    }


def _exposure(c: SectionContext) -> dict[str, Any]:
    # the models whose declared training data holds a benchmark's items, the most rows first
    return {"exposure_overview": c["f"]["model_exposure_overview"][0],
            "exposure": c["f"]["model_exposure"][:c["top_n"]], "exposure_total": len(c["f"]["model_exposure"])}
def _scores(c: SectionContext) -> dict[str, Any]:
    # the scores whose evaluated rows are in part in the declared training data, most exposed first
    return {"scores_overview": c["f"]["scores_overview"][0], "scores": c["f"]["scores_at_risk"][:c["top_n"]],
            "scores_total": len(c["f"]["scores_at_risk"])}


def _shared_columns(c: SectionContext) -> dict[str, Any]:
    # the text columns whose value of a test row is in train while the row's whole text is not
    # (normalized profile), most such rows (in % of test) first, as findings_shared_columns orders them
    shared = [r for r in c["f"]["shared_columns"] if (r["normalized_test_rows_column_in_train_only"] or 0) > 0]
    return {"shared": c["f"]["shared_columns_overview"][0], "shared_rows": shared[:c["top_n"]],
            "shared_total": len(shared)}


def shared_columns_table(rows: list[dict[str, Any]]) -> Table:
    """Per (dataset, config, text column): test rows whose value of the column is in train while
    their whole text is not, and the whole text's test rows in train (normalized profile)."""
    header = ("dataset", "config", "text column", "test rows: column in train, text not", "of", "%",
              "test rows: whole text in train")
    cells = [(r["dataset_id"], r["config"], r["text_column"], num(r["normalized_test_rows_column_in_train_only"]),
              num(r["rows_test"]), pct(r["normalized_test_rows_column_in_train_only_pct"]),
              num(r["normalized_text_test_rows_in_train"])) for r in rows]
    return Table(header, cells, (False, False, False, True, True, True, True))


def _groups(c: SectionContext) -> dict[str, Any]:
    # the group columns in the verdict with test rows whose group is in train, most (in % of test) first,
    # as findings_group_leaks orders them; the reused numberings after them, counted apart
    leaking = [r for r in c["f"]["group_leaks"] if r["in_verdict"] and (r["test_rows_group_in_train"] or 0) > 0]
    blank = c["f"]["blank_rows"]
    semantic = c["f"]["semantic_candidates"]
    return {"groups": c["f"]["group_overview"][0], "group_rows": leaking[:c["top_n"]], "group_total": len(leaking),
            "blank_rows": blank[:c["top_n"]], "blank_total": len(blank),
            "semantic_rows": semantic[:c["top_n"]], "semantic_total": len(semantic)}


def semantic_table(rows: list[dict[str, Any]]) -> Table:
    """Per (dataset, config) searched with --semantic: test rows with a paraphrase candidate for review."""
    header = ("dataset", "config", "test rows with a candidate", "of", "%", "pairs", "cosine ≥", "model")
    cells = [(r["dataset_id"], r["config"], num(r["test_rows_with_candidates"]), num(r["rows_test"]),
              pct(r["test_rows_with_candidates_pct"]), num(r["pairs"]), f"{r['threshold']:g}", r["model"])
             for r in rows]
    return Table(header, cells, (False, False, True, True, True, True, True, False))


def group_leaks_table(rows: list[dict[str, Any]]) -> Table:
    """Per (dataset, config, group column): test rows whose group holds train rows, and the groups shared."""
    header = ("dataset", "config", "group column", "test rows: group in train", "of", "%", "groups shared", "of")
    cells = [(r["dataset_id"], r["config"], r["group_column"], num(r["test_rows_group_in_train"]), num(r["rows_test"]),
              pct(r["test_rows_group_in_train_pct"]), num(r["test_groups_in_train"]), num(r["groups_test"]))
             for r in rows]
    return Table(header, cells, (False, False, False, True, True, True, True, True))


def blank_rows_table(rows: list[dict[str, Any]]) -> Table:
    """Per (dataset, config) with any: blank test texts and NULL test labels."""
    header = ("dataset", "config", "test rows: blank text", "of", "%", "test rows: NULL label", "%")
    cells = [(r["dataset_id"], r["config"], num(r["test_rows_blank_text"]), num(r["rows_test"]),
              pct(r["test_rows_blank_text_pct"]), num(r["test_rows_null_label"]), pct(r["test_rows_null_label_pct"]))
             for r in rows]
    return Table(header, cells, (False, False, True, True, True, True, True))


def _definitions(_: SectionContext) -> dict[str, Any]:
    return {"definitions": DEFINITIONS, "exact_definitions": EXACT_DEFINITIONS, "near_definitions": NEAR_DEFINITIONS}


#: The report, in order. REPORT.md and report.html are both rendered from this list.
SECTIONS: tuple[Section, ...] = (
    # the answer first: unnumbered, so that the numbered sections keep their numbers
    Section("at_a_glance", "At a glance: a verdict per dataset", views=("dataset_verdict",), numbered=False,
            derive=_at_a_glance),
    Section("measured", "What was measured", views=("overview", "mixed_revisions"), numbered=False,
            tables={"overview": lambda c: overview_table(c["o"])}),
    Section("splits", "Leaks and duplicates per split", views=("splits",),
            tables={"splits": lambda c: splits_table(c["f"]["splits"], KEY_LABELS)},
            charts=(Chart("splits", "chart-splits", "Percentage of rows with at least one leak to test and at "
                                                    "least one duplicate, per split"),)),
    Section("test_bias", "Test bias", views=("test_bias",),
            charts=(Chart("test_bias", "chart-test-bias",
                          "Percentage of rows with test_biased at or above each threshold"),)),
    Section("annotation", "Possible annotation problems", views=("annotation",),
            derive=lambda c: {"a": c["f"]["annotation"][0]}),
    Section("top_test_biased", "Top {{ top_n }} rows by text test bias", views=("top_test_biased",),
            derive=lambda c: {"ranked": c["f"]["top_test_biased"][0]["rows_ranked"] if c["f"]["top_test_biased"]
                              else 0}),
    Section("by_task_category", "By task category", views=("by_task_category",),
            charts=(Chart("by_task_category", "chart-task", "Percentage of rows whose test split shares a text "
                                                            "with train or validation, per task category"),)),
    Section("failures", "Not measured: failures and exclusions", views=("failures",)),
    Section("verdicts", "Can I trust this dataset? A verdict per dataset",
            views=("verdict_rules", "dataset_verdict"), derive=_verdicts,
            tables={"verdict_summary": lambda c: verdict_summary_table(c["verdicts"], c["f"]["verdict_rules"])}),
    Section("exact", "Beyond LLE: contaminated rows, normalized keys, label conflicts",
            views=("normalization_gain", "label_conflicts", "validation_leaks", "raw_vs_normalized"), derive=_exact,
            tables={"exact_shares": lambda c: exact_shares_table(c["f"]),
                    "raw_vs_normalized": lambda c: raw_vs_normalized_table(c["gainers"])},
            charts=(Chart("raw_vs_normalized", "chart-raw-vs-normalized",
                          "Contaminated test rows in percent per dataset, raw and normalized key profiles, "
                          "and the difference in percentage points"),)),
    Section("near", "Near-duplicates: similar, not identical",
            views=("near_gain", "near_label_conflicts", "near_vs_exact", "near_curve"), derive=_near,
            tables={"near_shares": lambda c: near_shares_table(c["f"]),
                    "near_vs_exact": lambda c: near_vs_exact_table(c["near_gainers"]),
                    "near_curve": lambda c: near_curve_table(c["f"]["near_curve"])},
            charts=(Chart("near_vs_exact", "chart-near-vs-exact",
                          "Contaminated test rows in percent per dataset, exact (normalized) and near-duplicate, "
                          "and the difference in percentage points"),
                    Chart("near_curve", "chart-near-curve",
                          "Share of datasets with test rows near train, and the median and pooled percentage of "
                          "test rows near train, at each Jaccard threshold"))),
    Section("cross", "Leaks across datasets", views=("cross_overview", "cross_top_leaks"),
            derive=lambda c: {**cross_setting(c["f"]), "cross_method": CROSS_METHOD},
            tables={"cross_overview": lambda c: cross_overview_table(c["f"]["cross_overview"][0]),
                    "cross_leaks": lambda c: cross_leaks_table(c["f"]["cross_top_leaks"])}),
    Section("contamination", "Contamination with benchmarks",
            views=("contamination", "contamination_pairs", "contamination_overview"), derive=_contamination),
    Section("model_exposure", "Models that declare contaminated training data",
            views=("model_exposure", "model_exposure_overview"), derive=_exposure),
    # last of the numbered sections, so that adding it renumbers none of the others
    Section("shared_columns", "Passages and premises shared across splits",
            views=("shared_columns", "shared_columns_overview"), derive=_shared_columns,
            tables={"shared_columns": lambda c: shared_columns_table(c["shared_rows"])}),
    # after the others, so that adding it renumbers none of them
    Section("scores_at_risk", "Scores at risk", views=("scores_at_risk", "scores_overview"), derive=_scores),
    # after it, for the same reason: groups shared across splits and rows that say nothing
    Section("groups", "Beyond the pair of texts: groups shared across splits, blank rows",
            views=("group_leaks", "group_overview", "blank_rows", "semantic_candidates"), derive=_groups,
            tables={"group_leaks": lambda c: group_leaks_table(c["group_rows"]),
                    "blank_rows": lambda c: blank_rows_table(c["blank_rows"]),
                    "semantic": lambda c: semantic_table(c["semantic_rows"])}),
    # what changed since the previous completed run (analysis.history.since_last_run, in the context as
    # ``since``): unnumbered and after the findings, so that the other sections keep their numbers and places
    Section("since_last_run", "Since the last run", numbered=False),
    Section("definitions", "Definitions", numbered=False, derive=_definitions),
    Section("provenance", "Provenance", numbered=False,
            tables={"provenance": lambda c: provenance_table(c["p"], c["o"])}),
)


def section_numbers(sections: tuple[Section, ...] | None = None) -> dict[str, int]:
    """Each numbered section's number (1, 2, ... in list order), by key: the prose cites them."""
    numbered = [s.key for s in (SECTIONS if sections is None else sections) if s.numbered]
    return {key: i for i, key in enumerate(numbered, start=1)}


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
    store: Store,
    top_n: int = DEFAULT_TOP_N,
    final_run: Mapping[str, Any] | None = None,
    found: Mapping[str, list[dict[str, Any]]] | None = None,
) -> dict[str, Any]:
    """What every section's prose sees (title, overview ``o``, provenance ``p``, the near-duplicate
    setting, section numbers), with ``found`` (every finding) to build each section's own context from.

    ``final_run``: the final state of the run writing this report (see :func:`with_final_run`).
    ``found``: the findings at ``top_n`` when the caller already has them.
    """
    found = findings(store, top_n=top_n) if found is None else found
    overview = found["overview"][0]
    return {
        "title": TITLE,
        "found": found,
        "o": overview,
        "p": with_final_run(provenance(store, overview), final_run),
        "top_n": top_n,
        "number": section_numbers(),
        "key_labels": KEY_LABELS,
        **near_setting(overview),
        "since": since_last_run(store),
    }


def section_context(section: Section, context: Mapping[str, Any]) -> dict[str, Any]:
    """The context of one section's prose: the report's, ``f`` holding only the section's views, its
    derived values and its tables."""
    unknown = [v for v in section.views if v not in context["found"]]
    if unknown:
        raise KeyError(f"report section {section.key}: no findings view {unknown} (findings.sql)")
    own: dict[str, Any] = {k: v for k, v in context.items() if k != "found"}
    own["f"] = {v: context["found"][v] for v in section.views}
    if section.derive is not None:
        own.update(section.derive(own))
    own["tables"] = {name: build(own) for name, build in section.tables.items()}
    return own


@functools.cache
def _environment() -> Any:
    """The report's templates, compiled once a process: a report renders its sections twice
    (Markdown, then HTML), and a new environment compiled every template again each time (44
    compiles, 0.4-0.7 s of a report)."""
    return environment()


@functools.lru_cache(maxsize=512)
def _prose(source: str) -> Any:
    """A section's own title or prose (Markdown, never escaped), compiled once."""
    return _environment().from_string("{% autoescape false %}" + source + "{% endautoescape %}")


def render_sections(context: Mapping[str, Any]) -> tuple[str, list[RenderedSection]]:
    """The intro and every section as Markdown (bodies without their headings)."""
    template = _environment().get_template(SECTIONS_TEMPLATE)
    numbers = section_numbers()

    def block(name: str, values: Mapping[str, Any]) -> str:
        return "".join(template.blocks[name](template.new_context(dict(values))))

    def markdown(source: str, values: Mapping[str, Any]) -> str:
        return _prose(source).render(values)

    intro = block(INTRO, {k: v for k, v in context.items() if k != "found"})
    out = []
    for section in SECTIONS:
        if (section.key in template.blocks) == (section.prose is not None):
            raise ValueError(f"report section {section.key}: its prose is a block of {SECTIONS_TEMPLATE} "
                             "or its own prose, one of the two")
        own = section_context(section, context)
        title = markdown(section.title, own)
        heading = f"{numbers[section.key]}. {title}" if section.numbered else title
        body = markdown(section.prose, own) if section.prose is not None else block(section.key, own)
        out.append(RenderedSection(section.key, heading, body, section.charts))
    return intro, out


def render_markdown(context: dict[str, Any]) -> str:
    intro, sections = render_sections(context)
    return _environment().get_template("REPORT.md.j2").render(context, intro=intro, sections=sections)


def render_html(context: dict[str, Any]) -> str:
    from hubsurvey.analysis.charts import charts

    intro, sections = render_sections(context)
    return _environment().get_template("report.html.j2").render(
        context, intro=markdown_html(intro), sections=sections, html=markdown_html, charts=charts(context["found"]))


def render_report(
    store: Store, out_dir: str | Path, top_n: int = DEFAULT_TOP_N, final_run: Mapping[str, Any] | None = None
) -> list[Path]:
    """Write ``REPORT.md`` and ``report.html`` into ``out_dir``; return their paths.

    A run that writes its own report passes ``final_run={"run_id", "status", "finished_at"}``, so the
    report shows its final state rather than "running" (the DB records it a moment later).
    """
    out = output_folder(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    context = report_context(store, top_n=top_n, final_run=final_run)
    md_path, html_path = out / REPORT_MD, out / REPORT_HTML
    md_path.write_text(render_markdown(context), encoding="utf-8")
    html_path.write_text(render_html(context), encoding="utf-8")
    return [md_path, html_path]
