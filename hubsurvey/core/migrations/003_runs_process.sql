-- The process that records a run, so that a run whose process died is marked interrupted.
ALTER TABLE runs ADD COLUMN pid INTEGER;
ALTER TABLE runs ADD COLUMN host VARCHAR;
