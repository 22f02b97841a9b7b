"""The ``history`` view: every revision measured of every (dataset, config, label column).

``measurements`` keeps each revision a survey measured; ``current_measurements`` shows only the
newest. The history view shows them all, one row per measured revision, with its provenance (when,
which revision and Parquet commit, which run), the verdict the row gets on its own, and the headline
figures of each method, as numbers (NULL: NR, or the method did not measure the row).

The headline figures are registry columns (:data:`HEADLINE_FIGURES`), typed as ``lle_typed`` types
them (a percentage rounded to 3 decimals, as published). The verdict thresholds are declared here
once: ``analysis/findings.sql`` reads them as macros, so a row's verdict here and a dataset's
verdict in the report use the same rule.
"""

from __future__ import annotations

from hubsurvey.core import figure_docs, figures

#: The verdicts, best first: a dataset's verdict is one of them (findings_verdict_rules).
VERDICTS: tuple[str, ...] = ("clean", "minor", "caution", "unreliable")
#: Not clean, and the basis' measure below this (in %): minor.
VERDICT_MINOR_BELOW = 1.0
#: Not clean, at least VERDICT_MINOR_BELOW and below this (in %): caution; from here on: unreliable.
VERDICT_CAUTION_BELOW = 5.0

#: The headline figures of each method in the history view, by method. LLE: the published test
#: bias and its three terms (text key); exact: contaminated test rows under the normalized profile
#: (the exact verdict's measure) and their raw share; near: near-contaminated test rows (the near
#: verdict's measure) and the test rows near train. Contamination with benchmarks is summed from
#: its own table (``benchmarks_checked``, ``benchmarks_contaminating``, ``benchmark_contaminated_rows``).
HEADLINE_FIGURES: dict[str, tuple[str, ...]] = {
    figures.LLE_METHOD: ("text_test_biased", "text_leaks_train_wrt_test", "text_leaks_validation_wrt_test",
                         "text_duplication_test"),
    figures.EXACT_METHOD: ("normalized_contaminated_test_pct", "normalized_test_rows_contaminated",
                           "raw_contaminated_test_pct"),
    figures.NEAR_METHOD: ("near_contaminated_test_pct", "test_rows_near_contaminated", "test_rows_near_train_pct"),
}

#: The verdict's measure and its "clean" test, per basis, over one row's headline figures (as typed
#: in the view: rounded percentages, NULL for NR). The basis is the first method that measured the
#: row: near, else exact, else LLE (as findings_dataset_verdict judges a dataset).
BASES: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    (figures.NEAR_METHOD, "near_contaminated_test_pct", ("test_rows_near_contaminated",)),
    (figures.EXACT_METHOD, "normalized_contaminated_test_pct", ("normalized_test_rows_contaminated",)),
    (figures.LLE_METHOD, "text_test_biased",
     ("text_leaks_train_wrt_test", "text_leaks_validation_wrt_test", "text_duplication_test")),
)


#: The methods the LLE figures stand beside, and the view's flag of a row they measured.
MEASURED: dict[str, str] = {figures.NEAR_METHOD: "measured_near", figures.EXACT_METHOD: "measured_exact"}


def grade(is_clean: bool, measure: float | None) -> str:
    """The verdict of a row or a dataset: clean, else by its basis' measure (%, NULL as 0)."""
    if is_clean:
        return VERDICTS[0]
    value = measure or 0.0
    if value < VERDICT_MINOR_BELOW:
        return VERDICTS[1]
    return VERDICTS[2] if value < VERDICT_CAUTION_BELOW else VERDICTS[3]


