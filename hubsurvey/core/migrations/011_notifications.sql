-- The opt-in Hub bot (`hubsurvey notify`, analysis/notify.py): one row per dataset revision the
-- bot considered, whatever it did (drafted, posted, skipped and why, failed), so that it never
-- posts twice for one revision and every decision can be read back.
CREATE TABLE notifications (
    dataset_id        VARCHAR NOT NULL,
    revision_sha      VARCHAR NOT NULL,   -- the measured revision the message is about
    verdict           VARCHAR,            -- findings_dataset_verdict's verdict at that revision
    profile           VARCHAR NOT NULL,   -- key profile of the headline figure: raw or normalized
    figure            VARCHAR NOT NULL,   -- the headline figure's column, e.g. normalized_contaminated_test_pct
    method            VARCHAR NOT NULL,   -- the figure's method: 'exact-2026'
    method_version    INTEGER NOT NULL,
    contaminated_pct  DOUBLE,             -- its worst value over the dataset's configs (%)
    status            VARCHAR NOT NULL,   -- drafted (dry run), posted, skipped or failed
    reason            VARCHAR,            -- why skipped or failed (NULL: drafted or posted)
    discussion_num    INTEGER,            -- the Hub discussion opened, or found already open
    discussion_url    VARCHAR,
    title             VARCHAR NOT NULL,
    message_path      VARCHAR,            -- the dry run's file (NULL: not written)
    tool_version      VARCHAR NOT NULL,
    created_at        TIMESTAMPTZ NOT NULL,
    run_id            VARCHAR
);
