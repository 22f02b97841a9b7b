"""The results store: one DuckDB file (``results.duckdb`` by default).

The schema is a user-facing contract, documented column by column in the README ("Schema").
It is versioned: ``schema_version`` records the migrations applied, opening an older DB applies
the missing ones, and a DB from a newer hubsurvey is refused rather than guessed at.

Only one process writes (the CLI, or a survey run's coordinator); workers return plain data.
Every write of results is one transaction, so an interrupted write leaves nothing half-written.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from hubsurvey.core import duck, figure_sql, figures, history, livestate
from hubsurvey.core.errors import DbLockedError, OutdatedSchemaError, StoreError
from hubsurvey.core.migrations import MIGRATIONS, SCHEMA_VERSION
from hubsurvey.core.safety import holds_secret, scrub_value, secrets

log = logging.getLogger(__name__)

DEFAULT_DB = "results.duckdb"

#: The clean_test table in a published results dataset (its clean_test config): analysis/export.py
#: writes it, hubsurvey.load_clean_test reads it.
CLEAN_TEST_PARQUET_PATH = "data/clean_test-00000-of-00001.parquet"

#: The measurements columns before the figures, with their meaning (exports, card, README).
IDENTITY_COLUMNS: dict[str, str] = {
    "dataset_id": "Hub id (owner/name) of the dataset, or the name of an audited folder",
    "revision_sha": "the dataset revision measured (Hub commit sha; a content hash for folders)",
    "config": "dataset config",
    "label_column": "the label column of this row (NULL/NR: none; text+label figures are then NR)",
    "text_columns": "the input columns whose values form the text key",
    "roles_source": "'inferred' (from the features) or 'override' (a roles file)",
    "dataset_name": "the LLE survey's name: name[,config][(label column)]",
    "train_split": "the dataset's own name of its train split (NR: absent)",
    "validation_split": "its own name of the validation split: validation, valid, dev or val (NR: absent)",
    "test_split": "its own name of the test split",
    "rows_train": "rows in train (NR: no train split)",
    "rows_validation": "rows in validation (NR: no validation split)",
    "rows_test": "rows in test",
}
#: The measurements columns after the figures: provenance.
PROVENANCE_COLUMNS: dict[str, str] = {
    "source": "'hub', 'folder' or 'memory': where the data was read from",
    "method": "measurement method ('lle-2024')",
    "method_version": "version of the method's definitions",
    "tool_version": "hubsurvey version that measured the row",
    "measured_at": "when the row was measured (UTC)",
    "run_id": "the survey run that measured it (NR: a one-off audit)",
    "parquet_sha": "the commit of the Hub's Parquet branch (refs/convert/parquet) whose files were measured (NR: not from the Hub)",
    "methods": "the methods whose figures the row holds, with their versions: {\"lle-2024\": 1, \"exact-2026\": 1} "
               "(NR: measured before the exact method; its figures are then NULL because they were not measured)",
    "near": "how the near-duplicate figures were measured: threshold, curve, shingles, MinHash bins and LSH bands, "
            "the distinct texts compared, the LSH candidates verified, the pairs kept, whether candidates were "
            "capped (NR: not measured by near-2026)",
    "near_curve": "test_rows_near_train at each threshold of the curve, as JSON; the view near_curve has it as rows "
                  "(NR: not measured by near-2026, or no train split)",
    "checks": "what was checked on the config and what was not, as JSON: [{\"check\", \"ran\", ...}] for lle, exact_raw, "
              "exact_normalized, near (its threshold), per_column, blank_rows, groups (its columns, and the row ids "
              "left out), time_order, contamination (against which benchmarks) and semantic, with why_not when it "
              "did not run (NR: measured before the statement)",
    **{f"fingerprint_{split}": f"the {split} split's order-independent content fingerprint, hs1:<32 hex digits> "
                               "(every column of every row; docs/method.md, Split fingerprints) (NR: no such split, "
                               "or measured before fingerprints)" for split in ("train", "validation", "test")},
}


def result_columns() -> dict[str, str]:
    """A result row's columns, in order, with their meaning: identity, the registry's figures, provenance."""
    return {
        **IDENTITY_COLUMNS,
        **{c.name: c.definition for c in figures.figure_columns()},
        **PROVENANCE_COLUMNS,
    }


#: The view ``scores_at_risk``: each reported score beside the rows of its evaluated split that the
#: model's declared training data holds, from the figures stored (read when queried):
#: - the same dataset: its exact figures (test or validation rows whose text key occurs in train,
#:   raw and normalized);
#: - another surveyed dataset: leaks across datasets (cross_overlaps: the evaluated test split's
#:   rows whose normalized text occurs in that dataset's train split; the most of its configs);
#: - a benchmark: the 13-gram check (contamination: the declared dataset's train rows holding a
#:   passage of the benchmark split's items).
#: Over several declared datasets a count is the most any one holds (a lower bound of their union).
SCORES_AT_RISK_SQL = """
    WITH measured AS (
        SELECT dataset_id, config, min(revision_sha) AS revision_sha, max(rows_train) AS rows_train,
               max(rows_validation) AS rows_validation, max(rows_test) AS rows_test,
               max(raw_test_rows_in_train) AS raw_test, max(normalized_test_rows_in_train) AS normalized_test,
               max(raw_validation_rows_in_train) AS raw_validation,
               max(normalized_validation_rows_in_train) AS normalized_validation
        FROM current_measurements WHERE source = 'hub' GROUP BY dataset_id, config),
    only_config AS (SELECT dataset_id, min(config) AS config FROM measured GROUP BY dataset_id HAVING count(*) = 1),
    bench AS (
        SELECT benchmark_id, benchmark_config, benchmark_split, max(items) AS items, min(revision_sha) AS revision_sha
        FROM benchmarks WHERE status = 'indexed' GROUP BY ALL),
    bench_config AS (
        SELECT benchmark_id, min(benchmark_config) AS config FROM bench
        GROUP BY benchmark_id HAVING count(DISTINCT benchmark_config) = 1),
    scored AS (
        SELECT r.*, coalesce(r.config, oc.config, bc.config) AS eval_config FROM reported_scores r
        LEFT JOIN only_config oc ON oc.dataset_id = r.dataset_id
        LEFT JOIN bench_config bc ON bc.benchmark_id = r.dataset_id),
    evaluated AS (
        SELECT s.*, m.revision_sha AS eval_revision,
               CASE s.split WHEN 'test' THEN m.rows_test WHEN 'validation' THEN m.rows_validation
                            WHEN 'train' THEN m.rows_train END AS split_rows,
               CASE s.split WHEN 'test' THEN m.raw_test WHEN 'validation' THEN m.raw_validation
                            WHEN 'train' THEN m.rows_train END AS same_raw,
               CASE s.split WHEN 'test' THEN m.normalized_test WHEN 'validation' THEN m.normalized_validation
                            WHEN 'train' THEN m.rows_train END AS same_normalized,
               b.items AS benchmark_items, b.revision_sha AS benchmark_revision
        FROM scored s
        LEFT JOIN measured m ON m.dataset_id = s.dataset_id AND m.config = s.eval_config
        LEFT JOIN bench b ON b.benchmark_id = s.dataset_id AND b.benchmark_config = s.eval_config
                         AND b.benchmark_split IN (s.split_reported, s.split)),
    evidence AS (
        SELECT e.score_id, d.declared,
               d.declared IN (SELECT dataset_id FROM measured) AS surveyed,
               CASE WHEN d.declared = e.dataset_id AND e.split_rows IS NOT NULL THEN e.same_raw END AS exact_raw,
               CASE WHEN d.declared = e.dataset_id AND e.split_rows IS NOT NULL THEN e.same_normalized END AS exact_normalized,
               CASE WHEN d.declared <> e.dataset_id AND e.split = 'test' AND e.split_rows IS NOT NULL
                         AND EXISTS (SELECT 1 FROM fingerprints f JOIN measured dm ON dm.dataset_id = f.dataset_id
                                         AND dm.config = f.config AND dm.revision_sha = f.revision_sha
                                     WHERE f.dataset_id = d.declared AND f.split = 'train')
                    THEN coalesce((SELECT max(o.rows) FROM cross_overlaps o
                                   WHERE o.test_dataset = e.dataset_id AND o.test_config = e.eval_config
                                     AND o.test_revision = e.eval_revision AND o.source_dataset = d.declared
                                     AND o.source_split = 'train'), 0) END AS cross_normalized,
               (SELECT max(k.contaminated_rows) FROM contamination k
                JOIN measured dm ON dm.dataset_id = k.dataset_id AND dm.config = k.config AND dm.revision_sha = k.revision_sha
                WHERE k.dataset_id = d.declared AND k.split = 'train' AND k.benchmark_id = e.dataset_id
                  AND k.benchmark_config = e.eval_config AND k.benchmark_split IN (e.split_reported, e.split)) AS passages
        FROM evaluated e, unnest(e.declared_datasets) AS d(declared)),
    summed AS (
        SELECT score_id, max(exact_raw) AS raw, greatest(max(exact_normalized), max(cross_normalized)) AS normalized,
               max(passages) AS passages,
               list(declared ORDER BY declared) FILTER (WHERE NOT surveyed) AS outside,
               list(declared ORDER BY declared) FILTER (WHERE surveyed AND exact_normalized IS NULL
                                                        AND cross_normalized IS NULL AND passages IS NULL) AS unmeasured,
               concat_ws(', ', CASE WHEN bool_or(exact_normalized IS NOT NULL) THEN 'exact-2026' END,
                         CASE WHEN bool_or(cross_normalized IS NOT NULL) THEN 'cross-2026' END,
                         CASE WHEN bool_or(passages IS NOT NULL) THEN 'bench-2026' END) AS measured_by
        FROM evidence GROUP BY score_id)
    SELECT e.model_id, e.model_sha, e.source, e.source_file, e.dataset_id, e.eval_config AS config,
           e.split_reported AS split_name, e.split, e.task, e.metric, e.value, e.verified, e.declared_datasets,
           coalesce(e.split_rows, e.benchmark_items) AS rows_evaluated,
           s.raw AS rows_in_training_raw, s.normalized AS rows_in_training_normalized,
           s.normalized / nullif(coalesce(e.split_rows, e.benchmark_items), 0) * 100 AS rows_in_training_pct,
           s.passages AS training_rows_with_passages,
           CASE WHEN s.raw IS NOT NULL THEN 'raw, normalized' WHEN s.normalized IS NOT NULL THEN 'normalized' END AS profile,
           CASE WHEN len(e.declared_datasets) = 0 THEN 'undeclared'
                WHEN coalesce(s.raw, 0) > 0 OR coalesce(s.normalized, 0) > 0 OR coalesce(s.passages, 0) > 0 THEN 'at_risk'
                WHEN e.split IS NULL OR len(coalesce(s.outside, [])) > 0 OR len(coalesce(s.unmeasured, [])) > 0
                     OR coalesce(e.split_rows, e.benchmark_items) IS NULL THEN 'not_surveyed'
                ELSE 'clean' END AS status,
           nullif(concat_ws('; ', e.note,
                  CASE WHEN len(coalesce(s.outside, [])) > 0
                       THEN 'declared outside the survey: ' || array_to_string(s.outside, ', ') END,
                  CASE WHEN len(coalesce(s.unmeasured, [])) > 0
                       THEN 'not measured against: ' || array_to_string(s.unmeasured, ', ') END,
                  CASE WHEN e.split IS NOT NULL AND coalesce(e.split_rows, e.benchmark_items) IS NULL
                       THEN 'the evaluated split is not surveyed' END,
                  CASE WHEN len(e.base_model) > 0
                       THEN 'base_model not followed: ' || array_to_string(e.base_model, ', ') END), '') AS note,
           nullif(s.measured_by, '') AS measured_by, e.eval_revision, e.benchmark_revision, e.listed_via,
           e.method, e.method_version, e.tool_version, e.looked_up_at, e.run_id
    FROM evaluated e LEFT JOIN summed s USING (score_id)
    ORDER BY CASE status WHEN 'at_risk' THEN 0 WHEN 'not_surveyed' THEN 1 WHEN 'undeclared' THEN 2 ELSE 3 END,
             rows_in_training_pct DESC NULLS LAST, training_rows_with_passages DESC NULLS LAST, e.model_id,
             e.dataset_id, config, e.split, e.metric"""


#: The columns of the view ``scores_at_risk``, with their meaning (docs/schema.md).
SCORES_AT_RISK_COLUMNS: dict[str, str] = {
    "model_id": "the Hub model reporting the score",
    "model_sha": "its revision when listed",
    "source": "`model-index` (the card) or `eval_results` (a `.eval_results/*.yaml` file)",
    "source_file": "the `.eval_results` file (NULL: the card)",
    "dataset_id": "the dataset the score was measured on",
    "config": "its config: as reported, from the benchmark's `eval.yaml`, or the dataset's (benchmark's) only "
              "config when none is named",
    "split_name": "the split as reported or mapped (NULL: unknown)",
    "split": "its canonical name: train, validation or test (NULL: unknown or another split)",
    "task": "the model-index task type, or the eval result's task id",
    "metric": "the metric (NULL for an eval result)",
    "value": "the reported value (NULL: not a number)",
    "verified": "model-index: the metric's `verified`; eval result: it carries a `verifyToken` (not checked here)",
    "declared_datasets": "the training data the model's card declares (`datasets:`)",
    "rows_evaluated": "rows of the evaluated split (a benchmark: its items indexed; NULL: not surveyed)",
    "rows_in_training_raw": "rows of the evaluated split whose raw text key occurs in a declared dataset's train "
                            "split (the same dataset's exact figures; NULL: not measured raw)",
    "rows_in_training_normalized": "the same with the normalized key (the same dataset's exact figures, or leaks "
                                   "across datasets for another one); over several declared datasets, the most "
                                   "any one holds (NULL: not measured)",
    "rows_in_training_pct": "rows_in_training_normalized / rows_evaluated × 100",
    "training_rows_with_passages": "a benchmark: the declared datasets' train rows holding 13 consecutive words of "
                                   "its evaluated split's items, or one whole (the 13-gram check; the most of any "
                                   "declared dataset; NULL: not checked)",
    "profile": "the key profiles measured: `raw, normalized` (the same dataset) or `normalized` (another one)",
    "status": "`at_risk` (some count above 0), `clean` (every declared dataset measured, 0), `undeclared` (no "
              "training data declared: never clean) or `not_surveyed` (a declared dataset, the evaluated split or "
              "its split is outside the survey)",
    "note": "why a score could not be measured, and the `base_model` that was not followed",
    "measured_by": "the methods that gave the counts: `exact-2026`, `cross-2026`, `bench-2026`",
    "eval_revision": "the revision of the evaluated dataset whose figures were read",
    "benchmark_revision": "the revision the benchmark was indexed at",
    "listed_via": "the surveyed dataset whose listing found the model",
    "method": "`scores-2026`",
    "method_version": "its version",
    "tool_version": "the hubsurvey version that read the score",
    "looked_up_at": "when it was read",
    "run_id": "the run that read it",
}


#: The views that read a table of a later migration than the others: created once the table is there.
VIEW_TABLES: dict[str, set[str]] = {"scores_at_risk": {"reported_scores"}}


def views() -> dict[str, str]:
    """The views, in creation order: name -> SELECT. Each says what it shows."""
    return {
        # Survey results: for each (dataset, config) measured from the Hub, its newest measured
        # revision. Per config, not per dataset: a partial re-measure (a config that failed at the
        # new sha, a run cut by --max-hours or killed) keeps the other configs' older rows. A config
        # the dataset's current revision no longer has (its crawl record lists the configs of the
        # revision the crawl resolved) is gone from the dataset: its old rows are not shown.
        "survey_measurements": """
            SELECT * FROM measurements m WHERE source = 'hub'
              AND NOT EXISTS (SELECT 1 FROM datasets d
                              WHERE d.dataset_id = m.dataset_id AND d.configs IS NOT NULL
                                AND NOT list_contains(json_keys(d.configs), m.config))
            QUALIFY revision_sha = first_value(revision_sha) OVER (
                PARTITION BY dataset_id, config ORDER BY measured_at DESC, revision_sha)""",
        # What findings, exports and publish read: the survey results, plus one-off audits (folders,
        # in-memory data) of datasets the survey has not measured. An audit never displaces a
        # dataset's Hub rows; it stays in `measurements` (source 'folder' or 'memory').
        "current_measurements": """
            SELECT * FROM survey_measurements
            UNION ALL
            SELECT * FROM measurements m
            WHERE source <> 'hub'
              AND NOT EXISTS (SELECT 1 FROM measurements h WHERE h.source = 'hub' AND h.dataset_id = m.dataset_id)
            QUALIFY revision_sha = first_value(revision_sha) OVER (
                PARTITION BY dataset_id, config ORDER BY measured_at DESC, revision_sha)""",
        # The published LLE table: 14 columns, 'NR' for NULL, '10.049%' and '7.0' formats.
        "lle": figure_sql.lle_view_sql(),
        # The same columns as numbers (NULL for NR; test_biased rounded to 3 decimals as published),
        # plus the row's identity: the view to query.
        "lle_typed": figure_sql.lle_typed_view_sql(),
        # The near-duplicate threshold curve, one row per (measurement, threshold): how many test
        # rows have a train row at Jaccard >= threshold.
        "near_curve": """
            SELECT measurement_id, dataset_id, revision_sha, config, label_column, rows_test,
                   c.threshold, c.test_rows_near_train,
                   c.test_rows_near_train / nullif(rows_test, 0) * 100 AS test_rows_near_train_pct
            FROM current_measurements,
                 unnest(from_json(near_curve, '[{"threshold": "DOUBLE", "test_rows_near_train": "BIGINT"}]')) AS u(c)""",
        # Every revision measured of every (dataset, config, label column), oldest first: when, which
        # revision, which run, the row's verdict and the headline figures of each method.
        "history": history.history_view_sql(),
        # Scores at risk: one row per reported score (reported_scores), with what the model's declared
        # training data holds of the split the score was measured on (docs/model-scores.md).
        "scores_at_risk": SCORES_AT_RISK_SQL,
    }


#: The tables whose figure columns come from the registry, each with its declared columns.
FIGURE_TABLES = {
    "measurements": figures.figure_columns,
    "column_measurements": figures.per_column_columns,
    "group_measurements": figures.group_columns,
    "time_measurements": figures.time_columns,
}
#: The tables of one config's rows beside ``measurements``, replaced with them.
SIDE_TABLES = {"groups": ("group_measurements", figures.GROUPS_METHOD, figures.GROUPS_METHOD_VERSION),
               "dates": ("time_measurements", figures.TIME_METHOD, figures.TIME_METHOD_VERSION)}


#: Keys of a measured row that are not columns of ``measurements``: the paraphrase candidates and
#: what ran to find them (``semantic_candidates``; the row's ``checks`` say it too), and the label
#: column's ClassLabel names (``label_names``).
NOT_COLUMNS = ("semantic", "semantic_candidates", "label_names")


def _views_signature(wanted: Mapping[str, str], declared: Mapping[str, Sequence[figures.Column]]) -> str:
    """What the views of a DB are made from: their SQL and the figure columns they select. A DB
    whose views carry another (an older or newer hubsurvey, a view replaced by hand) has them
    recreated on its next writing open."""
    made_of = {"views": dict(wanted), "columns": {t: [[c.name, c.sql_type] for c in cs] for t, cs in declared.items()}}
    return "hubsurvey views " + hashlib.sha256(json.dumps(made_of, sort_keys=True).encode()).hexdigest()[:16]


def column_measurement_rows(row: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The ``column_measurements`` rows of one measurement row (its ``per_column`` figures), with
    the row's identity and provenance."""
    names = [c.name for c in figures.per_column_columns()]
    return [
        {"dataset_id": row["dataset_id"], "revision_sha": row["revision_sha"], "config": row["config"],
         "label_column": row.get("label_column"), "text_columns": list(row["text_columns"]), "text_column": column,
         "profile": profile, "method": figures.EXACT_METHOD, "method_version": figures.EXACT_METHOD_VERSION,
         "tool_version": row["tool_version"], "measured_at": row["measured_at"], "run_id": row.get("run_id"),
         **{n: found.get(n) for n in names}}
        for column, by_profile in (row.get("per_column") or {}).items()
        for profile, found in by_profile.items()
    ]


