"""A deterministic mini-hub: ~20 small datasets with planted leaks, and the truth about them.

``generate_minihub(out, seed=0, filler=0)`` writes a hub root that ``StandinHub`` serves:

- ``index.json``: ``{"datasets": [...], "models": [...], "filler": {"count": N, "seed": S}}`` (filler only
  if N > 0; models: ``MODELS``, whose cards declare mini-hub datasets);
- ``<owner>__<name>/<config>/<split>/NNNN.parquet``: the Parquet-branch layout, files written with
  pyarrow and carrying HF features (ClassLabel names included) under ``b"huggingface"``;
- ``truth.json``: ``{"seed", "expected": {id: outcome}, "measurements": [...], "benchmarks": [...],
  "contamination": [...], "exposure": {dataset id: [model ids]}}`` (benchmarks: see "contamination with benchmarks" below), where each
  measurement is ``{"dataset_id", "config", "label_column", "text_columns", "figures"}`` and the
  figures are ``reference.lle_reference`` of the rows written, splits mapped to canonical names
  (valid/dev → validation). There is one measurement per eligible (dataset, config, label
  column), or per (dataset, config) with ``label_column: null`` when there is no ClassLabel. A
  measurement of two text columns or more also has ``"per_column"``: ``{column: {profile: figures}}``,
  ``reference.per_column_reference`` of the rows written (names without the profile's prefix).
  ``qa_shared_contexts`` (questions sharing passages, split by question) and ``nli_shared_premises``
  (premises shared by their hypotheses, split by pair) plant passages and premises across splits.

Roles behind the truth: text columns are the string / list-of-string columns that are not id-like
(the ``id`` columns differ on every row, so a tool that used them would find no leak at all); label
columns are the ClassLabel and list-of-ClassLabel columns.

Expected crawl outcomes: ``eligible``, ``gated``, ``no_test_split``, ``too_many_rows``,
``not_text``, ``no_parquet_export``, and ``error:private`` (listed and readable only with an
approved token), ``error:disabled`` (the Hub answers 403 "disabled"), ``error:corrupt_parquet``
(the test split's file has a garbage footer).

Every dataset draws from its own ``random.Random(f"{seed}:{id}")``, so the output is a function of
the seed alone: same seed, byte-identical index.json, truth.json and Parquet files.
"""

from __future__ import annotations

import copy
import json
import random
import struct
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hubsurvey.core.splits import SPLIT_ALIASES  # the method's aliases: the truth uses the same

from . import parquetio as pio
from .filler import BIG_ROWS, big_text_parquet
from .reference import PROFILES, cross_reference, lle_reference, per_column_reference
from .repos import iso_date

_WORDS = (
    "the", "a", "an", "quiet", "river", "market", "engine", "storm", "garden", "paper", "signal", "orbit",
    "winter", "copper", "silver", "forest", "harbor", "lantern", "meadow", "velvet", "thunder", "canvas",
    "crystal", "ember", "falcon", "glacier", "horizon", "island", "jungle", "kettle", "ladder", "mirror",
    "needle", "ocean", "pepper", "quartz", "rocket", "saddle", "timber", "umbrella", "valley", "walnut",
    "runs", "jumps", "sings", "breaks", "opens", "falls", "shines", "waits", "grows", "moves", "slowly",
    "quickly", "today", "again", "never", "always", "under", "over", "near", "beyond", "with", "without",
)
_FR_WORDS = (
    "le", "la", "un", "une", "rivière", "marché", "moteur", "orage", "jardin", "papier", "signal", "hiver",
    "cuivre", "argent", "forêt", "port", "lanterne", "prairie", "velours", "tonnerre", "toile", "cristal",
    "faucon", "glacier", "île", "échelle", "miroir", "aiguille", "océan", "poivre", "fusée", "vallée",
    "court", "saute", "chante", "casse", "ouvre", "tombe", "brille", "attend", "lentement", "vite",
)
_NER = ["O", "B-PER", "I-PER", "B-ORG", "I-ORG", "B-LOC", "I-LOC", "B-MISC", "I-MISC"]
_POS = ["DT", "NN", "NNS", "VB", "VBZ", "JJ", "RB", "IN", "CC", "PRP", "."]
_COARSE = ["ABBR", "ENTY", "DESC", "HUM", "LOC", "NUM"]
_FINE = [f"{c}:{s}" for c in _COARSE for s in ("a", "b")]  # fine label k belongs to coarse k // 2
COPY_THRESHOLD = 0.8  # the cross-2026 method's default, which the truth is computed with
_SIZE_BOUNDS = ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"), (1_000_000, "100K<n<1M"),
                (10_000_000, "1M<n<10M"))


@dataclass
class _Spec:
    """One dataset to write. ``configs``: config → split name as written → rows."""

    id: str
    expected: str
    task: str
    features: dict[str, pio.Feature]
    configs: dict[str, dict[str, list[dict[str, Any]]]]
    text_columns: list[str]
    label_columns: list[str]
    modality: str = "text"
    languages: tuple[str, ...] = ("en",)
    entry: dict[str, Any] = field(default_factory=dict)  # extra index.json keys (gated, private, ...)
    train_shards: int = 1
    replace_files: dict[str, bytes] = field(default_factory=dict)  # relative path → bytes to write instead
    row_counts: dict[str, dict[str, int]] = field(default_factory=dict)  # overrides, for replaced files


