"""A verdict per config, with its reason, and the dataset's verdict with the config it comes from.

"Can I believe this test split?" is answered per measurement row (dataset, config, label column) by
:func:`config_verdicts`, and per dataset by :func:`dataset_verdict`, the worst of its rows judged on
the dataset's basis. Every surface that prints a verdict (``audit``, the site, the report,
``history``) takes it from here, or from the SQL twin it is checked against
(``findings_dataset_verdict`` in ``analysis/findings.sql``, the ``history`` view's ``verdict``).

The rule, stated for readers in ``docs/method.md`` (section "Verdicts"), thresholds declared once in
:mod:`hubsurvey.core.history`:

- a row is judged on a **basis**, the first method of near-2026, exact-2026, lle-2024 that measured
  it (for a dataset: that measured every one of its rows, so that a figure that was not measured,
  NULL, never clears it);
- on that basis the row is **clean** when none of its test rows is contaminated (near: 0
  near-contaminated test rows; exact: 0 contaminated test rows under the normalized profile; LLE:
  0 text leaks from train or validation and 0 text duplicates in test);
- otherwise the basis' **deciding figure** (near_contaminated_test_pct, normalized_contaminated_test_pct
  or text_test_biased, in % rounded to 3 decimals as published, NULL taken as 0) grades it: minor
  below 1 %, caution below 5 %, unreliable from 5 %.

A dataset's verdict equals the worst of its rows' verdicts on the dataset's basis (the tests check
it against ``findings_dataset_verdict``); the row that decides it is the worst verdict, then the
highest deciding figure, then the first config and label column by name.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from hubsurvey.core.figures import EXACT_METHOD, LLE_METHOD, NEAR_METHOD
from hubsurvey.core.history import BASES, VERDICT_CAUTION_BELOW, VERDICT_MINOR_BELOW, VERDICTS, grade

#: Per basis: its deciding figure and the columns that must all be 0 for "clean" (core/history.py).
DECIDING: dict[str, tuple[str, tuple[str, ...]]] = {method: (measure, clean) for method, measure, clean in BASES}
#: The bases, in the order a row falls back through them.
BASIS_ORDER: tuple[str, ...] = tuple(method for method, _, _ in BASES)
#: What "clean" means on each basis, for the rule's text.
CLEAN_MEANING: dict[str, str] = {
    NEAR_METHOD: "0 near-contaminated test rows",
    EXACT_METHOD: "0 contaminated test rows (normalized profile)",
    LLE_METHOD: "0 text leaks into test and 0 text duplicates in test",
}


@dataclass(frozen=True)
class ConfigVerdict:
    """One measurement row's verdict: which (dataset, config, label column, revision), on which
    basis, the figure that decided it and its value (%, 3 decimals; None: NULL, graded as 0), the
    rule it met (:func:`rule`) and ``contaminated``, the clean test's count (the sum of the basis'
    clean columns: 0 exactly when clean)."""

    dataset_id: str
    config: str
    label_column: str | None
    revision_sha: str | None
    verdict: str
    basis: str
    figure: str
    value: float | None
    contaminated: int
    rule: str

    @property
    def reason(self) -> str:
        """One line: the verdict and why, e.g. ``unreliable: normalized_contaminated_test_pct 8.047%
        (not clean, normalized_contaminated_test_pct ≥ 5%; exact-2026)``."""
        value = "NR" if self.value is None else f"{self.value}%"
        return f"{self.verdict}: {self.figure} {value} ({self.rule}; {self.basis})"

    def as_dict(self) -> dict[str, Any]:
        """The JSON form: every field and the reason."""
        return {**asdict(self), "reason": self.reason}


@dataclass(frozen=True)
class DatasetVerdict:
    """A dataset's verdict: the worst of its rows' on the dataset's basis, ``decided_by`` the row
    it comes from (its config names the source), ``configs`` every row's verdict on that basis."""

    dataset_id: str
    verdict: str
    basis: str
    decided_by: ConfigVerdict
    configs: tuple[ConfigVerdict, ...]

    @property
    def reason(self) -> str:
        """One line naming the config the verdict comes from: ``unreliable, from config hate: ...``."""
        return f"{self.verdict}, {self.because}"

    @property
    def because(self) -> str:
        """The reason without the verdict: ``from config hate: near_contaminated_test_pct 10.202% (...)``."""
        d = self.decided_by
        label = f", label column {d.label_column}" if d.label_column is not None and self._labels() > 1 else ""
        return f"from config {d.config}{label}: {d.reason.split(': ', 1)[1]}"

    def _labels(self) -> int:
        return len({c.label_column for c in self.configs if c.config == self.decided_by.config})

    def as_dict(self) -> dict[str, Any]:
        return {"dataset_id": self.dataset_id, "verdict": self.verdict, "basis": self.basis, "reason": self.reason,
                "decided_by": self.decided_by.as_dict(), "configs": [c.as_dict() for c in self.configs]}


