-- The ClassLabel names of each label column measured, as the Parquet schema's features give them
-- (read by the workers, never by running dataset code): one row per (config, label column, id),
-- replaced with the config's measurements, in the same transaction. Pages and `show` print a
-- label as its name and id from them; the stored figures and examples keep the ids.
CREATE TABLE label_names (
    dataset_id   VARCHAR NOT NULL,
    revision_sha VARCHAR NOT NULL,
    config       VARCHAR NOT NULL,
    label_column VARCHAR NOT NULL,
    label_id     INTEGER NOT NULL,     -- the ClassLabel id: the name's position in the feature's names
    name         VARCHAR NOT NULL,     -- as the Hub gives it, cut at 200 characters (untrusted text)
    feature      VARCHAR NOT NULL,     -- 'ClassLabel', or 'List(ClassLabel)' for a list per row
    tool_version VARCHAR NOT NULL,
    measured_at  TIMESTAMPTZ NOT NULL,
    run_id       VARCHAR
);
