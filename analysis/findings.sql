-- The survey's findings, as SQL over the results store (hubsurvey/store.py).
--
-- How this file is used: analysis/findings.py runs the statements before the first "-- view:"
-- line as they are (helper macros), then turns each "-- view: <name>" block into
--     CREATE OR REPLACE TEMP VIEW <name> AS <block>
-- on the connection it is given. Nothing is written to the DB file: the views live only as long
-- as the connection, so they also work on a read-only connection (`hubsurvey sql` has them).
--
-- UNIT. Every percentage below counts rows of `current_measurements`: one row per
-- (dataset, config, label column) at the newest measured revision of each dataset, exactly as the
-- 2024 LLE survey counted "datasets" (conll2003 counts three times: pos_tags, chunk_tags, ner_tags;
-- its text-only figures repeat in each of those rows).
--
-- NR. A NULL figure is "NR" (not relevant: its split does not exist, or there is no label column
-- for a text+label figure). NR is never counted as 0: it is left out of the denominator.
-- Every table gives its numerator and its denominator beside the percentage.

-- pct(n, d): n out of d as a percentage, 2 decimals; NULL when the denominator is 0.
CREATE OR REPLACE TEMP MACRO pct(n, d) AS round(100.0 * n / nullif(d, 0), 2);

-- published_pct(x): a test_biased value as the published table shows it (rounded to 3 decimals),
-- so that every finding can be recomputed from lle.csv alone.
CREATE OR REPLACE TEMP MACRO published_pct(x) AS round(x, 3);


-- view: findings_overview
-- What was measured, in one row: the counts every other table is a part of.
--   measurement_rows  rows of current_measurements (the unit of every percentage)
--   datasets          distinct dataset ids among them
--   configs           distinct (dataset, config) among them
--   rows_with_label   rows with a label column (text+label figures are not NR)
--   rows_with_train / rows_with_validation   rows whose config has that split
--   crawled_datasets / eligible_datasets / excluded_datasets   from the crawl (datasets table)
--   jobs / jobs_done / jobs_failed                               from the jobs table
SELECT
    (SELECT count(*) FROM current_measurements)                                   AS measurement_rows,
    (SELECT count(DISTINCT dataset_id) FROM current_measurements)                 AS datasets,
    (SELECT count(DISTINCT (dataset_id, config)) FROM current_measurements)       AS configs,
    (SELECT count(label_column) FROM current_measurements)                        AS rows_with_label,
    (SELECT count(rows_train) FROM current_measurements)                          AS rows_with_train,
    (SELECT count(rows_validation) FROM current_measurements)                     AS rows_with_validation,
    (SELECT count(*) FROM datasets)                                               AS crawled_datasets,
    (SELECT count(*) FROM datasets WHERE status = 'eligible')                     AS eligible_datasets,
    (SELECT count(*) FROM datasets WHERE status = 'excluded')                     AS excluded_datasets,
    (SELECT count(*) FROM jobs)                                                   AS jobs,
    (SELECT count(*) FROM jobs WHERE status = 'done')                             AS jobs_done,
    (SELECT count(*) FROM jobs WHERE status = 'failed')                           AS jobs_failed,
    (SELECT min(measured_at) FROM current_measurements)                           AS first_measured_at,
    (SELECT max(measured_at) FROM current_measurements)                           AS last_measured_at,
    (SELECT string_agg(DISTINCT method || ' v' || method_version, ', ' ORDER BY method || ' v' || method_version)
       FROM current_measurements)                                                 AS methods,
    (SELECT string_agg(DISTINCT tool_version, ', ' ORDER BY tool_version) FROM current_measurements) AS tool_versions;


