"""What the report and the dataset card share: the Jinja environment, filters, definitions, provenance.

The environment autoescapes HTML templates (``*.html.j2``, ``*.htm.j2``, ``*.xml.j2``) and never the
Markdown ones; Markdown output escapes values with the ``md`` filter instead. Undefined variables
raise (StrictUndefined), so a template cannot silently print nothing.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import jinja2

from hubsurvey import __version__
from hubsurvey.core import figures
from hubsurvey.core.figures import EXACT_METHOD, EXACT_METHOD_VERSION, LLE_METHOD, LLE_METHOD_VERSION
from hubsurvey.core.store import Store

TEMPLATES_PACKAGE = "hubsurvey.templates"  # installed as package data

#: The method's terms, as plain text: templates format them.
DEFINITIONS: list[tuple[str, str]] = figures.terms()


def profile_nr_rule(figure: figures.ProfileFigure) -> str:
    """When an exact figure is NR, in words: the registry's rule for its count column."""
    return figures.nr_rule(next(c for c in figures.figure_columns(figure.method) if c.figure is figure))


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
    for f in figures.PROFILE_FIGURES:
        text = f"{f.definition}; {profile_nr_rule(f)}."
        if f.percent:
            stem, split = f.percent
            text += f" {stem}: the same as a % of the {split} rows."
        out.append((f.stem, text))
    out.append(("methods",
                "the methods whose figures a row holds, with their versions (JSON). A row measured before "
                f"{figures.EXACT_METHOD} has it NULL: its exact figures are NULL because they were not "
                "measured, not because they are NR, and the exact findings leave it out."))
    return out


#: The exact method's terms (profiles, figures, NR rules), as plain text.
EXACT_DEFINITIONS: list[tuple[str, str]] = exact_terms()

_MD_SPECIAL = re.compile(r"([\\`*\[\]|])")
_SECRET_KEY = re.compile(r"token|secret|password|authorization|api[_-]?key", re.IGNORECASE)


def md(value: Any) -> str:
    """Escape a value for Markdown text and table cells (no HTML, no table breaks, one line)."""
    text = figures.NR if value is None else str(value)
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
    return json.dumps(value, ensure_ascii=False)


def when(value: Any) -> str:
    """A timestamp as 'YYYY-MM-DD HH:MM UTC'; NULL prints as 'n/a'."""
    if value is None:
        return "n/a"
    if isinstance(value, str):
        return value
    if isinstance(value, datetime) and value.tzinfo is not None:
        value = value.astimezone(UTC)
    return value.strftime("%Y-%m-%d %H:%M UTC")


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
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(md=md, num=num, pct=pct, pct3=pct3, yaml=yaml_str, when=when)
    return env


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
    from hubsurvey.analysis.findings import latest_run

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
        "generator_version": __version__,
        "run": run,
        # the crawl's filters: the newest crawl run's arguments, else the newest run's
        "filters": (crawl or run or {}).get("args"),
    }


# --- the tables the report, its HTML twin and the dataset card share ---------------------------------
# Each table is built once, here, as plain text cells; templates/_tables.md.j2 and _tables.html.j2
# only lay a table out (and escape it for their format).


@dataclass(frozen=True)
class Table:
    header: tuple[str, ...]
    rows: Sequence[tuple[str, ...]]
    numeric: tuple[bool, ...]  # right-aligned columns


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
    }
