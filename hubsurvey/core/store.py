"""The results store: one DuckDB file (``results.duckdb`` by default).

The schema is a user-facing contract, documented column by column in the README ("Schema").
It is versioned: ``schema_version`` records the migrations applied, opening an older DB applies
the missing ones, and a DB from a newer hubsurvey is refused rather than guessed at.

Only one process writes (the CLI, or a survey run's coordinator); workers return plain data.
Every write of results is one transaction, so an interrupted write leaves nothing half-written.
"""

from __future__ import annotations

import json
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterator, Mapping, Sequence

import duckdb

from hubsurvey.core.errors import StoreError

DEFAULT_DB = "results.duckdb"

# The six LLE figures of one key kind; stored once with the text_ and once with the
# text_and_label_ prefix, then the difference (the published column order).
FIGURE_NAMES = (
    "leaks_train_wrt_test",
    "leaks_validation_wrt_test",
    "duplication_train",
    "duplication_validation",
    "duplication_test",
    "test_biased",
)
FIGURE_COLUMNS = tuple(f"{prefix}_{name}" for prefix in ("text", "text_and_label") for name in FIGURE_NAMES) + (
    "difference_annotation",
)

# Each migration is applied once, in order, inside one transaction.
MIGRATIONS: list[str] = [
    # 1: measurements, the lle view, crawl results, jobs and runs.
    """
    CREATE TABLE measurements (
        measurement_id  VARCHAR PRIMARY KEY,  -- dataset_id@revision_sha/config#label_column
        dataset_id      VARCHAR NOT NULL,     -- Hub id (owner/name) or a folder's name
        revision_sha    VARCHAR NOT NULL,     -- dataset revision measured (Hub sha; content hash for folders)
        config          VARCHAR NOT NULL,
        label_column    VARCHAR,              -- NULL: no label column, text+label figures are NULL
        text_columns    VARCHAR[] NOT NULL,
        roles_source    VARCHAR NOT NULL,     -- 'inferred' or 'override'
        dataset_name    VARCHAR NOT NULL,     -- the LLE survey's name: name[,config][(label)]
        train_split     VARCHAR,              -- the dataset's own split names (NULL: absent)
        validation_split VARCHAR,
        test_split      VARCHAR NOT NULL,
        rows_train      BIGINT,
        rows_validation BIGINT,
        rows_test       BIGINT NOT NULL,
        text_leaks_train_wrt_test                BIGINT,
        text_leaks_validation_wrt_test           BIGINT,
        text_duplication_train                   BIGINT,
        text_duplication_validation              BIGINT,
        text_duplication_test                    BIGINT,
        text_test_biased                         DOUBLE,  -- percent, unrounded
        text_and_label_leaks_train_wrt_test      BIGINT,
        text_and_label_leaks_validation_wrt_test BIGINT,
        text_and_label_duplication_train         BIGINT,
        text_and_label_duplication_validation    BIGINT,
        text_and_label_duplication_test          BIGINT,
        text_and_label_test_biased               DOUBLE,
        difference_annotation                    DOUBLE,
        source          VARCHAR NOT NULL,     -- 'hub', 'folder' or 'memory'
        method          VARCHAR NOT NULL,     -- 'lle-2024'
        method_version  INTEGER NOT NULL,
        tool_version    VARCHAR NOT NULL,
        measured_at     TIMESTAMPTZ NOT NULL,
        run_id          VARCHAR               -- the survey run, NULL for a one-off audit
    );

    -- The newest measured revision of each dataset: what findings and exports read.
    CREATE VIEW current_measurements AS
    SELECT * FROM measurements
    QUALIFY revision_sha = first_value(revision_sha) OVER (
        PARTITION BY dataset_id ORDER BY measured_at DESC, revision_sha);

    -- The published LLE table: 14 columns, 'NR' for NULL, '10.049%' and '7.0' formats.
    CREATE VIEW lle AS
    SELECT
        dataset_name,
        coalesce(CAST(text_leaks_train_wrt_test AS VARCHAR), 'NR')                AS text_leaks_train_wrt_test,
        coalesce(CAST(text_leaks_validation_wrt_test AS VARCHAR), 'NR')           AS text_leaks_validation_wrt_test,
        coalesce(CAST(text_duplication_train AS VARCHAR), 'NR')                   AS text_duplication_train,
        coalesce(CAST(text_duplication_validation AS VARCHAR), 'NR')              AS text_duplication_validation,
        coalesce(CAST(text_duplication_test AS VARCHAR), 'NR')                    AS text_duplication_test,
        coalesce(CAST(round(text_test_biased, 3) AS VARCHAR) || '%', 'NR')        AS text_test_biased,
        coalesce(CAST(text_and_label_leaks_train_wrt_test AS VARCHAR), 'NR')      AS text_and_label_leaks_train_wrt_test,
        coalesce(CAST(text_and_label_leaks_validation_wrt_test AS VARCHAR), 'NR') AS text_and_label_leaks_validation_wrt_test,
        coalesce(CAST(text_and_label_duplication_train AS VARCHAR), 'NR')         AS text_and_label_duplication_train,
        coalesce(CAST(text_and_label_duplication_validation AS VARCHAR), 'NR')    AS text_and_label_duplication_validation,
        coalesce(CAST(text_and_label_duplication_test AS VARCHAR), 'NR')          AS text_and_label_duplication_test,
        coalesce(CAST(round(text_and_label_test_biased, 3) AS VARCHAR) || '%', 'NR') AS text_and_label_test_biased,
        coalesce(CAST(difference_annotation AS VARCHAR), 'NR')                    AS difference_annotation_in_train_and_validation_splits
    FROM current_measurements
    ORDER BY dataset_name;

    CREATE TABLE datasets (
        dataset_id       VARCHAR PRIMARY KEY,
        sha              VARCHAR,             -- main revision at the last crawl
        author           VARCHAR,
        tags             VARCHAR[],
        gated            VARCHAR,             -- 'false', 'auto' or 'manual'
        private          BOOLEAN,
        disabled         BOOLEAN,
        downloads        BIGINT,
        likes            BIGINT,
        last_modified    TIMESTAMPTZ,
        status           VARCHAR NOT NULL,    -- 'eligible' or 'excluded'
        exclusion_reason VARCHAR,             -- gated, no_test_split, too_many_rows, not_text, ...
        total_rows       BIGINT,              -- confirmed from Parquet metadata (NULL: not resolved)
        configs          JSON,                -- {config: {split: {"files": [...], "rows": n}}}
        resolved_sha     VARCHAR,             -- sha at which configs/total_rows were resolved
        first_seen       TIMESTAMPTZ NOT NULL,
        last_seen        TIMESTAMPTZ NOT NULL,
        run_id           VARCHAR
    );

    CREATE TABLE jobs (
        job_id        VARCHAR PRIMARY KEY,    -- dataset_id@revision_sha/config
        dataset_id    VARCHAR NOT NULL,
        revision_sha  VARCHAR NOT NULL,
        config        VARCHAR NOT NULL,
        status        VARCHAR NOT NULL,       -- pending, running, done, failed
        attempts      INTEGER NOT NULL DEFAULT 0,
        error_class   VARCHAR,
        error_message VARCHAR,
        queued_at     TIMESTAMPTZ NOT NULL,
        started_at    TIMESTAMPTZ,
        finished_at   TIMESTAMPTZ,
        seconds       DOUBLE,                 -- wall time of the last attempt
        run_id        VARCHAR
    );

    CREATE TABLE runs (
        run_id      VARCHAR PRIMARY KEY,
        command     VARCHAR NOT NULL,
        args        JSON,                     -- the arguments, without secrets
        started_at  TIMESTAMPTZ NOT NULL,
        finished_at TIMESTAMPTZ,
        status      VARCHAR NOT NULL,         -- running, done, failed, interrupted, timed_out
        counts      JSON,
        tool_version VARCHAR NOT NULL
    );
    """,
    # 2: whether a failed job's error is transient (retried by the next run while attempts remain).
    """
    ALTER TABLE jobs ADD COLUMN transient BOOLEAN;
    """,
]
SCHEMA_VERSION = len(MIGRATIONS)