class _Gen(random.Random):
    """A seeded RNG with the sentence and leak-planting helpers the datasets share."""

    def __init__(self, seed: int, repo_id: str) -> None:
        super().__init__(f"{seed}:{repo_id}")
        self.used: set[Any] = set()

    def sentence(self, words=_WORDS, lo: int = 5, hi: int = 12) -> str:
        """A sentence never produced before by this generator (so every planted leak is deliberate)."""
        while True:
            text = " ".join(self.choices(words, k=self.randint(lo, hi)))
            if text not in self.used:
                self.used.add(text)
                return text

    def tokens(self, lo: int = 4, hi: int = 14) -> list[str]:
        while True:
            toks = [*self.choices(_WORDS, k=self.randint(lo, hi)), "."]
            if tuple(toks) not in self.used:
                self.used.add(tuple(toks))
                return toks

    def copy_rows(self, src: list[dict], dst: list[dict], k: int,
                  mutate: Callable[[dict], None] | None = None) -> None:
        """Append copies of ``k`` distinct rows of ``src`` to ``dst`` (mutated, if given)."""
        for row in self.sample(src, k):
            new = copy.deepcopy(row)
            if mutate:
                mutate(new)
            dst.append(new)


def _plant(g: _Gen, splits: dict[str, list[dict]], relabel: Callable[[dict], None], *,
           train_leaks: int, train_relabeled: int, val_leaks: int = 0, val_relabeled: int = 0,
           train_dups: int = 0, train_dups_relabeled: int = 0, val_dups: int = 0, test_dups: int = 0) -> None:
    """Plant leaks (test rows copied into train/validation, some with another label) and
    within-split duplicates, then shuffle every split. ``splits`` uses canonical names."""
    test = list(splits["test"])
    g.copy_rows(test, splits["train"], train_leaks)
    g.copy_rows(test, splits["train"], train_relabeled, relabel)
    if "validation" in splits:
        g.copy_rows(test, splits["validation"], val_leaks)
        g.copy_rows(test, splits["validation"], val_relabeled, relabel)
        g.copy_rows(list(splits["validation"]), splits["validation"], val_dups)
    train = list(splits["train"])
    g.copy_rows(train, splits["train"], train_dups)
    g.copy_rows(train, splits["train"], train_dups_relabeled, relabel)
    g.copy_rows(test, splits["test"], test_dups)
    for rows in splits.values():
        g.shuffle(rows)


def _rename(splits: dict[str, list[dict]], **names: str) -> dict[str, list[dict]]:
    """Rename canonical splits to the names written (e.g. ``validation="dev"``)."""
    return {names.get(s, s): rows for s, rows in splits.items()}


def _number_ids(splits: dict[str, list[dict]], prefix: str) -> None:
    """Give every row its own ``id`` (copies too: ids are exactly what must not be compared)."""
    for split, rows in splits.items():
        for i, row in enumerate(rows):
            row["id"] = f"{prefix}-{split}-{i:05d}"


# ---------------------------------------------------------------- dataset builders


def _classification(g: _Gen, sizes: dict[str, int], n_labels: int, words=_WORDS, **plant: int) -> dict[str, list[dict]]:
    splits = {s: [{"text": g.sentence(words), "label": g.randrange(n_labels)} for _ in range(n)] for s, n in sizes.items()}

    def relabel(row: dict) -> None:
        row["label"] = (row["label"] + 1) % n_labels

    _plant(g, splits, relabel, **plant)
    return splits


def _text_spec(seed: int, repo_id: str, expected: str = "eligible", *, validation: str | None = "validation",
               sizes=(400, 100, 150), entry: dict | None = None, **plant: int) -> _Spec:
    """A text + ClassLabel dataset (the most common eligible shape), validation split optional."""
    g = _Gen(seed, repo_id)
    train, val, test = sizes
    counts = {"train": train, "test": test} | ({"validation": val} if validation else {})
    plan = {"train_leaks": 6, "train_relabeled": 3, "val_leaks": 2 if validation else 0,
            "val_relabeled": 1 if validation else 0, "train_dups": 4, "train_dups_relabeled": 2, "test_dups": 2} | plant
    splits = _classification(g, counts, 2, **plan)
    if validation:
        splits = _rename(splits, validation=validation)
    features = {"text": pio.value("string"), "label": pio.class_label(["negative", "positive"])}
    return _Spec(repo_id, expected, "text-classification", features, {"default": splits}, ["text"], ["label"],
                 entry=entry or {})


def _token_classification(seed: int) -> _Spec:
    repo_id = "mini-nlp/toy_ner"
    g = _Gen(seed, repo_id)

    def row() -> dict:
        toks = g.tokens()
        return {"tokens": toks, "pos_tags": [g.randrange(len(_POS)) for _ in toks],
                "ner_tags": [g.randrange(len(_NER)) for _ in toks]}

    splits = {s: [row() for _ in range(n)] for s, n in (("train", 500), ("validation", 120), ("test", 160))}

    def relabel(r: dict) -> None:  # a different entity tag; the POS tags stay as they were
        r["ner_tags"] = [(r["ner_tags"][0] + 1) % len(_NER), *r["ner_tags"][1:]]

    _plant(g, splits, relabel, train_leaks=9, train_relabeled=4, val_leaks=3, val_relabeled=2,
           train_dups=7, train_dups_relabeled=3, val_dups=2, test_dups=3)
    _number_ids(splits, "ner")
    splits = {s: [{k: r[k] for k in ("id", "tokens", "pos_tags", "ner_tags")} for r in rows] for s, rows in splits.items()}
    features = {"id": pio.value("string"), "tokens": pio.list_of(pio.value("string")),
                "pos_tags": pio.list_of(pio.class_label(_POS)), "ner_tags": pio.list_of(pio.class_label(_NER))}
    return _Spec(repo_id, "eligible", "token-classification", features, {"default": splits}, ["tokens"],
                 ["pos_tags", "ner_tags"])


