-- The commit of the Parquet branch (refs/convert/parquet) that was resolved, downloaded and
-- measured, beside the main sha: a branch update between crawl and download cannot mix revisions.
ALTER TABLE datasets ADD COLUMN parquet_sha VARCHAR;
ALTER TABLE jobs ADD COLUMN parquet_sha VARCHAR;
ALTER TABLE measurements ADD COLUMN parquet_sha VARCHAR;
