"""The results dataset's card (README.md): Hub YAML front matter, methods, columns, provenance.

The card is public: its provenance never shows a local path (the DB, report or cache folders of
the machine that ran the survey; see :func:`public_args`). ``task_categories`` are those of the
measured datasets (their ``task_categories:*`` Hub tags); the card cites the LLE blog post and the
published lbourdois/LLE dataset.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath, PureWindowsPath
from typing import Any

from hubsurvey.analysis.checks_manifest import CHECKS_MANIFEST_PATH
from hubsurvey.analysis.crossleaks import CROSS_METHOD
from hubsurvey.analysis.export import (
    CLEAN_TEST_PARQUET_PATH,
    COLUMN_CSV_PATH,
    COLUMN_PARQUET_PATH,
    CONTAMINATION_CSV_PATH,
    CROSS_CSV_PATH,
    CROSS_PARQUET_PATH,
    CSV_PATH,
    EXPOSURE_CSV_PATH,
    EXPOSURE_PARQUET_PATH,
    FAMILIES_CSV_PATH,
    GROUP_CSV_PATH,
    GROUP_PARQUET_PATH,
    HISTORY_CSV_PATH,
    HISTORY_PARQUET_PATH,
    LLE_CSV_PATH,
    PARQUET_PATH,
    SCORES_CSV_PATH,
    SCORES_PARQUET_PATH,
    TIME_CSV_PATH,
    TIME_PARQUET_PATH,
    columns,
)
from hubsurvey.analysis.findings import findings
from hubsurvey.analysis.render import (
    DEFINITIONS,
    EXACT_DEFINITIONS,
    KEY_LABELS,
    NEAR_DEFINITIONS,
    Table,
    cross_setting,
    environment,
    near_setting,
    num,
    pct,
    provenance,
    shared_tables,
)
from hubsurvey.analysis.report import REPORT_MD
from hubsurvey.core import figure_docs, figures
from hubsurvey.core.fingerprint import FINGERPRINT_VERSION
from hubsurvey.core.store import Store

DEFAULT_LICENSE = "cc-by-4.0"
DEFAULT_PRETTY_NAME = "LLE survey results: leaks and duplicates in Hub datasets"
TAGS = ("lle", "data-leakage", "deduplication", "benchmark-contamination", "hubsurvey")
PARQUET_GLOB = "data/train-*.parquet"

FILE_DESCRIPTIONS = {
    PARQUET_PATH: "the results, one row per (dataset, config, label column); NR figures are null",
    CSV_PATH: "the same rows and columns as CSV; NR figures are written NR, lists as JSON arrays",
    LLE_CSV_PATH: "the lle view in the published lbourdois/LLE train.csv format: ';'-separated, its header "
                  "spelling (valididation) kept, NR, 10.049%, 7.0",
    REPORT_MD: "the survey's findings, every table with its denominator",
    CROSS_PARQUET_PATH: "leaks across datasets (config cross_overlaps): each surveyed test split's rows found in a split of "
                        "another dataset, with the relation (copy, leak, shared_test, family)",
    CROSS_CSV_PATH: "the same cross_overlaps rows as CSV",
    FAMILIES_CSV_PATH: "dataset families: datasets joined by copy relations (mirrors, forks, re-uploads), with their members",
    CONTAMINATION_CSV_PATH: "contamination with benchmarks: per dataset, the benchmarks it was checked against, at "
                            "which revisions, and whether its splits hold their items (clean or contaminated)",
    CHECKS_MANIFEST_PATH: "the contamination manifest: per dataset, contamination_checks_passed and "
                          "contamination_checks_failed (any contaminated row fails), each benchmark with its revision, "
                          "and the benchmarks not run with the reason",
    EXPOSURE_PARQUET_PATH: "models that declare contaminated training data (config model_exposure): per benchmark and "
                           "Hub model, the datasets its card declares that hold the benchmark's items, with their rows "
                           "(a declaration, not proof of what the model saw)",
    EXPOSURE_CSV_PATH: "the same model_exposure rows as CSV",
    SCORES_PARQUET_PATH: "scores at risk (config scores_at_risk): every score a listed Hub model reports (model-index, "
                         ".eval_results), with the rows of its evaluated split found in the training data its card "
                         "declares and its status: at_risk, clean, undeclared or not_surveyed",
    SCORES_CSV_PATH: "the same scores_at_risk rows as CSV",
    HISTORY_PARQUET_PATH: "every revision measured (config history): per (dataset, config, label column) and "
                          "revision, when and by which run, its verdict and the headline figures of each method; "
                          "NR figures are null",
    HISTORY_CSV_PATH: "the same history rows as CSV; NR figures are written NR",
    CLEAN_TEST_PARQUET_PATH: "clean test splits (config clean_test): per (dataset, config, revision, profile) the row "
                             "positions of the test split that hubsurvey clean kept, with counts and fingerprints; "
                             "positions only, no row of the datasets",
    COLUMN_PARQUET_PATH: "the exact figures of each text column alone (config column_measurements), for configs with "
                         "two text columns or more: one row per (dataset, config, label column, text column, profile)",
    COLUMN_CSV_PATH: "the same column_measurements rows as CSV",
    GROUP_PARQUET_PATH: "groups shared across splits (config group_measurements, method groups-2026): per (dataset, "
                        "config, group column) the test rows whose group also holds train or validation rows, the "
                        "groups shared, each split's concentration, and whether the column is a numbering restarting "
                        "per split (then out of the verdict)",
    GROUP_CSV_PATH: "the same group_measurements rows as CSV",
    TIME_PARQUET_PATH: "time order (config time_measurements, method time-2026): per (dataset, config, date column) "
                       "each split's dates and the train rows dated after the earliest test row",
    TIME_CSV_PATH: "the same time_measurements rows as CSV",
}
CROSS_PARQUET_GLOB = "data/cross_overlaps-*.parquet"
EXPOSURE_PARQUET_GLOB = "data/model_exposure-*.parquet"
SCORES_PARQUET_GLOB = "data/scores_at_risk-*.parquet"
HISTORY_PARQUET_GLOB = "data/history-*.parquet"
CLEAN_TEST_PARQUET_GLOB = "data/clean_test-*.parquet"
COLUMN_PARQUET_GLOB = "data/column_measurements-*.parquet"
GROUP_PARQUET_GLOB = "data/group_measurements-*.parquet"
TIME_PARQUET_GLOB = "data/time_measurements-*.parquet"


#: Run arguments that name local files or folders: never shown in the public card.
LOCAL_ARGS = frozenset({"db", "out", "out_dir", "report_dir", "cache_dir", "hub_dir", "roles", "roles_file", "folder", "path"})

#: What the card cites: the method's blog post and the published survey results.
CITATIONS = (
    ("LLE: Leaks, leaks everywhere", "https://huggingface.co/blog/lbourdois/lle",
     "the method and the 2024 survey (Hugging Face blog, lbourdois)"),
    ("lbourdois/LLE", "https://huggingface.co/datasets/lbourdois/LLE",
     "the 2024 survey's results; lle.csv reproduces its format"),
)


def _is_local_path(value: Any) -> bool:
    """A string that names a file on this machine (absolute, ./ ../ ~ relative), not a Hub id."""
    if not isinstance(value, str) or not value:
        return False
    return (PurePosixPath(value).is_absolute() or PureWindowsPath(value).is_absolute()
            or value.startswith(("./", "../", "~", ".\\", "..\\")))


def public_args(args: Any) -> Any:
    """Run arguments fit for a public card: local-path arguments and path values dropped, recursively."""
    if isinstance(args, Mapping):
        return {k: public_args(v) for k, v in args.items()
                if str(k) not in LOCAL_ARGS and not _is_local_path(v)}
    if isinstance(args, list):
        return [public_args(v) for v in args if not _is_local_path(v)]
    return args


def public_provenance(p: Mapping[str, Any]) -> dict[str, Any]:
    """The report's provenance with every run argument made public (:func:`public_args`)."""
    out = dict(p)
    out["filters"] = public_args(p.get("filters"))
    if p.get("run"):
        out["run"] = {**p["run"], "args": public_args(p["run"].get("args"))}
    return out


