-- The exact method (figure columns are added from the registry): which methods a row holds,
-- and the examples behind every count, bounded: N per kind, profile and label column.
ALTER TABLE measurements ADD COLUMN methods JSON;   -- {"lle-2024": 1, "exact-2026": 1}: method -> version

CREATE TABLE examples (
    dataset_id      VARCHAR NOT NULL,
    revision_sha    VARCHAR NOT NULL,
    config          VARCHAR NOT NULL,
    label_column    VARCHAR,              -- NULL: a text-key example, shared by the config's label columns
    profile         VARCHAR NOT NULL,     -- 'raw' or 'normalized'
    kind            VARCHAR NOT NULL,     -- leak_train_test, duplicate_test, label_conflict_train_test, ...
    rank            INTEGER NOT NULL,     -- 1 = the key holding most rows
    key             JSON NOT NULL,        -- {text column: value} of its first test row (else first row)
    key_truncated   BOOLEAN NOT NULL,     -- a value was cut (200 characters, 50 list items)
    rows_train      BIGINT,               -- rows holding the key in each split (NULL: no such split)
    rows_validation BIGINT,
    rows_test       BIGINT,
    positions       JSON NOT NULL,        -- {split: [first 10 row positions, 0-based]}
    labels          JSON,                 -- label kinds: {split: [the text's labels there]}
    method          VARCHAR NOT NULL,
    method_version  INTEGER NOT NULL,
    tool_version    VARCHAR NOT NULL,
    measured_at     TIMESTAMPTZ NOT NULL,
    run_id          VARCHAR
);
