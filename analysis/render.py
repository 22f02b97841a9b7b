"""What the report and the dataset card share: the Jinja environment, filters, definitions, provenance,
tables.

The environment autoescapes HTML templates (``*.html.j2``, ``*.htm.j2``, ``*.xml.j2``) and never the
Markdown ones; Markdown output escapes values with the ``md`` filter instead. Undefined variables
raise (StrictUndefined), so a template cannot silently print nothing. Markdown becomes HTML through
:func:`markdown_html`, which escapes any raw HTML in it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import jinja2
from markdown_it import MarkdownIt
from markupsafe import Markup

from hubsurvey import __version__
from hubsurvey.analysis.crossleaks import DEFAULT_COPY_THRESHOLD
from hubsurvey.analysis.findings import latest_run
from hubsurvey.core import figure_docs, figures
from hubsurvey.core.figures import (
    EXACT_METHOD,
    EXACT_METHOD_VERSION,
    LLE_METHOD,
    LLE_METHOD_VERSION,
    NEAR_METHOD,
    NEAR_METHOD_VERSION,
)
from hubsurvey.core.safety import json_text, visible
from hubsurvey.core.store import Store

TEMPLATES_PACKAGE = "hubsurvey.templates"  # installed as package data

#: How the two keys of the LLE figures are named in tables and charts.
KEY_LABELS = {"text": "text", "text_and_label": "text+label"}

#: The method's terms, as plain text: templates format them.
DEFINITIONS: list[tuple[str, str]] = figure_docs.terms()


def figure_term(figure: figures.ProfileFigure | figures.NearFigure) -> str:
    """A figure in words: its definition, when it is NR (the registry's rule for its count column)
    and, if it has one, the percentage that goes with it."""
    column = next(c for c in figures.figure_columns(figure.method) if c.figure is figure and c.percent_of is None)
    text = f"{figure.definition}; {figure_docs.nr_rule(column)}."
    if figure.percent:
        stem, split = figure.percent
        text += f" {stem}: the same as a % of the {split} rows."
    return text


def exact_terms() -> list[tuple[str, str]]:
    """The exact method (exact-2026) in words, generated from the registry: its key profiles, then
    each figure with its NR rule and the percentage that goes with it."""
    out = [
        ("key profile",
         "every exact figure is measured twice, once per key profile, and its column starts with the "
         "profile's name: " + "; ".join(f"{p.name}_: {p.words}" for p in figures.PROFILES) + "."),
        ("rows, each once",
         "exact figures count rows, not distinct keys: a test row found in train and in validation, "
         "or found in train and repeated, counts once in test_rows_contaminated."),
    ]
    out += [(f.stem, figure_term(f)) for f in figures.PROFILE_FIGURES]
    out.append(("methods",
                "the methods whose figures a row holds, with their versions (JSON). A row measured before "
                f"{figures.EXACT_METHOD} has it NULL: its exact figures are NULL because they were not "
                "measured, not because they are NR, and the exact findings leave it out."))
    return out


#: The exact method's terms (profiles, figures, NR rules), as plain text.
EXACT_DEFINITIONS: list[tuple[str, str]] = exact_terms()


def near_setting(overview: Mapping[str, Any]) -> dict[str, str]:
    """The threshold and the shingles the near figures were measured with, as the rows record them
    (the defaults when no row was measured by the near-duplicate method)."""
    return {
        "near_tau": overview.get("near_thresholds") or f"{figures.NEAR_DEFAULT_THRESHOLD:g} (the default)",
        "near_shingle": overview.get("near_shingles") or f"char-{figures.NEAR_DEFAULT_SHINGLE} (the default)",
    }


def cross_setting(found: Mapping[str, Any]) -> dict[str, str]:
    """The copy threshold the last crossleaks used, as a percentage (the default when none ran)."""
    threshold = found["cross_overview"][0].get("copy_threshold") if found.get("cross_overview") else None
    return {"cross_threshold_pct": f"{100 * threshold:g}%" if threshold is not None
            else f"{100 * DEFAULT_COPY_THRESHOLD:g}% (the default)"}


def near_terms() -> list[tuple[str, str]]:
    """The near-duplicate method (near-2026) in words: its text, shingles, similarity and candidates,
    then each figure (generated from the registry) with its NR rule and its percentage, then the curve
    and the provenance it records."""
    curve = ", ".join(f"{t:g}" for t in figures.NEAR_CURVE)
    out = [
        ("text of a row",
         "its text columns in order, each under the normalized profile (NFKC, case-folded, whitespace collapsed; a "
         "list: its non-null elements, each normalized, joined by a space; null: the empty string; any other value: "
         "its text, normalized), the non-empty ones joined by a space."),
        ("shingles",
         f"the character n-grams of that text (n = {figures.NEAR_DEFAULT_SHINGLE} by default; code points, not bytes), as a "
         "set: a text of L ≥ n characters has the L − n + 1 windows of n characters; a shorter text (the empty one "
         "too) is one shingle, itself, so short texts can still be near-duplicates."),
        ("near-duplicate",
         "two rows whose shingle sets have a Jaccard similarity J = |A ∩ B| / |A ∪ B| ≥ τ (the threshold, "  # noqa: RUF001 (the union sign)
         f"{figures.NEAR_DEFAULT_THRESHOLD:g} by default, recorded per row in near). Identical normalized texts have J = 1, so "
         "every exact match under the normalized profile is a near-duplicate: exact ⊆ near, so test rows near "
         "train, near validation, near-repeated and near-contaminated are never fewer than their exact (normalized) "
         "twins. Label conflicts are the exception: a similar train row with the test row's label clears it."),
        ("candidates and verification",
         "MinHash-LSH proposes the pairs to compare; every pair is verified with the exact Jaccard of its shingle "
         "sets, so no pair below τ is ever counted (precision 1). A pair MinHash misses can only lower a count."),
        ("rows, each once",
         "near figures count rows, not distinct texts: a test row near train and near validation, or near train "
         "and near-repeated, counts once in test_rows_near_contaminated."),
    ]
    out += [(f.name, figure_term(f)) for f in figures.NEAR_FIGURES]
    out += [
        ("near_curve",
         f"test_rows_near_train at each τ of ({curve}), as JSON [{{threshold, test_rows_near_train}}, …]; the view "
         "near_curve gives it as rows, with the % of test rows. It never rises as τ rises; NULL (NR) without a "
         "train split."),
        ("near",
         "how the row's near figures were measured, as JSON: threshold (τ), curve (its thresholds), shingle "
         "(char-n), minhash (signature), bands and band_rows (LSH), status ('measured'), texts (distinct "
         "normalized texts compared), candidates (LSH pairs verified), pairs (pairs kept, at ≥ the lowest "
         "threshold), capped (true: the candidates were cut, a count may miss pairs). NULL: not measured by "
         f"{NEAR_METHOD}; its near figures are then NULL because they were not measured, not because they are NR, "
         "and the near findings leave the row out."),
    ]
    return out


#: The near-duplicate method's terms (text, shingles, figures, NR rules, curve, provenance), as plain text.
NEAR_DEFINITIONS: list[tuple[str, str]] = near_terms()

_MD_SPECIAL = re.compile(r"([\\`*\[\]|])")
_SECRET_KEY = re.compile(r"token|secret|password|authorization|api[_-]?key", re.IGNORECASE)


def md(value: Any) -> str:
    """Escape a value for Markdown text and table cells (no HTML, no table breaks, one line)."""
    text = figures.NR if value is None else visible(str(value), one_line=True)
    text = _MD_SPECIAL.sub(r"\\\1", text)
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return " ".join(text.split())


def num(value: Any) -> str:
    """A count: NULL is NR."""
    return figures.published(value, figures.Format.COUNT)


def pct(value: Any, digits: int = 2) -> str:
    """A percentage; NULL (a 0 denominator, or NR) prints as 'n/a'."""
    return "n/a" if value is None else f"{value:.{digits}f}%"


def pct3(value: Any) -> str:
    """A test_biased value as published: 3 decimals at most ('10.049%', '0.0%'); NULL is NR."""
    return figures.published(value, figures.Format.PERCENT)


def yaml_str(value: Any) -> str:
    """A YAML scalar or flow collection (JSON is YAML): safe for any string."""
    return json_text(value)


def when(value: Any) -> str:
    """A timestamp as 'YYYY-MM-DD HH:MM UTC'; NULL prints as 'n/a'."""
    if value is None:
        return "n/a"
    if isinstance(value, str):
        return value
    if isinstance(value, datetime) and value.tzinfo is not None:
        value = value.astimezone(UTC)
    return value.strftime("%Y-%m-%d %H:%M UTC")


def _visible_value(value: Any) -> Any:
    if isinstance(value, Markup):  # already escaped HTML: keep it marked safe
        return Markup(visible(str(value)))
    return visible(value) if isinstance(value, str) else value


def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader(TEMPLATES_PACKAGE, ""),
        autoescape=jinja2.select_autoescape(
            enabled_extensions=("html", "htm", "xml", "html.j2", "htm.j2", "xml.j2"),
            disabled_extensions=("md.j2", "md"),
            default_for_string=True,
            default=True,
        ),
        undefined=jinja2.StrictUndefined,
        finalize=_visible_value,  # every value a template prints, Markdown or HTML: control characters as text
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(md=md, num=num, pct=pct, pct3=pct3, yaml=yaml_str, when=when)
    env.globals.update(table=md_table, terms=md_terms)
    return env


def md_terms(terms: Sequence[tuple[str, str]]) -> str:
    """Terms and their definitions as a Markdown list (``- **term**: text``), escaped; the templates'
    ``terms()``, followed by the template's own line end."""
    return "\n".join(f"- **{md(term)}**: {md(text)}" for term, text in terms)


#: CommonMark with tables; raw HTML in the text is escaped (``html`` off), never passed through.
_MARKDOWN = MarkdownIt("commonmark", {"html": False}).enable("table")


def markdown_html(text: str) -> Markup:
    """Markdown as HTML: the report's prose and tables, written once in Markdown, for report.html.

    Values reach the Markdown escaped by :func:`md`, and the converter escapes what is left of
    ``<``, ``>`` and ``&`` and drops unsafe link targets, so no markup from the data survives.
    """
    return Markup(_MARKDOWN.render(text))


def clean_args(args: Any) -> Any:
    """Run arguments for display: keys that look like secrets are dropped, recursively."""
    if isinstance(args, str):
        try:
            args = json.loads(args)
        except ValueError:
            return args
    if isinstance(args, Mapping):
        return {k: clean_args(v) for k, v in args.items() if not _SECRET_KEY.search(str(k))}
    if isinstance(args, list):
        return [clean_args(v) for v in args]
    return args


def provenance(store: Store, overview: Mapping[str, Any]) -> dict[str, Any]:
    """Where the results come from: dates, tool and method versions, the latest run and its filters.

    Everything is read from the DB (nothing from the clock), so rendering an unchanged DB twice
    gives identical files.
    """
    run, crawl = latest_run(store), latest_run(store, "%crawl%")
    for record in (run, crawl):
        if record is not None:
            record["args"] = clean_args(record.get("args"))
            record["counts"] = clean_args(record.get("counts"))
    return {
        "first_measured_at": overview.get("first_measured_at"),
        "last_measured_at": overview.get("last_measured_at"),
        "date": when(overview.get("last_measured_at")),
        "methods": overview.get("methods") or f"{LLE_METHOD} v{LLE_METHOD_VERSION}",
        "tool_versions": overview.get("tool_versions") or "none",
        "method": LLE_METHOD,
        "method_version": LLE_METHOD_VERSION,
        "exact_method": EXACT_METHOD,
        "exact_method_version": EXACT_METHOD_VERSION,
        "near_method": NEAR_METHOD,
        "near_method_version": NEAR_METHOD_VERSION,
        "generator_version": __version__,
        "run": run,
        # the crawl's filters: the newest crawl run's arguments, else the newest run's
        "filters": (crawl or run or {}).get("args"),
    }


# --- the tables the report and the dataset card share ----------------------------------------------
# Each table is built once, here, as plain text cells; md_table lays a table out in Markdown (and
# report.html converts that Markdown like the rest of the prose).


@dataclass(frozen=True)
class Table:
    header: tuple[str, ...]
    rows: Sequence[tuple[str, ...]]
    numeric: tuple[bool, ...]  # right-aligned columns


def md_table(t: Table) -> str:
    """A table in Markdown, every cell escaped with :func:`md`, an empty cell left blank; the templates'
    ``table()``."""

    def line(cells: Sequence[str]) -> str:
        return "|" + "".join(f" {md(c)} |" if c else " |" for c in cells)

    rule = "|" + "".join("---:|" if n else "---|" for n in t.numeric)
    return "\n".join([line(t.header), rule, *(line(r) for r in t.rows)]) + "\n"


def overview_table(o: Mapping[str, Any]) -> Table:
    """What was measured: the counts every other table is a part of."""
    rows = [
        ("result rows (the unit of every percentage)", num(o["measurement_rows"])),
        ("datasets", num(o["datasets"])),
        ("(dataset, config) pairs", num(o["configs"])),
        ("rows with a label column (text+label figures not NR)", num(o["rows_with_label"])),
        ("rows with a train split", num(o["rows_with_train"])),
        ("rows with a validation split", num(o["rows_with_validation"])),
        ("datasets crawled / eligible / excluded",
         f"{o['crawled_datasets']} / {o['eligible_datasets']} / {o['excluded_datasets']}"),
        ("jobs / done / failed", f"{o['jobs']} / {o['jobs_done']} / {o['jobs_failed']}"),
        (f"rows / datasets measured by the exact method ({EXACT_METHOD}; the exact findings count only these)",
         f"{o['rows_exact']} / {o['datasets_exact']}"),
        (f"rows / datasets measured by the near-duplicate method ({NEAR_METHOD}; the near findings count only these)",
         f"{o['rows_near']} / {o['datasets_near']}"),
    ]
    return Table(("", "count"), rows, (False, True))


def splits_table(splits: list[Mapping[str, Any]], key_labels: Mapping[str, str]) -> Table:
    """Aggregate findings 1 and 2: rows with a leak and with a duplicate, per split and key."""
    header = ("split", "key", "≥1 leak to test", "of", "%", "≥1 duplicate", "of", "%")
    rows = [
        (r["split"], key_labels[r["key"]], num(r["with_leak"]), num(r["leak_denominator"]), pct(r["pct_with_leak"]),
         num(r["with_duplicate"]), num(r["duplicate_denominator"]), pct(r["pct_with_duplicate"]))
        for r in splits
    ]
    return Table(header, rows, (False, False, True, True, True, True, True, True))


def provenance_table(p: Mapping[str, Any], o: Mapping[str, Any]) -> Table:
    """Where the results come from: dates, versions, the latest run and its filters, the counts."""
    run = p.get("run")
    rows = [
        ("date (newest measurement)", p["date"]),
        ("rows measured from", when(p["first_measured_at"])),
        ("method", str(p["methods"])),
        ("measured by", f"hubsurvey {p['tool_versions']}"),
        ("files built by", f"hubsurvey {p['generator_version']}"),
    ]
    if run:
        rows += [
            ("latest run", f"{run['command']} ({run['status']}), started {when(run['started_at'])}, "
                           f"finished {when(run.get('finished_at'))}"),
            ("crawl filters (arguments of the newest crawl run, else of the latest run)", yaml_str(p["filters"])),
        ]
    else:
        rows += [("latest run", "none recorded: rows come from one-off audits"),
                 ("crawl filters", "none (no crawl recorded)")]
    rows += [
        ("result rows / datasets / configs", f"{o['measurement_rows']} / {o['datasets']} / {o['configs']}"),
        ("rows with a label column / with a validation split", f"{o['rows_with_label']} / {o['rows_with_validation']}"),
        ("datasets crawled / eligible / excluded",
         f"{o['crawled_datasets']} / {o['eligible_datasets']} / {o['excluded_datasets']}"),
        ("jobs / done / failed", f"{o['jobs']} / {o['jobs_done']} / {o['jobs_failed']}"),
    ]
    return Table(("", ""), rows, (False, False))


def exact_shares_table(found: Mapping[str, Any]) -> Table:
    """The exact findings in one table: datasets with normalized-only contamination, with label
    conflicts and with train↔validation leaks, each over the datasets measured by the exact method."""
    g = found["normalization_gain"][0]
    gain_rows = (f"{num(g['extra_test_rows'])} more contaminated test rows of {num(g['test_rows'])} "
                 f"({pct(g['extra_pct_of_test_rows'])})")
    if g["max_extra_dataset"] is not None:
        gain_rows += f"; largest gain {points(g['max_extra_pct_points'])} points ({g['max_extra_dataset']})"
    rows = [("normalized contamination exceeds raw", "normalized vs raw", num(g["datasets_with_more"]),
             num(g["datasets"]), pct(g["pct_datasets_with_more"]), gain_rows)]
    for r in found["label_conflicts"]:
        rows.append((
            "label conflict", r["profile"], num(r["with_conflict"]), num(r["datasets"]), pct(r["pct_with_conflict"]),
            f"test row in train with another label: {num(r['with_test_train_conflict'])} datasets "
            f"({pct(r['pct_with_test_train_conflict'])}), {num(r['test_rows_conflicting'])} test rows; "
            f"text with two labels in one split: {num(r['with_within_split_conflict'])} datasets "
            f"({pct(r['pct_with_within_split_conflict'])})",
        ))
    for r in found["validation_leaks"]:
        rows.append((
            "train↔validation leak", r["profile"], num(r["with_leak"]), num(r["datasets"]), pct(r["pct_with_leak"]),
            f"{num(r['validation_rows_in_train'])} validation rows in train of {num(r['validation_rows'])} "
            f"({pct(r['pct_validation_rows_in_train'])})",
        ))
    return Table(("finding", "profile", "datasets", "of", "%", "rows"), rows, (False, False, True, True, True, False))


def points(value: Any) -> str:
    """A difference of two percentages, in percentage points ('+0.12'); NULL prints as 'n/a'."""
    return "n/a" if value is None else f"{value:+.2f}"


def raw_vs_normalized_table(rows: Sequence[Mapping[str, Any]]) -> Table:
    """Raw vs normalized contaminated test rows, per dataset (findings_raw_vs_normalized)."""
    header = ("dataset", "configs", "test rows", "raw: contaminated", "%", "normalized: contaminated", "%",
              "extra rows", "extra points")
    cells = [
        (str(r["dataset_id"]), num(r["configs_exact"]), num(r["rows_test"]),
         num(r["raw_test_rows_contaminated"]), pct(r["raw_contaminated_test_pct"]),
         num(r["normalized_test_rows_contaminated"]), pct(r["normalized_contaminated_test_pct"]),
         num(r["extra_test_rows"]), points(r["extra_pct_points"]))
        for r in rows
    ]
    return Table(header, cells, (False, *([True] * 8)))


def near_shares_table(found: Mapping[str, Any]) -> Table:
    """The near-duplicate findings in one table: datasets whose near contamination exceeds the exact
    (normalized) one, and datasets with label-conflicting near-duplicates, each over its denominator."""
    g = found["near_gain"][0]
    gain_rows = (f"{num(g['extra_test_rows'])} more test rows near-contaminated than contaminated, of "
                 f"{num(g['test_rows'])} ({pct(g['extra_pct_of_test_rows'])})")
    if g["max_extra_dataset"] is not None:
        gain_rows += (f"; worst config rises by up to {points(g['max_worst_extra_pct_points'])} points "
                      f"({g['max_extra_dataset']}), median {points(g['median_worst_extra_pct_points_of_gainers'])}")
    c = found["near_label_conflicts"][0]
    conflict_rows = (f"{num(c['test_rows_conflicting'])} test rows of {num(c['test_rows'])} "
                     f"({pct(c['pct_test_rows_conflicting'])}); with no exact conflict: "
                     f"{num(c['with_conflict_beyond_exact'])} datasets ({pct(c['pct_with_conflict_beyond_exact'])})")
    rows = [
        ("near contamination exceeds exact", "measured by both methods", num(g["datasets_with_more"]),
         num(g["datasets"]), pct(g["pct_datasets_with_more"]), gain_rows),
        ("label-conflicting near-duplicate", "with a label column and a train split", num(c["with_conflict"]),
         num(c["datasets"]), pct(c["pct_with_conflict"]), conflict_rows),
    ]
    return Table(("finding", "datasets counted", "datasets", "of", "%", "rows"), rows,
                 (False, False, True, True, True, False))


def near_vs_exact_table(rows: Sequence[Mapping[str, Any]]) -> Table:
    """Exact (normalized) vs near-duplicate contaminated test rows, per dataset (findings_near_vs_exact)."""
    header = ("dataset", "configs", "test rows", "exact: contaminated", "%", "near: contaminated", "%",
              "extra rows", "extra points", "worst config", "worst exact", "worst near", "rise (points)")
    cells = [
        (str(r["dataset_id"]), num(r["configs_near"]), num(r["rows_test"]),
         num(r["normalized_test_rows_contaminated"]), pct(r["normalized_contaminated_test_pct"]),
         num(r["near_test_rows_contaminated"]), pct(r["near_contaminated_test_pct"]),
         num(r["extra_test_rows"]), points(r["extra_pct_points"]), str(r["worst_near_config"]),
         pct3(r["worst_normalized_contaminated_test_pct"]), pct3(r["worst_near_contaminated_test_pct"]),
         points(r["worst_extra_pct_points"]))
        for r in rows
    ]
    return Table(header, cells, (False, *([True] * 8), False, True, True, True))


def near_curve_table(curve: Sequence[Mapping[str, Any]]) -> Table:
    """The threshold curve aggregated: per τ, datasets with test rows near train (findings_near_curve)."""
    header = ("Jaccard ≥", "datasets with ≥1 test row near train", "of", "%", "median % of test rows near train",
              "test rows near train", "of", "%")
    cells = [
        (f"{r['threshold']:g}", num(r["with_near_train"]), num(r["datasets"]), pct(r["pct_with_near_train"]),
         pct(r["median_test_rows_near_train_pct"]), num(r["test_rows_near_train"]), num(r["test_rows"]),
         pct(r["pct_test_rows_near_train"]))
        for r in curve
    ]
    return Table(header, cells, (True,) * 8)


#: leaking pairs listed in the report and the card (findings_cross_top_leaks holds them all)
CROSS_TOP_N = 10


def cross_overview_table(o: Mapping[str, Any]) -> Table:
    """Leaks across datasets in counts (findings_cross_overview), each with its denominator."""
    rows = [
        ("surveyed test splits (dataset, config) compared", num(o["test_splits"])),
        ("test splits with rows in another dataset's train or validation (leak)",
         f"{num(o['leaking_test_splits'])} of {num(o['test_splits'])} ({pct(o['pct_leaking'])})"),
        ("datasets (a family counted once) with a leaking test split",
         f"{num(o['leaking_datasets'])} of {num(o['datasets'])}"),
        ("leaking pairs (test split, other dataset's split)", num(o["leak_pairs"])),
        ("families (datasets joined by copies) / their datasets", f"{num(o['families'])} / {num(o['datasets_in_families'])}"),
        ("copies (datasets beyond the first of each family) / copy relations",
         f"{num(o['copies'])} / {num(o['copy_pairs'])}"),
    ]
    return Table(("leaks across datasets", "count"), rows, (False, True))


def cross_leaks_table(leaks: Sequence[Mapping[str, Any]], top: int = CROSS_TOP_N) -> Table:
    """The largest leaks across datasets (findings_cross_top_leaks): test split, where its rows are, rows, %."""
    header = ("test dataset", "config", "rows found in", "config", "split", "test rows", "of", "%")
    cells = [(r["test_dataset"], r["test_config"], r["source_dataset"], r["source_config"], r["source_split"],
              num(r["rows"]), num(r["test_rows"]), pct(r["pct"])) for r in leaks[:top]]
    return Table(header, cells, (False, False, False, False, False, True, True, True))


def verdict_summary_table(verdicts: Sequence[Mapping[str, Any]], rules: Sequence[Mapping[str, Any]]) -> Table:
    """How many datasets got each verdict, on each basis (findings_dataset_verdict)."""
    counts: dict[tuple[str, str], int] = {}
    for r in verdicts:
        counts[(r["verdict_basis"], r["verdict"])] = counts.get((r["verdict_basis"], r["verdict"]), 0) + 1
    total = len(verdicts)
    rows = [
        (rule["verdict"], rule["basis"], num(counts.get((rule["basis"], rule["verdict"]), 0)), num(total),
         pct(100.0 * counts.get((rule["basis"], rule["verdict"]), 0) / total if total else None))
        for rule in rules
    ]
    return Table(("verdict", "basis", "datasets", "of", "%"), rows, (False, False, True, True, True))


def shared_tables(found: Mapping[str, Any], p: Mapping[str, Any], key_labels: Mapping[str, str]) -> dict[str, Table]:
    o = found["overview"][0]
    return {
        "overview": overview_table(o),
        "splits": splits_table(found["splits"], key_labels),
        "provenance": provenance_table(p, o),
        "exact_shares": exact_shares_table(found),
        "verdict_summary": verdict_summary_table(found["dataset_verdict"], found["verdict_rules"]),
        "near_shares": near_shares_table(found),
        "near_curve": near_curve_table(found["near_curve"]),
        "cross_overview": cross_overview_table(found["cross_overview"][0]),
        "cross_leaks": cross_leaks_table(found["cross_top_leaks"]),
    }
