-- Leaks across datasets (method cross-2026). The per-row fingerprints live in Parquet beside
-- the DB (fingerprints_dir); this table indexes them: one file per (dataset, config, split).
-- cross_overlaps and dataset_families are rewritten whole by each `hubsurvey crossleaks`.
CREATE TABLE fingerprints (
    dataset_id   VARCHAR NOT NULL,
    config       VARCHAR NOT NULL,
    split        VARCHAR NOT NULL,        -- canonical: train, validation, test
    revision_sha VARCHAR NOT NULL,        -- the revision whose rows the file holds
    rows         BIGINT NOT NULL,
    path         VARCHAR NOT NULL,        -- the Parquet file, relative to <db>.fingerprints/
    hash         VARCHAR NOT NULL,        -- how the 64-bit hash was computed (FINGERPRINT_HASH)
    written_at   TIMESTAMPTZ NOT NULL,
    run_id       VARCHAR,
    PRIMARY KEY (dataset_id, config, split)
);

CREATE TABLE cross_overlaps (
    test_dataset    VARCHAR NOT NULL,     -- A: the dataset whose test split is probed
    test_config     VARCHAR NOT NULL,
    test_revision   VARCHAR NOT NULL,
    source_dataset  VARCHAR NOT NULL,     -- B: another dataset holding some of A's test rows
    source_config   VARCHAR NOT NULL,
    source_split    VARCHAR NOT NULL,     -- train, validation or test
    source_revision VARCHAR NOT NULL,
    rows            BIGINT NOT NULL,      -- distinct test rows of A whose hash occurs in B's split
    test_rows       BIGINT NOT NULL,      -- rows of A's test split
    pct             DOUBLE NOT NULL,      -- rows / test_rows x 100
    relation        VARCHAR NOT NULL,     -- copy, leak, shared_test or family
    copy_threshold  DOUBLE NOT NULL,      -- the share of rows that made a copy (--copy-threshold)
    method          VARCHAR NOT NULL,     -- 'cross-2026'
    method_version  INTEGER NOT NULL,
    tool_version    VARCHAR NOT NULL,
    computed_at     TIMESTAMPTZ NOT NULL,
    run_id          VARCHAR
);

CREATE TABLE dataset_families (
    dataset_id   VARCHAR PRIMARY KEY,
    family_id    VARCHAR NOT NULL,        -- the smallest dataset id of the family
    members      VARCHAR[] NOT NULL,      -- every dataset of the family, sorted
    computed_at  TIMESTAMPTZ NOT NULL,
    run_id       VARCHAR
);