def rule(basis: str, verdict: str) -> str:
    """The rule a row meets on ``basis`` to get ``verdict``, in words (the thresholds of
    :mod:`hubsurvey.core.history`; findings_verdict_rules writes the dataset's twin)."""
    figure = DECIDING[basis][0]
    if verdict == VERDICTS[0]:
        return CLEAN_MEANING[basis]
    bounds = {VERDICTS[1]: f"below {VERDICT_MINOR_BELOW:g}%",
              VERDICTS[2]: f"≥ {VERDICT_MINOR_BELOW:g}% and below {VERDICT_CAUTION_BELOW:g}%",
              VERDICTS[3]: f"≥ {VERDICT_CAUTION_BELOW:g}%"}[verdict]
    return f"not clean, {figure} {bounds}"


def _methods(value: Any) -> Mapping[str, Any]:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return {}
    return value if isinstance(value, Mapping) else {}


def _near_measured(row: Mapping[str, Any]) -> bool:
    """findings.sql's near_measured: the row names the near method and its ``near`` JSON does not
    say it was not measured (status 'not measured' or 'NR: ...')."""
    if NEAR_METHOD not in _methods(row.get("methods")) or row.get("near") is None:
        return False
    status = _methods(row["near"]).get("status")
    return not (isinstance(status, str) and (status == "not measured" or status.startswith("NR")))


def row_basis(row: Mapping[str, Any]) -> str:
    """The first method of near, exact, LLE that measured this row. A row of the ``history`` view
    carries it (``verdict_basis``); a measurement row (``measurements``, ``current_measurements``,
    an audit's rows) says it in ``methods`` and ``near``."""
    if row.get("verdict_basis"):
        return str(row["verdict_basis"])
    if _near_measured(row):
        return NEAR_METHOD
    return EXACT_METHOD if EXACT_METHOD in _methods(row.get("methods")) else LLE_METHOD


def dataset_basis(rows: Iterable[Mapping[str, Any]]) -> str:
    """A dataset's basis: the first method that measured every one of its rows."""
    return BASIS_ORDER[max((BASIS_ORDER.index(row_basis(r)) for r in rows), default=len(BASIS_ORDER) - 1)]


def _published(value: Any) -> float | None:
    return None if value is None else round(float(value), 3)


def config_verdicts(rows: Iterable[Mapping[str, Any]], basis: str | None = None) -> list[ConfigVerdict]:
    """The verdict of each measurement row (one per config and label column), in the rows' order.

    ``rows``: rows of ``measurements`` / ``current_measurements`` / the ``history`` view, or an
    audit's rows (``AuditOutcome.rows``): each with ``dataset_id``, ``config``, ``label_column``,
    the figure columns and ``methods`` / ``near`` (or ``verdict_basis``). ``basis``: judge every row
    on this method (the dataset's basis, :func:`dataset_basis`, so that the dataset's verdict is the
    worst of them); None: each row on its own basis, as the ``history`` view judges it.
    """
    out = []
    for r in rows:
        on = basis or row_basis(r)
        figure, clean_columns = DECIDING[on]
        contaminated = sum(int(r.get(c) or 0) for c in clean_columns)
        value = _published(r.get(figure))
        verdict = grade(contaminated == 0, value)
        out.append(ConfigVerdict(
            dataset_id=r["dataset_id"], config=r["config"], label_column=r.get("label_column"),
            revision_sha=r.get("revision_sha"), verdict=verdict, basis=on, figure=figure, value=value,
            contaminated=contaminated, rule=rule(on, verdict)))
    return out


def _worst_key(v: ConfigVerdict) -> tuple[int, float, str, str]:
    # sorted ascending: the worst verdict, the highest figure, then the first config and label column
    return (-VERDICTS.index(v.verdict), -(v.value or 0.0), v.config, v.label_column or "")


def dataset_verdict(rows: Sequence[Mapping[str, Any]]) -> DatasetVerdict:
    """One dataset's verdict from its current rows (one revision per config), the row it comes
    from and every row's verdict on the dataset's basis. ``rows`` must be non-empty and of one
    dataset (a ValueError otherwise)."""
    ids = {r["dataset_id"] for r in rows}
    if len(ids) != 1:
        raise ValueError(f"dataset_verdict needs the rows of one dataset, got {len(ids)} dataset(s)")
    basis = dataset_basis(rows)
    configs = config_verdicts(rows, basis)
    worst = min(configs, key=_worst_key)
    return DatasetVerdict(dataset_id=worst.dataset_id, verdict=worst.verdict, basis=basis, decided_by=worst,
                          configs=tuple(configs))


def dataset_verdicts(rows: Iterable[Mapping[str, Any]]) -> dict[str, DatasetVerdict]:
    """:func:`dataset_verdict` of each dataset among ``rows``, by dataset id (sorted)."""
    by_dataset: dict[str, list[Mapping[str, Any]]] = {}
    for r in rows:
        by_dataset.setdefault(r["dataset_id"], []).append(r)
    return {d: dataset_verdict(own) for d, own in sorted(by_dataset.items())}