def task_categories(store: Store) -> list[str]:
    """The ``task_categories:*`` tags of the measured datasets, sorted, each once."""
    rows = store.con.execute(
        """SELECT DISTINCT regexp_extract(tag, '^task_categories:(.+)$', 1) AS category
           FROM (SELECT unnest(tags) AS tag FROM datasets
                 WHERE dataset_id IN (SELECT dataset_id FROM current_measurements))
           WHERE tag LIKE 'task_categories:%'
           ORDER BY category"""
    ).fetchall()
    return [r[0] for r in rows if r[0]]


#: The provenance columns the near-duplicate method writes (hubsurvey/core/store.py, migration 7).
NEAR_PROVENANCE = frozenset({"near", "near_curve"})


@dataclass(frozen=True)
class CardColumn:
    name: str
    method: str  # the method whose figure it is ('' for identity and provenance columns)
    meaning: str


def card_columns() -> list[CardColumn]:
    """Every exported column with its method and meaning; a figure's meaning is generated from the
    registry (its definition, its key profile for an exact figure, and when it is NR). The near
    method's provenance columns (``near``, ``near_curve``) belong to it: their method is named too."""
    by_name = {c.name: c for c in figures.figure_columns()}
    out = []
    for name, meaning in columns().items():
        column = by_name.get(name)
        if column is None:
            out.append(CardColumn(name, figures.NEAR_METHOD if name in NEAR_PROVENANCE else "", meaning))
            continue
        rule = figure_docs.nr_rule(column)
        out.append(CardColumn(name, column.method, f"{column.definition}; {rule}"))
    return out