def side_measurement_rows(rows: Sequence[Mapping[str, Any]], key: str) -> list[dict[str, Any]]:
    """The ``group_measurements`` (``key`` 'groups') or ``time_measurements`` ('dates') rows of one
    config's measurement rows: the config's columns (every row of a config holds the same), with
    the config's identity and provenance."""
    if not rows or not rows[0].get(key):
        return []
    table, method, version = SIDE_TABLES[key]
    first = rows[0]
    names = [c.name for c in FIGURE_TABLES[table]()]
    return [
        {"dataset_id": first["dataset_id"], "revision_sha": first["revision_sha"], "config": first["config"],
         **{k: v for k, v in found.items() if k not in names}, "method": method, "method_version": version,
         "tool_version": first["tool_version"], "measured_at": first["measured_at"], "run_id": first.get("run_id"),
         **{n: found.get(n) for n in names}}
        for found in first[key]
    ]


def semantic_candidate_rows(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The ``semantic_candidates`` rows of one config's measurement rows (every row of a config
    holds the same pairs; none without ``--semantic``), with the config's identity and provenance."""
    if not rows or rows[0].get("semantic") is None:
        return []
    first, info = rows[0], rows[0]["semantic"]
    return [
        {"dataset_id": first["dataset_id"], "revision_sha": first["revision_sha"], "config": first["config"],
         "text_columns": list(first["text_columns"]), **pair, "threshold": info["threshold"], "model": info["model"],
         "model_sha256": info["model_sha256"], "search": info["search"], "method": info["method"],
         "method_version": info["method_version"], "tool_version": first["tool_version"],
         "measured_at": first["measured_at"], "run_id": first.get("run_id")}
        for pair in first.get("semantic_candidates") or []
    ]


