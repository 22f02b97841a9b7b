-- Split fingerprints and clean test splits. Each measured split's order-independent content
-- fingerprint (hs1:..., survey/fingerprint.py) on its measurements rows and on the fingerprints
-- index; and per (dataset, revision, config, profile) the test rows `hubsurvey clean --db` kept:
-- row positions only, never the rows, which publish exports as the results' clean_test config.
ALTER TABLE measurements ADD COLUMN fingerprint_train VARCHAR;       -- NULL: no such split
ALTER TABLE measurements ADD COLUMN fingerprint_validation VARCHAR;
ALTER TABLE measurements ADD COLUMN fingerprint_test VARCHAR;
ALTER TABLE fingerprints ADD COLUMN content_fingerprint VARCHAR;     -- the split's hs1 fingerprint

CREATE TABLE clean_test (
    dataset_id        VARCHAR NOT NULL,
    revision_sha      VARCHAR NOT NULL,   -- the revision cleaned (Hub sha; content hash for folders)
    parquet_sha       VARCHAR,            -- the Parquet-branch commit read (NULL: a folder)
    config            VARCHAR NOT NULL,
    profile           VARCHAR NOT NULL,   -- raw, normalized or near
    text_columns      VARCHAR[] NOT NULL, -- the columns whose values form the text key
    test_split        VARCHAR NOT NULL,   -- the dataset's own name of its test split
    rows_test         BIGINT NOT NULL,
    rows_kept         BIGINT NOT NULL,
    dropped           JSON NOT NULL,      -- rows dropped by reason: {"train", "validation", "repeated", "near"}
    kept_positions    BIGINT[] NOT NULL,  -- 0-based positions in the test split, ascending
    test_fingerprint  VARCHAR NOT NULL,   -- the test split's hs1 fingerprint
    clean_fingerprint VARCHAR NOT NULL,   -- the clean split's
    near              JSON,               -- the near method's parameters (profile near; else NULL)
    method            VARCHAR NOT NULL,   -- the method whose rule dropped rows: exact-2026 or near-2026
    method_version    INTEGER NOT NULL,
    tool_version      VARCHAR NOT NULL,
    cleaned_at        TIMESTAMPTZ NOT NULL,
    run_id            VARCHAR,
    PRIMARY KEY (dataset_id, revision_sha, config, profile)
);
