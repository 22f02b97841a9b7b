-- The survey's findings, as SQL over the results store (hubsurvey/store.py).
--
-- How this file is used: analysis/findings.py first defines the method names as macros from the
-- figure registry (lle_method(), exact_method(), near_method(): hubsurvey/core/figures.py
-- LLE_METHOD, EXACT_METHOD, NEAR_METHOD; this file never spells them), runs the statements before
-- the first "-- view:" line as they are (helper macros), then turns each "-- view: <name>" block into
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

-- exact_measured(methods): the row was measured by the exact method, exact_method() (EXACT_METHOD in
-- hubsurvey/core/figures.py): its `methods` JSON names it. A row measured before that method has
-- methods NULL (or without it): its exact figures are NULL because they were NOT
-- measured, not because they are NR, so every exact finding leaves such rows out.
CREATE OR REPLACE TEMP MACRO exact_measured(methods) AS
    coalesce(json_exists(methods, '$."' || exact_method() || '"'), false);

-- near_measured(methods, near): the row was measured by the near-duplicate method, near_method()
-- (NEAR_METHOD in hubsurvey/core/figures.py): its `methods` JSON names it, and its `near` JSON (how
-- it was measured) exists and does not say it was not: status 'not measured', or 'NR: ...' (the
-- normalized text hash collided, so no near figure was computed). A row measured before that method
-- (or with --no-near) has its near figures NULL because they were NOT measured: every near finding
-- leaves it out of its denominator.
CREATE OR REPLACE TEMP MACRO near_measured(methods, near) AS
    coalesce(json_exists(methods, '$."' || near_method() || '"'), false)
    AND near IS NOT NULL
    AND coalesce(NOT (json_extract_string(near, '$.status') = 'not measured'
                      OR starts_with(json_extract_string(near, '$.status'), 'NR')), true);


-- listing_counts(listings): one row over a table of model listings (score_lookups, exposure_lookups)
-- of the surveyed datasets at their current revision: the datasets listed, failed and capped, the
-- capped ones by name, and the caps.
CREATE OR REPLACE TEMP MACRO listing_counts(listings) AS TABLE
    SELECT count(*) FILTER (WHERE status = 'listed')                                   AS datasets_listed,
           count(*) FILTER (WHERE status = 'failed')                                   AS datasets_failed,
           count(*) FILTER (WHERE capped)                                              AS datasets_capped,
           string_agg(dataset_id, ', ' ORDER BY dataset_id) FILTER (WHERE capped)      AS capped_datasets,
           string_agg(DISTINCT max_models::VARCHAR, '/')                               AS max_models
    FROM query_table(listings) AS l
    WHERE EXISTS (SELECT 1 FROM current_measurements m WHERE m.dataset_id = l.dataset_id AND m.revision_sha = l.revision_sha);


-- view: findings_overview
-- What was measured, in one row: the counts every other table is a part of.
--   measurement_rows  rows of current_measurements (the unit of every percentage)
--   datasets          distinct dataset ids among them
--   configs           distinct (dataset, config) among them
--   rows_with_label   rows with a label column (text+label figures are not NR)
--   rows_with_train / rows_with_validation   rows whose config has that split
--   crawled_datasets / eligible_datasets / excluded_datasets   from the crawl (datasets table)
--   jobs / jobs_done / jobs_failed                               from the jobs table
--   methods           every method (with its version) whose figures the rows hold: the row's
--                     `method` and the keys of its `methods` JSON
--   rows_exact / datasets_exact   rows (datasets with at least one row) measured by exact-2026:
--                     the only rows the exact findings count (see exact_measured)
--   rows_near / datasets_near     rows (datasets with at least one row) measured by near-2026:
--                     the only rows the near-duplicate findings count (see near_measured)
--   near_thresholds   the thresholds tau those rows were measured at (their `near` JSON), e.g. '0.8'
--   near_shingles     the shingles they were cut into (their `near` JSON), e.g. 'char-5'
WITH m AS (
    -- one aggregate per table, not a subquery per count: each subquery expanded current_measurements
    -- again, and DuckDB's planner took 0.15-0.3 s for this one row, on an empty store too
    SELECT count(*)                                                                      AS measurement_rows,
           count(DISTINCT dataset_id)                                                    AS datasets,
           count(DISTINCT (dataset_id, config))                                          AS configs,
           count(label_column)                                                           AS rows_with_label,
           count(rows_train)                                                             AS rows_with_train,
           count(rows_validation)                                                        AS rows_with_validation,
           min(measured_at)                                                              AS first_measured_at,
           max(measured_at)                                                              AS last_measured_at,
           list_distinct(flatten(list(list_concat([method || ' v' || method_version],
               list_transform(json_keys(methods), lambda k: k || ' v' || (methods ->> k)))))) AS method_list,
           count(*) FILTER (WHERE exact_measured(methods))                               AS rows_exact,
           count(DISTINCT dataset_id) FILTER (WHERE exact_measured(methods))             AS datasets_exact,
           count(*) FILTER (WHERE near_measured(methods, near))                          AS rows_near,
           count(DISTINCT dataset_id) FILTER (WHERE near_measured(methods, near))        AS datasets_near,
           string_agg(DISTINCT printf('%g', json_extract(near, '$.threshold')::DOUBLE), ', '
                      ORDER BY printf('%g', json_extract(near, '$.threshold')::DOUBLE))
               FILTER (WHERE near_measured(methods, near))                               AS near_thresholds,
           string_agg(DISTINCT json_extract_string(near, '$.shingle'), ', ' ORDER BY json_extract_string(near, '$.shingle'))
               FILTER (WHERE near_measured(methods, near))                               AS near_shingles,
           string_agg(DISTINCT tool_version, ', ' ORDER BY tool_version)                 AS tool_versions
    FROM current_measurements
), d AS (
    SELECT count(*) AS crawled_datasets,
           count(*) FILTER (WHERE status = 'eligible') AS eligible_datasets,
           count(*) FILTER (WHERE status = 'excluded') AS excluded_datasets
    FROM datasets
), j AS (
    SELECT count(*) AS jobs,
           count(*) FILTER (WHERE status = 'done') AS jobs_done,
           count(*) FILTER (WHERE status = 'failed') AS jobs_failed
    FROM jobs
)
SELECT m.measurement_rows, m.datasets, m.configs, m.rows_with_label, m.rows_with_train, m.rows_with_validation,
       d.crawled_datasets, d.eligible_datasets, d.excluded_datasets, j.jobs, j.jobs_done, j.jobs_failed,
       m.first_measured_at, m.last_measured_at,
       nullif(array_to_string(list_sort(m.method_list), ', '), '') AS methods,
       m.rows_exact, m.datasets_exact, m.rows_near, m.datasets_near, m.near_thresholds, m.near_shingles, m.tool_versions
FROM m, d, j;


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



-- view: findings_exact_configs
-- The exact figures (method exact-2026, hubsurvey/core/figures.py) of every (dataset, config) of
-- current_measurements measured by that method, one row per config. Every exact finding below reads
-- this view, so ONLY CONFIGS MEASURED BY exact-2026 COUNT in their denominators: a row measured
-- before the method existed (methods NULL, or without "exact-2026") has NULL exact figures because
-- they were not measured, not because they are NR, and is left out here.
-- The text figures repeat in each label-column row of a config: they are taken once (max of equal
-- values). The label figures differ per label column: the config keeps its worst label column (max).
-- Per profile p (raw: exact values, as LLE compares them; normalized: NFKC, case-folded, whitespace
-- collapsed and stripped; see the card or docs/method.md):
--   label_columns                       the config's label columns (0: none; label figures NR)
--   rows_train / rows_validation / rows_test   split sizes (NULL: no such split)
--   p_test_rows_contaminated            test rows in train or validation, or repeating an earlier
--                                       test row, each counted once
--   p_contaminated_test_pct             = p_test_rows_contaminated / rows_test × 100 (stored unrounded)
--   p_validation_rows_in_train          validation rows whose text occurs in train
--                                       (NULL = NR: no train or no validation split)
--   p_validation_rows_in_train_pct      = p_validation_rows_in_train / rows_validation × 100
--   p_test_rows_in_train_conflicting_label  test rows whose text occurs in train, never with their
--                                       label (worst label column; NULL = NR: no label or no train)
--   p_conflicting_texts                 distinct texts with more than one label within one split,
--                                       summed over train, validation and test (NR splits as 0;
--                                       worst label column; NULL = NR: no label column)
SELECT
    dataset_id,
    config,
    count(label_column)                                        AS label_columns,
    max(rows_train)                                            AS rows_train,
    max(rows_validation)                                       AS rows_validation,
    max(rows_test)                                             AS rows_test,
    max(raw_test_rows_contaminated)                            AS raw_test_rows_contaminated,
    max(raw_contaminated_test_pct)                             AS raw_contaminated_test_pct,
    max(normalized_test_rows_contaminated)                     AS normalized_test_rows_contaminated,
    max(normalized_contaminated_test_pct)                      AS normalized_contaminated_test_pct,
    max(raw_validation_rows_in_train)                          AS raw_validation_rows_in_train,
    max(raw_validation_rows_in_train_pct)                      AS raw_validation_rows_in_train_pct,
    max(normalized_validation_rows_in_train)                   AS normalized_validation_rows_in_train,
    max(normalized_validation_rows_in_train_pct)               AS normalized_validation_rows_in_train_pct,
    max(raw_test_rows_in_train_conflicting_label)              AS raw_test_rows_in_train_conflicting_label,
    max(normalized_test_rows_in_train_conflicting_label)       AS normalized_test_rows_in_train_conflicting_label,
    max(coalesce(raw_conflicting_texts_train, 0) + coalesce(raw_conflicting_texts_validation, 0)
        + raw_conflicting_texts_test)                          AS raw_conflicting_texts,
    max(coalesce(normalized_conflicting_texts_train, 0) + coalesce(normalized_conflicting_texts_validation, 0)
        + normalized_conflicting_texts_test)                   AS normalized_conflicting_texts