def _sentence_pairs(seed: int) -> _Spec:
    repo_id = "mini-nlp/nli_pairs"
    g = _Gen(seed, repo_id)
    splits = {s: [{"premise": g.sentence(), "hypothesis": g.sentence(lo=3, hi=7), "label": g.randrange(3)}
                  for _ in range(n)] for s, n in (("train", 450), ("validation", 90), ("test", 120))}
    # Same premise with a new hypothesis: not a leak, the key is the (premise, hypothesis) pair.
    for row in g.sample(splits["test"], 5):
        splits["train"].append({"premise": row["premise"], "hypothesis": g.sentence(lo=3, hi=7), "label": row["label"]})

    def relabel(r: dict) -> None:
        r["label"] = (r["label"] + 1) % 3

    _plant(g, splits, relabel, train_leaks=7, train_relabeled=3, val_leaks=2, train_dups=3, test_dups=1)
    features = {"premise": pio.value("string"), "hypothesis": pio.value("string"),
                "label": pio.class_label(["entailment", "neutral", "contradiction"])}
    return _Spec(repo_id, "eligible", "text-classification", features, {"default": splits},
                 ["premise", "hypothesis"], ["label"])


def _question_answering(seed: int) -> _Spec:
    repo_id = "mini-nlp/qa_small"
    g = _Gen(seed, repo_id)

    def row() -> dict:
        context = g.sentence(lo=12, hi=20)
        start = g.randrange(len(context) // 2)
        answer = context[start:start + 6]
        return {"question": g.sentence(lo=4, hi=8) + "?", "context": context,
                "answers": {"text": [answer], "answer_start": [start]}}

    splits = {s: [row() for _ in range(n)] for s, n in (("train", 300), ("validation", 80), ("test", 100))}
    _plant(g, splits, lambda r: None, train_leaks=5, train_relabeled=0, val_leaks=2, train_dups=3, test_dups=2)
    _number_ids(splits, "qa")
    splits = {s: [{k: r[k] for k in ("id", "question", "context", "answers")} for r in rows] for s, rows in splits.items()}
    features = {"id": pio.value("string"), "question": pio.value("string"), "context": pio.value("string"),
                "answers": {"text": pio.list_of(pio.value("string")), "answer_start": pio.list_of(pio.value("int32"))}}
    return _Spec(repo_id, "eligible", "question-answering", features, {"default": splits},
                 ["question", "context"], [])


def _shuffled_into_splits(g: _Gen, rows: list[dict], shares: dict[str, float]) -> dict[str, list[dict]]:
    """``rows`` shuffled, then cut into splits of the given shares (the last takes the rest): a random
    split by row, as a dataset that splits its questions (not its passages) does."""
    g.shuffle(rows)
    splits, at = {}, 0
    for i, (split, share) in enumerate(shares.items()):
        end = len(rows) if i == len(shares) - 1 else at + round(share * len(rows))
        splits[split] = rows[at:end]
        at = end
    return splits


def _qa_shared_contexts(seed: int) -> _Spec:
    """Several questions per passage, split at random by question: most test passages are in train,
    while few test rows (question and passage) are; a few test rows are also copied into train whole."""
    repo_id = "mini-nlp/qa_shared_contexts"
    g = _Gen(seed, repo_id)
    rows = []
    for _ in range(70):
        context = g.sentence(lo=14, hi=22)
        for _ in range(g.randint(2, 5)):
            start = g.randrange(len(context) // 2)
            rows.append({"question": g.sentence(lo=4, hi=8) + "?", "context": context,
                         "answers": {"text": [context[start:start + 8]], "answer_start": [start]}})
    splits = _shuffled_into_splits(g, rows, {"train": 0.7, "validation": 0.1, "test": 0.2})
    _plant(g, splits, lambda r: None, train_leaks=4, train_relabeled=0, test_dups=1)
    _number_ids(splits, "qas")
    splits = {s: [{k: r[k] for k in ("id", "question", "context", "answers")} for r in rows] for s, rows in splits.items()}
    features = {"id": pio.value("string"), "question": pio.value("string"), "context": pio.value("string"),
                "answers": {"text": pio.list_of(pio.value("string")), "answer_start": pio.list_of(pio.value("int32"))}}
    return _Spec(repo_id, "eligible", "question-answering", features, {"default": splits},
                 ["question", "context"], [])


def _nli_shared_premises(seed: int) -> _Spec:
    """Three hypotheses per premise (one per label), split at random by pair: premises shared across
    splits; a few test pairs copied into train, some with another label."""
    repo_id = "mini-nlp/nli_shared_premises"
    g = _Gen(seed, repo_id)
    rows = [{"premise": premise, "hypothesis": g.sentence(lo=3, hi=7), "label": label}
            for premise in (g.sentence(lo=6, hi=12) for _ in range(90)) for label in range(3)]
    splits = _shuffled_into_splits(g, rows, {"train": 0.75, "test": 0.25})

    def relabel(r: dict) -> None:
        r["label"] = (r["label"] + 1) % 3

    _plant(g, splits, relabel, train_leaks=3, train_relabeled=2, train_dups=2)
    features = {"premise": pio.value("string"), "hypothesis": pio.value("string"),
                "label": pio.class_label(["entailment", "neutral", "contradiction"])}
    return _Spec(repo_id, "eligible", "text-classification", features, {"default": splits},
                 ["premise", "hypothesis"], ["label"])


def _multi_config(seed: int) -> _Spec:
    repo_id = "mini-lab/multi_config"
    g = _Gen(seed, repo_id)
    en = _classification(g, {"train": 300, "validation": 60, "test": 100}, 3, train_leaks=4, train_relabeled=2,
                         val_leaks=1, train_dups=2, test_dups=1)
    fr = _classification(g, {"train": 250, "test": 80}, 3, _FR_WORDS, train_leaks=3, train_relabeled=1,
                         train_dups=3, train_dups_relabeled=1, test_dups=2)
    features = {"text": pio.value("string"), "label": pio.class_label(["sport", "politics", "science"])}
    return _Spec(repo_id, "eligible", "text-classification", features, {"en": en, "fr": fr}, ["text"], ["label"],
                 languages=("en", "fr"))


def _two_label_columns(seed: int) -> _Spec:
    repo_id = "mini-lab/question_types"
    g = _Gen(seed, repo_id)

    def row() -> dict:
        fine = g.randrange(len(_FINE))
        return {"text": g.sentence() + "?", "coarse_label": fine // 2, "fine_label": fine}

    splits = {s: [row() for _ in range(n)] for s, n in (("train", 400), ("test", 120))}

    def relabel(r: dict) -> None:  # the other fine label of the same coarse class
        r["fine_label"] ^= 1

    _plant(g, splits, relabel, train_leaks=5, train_relabeled=4, train_dups=3, train_dups_relabeled=2, test_dups=1)
    features = {"text": pio.value("string"), "coarse_label": pio.class_label(_COARSE),
                "fine_label": pio.class_label(_FINE)}
    return _Spec(repo_id, "eligible", "text-classification", features, {"default": splits}, ["text"],
                 ["coarse_label", "fine_label"])


def _messy_text(seed: int) -> _Spec:
    """NULL texts, Unicode look-alikes, emoji, whitespace and case variants, and an id column."""
    repo_id = "mini-lab/messy_text"
    g = _Gen(seed, repo_id)
    splits = {s: [{"text": g.sentence(), "label": g.randrange(2)} for _ in range(n)]
              for s, n in (("train", 200), ("validation", 60), ("test", 80))}
    pairs = [  # (train text, test text): equal pairs are leaks, the others only look alike
        ("café au lait", "cafe\u0301 au lait"),  # precomposed vs combining accent: different strings
        ("naïve approach", "naïve approach"),
        ("I love it 😍", "I love it 😍"),
        ("👩‍💻 coding all night", "👩‍💻 coding all night"),  # zero-width-joiner emoji
        ("Straße gesperrt", "Straße gesperrt"),
        ("مرحبا بالعالم", "مرحبا بالعالم"),
        ("東京は晴れ", "東京は晴れ"),
        ("hello world", "hello  world"),  # double space
        ("Good Morning", "good morning"),  # case
        ("trailing space ", "trailing space"),
    ]
    for train_text, test_text in pairs:
        label = g.randrange(2)
        splits["train"].append({"text": train_text, "label": label})
        splits["test"].append({"text": test_text, "label": label})
    for split, labels in (("train", (0, 0)), ("validation", (1,)), ("test", (0, 1))):
        splits[split] += [{"text": None, "label": lab} for lab in labels]  # NULL == NULL, a duplicate

    def relabel(r: dict) -> None:
        r["label"] ^= 1

    _plant(g, splits, relabel, train_leaks=3, train_relabeled=2, val_leaks=1, train_dups=2, test_dups=1)
    _number_ids(splits, "messy")
    splits = {s: [{k: r[k] for k in ("id", "text", "label")} for r in rows] for s, rows in splits.items()}
    features = {"id": pio.value("string"), "text": pio.value("string"), "label": pio.class_label(["neg", "pos"])}
    return _Spec(repo_id, "eligible", "text-classification", features, {"default": splits}, ["text"], ["label"],
                 languages=("en", "fr", "de", "ar", "ja"))


def _png(rgb: tuple[int, int, int]) -> bytes:
    """A valid 2x2 RGB PNG of one colour."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    raw = b"".join(b"\x00" + bytes(rgb) * 2 for _ in range(2))
    header = struct.pack(">IIBBBBB", 2, 2, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b"")


def _images(seed: int) -> _Spec:
    repo_id = "mini-misc/images"
    g = _Gen(seed, repo_id)
    names = ["red", "green", "blue"]

    def row() -> dict:
        label = g.randrange(3)
        rgb = tuple(g.randrange(256) if i != label else 255 for i in range(3))
        return {"image": {"bytes": _png(rgb), "path": None}, "label": label}

    splits = {s: [row() for _ in range(n)] for s, n in (("train", 60), ("test", 20))}
    features = {"image": pio.media("Image"), "label": pio.class_label(names)}
    return _Spec(repo_id, "not_text", "image-classification", features, {"default": splits}, [], ["label"],
                 modality="image")


def _tabular(seed: int) -> _Spec:
    repo_id = "mini-misc/tabular"
    g = _Gen(seed, repo_id)
    splits = {s: [{"x0": g.random(), "x1": g.random(), "x2": g.gauss(0, 1), "target": g.randrange(2)} for _ in range(n)]
              for s, n in (("train", 120), ("test", 50))}
    features = {"x0": pio.value("float64"), "x1": pio.value("float64"), "x2": pio.value("float64"),
                "target": pio.class_label(["no", "yes"])}
    return _Spec(repo_id, "not_text", "tabular-classification", features, {"default": splits}, [], ["target"],
                 modality="tabular")


def _huge_rows(seed: int) -> _Spec:
    """A train split whose footer says 1.1M rows (a few kB on disk), tagged 1M<n<10M."""
    spec = _text_spec(seed, "mini-misc/huge_rows", "too_many_rows", validation=None, sizes=(50, 0, 50))
    spec.replace_files["default/train/0000.parquet"] = big_text_parquet()
    spec.row_counts = {"default": {"train": BIG_ROWS, "test": len(spec.configs["default"]["test"])}}
    return spec


def _corrupt(seed: int) -> _Spec:
    spec = _text_spec(seed, "mini-misc/corrupt_file", "error:corrupt_parquet")
    test_rows = spec.configs["default"]["test"]
    good = pio.parquet_bytes(pio.rows_to_columns(test_rows, list(spec.features)), spec.features)
    spec.replace_files["default/test/0000.parquet"] = pio.garble_footer(good)
    return spec


# Leaks across datasets: a fork, and one dataset's test split copied into other datasets' train.
FORK_OF = {"mini-forks/sentiment_mirror": "mini-nlp/sentiment"}
#: (source of the test rows, dataset receiving them, rows copied into its train, into its validation)
CROSS_PLANTS = (
    ("mini-nlp/reviews_valid", "mini-lab/reviews_absorbed", None, 0),  # the whole test split into train
    ("mini-nlp/topics_no_val", "mini-lab/topics_partial", 40, 6),  # a third of it into train, a few into validation
)


def _fork(spec: _Spec, repo_id: str) -> _Spec:
    """A copy of a dataset under a new id: the same rows in the same files (a mirror, a re-upload)."""
    fork = copy.deepcopy(spec)
    fork.id = repo_id
    return fork


def _absorbing(seed: int, repo_id: str, source: _Spec, train_rows: int | None, validation_rows: int) -> _Spec:
    """A dataset of its own whose train split also holds ``train_rows`` of ``source``'s test rows
    (None: all of them) and whose validation holds ``validation_rows`` others: a test set leaked
    into another dataset's training data."""
    spec = _text_spec(seed, repo_id, sizes=(300, 60, 100))
    g = _Gen(seed, repo_id + ":cross")
    test = source.configs["default"]["test"]
    picked = g.sample(test, len(test) if train_rows is None else train_rows + validation_rows)
    splits = spec.configs["default"]
    splits["train"] += [copy.deepcopy(r) for r in picked[:len(picked) - validation_rows]]
    splits["validation"] += [copy.deepcopy(r) for r in picked[len(picked) - validation_rows:]]
    for rows in splits.values():
        g.shuffle(rows)
    return spec


def _specs(seed: int) -> list[_Spec]:
    sentiment = _text_spec(seed, "mini-nlp/sentiment", sizes=(900, 150, 200), train_leaks=12, train_relabeled=5,
                           val_leaks=4, val_relabeled=2, train_dups=10, train_dups_relabeled=3, val_dups=2, test_dups=4)
    sentiment.train_shards = 2  # 0000.parquet and 0001.parquet
    reviews = _text_spec(seed, "mini-nlp/reviews_valid", validation="valid")
    topics = _text_spec(seed, "mini-nlp/topics_no_val", validation=None, sizes=(350, 0, 120))
    sources = {reviews.id: reviews, topics.id: topics}
    crossed = [_absorbing(seed, target, sources[source], train, validation)
               for source, target, train, validation in CROSS_PLANTS]
    no_test = _text_spec(seed, "mini-misc/train_only", "no_test_split")
    no_test.configs["default"].pop("test")
    no_export = _text_spec(seed, "mini-misc/no_export", "no_parquet_export", entry={"parquet_export": False})
    no_export.configs = {}
    return [
        _token_classification(seed),
        sentiment,
        reviews,
        _text_spec(seed, "mini-nlp/intents_dev", validation="dev", sizes=(300, 60, 90)),
        topics,
        _sentence_pairs(seed),
        _question_answering(seed),
        _qa_shared_contexts(seed),
        _nli_shared_premises(seed),
        _multi_config(seed),
        _two_label_columns(seed),
        _messy_text(seed),
        _text_spec(seed, "mini-gated/gated_auto", "gated", entry={"gated": "auto"}),
        _text_spec(seed, "mini-gated/gated_manual", "gated", entry={"gated": "manual"}),
        _text_spec(seed, "mini-private/secret_reviews", "error:private", entry={"private": True}),
        _text_spec(seed, "mini-misc/disabled_reviews", "error:disabled", entry={"disabled": True}),
        no_test,
        _huge_rows(seed),
        _images(seed),
        _tabular(seed),
        no_export,
        _corrupt(seed),
        *(_fork(sentiment, fork) for fork in FORK_OF),
        *crossed,
    ]


# ------------------------------------------------------------------------ contamination with benchmarks
# Two mini-hub test splits are the benchmarks (tests and the demo index them through the stand-in):
# qa_small's contexts (12 to 20 words: passages, and 12-word items matched whole) and sentiment's
# texts (5 to 12 words: all matched whole). Their items are planted into other datasets' train
# splits: copied with changed case and whitespace, and as 13- to 16-word passages inside longer texts
# (in a text column, a list-of-tokens column, and one column of a two-column row). truth.json's
# "contamination" is computed from the rows written, in plain Python (_contamination_truth).

#: the mini-hub's benchmarks, as a benchmarks file lists them
BENCHMARKS = [
    {"id": "mini-nlp/qa_small", "config": "default", "split": "test", "text_columns": ["context"]},
    {"id": "mini-nlp/sentiment", "config": "default", "split": "test", "text_columns": ["text"]},
]


def _vary(g: random.Random, text: str) -> str:
    """The same item with its case and whitespace changed (the normalized profile undoes both)."""
    words = text.split(" ")
    case = g.choice([str.upper, str.title, str.swapcase, str.capitalize])
    seps = [g.choice([" ", "  ", "\t", " \n "]) for _ in words[1:]]
    out = case(words[0]) + "".join(sep + case(w) for sep, w in zip(seps, words[1:]))
    return g.choice(["", " ", "\t"]) + out + g.choice(["", "  ", "\n"])


def _passage(g: random.Random, item: str) -> str:
    """13 to 16 consecutive words of a long item (cased at random)."""
    words = item.split(" ")
    k = g.randint(13, min(16, len(words)))
    at = g.randrange(len(words) - k + 1)
    return " ".join(w.upper() if g.random() < 0.3 else w for w in words[at:at + k])


def _plant_benchmarks(seed: int, specs: list[_Spec]) -> None:
    by_id = {s.id: s for s in specs}
    contexts = [r["context"] for r in by_id["mini-nlp/qa_small"].configs["default"]["test"]]
    long_items = [c for c in contexts if len(c.split()) >= 13]
    short_items = [r["text"] for r in by_id["mini-nlp/sentiment"].configs["default"]["test"]]

    def insert(target: str, split: str, new_rows: list[dict]) -> None:
        g = random.Random(f"{seed}:bench-plant:{target}:{split}")
        rows = by_id[target].configs["default"][split]
        for row in new_rows:
            rows.insert(g.randrange(len(rows) + 1), row)

    g = random.Random(f"{seed}:bench-plant")
    # short items copied whole, case and whitespace changed
    insert("mini-nlp/topics_no_val", "train",
           [{"text": _vary(g, t), "label": g.randrange(2)} for t in g.sample(short_items, 5)])
    # long items copied whole (case and whitespace changed), and short ones exactly
    insert("mini-nlp/reviews_valid", "train",
           [{"text": _vary(g, t), "label": g.randrange(2)} for t in g.sample(long_items, 4)]
           + [{"text": t, "label": g.randrange(2)} for t in g.sample(short_items, 3)])

    def filler(lo: int, hi: int) -> str:
        return " ".join(g.choices(_FR_WORDS, k=g.randint(lo, hi)))  # words no benchmark item has

    # 13- to 16-word passages inside longer texts
    insert("mini-nlp/intents_dev", "train",
           [{"text": f"{filler(2, 8)} {_passage(g, t)} {filler(0, 8)}", "label": g.randrange(2)}
            for t in g.sample(long_items, 6)])
    # a passage as a list of tokens
    tokens = [[*filler(1, 4).split(), *_passage(g, t).split(), "."] for t in g.sample(long_items, 2)]
    insert("mini-nlp/toy_ner", "train", [{"id": "", "tokens": toks, "pos_tags": [g.randrange(len(_POS)) for _ in toks],
                                          "ner_tags": [g.randrange(len(_NER)) for _ in toks]} for toks in tokens])
    by_id["mini-nlp/toy_ner"].configs["default"]["train"] = [
        {**r, "id": f"ner-train-{i:05d}"} for i, r in enumerate(by_id["mini-nlp/toy_ner"].configs["default"]["train"])]
    # two-column rows: a passage in the premise, and a short item as the whole hypothesis
    insert("mini-nlp/nli_pairs", "train",
           [{"premise": _passage(g, t), "hypothesis": filler(3, 6), "label": g.randrange(3)} for t in g.sample(long_items, 2)]
           + [{"premise": filler(5, 9), "hypothesis": _vary(g, t), "label": g.randrange(3)} for t in g.sample(short_items, 2)])


def _norm(value: Any) -> str:
    """A value's normalized text, by the definition (NFKC, casefold, whitespace collapsed); a list:
    its non-NULL elements' texts joined by a space; NULL: nothing."""
    import unicodedata

    if value is None:
        return ""
    if isinstance(value, list):
        return " ".join(t for t in (_norm(v) for v in value) if t)
    return " ".join(unicodedata.normalize("NFKC", str(value)).casefold().split())


def _contamination_truth(specs: list[_Spec]) -> list[dict[str, Any]]:
    """Per eligible (dataset, config, split) and benchmark (its own split left out): the rows whose
    text holds 13 consecutive words of an item, or equals (as a whole, or one text column) an item
    shorter than 13 words. Plain Python over the rows written: sets of 13-word tuples."""
    by_id = {s.id: s for s in specs}
    indexes = []
    for b in BENCHMARKS:
        rows = by_id[b["id"]].configs[b["config"]][b["split"]]
        texts = [" ".join(t for t in (_norm(r[c]) for c in b["text_columns"]) if t) for r in rows]
        grams = {tuple(w[i:i + 13]) for w in (t.split() for t in texts) if len(w) >= 13 for i in range(len(w) - 12)}
        whole = {t for t in texts if 0 < len(t.split()) < 13}
        indexes.append((b, grams, whole))
    out = []
    for spec in specs:
        if spec.expected != "eligible":
            continue
        for config, splits in spec.configs.items():
            for split, rows in splits.items():
                for b, grams, whole in indexes:
                    if (spec.id, config, split) == (b["id"], b["config"], b["split"]):
                        continue
                    n = 0
                    for r in rows:
                        parts = [_norm(r[c]) for c in spec.text_columns]
                        text = " ".join(p for p in parts if p)
                        w = text.split()
                        units = {text, *parts} if len(parts) > 1 else {text}
                        if any(u in whole for u in units) or any(tuple(w[i:i + 13]) in grams for i in range(len(w) - 12)):
                            n += 1
                    out.append({"dataset_id": spec.id, "config": config, "split": SPLIT_ALIASES[split],
                                "benchmark_id": b["id"], "benchmark_config": b["config"], "benchmark_split": b["split"],
                                "contaminated_rows": n})
    return out


# ------------------------------------------------------------------------ models that declare datasets
# Models whose cards declare mini-hub datasets as training data (``datasets:``), served by
# ``/api/models``: some declare contaminated datasets, some clean ones only; one is private (listed
# only with an approved token), one is declared by a ``dataset:`` tag alone (its card says nothing),
# one card gives its datasets as a string, and five declare mini-nlp/sentiment (for caps and pages).
# truth.json's "exposure" is, per contaminated dataset, the models a listing without a token finds.

MODELS: list[dict[str, Any]] = [
    {"id": "mini-models/intent-classifier", "cardData": {"datasets": ["mini-nlp/intents_dev"], "license": "mit"},
     "pipeline_tag": "text-classification"},
    {"id": "mini-models/review-sentiment", "cardData": {"datasets": ["mini-nlp/reviews_valid", "mini-lab/messy_text"]},
     "pipeline_tag": "text-classification"},
    {"id": "mini-models/nli-base", "cardData": {"datasets": ["mini-nlp/nli_pairs"], "language": ["en"]}},
    {"id": "mini-models/clean-lm", "cardData": {"datasets": ["mini-lab/messy_text", "mini-lab/multi_config"]},
     "pipeline_tag": "text-generation"},
    {"id": "mini-models/topic-tagger", "cardData": {"datasets": "mini-nlp/topics_no_val"}},
    {"id": "mini-models/ner-tagged", "cardData": {"license": "apache-2.0"},
     "tags": ["token-classification", "dataset:mini-nlp/toy_ner"]},
    {"id": "mini-models/private-tuned", "cardData": {"datasets": ["mini-nlp/intents_dev"]}, "private": True},
    *({"id": f"mini-models/sentiment-ft-{n}", "cardData": {"datasets": ["mini-nlp/sentiment"]}} for n in range(5)),
]

# ------------------------------------------------------------------------ models that report scores
# With ``score_models`` (the demo's mini-hub): models whose cards report scores (model-index, as the Trainer writes it) or whose repos hold
# .eval_results files: on the very dataset they declare (test and validation), on a test split
# copied into the dataset they declare, on a benchmark whose items their dataset holds (its task
# mapped through the benchmark's eval.yaml), on a dataset with no eval.yaml (split unknown), with
# no training data declared, with a declared dataset outside the survey, and one clean.


def _index(name: str, *results: tuple[str, str, str, dict[str, float]]) -> list[dict[str, Any]]:
    """A model-index: one result per (dataset, config, split, {metric: value})."""
    return [{"name": name, "results": [
        {"task": {"type": "text-classification", "name": "Text Classification"},
         "dataset": {"type": dataset, "name": dataset.split("/")[1], "config": config, "split": split},
         "metrics": [{"type": metric, "value": value, **({"verified": True} if metric == "f1" else {})}
                     for metric, value in metrics.items()]}
        for dataset, config, split, metrics in results]}]


SCORE_MODELS: list[dict[str, Any]] = [
    {"id": "mini-models/sentiment-bert", "cardData": {
        "datasets": ["mini-nlp/sentiment"], "base_model": "mini-models/base-lm",
        "model-index": _index("sentiment-bert", ("mini-nlp/sentiment", "default", "test", {"accuracy": 0.912, "f1": 0.905}),
                              ("mini-nlp/sentiment", "default", "validation", {"accuracy": 0.921}))}},
    {"id": "mini-models/reviews-absorbed-ft", "cardData": {
        "datasets": ["mini-lab/reviews_absorbed"],
        "model-index": _index("reviews-absorbed-ft", ("mini-nlp/reviews_valid", "default", "test", {"accuracy": 0.974}))}},
    {"id": "mini-models/topics-partial-ft", "cardData": {
        "datasets": ["mini-lab/topics_partial"],
        "model-index": _index("topics-partial-ft", ("mini-nlp/topics_no_val", "default", "test", {"accuracy": 0.883}))}},
    {"id": "mini-models/intent-qa", "cardData": {
        "datasets": ["mini-nlp/intents_dev"],
        "model-index": _index("intent-qa", ("mini-nlp/intents_dev", "default", "test", {"accuracy": 0.861}))},
     "eval_results": {"qa_small.yaml": [{"dataset": {"id": "mini-nlp/qa_small", "task_id": "contexts"}, "value": 61.5,
                                         "source": {"url": "https://example.org/intent-qa-evals", "name": "Eval traces"}}],
                      "nli_pairs.yaml": [{"dataset": {"id": "mini-nlp/nli_pairs", "task_id": "default"}, "value": 0.702}]}},
    {"id": "mini-models/zero-shot-topics", "cardData": {
        "model-index": _index("zero-shot-topics", ("mini-nlp/topics_no_val", "default", "test", {"accuracy": 0.642}))}},
    {"id": "mini-models/intent-on-topics", "cardData": {
        "datasets": ["mini-nlp/intents_dev"],
        "model-index": _index("intent-on-topics", ("mini-nlp/topics_no_val", "default", "test", {"accuracy": 0.511}))}},
    {"id": "mini-models/outside-corpus-ft", "cardData": {
        "datasets": ["mini-outside/web_corpus"],
        "model-index": _index("outside-corpus-ft", ("mini-nlp/reviews_valid", "default", "test", {"accuracy": 0.95}))}},
]
#: the benchmarks' eval.yaml (their tasks): qa_small's one task is its test split
EVALS = {"mini-nlp/qa_small": {"name": "qa_small", "description": "Mini-hub QA contexts",
                               "tasks": [{"id": "contexts", "config": "default", "split": "test"}]}}


def _exposure_truth(contamination: list[dict[str, Any]], served: list[dict[str, Any]]) -> dict[str, list[str]]:
    """Per contaminated dataset, the public models whose tags (the card's datasets, as the Hub
    derives them, or given) name it, in listing order."""
    from .models import model_props

    contaminated = sorted({r["dataset_id"] for r in contamination if r["contaminated_rows"]})
    models = [model_props(m) for m in served if not m.get("private")]
    return {d: [m["id"] for m in models if f"dataset:{d}" in m["tags"]] for d in contaminated}


# ---------------------------------------------------------------- writing


def _size_category(rows: int) -> str:
    return next((name for bound, name in _SIZE_BOUNDS if rows < bound), "10M<n<100M")


def _write(spec: _Spec, out: Path, g: random.Random) -> dict[str, Any]:
    """Write the Parquet files of one dataset; return its index.json entry."""
    folder = out / spec.id.replace("/", "__")
    counts: dict[str, dict[str, int]] = {}
    for config, splits in spec.configs.items():
        for split, rows in splits.items():
            counts.setdefault(config, {})[split] = len(rows)
            shards = spec.train_shards if split == "train" else 1
            step = -(-len(rows) // shards)
            for n in range(shards):
                rel = f"{config}/{split}/{n:04d}.parquet"
                chunk = rows[n * step:(n + 1) * step]
                data = spec.replace_files.get(rel) or pio.parquet_bytes(pio.rows_to_columns(chunk, list(spec.features)), spec.features)
                path = folder / rel
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(data)
    for config, overrides in spec.row_counts.items():
        counts[config].update(overrides)
    total = sum(n for splits in counts.values() for n in splits.values())
    export = spec.entry.get("parquet_export", True)
    tags = [f"task_categories:{spec.task}", *(f"language:{lang}" for lang in spec.languages),
            f"size_categories:{_size_category(total) if counts else 'n<1K'}", f"modality:{spec.modality}"]
    tags += ["format:parquet"] if export else []
    tags += [f"license:{g.choice(['cc-by-4.0', 'mit', 'apache-2.0'])}", "library:datasets", "region:us"]
    created = g.randrange(900)
    downloads = g.randrange(50, 50_000)
    return {
        "id": spec.id,
        "author": spec.id.split("/")[0],
        "tags": tags,
        "gated": False,
        "private": False,
        "disabled": False,
        "parquet_export": True,
        **spec.entry,
        "downloads": downloads,
        "likes": downloads // g.randrange(20, 200),
        "createdAt": iso_date(created),
        "lastModified": iso_date(created + g.randrange(1, 300)),
        "description": f"Mini-hub dataset ({spec.expected}).",
        "configs": counts,
    }


def _truth(spec: _Spec) -> list[dict[str, Any]]:
    out = []
    for config, splits in spec.configs.items():
        canonical = {SPLIT_ALIASES[s]: rows for s, rows in splits.items()}
        for label in spec.label_columns or [None]:
            truth: dict[str, Any] = {"dataset_id": spec.id, "config": config, "label_column": label,
                                     "text_columns": list(spec.text_columns),
                                     "figures": lle_reference(canonical, spec.text_columns, label)}
            if len(spec.text_columns) > 1:  # the figures of each text column alone, per profile
                truth["per_column"] = {c: {p: {k.removeprefix(f"{p}_"): v for k, v in
                                               per_column_reference(canonical, spec.text_columns, c, label, p).items()}
                                           for p in PROFILES} for c in spec.text_columns}
            out.append(truth)
    return out


def _cross_truth(specs: list[_Spec]) -> dict[str, Any]:
    """The leaks across the eligible datasets (``reference.cross_reference`` of the rows written),
    and what was planted: the fork, and the test splits copied into other datasets."""
    eligible = [s for s in specs if s.expected == "eligible"]
    configs = {(s.id, c): {SPLIT_ALIASES[n]: rows for n, rows in splits.items()}
               for s in eligible for c, splits in s.configs.items()}
    found = cross_reference(configs, {s.id: s.text_columns for s in eligible}, COPY_THRESHOLD)
    planted = [{"test_dataset": fork, "source_dataset": of, "relation": "copy"} for fork, of in FORK_OF.items()]
    tests = {s.id: len(s.configs["default"]["test"]) for s in specs if s.id in {source for source, *_ in CROSS_PLANTS}}
    planted += [{"test_dataset": source, "source_dataset": target, "source_split": "train", "relation": "leak",
                 "rows": tests[source] if train is None else train} for source, target, train, _ in CROSS_PLANTS]
    planted += [{"test_dataset": source, "source_dataset": target, "source_split": "validation", "relation": "leak",
                 "rows": validation} for source, target, _, validation in CROSS_PLANTS if validation]
    return {"copy_threshold": COPY_THRESHOLD, "planted": planted, **found}


def generate_minihub(out: Path, *, seed: int = 0, filler: int = 0, score_models: bool = False) -> Path:
    """Write the mini-hub for ``seed`` into ``out`` (created if needed) and return ``out``.

    ``filler`` > 0 adds that many synthetic datasets to the listing (served lazily, never written).
    ``score_models``: also the models that report scores (``SCORE_MODELS``) and the benchmarks'
    ``eval.yaml`` (``EVALS``), as the demo serves them; the datasets are the same either way.
    """
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    specs = _specs(seed)
    _plant_benchmarks(seed, specs)  # benchmark items planted in other datasets' splits
    entries, measurements = [], []
    for spec in specs:
        entries.append(_write(spec, out, random.Random(f"{seed}:{spec.id}:entry")))
        if spec.expected == "eligible":
            measurements += _truth(spec)
    models = MODELS + SCORE_MODELS if score_models else MODELS
    index: dict[str, Any] = {"datasets": entries, "models": models, **({"evals": EVALS} if score_models else {})}
    if filler:
        index["filler"] = {"count": filler, "seed": seed}
    truth = {"seed": seed, "expected": {s.id: s.expected for s in specs}, "measurements": measurements,
             "cross": _cross_truth(specs),
             # contamination with benchmarks: the planted benchmarks and what they contaminate
             "benchmarks": BENCHMARKS, "contamination": _contamination_truth(specs)}
    truth["exposure"] = _exposure_truth(truth["contamination"], models)  # the models declaring contaminated datasets
    (out / "index.json").write_text(json.dumps(index, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    (out / "truth.json").write_text(json.dumps(truth, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return out
