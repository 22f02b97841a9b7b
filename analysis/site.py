"""A static site of the survey: an index of every surveyed dataset and one page per dataset.

``hubsurvey site`` is a thin layer over :func:`build_site`. The site is built from the DB alone and
needs no server, no CDN and no build step: it opens from ``file://`` and is served as it is by a
static Hugging Face Space (``publish --site``, :func:`publish_site`).

- ``index.html``: the headline figures and charts (inline SVG) in the static HTML, and one table of
  every surveyed dataset. The table's rows are JavaScript files (``data/index-N.js``, each calling
  ``hubsurvey.add([...])``: fetch() of a local file is blocked under ``file://``), loaded after the
  page has rendered, and only the rows in view are drawn (``site.js``), so the page stays fast at
  Hub scale. Without JavaScript the index links to plain list pages (``list/N.html``).
- ``d/<shard>/<safe>.html``: one page per dataset (:func:`dataset_page_path`): its verdict, every
  figure per config and label column with its definition from the registry, the stored examples,
  the near-duplicate curve, contamination with benchmarks, leaks across datasets and its family,
  the split fingerprints, every revision measured (the ``history`` view), its badge and the
  markdown to paste it, the models that declare it as training data, its clean test splits, and
  how to reproduce them.
- ``index.html`` also shows what changed since the last run (:func:`since_last_run`, as the report)
  and, per benchmark, the models whose declared training data holds its items.
- ``badges/<safe>.json``: each dataset's shields.io endpoint badge, the files the results dataset
  holds (:func:`hubsurvey.analysis.badges.badge_files`); with ``site_url`` (where the site is
  served) each page gives the badge's markdown (:func:`badge_markdown`).

Every value from the DB is escaped (Jinja autoescape in the pages; ``textContent`` in site.js). A
Hub name becomes a file name through :func:`hubsurvey.core.store.safe_name`, so it never leaves its
folder, and a link to it percent-encodes that name once more (its ``%`` included). The site is
written into a temporary folder beside ``out_dir`` and swapped in whole: a failed build leaves the
previous site as it was, and a folder that is not a site hubsurvey built is never overwritten.
"""

from __future__ import annotations

import functools
import json
import logging
import math
import os
import shlex
import shutil
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import quote

from markupsafe import Markup, escape

from hubsurvey import __version__
from hubsurvey.analysis import beside
from hubsurvey.analysis.badges import LABEL, badge_path, read_badges
from hubsurvey.analysis.examples import KIND_WORDS, label_text, named_labels, short_list
from hubsurvey.analysis.findings import create_views
from hubsurvey.analysis.history import since_last_run
from hubsurvey.analysis.render import TEMPLATES_PACKAGE, environment
from hubsurvey.analysis.render import when as render_when
from hubsurvey.analysis.site_links import (
    check_site_url,
    dataset_anchor,
    dataset_href,
    dataset_page_path,
    dataset_shard,
    href,
)
from hubsurvey.analysis.site_scores import (
    SCORES_PAGE_PATH,
    SCORES_SCRIPT,
    has_scores,
    scores_by_dataset,
    write_scores_page,
)
from hubsurvey.analysis.verdicts import BASIS_ORDER, DECIDING, dataset_verdict, rule
from hubsurvey.core import figures
from hubsurvey.core.errors import BadInputError
from hubsurvey.core.outputs import output_folder, read_sealed, seal, written_files
from hubsurvey.core.safety import json_text, visible
from hubsurvey.core.store import Store

log = logging.getLogger(__name__)

DEFAULT_SITE_DIR = Path("site")
#: The file that marks a folder as a site hubsurvey built (and may replace).
MARKER = ".hubsurvey-site"
#: the format marker of the site's sealed marker file (:mod:`hubsurvey.core.outputs`)
SITE_FORMAT = "hubsurvey-site/1"
#: Where the Hub shows a dataset; only Hub-measured datasets link there.
HUB_DATASETS_URL = "https://huggingface.co/datasets/"
#: Rows per ``data/index-N.js`` chunk: the first chunk draws the table while the rest load.
CHUNK_ROWS = 10_000
#: Datasets per plain list page (the no-JavaScript way to every dataset page).
LIST_PAGE_ROWS = 1_000
#: Datasets whose pages are built from one round of queries (bounded memory at Hub scale).
BATCH_DATASETS = 2_000
#: The page of every figure's definition and the verdict rules, stated once for the whole site.
GLOSSARY = "figures.html"
#: Files the site copies as they are from the templates package.
ASSETS = ("site.js", "site.css")
#: The verdicts, in the order the index shows them (findings_verdict_rules).
VERDICTS = ("clean", "minor", "caution", "unreliable")
#: The columns of one index row, as site.js reads them (``data/index-N.js``).
INDEX_COLUMNS = ("id", "href", "verdict", "contaminated_pct", "near_pct", "benchmarks", "family", "tasks")
#: The methods whose figures a dataset page lists, in order, with their heading.
METHOD_TITLES = ((figures.LLE_METHOD, "LLE figures"), (figures.EXACT_METHOD, "Exact figures (raw and normalized key profiles)"),
                 (figures.NEAR_METHOD, "Near-duplicate figures"),
                 (figures.ROWS_METHOD, "Blank texts and NULL labels"))
#: Each method's heading in a dataset page's figures table (the glossary: METHOD_TITLES).
PAGE_TITLES = {figures.LLE_METHOD: "LLE", figures.EXACT_METHOD: "Exact", figures.NEAR_METHOD: "Near-duplicates",
               figures.ROWS_METHOD: "Blank texts and NULL labels"}
#: The split fingerprint columns of measurements, shown per label column.
FINGERPRINT_COLUMNS = ("fingerprint_train", "fingerprint_validation", "fingerprint_test")
#: Where shields.io renders an endpoint badge from the JSON served at ``?url=``.
SHIELDS_ENDPOINT = "https://img.shields.io/endpoint?url="
#: The models the index lists per benchmark (the most contaminated rows first); every model is on
#: the pages of the datasets it declares.
INDEX_MODELS_PER_BENCHMARK = 25
#: Why rows went from a clean test split, in the order ``clean`` counts them (survey/clean.py).
CLEAN_REASONS = ("train", "validation", "repeated", "near")


@dataclass
class SiteSummary:
    """What :func:`build_site` wrote."""

    out_dir: Path
    datasets: int = 0
    dataset_pages: int = 0  # the pages of shards of datasets (d/<shard>.html)
    list_pages: int = 0
    index_chunks: int = 0
    files: int = 0
    bytes: int = 0
    seconds: float = 0.0

    def line(self) -> str:
        return (f"site: {self.out_dir}/index.html: {self.datasets} dataset(s) on {self.dataset_pages} page(s), "
                f"{self.list_pages} list page(s), {self.files} files, {self.bytes / 1e6:.1f} MB in {self.seconds:.1f} s")


