"""The site's scores at risk: what the dataset pages and the ranking page show of the view
``scores_at_risk`` (the scores Hub models report, each beside what its model's declared training data
holds of the evaluated split; ``hubsurvey scores``).

Kept apart from :mod:`hubsurvey.analysis.site`, which calls it: the data functions here, the
dataset page's section in the template ``site_scores.html.j2`` (a macro, self-contained), the
ranking page in ``site_scores_page.html.j2`` and its search in ``site_scores.js``.

- :func:`scores_by_dataset`: per evaluated dataset, every score reported on it with its status (the
  dataset page lists them, each with its flag);
- :func:`ranking_rows`: every score at risk across the survey, the most exposed first (the share of
  evaluated rows found in the declared training data, then the training rows holding a benchmark's
  passages);
- :func:`write_scores_page`: ``scores.html``, the ranking as a static table (readable without
  script); ``site_scores.js`` adds a search box over its rows (progressive enhancement: no server,
  it works from ``file://``).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from hubsurvey.core.store import Store

#: The ranking page, at the site's root.
SCORES_PAGE_PATH = "scores.html"
#: Its script, copied from the templates package with the site's other assets.
SCORES_SCRIPT = "site_scores.js"
#: How a status reads on the pages (the flag), in the order a dataset page lists them.
STATUS_WORDS = {"at_risk": "at risk", "not_surveyed": "not surveyed", "undeclared": "undeclared", "clean": "clean"}

_COLUMNS = """model_id, model_sha, source, source_file, dataset_id, config, split, split_name, task, metric, value,
              verified, declared_datasets, rows_evaluated, rows_in_training_raw, rows_in_training_normalized,
              rows_in_training_pct, training_rows_with_passages, status, note, measured_by, looked_up_at"""


def has_scores(store: Store) -> bool:
    """Whether any reported score was read (``hubsurvey scores``)."""
    return bool(store.query("SELECT count(*) FROM reported_scores")[1][0][0])


def scores_by_dataset(store: Store) -> dict[str, list[dict[str, Any]]]:
    """Per evaluated dataset, every score reported on it, at risk first (the view's order)."""
    out: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in store.records(f"SELECT {_COLUMNS} FROM scores_at_risk"):
        out[row["dataset_id"]].append({**row, "flag": STATUS_WORDS.get(row["status"], row["status"])})
    return dict(out)


def ranking_rows(store: Store) -> list[dict[str, Any]]:
    """Every score at risk, the most exposed first, each with its rank."""
    rows = store.records(f"SELECT {_COLUMNS} FROM scores_at_risk WHERE status = 'at_risk'")
    return [{**r, "rank": n} for n, r in enumerate(rows, start=1)]


def overview(store: Store) -> dict[str, Any]:
    """How many scores were read, and how many of each status (findings_scores_overview's counts)."""
    return store.records(
        "SELECT count(*) AS scores, count(DISTINCT model_id) AS models, "
        "count(*) FILTER (WHERE status = 'at_risk') AS at_risk, count(*) FILTER (WHERE status = 'clean') AS clean, "
        "count(*) FILTER (WHERE status = 'undeclared') AS undeclared, "
        "count(*) FILTER (WHERE status = 'not_surveyed') AS not_surveyed FROM scores_at_risk")[0]


def write_scores_page(store: Store, env: Any, root: Path, common: Mapping[str, Any],
                      page: Callable[[str], str | None]) -> Path:
    """``scores.html``: every score at risk, ranked, with a link to each evaluated dataset's page."""
    from importlib import resources

    from hubsurvey.analysis.render import TEMPLATES_PACKAGE

    (root / SCORES_SCRIPT).write_bytes(resources.files(TEMPLATES_PACKAGE).joinpath(SCORES_SCRIPT).read_bytes())
    path = root / SCORES_PAGE_PATH
    path.write_text(env.get_template("site_scores_page.html.j2").render(
        **common, rows=ranking_rows(store), overview=overview(store), page=page, up=""), encoding="utf-8")
    return path
