-- The figures of each text column alone (exact-2026, for configs with two text columns or more):
-- one row per (measurement, text column, profile). The figure columns are added from the
-- registry (figures.per_column_columns()), as the measurements' are; written with the
-- measurement rows, in their transaction.
CREATE TABLE column_measurements (
    dataset_id     VARCHAR NOT NULL,
    revision_sha   VARCHAR NOT NULL,
    config         VARCHAR NOT NULL,
    label_column   VARCHAR,              -- NULL: the config has no label column
    text_columns   VARCHAR[] NOT NULL,   -- the whole text key's columns
    text_column    VARCHAR NOT NULL,     -- the one text column whose values are compared
    profile        VARCHAR NOT NULL,     -- 'raw' or 'normalized'
    method         VARCHAR NOT NULL,     -- 'exact-2026'
    method_version INTEGER NOT NULL,
    tool_version   VARCHAR NOT NULL,
    measured_at    TIMESTAMPTZ NOT NULL,
    run_id         VARCHAR
);