-- view: findings_splits
-- Aggregate findings 1 and 2 of the survey, one row per (split, key):
--   key = 'text' (text key) or 'text_and_label' (text + label key).
--   with_leak / leak_denominator / pct_with_leak:
--     train:      rows with <key>_leaks_train_wrt_test > 0
--                 over rows where <key>_leaks_train_wrt_test is not NR;
--     validation: rows with <key>_leaks_validation_wrt_test > 0
--                 over rows where <key>_leaks_validation_wrt_test is not NR;
--     test:       rows whose test split shares at least one key with train or validation
--                 (<key>_leaks_train_wrt_test + <key>_leaks_validation_wrt_test > 0, an NR term
--                 taken as 0) over rows where at least one of the two is not NR.
--   with_duplicate / duplicate_denominator / pct_with_duplicate:
--     rows with <key>_duplication_<split> > 0 over rows where it is not NR.
WITH figures AS (
    SELECT 'train' AS split, 'text' AS key,
           text_leaks_train_wrt_test AS leaks, text_duplication_train AS duplicates
    FROM current_measurements
    UNION ALL
    SELECT 'train', 'text_and_label',
           text_and_label_leaks_train_wrt_test, text_and_label_duplication_train
    FROM current_measurements
    UNION ALL
    SELECT 'validation', 'text',
           text_leaks_validation_wrt_test, text_duplication_validation
    FROM current_measurements
    UNION ALL
    SELECT 'validation', 'text_and_label',
           text_and_label_leaks_validation_wrt_test, text_and_label_duplication_validation
    FROM current_measurements
    UNION ALL
    SELECT 'test', 'text',
           CASE WHEN text_leaks_train_wrt_test IS NULL AND text_leaks_validation_wrt_test IS NULL THEN NULL
                ELSE coalesce(text_leaks_train_wrt_test, 0) + coalesce(text_leaks_validation_wrt_test, 0) END,
           text_duplication_test
    FROM current_measurements
    UNION ALL
    SELECT 'test', 'text_and_label',
           CASE WHEN text_and_label_leaks_train_wrt_test IS NULL AND text_and_label_leaks_validation_wrt_test IS NULL THEN NULL
                ELSE coalesce(text_and_label_leaks_train_wrt_test, 0) + coalesce(text_and_label_leaks_validation_wrt_test, 0) END,
           text_and_label_duplication_test
    FROM current_measurements
),
-- every (split, key) appears, even over an empty store
grid(split, key, ord) AS (
    VALUES ('train', 'text', 1), ('train', 'text_and_label', 2),
           ('validation', 'text', 3), ('validation', 'text_and_label', 4),
           ('test', 'text', 5), ('test', 'text_and_label', 6)
)
SELECT
    grid.split,
    grid.key,
    count(*) FILTER (WHERE figures.leaks > 0)                                     AS with_leak,
    count(figures.leaks)                                                          AS leak_denominator,
    pct(count(*) FILTER (WHERE figures.leaks > 0), count(figures.leaks))          AS pct_with_leak,
    count(*) FILTER (WHERE figures.duplicates > 0)                                AS with_duplicate,
    count(figures.duplicates)                                                     AS duplicate_denominator,
    pct(count(*) FILTER (WHERE figures.duplicates > 0), count(figures.duplicates)) AS pct_with_duplicate
FROM grid
LEFT JOIN figures ON figures.split = grid.split AND figures.key = grid.key
GROUP BY grid.split, grid.key, grid.ord
ORDER BY grid.ord;


-- view: findings_test_bias
-- Aggregate finding 3 (test-bias granularity), one row per threshold (in %):
--   text_at_least / text_denominator / text_pct:
--     rows with text_test_biased >= threshold (the value as published, rounded to 3 decimals)
--     over rows where text_test_biased is not NR;
--   text_and_label_*: the same for text_and_label_test_biased.
-- test_biased is defined in the method registry (hubsurvey/core/figures.py).
WITH thresholds AS (
    SELECT unnest([0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0,
                   1.5, 2.0, 2.5, 3.0, 4.0, 5.0,
                   10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0]::DOUBLE[]) AS threshold_pct
),
biased AS (
    SELECT published_pct(text_test_biased)           AS text_value,
           published_pct(text_and_label_test_biased) AS text_and_label_value
    FROM current_measurements
)
SELECT
    t.threshold_pct,
    count(*) FILTER (WHERE b.text_value >= t.threshold_pct)                                   AS text_at_least,
    count(b.text_value)                                                                      AS text_denominator,
    pct(count(*) FILTER (WHERE b.text_value >= t.threshold_pct), count(b.text_value))         AS text_pct,
    count(*) FILTER (WHERE b.text_and_label_value >= t.threshold_pct)                         AS text_and_label_at_least,
    count(b.text_and_label_value)                                                            AS text_and_label_denominator,
    pct(count(*) FILTER (WHERE b.text_and_label_value >= t.threshold_pct),
        count(b.text_and_label_value))                                                       AS text_and_label_pct
