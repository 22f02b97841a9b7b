-- Models that declare contaminated training data (method exposure-2026, survey/exposure.py).
-- exposure_lookups: one row per contaminated dataset whose models were listed on the Hub, with
-- the digest of the contamination rows the listing answered (a new lookup only when it changes)
-- and the cap. model_exposure: per model declaring it, one row per contaminated (config, split,
-- benchmark) of the dataset. A dataset's rows are replaced together, with its lookup row.
CREATE TABLE exposure_lookups (
    dataset_id           VARCHAR PRIMARY KEY, -- the surveyed dataset whose declaring models were listed
    revision_sha         VARCHAR NOT NULL,    -- its revision whose contamination the listing answers
    contamination_digest VARCHAR,             -- sha256 of those contamination rows (NULL: no listing yet)
    max_models           INTEGER NOT NULL,    -- the cap: models kept per dataset (--max-models)
    models               INTEGER,             -- models kept (NULL: the listing failed)
    capped               BOOLEAN,             -- the Hub listed more than max_models (NULL: failed)
    status               VARCHAR NOT NULL,    -- 'listed', 'failed' (error_class, error_message), or 'clean'
                                              -- (checked again, no longer contaminated: no model rows)
    error_class          VARCHAR,
    error_message        VARCHAR,
    method               VARCHAR NOT NULL,    -- 'exposure-2026'
    method_version       INTEGER NOT NULL,
    tool_version         VARCHAR NOT NULL,
    looked_up_at         TIMESTAMPTZ NOT NULL,
    run_id               VARCHAR
);

CREATE TABLE model_exposure (
    model_id           VARCHAR NOT NULL,   -- a Hub model whose card declares the dataset
    model_sha          VARCHAR,            -- the model's revision when listed
    declared_by        VARCHAR NOT NULL,   -- 'card:datasets', or 'tag:dataset' (the Hub's tag alone)
    dataset_id         VARCHAR NOT NULL,
    revision_sha       VARCHAR NOT NULL,
    config             VARCHAR NOT NULL,
    split              VARCHAR NOT NULL,   -- canonical: train, validation or test
    split_name         VARCHAR NOT NULL,
    text_columns       VARCHAR[] NOT NULL,
    benchmark_id       VARCHAR NOT NULL,
    benchmark_config   VARCHAR NOT NULL,
    benchmark_split    VARCHAR NOT NULL,
    benchmark_revision VARCHAR,
    contaminated_rows  BIGINT NOT NULL,    -- the split's rows holding the benchmark's items (contamination)
    rows_split         BIGINT NOT NULL,
    contaminated_pct   DOUBLE,
    method             VARCHAR NOT NULL,   -- 'exposure-2026'
    method_version     INTEGER NOT NULL,
    tool_version       VARCHAR NOT NULL,
    looked_up_at       TIMESTAMPTZ NOT NULL,
    run_id             VARCHAR
);
