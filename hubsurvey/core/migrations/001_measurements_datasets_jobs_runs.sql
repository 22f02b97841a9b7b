-- Measurements (with the LLE figures, which never change), crawl results, jobs and runs.
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
    {lle_figure_columns}
    source          VARCHAR NOT NULL,     -- 'hub', 'folder' or 'memory'
    method          VARCHAR NOT NULL,     -- 'lle-2024'
    method_version  INTEGER NOT NULL,
    tool_version    VARCHAR NOT NULL,
    measured_at     TIMESTAMPTZ NOT NULL,
    run_id          VARCHAR               -- the survey run, NULL for a one-off audit
);

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
