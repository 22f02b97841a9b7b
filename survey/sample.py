"""A small, realistic sample dataset with planted leaks and duplicates: the embedded default.

``hubsurvey audit`` without a target writes it (deterministically) and audits it, so a fresh
clone shows real output without any network. The planted numbers are returned as ``PLANTED`` so
that a test can check the engine finds exactly them.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

LABELS = ["negative", "positive"]
WORDS = (
    ["film", "movie", "plot", "actor", "scene", "story", "music", "script", "camera", "ending", "director", "cast", "moment", "hour", "brilliant", "dull", "warm", "clumsy", "sharp", "slow", "funny", "tender", "bleak", "honest", "loud", "quiet", "clever", "flat", "never", "always", "rarely", "truly", "almost", "simply", "barely", "often"]
)
# What the generator plants (text key = the review text; the label is the ClassLabel). Beside
# LLE's exact copies it plants what each later method adds: case and whitespace variants (found
# by the normalized profile only) and one-word edits (found by the near-duplicate method only).
PLANTED = {
    "text_leaks_train_wrt_test": 40,  # test reviews copied into train (5 of them relabelled)
    "text_leaks_validation_wrt_test": 12,
    "text_duplication_train": 30,
    "text_duplication_validation": 4,
    "text_duplication_test": 9,  # 8 repeated reviews + 2 NULL texts (a NULL equals a NULL)
    "text_and_label_leaks_train_wrt_test": 35,
    "text_and_label_leaks_validation_wrt_test": 12,
    "raw_test_rows_in_train": 40,
    "normalized_test_rows_in_train": 40 + 8,  # + 8 test reviews in train in upper case or with doubled spaces
    "test_rows_near_train": 40 + 8 + 10,  # + 10 with one word replaced in train (character 5-gram J >= 0.85)
    "test_rows_near_train_conflicting_label": 5 + 3,  # the 5 relabelled copies and 3 relabelled edits
}
VARIANTS, EDITS, EDITS_RELABELLED = 8, 10, 3
SIZES = {"train": 2000, "validation": 300, "test": 500}


def _sentence(rng: random.Random, i: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 20))) + f" #{i}"


def _jaccard(a: str, b: str, n: int = 5) -> float:
    """Jaccard of two texts' character n-gram sets (the near-duplicate method's, on lower-case text)."""
    sa, sb = ({t[i:i + n] for i in range(len(t) - n + 1)} for t in (a, b))
    return len(sa & sb) / len(sa | sb)


def write_sample(out: Path, seed: int = 13) -> Path:
    """Write ``<out>/default/<split>/0000.parquet`` in the Hub's Parquet-branch layout."""
    rng = random.Random(seed)
    counter = iter(range(10**9))
    unique: dict[str, list[tuple[str | None, int]]] = {
        s: [(_sentence(rng, next(counter)), rng.randrange(2)) for _ in range(n)] for s, n in SIZES.items()
    }
    test = unique["test"]
    train, validation = unique["train"], unique["validation"]
    # Leaks: distinct test rows copied over; the first 5 train copies get the other label.
    for j in range(40):
        text, label = test[j]
        train[j] = (text, 1 - label if j < 5 else label)
    for j in range(12):
        validation[j] = test[100 + j]
    # Case and whitespace variants of test rows 120..127, in train: one normalized key each.
    for j in range(VARIANTS):
        text, label = test[120 + j]
        assert text is not None
        train[1000 + j] = (text.upper() if j % 2 else text.replace(" ", "  ", 3), label)
    # One-word edits of long test rows (from 140 on), in train; the first 3 relabelled.
    edited = 0
    for i in range(140, 200):
        text, label = test[i]
        assert text is not None
        words = text.split(" ")
        if len(words) < 17:
            continue
        at = rng.randrange(len(words) - 1)  # never the "#n" at the end
        new = [*words[:at], "superb" if words[at] != "superb" else "awful", *words[at + 1:]]
        if _jaccard(text, " ".join(new)) < 0.85:
            continue
        train[1100 + edited] = (" ".join(new), 1 - label if edited < EDITS_RELABELLED else label)
        edited += 1
        if edited == EDITS:
            break
    assert edited == EDITS
    # Within-split duplicates (distinct rows repeated once each).
    for j in range(30):
        train[-1 - j] = train[500 + j]
    for j in range(4):
        validation[-1 - j] = validation[50 + j]
    for j in range(8):
        test[-1 - j] = test[200 + j]
    test[300] = (None, 0)
    test[301] = (None, 0)
    features = {"text": {"dtype": "string", "_type": "Value"}, "label": {"names": LABELS, "_type": "ClassLabel"}}
    meta = {b"huggingface": json.dumps({"info": {"features": features}}).encode()}
    for split, rows in (("train", train), ("validation", validation), ("test", test)):
        table = pa.table({"text": [t for t, _ in rows], "label": pa.array([label for _, label in rows], pa.int64())})
        folder = out / "default" / split
        folder.mkdir(parents=True, exist_ok=True)
        pq.write_table(table.replace_schema_metadata(meta), folder / "0000.parquet")
    return out