FROM current_measurements
WHERE exact_measured(methods)
GROUP BY dataset_id, config
ORDER BY dataset_id, config;


-- view: findings_verdict_rules
-- The verdict rules of a dataset, their thresholds written once (here): findings_dataset_verdict
-- applies them and the report prints their `rule` column. A dataset is judged on one basis, the
-- first of these that measured every config of the dataset, and gets the first rule of that basis,
-- in `ord` order, that it meets:
--   basis 'near-2026' (every config of the dataset was measured by the near-duplicate method):
--     measure: worst near_contaminated_test_pct = the highest near_contaminated_test_pct among the
--     dataset's configs (%, rounded to 3 decimals as published). It counts test rows, each once:
--     rows with a train or validation row at Jaccard >= tau (the threshold the row was measured
--     at, 0.8 by default), or with such a test row at an earlier position. An exact (normalized)
--     match has Jaccard 1, so this measure is never below the exact one.
--       clean       0 near-contaminated test rows in every config
--       minor       not clean, worst near_contaminated_test_pct < 1 %
--       caution     >= 1 % and < 5 %
--       unreliable  >= 5 %
--   basis 'exact-2026' (the first fallback: a config was not measured by the near method, so its
--     near figures are NULL, not 0; every config was measured by the exact method):
--     measure: worst normalized contaminated_test_pct = the highest normalized_contaminated_test_pct
--     among the dataset's configs (%, rounded to 3 decimals as published). It counts test rows, each
--     once: rows found in train or validation, or repeating an earlier test row, under the
--     normalized key profile (which finds every raw match and more). Validation leaks count.
--       clean       0 contaminated test rows (normalized profile) in every config
--       minor / caution / unreliable   as above, on this measure
--   basis 'lle-2024' (the last fallback: a config of the dataset was measured before the exact
--     method, so its exact figures are NULL, not 0, and cannot clear it): the LLE rule, as before:
--       clean       0 text leaks from train or validation to test and 0 text duplicates in test,
--                   in every config (NR taken as 0)
--       minor / caution / unreliable   worst text test_biased < 1 % / >= 1 % and < 5 % / >= 5 %,
--                   worst text test_biased being the highest text_test_biased (3 decimals) of its
--                   rows (the text key: the stricter one).
-- at_least_pct / below_pct: the rule's bounds on the basis' measure (NULL: no bound). Every basis
-- shares the thresholds (minor below 1 %, caution below 5 %: hubsurvey/core/history.py declares them).
WITH thresholds(minor_below, caution_below) AS (VALUES (verdict_minor_below(), verdict_caution_below())),
bases(basis, basis_ord, measure, clean_rule) AS (
    VALUES (near_method(), 1, 'worst near_contaminated_test_pct',
            '0 near-contaminated test rows (a train or validation row at Jaccard ≥ τ, or a test row at an earlier '
            || 'position at Jaccard ≥ τ) in every config'),
           (exact_method(), 2, 'worst normalized contaminated_test_pct',
            '0 contaminated test rows (normalized profile: in train or validation, or repeated in test) in every config'),
           (lle_method(), 3, 'worst text test_biased',
            '0 text leaks from train or validation to test and 0 text duplicates in test')
),
grades AS (
    SELECT 1 AS ord, 'clean' AS verdict, NULL::DOUBLE AS at_least_pct, NULL::DOUBLE AS below_pct FROM thresholds
    UNION ALL SELECT 2, 'minor', NULL, minor_below FROM thresholds
    UNION ALL SELECT 3, 'caution', minor_below, caution_below FROM thresholds
    UNION ALL SELECT 4, 'unreliable', caution_below, NULL FROM thresholds
)
SELECT b.basis, g.ord, g.verdict, b.measure, g.at_least_pct, g.below_pct,
       CASE WHEN g.verdict = 'clean'
            THEN b.clean_rule
            ELSE 'not clean, ' || b.measure
                 || coalesce(' ≥ ' || printf('%g', g.at_least_pct) || '%', '')
                 || CASE WHEN g.at_least_pct IS NOT NULL AND g.below_pct IS NOT NULL THEN ' and' ELSE '' END
                 || coalesce(' below ' || printf('%g', g.below_pct) || '%', '') END AS rule
FROM bases b CROSS JOIN grades g
ORDER BY b.basis_ord, g.ord;


-- view: findings_dataset_verdict
-- "Can I trust this dataset?": one row per dataset of current_measurements, with its verdict (the
-- rule of findings_verdict_rules it meets) and the basis it was judged on:
--   verdict_basis                  'near-2026' when every config of the dataset was measured by the
--                                  near-duplicate method (near_measured); else 'exact-2026' when every
--                                  config was measured by the exact method; else 'lle-2024' (the LLE
--                                  rule). NULL figures were not measured and never make a dataset clean.
--   configs / rows                 distinct configs / result rows (label columns) measured
--   configs_near                   configs measured by near-2026 (= configs on the near basis)
--   configs_exact                  configs measured by exact-2026 (= configs on the exact basis)
--   rows_test                      test rows, summed over configs
--   worst_near_contaminated_test_pct
--                                  the highest near_contaminated_test_pct among the configs measured
--                                  by near-2026 (%, 3 decimals; NULL: none was)
--   near_test_rows_contaminated    near-contaminated test rows (test_rows_near_contaminated), summed
--                                  over those configs
--   worst_near_config              the config with the worst near value (ties: first by name)
--   worst_normalized_contaminated_test_pct / worst_raw_contaminated_test_pct
--                                  the highest <profile>_contaminated_test_pct among the configs
--                                  measured by exact-2026 (%, 3 decimals; NULL: none was)
--   normalized_test_rows_contaminated / raw_test_rows_contaminated
--                                  contaminated test rows, summed over those configs
--   worst_exact_config             the config with the worst normalized value (ties: first by name)
--   worst_text_test_biased         highest text_test_biased (%, 3 decimals as published), LLE
--   worst_config                   the config with that value (ties: first by name)
--   text_leaks_train_wrt_test      text leaks train -> test, summed over configs
--   text_leaks_validation_wrt_test text leaks validation -> test, summed over configs (NULL: no
--                                  config has a validation split)
--   text_duplication_test          text duplicates in test, summed over configs
-- A config's text figures repeat in each of its label-column rows: they are taken once per config.
-- Worst first: by verdict (unreliable first), then by the measure of the dataset's basis.
WITH per_config AS (
    SELECT dataset_id, config,
           count(*)                                   AS rows,
           bool_and(near_measured(methods, near))     AS near,
           bool_and(exact_measured(methods))          AS exact,
           max(rows_test)                             AS rows_test,
           max(published_pct(near_contaminated_test_pct)) FILTER (WHERE near_measured(methods, near))
                                                      AS near_contaminated_test_pct,
           max(test_rows_near_contaminated) FILTER (WHERE near_measured(methods, near))
                                                      AS test_rows_near_contaminated,
           max(published_pct(text_test_biased))       AS text_test_biased,
           max(text_leaks_train_wrt_test)             AS text_leaks_train_wrt_test,
           max(text_leaks_validation_wrt_test)        AS text_leaks_validation_wrt_test,
           max(text_duplication_test)                 AS text_duplication_test
    FROM current_measurements
    GROUP BY dataset_id, config
),
per_dataset AS (
    SELECT dataset_id,
           CASE WHEN bool_and(near) THEN near_method()
                WHEN bool_and(exact) THEN exact_method()
                ELSE lle_method() END                                            AS verdict_basis,
           count(*)                                                              AS configs,
           count(*) FILTER (WHERE near)                                          AS configs_near,
           count(*) FILTER (WHERE exact)                                         AS configs_exact,
           sum(rows)::BIGINT                                                     AS rows,
           sum(rows_test)::BIGINT                                                AS rows_test,
           max(near_contaminated_test_pct) FILTER (WHERE near)                   AS worst_near_contaminated_test_pct,
           sum(test_rows_near_contaminated) FILTER (WHERE near)::BIGINT          AS near_test_rows_contaminated,
           first(config ORDER BY near_contaminated_test_pct DESC NULLS LAST, config) FILTER (WHERE near)
                                                                                 AS worst_near_config,
           max(text_test_biased)                                                 AS worst_text_test_biased,
           first(config ORDER BY text_test_biased DESC NULLS LAST, config)       AS worst_config,
           sum(text_leaks_train_wrt_test)::BIGINT                                AS text_leaks_train_wrt_test,
           sum(text_leaks_validation_wrt_test)::BIGINT                           AS text_leaks_validation_wrt_test,
           sum(text_duplication_test)::BIGINT                                    AS text_duplication_test
    FROM per_config
    GROUP BY dataset_id
),
exact AS (
    SELECT dataset_id,
           max(published_pct(normalized_contaminated_test_pct))                  AS worst_normalized_contaminated_test_pct,
           max(published_pct(raw_contaminated_test_pct))                         AS worst_raw_contaminated_test_pct,
           sum(normalized_test_rows_contaminated)::BIGINT                        AS normalized_test_rows_contaminated,
           sum(raw_test_rows_contaminated)::BIGINT                               AS raw_test_rows_contaminated,
           first(config ORDER BY normalized_contaminated_test_pct DESC NULLS LAST, config) AS worst_exact_config
    FROM findings_exact_configs
    GROUP BY dataset_id
),
judged AS (
    SELECT d.dataset_id, d.verdict_basis, d.configs, d.configs_near, d.configs_exact, d.rows, d.rows_test,
           d.worst_near_contaminated_test_pct, d.near_test_rows_contaminated, d.worst_near_config,
           e.worst_normalized_contaminated_test_pct, e.worst_raw_contaminated_test_pct,
           e.normalized_test_rows_contaminated, e.raw_test_rows_contaminated, e.worst_exact_config,
           d.worst_text_test_biased, d.worst_config,
           d.text_leaks_train_wrt_test, d.text_leaks_validation_wrt_test, d.text_duplication_test,
           -- the basis' measure, and whether the dataset is clean on that basis
           CASE d.verdict_basis
                WHEN near_method() THEN coalesce(d.worst_near_contaminated_test_pct, 0)
                WHEN exact_method() THEN coalesce(e.worst_normalized_contaminated_test_pct, 0)
                ELSE coalesce(d.worst_text_test_biased, 0) END                  AS measure,
           CASE d.verdict_basis
                WHEN near_method() THEN coalesce(d.near_test_rows_contaminated, 0) = 0
                WHEN exact_method() THEN coalesce(e.normalized_test_rows_contaminated, 0) = 0
                ELSE coalesce(d.text_leaks_train_wrt_test, 0) + coalesce(d.text_leaks_validation_wrt_test, 0)
                     + coalesce(d.text_duplication_test, 0) = 0 END              AS is_clean
    FROM per_dataset d
    LEFT JOIN exact e ON e.dataset_id = d.dataset_id
),
verdicts AS (
    SELECT j.*,
           (SELECT r.ord FROM findings_verdict_rules r
            WHERE r.basis = j.verdict_basis
              AND (r.verdict = 'clean') = j.is_clean
              AND (r.at_least_pct IS NULL OR j.measure >= r.at_least_pct)
              AND (r.below_pct IS NULL OR j.measure < r.below_pct)
            ORDER BY r.ord LIMIT 1) AS verdict_ord
    FROM judged j
)
SELECT v.dataset_id,
       (SELECT r.verdict FROM findings_verdict_rules r WHERE r.basis = v.verdict_basis AND r.ord = v.verdict_ord) AS verdict,
       v.verdict_basis, v.configs, v.configs_near, v.configs_exact, v.rows, v.rows_test,
       v.worst_near_contaminated_test_pct, v.near_test_rows_contaminated, v.worst_near_config,
       v.worst_normalized_contaminated_test_pct, v.worst_raw_contaminated_test_pct,
       v.normalized_test_rows_contaminated, v.raw_test_rows_contaminated, v.worst_exact_config,
       v.worst_text_test_biased, v.worst_config,
       v.text_leaks_train_wrt_test, v.text_leaks_validation_wrt_test, v.text_duplication_test