def now() -> datetime:
    return datetime.now(timezone.utc)


class Store:
    """The results DB. ``Store(path)`` opens (creating and migrating as needed)."""

    def __init__(self, path: str | Path = DEFAULT_DB, *, read_only: bool = False):
        self.path = str(path)
        try:
            self.con = duckdb.connect(self.path, read_only=read_only)
        except duckdb.Error as e:
            raise StoreError(f"cannot open {self.path}: {str(e).splitlines()[0]}") from None
        if not read_only:
            self._migrate()
        else:
            self._check_version()

    def close(self) -> None:
        self.con.close()

    def __enter__(self) -> "Store":
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
        if version > SCHEMA_VERSION:
            raise StoreError(
                f"{self.path} has schema version {version}; this hubsurvey knows up to {SCHEMA_VERSION}: upgrade hubsurvey"
            )
        return version

    def _migrate(self) -> None:
        version = self._check_version()
        if version == SCHEMA_VERSION:
            return
        with self.transaction():
            self.con.execute(
                "CREATE TABLE IF NOT EXISTS schema_version (version INTEGER PRIMARY KEY, applied_at TIMESTAMPTZ)"
            )
            for number, sql in enumerate(MIGRATIONS[version:], start=version + 1):
                self.con.execute(sql)
                self.con.execute("INSERT INTO schema_version VALUES ($v, $t)", {"v": number, "t": now()})

    @contextmanager
    def transaction(self) -> Iterator[duckdb.DuckDBPyConnection]:
        self.con.execute("BEGIN TRANSACTION")
        try:
            yield self.con
        except BaseException:
            self.con.execute("ROLLBACK")
            raise
        self.con.execute("COMMIT")

    # --- measurements ---------------------------------------------------------------------------

    def replace_measurements(self, dataset_id: str, revision_sha: str, config: str, rows: Sequence[Mapping[str, Any]]) -> None:
        """Store the rows of one (dataset, revision, config), replacing any earlier ones, atomically."""
        with self.transaction() as con:
            con.execute(
                "DELETE FROM measurements WHERE dataset_id = $d AND revision_sha = $r AND config = $c",
                {"d": dataset_id, "r": revision_sha, "c": config},
            )
            for row in rows:
                insert(con, "measurements", row)

    def query(self, sql: str, params: Mapping[str, Any] | Sequence[Any] | None = None) -> tuple[list[str], list[tuple]]:
        result = self.con.execute(sql, params or {})
        names = [d[0] for d in result.description] if result.description else []
        return names, result.fetchall()

    def records(self, sql: str, params: Mapping[str, Any] | Sequence[Any] | None = None) -> list[dict[str, Any]]:
        names, rows = self.query(sql, params)
        return [dict(zip(names, row)) for row in rows]


def quote_ident(name: str) -> str:
    """Quote an identifier for DuckDB (names come from datasets and users: never trust them)."""
    return '"' + name.replace('"', '""') + '"'


def insert(con: duckdb.DuckDBPyConnection, table: str, row: Mapping[str, Any]) -> None:
    """INSERT one row: identifiers quoted, values bound."""
    cols = list(row)
    sql = (
        f"INSERT INTO {quote_ident(table)} ({', '.join(quote_ident(c) for c in cols)}) "
        f"VALUES ({', '.join('$' + f'p{i}' for i in range(len(cols)))})"
    )
    con.execute(sql, {f"p{i}": _bindable(row[c]) for i, c in enumerate(cols)})


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
