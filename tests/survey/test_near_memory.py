"""The near stage's memory: DuckDB's freed pages go back at once, and its idle tables are set aside
(spilled to the engine's own folder) while the pass holds its band hashes, with the same figures."""

from __future__ import annotations

import json
import os
import random
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pytest

from hubsurvey.core import memory
from hubsurvey.survey import metrics, near
from hubsurvey.survey.api import measure


def _rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096 / 2**20


@pytest.mark.skipif(memory._jemalloc_purge() is None, reason="this DuckDB build has no jemalloc of its own to purge")
def test_release_freed_memory_gives_duckdbs_freed_pages_back():
    con = duckdb.connect()  # without background threads, jemalloc returns freed pages only as it allocates again
    con.execute("SET allocator_flush_threshold = '100GB'")  # nor does DuckDB flush them itself after a task
    con.execute("CREATE TABLE t AS SELECT repeat('x', 120) || i::VARCHAR AS s FROM range(1000000) r(i)")
    con.execute("DROP TABLE t")
    held = _rss_mb()
    memory.release_freed_memory()
    assert held - _rss_mb() > 60  # the table took about 130 MB
    con.close()


@pytest.mark.slow
def test_a_measurement_keeps_numpys_arrays_on_ordinary_pages():
    """numpy would ask for 2 MB pages for every array of 4 MB or more: the engine turns that off
    (the kernel zeroed each huge page whole, a fifth of the 1M-row audit's CPU)."""
    switch = np._core.multiarray._set_madvise_hugepage
    before = switch(True)
    try:
        measure(_config(), text_columns=["text"], label_columns=["label"])
        assert switch(True) is False  # the measurement left the switch off
    finally:
        switch(before)


def _config(seed: int = 11) -> dict[str, pa.Table]:
    rng = random.Random(seed)
    words = [f"w{i}" for i in range(400)]
    train = [" ".join(rng.choices(words, k=12)) for _ in range(6000)]
    test = [(t + " extra" if i % 3 == 0 else " ".join(rng.choices(words, k=12))) for i, t in enumerate(train[:900])]
    validation = [train[i + 1000] + "!" for i in range(300)]
    label = lambda n: [rng.randrange(3) for _ in range(n)]  # noqa: E731
    return {"train": pa.table({"text": train, "label": label(len(train))}),
            "test": pa.table({"text": test, "label": label(len(test))}),
            "validation": pa.table({"text": validation, "label": label(len(validation))})}


@pytest.mark.slow
def test_the_near_stage_sets_duckdbs_tables_aside_with_the_same_figures(monkeypatch, tmp_path):
    tables = _config()
    near.warm_up()
    near._warmed()
    expected = measure(tables, text_columns=["text"], label_columns=["label"])
    assert json.loads(expected[0]["near"])["pairs"] > 300  # the planted pairs are found

    seen: dict[str, object] = {}
    engines: list[metrics.Engine] = []
    original_aside, original_sketch = metrics.Engine._set_tables_aside, near.sketch_batches

    def set_aside(self):
        engines.append(self)
        original_aside(self)

    def sketch(batches, capacity, params, **kwargs):
        (engine,) = engines
        spilled = engine.con.cursor().execute("SELECT sum(temporary_storage_bytes) FROM duckdb_memory()").fetchone()[0]
        seen["spilled"] = spilled
        seen["files"] = sorted(p.name for p in Path(engine._spill.name).rglob("*") if p.is_file())
        return original_sketch(batches, capacity, params, **kwargs)

    monkeypatch.setattr(metrics, "ASIDE_MEMORY_LIMIT", "1MB")  # tables of a few MB: they are spilled
    monkeypatch.setattr(metrics.Engine, "_set_tables_aside", set_aside)
    monkeypatch.setattr(near, "sketch_batches", sketch)
    (tmp_path / "cwd").mkdir()
    monkeypatch.chdir(tmp_path / "cwd")
    got = measure(tables, text_columns=["text"], label_columns=["label"])

    assert seen["spilled"] and seen["files"], "DuckDB kept its tables in memory during the pass"
    assert got == [{**row, "measured_at": got[0]["measured_at"]} for row in expected]
    (engine,) = engines
    assert not os.path.exists(engine._spill.name)  # the engine's spill folder goes with it
    assert list((tmp_path / "cwd").iterdir()) == []  # DuckDB's default (.tmp in the working directory) unused


@pytest.mark.slow
def test_a_limit_duckdb_refuses_leaves_the_tables_where_they_are(monkeypatch):
    tables = _config(seed=3)
    expected = measure(tables, text_columns=["text"], label_columns=["label"])
    engines: list[metrics.Engine] = []
    original = metrics.Engine._set_tables_aside

    def set_aside(self):
        engines.append(self)
        original(self)
        assert not self._aside  # best effort: refused, the limit is left as it was
        engines.append(self.con.cursor().execute("SELECT current_setting('memory_limit')").fetchone()[0])

    monkeypatch.setattr(metrics, "ASIDE_MEMORY_LIMIT", "not a size")
    monkeypatch.setattr(metrics.Engine, "_set_tables_aside", set_aside)
    got = measure(tables, text_columns=["text"], label_columns=["label"])
    assert got == [{**row, "measured_at": got[0]["measured_at"]} for row in expected]
    assert engines[1] != "not a size" and len(engines) == 2