FROM verdicts v
ORDER BY v.verdict_ord DESC, v.measure DESC, v.dataset_id;


-- view: findings_raw_vs_normalized
-- Raw vs normalized contamination, one row per dataset with at least one config measured by
-- exact-2026 (those configs only; text figures once per config, from findings_exact_configs):
-- what LLE's exact (raw) matching misses that the normalized key profile finds.
--   configs_exact                        configs measured by exact-2026
--   rows_test                            their test rows (the denominator of both percentages)
--   raw_test_rows_contaminated / raw_contaminated_test_pct
--       contaminated test rows under the raw profile, summed over those configs, and as a % of
--       rows_test (pooled over the configs, 2 decimals; the verdict uses the worst config instead)
--   normalized_test_rows_contaminated / normalized_contaminated_test_pct   the same, normalized
--   extra_test_rows                      normalized − raw contaminated test rows (>= 0: a raw match
--                                        is also a normalized one)
--   extra_pct_points                     normalized_contaminated_test_pct − raw_contaminated_test_pct
--                                        (unrounded difference, then rounded to 2 decimals)
-- Most extra rows first.
WITH per_dataset AS (
    SELECT dataset_id,
           count(*)                                     AS configs_exact,
           sum(rows_test)::BIGINT                       AS rows_test,
           sum(raw_test_rows_contaminated)::BIGINT      AS raw_test_rows_contaminated,
           sum(normalized_test_rows_contaminated)::BIGINT AS normalized_test_rows_contaminated
    FROM findings_exact_configs
    GROUP BY dataset_id
)
SELECT dataset_id, configs_exact, rows_test,
       raw_test_rows_contaminated,
       pct(raw_test_rows_contaminated, rows_test)                                  AS raw_contaminated_test_pct,
       normalized_test_rows_contaminated,
       pct(normalized_test_rows_contaminated, rows_test)                           AS normalized_contaminated_test_pct,
       normalized_test_rows_contaminated - raw_test_rows_contaminated              AS extra_test_rows,
       pct(normalized_test_rows_contaminated - raw_test_rows_contaminated, rows_test) AS extra_pct_points
FROM per_dataset
ORDER BY extra_test_rows DESC, normalized_contaminated_test_pct DESC NULLS LAST, dataset_id;


-- view: findings_normalization_gain
-- What exact (raw) matching misses, in one row: the share of datasets whose normalized
-- contamination exceeds their raw one. Unit: a dataset, over its configs measured by exact-2026
-- (findings_raw_vs_normalized); only those datasets are in the denominator.
--   datasets_with_more / datasets / pct_datasets_with_more
--       datasets with normalized_test_rows_contaminated > raw_test_rows_contaminated
--       over datasets with at least one config measured by exact-2026
--   extra_test_rows / test_rows / extra_pct_of_test_rows
--       normalized − raw contaminated test rows, summed over those datasets,
--       over their test rows (pooled: the percentage points gained over all measured test rows)
--   raw_test_rows_contaminated / normalized_test_rows_contaminated   the two totals
--   max_extra_pct_points / max_extra_dataset
--       the largest gain of one dataset in percentage points (findings_raw_vs_normalized's
--       extra_pct_points) and that dataset (ties: first by id); NULL when no dataset gains
--   median_extra_pct_points_of_gainers
--       the median gain in percentage points among the datasets_with_more
SELECT
    count(*) FILTER (WHERE extra_test_rows > 0)                                  AS datasets_with_more,
    count(*)                                                                     AS datasets,
    pct(count(*) FILTER (WHERE extra_test_rows > 0), count(*))                   AS pct_datasets_with_more,
    coalesce(sum(extra_test_rows), 0)::BIGINT                                    AS extra_test_rows,
    coalesce(sum(rows_test), 0)::BIGINT                                          AS test_rows,
    pct(sum(extra_test_rows), sum(rows_test))                                    AS extra_pct_of_test_rows,
    coalesce(sum(raw_test_rows_contaminated), 0)::BIGINT                         AS raw_test_rows_contaminated,
    coalesce(sum(normalized_test_rows_contaminated), 0)::BIGINT                  AS normalized_test_rows_contaminated,
    max(extra_pct_points) FILTER (WHERE extra_test_rows > 0)                     AS max_extra_pct_points,
    first(dataset_id ORDER BY extra_pct_points DESC, dataset_id) FILTER (WHERE extra_test_rows > 0) AS max_extra_dataset,
    median(extra_pct_points) FILTER (WHERE extra_test_rows > 0)                  AS median_extra_pct_points_of_gainers
FROM findings_raw_vs_normalized;


-- view: findings_label_conflicts
-- The share of datasets with exact label conflicts, one row per key profile (raw, then normalized;
-- the label is always compared exactly, a sequence label as a whole). Unit: a dataset, over its
-- configs measured by exact-2026 that have a label column (findings_exact_configs; label figures
-- are NR without one). A dataset has a conflict when one of its label columns has:
--   test_train: a test row whose text occurs in train but never with its label
--               (<profile>_test_rows_in_train_conflicting_label > 0), or
--   within:     a text with more than one label within train, validation or test
--               (<profile>_conflicting_texts_<split> > 0).
--   with_conflict / datasets / pct_with_conflict     either kind, over datasets with a label column
--                                                    measured by exact-2026
--   with_test_train_conflict / pct_with_test_train_conflict   the first kind only (same denominator)
--   with_within_split_conflict / pct_with_within_split_conflict   the second kind only
--   test_rows_conflicting     test rows in train with another label, summed over the datasets
--                             (per config its worst label column)
WITH per_dataset AS (
    SELECT dataset_id,
           max(raw_test_rows_in_train_conflicting_label)        AS raw_test_train,
           max(raw_conflicting_texts)                           AS raw_within,
           sum(raw_test_rows_in_train_conflicting_label)        AS raw_rows,
           max(normalized_test_rows_in_train_conflicting_label) AS normalized_test_train,
           max(normalized_conflicting_texts)                    AS normalized_within,
           sum(normalized_test_rows_in_train_conflicting_label) AS normalized_rows
    FROM findings_exact_configs
    WHERE label_columns > 0
    GROUP BY dataset_id
),
profiles AS (
    SELECT 1 AS ord, 'raw' AS profile, raw_test_train AS test_train, raw_within AS within, raw_rows AS test_rows
    FROM per_dataset
    UNION ALL
    SELECT 2, 'normalized', normalized_test_train, normalized_within, normalized_rows FROM per_dataset
),
grid(ord, profile) AS (VALUES (1, 'raw'), (2, 'normalized'))
SELECT
    grid.profile,
    count(p.profile) FILTER (WHERE p.test_train > 0 OR p.within > 0)                     AS with_conflict,
    count(p.profile)                                                                     AS datasets,
    pct(count(p.profile) FILTER (WHERE p.test_train > 0 OR p.within > 0), count(p.profile)) AS pct_with_conflict,
    count(p.profile) FILTER (WHERE p.test_train > 0)                                     AS with_test_train_conflict,
    pct(count(p.profile) FILTER (WHERE p.test_train > 0), count(p.profile))              AS pct_with_test_train_conflict,
    count(p.profile) FILTER (WHERE p.within > 0)                                         AS with_within_split_conflict,
    pct(count(p.profile) FILTER (WHERE p.within > 0), count(p.profile))                  AS pct_with_within_split_conflict,
    coalesce(sum(p.test_rows), 0)::BIGINT                                                AS test_rows_conflicting