FROM thresholds t
LEFT JOIN biased b ON true
GROUP BY t.threshold_pct
ORDER BY t.threshold_pct;


-- view: findings_annotation
-- Aggregate finding 4, one row: rows with a possible annotation problem.
--   with_difference / denominator / pct_with_difference:
--     rows with difference_annotation > 0 over rows where difference_annotation is not NULL
--     (it is NULL, i.e. NR, when there is no label column).
-- difference_annotation = |(text_leaks_train - text_and_label_leaks_train)
--                          + (text_leaks_validation - text_and_label_leaks_validation)|, NR terms as 0:
-- a text that leaks but whose text+label pair does not, i.e. the same text with another label.
SELECT
    count(*) FILTER (WHERE difference_annotation > 0)                                       AS with_difference,
    count(difference_annotation)                                                            AS denominator,
    pct(count(*) FILTER (WHERE difference_annotation > 0), count(difference_annotation))    AS pct_with_difference
FROM current_measurements;


-- view: findings_top_test_biased
-- Rows ranked by text_test_biased, highest first (ties: by dataset_name, then id, config, label).
--   rank        1 = most biased; findings.py keeps rank <= N ("top N")
--   rows_ranked the denominator: rows where text_test_biased is not NR
-- test_biased columns are percents rounded to 3 decimals, as published.
SELECT
    row_number() OVER (ORDER BY text_test_biased DESC, dataset_name, dataset_id, config, label_column NULLS FIRST) AS rank,
    dataset_name,
    dataset_id,
    config,
    label_column,
    rows_test,
    text_leaks_train_wrt_test,
    text_duplication_test,
    published_pct(text_test_biased)           AS text_test_biased,
    published_pct(text_and_label_test_biased) AS text_and_label_test_biased,
    count(*) OVER ()                          AS rows_ranked
FROM current_measurements
WHERE text_test_biased IS NOT NULL
ORDER BY rank;


-- view: findings_by_task_category
-- The findings split by the dataset's task category: its `task_categories:<name>` Hub tags from
-- the crawl (datasets.tags). A dataset with several categories counts once in each, so the rows
-- add up to more than the total. 'unknown': no crawl record for the dataset (e.g. a one-off
-- audit of a folder); 'untagged': crawled, but without any task_categories tag.
--   rows / datasets                       measurement rows / distinct datasets in the category
--   with_text_test_leak / text_test_leak_denominator / pct_with_text_test_leak:
--       rows whose test split shares a text with train or validation (as in findings_splits,
--       split 'test', key 'text') over rows where that is not NR
--   with_text_test_duplicate / text_test_duplicate_denominator / pct_with_text_test_duplicate:
--       rows with text_duplication_test > 0 over rows where it is not NR
--   median_text_test_biased               median of text_test_biased (%, 3 decimals) over those rows
WITH task_tags AS (
    SELECT DISTINCT dataset_id, regexp_extract(tag, '^task_categories:(.+)$', 1) AS task_category
    FROM (SELECT dataset_id, unnest(tags) AS tag FROM datasets)
    WHERE tag LIKE 'task_categories:%'
),
tasked AS (
    SELECT
        coalesce(task_tags.task_category,
                 CASE WHEN datasets.dataset_id IS NULL THEN 'unknown' ELSE 'untagged' END) AS task_category,
        m.dataset_id,
        CASE WHEN m.text_leaks_train_wrt_test IS NULL AND m.text_leaks_validation_wrt_test IS NULL THEN NULL
             ELSE coalesce(m.text_leaks_train_wrt_test, 0) + coalesce(m.text_leaks_validation_wrt_test, 0) END
                                AS text_test_leaks,
        m.text_duplication_test AS text_duplication_test,
        m.text_test_biased      AS text_test_biased
    FROM current_measurements m
    LEFT JOIN datasets ON datasets.dataset_id = m.dataset_id
    LEFT JOIN task_tags ON task_tags.dataset_id = m.dataset_id
)
SELECT
    task_category,
    count(*)                                                                             AS rows,
    count(DISTINCT dataset_id)                                                           AS datasets,
    count(*) FILTER (WHERE text_test_leaks > 0)                                          AS with_text_test_leak,
    count(text_test_leaks)                                                               AS text_test_leak_denominator,
    pct(count(*) FILTER (WHERE text_test_leaks > 0), count(text_test_leaks))             AS pct_with_text_test_leak,
    count(*) FILTER (WHERE text_duplication_test > 0)                                    AS with_text_test_duplicate,
    count(text_duplication_test)                                                         AS text_test_duplicate_denominator,
    pct(count(*) FILTER (WHERE text_duplication_test > 0), count(text_duplication_test)) AS pct_with_text_test_duplicate,
    published_pct(median(text_test_biased))                                              AS median_text_test_biased