def label_name_rows(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The ``label_names`` rows of one config's measurement rows: each row's ``label_names``
    (``{"feature", "names"}``, the worker's reading of its label column's ClassLabel), one row per id."""
    return [
        {"dataset_id": row["dataset_id"], "revision_sha": row["revision_sha"], "config": row["config"],
         "label_column": row["label_column"], "label_id": label_id, "name": name,
         "feature": row["label_names"]["feature"], "tool_version": row["tool_version"],
         "measured_at": row["measured_at"], "run_id": row.get("run_id")}
        for row in rows if row.get("label_names") and row.get("label_column") is not None
        for label_id, name in enumerate(row["label_names"]["names"])
    ]


def now() -> datetime:
    return datetime.now(UTC)


# --- fingerprints: one 64-bit hash of each row's normalized text key, as Parquet beside the DB ------

#: How the fingerprints' hash is computed. DuckDB's hash() is stable for one version; files written
#: under another scheme are not compared (crossleaks leaves them out, the next run measures them again).
FINGERPRINT_HASH = f"duckdb-{duckdb.__version__} hash(normalized text key)"
FINGERPRINT_FILE = "part.parquet"
_SAFE_BYTES = 200  # a path component stays well under the file systems' 255 bytes


def fingerprints_dir(db: str | Path) -> Path:
    """The folder of a DB's fingerprints: ``<db>.fingerprints`` (the one place it is derived)."""
    return Path(f"{db}.fingerprints")


def safe_name(name: str) -> str:
    """A Hub name as one path component that cannot leave its folder: every byte outside
    ``[A-Za-z0-9._~-]`` percent-encoded (``/`` included; DuckDB's hive reader decodes it). A name
    whose encoding is too long is cut and given a hash of the whole name, so it stays unique."""
    safe = quote(name, safe="")
    if len(safe) > _SAFE_BYTES:

        safe = safe[: _SAFE_BYTES - 40] + "~" + hashlib.sha256(name.encode()).hexdigest()[:32]
    return safe


def fingerprint_path(dataset_id: str, config: str, split: str) -> str:
    """A split's fingerprint file, relative to :func:`fingerprints_dir`, hive partitioned:
    ``dataset=<safe>/config=<safe>/split=<split>/part.parquet``. Each component has its ``key=``
    prefix, so even a name ``..`` is a plain folder name."""
    return "/".join(f"{k}={safe_name(scrub_value(v))}" for k, v in (("dataset", dataset_id), ("config", config), ("split", split))) \
        + "/" + FINGERPRINT_FILE


class Store:
    """The results DB. ``Store(path)`` opens (creating and migrating as needed).

    Every way the DB cannot be used raises :class:`StoreError` with one line (exit code 3): a file
    that is not DuckDB (a SQLite file is refused, not handed to an extension), a DuckDB file of
    another tool, a newer schema, a lock held elsewhere, a read-only folder, a full disk.
    """

    def __init__(self, path: str | Path = DEFAULT_DB, *, read_only: bool = False,
                 config: Mapping[str, str | bool | int | float | list[str]] | None = None):
        self.path = str(path)
        #: the DB this store stands for (a read snapshot's is the DB it copies): fingerprints live beside it
        self.db_path = self.path
        self._depth = 0  # nesting of transaction(): only the outermost one commits
        #: the holder info of the run whose read snapshot this store reads (None: the DB itself)
        self.snapshot_of: dict[str, Any] | None = None
        _refuse_foreign_file(self.path)
        try:
            # Never load or install an extension to read a file: a SQLite file passed as --db would
            # otherwise make DuckDB download the sqlite scanner.
            self.con = duck.quiet(duckdb.connect(self.path, read_only=read_only, config={**_OPEN_CONFIG, **(config or {})}))
        except duckdb.IOException as e:
            if _LOCKED in str(e):
                raise _locked_error(self.path) from None
            raise StoreError(f"cannot open {self.path}: {_first_line(e)}") from None
        except duckdb.Error as e:
            raise StoreError(f"cannot open {self.path}: {_first_line(e)}") from None
        except OSError as e:
            raise StoreError(f"cannot open {self.path}: {e.strerror or e}") from None
        try:
            if not read_only:
                self._migrate()
            elif 0 < (version := self._check_version()) < SCHEMA_VERSION:
                # the views and findings of this version name tables the older schema lacks
                problem = f"{self.path} has schema version {version}, older than this hubsurvey's {SCHEMA_VERSION}"
                raise OutdatedSchemaError(f"{problem}: a command that writes to it (run, audit, crossleaks) upgrades it", problem)
        except BaseException:
            self.con.close()
            raise

    @classmethod
    def open_for_reading(cls, path: str | Path, *, config: Mapping[str, str | bool | int | float | list[str]] | None = None,
                         wait_s: float = 5.0) -> Store:
        """The DB read-only, or, while a survey run holds it, that run's read snapshot.

        The one way every read command opens the DB (see :mod:`hubsurvey.core.livestate`). The
        snapshot is chosen only when the DB is locked by a live run that has published one; then
        ``store.snapshot_of`` holds the run's holder info (``run_id``, ``snapshot_at``, progress), so
        the command can say what it read. When the run ends between the two opens (its snapshot is
        removed), the DB is tried again, for up to ``wait_s`` seconds. Neither file is ever written.
        """
        deadline = time.monotonic() + wait_s
        while True:
            try:
                return cls(path, read_only=True, config=config)
            except OutdatedSchemaError as outdated:
                # Migrations are versioned and quick: upgrade it, as any writer would, then read.
                # A DB that cannot be opened for writing (read-only file, held) says why in one line.
                try:
                    cls(path).close()
                except StoreError as cannot:
                    raise StoreError(f"{outdated.problem}, and cannot be upgraded: {cannot}") from None
                log.info("upgraded %s to schema version %d", path, SCHEMA_VERSION)
                return cls(path, read_only=True, config=config)
            except DbLockedError as locked:
                live = livestate.live_snapshot(path)
                if live is not None:
                    snapshot, info = live
                    try:
                        store = cls(snapshot, read_only=True, config=config)
                    except StoreError:
                        if time.monotonic() > deadline:
                            raise
                    else:
                        store.snapshot_of = info
                        store.db_path = str(path)
                        return store
                holder = livestate.read_holder(path)
                if not livestate.holder_alive(holder):
                    raise locked from None  # another command writes to it (audit, crawl): no snapshot
                if time.monotonic() > deadline:
                    raise _locked_error(path, holder, "it has not published a read snapshot yet; "
                                        "try again in a few seconds") from None
            time.sleep(0.2)

    def close(self) -> None:
        self.con.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # --- schema ---------------------------------------------------------------------------------

    def _version(self) -> int:
        exists = self.con.execute(
            "SELECT count(*) FROM information_schema.tables WHERE table_name = 'schema_version'"
        ).fetchone()[0]
        if not exists:
            return 0
        return self.con.execute("SELECT coalesce(max(version), 0) FROM schema_version").fetchone()[0]

    def _check_version(self) -> int:
        version = self._version()
        if version == 0 and self._foreign_tables():
            raise StoreError(
                f"{self.path} is a DuckDB file of another tool (tables {', '.join(self._foreign_tables()[:3])} but no "
                "hubsurvey schema_version): give another --db"
            )
        if version > SCHEMA_VERSION:
            raise StoreError(
                f"{self.path} has schema version {version}; this hubsurvey knows up to {SCHEMA_VERSION}: upgrade hubsurvey"
            )
        return version

    def _foreign_tables(self) -> list[str]:
        """Tables (and views) of a DB that hubsurvey never migrated."""
        return [r[0] for r in self.con.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_name <> 'schema_version' ORDER BY table_name"
        ).fetchall()]

    def _migrate(self) -> None:
        version = self._check_version()
        with self.transaction():
            if version < SCHEMA_VERSION:
                self.con.execute(
                    "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER PRIMARY KEY, applied_at TIMESTAMPTZ)"
                )
                for number, sql in enumerate(MIGRATIONS[version:], start=version + 1):
                    self.con.execute(sql)
                    self.con.execute("INSERT INTO schema_version VALUES ($v, $t)", {"v": number, "t": now()})
            self._sync_registry()

    def _sync_registry(self) -> None:
        """Add the registry's new figure columns and recreate the views (they hold no data).

        Every writing open comes here, so the common case is cheap: when no column is missing and
        every view carries this registry's signature (its comment, :func:`_views_signature`),
        nothing is recreated. A table still empty (a fresh DB) gains its columns by being created
        again from its own DDL with them appended: one statement where an ``ALTER`` a column took
        120, and the same columns, order and constraints as those ``ALTER`` statements give."""
        declared = {table: columns() for table, columns in FIGURE_TABLES.items()}
        found: dict[str, set[str]] = {}
        for table, column in self.con.execute(
                "SELECT table_name, column_name FROM duckdb_columns() WHERE database_name = current_database() "
                "AND schema_name = 'main' AND list_contains($tables, table_name)", {"tables": list(declared)}).fetchall():
            found.setdefault(table, set()).add(column)
        # a table a later migration creates may be absent (a DB of fewer migrations): nothing to add
        missing = {table: [c for c in columns if c.name not in found[table]]
                   for table, columns in declared.items() if table in found}
        missing = {table: columns for table, columns in missing.items() if columns}
        tables = {r[0] for r in self.con.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_type = 'BASE TABLE'").fetchall()}
        wanted = {name: select for name, select in views().items() if VIEW_TABLES.get(name, set()) <= tables}
        signature = _views_signature(wanted, declared)
        if not missing and self._views_signed(wanted, signature):
            return
        for name in reversed(views()):  # dependants first
            self.con.execute(f"DROP VIEW IF EXISTS {quote_ident(name)}")
        for table, columns in missing.items():
            self._add_columns(table, columns)
        for name, select in wanted.items():
            self.con.execute(f"CREATE VIEW {quote_ident(name)} AS {select}")
            # COMMENT binds no value; the signature is fixed words and hex digits, nothing to escape
            self.con.execute(f"COMMENT ON VIEW {quote_ident(name)} IS '{signature}'")

    def _views_signed(self, wanted: Mapping[str, str], signature: str) -> bool:
        """Whether every view of ``wanted`` exists with ``signature`` as its comment."""
        comments = dict(self.con.execute(
            "SELECT view_name, comment FROM duckdb_views() WHERE NOT internal AND database_name = current_database() "
            "AND schema_name = 'main'").fetchall())
        return all(comments.get(name) == signature for name in wanted)

    def _add_columns(self, table: str, columns: Sequence[figures.Column]) -> None:
        """``columns`` appended to ``table``: one ``ALTER`` each, or, while the table holds no row,
        the table created again from its DDL (as DuckDB gives it) with the columns appended."""
        added = [f"{quote_ident(c.name)} {c.sql_type}" for c in columns]
        empty = self.con.execute(f"SELECT count(*) = 0 FROM {quote_ident(table)}").fetchone() == (True,)
        ddl = self.con.execute("SELECT sql FROM duckdb_tables() WHERE database_name = current_database() "
                               "AND schema_name = 'main' AND table_name = $t", {"t": table}).fetchone()
        if empty and ddl and ddl[0].rstrip().endswith(");"):
            self.con.execute(f"DROP TABLE {quote_ident(table)}")
            self.con.execute(ddl[0].rstrip()[:-2] + ", " + ", ".join(added) + ");")
            return
        for column in added:
            self.con.execute(f"ALTER TABLE {quote_ident(table)} ADD COLUMN {column}")

    @contextmanager
    def transaction(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """One transaction; nested uses join the outer one (so store methods compose atomically).

        A write the disk or the file system refuses (full disk, read-only file) becomes a
        :class:`StoreError`; DuckDB rolls the transaction back, so the DB stays as it was.
        """
        if self._depth:
            self._depth += 1
            try:
                yield self.con
            finally:
                self._depth -= 1
            return
        self._depth = 1
        try:
            try:
                self.con.execute("BEGIN TRANSACTION")
                yield self.con
            except BaseException:
                _rollback(self.con)
                raise
            self.con.execute("COMMIT")
        except _WRITE_ERRORS as e:
            _rollback(self.con)
            raise StoreError(f"cannot write {self.path}: {_first_line(e)}") from None
        finally:
            self._depth = 0

    # --- measurements ---------------------------------------------------------------------------

    def replace_measurements(self, dataset_id: str, revision_sha: str, config: str, rows: Sequence[Mapping[str, Any]],
                             examples: Sequence[Mapping[str, Any]] = (), *,
                             fingerprints: Mapping[str, Any] | None = None, run_id: str | None = None) -> None:
        """Store the rows (and examples) of one (dataset, revision, config), replacing earlier ones, atomically.

        ``fingerprints`` (per canonical split, a table of ``row`` and ``hash``) replace the config's
        fingerprint files (:meth:`replace_fingerprints`) in the same transaction.
        """
        where = {"d": dataset_id, "r": revision_sha, "c": config}
        with self.transaction() as con:
            for table in ("measurements", "examples", "column_measurements", "group_measurements", "time_measurements",
                          "semantic_candidates", "label_names"):
                con.execute(f"DELETE FROM {table} WHERE dataset_id = $d AND revision_sha = $r AND config = $c", where)
            for row in rows:
                insert(con, "measurements", {k: v for k, v in row.items() if k not in ("per_column", *SIDE_TABLES,
                                                                                       *NOT_COLUMNS)})
            if named := label_name_rows(rows):
                insert_many(con, "label_names", named)
            per_column = [r for row in rows for r in column_measurement_rows(row)]
            if per_column:
                insert_many(con, "column_measurements", per_column)
            for key, (table, _, _) in SIDE_TABLES.items():
                if side := side_measurement_rows(rows, key):
                    insert_many(con, table, side)
            if candidates := semantic_candidate_rows(rows):
                insert_many(con, "semantic_candidates", candidates)
            if examples:
                insert_many(con, "examples", examples)
            content = {s: rows[0].get(f"fingerprint_{s}") for s in ("train", "validation", "test")} if rows else {}
            self.replace_fingerprints(dataset_id, revision_sha, config, fingerprints, run_id=run_id, content=content)

    @property
    def fingerprints_dir(self) -> Path:
        return fingerprints_dir(self.db_path)

    def replace_fingerprints(self, dataset_id: str, revision_sha: str, config: str,
                             fingerprints: Mapping[str, Any] | None, *, run_id: str | None = None,
                             content: Mapping[str, str | None] | None = None) -> None:
        """Write one config's fingerprint files and their ``fingerprints`` rows, replacing the old ones.

        Each split's file is written to a temp file in its folder, then renamed over the old one
        (readers see the old file or the new, never half of one); the files of splits the new
        revision lacks are removed. The files are written inside the transaction, before it commits:
        a crash in between leaves files of a revision the DB does not index, which crossleaks
        ignores (it compares the revision inside the file with the index). ``None`` (measured
        without the normalized profile) removes the config's files of other revisions. ``content``:
        each split's content fingerprint (``hs1:``), stored beside its file's row.
        """
        if self.path == ":memory:":
            return
        root = self.fingerprints_dir
        with self.transaction() as con:
            old = con.execute("SELECT split, path, revision_sha FROM fingerprints WHERE dataset_id = $d AND config = $c",
                              {"d": dataset_id, "c": config}).fetchall()
            if fingerprints is None:
                stale = [(split, path) for split, path, revision in old if revision != revision_sha]
            else:
                kept = set(fingerprints)
                stale = [(split, path) for split, path, _ in old if split not in kept]

            def forget(split: str) -> None:
                con.execute("DELETE FROM fingerprints WHERE dataset_id = $d AND config = $c AND split = $s",
                            {"d": dataset_id, "c": config, "s": split})

            try:
                for split, table in (fingerprints or {}).items():
                    path = fingerprint_path(dataset_id, config, split)
                    _write_fingerprint_file(root, path, table, dataset_id, revision_sha, config, split)
                    forget(split)
                    insert(con, "fingerprints", {"dataset_id": dataset_id, "config": config, "split": split,
                                                 "revision_sha": revision_sha, "rows": table.num_rows, "path": path,
                                                 "hash": FINGERPRINT_HASH, "written_at": now(), "run_id": run_id,
                                                 "content_fingerprint": (content or {}).get(split)})
                for split, path in stale:
                    _inside(root, path).unlink(missing_ok=True)
                    forget(split)
            except OSError as e:
                raise StoreError(f"cannot write the fingerprints of {dataset_id} [{config}] in {root}: "
                                 f"{e.strerror or e}") from None

    def replace_cross_overlaps(self, overlaps: Sequence[Mapping[str, Any]], families: Sequence[Mapping[str, Any]]) -> None:
        """Replace the whole ``cross_overlaps`` and ``dataset_families`` tables, in one transaction."""
        with self.transaction() as con:
            con.execute("DELETE FROM cross_overlaps")
            con.execute("DELETE FROM dataset_families")
            if overlaps:
                insert_many(con, "cross_overlaps", overlaps)
            if families:
                insert_many(con, "dataset_families", families)

    # --- contamination with benchmarks (bench-2026) ------------------------------------------------

    def record_benchmarks(self, rows: Sequence[Mapping[str, Any]]) -> None:
        """Record the benchmarks as indexed (or failed), replacing earlier rows of the same ones."""
        with self.transaction() as con:
            for row in rows:
                con.execute("DELETE FROM benchmarks WHERE benchmark_id = $i AND benchmark_config = $c AND benchmark_split = $s",
                            {"i": row["benchmark_id"], "c": row["benchmark_config"], "s": row["benchmark_split"]})
                insert(con, "benchmarks", row)

    def replace_contamination(self, dataset_id: str, revision_sha: str, config: str,
                              benchmarks: Sequence[tuple[str, str, str]], rows: Sequence[Mapping[str, Any]]) -> None:
        """Store one config's check against ``benchmarks`` ((id, config, split) each), replacing the
        earlier rows of that config and those benchmarks (at any benchmark revision), atomically."""
        where = {"d": dataset_id, "r": revision_sha, "c": config}
        with self.transaction() as con:
            for bench_id, bench_config, bench_split in benchmarks:
                con.execute("DELETE FROM contamination WHERE dataset_id = $d AND revision_sha = $r AND config = $c "
                            "AND benchmark_id = $bi AND benchmark_config = $bc AND benchmark_split = $bs",
                            {**where, "bi": bench_id, "bc": bench_config, "bs": bench_split})
            if rows:
                insert_many(con, "contamination", rows)

    # --- models that declare contaminated data (exposure-2026) ------------------------------------

    def replace_exposure(self, lookup: Mapping[str, Any], rows: Sequence[Mapping[str, Any]]) -> None:
        """Store one dataset's listing: its lookup row and its model rows replace the earlier ones of
        that dataset, atomically."""
        with self.transaction() as con:
            con.execute("DELETE FROM model_exposure WHERE dataset_id = $d", {"d": lookup["dataset_id"]})
            upsert(con, "exposure_lookups", "dataset_id", lookup)
            if rows:
                insert_many(con, "model_exposure", rows)

    def replace_scores(self, lookup: Mapping[str, Any], model_ids: Sequence[str], rows: Sequence[Mapping[str, Any]]) -> None:
        """A dataset's listing of scores: its lookup row, and the scores of the models it listed (those
        it listed before, and every earlier score of these models, are replaced), in one transaction."""
        with self.transaction() as con:
            con.execute("DELETE FROM reported_scores WHERE listed_via = $d OR list_contains($m, model_id)",
                        {"d": lookup["dataset_id"], "m": list(model_ids)})
            upsert(con, "score_lookups", "dataset_id", lookup)
            if rows:
                insert_many(con, "reported_scores", rows)

    def record_score_failure(self, lookup: Mapping[str, Any]) -> None:
        """A dataset's listing of scores failed: its lookup row says so; its earlier scores stay."""
        with self.transaction() as con:
            upsert(con, "score_lookups", "dataset_id", {**lookup, "status": "failed"})

    def record_exposure_failure(self, lookup: Mapping[str, Any]) -> None:
        """A dataset's listing failed: its lookup row says so (the next run lists it again); the
        model rows of an earlier listing stay as they were."""
        with self.transaction() as con:
            upsert(con, "exposure_lookups", "dataset_id", {**lookup, "status": "failed"})

    # --- datasets (the crawl's records) -----------------------------------------------------------

    def upsert_datasets(self, rows: Sequence[Mapping[str, Any]], listing: Mapping[str, Any] | None = None) -> None:
        """Write crawl records in one transaction, replacing earlier rows of the same dataset ids.

        A dataset id given twice in ``rows`` is written once (its last row). ``listing``: the
        ``crawl_listings`` row (its cursor) to write in the same transaction, so that a stored
        cursor never points past datasets that were not stored.
        """
        if not rows and listing is None:
            return
        rows = [_clean(row) for row in rows]
        last = {row["dataset_id"]: row for row in rows}  # a listing may repeat an id: keep one row
        table = pa.Table.from_pylist(
            [{**row, "configs": json.dumps(row["configs"], sort_keys=True) if row.get("configs") is not None else None}
             for row in last.values()]
        )
        columns = ", ".join(quote_ident(c) for c in table.column_names)
        with self.transaction() as con:
            if rows:
                con.register("crawl_batch", table)
                try:
                    con.execute("DELETE FROM datasets WHERE dataset_id IN (SELECT dataset_id FROM crawl_batch)")
                    con.execute(f"INSERT INTO datasets ({columns}) SELECT {columns} FROM crawl_batch")
                finally:
                    con.unregister("crawl_batch")
            if listing is not None:
                upsert(con, "crawl_listings", "listing_key", listing)

    def crawl_records(self, dataset_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        """The stored crawl rows of these dataset ids (what a re-crawl may keep), by id."""
        if not dataset_ids:
            return {}
        self.con.register("crawl_ids", pa.table({"dataset_id": pa.array(list(dataset_ids), pa.string())}))
        try:
            rows = self.records(
                "SELECT d.dataset_id, d.first_seen, d.resolved_sha, d.status, d.exclusion_reason, d.total_rows, d.configs,"
                " d.parquet_sha, d.decided_by FROM datasets d JOIN crawl_ids USING (dataset_id)"
            )
        finally:
            self.con.unregister("crawl_ids")
        return {r["dataset_id"]: r for r in rows}

    def pending_datasets(self) -> list[str]:
        """The ids of the datasets a crawl left undecided (no ``resolved_sha``, yet not decided from
        the listing): a Hub fault while resolving, or a decision a job dropped when the dataset's
        Parquet branch lost its files. Each is retried by the next crawl that asks for it. The
        longest waiting first."""
        return [r[0] for r in self.con.execute(
            "SELECT dataset_id FROM datasets WHERE resolved_sha IS NULL AND decided_by IS DISTINCT FROM 'listing' "
            "ORDER BY last_seen, dataset_id").fetchall()]

    def mark_unserved(self, dataset_ids: Sequence[str], reason: str, run_id: str | None) -> None:
        """Record that the Hub no longer serves these datasets (``reason``: ``not_found`` when it
        answers 404, deleted, renamed or made private; ``disabled``): excluded and decided from the
        listing, so that no crawl asks again unless a listing shows the dataset anew, which then
        decides it afresh."""
        if not dataset_ids:
            return
        with self.transaction() as con:
            con.execute("UPDATE datasets SET status = 'excluded', exclusion_reason = $reason, decided_by = 'listing', "
                        "last_seen = $seen, run_id = $run WHERE list_contains($ids::VARCHAR[], dataset_id)",
                        {"ids": list(dataset_ids), "reason": reason, "seen": now(), "run": run_id})

    def crawl_listing(self, listing_key: str) -> dict[str, Any] | None:
        """The stored state of one listing query (its cursor and high-water mark), or None."""
        rows = self.records("SELECT * FROM crawl_listings WHERE listing_key = $k", {"k": listing_key})
        return rows[0] if rows else None

    def query(self, sql: str, params: Mapping[str, Any] | Sequence[Any] | None = None) -> tuple[list[str], list[tuple]]:
        result = self.con.execute(sql, params or {})
        names = [d[0] for d in result.description] if result.description else []
        return names, result.fetchall()

    def records(self, sql: str, params: Mapping[str, Any] | Sequence[Any] | None = None) -> list[dict[str, Any]]:
        names, rows = self.query(sql, params)
        return [dict(zip(names, row)) for row in rows]


def _inside(root: Path, relative: str) -> Path:
    """``root / relative``, refused unless it stays inside ``root`` (paths come from Hub names)."""
    path = root / relative
    if not path.resolve().is_relative_to(root.resolve()):
        raise StoreError(f"refusing a fingerprint path outside {root}: {relative!r}")
    return path


def _write_fingerprint_file(root: Path, relative: str, table: Any, dataset_id: str, revision_sha: str,
                            config: str, split: str) -> None:
    """One split's fingerprints as Parquet (dataset_id, revision_sha, config, split, row, hash),
    written to a temp file beside the target, then renamed over it."""
    n = table.num_rows
    zeros = pa.array(np.zeros(n, dtype=np.int32))

    def constant(value: str) -> pa.Array:  # dictionary-encoded: one value, stored once
        return pa.DictionaryArray.from_arrays(zeros, pa.array([value], pa.string()))

    out = pa.table({
        "dataset_id": constant(dataset_id), "revision_sha": constant(revision_sha), "config": constant(config),
        "split": constant(split), "row": table.column("row").cast(pa.int64()), "hash": table.column("hash").cast(pa.uint64()),
    })
    path = _inside(root, relative)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        # Dictionary encoding for the four constant columns only: tried on the row numbers and the
        # hashes (distinct by design) it made the file larger and its write 3.6 times as long
        # (1M rows: 0.27 s, against 0.07 s)
        pq.write_table(out, tmp, use_dictionary=["dataset_id", "revision_sha", "config", "split"])
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def _locked_error(path: str | Path, holder: dict[str, Any] | None = None, hint: str | None = None) -> DbLockedError:
    """The one line for a locked DB: the running survey that holds it, when one does."""
    holder = holder if holder is not None else livestate.read_holder(path)
    if livestate.holder_alive(holder):
        assert holder is not None
        hint = hint or "try again when it ends (status, sql, report and export read its snapshot meanwhile)"
        return DbLockedError(f"{path} is in use by the running survey {livestate.describe_holder(holder)}: {hint}")
    return DbLockedError(f"{path} is locked by another process (a command writing to it); try again when it ends")


_LOCKED = "Could not set lock on file"

# Opening a file never installs nor loads an extension (see Store.__init__).
_OPEN_CONFIG: dict[str, str | bool | int | float | list[str]] = {
    "autoinstall_known_extensions": False,
    "autoload_known_extensions": False,
}

# Errors of the disk or file system during a write (a full disk fails the COMMIT with a
# TransactionException or an IOException; after some failures DuckDB invalidates the DB: Fatal).
_WRITE_ERRORS = (duckdb.IOException, duckdb.TransactionException, duckdb.FatalException, duckdb.PermissionException)


_SQLITE_MAGIC = b"SQLite format 3\x00"


def _refuse_foreign_file(path: str) -> None:
    """Refuse a SQLite file in one line before DuckDB sees it (it would want its sqlite extension)."""
    try:
        with open(path, "rb") as f:
            head = f.read(len(_SQLITE_MAGIC))
    except OSError:
        return  # missing (a new DB) or unreadable: DuckDB's own error says which
    if head == _SQLITE_MAGIC:
        raise StoreError(f"{path} is a SQLite file, not a hubsurvey DuckDB results DB: give another --db")


def _first_line(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__


def _rollback(con: duckdb.DuckDBPyConnection) -> None:
    """Roll back if a transaction is still open (a failed COMMIT may already have ended it)."""
    with suppress(duckdb.Error):
        con.execute("ROLLBACK")


def quote_ident(name: str) -> str:
    """Quote an identifier for DuckDB (names come from datasets and users: never trust them)."""
    return '"' + name.replace('"', '""') + '"'


def insert(con: duckdb.DuckDBPyConnection, table: str, row: Mapping[str, Any]) -> None:
    """INSERT one row: identifiers quoted, values bound."""
    row = _clean(row)
    cols = list(row)
    sql = (
        f"INSERT INTO {quote_ident(table)} ({', '.join(quote_ident(c) for c in cols)}) "
        f"VALUES ({', '.join('$' + f'p{i}' for i in range(len(cols)))})"
    )
    con.execute(sql, {f"p{i}": _bindable(row[c]) for i, c in enumerate(cols)})


def insert_many(con: duckdb.DuckDBPyConnection, table: str, rows: Sequence[Mapping[str, Any]]) -> None:
    """INSERT rows of the same columns in one statement (through Arrow); JSON values as text."""
    columns = list(rows[0])
    batch = pa.Table.from_pylist([{c: _bindable(row[c]) for c in columns} for row in map(_clean, rows)])
    con.register("insert_batch", batch)
    try:
        names = ", ".join(quote_ident(c) for c in columns)
        con.execute(f"INSERT INTO {quote_ident(table)} ({names}) SELECT {names} FROM insert_batch")
    finally:
        con.unregister("insert_batch")


def _clean(row: Mapping[str, Any]) -> Mapping[str, Any]:
    """The one check every row written passes: a secret (the token, echoed by a Hub or a proxy into
    a name or a text) is scrubbed, so no table ever holds it."""
    known = secrets()
    if not known or not holds_secret(row, known):
        return row
    log.warning("a value to be stored held the token; it is stored scrubbed")
    return {k: scrub_value(v, known) for k, v in row.items()}


def _bindable(value: Any) -> Any:
    if isinstance(value, (dict,)):
        return json.dumps(value, sort_keys=True)
    if isinstance(value, tuple):
        return list(value)
    return value


def upsert(con: duckdb.DuckDBPyConnection, table: str, key: str, row: Mapping[str, Any]) -> None:
    """Replace the row with the same primary key (DELETE + INSERT; call inside a transaction)."""
    con.execute(f"DELETE FROM {quote_ident(table)} WHERE {quote_ident(key)} = $k", {"k": row[key]})
    insert(con, table, row)
