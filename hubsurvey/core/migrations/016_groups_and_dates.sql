-- Beyond the pair of texts: each config's statement of what was checked (measurements.checks),
-- the figures of each group column (groups-2026: rows of one dialogue, file or document on both
-- sides of a split) and of each date column (time-2026), one row per (config, column), written
-- with the measurement rows in their transaction. Their figure columns are added from the
-- registry (figures.group_columns(), figures.time_columns()).
ALTER TABLE measurements ADD COLUMN checks JSON;   -- [{"check", "ran", ...}]: what was checked, what was not
CREATE TABLE group_measurements (
    dataset_id       VARCHAR NOT NULL,
    revision_sha     VARCHAR NOT NULL,
    config           VARCHAR NOT NULL,
    group_column     VARCHAR NOT NULL,   -- the column whose values name a group
    source           VARCHAR NOT NULL,   -- 'inferred' (id-like or url, values repeat in a split) or 'declared'
    numbering_reused BOOLEAN NOT NULL,   -- small integers restarting in every split: not one group across splits
    in_verdict       BOOLEAN NOT NULL,   -- false for a reused numbering: reported, kept out of the verdict
    method           VARCHAR NOT NULL,   -- 'groups-2026'
    method_version   INTEGER NOT NULL,
    tool_version     VARCHAR NOT NULL,
    measured_at      TIMESTAMPTZ NOT NULL,
    run_id           VARCHAR
);
CREATE TABLE time_measurements (
    dataset_id     VARCHAR NOT NULL,
    revision_sha   VARCHAR NOT NULL,
    config         VARCHAR NOT NULL,
    date_column    VARCHAR NOT NULL,     -- the column whose values date a row
    source         VARCHAR NOT NULL,     -- 'inferred' (a date type or name) or 'declared'
    method         VARCHAR NOT NULL,     -- 'time-2026'
    method_version INTEGER NOT NULL,
    tool_version   VARCHAR NOT NULL,
    measured_at    TIMESTAMPTZ NOT NULL,
    run_id         VARCHAR
);
