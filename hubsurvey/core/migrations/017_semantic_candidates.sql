-- Paraphrase candidates for review (semantic-2026, opt-in: --semantic): a test text and one of its
-- nearest train or validation texts by a static model's cosine, at or above the threshold. Stored
-- apart from every figure: they never change a leak count or a verdict. Written with the config's
-- measurements, in their transaction.
CREATE TABLE semantic_candidates (
    dataset_id       VARCHAR NOT NULL,
    revision_sha     VARCHAR NOT NULL,
    config           VARCHAR NOT NULL,
    text_columns     VARCHAR[] NOT NULL,  -- the columns whose values form the text embedded
    test_position    BIGINT NOT NULL,     -- the first test row holding the test text (0-based)
    test_rows        BIGINT NOT NULL,     -- test rows holding it
    test_text        VARCHAR NOT NULL,    -- the text (normalized), cut at 200 characters
    partner_split    VARCHAR NOT NULL,    -- 'train' or 'validation'
    partner_position BIGINT NOT NULL,     -- the first row of that split holding the partner text
    partner_rows     BIGINT NOT NULL,     -- rows of that split holding it
    partner_text     VARCHAR NOT NULL,
    cosine           DOUBLE NOT NULL,     -- the two texts' cosine under the model
    rank             INTEGER NOT NULL,    -- 1: the test text's nearest partner
    threshold        DOUBLE NOT NULL,     -- the run's cosine threshold
    model            VARCHAR NOT NULL,    -- the static model, e.g. 'wordllama l2_supercat_256'
    model_sha256     VARCHAR NOT NULL,    -- its weights file's SHA-256
    search           VARCHAR NOT NULL,    -- 'exact': every pair's cosine computed
    method           VARCHAR NOT NULL,    -- 'semantic-2026'
    method_version   INTEGER NOT NULL,
    tool_version     VARCHAR NOT NULL,
    measured_at      TIMESTAMPTZ NOT NULL,
    run_id           VARCHAR
);