# --- paths -----------------------------------------------------------------------------------------


def list_page_path(number: int) -> str:
    return f"list/{number}.html"


# --- figures ---------------------------------------------------------------------------------------


def _pct(value: Any) -> str:
    return "n/a" if value is None else f"{value:.2f}%"


def _share(n: int | None, d: int | None) -> float | None:
    return None if not d else round(100.0 * (n or 0) / d, 2)


#: Per dataset: leaks into test (text key, LLE, summed over configs; NR when no config has a train
#: or validation split) and duplicates in test, from findings_dataset_verdict.
HEADLINE_SQL = """
SELECT count(*)                                                                   AS datasets,
       count(*) FILTER (WHERE coalesce(text_leaks_train_wrt_test, 0) + coalesce(text_leaks_validation_wrt_test, 0) > 0)
                                                                                  AS with_leaks,
       count(*) FILTER (WHERE text_leaks_train_wrt_test IS NOT NULL OR text_leaks_validation_wrt_test IS NOT NULL)
                                                                                  AS leaks_denominator,
       count(*) FILTER (WHERE text_duplication_test > 0)                          AS with_test_duplicates,
       count(text_duplication_test)                                               AS duplicates_denominator
FROM findings_dataset_verdict
"""


def headline(store: Store) -> dict[str, Any]:
    """The index's headline figures, each with its numerator and denominator.

    ``datasets``; ``with_leaks`` of ``leaks_denominator`` (a text of test also in train or
    validation, LLE text key; a dataset with neither split is NR and left out); ``with_test_duplicates``
    of ``duplicates_denominator``; ``verdicts`` (count and share per verdict); ``contamination``
    (findings_contamination_overview) and ``cross`` (findings_cross_overview).
    """
    create_views(store)
    h = store.records(HEADLINE_SQL)[0]
    h["pct_with_leaks"] = _share(h["with_leaks"], h["leaks_denominator"])
    h["pct_with_test_duplicates"] = _share(h["with_test_duplicates"], h["duplicates_denominator"])
    counts = dict(store.query("SELECT verdict, count(*) FROM findings_dataset_verdict GROUP BY verdict")[1])
    h["verdicts"] = [{"verdict": v, "count": counts.get(v, 0), "pct": _share(counts.get(v, 0), h["datasets"])}
                     for v in VERDICTS]
    h["contamination"] = store.records("SELECT * FROM findings_contamination_overview")[0]
    h["cross"] = store.records("SELECT * FROM findings_cross_overview")[0]
    return h


#: One index row per surveyed dataset: its verdict, worst contaminated % (normalized key profile)
#: and near %, the benchmarks that contaminate it, its family and its task categories.
INDEX_SQL = """
WITH tasks AS (
    SELECT dataset_id, list(DISTINCT regexp_extract(tag, '^task_categories:(.+)$', 1) ORDER BY 1) AS tasks
    FROM (SELECT dataset_id, unnest(tags) AS tag FROM datasets)
    WHERE tag LIKE 'task_categories:%'
    GROUP BY dataset_id
), hits AS (
    SELECT dataset_id, list(DISTINCT benchmark_id ORDER BY benchmark_id) AS benchmarks
    FROM findings_contamination_pairs
    WHERE contaminated_rows > 0 AND NOT benchmark_copy
    GROUP BY dataset_id
)
SELECT v.dataset_id, v.verdict, v.worst_normalized_contaminated_test_pct AS contaminated_pct,
       v.worst_near_contaminated_test_pct AS near_pct, coalesce(h.benchmarks, []) AS benchmarks,
       f.family_id AS family, coalesce(t.tasks, []) AS tasks
FROM findings_dataset_verdict v
LEFT JOIN hits h USING (dataset_id)
LEFT JOIN dataset_families f USING (dataset_id)
LEFT JOIN tasks t USING (dataset_id)
ORDER BY v.dataset_id
"""


def index_rows(store: Store) -> list[dict[str, Any]]:
    """Every surveyed dataset's index row (see :data:`INDEX_SQL`), by dataset id."""
    create_views(store)
    rows = store.records(INDEX_SQL)
    for row in rows:
        row["href"] = dataset_href(row["dataset_id"])
        row["benchmarks"] = list(row["benchmarks"])
        row["tasks"] = list(row["tasks"])
    return rows


