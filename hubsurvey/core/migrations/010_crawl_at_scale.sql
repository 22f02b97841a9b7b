-- The crawl at Hub scale. Where each dataset's decision came from ('listing': its metadata
-- and card, no request; 'parquet': its Parquet branch), and one row per listing query with the
-- cursor of the next page to fetch (written with each page's datasets, in one transaction), so
-- a killed or failing listing resumes there; a completed listing keeps its lastModified
-- high-water mark for the next incremental crawl.
ALTER TABLE datasets ADD COLUMN decided_by VARCHAR;   -- 'listing' or 'parquet'

CREATE TABLE crawl_listings (
    listing_key   VARCHAR PRIMARY KEY,  -- the query (filters, expand, sort) as canonical JSON
    next_url      VARCHAR,              -- the next page to fetch (NULL: the listing completed)
    pages         INTEGER NOT NULL,     -- pages written since the listing started
    items         BIGINT NOT NULL,      -- items written since the listing started
    mode          VARCHAR NOT NULL,     -- 'full', or 'since_last' (stops at the high-water mark)
    newest        TIMESTAMPTZ,          -- the newest lastModified seen by the listing in progress
    high_water    TIMESTAMPTZ,          -- the newest lastModified of the last completed listing
    started_at    TIMESTAMPTZ NOT NULL,
    updated_at    TIMESTAMPTZ NOT NULL,
    completed_at  TIMESTAMPTZ,
    run_id        VARCHAR
);
