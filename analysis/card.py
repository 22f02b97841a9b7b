"""The results dataset's card (README.md): Hub YAML front matter, methods, columns, provenance."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from hubsurvey.analysis.export import CSV_PATH, LLE_CSV_PATH, PARQUET_PATH, columns
from hubsurvey.analysis.findings import findings
from hubsurvey.analysis.render import DEFINITIONS, environment, provenance
from hubsurvey.analysis.report import KEY_LABELS, REPORT_MD
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
}


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
) -> str:
    """The README.md text for the results dataset ``repo_id`` whose folder holds ``files``."""
    found = findings(store)
    overview = found["overview"][0]
    context: dict[str, Any] = {
        "repo_id": repo_id,
        "license": license,
        "pretty_name": pretty_name,
        "size_category": size_category(overview["measurement_rows"]),
        "tags": list(TAGS),
        "parquet_glob": PARQUET_GLOB,
        "files": [CardFile(p, FILE_DESCRIPTIONS.get(p, "")) for p in files if p != "README.md"]
        + [CardFile("README.md", "this card")],
        "has_report": REPORT_MD in files,
        "columns": columns(),
        "definitions": DEFINITIONS,
        "f": found,
        "o": overview,
        "a": found["annotation"][0],
        "p": provenance(store, overview),
        "key_labels": KEY_LABELS,
    }
    return environment().get_template("card.md.j2").render(context)
