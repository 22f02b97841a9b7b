-- Whether a failed job's error is transient (retried by the next run while attempts remain).
ALTER TABLE jobs ADD COLUMN transient BOOLEAN;
