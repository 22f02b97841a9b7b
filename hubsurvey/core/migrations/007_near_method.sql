-- The near-duplicate method (figure columns are added from the registry): how it measured
-- (parameters, texts, candidates, verified pairs) and its threshold curve (the view near_curve).
ALTER TABLE measurements ADD COLUMN near JSON;
ALTER TABLE measurements ADD COLUMN near_curve JSON;   -- [{"threshold": 0.9, "test_rows_near_train": 12}, ...]
-- a near-duplicate example is a pair: key/positions/labels hold its first side (a test or
-- validation row), partner its other side, jaccard their similarity (NULL: an exact example)
ALTER TABLE examples ADD COLUMN jaccard DOUBLE;
ALTER TABLE examples ADD COLUMN partner JSON;          -- {"split", "position", "text": {...}, "labels": {...}}