FROM tasked
GROUP BY task_category
ORDER BY rows DESC, task_category;


-- view: findings_failures
-- What was not measured, and why, one row per (kind, reason):
--   kind 'failed job':       jobs with status 'failed', by error_class
--                            (count = failed jobs, i.e. (dataset, revision, config));
--                            denominator = every job in the jobs table;
--   kind 'excluded dataset': crawled datasets with status 'excluded', by exclusion_reason;
--                            denominator = every dataset in the datasets table.
--   datasets                 distinct datasets behind the count
SELECT kind, reason, count, datasets, denominator, pct(count, denominator) AS pct
FROM (
    SELECT 'failed job' AS kind, coalesce(error_class, 'unknown') AS reason,
           count(*) AS count, count(DISTINCT dataset_id) AS datasets,
           (SELECT count(*) FROM jobs) AS denominator
    FROM jobs
    WHERE status = 'failed'
    GROUP BY ALL
    UNION ALL
    SELECT 'excluded dataset', coalesce(exclusion_reason, 'unknown'),
           count(*), count(DISTINCT dataset_id),
           (SELECT count(*) FROM datasets)
    FROM datasets
    WHERE status = 'excluded'
    GROUP BY ALL
)
ORDER BY kind DESC, count DESC, reason;



-- view: findings_verdict_rules
-- The verdict rule of a dataset, its thresholds written once (here): findings_dataset_verdict
-- applies it and the report prints its `rule` column. A dataset gets the first rule, in `ord`
-- order, that it meets:
--   clean       0 text leaks from train or validation to test and 0 text duplicates in test,
--               in every config (NR taken as 0)
--   minor       not clean, worst text test_biased < 1 %
--   caution     worst text test_biased >= 1 % and < 5 %
--   unreliable  worst text test_biased >= 5 %
-- worst text test_biased: the highest text_test_biased (as published, 3 decimals) among the
-- dataset's rows. The text key is used: it is the stricter one (a text+label leak or duplicate is
-- also a text one). at_least_pct / below_pct: the rule's bounds on it (NULL: no bound).
WITH thresholds(minor_below, caution_below) AS (VALUES (1.0, 5.0))
SELECT ord, verdict, at_least_pct, below_pct,
       CASE WHEN verdict = 'clean'
            THEN '0 text leaks from train or validation to test and 0 text duplicates in test'
            ELSE 'not clean, worst text test_biased'
                 || coalesce(' ≥ ' || printf('%g', at_least_pct) || '%', '')
                 || CASE WHEN at_least_pct IS NOT NULL AND below_pct IS NOT NULL THEN ' and' ELSE '' END
                 || coalesce(' below ' || printf('%g', below_pct) || '%', '') END AS rule
FROM (
    SELECT 1 AS ord, 'clean' AS verdict, NULL::DOUBLE AS at_least_pct, NULL::DOUBLE AS below_pct FROM thresholds
    UNION ALL SELECT 2, 'minor', NULL, minor_below FROM thresholds
    UNION ALL SELECT 3, 'caution', minor_below, caution_below FROM thresholds
    UNION ALL SELECT 4, 'unreliable', caution_below, NULL FROM thresholds
)
ORDER BY ord;