@dataclass(frozen=True)
class CardFile:
    path: str
    description: str


def size_category(n: int) -> str:
    """The Hub's size_categories bucket for n rows."""
    bounds = [(1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"), (1_000_000, "100K<n<1M"),
              (10_000_000, "1M<n<10M"), (100_000_000, "10M<n<100M"), (1_000_000_000, "100M<n<1B")]
    for bound, name in bounds:
        if n < bound:
            return name
    return "1B<n<10B"


def render_card(
    store: Store,
    repo_id: str,
    files: Sequence[str] = (PARQUET_PATH, CSV_PATH),
    *,
    license: str = DEFAULT_LICENSE,
    pretty_name: str = DEFAULT_PRETTY_NAME,
    found: Mapping[str, list[dict[str, Any]]] | None = None,
) -> str:
    """The README.md text for the results dataset ``repo_id`` whose folder holds ``files``.

    ``found``: the store's findings when the caller already has them (:func:`findings`, the default
    ``top_n``), so that one build plans and runs the findings views once."""
    found = findings(store) if found is None else found
    overview = found["overview"][0]
    context: dict[str, Any] = {
        "repo_id": repo_id,
        "license": license,
        "pretty_name": pretty_name,
        "size_category": size_category(overview["measurement_rows"]),
        "tags": list(TAGS),
        "task_categories": task_categories(store),
        "citations": CITATIONS,
        "parquet_glob": PARQUET_GLOB,
        "cross_parquet_glob": CROSS_PARQUET_GLOB if CROSS_PARQUET_PATH in files else None,
        "exposure_parquet_glob": EXPOSURE_PARQUET_GLOB if EXPOSURE_PARQUET_PATH in files else None,
        "scores_parquet_glob": SCORES_PARQUET_GLOB if SCORES_PARQUET_PATH in files else None,
        "history_parquet_glob": HISTORY_PARQUET_GLOB if HISTORY_PARQUET_PATH in files else None,
        "clean_parquet_glob": CLEAN_TEST_PARQUET_GLOB if CLEAN_TEST_PARQUET_PATH in files else None,
        "column_parquet_glob": COLUMN_PARQUET_GLOB if COLUMN_PARQUET_PATH in files else None,
        "group_parquet_glob": GROUP_PARQUET_GLOB if GROUP_PARQUET_PATH in files else None,
        "time_parquet_glob": TIME_PARQUET_GLOB if TIME_PARQUET_PATH in files else None,
        "files": [CardFile(p, FILE_DESCRIPTIONS.get(p, "")) for p in files if p != "README.md"]
        + [CardFile("README.md", "this card")],
        "has_report": REPORT_MD in files,
        "columns": card_columns(),
        "definitions": DEFINITIONS,
        "exact_definitions": EXACT_DEFINITIONS,
        "near_definitions": NEAR_DEFINITIONS,
        **near_setting(overview),
        **cross_setting(found),
        "cross_method": CROSS_METHOD,
        "gain": found["normalization_gain"][0],
        "f": found,
        "o": overview,
        "a": found["annotation"][0],
        "p": public_provenance(provenance(store, overview)),
        "key_labels": KEY_LABELS,
        "fingerprint_version": FINGERPRINT_VERSION,
        # contamination with benchmarks: the line per dataset
        "contamination": found["contamination"],
        "contamination_overview": found["contamination_overview"][0],
    }
    context["tables"] = {**shared_tables(found, context["p"], KEY_LABELS), "checks": checks_table(found["checks"])}
    return environment().get_template("card.md.j2").render(context)


def checks_table(rows: list[dict[str, Any]]) -> Table:
    """Per check (findings_checks): the configs that ran it, those that did not, of those with a statement."""
    return Table(("check", "configs that ran it", "did not", "of", "%"),
                 [(r["check"], num(r["configs_ran"]), num(r["configs_not_ran"]), num(r["configs"]), pct(r["pct_ran"]))
                  for r in rows], (False, True, True, True, True))
