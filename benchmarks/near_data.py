"""The near-duplicate benchmark's dataset: the engine benchmark's, with near-duplicates planted at known pairs.

    python benchmarks/near_data.py [--rows 1000000] [--out /tmp/hubsurvey-bench]

It starts from ``bench_engine.generate`` (80% / 10% / 10%, texts of about 20 words, one ClassLabel,
its planted exact leaks and duplicates) and plants, each with ONE edit of the source text:

- 2% of test rows copied into train (``test_train``);
- 1% of validation rows copied into train (``validation_train``);
- 1% of test rows repeated at a later test position (``test_test``);

the edits cycling through: a word replaced, a word deleted, punctuation added to a word, one word's
case changed, two words swapped. Three plants in twenty get 2, 3 or 4 edits instead, so that some
pairs fall between J = 0.6 and 0.8 (one edit of a 20-word text stays above 0.8). A quarter of the copies carry another label (``label_flipped``).
Each planted pair's exact Jaccard under NEAR_SPEC (normalized text, character 5-gram shingle sets)
is computed with plain Python sets and written to ``truth.json`` beside the splits. Seeded and
cached on disk, like ``bench_exact.generate_variants`` (same folder layout, HF features metadata kept).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from bench_engine import generate

from hubsurvey.survey.normalize import normalize_text

SPLITS = ("train", "validation", "test")
EDITS = ("replace", "delete", "punctuation", "case", "swap")
MORE_EDITS = {9: 1, 14: 2, 19: 3}  # plant number % 20 -> edits beyond the first (the rest: one edit)
SHINGLE_SIZE = 5


def shingle_set(text: str, n: int = SHINGLE_SIZE) -> set[str]:
    """NEAR_SPEC's shingle set of a row's (already normalized) text: its character n-grams, or the text itself if shorter."""
    if len(text) < n:
        return {text}
    return {text[i:i + n] for i in range(len(text) - n + 1)}


def jaccard(a: str, b: str) -> float:
    """Exact Jaccard similarity of two raw texts' shingle sets (the text is normalized first)."""
    sa, sb = shingle_set(normalize_text(a)), shingle_set(normalize_text(b))
    return len(sa & sb) / len(sa | sb)


def edit(text: str, kind: str, rng) -> str:
    """One edit of a text of space-separated words; the result always differs from the input."""
    words = text.split(" ")
    k = int(rng.integers(0, len(words)))
    if kind == "replace":
        words[k] = f"w{int(rng.integers(20000, 40000))}"  # outside the generator's vocabulary: a real change
    elif kind == "delete":
        del words[k]
    elif kind == "punctuation":
        words[k] += str(rng.choice([",", ".", "!", "?", ";"]))
    elif kind == "case":
        words[k] = words[k].upper()  # invisible to the normalized profile: J = 1
    else:  # swap two distinct words (adjacent or not)
        j = (k + 1 + int(rng.integers(0, len(words) - 1))) % len(words)
        words[k], words[j] = words[j], words[k]
        if words[k] == words[j]:  # the same word twice: swap something else in
            words[k] = f"w{int(rng.integers(20000, 40000))}"
    return " ".join(words)