def figure_table(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """One config's figures as one table: a column per label column (its measurement row), a body
    per method, each opened by a heading row; the definitions are on the site's glossary page, once.

    The LLE figures always; the exact and near figures when the config's rows name their method in
    ``methods`` (else they were not measured, and are not shown as NR). A count and its percentage
    are one row (``4 (66.667%)``, as the group table shows them; :func:`figure_rows`), and so are
    an LLE figure's two keys and an exact figure's two key profiles (:data:`TWINS`): one value when
    they agree, else ``text / text_and_label``, ``raw / normalized``. A config without a
    validation split leaves out the validation figures, NR by rule; a method of
    :data:`NONE_IN_A_LINE` whose every figure is 0 is its heading row, "none in any split".

    ``{html, hidden, methods}``: the table (a Markup string built from names escaped once per
    process and published values, a number, a percentage or NR, with nothing to escape, so that
    100,000 datasets render in minutes), how many validation figures it leaves out, and the methods
    it shows.
    """
    measured = set.intersection(*(set(_methods(r.get("methods"))) for r in rows)) if rows else set()
    no_validation = bool(rows) and all(r.get("rows_validation") is None for r in rows)
    width = len(rows) + 1
    heads = "".join(f"<th>{escape(r['label_column']) if r.get('label_column') is not None else 'value'}" for r in rows)
    parts = [f"<table class=\"figures\">\n<thead><tr><th>figure{heads}</thead>"]
    hidden, shown = 0, []
    for method, _ in METHOD_TITLES:
        if method != figures.LLE_METHOD and method not in measured:
            continue
        shown.append(method)
        body, zero = [], True
        for row in figure_rows(method):
            values = [_cell(r, row) for r in rows]
            if no_validation and row.validation and all(v == figures.NR for v in values):
                hidden += 1
                continue
            # end tags omitted (HTML implies them): the figures are most of a page's bytes
            body.append(row.head + "".join(f"<td>{v}" for v in values))
            zero = zero and all(v.split(" ", 1)[0] == "0" or v == figures.NR for v in values)
        head = f'<tbody data-method="{method}"><tr><th colspan="{width}" class="method">{PAGE_TITLES[method]} ({method})'
        if method in NONE_IN_A_LINE and zero:
            parts.append(f"{head}: none in any split")
            continue
        twins = TWINS.get(method)
        parts.append(f"{head}: {twins[0].rstrip('_')} / {twins[1].rstrip('_')}" if twins else head)
        parts.append("\n".join(body))
    parts.append("</table>")
    return {"html": Markup("\n".join(parts)), "hidden": hidden, "methods": shown}


#: The methods whose figures are one line when every one is 0 (or NR): "none in any split".
NONE_IN_A_LINE = frozenset({figures.ROWS_METHOD})


@dataclass(frozen=True)
class FigureRow:
    """One row of a method's table on a dataset page: a figure's count (or value) column and its
    percentage column when it has one, named without the prefix of its key or key profile
    (``prefixes``: one value per prefix, e.g. ``raw_`` and ``normalized_``; ``("",)``: one value)."""

    name: str  # the row's name: the count's, and the percentage's when it is not ``<count>_pct``
    column: str
    percent: str | None
    prefixes: tuple[str, ...]
    validation: bool  # NR without a validation split (left out of a config that has none)
    head: str  # the row's escaped head cell


#: The exact method's key profiles, as its columns' prefixes: a page shows each figure once, a value per profile (one when they agree).
EXACT_PROFILES = ("raw_", "normalized_")
_FORMATS = {c.name: c.fmt for c in figures.figure_columns()}

#: The methods whose figures come in twins, one per key (LLE) or key profile (exact), shown as one
#: row with one value when the twins agree, else ``first / second``.
TWINS = {figures.LLE_METHOD: ("text_", "text_and_label_"), figures.EXACT_METHOD: EXACT_PROFILES}


@functools.cache
def figure_rows(method: str) -> tuple[FigureRow, ...]:
    """The rows of ``method``'s table on a dataset page, in the registry's order: a count with its
    percentage (one figure of the registry) is one row, and so are a figure's twins (:data:`TWINS`)."""
    first, second = TWINS.get(method, ("", ""))
    out: list[list[Any]] = []  # [name, column, percent, prefixes, figure]
    for c in figures.figure_columns(method):
        if second and c.name.startswith(second):
            continue  # the twin of a first-prefix column
        twinned = bool(first) and c.name.startswith(first) and second + c.name.removeprefix(first) in _FORMATS
        base = c.name.removeprefix(first) if twinned else c.name
        prefixes = (first, second) if twinned else ("",)
        if c.percent_of is not None and out and out[-1][2] is None and c.figure is out[-1][4] and out[-1][3] == prefixes:
            count = out[-1]
            count[2] = base
            if base != f"{count[0]}_pct":
                count[0] = f"{count[0]} · {base}"
            continue
        out.append([base, base, None, prefixes, c.figure])
    assert all(p + n in _FORMATS for r in out for n in (r[1], r[2]) if n for p in r[3]), "a figure without its twin"
    return tuple(FigureRow(name, column, percent, prefixes, "validation" in column and "train_or_validation" not in column,
                           f"<tr><th>{escape(name)}") for name, column, percent, prefixes, _ in out)


def _cell(row: Mapping[str, Any], figure: FigureRow) -> str:
    """A figure's published value in one measurement row, its percentage beside a count; a twinned
    figure's value once when its twins agree, else both, ``first / second``."""
    values = [_value(row, p, figure) for p in figure.prefixes]
    return values[0] if len(set(values)) == 1 else " / ".join(values)


def _value(row: Mapping[str, Any], profile: str, figure: FigureRow) -> str:
    value = figures.published(row.get(profile + figure.column), _FORMATS[profile + figure.column])
    if figure.percent is None or value == figures.NR:
        return value
    return f"{value} ({figures.published(row.get(profile + figure.percent), _FORMATS[profile + figure.percent])})"


#: The figures of each text column alone at the batch's current revisions (column_measurements).
COLUMN_PAGE_SQL = """
SELECT c.* FROM column_measurements c JOIN site_current m
  ON m.dataset_id = c.dataset_id AND m.revision_sha = c.revision_sha AND m.config = c.config
 AND m.label_column IS NOT DISTINCT FROM c.label_column
WHERE c.dataset_id IN (SELECT dataset_id FROM site_ids)
ORDER BY c.dataset_id, c.config, list_position(c.text_columns, c.text_column), c.label_column NULLS FIRST,
         c.profile = 'normalized', c.profile"""  # raw first, as audit prints them


def column_tables(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One config's per-column figures (``column_measurements`` rows), one table per text column:
    a row per figure (its name, its value for each label column and profile; the definitions are
    on the glossary page). ``[{text_column, heads, html}]``; ``heads``: the value columns,
    ``(label column, profile)``."""
    by_column: dict[str, list[Mapping[str, Any]]] = {}
    for r in rows:
        by_column.setdefault(r["text_column"], []).append(r)
    out = []
    for text_column, column_rows in by_column.items():
        heads = [(r["label_column"], r["profile"]) for r in column_rows]
        body = []
        for column in figures.per_column_columns():
            values = "".join(f"<td>{figures.published(r.get(column.name), column.fmt)}" for r in column_rows)
            body.append(f"<tr><th>{escape(column.published_name)}{values}")
        out.append({"text_column": text_column, "heads": heads, "html": Markup("\n".join(body))})
    return out




def _methods(value: Any) -> dict[str, Any]:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return {}
    return value if isinstance(value, dict) else {}


def _json(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def fingerprint_values(row: Mapping[str, Any]) -> dict[str, Any]:
    """The split fingerprints of one measurement row, by split (None: no such split)."""
    return {c.removeprefix("fingerprint_"): row[c] for c in FINGERPRINT_COLUMNS}


#: The ``history`` view's rows of a batch of datasets, in the view's order.
HISTORY_SQL = ("SELECT * FROM history WHERE dataset_id IN (SELECT dataset_id FROM site_ids) "
               "ORDER BY dataset_id, config, label_column NULLS FIRST, measured_at, revision_sha, source")


#: The history columns a dataset page shows (every column: ``hubsurvey history <id>``, the export).
HISTORY_SHOWN = ("config", "label_column", "revision_sha", "measured_at", "run_id", "verdict", "verdict_basis",
                 "near_contaminated_test_pct", "normalized_contaminated_test_pct", "text_test_biased", "rows_test",
                 "tool_version")


def history_rows(store: Store) -> dict[str, list[dict[str, Any]]]:
    """The ``history`` view's rows of the datasets in ``site_ids``, by dataset id, each with the
    columns of :data:`HISTORY_SHOWN` and ``is_current``."""
    return _grouped(store, HISTORY_SQL.replace("SELECT *", f"SELECT dataset_id, is_current, {', '.join(HISTORY_SHOWN)}"))


#: Examples a dataset page shows per (config, kind), the first by rank (every stored example:
#: ``hubsurvey show <id>``); real datasets store up to 20 per kind, profile and label column.
PAGE_EXAMPLES = 2


def example_rows(rows: Sequence[Mapping[str, Any]],
                 label_names: Mapping[tuple[str, str, str], Mapping[int, str]] | None = None) -> list[dict[str, Any]]:
    """A dataset's stored examples as one table: an example stored under both key profiles (the
    same kind, config, label column, text and positions) is one row whose ``profiles`` names both;
    the first :data:`PAGE_EXAMPLES` per (config, kind). ``labels_text``: an example's labels per
    split, each ClassLabel id as ``name (id)`` when ``label_names`` (per (dataset, config, label
    column), ``{id: name}``) names it."""
    out: dict[tuple, dict[str, Any]] = {}
    for e in rows:
        key = (e["config"], e["kind"], e["label_column"], json_text(_json(e["key"])), json_text(_json(e["positions"])),
               e.get("rows_train"), e.get("rows_validation"), e.get("rows_test"), json_text(_json(e.get("partner"))))
        if key in out:
            out[key]["profiles"].append(e["profile"])
            continue
        out[key] = {**e, "profiles": [e["profile"]], "words": KIND_WORDS.get(e["kind"], e["kind"]),
                    "key": _json(e["key"]), "partner": _json(e.get("partner")), "where": positions_text(e["positions"]),
                    "labels_text": labels_text(_json(e.get("labels")),
                                               (label_names or {}).get((e["dataset_id"], e["config"], e["label_column"])))}
    ordered = sorted(out.values(), key=lambda e: (e["config"], e["kind"], e["label_column"] or "", e["rank"]))
    shown: dict[tuple[str, str], int] = defaultdict(int)
    kept = []
    for e in ordered:
        shown[(e["config"], e["kind"])] += 1
        if shown[(e["config"], e["kind"])] <= PAGE_EXAMPLES:
            kept.append(e)
    return kept


#: Characters of an example's labels a page shows per split (a tag per token makes long lists).
LABELS_WIDTH = 80


def labels_text(labels: Any, names: Mapping[int, str] | None) -> str | None:
    """An example's labels per split as a line of text, ``train fear (4); test sadness (0)``: each
    ClassLabel id with its name when ``names`` has it, each split's list cut at whole items."""
    if not isinstance(labels, dict):
        return None
    named = named_labels(labels, names) if names else labels
    item = label_text if names else json_text
    parts = [f"{split} {short_list(value, LABELS_WIDTH, item=item)}" for split, value in named.items() if value]
    return "; ".join(parts) or None


def positions_text(value: Any) -> str:
    """An example's row positions per split as a line of text: ``train 40, 41; test 5``."""
    positions = _json(value) or {}
    if not isinstance(positions, dict):
        return json_text(positions)
    return "; ".join(f"{split} {', '.join(map(str, rows)) if isinstance(rows, list) else rows}"
                     for split, rows in positions.items())


def cite_text(dataset_id: str, rows: Sequence[Mapping[str, Any]], url: str | None) -> str:
    """The dataset's citable block: per config and label column, the revision, the Parquet commit
    read, the split fingerprints and what measured it (tool version, methods, when, the run); the
    page's URL when known."""
    lines = [f"dataset: {dataset_id}"]
    for r in rows:
        label = f" (label column {r['label_column']})" if r["label_column"] is not None else ""
        methods = ", ".join(f"{k} v{v}" for k, v in sorted(_methods(r.get("methods")).items())) or \
            f"{r['method']} v{r['method_version']}"
        fingerprints = ", ".join(f"{split} {value or figures.NR}" for split, value in fingerprint_values(r).items())
        run = f", run {r['run_id']}" if r.get("run_id") else ""
        lines += [f"config: {r['config']}{label}", f"  revision: {r['revision_sha']}",
                  f"  parquet commit: {r.get('parquet_sha') or figures.NR}", f"  fingerprints: {fingerprints}",
                  f"  measured by: hubsurvey {r['tool_version']} ({methods}), {render_when(r['measured_at'])}{run}"]
    if url:
        lines.append(f"page: {url}")
    return "\n".join(lines)


def cross_measured(store: Store) -> bool:
    """Whether leaks across datasets were ever computed for this DB: a crossleaks run (alone, or
    a step of a survey run) is recorded, or its tables hold rows. Otherwise the site says "not
    measured", never 0."""
    if store.query("SELECT (SELECT count(*) FROM cross_overlaps) + (SELECT count(*) FROM dataset_families)")[1][0][0]:
        return True
    return bool(store.query(
        "SELECT count(*) FROM runs WHERE status = 'done' AND (command = 'crossleaks' OR "
        # a run without the step records "crossleaks": null
        "(command = 'run' AND coalesce(json_type(counts, '$.crossleaks') <> 'NULL', false)))")[1][0][0])


def badge_markdown(badges_url: str, dataset_id: str) -> str:
    """The markdown of a dataset's badge for its card: the shields.io endpoint whose ``url`` is the
    badge file served at ``badges_url`` (the results dataset ``publish`` writes, which holds
    ``badges/<safe>.json``), the file's URL percent-encoded as a query value, so the ``%`` of its
    name survives both decodings."""
    file_url = f"{badges_url}/{href(badge_path(dataset_id))}"
    return f"![{LABEL}]({SHIELDS_ENDPOINT}{quote(file_url, safe='')})"


#: Per benchmark, the models whose declared training data holds its items (findings_model_exposure).
EXPOSURE_INDEX_SQL = f"""
SELECT *, row_number() OVER (PARTITION BY benchmark_id, benchmark_config, benchmark_split
                             ORDER BY contaminated_rows DESC, model_id) AS rank,
       count(*) OVER (PARTITION BY benchmark_id, benchmark_config, benchmark_split) AS models_total
FROM findings_model_exposure
QUALIFY rank <= {INDEX_MODELS_PER_BENCHMARK}
ORDER BY benchmark_id, benchmark_config, benchmark_split, rank
"""


def exposure_by_benchmark(store: Store) -> list[dict[str, Any]]:
    """``[{benchmark_id, benchmark_config, benchmark_split, models: [rows]}]``: per benchmark, its
    models from findings_model_exposure, the most contaminated rows first, at most
    :data:`INDEX_MODELS_PER_BENCHMARK` (each row's ``models_total`` says how many there are)."""
    create_views(store)
    return _by_benchmark(store.records(EXPOSURE_INDEX_SQL))


#: Per dataset of the batch, the models declaring it, per contaminated benchmark (the rows of
#: findings_model_exposure's per-dataset step: model_exposure at the dataset's current revision).
EXPOSURE_PAGE_SQL = """
SELECT e.dataset_id, e.benchmark_id, e.benchmark_config, e.benchmark_split, e.model_id,
       arg_max(e.model_sha, e.looked_up_at) AS model_sha, string_agg(DISTINCT e.declared_by, ', ') AS declared_by,
       sum(e.contaminated_rows)::BIGINT AS contaminated_rows, sum(e.rows_split)::BIGINT AS rows,
       string_agg(e.contaminated_rows || ' rows in ' || e.config || '/' || e.split_name, ', '
                  ORDER BY e.config, e.split) AS where_found,
       bool_or(coalesce(p.benchmark_copy, false)) AS benchmark_copy, max(e.looked_up_at) AS looked_up_at
FROM model_exposure e
JOIN site_ids USING (dataset_id)
LEFT JOIN site_pairs p
    ON p.dataset_id = e.dataset_id AND p.revision_sha = e.revision_sha AND p.config = e.config AND p.split = e.split
   AND p.benchmark_id = e.benchmark_id AND p.benchmark_config = e.benchmark_config AND p.benchmark_split = e.benchmark_split
WHERE EXISTS (SELECT 1 FROM site_current m
              WHERE m.dataset_id = e.dataset_id AND m.revision_sha = e.revision_sha AND m.config = e.config)
GROUP BY ALL
ORDER BY e.dataset_id, e.benchmark_id, e.benchmark_config, e.benchmark_split, contaminated_rows DESC, e.model_id
"""

#: Per dataset of the batch, its newest clean test split per (config, profile) (clean_test).
CLEAN_PAGE_SQL = """
SELECT c.dataset_id, c.config, c.profile, c.revision_sha, c.parquet_sha, c.test_split, c.rows_test, c.rows_kept,
       c.dropped, c.test_fingerprint, c.clean_fingerprint, c.method, c.method_version, c.tool_version, c.cleaned_at,
       EXISTS (SELECT 1 FROM site_current m WHERE m.dataset_id = c.dataset_id AND m.revision_sha = c.revision_sha
                                             AND m.config = c.config) AS is_current
FROM clean_test c
JOIN site_ids USING (dataset_id)
QUALIFY row_number() OVER (PARTITION BY c.dataset_id, c.config, c.profile ORDER BY c.cleaned_at DESC, c.revision_sha) = 1
ORDER BY c.dataset_id, c.config, c.profile
"""


def clean_entry(row: Mapping[str, Any]) -> dict[str, Any]:
    """One clean_test row as a page shows it: the rows dropped by reason, and how to get it."""
    dropped = _json(row["dropped"]) or {}
    return {**row, "dropped": {reason: dropped.get(reason, 0) for reason in CLEAN_REASONS},
            "command": (f"hubsurvey clean {shlex.quote(row['dataset_id'])} --config {shlex.quote(row['config'])}"
                        + (f" --profile {shlex.quote(row['profile'])}" if row["profile"] != "normalized" else "")
                        + " --out clean-test"),
            "python": (f"hubsurvey.load_clean_test({json_text(row['dataset_id'])}, {json_text(row['config'])}, "
                       f"profile={json_text(row['profile'])}, db=\"results.duckdb\")") if row["parquet_sha"] else None}


# --- charts (inline SVG) ------------------------------------------------------------------------------


def bar_chart(bars: Sequence[tuple[str, float | None, str]], *, width: int = 520, row: int = 26,
              label_width: int = 130) -> dict[str, Any]:
    """A horizontal bar chart's geometry: ``bars`` are (label, percent, caption); the template draws it."""
    scale = (width - label_width - 90) / 100
    out = []
    for i, (label, value, caption) in enumerate(bars):
        out.append({"label": label, "caption": caption, "y": 8 + i * row, "w": round((value or 0) * scale, 1),
                    "text_x": round(label_width + (value or 0) * scale + 6, 1)})
    return {"bars": out, "width": width, "height": 16 + len(bars) * row, "label_width": label_width, "row": row}


def curve_chart(points: Sequence[Mapping[str, Any]], rows_test: int | None, *, width: int = 420,
                height: int = 200) -> dict[str, Any] | None:
    """The near-duplicate curve (test rows near train at each threshold) as polyline geometry, or None."""
    pts = sorted((float(p["threshold"]), p.get("test_rows_near_train")) for p in points if p.get("threshold") is not None)
    if not pts:
        return None
    pcts = [(t, None if n is None or not rows_test else 100.0 * n / rows_test, n) for t, n in pts]
    top = max([p for _, p, _ in pcts if p is not None] + [1.0])
    top = 10 ** math.ceil(math.log10(top)) if top > 1 else 1.0
    left, bottom, right, up = 50, height - 30, width - 16, 14
    lo, hi = min(t for t, _, _ in pcts), max(t for t, _, _ in pcts)
    span = (hi - lo) or 1.0

    def x(t: float) -> float:
        return round(left + (t - lo) / span * (right - left), 1)

    def y(p: float) -> float:
        return round(bottom - p / top * (bottom - up), 1)

    marks = [{"x": x(t), "y": y(p or 0), "threshold": f"{t:g}", "rows": n, "pct": _pct(p)} for t, p, n in pcts]
    return {"width": width, "height": height, "left": left, "bottom": bottom, "right": right, "up": up,
            "top": f"{top:g}", "marks": marks, "points": " ".join(f"{m['x']},{m['y']}" for m in marks)}


def curve_points(points: Sequence[Mapping[str, Any]], rows_test: int | None) -> list[dict[str, Any]]:
    """The near-duplicate curve as a dataset page lists it: each threshold with its test rows near
    train and their share of the test rows (a line of text: a chart per dataset would not fit a Space)."""
    pts = sorted((float(p["threshold"]), p.get("test_rows_near_train")) for p in points if p.get("threshold") is not None)
    return [{"threshold": f"{t:g}", "rows": n, "pct": _pct(None if n is None or not rows_test else 100.0 * n / rows_test)}
            for t, n in pts]


# --- the build -------------------------------------------------------------------------------------------


def _environment() -> Any:
    env = environment()
    env.filters["json_text"] = lambda v: visible(json_text(_json(v))) if v is not None else ""
    return env


def _check_out_dir(out: Path) -> None:
    """Refuse an ``out`` that is not missing, empty, or a site hubsurvey built and nobody changed
    since: the marker is a sealed manifest of every file of the site (:mod:`hubsurvey.core.outputs`),
    so a folder holding a marker of its own making, or any file the build did not write (or that
    changed since), is refused: the folder is replaced whole, and nothing of someone else's may go."""
    output_folder(out)
    if not out.exists() or not any(out.iterdir()):
        return
    if not (out / MARKER).is_file():
        raise BadInputError(f"{out}: exists and is not a site hubsurvey built (no {MARKER}); give another --out")
    sealed = read_sealed(out / MARKER, SITE_FORMAT)
    if sealed is None:
        raise BadInputError(f"{out}: its {MARKER} was not written by hubsurvey site (or was changed since); "
                            "give another --out")
    written = set(written_files(out, sealed)) | {out / MARKER}
    others = sorted(p.relative_to(out).as_posix() for p in out.rglob("*")
                    if (p.is_file() or p.is_symlink()) and p not in written)
    if others:
        raise BadInputError(f"{out}: holds {len(others)} file(s) the site build did not write, or changed since "
                            f"(e.g. {others[0]}); nothing is replaced: give another --out")


def seal_site(folder: Path) -> None:
    """Write the marker: a sealed manifest of every file in ``folder`` (the site just written)."""
    written = [p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file() and p.name != MARKER]
    marker = seal({"tool_version": __version__}, folder, written, SITE_FORMAT)
    (folder / MARKER).write_text(json.dumps(marker, indent=1) + "\n", encoding="utf-8")


def _swap_in(tmp: Path, out: Path) -> None:
    """Replace ``out`` by the finished ``tmp`` (each a whole site): a reader sees one or the other."""
    old = None
    if out.exists():
        old = out.with_name(f".{out.name}.old-{os.getpid()}")
        os.replace(out, old)
    os.replace(tmp, out)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def build_site(store: Store, out_dir: str | Path = DEFAULT_SITE_DIR, *,
               progress: Callable[[int, int], None] | None = None, site_url: str | None = None,
               badges_url: str | None = None) -> SiteSummary:
    """Write the static site of the DB's results into ``out_dir``; return what was written.

    ``out_dir`` may be missing, empty or a site built before (it is replaced whole); anything else is
    refused with one line. ``progress(done, total)`` is called after each batch of dataset pages.
    ``site_url``: where the site will be served (http or https); each dataset's citable block then
    gives its page's full URL. ``badges_url``: where the results dataset (``publish``) serves its
    ``badges/`` files, e.g. ``https://huggingface.co/datasets/OWNER/NAME/resolve/main``; each page
    then gives the markdown of its badge. The site itself holds no badge file (one per dataset
    would not fit a Space at Hub scale).
    """
    started = time.perf_counter()
    site_url = check_site_url(site_url)
    badges_url = check_site_url(badges_url)
    out = Path(out_dir)
    _check_out_dir(out)
    create_views(store)
    if not store.query("SELECT count(*) FROM current_measurements")[1][0][0]:
        raise BadInputError(f"{store.path}: no measurements to build a site from (run `hubsurvey run` or `hubsurvey audit` first)")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.build-", dir=out.parent))
    try:
        summary = _write_site(store, tmp, progress, site_url, badges_url)
        seal_site(tmp)
        _swap_in(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    summary.out_dir = out
    files = [p for p in out.rglob("*") if p.is_file()]
    summary.files, summary.bytes = len(files), sum(p.stat().st_size for p in files)
    summary.seconds = time.perf_counter() - started
    return summary


def _provenance(store: Store) -> dict[str, Any]:
    return store.records(
        "SELECT string_agg(DISTINCT tool_version, ', ' ORDER BY tool_version) AS tool_versions, "
        "max(measured_at) AS last_measured_at, min(measured_at) AS first_measured_at FROM current_measurements")[0]


def _write_site(store: Store, root: Path, progress: Callable[[int, int], None] | None,
                site_url: str | None, badges_url: str | None = None) -> SiteSummary:
    env = _environment()
    summary = SiteSummary(root)
    head = headline(store)
    head["cross_measured"] = cross_measured(store)
    rows = index_rows(store)
    ids = {r["dataset_id"] for r in rows}
    summary.datasets = len(rows)
    common = {"version": __version__, "provenance": _provenance(store), "site_url": site_url, "badges_url": badges_url,
              "glossary": GLOSSARY, "cross_measured": head["cross_measured"], "page_examples": PAGE_EXAMPLES}
    for name in ASSETS:
        (root / name).write_bytes(resources.files(TEMPLATES_PACKAGE).joinpath(name).read_bytes())
    (root / GLOSSARY).write_text(env.get_template("site_figures.html.j2").render(
        **common, up="", rules=verdict_rules(), methods=[
            {"method": m, "title": t, "columns": figures.figure_columns(m)} for m, t in METHOD_TITLES],
        per_column=figures.per_column_columns(), kinds=KIND_WORDS,
        brief_why_not=beside.BRIEF_WHY_NOT), encoding="utf-8")
    # the table's data, in chunks
    (root / "data").mkdir()
    chunks = [rows[i:i + CHUNK_ROWS] for i in range(0, len(rows), CHUNK_ROWS)] or [[]]
    for n, chunk in enumerate(chunks):
        payload = [[r[c] if c != "id" else r["dataset_id"] for c in INDEX_COLUMNS] for r in chunk]
        (root / "data" / f"index-{n}.js").write_text(
            f"hubsurvey.add({n}, {len(chunks)}, {_js_json(payload)});\n", encoding="utf-8")
    summary.index_chunks = len(chunks)
    tasks = sorted({t for r in rows for t in r["tasks"]})
    pages = max(1, math.ceil(len(rows) / LIST_PAGE_ROWS))
    cross = head["cross"]
    charts = {
        "verdicts": bar_chart([(v["verdict"], v["pct"], f"{v['count']} ({_pct(v['pct'])})") for v in head["verdicts"]]),
        "shares": bar_chart([
            ("leaks into test", head["pct_with_leaks"], f"{head['with_leaks']} of {head['leaks_denominator']}"),
            ("duplicates in test", head["pct_with_test_duplicates"],
             f"{head['with_test_duplicates']} of {head['duplicates_denominator']}"),
            ("benchmark contamination", head["contamination"]["pct_datasets_contaminated"],
             f"{head['contamination']['datasets_contaminated']} of {head['contamination']['datasets_checked']}"
             if head["contamination"]["datasets_checked"] else "not measured"),
            ("leaks across datasets", cross["pct_leaking"] if head["cross_measured"] else None,
             f"{cross['leaking_test_splits']} of {cross['test_splits']} test splits" if head["cross_measured"]
             else "not measured"),
        ], label_width=180),
    }
    scored = has_scores(store)  # the scores models report (hubsurvey scores): a ranking page, a section per dataset
    if scored:
        write_scores_page(store, env, root, common, lambda d: dataset_href(d) if d in ids else None)
    (root / "index.html").write_text(env.get_template("site_index.html.j2").render(
        scores_page=SCORES_PAGE_PATH if scored else None,
        **common, h=head, charts=charts, chunks=len(chunks), tasks=tasks, verdicts=VERDICTS, list_pages=pages,
        first_list=href(list_page_path(1)), columns=INDEX_COLUMNS, since=since_last_run(store),
        page=lambda d: dataset_href(d) if d in ids else None,
        exposure=exposure_by_benchmark(store),
        exposure_overview=store.records("SELECT * FROM findings_model_exposure_overview")[0]), encoding="utf-8")
    # the plain list pages
    (root / "list").mkdir()
    list_template = env.get_template("site_list.html.j2")
    for number in range(1, pages + 1):
        part = rows[(number - 1) * LIST_PAGE_ROWS:number * LIST_PAGE_ROWS]
        (root / list_page_path(number)).write_text(list_template.render(
            **common, rows=part, number=number, pages=pages, up="../", first=(number - 1) * LIST_PAGE_ROWS + 1),
            encoding="utf-8")
    summary.list_pages = pages
    # the dataset pages, a batch of datasets at a time, from the views computed once (TEMP tables:
    # each view is over every dataset, and a batch's join would compute it again)
    for table, view in _MATERIALIZED.items():
        store.con.execute(f"CREATE OR REPLACE TEMP TABLE {table} AS SELECT * FROM {view}")
    try:
        badges = read_badges(store)
        scores = scores_by_dataset(store) if scored else {}
        _write_dataset_pages(store, env, root, [r["dataset_id"] for r in rows], ids,
                             {**common, "badges": badges, "scores_of": scores}, summary, progress)
    finally:
        for table in _MATERIALIZED:
            store.con.execute(f"DROP TABLE IF EXISTS {table}")
    return summary


def verdict_rules() -> list[dict[str, Any]]:
    """Every basis with the rule of each verdict (:func:`hubsurvey.analysis.verdicts.rule`), for the glossary."""
    return [{"basis": basis, "figure": DECIDING[basis][0],
             "rules": [{"verdict": v, "rule": rule(basis, v)} for v in VERDICTS]} for basis in BASIS_ORDER]


#: The TEMP tables the dataset pages read, and the view each is computed from once per build.
_MATERIALIZED = {"site_current": "current_measurements",
                 "site_pairs": "findings_contamination_pairs", "site_lines": "findings_contamination"}


def _write_dataset_pages(store: Store, env: Any, root: Path, ordered: Sequence[str], ids: set[str],
                         common: Mapping[str, Any], summary: SiteSummary,
                         progress: Callable[[int, int], None] | None) -> None:
    """One page per shard (:func:`dataset_page_path`), each with an article per dataset of the
    shard, by id; the datasets are queried a batch at a time, a batch holding whole shards."""
    template = env.get_template("site_shard.html.j2")
    (root / "d").mkdir()
    by_shard: dict[str, list[str]] = defaultdict(list)
    for dataset_id in ordered:
        by_shard[dataset_shard(dataset_id)].append(dataset_id)
    shards = sorted(by_shard)
    done = 0
    batch: list[str] = []
    for i, shard in enumerate(shards):
        batch.append(shard)
        if sum(len(by_shard[b]) for b in batch) < BATCH_DATASETS and i + 1 < len(shards):
            continue
        datasets = [d for b in batch for d in by_shard[b]]
        pages = dict(_dataset_pages(store, datasets, ids, common["site_url"], common["badges_url"]))
        for b in batch:
            # the scores models report on each dataset (analysis/site_scores.py), when they were read
            articles = [{**pages[d], "scores": common["scores_of"].get(d, [])} for d in by_shard[b]]
            (root / dataset_page_path(by_shard[b][0])).write_text(
                template.render(**common, shard=b, datasets=articles, up="../"), encoding="utf-8")
            summary.dataset_pages += 1
        done += len(datasets)
        batch = []
        if progress is not None:
            progress(done, len(ordered))


def _js_json(value: Any) -> str:
    """JSON for a script file: ``<``, ``>`` and ``&`` as \\u escapes, so no value can close a tag."""
    text = json_text(value)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _grouped(store: Store, sql: str, key: str = "dataset_id") -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in store.records(sql):
        out[r[key]].append(r)
    return out


#: The current (dataset, revision, config) triples of the batch: what examples and contamination join on.
_CURRENT = ("(SELECT DISTINCT dataset_id, revision_sha, config FROM site_current "
            "JOIN site_ids USING (dataset_id))")


def _by_benchmark(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """A dataset's exposure rows grouped by benchmark: ``[{benchmark_id, benchmark_config, benchmark_split, models}]``."""
    out: dict[tuple[str, str, str], dict[str, Any]] = {}
    for r in rows:
        key = (r["benchmark_id"], r["benchmark_config"], r["benchmark_split"])
        out.setdefault(key, {"benchmark_id": key[0], "benchmark_config": key[1], "benchmark_split": key[2],
                             "models": []})["models"].append(r)
    return list(out.values())


def _dataset_pages(store: Store, batch: Sequence[str], surveyed: set[str], site_url: str | None,
                   badges_url: str | None = None) -> Iterable[tuple[str, dict[str, Any]]]:
    """Each dataset's article context, for one batch of dataset ids (a few queries for the whole batch)."""
    import pyarrow as pa

    store.con.register("site_ids", pa.table({"dataset_id": pa.array(list(batch), pa.string())}))
    try:
        measured = _grouped(store, "SELECT * FROM site_current JOIN site_ids USING (dataset_id) "
                                   "ORDER BY dataset_id, config, label_column NULLS FIRST")
        examples = _grouped(store, f"SELECT e.* FROM examples e JOIN {_CURRENT} USING (dataset_id, revision_sha, config) "
                                   "ORDER BY dataset_id, config, kind, profile, label_column NULLS FIRST, rank")
        pairs = _grouped(store, "SELECT p.* FROM site_pairs p JOIN site_ids USING (dataset_id) "
                                "ORDER BY dataset_id, config, split, benchmark_id, benchmark_config, benchmark_split")
        lines = {r["dataset_id"]: r for r in store.records(
            "SELECT * FROM site_lines JOIN site_ids USING (dataset_id)")}
        cross_out = _grouped(store, "SELECT * FROM cross_overlaps WHERE test_dataset IN (SELECT dataset_id FROM site_ids) "
                                    "ORDER BY test_dataset, rows DESC, source_dataset, source_config, source_split",
                             "test_dataset")
        cross_in = _grouped(store, "SELECT * FROM cross_overlaps WHERE source_dataset IN (SELECT dataset_id FROM site_ids) "
                                   "ORDER BY source_dataset, rows DESC, test_dataset, test_config", "source_dataset")
        family = {r["dataset_id"]: r for r in store.records(
            "SELECT * FROM dataset_families JOIN site_ids USING (dataset_id)")}
        history = history_rows(store)
        exposure = _grouped(store, EXPOSURE_PAGE_SQL)
        cleaned = _grouped(store, CLEAN_PAGE_SQL)
        per_column = _grouped(store, COLUMN_PAGE_SQL)
        group_columns, date_columns = _grouped(store, beside.GROUP_PAGE_SQL), _grouped(store, beside.TIME_PAGE_SQL)
        label_names: dict[tuple[str, str, str], dict[int, str]] = defaultdict(dict)
        for r in store.records(f"SELECT l.dataset_id, l.config, l.label_column, l.label_id, l.name FROM label_names l "
                               f"JOIN {_CURRENT} USING (dataset_id, revision_sha, config)"):
            label_names[(r["dataset_id"], r["config"], r["label_column"])][r["label_id"]] = r["name"]
    finally:
        store.con.unregister("site_ids")

    def link(other: str) -> dict[str, Any]:
        return {"id": other, "href": dataset_href(other) if other in surveyed else None}

    for dataset_id in batch:
        rows = measured.get(dataset_id, [])
        configs: dict[str, dict[str, Any]] = {}
        for r in rows:
            c = configs.setdefault(r["config"], {"config": r["config"], "rows": [], "curve": None,
                                                 "reproduce": _reproduce(dataset_id, r["config"], r["source"])})
            c["rows"].append({"measurement": r, "fingerprints": fingerprint_values(r), "methods": _methods(r.get("methods"))})
            if c["curve"] is None and r.get("near_curve"):
                c["curve"] = curve_points(_json(r["near_curve"]) or [], r["rows_test"])
        columns_of: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for r in per_column.get(dataset_id, []):
            columns_of[r["config"]].append(r)
        for c in configs.values():
            c["figures"] = figure_table([row["measurement"] for row in c["rows"]])
            c["column_tables"] = column_tables(columns_of.get(c["config"], []))
            c["beside"] = beside.beside_section(
                [row["measurement"] for row in c["rows"]],
                [g for g in group_columns.get(dataset_id, []) if g["config"] == c["config"]],
                [d for d in date_columns.get(dataset_id, []) if d["config"] == c["config"]])
        fam = family.get(dataset_id)
        anchor = dataset_anchor(dataset_id)
        yield dataset_id, {
            "dataset_id": dataset_id,
            "anchor": anchor,
            "url": f"{site_url}/{dataset_href(dataset_id)}" if site_url else None,
            "cite": cite_text(dataset_id, rows, f"{site_url}/{dataset_href(dataset_id)}" if site_url else None),
            "judged": dataset_verdict(rows) if rows else None,
            "configs": list(configs.values()),
            "examples": example_rows([e for e in examples.get(dataset_id, []) if e["config"] in configs], label_names),
            "hub_url": HUB_DATASETS_URL + quote(dataset_id, safe="/") if rows and rows[0]["source"] == "hub" else None,
            "contamination_line": lines.get(dataset_id),
            "contamination": pairs.get(dataset_id, []),
            "cross_out": [{**o, "other": link(o["source_dataset"])} for o in cross_out.get(dataset_id, [])],
            "cross_in": [{**o, "other": link(o["test_dataset"])} for o in cross_in.get(dataset_id, [])],
            "family": {"family_id": fam["family_id"], "members": [link(m) for m in fam["members"] if m != dataset_id]}
                      if fam else None,
            "history": history.get(dataset_id, []),
            "exposure": _by_benchmark(exposure.get(dataset_id, [])),
            "clean": [clean_entry(r) for r in cleaned.get(dataset_id, [])],
            "badge_markdown": badge_markdown(badges_url, dataset_id) if badges_url else None,
            "badge_file": badge_path(dataset_id),
        }


def _reproduce(dataset_id: str, config: str, source: str) -> str | None:
    """The command that measures this config again (a Hub dataset only: a folder's path is not stored)."""
    if source != "hub":
        return None
    return f"hubsurvey audit {shlex.quote(dataset_id)} --config {shlex.quote(config)}"


# --- publish as a static Space ------------------------------------------------------------------------


SPACE_CARD = "README.md"
#: Paths of a Space that a site build writes: a remote file among them that the build no longer
#: produces is deleted by the push; anything else in the Space is its owner's.
OWNED_SITE_FILES = frozenset({SPACE_CARD, "index.html", GLOSSARY, MARKER, SCORES_PAGE_PATH, SCORES_SCRIPT, *ASSETS})
#: badges/: a site built before held them; a push deletes them now that the site does not
OWNED_SITE_FOLDERS = ("d/", "list/", "data/", "badges/")


def is_site_file(path_in_repo: str) -> bool:
    return path_in_repo in OWNED_SITE_FILES or path_in_repo.startswith(OWNED_SITE_FOLDERS)


def space_url(repo_id: str) -> str:
    """Where a static Space serves its files as they are (the badges' JSON among them)."""
    return f"https://huggingface.co/spaces/{quote(repo_id, safe='/')}/resolve/main"


def space_card(repo_id: str, summary: SiteSummary) -> str:
    """The Space's README.md: the front matter a static Space needs (``sdk: static``), then a line."""
    title = repo_id.split("/", 1)[-1][:60]
    return ("---\n" + f"title: {json_text(title)}\nsdk: static\napp_file: index.html\npinned: false\n"
            f"tags:\n- hubsurvey\n---\n\n# {title}\n\nThe survey's results, {summary.datasets} datasets, "
            f"as a static site built by hubsurvey {__version__} (`hubsurvey site`).\n")


@dataclass
class SitePublishResult:
    repo_id: str
    summary: SiteSummary
    files: list[Any] = field(default_factory=list)
    pushed: bool = False
    unchanged: bool = False
    changed: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    commit_url: str | None = None


def publish_site(store: Store, repo_id: str, out_dir: str | Path, *, push: bool = False, private: bool = False,
                 client: Any = None) -> SitePublishResult:
    """Build the site into ``out_dir`` with a Space card, and, when ``push``, upload it to the static
    Space ``repo_id`` in one commit through ``client`` (a :class:`hubsurvey.core.hub.HubClient`), as
    :func:`hubsurvey.analysis.publish.push_folder` pushes a results dataset: nothing is committed when
    the Space already holds exactly these files. Without ``push`` it is a dry run."""
    from hubsurvey.analysis.publish import check_repo_id, plan_file, push_folder

    check_repo_id(repo_id)
    summary = build_site(store, out_dir, site_url=space_url(repo_id))
    folder = Path(out_dir)
    (folder / SPACE_CARD).write_text(space_card(repo_id, summary), encoding="utf-8")
    seal_site(folder)  # the card is the build's too: a later build may replace it
    paths = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())
    files = [plan_file(folder, p) for p in paths]
    result = SitePublishResult(repo_id, summary, files)
    if not push:
        return result
    pushed = push_folder(files, repo_id, folder=folder, private=private, client=client, repo_type="space",
                         space_sdk="static", owned=is_site_file,
                         commit_message=f"hubsurvey {__version__}: site of {summary.datasets} datasets")
    result.pushed, result.unchanged = pushed.pushed, pushed.unchanged
    result.changed, result.deleted, result.commit_url = pushed.changed, pushed.deleted, pushed.commit_url
    return result