def _sql_string(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def _measured_sql(method: str) -> str:
    """Whether a ``measurements`` row holds ``method``'s figures (findings.sql's exact_measured and
    near_measured: the near method also needs its ``near`` JSON to say it measured)."""
    path = _sql_string('$."' + method + '"')
    held = f"coalesce(json_exists(m.methods, {path}), false)"
    if method != figures.NEAR_METHOD:
        return held
    status = "json_extract_string(m.near, '$.status')"
    return (f"({held} AND m.near IS NOT NULL"
            f" AND coalesce(NOT ({status} = 'not measured' OR starts_with({status}, 'NR')), true))")


def _headline_columns() -> list[tuple[str, str]]:
    """(column, SQL over ``m``) of every headline figure: typed as lle_typed, NULL when the row was
    not measured by the figure's method."""
    by_name = {c.name: c for c in figures.figure_columns()}
    out = []
    for method, names in HEADLINE_FIGURES.items():
        for name in names:
            column = by_name[name]  # a KeyError here: a headline figure the registry does not declare
            typed = f"round(m.{name}, 3)" if column.fmt is figures.Format.PERCENT else f"m.{name}"
            if method != figures.LLE_METHOD:
                typed = f"CASE WHEN m.{MEASURED[method]} THEN {typed} END"
            out.append((name, typed))
    return out


def _verdict_sql() -> tuple[str, str]:
    """SQL of a row's verdict basis and verdict, over the typed headline figures of ``h``."""
    basis = "CASE " + " ".join(
        f"WHEN h.{MEASURED[method]} THEN {_sql_string(method)}" for method, _, _ in BASES[:-1]
    ) + f" ELSE {_sql_string(BASES[-1][0])} END"
    cases = []
    for method, measure, clean in BASES:
        is_clean = " + ".join(f"coalesce(h.{c}, 0)" for c in clean) + " = 0"
        value = f"coalesce(h.{measure}, 0)"
        cases.append(
            f"WHEN h.verdict_basis = {_sql_string(method)} THEN CASE WHEN {is_clean} THEN {_sql_string(VERDICTS[0])}"
            f" WHEN {value} < {VERDICT_MINOR_BELOW!r} THEN {_sql_string(VERDICTS[1])}"
            f" WHEN {value} < {VERDICT_CAUTION_BELOW!r} THEN {_sql_string(VERDICTS[2])}"
            f" ELSE {_sql_string(VERDICTS[3])} END")
    return basis, "CASE " + " ".join(cases) + " END"


#: The history view's columns besides the figures, in order, with their meaning (docs, card).
HISTORY_COLUMNS: dict[str, str] = {
    "dataset_id": "Hub id (owner/name) of the dataset, or the name of an audited folder",
    "config": "dataset config",
    "label_column": "the label column of the row (NULL/NR: none)",
    "revision_sha": "the dataset revision measured",
    "parquet_sha": "the commit of the Parquet branch whose files were measured (NULL/NR: not from the Hub)",
    "measured_at": "when this revision was measured (UTC)",
    "run_id": "the survey run that measured it (NULL/NR: a one-off audit)",
    "source": "'hub', 'folder' or 'memory'",
    "tool_version": "hubsurvey version that measured it",
    "methods": "the methods whose figures the row holds, with their versions (JSON)",
    "is_current": "true when this is the row current_measurements shows (the revision findings and exports use)",
    "rows_test": "rows in test at this revision",
    "verdict_basis": "the method the verdict is judged on: the first that measured the row of near, exact, LLE",
    "verdict": "clean, minor, caution or unreliable: the report's verdict rule applied to this row alone",
}
#: The contamination columns, summed per (dataset, revision, config) from the contamination table.
CONTAMINATION_COLUMNS: dict[str, str] = {
    "benchmarks_checked": "benchmarks this revision's splits were checked against (NULL/NR: not checked)",
    "benchmarks_contaminating": "of those, the benchmarks with at least one contaminated row",
    "benchmark_contaminated_rows": "contaminated rows summed over splits and benchmarks (a row holding two "
                                   "benchmarks' items counts twice)",
}


def history_columns() -> dict[str, str]:
    """Every column of the history view, in order, with its meaning."""
    by_name = {c.name: c for c in figures.figure_columns()}

    def meaning(name: str) -> str:
        column = by_name[name]
        rounded = "; here rounded to 3 decimals" if column.fmt is figures.Format.PERCENT else ""
        unmeasured = "" if column.method == figures.LLE_METHOD else ", and NULL when the method did not measure the row"
        return f"{column.definition}{rounded} ({column.method}; {figure_docs.nr_rule(column)}{unmeasured})"

    headline = {name: meaning(name) for names in HEADLINE_FIGURES.values() for name in names}
    return {**HISTORY_COLUMNS, **headline, **CONTAMINATION_COLUMNS}


def history_view_sql() -> str:
    """The ``history`` view (see the module docstring), oldest revision first within each row key."""
    measured = ", ".join(f"{_measured_sql(method)} AS {flag}" for method, flag in MEASURED.items())
    headline = ",\n               ".join(f"{sql} AS {name}" for name, sql in _headline_columns())
    basis, verdict = _verdict_sql()
    identity = ", ".join(f"h.{c}" for c in HISTORY_COLUMNS if c not in ("verdict_basis", "verdict"))
    names = ", ".join(f"h.{name}" for names in HEADLINE_FIGURES.values() for name in names)
    contamination = ", ".join(f"b.{c}" for c in CONTAMINATION_COLUMNS)
    return f"""
        WITH measured AS (
            SELECT m.*, {measured} FROM measurements m
        ), typed AS (
            SELECT m.dataset_id, m.config, m.label_column, m.revision_sha, m.parquet_sha, m.measured_at, m.run_id,
                   m.source, m.tool_version, m.methods,
                   m.measurement_id IN (SELECT measurement_id FROM current_measurements) AS is_current,
                   m.rows_test, m.measured_near, m.measured_exact,
               {headline}
            FROM measured m
        ), judged AS (
            SELECT h.*, {basis} AS verdict_basis FROM typed h
        ), checked AS (
            -- a split that is the benchmark's own test set under another name (a fork of it, by the
            -- families crossleaks found) is left out, as findings_contamination leaves it out
            SELECT k.* FROM contamination k
            WHERE NOT coalesce(k.split_name = k.benchmark_split AND EXISTS (
                SELECT 1 FROM dataset_families a JOIN dataset_families f USING (family_id)
                WHERE a.dataset_id = k.dataset_id AND f.dataset_id = k.benchmark_id), false)
        ), bench AS (
            SELECT dataset_id, revision_sha, config,
                   count(DISTINCT (benchmark_id, benchmark_config, benchmark_split)) AS benchmarks_checked,
                   count(DISTINCT (benchmark_id, benchmark_config, benchmark_split)) FILTER (WHERE contaminated_rows > 0)
                       AS benchmarks_contaminating,
                   sum(contaminated_rows)::BIGINT AS benchmark_contaminated_rows
            FROM checked GROUP BY dataset_id, revision_sha, config
        )
        SELECT {identity}, h.verdict_basis, {verdict} AS verdict, {names}, {contamination}
        FROM judged h LEFT JOIN bench b USING (dataset_id, revision_sha, config)
        ORDER BY h.dataset_id, h.config, h.label_column NULLS FIRST, h.measured_at, h.revision_sha"""