def generate_near(out: Path, rows: int = 1_000_000) -> tuple[Path, dict]:
    """The dataset folder (``<folder>/default/<split>/0000.parquet``) and its truth (the planted pairs)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    target = out / f"bench__near-{rows}"
    truth_path = target / "truth.json"
    if truth_path.exists():
        return target, json.loads(truth_path.read_text())
    base = generate(out, rows)
    rng = np.random.default_rng(12)
    tables = {s: pq.read_table(base / "default" / s / "0000.parquet") for s in SPLITS}
    meta = tables["test"].schema.metadata
    texts = {s: t.column("text").to_pylist() for s, t in tables.items()}
    labels = {s: t.column("label").to_numpy().copy() for s, t in tables.items()}
    n = {s: len(texts[s]) for s in SPLITS}

    # Disjoint roles, so no planted pair is overwritten by another: test rows are sources (for train,
    # for a later test row) or targets (a later test row), train rows are targets, validation rows sources.
    test_order = rng.permutation(n["test"])
    n_tt, n_tr = n["test"] // 50, n["test"] // 100
    test_sources = test_order[:n_tt]
    repeat_pairs = np.sort(test_order[n_tt:n_tt + 2 * n_tr].reshape(-1, 2), axis=1)  # (earlier, later)
    val_sources = rng.choice(n["validation"], n["validation"] // 100, replace=False)
    train_targets = rng.choice(n["train"], len(test_sources) + len(val_sources), replace=False)

    plants = []  # (kind, target split, target pos, source split, source pos)
    plants += [("test_train", "train", int(t), "test", int(s)) for t, s in zip(train_targets, test_sources)]
    plants += [("validation_train", "train", int(t), "validation", int(s))
               for t, s in zip(train_targets[len(test_sources):], val_sources)]
    plants += [("test_test", "test", int(later), "test", int(earlier)) for earlier, later in repeat_pairs]
    pairs = []
    for i, (kind, t_split, t_pos, s_split, s_pos) in enumerate(plants):
        # Most plants get one edit; every tenth 2, 3 or 4, so some pairs fall in 0.6 <= J < 0.8.
        hows = [EDITS[i % len(EDITS)]] + [EDITS[(i + k) % len(EDITS)] for k in range(1, MORE_EDITS.get(i % 20, 0) + 1)]
        how = "+".join(hows)
        flipped = i % 4 == 3
        new_text = texts[s_split][s_pos]
        for one in hows:
            new_text = edit(new_text, one, rng)
        texts[t_split][t_pos] = new_text
        labels[t_split][t_pos] = (labels[s_split][s_pos] + (1 if flipped else 0)) % 5
        # The pair as the figures see it: the (test or validation) row first, then the row it is near.
        a_split, a_pos, b_split, b_pos = (s_split, s_pos, t_split, t_pos) if kind != "test_test" else (
            t_split, t_pos, s_split, s_pos)
        pairs.append({"kind": kind, "a_split": a_split, "a": a_pos, "b_split": b_split, "b": b_pos,
                      "edit": how, "label_flipped": flipped,
                      "j": round(jaccard(texts[a_split][a_pos], texts[b_split][b_pos]), 6)})
    for split, table in tables.items():
        folder = target / "default" / split
        folder.mkdir(parents=True, exist_ok=True)
        new = pa.table({"text": texts[split], "label": pa.array(labels[split], pa.int64())})
        assert new.schema.names == table.schema.names
        pq.write_table(new.replace_schema_metadata(meta), folder / "0000.parquet")
    truth = {"rows": rows, "splits": n, "shingle_size": SHINGLE_SIZE, "pairs": pairs}
    truth_path.write_text(json.dumps(truth))
    return target, truth


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--out", type=Path, default=Path("/tmp/hubsurvey-bench"))
    args = parser.parse_args()
    folder, truth = generate_near(args.out, args.rows)
    js = [p["j"] for p in truth["pairs"]]
    print(f"{folder}: {len(js)} planted pairs")
    for kind in ("test_train", "validation_train", "test_test"):
        print(f"  {kind:<18}{sum(p['kind'] == kind for p in truth['pairs']):>7}")
    for edits in (1, 2, 3, 4):
        ej = sorted(p["j"] for p in truth["pairs"] if p["edit"].count("+") + 1 == edits)
        print(f"  {edits} edit(s) {len(ej):>6} pairs: J min {ej[0]:.3f}  median {ej[len(ej) // 2]:.3f}  max {ej[-1]:.3f}")
    for edit_kind in EDITS:
        ej = sorted(p["j"] for p in truth["pairs"] if p["edit"] == edit_kind)
        print(f"  {edit_kind:<12} J min {ej[0]:.3f}  median {ej[len(ej) // 2]:.3f}  max {ej[-1]:.3f}")
    for tau in (0.9, 0.8, 0.7, 0.6):
        print(f"  J >= {tau}: {sum(j >= tau for j in js)}")


if __name__ == "__main__":
    main()
