-- Why a run failed: its error class (offline, hub, store, internal...) and one-line message.
ALTER TABLE runs ADD COLUMN error_class VARCHAR;
ALTER TABLE runs ADD COLUMN error_message VARCHAR;