-- view: findings_dataset_verdict
-- "Can I trust this dataset?": one row per dataset of current_measurements, with its verdict
-- (the rule of findings_verdict_rules it meets). Per dataset, over its configs:
--   configs / rows                 distinct configs / result rows (label columns) measured
--   rows_test                      test rows, summed over configs
--   worst_text_test_biased         highest text_test_biased (%, 3 decimals as published)
--   worst_config                   the config with that value (ties: first by name)
--   text_leaks_train_wrt_test      text leaks train -> test, summed over configs
--   text_leaks_validation_wrt_test text leaks validation -> test, summed over configs (NULL: no
--                                  config has a validation split)
--   text_duplication_test          text duplicates in test, summed over configs
-- A config's text figures repeat in each of its label-column rows: they are taken once per config.
WITH per_config AS (
    SELECT dataset_id, config,
           count(*)                              AS rows,
           max(rows_test)                        AS rows_test,
           max(published_pct(text_test_biased))  AS text_test_biased,
           max(text_leaks_train_wrt_test)        AS text_leaks_train_wrt_test,
           max(text_leaks_validation_wrt_test)   AS text_leaks_validation_wrt_test,
           max(text_duplication_test)            AS text_duplication_test
    FROM current_measurements
    GROUP BY dataset_id, config
),
per_dataset AS (
    SELECT dataset_id,
           count(*)                                                              AS configs,
           sum(rows)::BIGINT                                                     AS rows,
           sum(rows_test)::BIGINT                                                AS rows_test,
           max(text_test_biased)                                                 AS worst_text_test_biased,
           first(config ORDER BY text_test_biased DESC NULLS LAST, config)       AS worst_config,
           sum(text_leaks_train_wrt_test)::BIGINT                                AS text_leaks_train_wrt_test,
           sum(text_leaks_validation_wrt_test)::BIGINT                           AS text_leaks_validation_wrt_test,
           sum(text_duplication_test)::BIGINT                                    AS text_duplication_test
    FROM per_config
    GROUP BY dataset_id
)
SELECT d.*,
       CASE WHEN coalesce(d.text_leaks_train_wrt_test, 0) + coalesce(d.text_leaks_validation_wrt_test, 0)
                 + coalesce(d.text_duplication_test, 0) = 0
            THEN 'clean'
            ELSE (SELECT r.verdict FROM findings_verdict_rules r
                  WHERE r.verdict <> 'clean'
                    AND (r.at_least_pct IS NULL OR coalesce(d.worst_text_test_biased, 0) >= r.at_least_pct)
                    AND (r.below_pct IS NULL OR coalesce(d.worst_text_test_biased, 0) < r.below_pct)
                  ORDER BY r.ord LIMIT 1) END AS verdict
FROM per_dataset d
ORDER BY d.worst_text_test_biased DESC NULLS LAST, d.dataset_id;


-- view: findings_mixed_revisions
-- Datasets partially re-measured: the current rows of one dataset come from more than one revision.
-- current_measurements keeps each (dataset, config) at its own newest measured revision, so when a
-- re-measure at a new sha stored only some configs (a config failed at the new sha, --max-hours cut
-- the run, the run was killed, `audit --config`), the other configs keep their older rows. One row
-- per such dataset:
--   revisions            distinct revision_sha among the dataset's current rows (> 1)
--   configs              distinct configs among them
--   newest_revision      the revision of the dataset's most recently measured row
--   stale_configs        the configs not at newest_revision (comma-separated, sorted)
--   oldest_measured_at / newest_measured_at   the measured_at range of the dataset's current rows
WITH per_dataset AS (
    SELECT dataset_id,
           count(DISTINCT revision_sha)                                   AS revisions,
           count(DISTINCT config)                                         AS configs,
           arg_max(revision_sha, (measured_at, revision_sha))             AS newest_revision,
           min(measured_at)                                               AS oldest_measured_at,
           max(measured_at)                                               AS newest_measured_at
    FROM current_measurements
    GROUP BY dataset_id
    HAVING count(DISTINCT revision_sha) > 1
)
SELECT d.dataset_id, d.revisions, d.configs, d.newest_revision,
       (SELECT string_agg(DISTINCT c.config, ', ' ORDER BY c.config) FROM current_measurements c
        WHERE c.dataset_id = d.dataset_id AND c.revision_sha <> d.newest_revision) AS stale_configs,
       d.oldest_measured_at, d.newest_measured_at
FROM per_dataset d
ORDER BY d.dataset_id;