FROM grid
LEFT JOIN profiles p ON p.ord = grid.ord
GROUP BY grid.ord, grid.profile
ORDER BY grid.ord;


-- view: findings_validation_leaks
-- The share of datasets with train↔validation leaks (which LLE does not measure), one row per key
-- profile (raw, then normalized). Unit: a dataset, over its configs measured by exact-2026 that have
-- both a train and a validation split (<profile>_validation_rows_in_train not NR).
--   with_leak / datasets / pct_with_leak
--       datasets with <profile>_validation_rows_in_train > 0 (summed over those configs)
--       over datasets with both splits measured by exact-2026
--   validation_rows_in_train / validation_rows / pct_validation_rows_in_train
--       validation rows whose text occurs in train, summed over those datasets,
--       over their validation rows (pooled)
WITH per_dataset AS (
    SELECT dataset_id,
           sum(rows_validation)                     AS rows_validation,
           sum(raw_validation_rows_in_train)        AS raw_leaks,
           sum(normalized_validation_rows_in_train) AS normalized_leaks
    FROM findings_exact_configs
    WHERE raw_validation_rows_in_train IS NOT NULL
    GROUP BY dataset_id
),
profiles AS (
    SELECT 1 AS ord, 'raw' AS profile, raw_leaks AS leaks, rows_validation FROM per_dataset
    UNION ALL
    SELECT 2, 'normalized', normalized_leaks, rows_validation FROM per_dataset
),
grid(ord, profile) AS (VALUES (1, 'raw'), (2, 'normalized'))
SELECT
    grid.profile,
    count(p.leaks) FILTER (WHERE p.leaks > 0)                         AS with_leak,
    count(p.leaks)                                                    AS datasets,
    pct(count(p.leaks) FILTER (WHERE p.leaks > 0), count(p.leaks))    AS pct_with_leak,
    coalesce(sum(p.leaks), 0)::BIGINT                                 AS validation_rows_in_train,
    coalesce(sum(p.rows_validation), 0)::BIGINT                       AS validation_rows,
    pct(sum(p.leaks), sum(p.rows_validation))                         AS pct_validation_rows_in_train
FROM grid
LEFT JOIN profiles p ON p.ord = grid.ord
GROUP BY grid.ord, grid.profile
ORDER BY grid.ord;


