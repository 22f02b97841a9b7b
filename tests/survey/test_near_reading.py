"""The near stage's reading thread (``metrics._NearTexts``): it reads the first batches while the
engine takes the keys to keep and sets its tables aside, the figures do not depend on how the
splits are cut into batches, and a stage that fails leaves no thread behind."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import threading
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from hubsurvey.core.errors import InternalError
from hubsurvey.survey import metrics, near
from hubsurvey.survey.measure import measure_config
from hubsurvey.survey.sources import FolderSource


def _folder(tmp_path: Path, seed: int = 5) -> Path:
    """A config of Parquet files with near-duplicates planted between its splits."""
    rng = random.Random(seed)
    words = [f"w{i}" for i in range(300)]
    train = [" ".join(rng.choices(words, k=14)) for _ in range(3000)]
    splits = {
        "train": train,
        "validation": [train[i] + " tail" if i % 2 else " ".join(rng.choices(words, k=14)) for i in range(400)],
        "test": [train[i + 500] + "!" if i % 3 == 0 else " ".join(rng.choices(words, k=14)) for i in range(600)],
    }
    for split, texts in splits.items():
        (tmp_path / "default" / split).mkdir(parents=True)
        labels = [rng.randrange(4) for _ in texts]
        pq.write_table(pa.table({"text": texts, "label": labels}), tmp_path / "default" / split / "0000.parquet")
    return tmp_path


def _measure(folder: Path) -> dict:
    result = measure_config(FolderSource(folder).load("default"), n_configs=1, source="folder", examples=0)
    (row,) = result.rows
    return {k: v for k, v in row.items() if k != "measured_at"}


def _reading_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("near-read")]


@pytest.mark.slow
def test_the_first_batch_is_read_before_the_pass_asks_for_it(monkeypatch, tmp_path):
    folder = _folder(tmp_path)
    expected = _measure(folder)
    assert '"pairs": 0' not in expected["near"]  # the planted pairs are found

    read = threading.Event()
    original_batches, original_aside = metrics._NearTexts._split_batches, metrics.Engine._set_tables_aside
    seen: dict[str, bool] = {}

    def split_batches(self, split):
        for item in original_batches(self, split):
            read.set()
            yield item

    def set_aside(self):  # before the pass starts: the thread has read a batch already
        seen["read before the pass"] = read.wait(20)
        original_aside(self)

    monkeypatch.setattr(metrics._NearTexts, "_split_batches", split_batches)
    monkeypatch.setattr(metrics.Engine, "_set_tables_aside", set_aside)
    assert _measure(folder) == expected
    assert seen == {"read before the pass": True}
    assert _reading_threads() == []


@pytest.mark.slow
@pytest.mark.parametrize("batch_rows", [1, 97, 4096])
def test_the_figures_and_fingerprints_do_not_depend_on_the_batches(monkeypatch, tmp_path, batch_rows):
    folder = _folder(tmp_path)
    expected = _measure(folder)
    monkeypatch.setattr(metrics, "NEAR_BATCH_ROWS", batch_rows)
    assert _measure(folder) == expected


@pytest.mark.slow
@pytest.mark.parametrize("where", ["the keys to keep", "setting the tables aside", "the pass"])
def test_a_near_stage_that_fails_leaves_no_reading_thread(monkeypatch, tmp_path, where):
    folder = _folder(tmp_path)

    def fail(*args, **kwargs):
        raise RuntimeError("planted failure")

    target = {"the keys to keep": (near, "sample_rate"), "setting the tables aside": (metrics.Engine, "_set_tables_aside"),
              "the pass": (near, "sketch_batches")}[where]
    monkeypatch.setattr(*target, fail)
    with pytest.raises(InternalError, match="planted failure"):
        _measure(folder)
    assert _reading_threads() == []  # joined, not left waiting for keys that never come


_UNDER_WORKQUEUE = """
import json, sys
from hubsurvey.survey import metrics
from hubsurvey.survey.measure import measure_config
from hubsurvey.survey.sources import FolderSource
import numba
metrics.NEAR_BATCH_ROWS = 64  # many batches: the reading thread fingerprints while the pass sketches
result = measure_config(FolderSource(sys.argv[1]).load("default"), n_configs=1, source="folder", examples=0)
(row,) = result.rows
print(json.dumps({"layer": numba.threading_layer(), "near": row["near"],
                  "fingerprints": [row[f"fingerprint_{s}"] for s in ("train", "validation", "test")]}))
"""


def test_the_near_stage_runs_on_numbas_workqueue_threading_layer(tmp_path):
    """numba's workqueue layer (its only one where neither TBB nor OpenMP is installed) aborts the
    process when two threads launch parallel passes at once: the reading thread's must not."""
    folder = _folder(tmp_path)
    expected = _measure(folder)
    run = subprocess.run([sys.executable, "-c", _UNDER_WORKQUEUE, str(folder)], capture_output=True, text=True,
                         env=os.environ | {"NUMBA_THREADING_LAYER": "workqueue"}, timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    got = json.loads(run.stdout.strip().splitlines()[-1])
    assert got == {"layer": "workqueue", "near": expected["near"],
                   "fingerprints": [expected[f"fingerprint_{s}"] for s in ("train", "validation", "test")]}
