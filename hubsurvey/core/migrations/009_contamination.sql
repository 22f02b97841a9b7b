-- Contamination with benchmarks (bench-2026), one self-contained migration.
-- The benchmarks as indexed (each one's revision), and per (surveyed dataset, revision, config,
-- split, benchmark) its contaminated rows, with up to N examples. See survey/contamination.py.
CREATE TABLE benchmarks (
    benchmark_id     VARCHAR NOT NULL,    -- Hub id of the benchmark
    benchmark_config VARCHAR NOT NULL,
    benchmark_split  VARCHAR NOT NULL,
    text_columns     VARCHAR[] NOT NULL,
    revision_sha     VARCHAR,             -- the benchmark's main revision when indexed (NULL: not indexed)
    parquet_sha      VARCHAR,             -- the Parquet-branch commit its items were read from
    items            BIGINT,              -- items indexed
    short_items      BIGINT,              -- items shorter than 13 words (matched whole)
    status           VARCHAR NOT NULL,    -- 'indexed', or 'failed' (error_message says why)
    error_message    VARCHAR,
    method           VARCHAR NOT NULL,    -- 'bench-2026'
    method_version   INTEGER NOT NULL,
    tool_version     VARCHAR NOT NULL,
    indexed_at       TIMESTAMPTZ NOT NULL,
    run_id           VARCHAR
);

CREATE TABLE contamination (
    dataset_id        VARCHAR NOT NULL,   -- the surveyed dataset
    revision_sha      VARCHAR NOT NULL,
    config            VARCHAR NOT NULL,
    split             VARCHAR NOT NULL,   -- canonical: train, validation or test
    split_name        VARCHAR NOT NULL,   -- the dataset's own name for it
    rows_split        BIGINT NOT NULL,    -- rows of the split
    text_columns      VARCHAR[] NOT NULL, -- the columns whose text was checked
    benchmark_id      VARCHAR NOT NULL,
    benchmark_config  VARCHAR NOT NULL,
    benchmark_split   VARCHAR NOT NULL,
    benchmark_revision VARCHAR,           -- the benchmark's revision it was checked against
    contaminated_rows BIGINT NOT NULL,    -- rows holding an item's 13-gram, or equal to a short item
    contaminated_pct  DOUBLE,             -- contaminated_rows / rows_split x 100 (NULL: no rows)
    examples          JSON NOT NULL,      -- up to N: [{"position", "item", "match", "passage"}]
    candidates        BIGINT NOT NULL,    -- candidates of the hash join, all verified exactly
    verified          BIGINT NOT NULL,    -- those that matched word for word (the rest were rejected)
    method            VARCHAR NOT NULL,   -- 'bench-2026'
    method_version    INTEGER NOT NULL,
    tool_version      VARCHAR NOT NULL,
    measured_at       TIMESTAMPTZ NOT NULL,
    run_id            VARCHAR
);
