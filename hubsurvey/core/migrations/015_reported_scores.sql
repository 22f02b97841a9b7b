-- Scores at risk (method scores-2026, survey/scores.py): the scores Hub models report.
-- score_lookups: one row per surveyed dataset whose declaring models were listed (revision, cap,
-- capped, the calls it took). reported_scores: one row per score a listed model reports (its
-- card's model-index, its .eval_results files), with the datasets the model declares; the view
-- scores_at_risk joins them with the stored figures. A dataset's rows are replaced together.
CREATE TABLE score_lookups (
    dataset_id     VARCHAR PRIMARY KEY, -- the surveyed dataset whose declaring models were listed
    revision_sha   VARCHAR NOT NULL,    -- its revision when listed (listed again when it changes)
    max_models     INTEGER NOT NULL,    -- the cap: models kept per dataset (--max-models)
    models         INTEGER,             -- models kept (NULL: the listing failed)
    capped         BOOLEAN,             -- the Hub listed more than max_models (NULL: failed)
    scores         INTEGER,             -- scores stored (NULL: failed)
    api_calls      INTEGER NOT NULL,    -- API calls the listing took (its pages)
    file_calls     INTEGER NOT NULL,    -- file calls (.eval_results files, benchmarks' eval.yaml)
    status         VARCHAR NOT NULL,    -- 'listed' or 'failed' (error_class, error_message)
    error_class    VARCHAR,
    error_message  VARCHAR,
    method         VARCHAR NOT NULL,    -- 'scores-2026'
    method_version INTEGER NOT NULL,
    tool_version   VARCHAR NOT NULL,
    looked_up_at   TIMESTAMPTZ NOT NULL,
    run_id         VARCHAR
);

CREATE TABLE reported_scores (
    score_id          VARCHAR NOT NULL,   -- stable per (model, source, file, position)
    model_id          VARCHAR NOT NULL,
    model_sha         VARCHAR,            -- the model's revision when listed
    source            VARCHAR NOT NULL,   -- 'model-index' (the card) or 'eval_results' (.eval_results/*.yaml)
    source_file       VARCHAR,            -- the .eval_results file (NULL: the card)
    dataset_id        VARCHAR NOT NULL,   -- the dataset the score was measured on
    config            VARCHAR,            -- as reported, or from the benchmark's eval.yaml (NULL: not named)
    split_reported    VARCHAR,            -- the split as reported or mapped (NULL: unknown)
    split             VARCHAR,            -- canonical: train, validation or test (NULL: unknown or another)
    task              VARCHAR,            -- model-index task type; eval_results task_id
    metric            VARCHAR,            -- model-index metric type (NULL: eval_results name none)
    value             DOUBLE,             -- the reported value (NULL: not a number)
    verified          BOOLEAN NOT NULL,   -- model-index: verified; eval_results: carries a verifyToken
    note              VARCHAR,            -- 'split unknown': an eval result whose task maps to no split
    declared_datasets VARCHAR[] NOT NULL, -- the card's datasets: (the training data it declares)
    base_model        VARCHAR[] NOT NULL, -- the card's base_model: recorded, never followed
    listed_via        VARCHAR NOT NULL,   -- the surveyed dataset whose listing found the model
    method            VARCHAR NOT NULL,   -- 'scores-2026'
    method_version    INTEGER NOT NULL,
    tool_version      VARCHAR NOT NULL,
    looked_up_at      TIMESTAMPTZ NOT NULL,
    run_id            VARCHAR
);