-- view: findings_near_configs
-- The near-duplicate figures (method near-2026, hubsurvey/core/figures.py) of every (dataset, config)
-- of current_measurements measured by that method (near_measured), one row per config. Every
-- near-duplicate finding below reads this view, so ONLY CONFIGS MEASURED BY near-2026 COUNT in their
-- denominators: a row measured before the method existed, or with --no-near, has NULL near figures
-- because they were not measured, not because they are NR, and is left out here.
-- As in findings_exact_configs, the text figures repeat in each label-column row of a config and are
-- taken once (max of equal values); the label figure keeps the config's worst label column (max).
-- Near-duplicates: two rows whose normalized texts, cut into character 5-grams, have a Jaccard
-- similarity >= tau (the row's threshold; identical texts have Jaccard 1, so exact ⊆ near).
--   label_columns / rows_train / rows_validation / rows_test   as in findings_exact_configs
--   threshold                            tau the config was measured at (its `near` JSON)
--   capped                               the LSH candidates were capped: a count may miss pairs
--   exact                                the config was measured by exact-2026 too (its normalized
--                                        figures below are NULL otherwise)
--   test_rows_near_train (_pct)          test rows with a train row at Jaccard >= tau (NULL = NR: no train)
--   test_rows_near_validation            test rows with a validation row at >= tau (NULL = NR: no validation)
--   test_rows_near_repeated              test rows with a test row at an earlier position at >= tau
--   test_rows_near_contaminated / near_contaminated_test_pct
--                                        test rows near train, near validation or near-repeated, each
--                                        counted once; and as a % of rows_test (stored unrounded)
--   validation_rows_near_train (_pct)    validation rows with a train row at >= tau (NULL = NR)
--   test_rows_near_train_conflicting_label
--                                        test rows near train whose near train rows all carry another
--                                        label (worst label column; NULL = NR: no label or no train)
--   normalized_test_rows_contaminated / normalized_contaminated_test_pct
--                                        the exact figures (normalized profile) of the same config
--   normalized_test_rows_in_train_conflicting_label   the exact label conflicts (worst label column)
SELECT
    dataset_id,
    config,
    count(label_column)                                              AS label_columns,
    max(rows_train)                                                  AS rows_train,
    max(rows_validation)                                             AS rows_validation,
    max(rows_test)                                                   AS rows_test,
    max(json_extract(near, '$.threshold')::DOUBLE)                   AS threshold,
    bool_or(coalesce(json_extract(near, '$.capped')::BOOLEAN, false)) AS capped,
    bool_and(exact_measured(methods))                                AS exact,
    max(test_rows_near_train)                                        AS test_rows_near_train,
    max(test_rows_near_train_pct)                                    AS test_rows_near_train_pct,
    max(test_rows_near_validation)                                   AS test_rows_near_validation,
    max(test_rows_near_repeated)                                     AS test_rows_near_repeated,
    max(test_rows_near_contaminated)                                 AS test_rows_near_contaminated,
    max(near_contaminated_test_pct)                                  AS near_contaminated_test_pct,
    max(validation_rows_near_train)                                  AS validation_rows_near_train,
    max(validation_rows_near_train_pct)                              AS validation_rows_near_train_pct,
    max(test_rows_near_train_conflicting_label)                      AS test_rows_near_train_conflicting_label,
    max(normalized_test_rows_contaminated) FILTER (WHERE exact_measured(methods))
                                                                     AS normalized_test_rows_contaminated,
    max(normalized_contaminated_test_pct) FILTER (WHERE exact_measured(methods))
                                                                     AS normalized_contaminated_test_pct,
    max(normalized_test_rows_in_train_conflicting_label) FILTER (WHERE exact_measured(methods))
                                                                     AS normalized_test_rows_in_train_conflicting_label
FROM current_measurements
WHERE near_measured(methods, near)
GROUP BY dataset_id, config
ORDER BY dataset_id, config;


-- view: findings_near_vs_exact
-- Near-duplicate vs exact (normalized) contamination, one row per dataset with at least one config
-- measured by both near-2026 and exact-2026 (those configs only, from findings_near_configs): what
-- exact matching misses that near-duplicate matching finds.
--   configs_near                         configs measured by both methods
--   rows_test                            their test rows (the denominator of the pooled percentages)
--   normalized_test_rows_contaminated / normalized_contaminated_test_pct
--       contaminated test rows under the normalized profile, summed over those configs, and as a %
--       of rows_test (pooled over the configs, 2 decimals)
--   near_test_rows_contaminated / near_contaminated_test_pct   the same, near-duplicates (>= the exact
--       count: an exact match has Jaccard 1)
--   extra_test_rows                      near − normalized contaminated test rows (>= 0); the dataset's
--                                        near contamination EXCEEDS the exact one when it is > 0
--   extra_pct_points                     near_contaminated_test_pct − normalized_contaminated_test_pct
--                                        (pooled; unrounded difference, then rounded to 2 decimals)
--   worst_normalized_contaminated_test_pct / worst_near_contaminated_test_pct
--       the highest normalized_contaminated_test_pct / near_contaminated_test_pct among those configs
--       (%, 3 decimals as published): the measures of the exact and the near verdicts
--   worst_near_config                    the config with the worst near value (ties: first by name)
--   worst_extra_pct_points               worst near − worst normalized, in points (3 decimals): how far
--                                        the near figure moves the verdict's measure (>= 0)
--   capped                               a config's LSH candidates were capped: near figures may be low
-- Largest gain in points first (pooled), then most extra rows.
WITH per_dataset AS (
    SELECT dataset_id,
           count(*)                                              AS configs_near,
           sum(rows_test)::BIGINT                                AS rows_test,
           sum(normalized_test_rows_contaminated)::BIGINT        AS normalized_test_rows_contaminated,
           sum(test_rows_near_contaminated)::BIGINT              AS near_test_rows_contaminated,
           max(published_pct(normalized_contaminated_test_pct))  AS worst_normalized_contaminated_test_pct,
           max(published_pct(near_contaminated_test_pct))        AS worst_near_contaminated_test_pct,
           first(config ORDER BY near_contaminated_test_pct DESC NULLS LAST, config) AS worst_near_config,
           bool_or(capped)                                       AS capped
    FROM findings_near_configs
    WHERE exact
    GROUP BY dataset_id
)
SELECT dataset_id, configs_near, rows_test,
       normalized_test_rows_contaminated,
       pct(normalized_test_rows_contaminated, rows_test)                            AS normalized_contaminated_test_pct,
       near_test_rows_contaminated,
       pct(near_test_rows_contaminated, rows_test)                                  AS near_contaminated_test_pct,
       near_test_rows_contaminated - normalized_test_rows_contaminated              AS extra_test_rows,
       pct(near_test_rows_contaminated - normalized_test_rows_contaminated, rows_test) AS extra_pct_points,
       worst_normalized_contaminated_test_pct,
       worst_near_contaminated_test_pct,
       worst_near_config,
       round(worst_near_contaminated_test_pct - worst_normalized_contaminated_test_pct, 3) AS worst_extra_pct_points,
       capped
FROM per_dataset
ORDER BY extra_pct_points DESC NULLS LAST, extra_test_rows DESC, dataset_id;


-- view: findings_near_gain
-- What exact matching misses, in one row: the share of datasets whose near-duplicate contamination
-- exceeds their exact (normalized) one. Unit: a dataset, over its configs measured by near-2026 and
-- exact-2026 (findings_near_vs_exact); only those datasets are in the denominator.
--   datasets_with_more / datasets / pct_datasets_with_more
--       datasets with near_test_rows_contaminated > normalized_test_rows_contaminated
--       over datasets with at least one config measured by both methods
--   extra_test_rows / test_rows / extra_pct_of_test_rows
--       near − normalized contaminated test rows, summed over those datasets, over their test rows
--       (pooled: the percentage points gained over all measured test rows)
--   normalized_test_rows_contaminated / near_test_rows_contaminated   the two totals
--   max_worst_extra_pct_points / max_extra_dataset
--       the largest rise of one dataset's worst-config figure, worst near − worst normalized
--       contaminated_test_pct in points (findings_near_vs_exact's worst_extra_pct_points), and that
--       dataset (ties: first by id); NULL when no dataset gains
--   median_worst_extra_pct_points_of_gainers
--       the median of worst_extra_pct_points among the datasets_with_more (a gainer's worst config
--       may not be where it gains: its rise can be 0)
--   datasets_capped   datasets (of the denominator) whose LSH candidates were capped somewhere
SELECT
    count(*) FILTER (WHERE extra_test_rows > 0)                                  AS datasets_with_more,
    count(*)                                                                     AS datasets,
    pct(count(*) FILTER (WHERE extra_test_rows > 0), count(*))                   AS pct_datasets_with_more,
    coalesce(sum(extra_test_rows), 0)::BIGINT                                    AS extra_test_rows,
    coalesce(sum(rows_test), 0)::BIGINT                                          AS test_rows,
    pct(sum(extra_test_rows), sum(rows_test))                                    AS extra_pct_of_test_rows,
    coalesce(sum(normalized_test_rows_contaminated), 0)::BIGINT                  AS normalized_test_rows_contaminated,
    coalesce(sum(near_test_rows_contaminated), 0)::BIGINT                        AS near_test_rows_contaminated,
    max(worst_extra_pct_points) FILTER (WHERE extra_test_rows > 0)               AS max_worst_extra_pct_points,
    first(dataset_id ORDER BY worst_extra_pct_points DESC, dataset_id) FILTER (WHERE extra_test_rows > 0) AS max_extra_dataset,
    median(worst_extra_pct_points) FILTER (WHERE extra_test_rows > 0)            AS median_worst_extra_pct_points_of_gainers,
    count(*) FILTER (WHERE capped)                                               AS datasets_capped
FROM findings_near_vs_exact;


-- view: findings_near_label_conflicts
-- Similar text, different answer, in one row: the share of datasets with label-conflicting
-- near-duplicates. Unit: a dataset, over its configs measured by near-2026 where the figure is not NR
-- (a label column and a train split; findings_near_configs, per config its worst label column).
--   with_conflict / datasets / pct_with_conflict
--       datasets with test_rows_near_train_conflicting_label > 0 (a test row whose train rows at
--       Jaccard >= tau all carry another label), over datasets measured by near-2026 with a label
--       column and a train split
--   test_rows_conflicting / test_rows / pct_test_rows_conflicting
--       those test rows, summed over the datasets, over their test rows (pooled)
--   with_conflict_beyond_exact / pct_with_conflict_beyond_exact
--       datasets with a near-duplicate label conflict but no exact one (configs measured by
--       exact-2026 too, normalized_test_rows_in_train_conflicting_label = 0 in every one): conflicts
--       that only near-duplicate matching finds (same denominator)
WITH per_dataset AS (
    SELECT dataset_id,
           sum(rows_test)                                         AS rows_test,
           sum(test_rows_near_train_conflicting_label)            AS near_rows,
           bool_and(exact)                                        AS exact,
           sum(normalized_test_rows_in_train_conflicting_label)   AS exact_rows
    FROM findings_near_configs
    WHERE test_rows_near_train_conflicting_label IS NOT NULL
    GROUP BY dataset_id
)
SELECT
    count(*) FILTER (WHERE near_rows > 0)                                        AS with_conflict,
    count(*)                                                                     AS datasets,
    pct(count(*) FILTER (WHERE near_rows > 0), count(*))                         AS pct_with_conflict,
    coalesce(sum(near_rows), 0)::BIGINT                                          AS test_rows_conflicting,
    coalesce(sum(rows_test), 0)::BIGINT                                          AS test_rows,
    pct(sum(near_rows), sum(rows_test))                                          AS pct_test_rows_conflicting,
    count(*) FILTER (WHERE near_rows > 0 AND exact AND exact_rows = 0)           AS with_conflict_beyond_exact,
    pct(count(*) FILTER (WHERE near_rows > 0 AND exact AND exact_rows = 0), count(*)) AS pct_with_conflict_beyond_exact
FROM per_dataset;


-- view: findings_near_curve
-- The threshold curve aggregated, one row per threshold tau (0.9, 0.8, 0.7, 0.6: NEAR_CURVE in
-- hubsurvey/core/figures.py, plus any other threshold a row was measured at), highest first. Unit: a
-- dataset, over its configs measured by near-2026 that have a train split (the curve is NR without
-- one), each config once (the view near_curve repeats it per label column); per dataset, its test rows
-- near train at tau summed over those configs, as a % of their test rows (pooled).
--   with_near_train / datasets / pct_with_near_train
--       datasets with at least one test row near train at tau, over the datasets whose curve has tau
--   median_test_rows_near_train_pct
--       the median, over those datasets (zeros included), of their % of test rows near train (2 decimals)
--   test_rows_near_train / test_rows / pct_test_rows_near_train
--       test rows near train at tau, summed over those datasets, over their test rows (pooled)
-- Both shares can only grow as tau falls: a pair at >= 0.9 is also at >= 0.6.
WITH per_config AS (
    SELECT c.dataset_id, c.config, c.threshold,
           max(c.test_rows_near_train) AS near_train,
           max(c.rows_test)            AS rows_test
    FROM near_curve c
    JOIN current_measurements m USING (measurement_id)
    WHERE near_measured(m.methods, m.near)
    GROUP BY c.dataset_id, c.config, c.threshold
),
per_dataset AS (
    SELECT threshold, dataset_id,
           sum(near_train)                                   AS near_train,
           sum(rows_test)                                    AS rows_test,
           100.0 * sum(near_train) / nullif(sum(rows_test), 0) AS near_train_pct
    FROM per_config
    GROUP BY threshold, dataset_id
),
grid AS (
    SELECT unnest([0.9, 0.8, 0.7, 0.6]::DOUBLE[]) AS threshold
    UNION
    SELECT DISTINCT threshold FROM per_config
)
SELECT
    g.threshold,
    count(d.dataset_id) FILTER (WHERE d.near_train > 0)                          AS with_near_train,
    count(d.dataset_id)                                                          AS datasets,
    pct(count(d.dataset_id) FILTER (WHERE d.near_train > 0), count(d.dataset_id)) AS pct_with_near_train,
    round(median(d.near_train_pct), 2)                                           AS median_test_rows_near_train_pct,
    coalesce(sum(d.near_train), 0)::BIGINT                                       AS test_rows_near_train,
    coalesce(sum(d.rows_test), 0)::BIGINT                                        AS test_rows,
    pct(sum(d.near_train), sum(d.rows_test))                                     AS pct_test_rows_near_train
FROM grid g
LEFT JOIN per_dataset d ON d.threshold = g.threshold
GROUP BY g.threshold
ORDER BY g.threshold DESC;


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


-- view: findings_cross_top_leaks
-- Leaks across datasets (method cross-2026, `hubsurvey crossleaks`): the pairs where a test split
-- A (test_dataset, test_config) has rows in the train or validation split of another dataset B
-- outside A's family (relation 'leak' in cross_overlaps), largest first. One row per
-- (A, B, B's config, B's split):
--   rows       distinct test rows of A (row positions) whose normalized text hash occurs in B's split
--   test_rows  rows of A's test split; pct = rows / test_rows x 100, rounded to 2 decimals
--   rank       1 = the most rows (ties: the higher pct, then the names)
SELECT row_number() OVER (ORDER BY rows DESC, pct DESC, test_dataset, test_config, source_dataset, source_config,
                                   source_split) AS rank,
       test_dataset, test_config, source_dataset, source_config, source_split, rows, test_rows,
       round(pct, 2) AS pct
FROM cross_overlaps
WHERE relation = 'leak'
ORDER BY rank;


-- view: findings_cross_overview
-- Leaks across datasets, in one row:
--   test_splits          surveyed test splits: (dataset, config) of current_measurements whose test
--                        split has a fingerprint file at its current revision (what crossleaks compares)
--   leaking_test_splits  of those, the test splits with at least one 'leak' row: some of their rows
--                        are in another dataset's train or validation split (outside their family)
--   pct_leaking          leaking_test_splits / test_splits x 100, rounded to 2 decimals
--   datasets / leaking_datasets   the same counted by dataset, a family counted once (its id)
--   leak_pairs           cross_overlaps rows of relation 'leak'
--   copy_pairs           ordered (A, B) config pairs where A is a copy of B (relation 'copy'); a
--                        mirror of B is usually counted both ways
--   families             families (datasets joined by copies), and datasets_in_families their members;
--   copies               datasets beyond the first of each family: the forks and re-uploads
--   copy_threshold       the --copy-threshold of that crossleaks (NULL: never ran, or nothing overlapped)
--   computed_at          when crossleaks last ran (NULL: never, or nothing overlapped)
WITH tested AS (
    SELECT DISTINCT f.dataset_id, f.config
    FROM fingerprints f
    JOIN (SELECT DISTINCT dataset_id, config, revision_sha FROM current_measurements) m
      USING (dataset_id, config, revision_sha)
    WHERE f.split = 'test'
),
leaking AS (SELECT DISTINCT test_dataset AS dataset_id, test_config AS config FROM cross_overlaps WHERE relation = 'leak'),
fam AS (SELECT count(DISTINCT family_id) AS families, count(*) AS members FROM dataset_families)
SELECT (SELECT count(*) FROM tested)                                              AS test_splits,
       (SELECT count(*) FROM tested JOIN leaking USING (dataset_id, config))      AS leaking_test_splits,
       pct((SELECT count(*) FROM tested JOIN leaking USING (dataset_id, config)),
           (SELECT count(*) FROM tested))                                         AS pct_leaking,
       (SELECT count(DISTINCT coalesce(d.family_id, t.dataset_id)) FROM tested t
          LEFT JOIN dataset_families d USING (dataset_id))                        AS datasets,
       (SELECT count(DISTINCT coalesce(d.family_id, t.dataset_id)) FROM tested t JOIN leaking USING (dataset_id, config)
          LEFT JOIN dataset_families d USING (dataset_id))                        AS leaking_datasets,
       (SELECT count(*) FROM cross_overlaps WHERE relation = 'leak')              AS leak_pairs,
       (SELECT count(*) FROM cross_overlaps WHERE relation = 'copy')              AS copy_pairs,
       fam.families,
       fam.members                                                                AS datasets_in_families,
       fam.members - fam.families                                                 AS copies,
       (SELECT max(copy_threshold) FROM cross_overlaps)                           AS copy_threshold,
       (SELECT max(computed_at) FROM cross_overlaps)                              AS computed_at
FROM fam;


-- view: findings_cross_families
-- The families: datasets joined by copy relations (A's test split mostly in B's, their train
-- splits agreeing), as connected components. One row per family:
--   family_id  its smallest dataset id;  members  every dataset of it, sorted;  size  how many
SELECT family_id, any_value(members) AS members, count(*) AS size
FROM dataset_families
GROUP BY family_id
ORDER BY size DESC, family_id;


-- view: findings_contamination_pairs
-- Contamination with benchmarks (bench-2026).
-- The table `contamination` holds, per surveyed (dataset, revision, config, split) and benchmark
-- (id, config, split, at the revision it was indexed), the split's rows that hold 13 consecutive
-- words of a benchmark item, or whose whole text equals an item shorter than 13 words, each row
-- counted once per benchmark, every match verified word for word (survey/contamination.py). A
-- benchmark's own test split is not checked against itself. Only the checks at each config's
-- current revision (the one `current_measurements` shows) count.
--
-- One row per (dataset, config, split, benchmark) checked at the config's current revision, most
-- contaminated first:
--   contaminated_rows / rows_split / contaminated_pct   the split's rows holding the benchmark's items
--   benchmark_revision                                   the benchmark revision it was checked against
--   examples                                              up to N: row position, item index, match, passage
--   benchmark_copy       the split is the benchmark's own test set under another name: the dataset is in
--                        the benchmark's family (dataset_families: a mirror, fork or re-upload, found by
--                        crossleaks) and the split has the benchmark's split name. Such a row is kept here
--                        but left out of findings_contamination: a fork of a benchmark is not contaminated
--                        by it, it is it.
SELECT k.dataset_id, k.config, k.split, k.split_name, k.benchmark_id, k.benchmark_config, k.benchmark_split,
       k.benchmark_revision, k.contaminated_rows, k.rows_split, round(k.contaminated_pct, 3) AS contaminated_pct,
       k.examples,
       coalesce(k.split_name = k.benchmark_split AND EXISTS (
           SELECT 1 FROM dataset_families a JOIN dataset_families b USING (family_id)
           WHERE a.dataset_id = k.dataset_id AND b.dataset_id = k.benchmark_id), false) AS benchmark_copy,
       k.revision_sha, k.method, k.method_version, k.tool_version, k.measured_at
FROM contamination k
WHERE EXISTS (SELECT 1 FROM current_measurements m
              WHERE m.dataset_id = k.dataset_id AND m.revision_sha = k.revision_sha AND m.config = k.config)
ORDER BY k.contaminated_rows DESC, k.contaminated_pct DESC, k.dataset_id, k.config, k.split, k.benchmark_id,
         k.benchmark_config, k.benchmark_split;

-- view: findings_contamination
-- The line per dataset: "checked against K benchmarks at revisions …: clean | contaminated (which)".
-- Unit: a dataset, over its current configs that were checked (configs_checked of configs); a split
-- that is the benchmark's own test set under another name (benchmark_copy) does not count. One row
-- per dataset with at least one checked config:
--   benchmarks            K, the distinct benchmarks (id, config, split) its configs were checked against
--   revisions             each benchmark with the revision it was checked at (first 12 characters)
--   contaminated_benchmarks  the benchmarks with at least one contaminated row in one of its splits,
--                         each with its rows per split
--   contaminated_rows     the sum over (config, split, benchmark) of contaminated rows (a row that holds
--                         items of two benchmarks counts twice)
--   status                'contaminated' when contaminated_benchmarks is not empty, else 'clean'
--   line                  the sentence above, as the export and the card show it
WITH checked AS (
    SELECT * FROM findings_contamination_pairs WHERE NOT benchmark_copy
), per_benchmark AS (
    SELECT dataset_id, benchmark_id, benchmark_config, benchmark_split,
           benchmark_id || ' [' || benchmark_config || '/' || benchmark_split || ']' AS benchmark,
           string_agg(DISTINCT coalesce(left(benchmark_revision, 12), '?'), '/') AS revisions,
           sum(contaminated_rows) AS rows,
           string_agg(CASE WHEN contaminated_rows > 0 THEN contaminated_rows || ' rows in ' || config || '/' || split_name END,
                      ', ' ORDER BY config, split) AS where_found
    FROM checked
    GROUP BY dataset_id, benchmark_id, benchmark_config, benchmark_split
), per_dataset AS (
    SELECT dataset_id,
           count(*)                                                        AS benchmarks,
           string_agg(benchmark || ' @' || revisions, ', ' ORDER BY benchmark) AS revisions,
           string_agg(CASE WHEN rows > 0 THEN benchmark || ': ' || where_found END, chr(59) || ' ' ORDER BY benchmark)
                                                                           AS contaminated_benchmarks,
           count(*) FILTER (WHERE rows > 0)                                AS benchmarks_contaminating,
           sum(rows)::BIGINT                                               AS contaminated_rows
    FROM per_benchmark
    GROUP BY dataset_id
)
SELECT d.dataset_id,
       (SELECT count(DISTINCT k.config) FROM checked k WHERE k.dataset_id = d.dataset_id)          AS configs_checked,
       (SELECT count(DISTINCT m.config) FROM current_measurements m WHERE m.dataset_id = d.dataset_id) AS configs,
       d.benchmarks, d.revisions, d.benchmarks_contaminating, d.contaminated_benchmarks, d.contaminated_rows,
       CASE WHEN d.benchmarks_contaminating > 0 THEN 'contaminated' ELSE 'clean' END AS status,
       'checked against ' || d.benchmarks || ' benchmark' || CASE WHEN d.benchmarks = 1 THEN '' ELSE 's' END
           || ' at revisions ' || d.revisions || ': '
           || CASE WHEN d.benchmarks_contaminating > 0 THEN 'contaminated (' || d.contaminated_benchmarks || ')'
                   ELSE 'clean' END AS line
FROM per_dataset d
ORDER BY d.benchmarks_contaminating DESC, d.contaminated_rows DESC, d.dataset_id;

-- view: findings_contamination_overview
-- One row: datasets checked against benchmarks (of the datasets in current_measurements), those
-- contaminated, and the benchmarks checked (indexed: table benchmarks, status 'indexed'; failed:
-- could not be indexed, so nothing was checked against them).
SELECT (SELECT count(DISTINCT dataset_id) FROM current_measurements)              AS datasets,
       count(*)                                                                   AS datasets_checked,
       count(*) FILTER (WHERE status = 'contaminated')                            AS datasets_contaminated,
       pct(count(*) FILTER (WHERE status = 'contaminated'), count(*))             AS pct_datasets_contaminated,
       (SELECT count(*) FROM benchmarks WHERE status = 'indexed')                 AS benchmarks_indexed,
       (SELECT count(*) FROM benchmarks WHERE status = 'failed')                  AS benchmarks_failed,
       (SELECT string_agg(benchmark_id || ' [' || benchmark_config || '/' || benchmark_split || '] @'
                          || coalesce(left(revision_sha, 12), '?'), ', ' ORDER BY benchmark_id, benchmark_config, benchmark_split)
        FROM benchmarks WHERE status = 'indexed')                                 AS benchmarks_list
FROM findings_contamination

-- view: findings_model_exposure
-- Models that declare contaminated training data (exposure-2026). The table `model_exposure` holds,
-- per Hub model whose card declares a surveyed dataset as training data (its `datasets:`, which the
-- Hub's filter dataset:<id> matches), one row per (config, split, benchmark) of that dataset that
-- the contamination check found holding the benchmark's items (findings_contamination_pairs), as
-- it stood when the models were listed. Only rows at each dataset's current revision count.
-- What it does not prove: a card's datasets: is a declaration. A model may have been trained on
-- part of a dataset only (e.g. its train split, when the items are in its validation split), or on
-- more than it declares; a model that declares nothing is never listed.
--
-- One row per (benchmark, model), the most contaminated rows first:
--   benchmark_id, benchmark_config, benchmark_split, benchmark_revisions  the benchmark, and the
--                        revisions (first 12 characters) the declared datasets were checked against
--   model_id, model_sha  the model, at the revision it had when listed
--   declared_by          how it declares them: 'card:datasets' (its card lists the dataset), or
--                        'tag:dataset' (only the Hub's dataset: tag names it)
--   datasets_declared    the datasets it declares that hold the benchmark's items
--   datasets             each with its rows, e.g. "org/a (12 rows in default/train)"
--   contaminated_rows    the sum over those datasets' splits of the rows holding the benchmark's items
--                        (a row holding several items counts once; distinct items are not counted)
--   rows                 the rows of those splits; contaminated_pct = contaminated_rows / rows x 100
--   benchmark_copy       one of those splits is the benchmark's own test set under another name (a
--                        fork: findings_contamination_pairs.benchmark_copy): the model declares the
--                        benchmark itself
--   looked_up_at, method, method_version, tool_version  the newest listing behind the row
WITH exposed AS (
    SELECT e.*, coalesce(p.benchmark_copy, false) AS benchmark_copy
    FROM model_exposure e
    LEFT JOIN findings_contamination_pairs p
        ON p.dataset_id = e.dataset_id AND p.revision_sha = e.revision_sha AND p.config = e.config
       AND p.split = e.split AND p.benchmark_id = e.benchmark_id AND p.benchmark_config = e.benchmark_config
       AND p.benchmark_split = e.benchmark_split
    WHERE EXISTS (SELECT 1 FROM current_measurements m
                  WHERE m.dataset_id = e.dataset_id AND m.revision_sha = e.revision_sha AND m.config = e.config)
), per_dataset AS (
    SELECT benchmark_id, benchmark_config, benchmark_split, model_id, dataset_id,
           arg_max(model_sha, looked_up_at)                                     AS model_sha,
           string_agg(DISTINCT declared_by, ', ')                               AS declared_by,
           string_agg(DISTINCT coalesce(left(benchmark_revision, 12), '?'), '/') AS revisions,
           sum(contaminated_rows)                                               AS contaminated_rows,
           sum(rows_split)                                                      AS rows,
           string_agg(contaminated_rows || ' rows in ' || config || '/' || split_name, ', ' ORDER BY config, split)
                                                                                AS where_found,
           bool_or(benchmark_copy)                                              AS benchmark_copy,
           max(looked_up_at)                                                    AS looked_up_at,
           arg_max(method, looked_up_at)                                        AS method,
           arg_max(method_version, looked_up_at)                                AS method_version,
           arg_max(tool_version, looked_up_at)                                  AS tool_version
    FROM exposed
    GROUP BY benchmark_id, benchmark_config, benchmark_split, model_id, dataset_id
)
SELECT benchmark_id, benchmark_config, benchmark_split,
       string_agg(DISTINCT revisions, '/')                                  AS benchmark_revisions,
       model_id,
       arg_max(model_sha, looked_up_at)                                     AS model_sha,
       string_agg(DISTINCT declared_by, ', ')                               AS declared_by,
       count(*)                                                             AS datasets_declared,
       string_agg(dataset_id || ' (' || where_found || ')', chr(59) || ' ' ORDER BY dataset_id) AS datasets,
       sum(contaminated_rows)::BIGINT                                       AS contaminated_rows,
       sum(rows)::BIGINT                                                    AS rows,
       pct(sum(contaminated_rows), sum(rows))                               AS contaminated_pct,
       bool_or(benchmark_copy)                                              AS benchmark_copy,
       max(looked_up_at)                                                    AS looked_up_at,
       arg_max(method, looked_up_at)                                        AS method,
       arg_max(method_version, looked_up_at)                                AS method_version,
       arg_max(tool_version, looked_up_at)                                  AS tool_version
FROM per_dataset
GROUP BY benchmark_id, benchmark_config, benchmark_split, model_id
ORDER BY contaminated_rows DESC, benchmark_id, benchmark_config, benchmark_split, model_id;

-- view: findings_model_exposure_overview
-- One row: the contaminated datasets whose declaring models were listed (table exposure_lookups, at
-- each dataset's current revision), those whose listing failed (the next lookup lists them again),
-- those whose listing reached the cap (the Hub has more models declaring them than were kept), the
-- cap, and the models and benchmarks of findings_model_exposure.
WITH l AS (SELECT * FROM listing_counts('exposure_lookups')), e AS (
    SELECT count(DISTINCT model_id)                                                    AS models,
           count(DISTINCT (benchmark_id, benchmark_config, benchmark_split))           AS benchmarks
    FROM findings_model_exposure
)
SELECT l.datasets_listed, l.datasets_failed, l.datasets_capped, l.capped_datasets, l.max_models,
       e.models, e.benchmarks
FROM l, e

-- view: findings_shared_columns
-- Test rows whose passage or premise is in train: for every (dataset, config) of
-- current_measurements with two text columns or more (table column_measurements, at the measured
-- revision), one row per text column, the exact figures of that column alone (method exact-2026).
-- A QA dataset that splits questions at random while several questions share one passage has the
-- passage in train and in test; an NLI dataset can share premises across splits. LLE compares the
-- whole text key (every text column), so such a test row counts only when its question is in train too.
-- The text figures repeat in each label-column row of a config: taken once (max of equal values).
-- Per profile p (raw, normalized):
--   p_test_rows_in_train             test rows whose value of this column occurs in train (empty and
--                                    NULL values never match)
--   p_test_rows_column_in_train_only those of them whose whole text key is not in train: the same
--                                    passage or premise with another question or hypothesis
--   p_test_rows_column_in_train_only_pct   = it / rows_test × 100 (stored unrounded)
--   p_text_test_rows_in_train        test rows whose whole text key occurs in train (measurements)
SELECT
    c.dataset_id,
    c.config,
    c.text_column,
    list_position(any_value(c.text_columns), c.text_column)     AS column_position,
    max(m.rows_test)                                            AS rows_test,
    max(c.test_rows_in_train) FILTER (WHERE c.profile = 'raw')  AS raw_test_rows_in_train,
    max(c.test_rows_column_in_train_only) FILTER (WHERE c.profile = 'raw')
                                                                AS raw_test_rows_column_in_train_only,
    max(c.test_rows_column_in_train_only_pct) FILTER (WHERE c.profile = 'raw')
                                                                AS raw_test_rows_column_in_train_only_pct,
    max(m.raw_test_rows_in_train)                               AS raw_text_test_rows_in_train,
    max(c.test_rows_in_train) FILTER (WHERE c.profile = 'normalized')
                                                                AS normalized_test_rows_in_train,
    max(c.test_rows_column_in_train_only) FILTER (WHERE c.profile = 'normalized')
                                                                AS normalized_test_rows_column_in_train_only,
    max(c.test_rows_column_in_train_only_pct) FILTER (WHERE c.profile = 'normalized')
                                                                AS normalized_test_rows_column_in_train_only_pct,
    max(m.normalized_test_rows_in_train)                        AS normalized_text_test_rows_in_train
FROM column_measurements AS c
JOIN current_measurements AS m
  ON m.dataset_id = c.dataset_id AND m.revision_sha = c.revision_sha AND m.config = c.config
 AND m.label_column IS NOT DISTINCT FROM c.label_column
WHERE c.method = exact_method()
GROUP BY c.dataset_id, c.config, c.text_column
ORDER BY normalized_test_rows_column_in_train_only_pct DESC NULLS LAST, c.dataset_id, c.config, column_position;


-- view: findings_shared_columns_overview
-- One row: the configs measured column by column (two text columns or more, exact-2026), and those
-- where some text column's value of a test row is in train while the row's whole text is not
-- (normalized profile; NULL = NR, no train split, is not counted as such a config).
SELECT count(DISTINCT (dataset_id, config))                                       AS configs,
       count(*)                                                                   AS text_columns,
       count(DISTINCT (dataset_id, config)) FILTER (WHERE normalized_test_rows_column_in_train_only > 0)
                                                                                  AS configs_shared,
       pct(count(DISTINCT (dataset_id, config)) FILTER (WHERE normalized_test_rows_column_in_train_only > 0),
           count(DISTINCT (dataset_id, config)))                                  AS pct_configs_shared
FROM findings_shared_columns


-- view: findings_scores_at_risk
-- Scores at risk (scores-2026): the scores Hub models report whose evaluated split's rows are, in
-- part, in the training data the model's card declares (the view scores_at_risk, status at_risk),
-- the most exposed first: the share of evaluated rows found in that training data (normalized
-- profile), then the training rows holding passages of a benchmark's items. Only scores on a
-- dataset surveyed at its current revision or on an indexed benchmark are measured.
SELECT model_id, model_sha, source, dataset_id, config, split, split_name, metric, value, verified,
       array_to_string(declared_datasets, ', ')                  AS declared,
       rows_evaluated, rows_in_training_raw, rows_in_training_normalized, rows_in_training_pct,
       training_rows_with_passages, measured_by, note, looked_up_at, method, method_version, tool_version
FROM scores_at_risk
WHERE status = 'at_risk'
ORDER BY rows_in_training_pct DESC NULLS LAST, training_rows_with_passages DESC NULLS LAST, model_id, dataset_id,
         config, split, metric;

-- view: findings_scores_overview
-- One row: the surveyed datasets whose declaring models were listed for their scores (table
-- score_lookups, at each dataset's current revision), those whose listing failed, those whose
-- listing reached the cap, the cap, the models and scores read, and the scores per status
-- (at_risk, clean, undeclared, not_surveyed) and with a split unknown.
WITH l AS (SELECT * FROM listing_counts('score_lookups')), s AS (
    SELECT count(DISTINCT model_id)                                                    AS models,
           count(*)                                                                    AS scores,
           count(*) FILTER (WHERE status = 'at_risk')                                  AS at_risk,
           count(*) FILTER (WHERE status = 'clean')                                    AS clean,
           count(*) FILTER (WHERE status = 'undeclared')                               AS undeclared,
           count(*) FILTER (WHERE status = 'not_surveyed')                             AS not_surveyed,
           count(*) FILTER (WHERE split IS NULL)                                       AS split_unknown
    FROM scores_at_risk
)
SELECT l.datasets_listed, l.datasets_failed, l.datasets_capped, l.capped_datasets, l.max_models,
       s.models, s.scores, s.at_risk, s.clean, s.undeclared, s.not_surveyed, s.split_unknown
FROM l, s;


-- view: findings_group_leaks
-- Test rows whose group is in train: for every (dataset, config) of current_measurements, one row
-- per group column (table group_measurements, method groups-2026, at the measured revision). A
-- group column's values name a dialogue, file, document, thread, author or URL: an id-like column
-- left out of the text key whose values repeat within a split, or one the roles file declares. No
-- text figure sees two utterances of one recording on both sides of the split; this does.
--   test_rows_group_in_train(_pct)   test rows whose group also holds train rows (% of test rows)
--   test_groups_in_train, groups_test distinct shared groups, and the distinct groups of test
--   numbering_reused / in_verdict     a numbering restarting in every split (0, 1, 2... again in
--                                     test) names other groups in each split: marked, kept out
--                                     of every verdict (in_verdict false)
SELECT g.dataset_id, g.config, g.group_column, g.source, g.numbering_reused, g.in_verdict,
       any_value(m.rows_test)        AS rows_test,
       g.test_rows_group_in_train, g.test_rows_group_in_train_pct,
       g.test_rows_group_in_train_or_validation, g.test_rows_group_in_train_or_validation_pct,
       g.test_groups_in_train, g.groups_test, g.largest_group_pct_test
FROM group_measurements AS g
JOIN current_measurements AS m
  ON m.dataset_id = g.dataset_id AND m.revision_sha = g.revision_sha AND m.config = g.config
GROUP BY ALL
ORDER BY g.in_verdict DESC, g.test_rows_group_in_train_pct DESC NULLS LAST, g.dataset_id, g.config, g.group_column;


-- view: findings_group_overview
-- One row. Unit: a config of current_measurements measured by groups-2026 (its `checks` say the
-- groups check was asked). configs_with_groups: those with a group column; configs_group_in_train:
-- those where a group column in the verdict (not a reused numbering) has test rows whose group is
-- in train; columns_numbering_reused: group columns marked and left out.
WITH asked AS (
    SELECT DISTINCT dataset_id, revision_sha, config
    FROM current_measurements, unnest(from_json(checks, '[{"check": "VARCHAR", "why_not": "VARCHAR"}]')) AS u(c)
    WHERE c."check" = 'groups' AND c.why_not IS DISTINCT FROM 'not asked'
)
SELECT (SELECT count(*) FROM asked)                                                      AS configs,
       count(DISTINCT (g.dataset_id, g.config)) FILTER (WHERE g.group_column IS NOT NULL)  AS configs_with_groups,
       count(DISTINCT (g.dataset_id, g.config)) FILTER (WHERE g.in_verdict AND g.test_rows_group_in_train > 0)
                                                                                         AS configs_group_in_train,
       pct(count(DISTINCT (g.dataset_id, g.config)) FILTER (WHERE g.in_verdict AND g.test_rows_group_in_train > 0),
           (SELECT count(*) FROM asked))                                                 AS pct_configs_group_in_train,
       count(*) FILTER (WHERE g.numbering_reused)                                        AS columns_numbering_reused
FROM asked AS a LEFT JOIN group_measurements AS g USING (dataset_id, revision_sha, config);


-- view: findings_blank_rows
-- Rows that say nothing (rows-2026), per (dataset, config) of current_measurements with any: test
-- (train, validation) rows whose text is blank (every text column NULL, empty or whitespace only),
-- and the most NULL labels of a label column in test. Taken once per config (the text figures
-- repeat in each label column's row).
SELECT dataset_id, config,
       max(rows_test)                    AS rows_test,
       max(test_rows_blank_text)         AS test_rows_blank_text,
       max(test_rows_blank_text_pct)     AS test_rows_blank_text_pct,
       max(train_rows_blank_text)        AS train_rows_blank_text,
       max(validation_rows_blank_text)   AS validation_rows_blank_text,
       max(test_rows_null_label)         AS test_rows_null_label,
       max(test_rows_null_label_pct)     AS test_rows_null_label_pct
FROM current_measurements
WHERE test_rows_blank_text IS NOT NULL
GROUP BY dataset_id, config
HAVING max(test_rows_blank_text) > 0 OR max(train_rows_blank_text) > 0 OR max(validation_rows_blank_text) > 0
    OR max(test_rows_null_label) > 0
ORDER BY test_rows_blank_text_pct DESC, test_rows_null_label_pct DESC NULLS LAST, dataset_id, config


-- view: findings_checks
-- What was checked, per check: of the configs of current_measurements that carry a statement (the
-- `checks` column; NULL: measured before it, left out), how many ran the check and how many did not.
-- A config's rows (one per label column) share its statement: each config counts once.
WITH stated AS (
    SELECT DISTINCT dataset_id, revision_sha, config, checks FROM current_measurements WHERE checks IS NOT NULL
)
SELECT c."check"                                      AS "check",
       count(*) FILTER (WHERE c.ran)                  AS configs_ran,
       count(*) FILTER (WHERE NOT c.ran)              AS configs_not_ran,
       count(*)                                       AS configs,
       pct(count(*) FILTER (WHERE c.ran), count(*))   AS pct_ran
FROM stated, unnest(from_json(checks, '[{"check": "VARCHAR", "ran": "BOOLEAN"}]')) WITH ORDINALITY AS u(c, position)
GROUP BY c."check"
ORDER BY min(position), c."check"


-- view: findings_semantic_candidates
-- Paraphrase candidates for review (semantic-2026, opt-in), per (dataset, config) of
-- current_measurements whose `checks` say it ran: the test rows with a train or validation text at
-- cosine >= the threshold under the static model, and the pairs found. Candidates for a person to
-- review, never a leak count or a verdict; the pairs themselves are in semantic_candidates.
WITH ran AS (
    SELECT DISTINCT dataset_id, revision_sha, config, c.threshold, c.model, c.test_rows_with_candidates, c.pairs
    FROM current_measurements,
         unnest(from_json(checks, '[{"check": "VARCHAR", "ran": "BOOLEAN", "threshold": "DOUBLE", "model": "VARCHAR",
                                     "test_rows_with_candidates": "BIGINT", "pairs": "BIGINT"}]')) AS u(c)
    WHERE c."check" = 'semantic' AND c.ran
)
SELECT r.dataset_id, r.config, t.rows_test, r.test_rows_with_candidates,
       pct(r.test_rows_with_candidates, t.rows_test) AS test_rows_with_candidates_pct,
       r.pairs, r.threshold, r.model
FROM ran AS r
JOIN (SELECT dataset_id, revision_sha, config, max(rows_test) AS rows_test FROM current_measurements GROUP BY ALL) AS t
    USING (dataset_id, revision_sha, config)
ORDER BY test_rows_with_candidates_pct DESC NULLS LAST, r.dataset_id, r.config
