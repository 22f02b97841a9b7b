"""Paraphrase candidates for review (``semantic-2026``; opt-in: ``audit --semantic``, ``run --semantic``).

Rewording defeats the exact keys, the shingles and the 13-grams. Here each test row, and each train
and validation row, is embedded by a small static model (a token's vector, averaged over the
row's tokens), and each test row's nearest train or validation rows are found by cosine. A pair at
or above the threshold is a *candidate for review*: a person decides. Candidates are stored apart
(``semantic_candidates``) with their scores and never change a leak count or a verdict.

How (docs/method.md, "Paraphrase candidates"):

- a row's text is its text columns under the ``normalized`` profile, joined by a newline (a list's
  elements by a space); a blank row has none and is left out. Rows of one split holding the same
  text are embedded once (a *distinct text*), and a test text identical to a train or validation
  text is never its own candidate: the exact figures count those rows;
- the first :data:`MAX_CHARS` characters of a text are embedded, and the vectors normalized;
- for each distinct test text, its :data:`NEAREST` nearest train or validation texts, exactly: the
  cosines of every pair, block by block (:func:`nearest`, a matrix product per block); ties go to
  the reference text first in order (train before validation, each in order of first position);
- the pairs at or above the threshold are the candidates; the :data:`MAX_STORED` highest are
  stored, each with the positions of its first rows and how many rows hold each side.

Models: ``wordllama``'s own 256-d weights, shipped inside its wheel (the ``semantic`` extra), or a
user's own static model2vec model from a local folder or the local Hugging Face cache
(``--semantic-model``). Weights are never downloaded: the loaders run offline.

A static model averages the vectors of the tokens: it sees which words a text holds, not their
order. "The dog bit the man" and "the man bit the dog" have one vector.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from hubsurvey.core.errors import UsageError
from hubsurvey.core.figures import SEMANTIC_METHOD, SEMANTIC_METHOD_VERSION
from hubsurvey.core.options import DEFAULT_SEMANTIC_THRESHOLD
from hubsurvey.core.outputs import file_digest
from hubsurvey.core.settings import hub_offline
from hubsurvey.survey.normalize import normalize_array
from hubsurvey.survey.sources import ConfigData, SplitData

#: nearest train or validation texts kept per distinct test text
NEAREST = 3
#: characters of a text embedded (a static model's vector is an average: the start of a long text
#: stands for it, and the padding of a batch stays bounded)
MAX_CHARS = 2000
#: candidate pairs stored per config, the highest cosines first (the counts cover them all)
MAX_STORED = 1000
#: characters of each side's text kept with a stored pair
PAIR_TEXT_CHARS = 200
#: rows of test texts and of reference texts per block of the exact search (a block of cosines is
#: QUERY_BLOCK x REFERENCE_BLOCK float32: 32 MB)
QUERY_BLOCK, REFERENCE_BLOCK = 512, 16_384
#: the most (distinct test text, reference text) pairs the exact search computes for one config:
#: about ten minutes on two shared cores (docs/benchmarks.md), inside a job's default timeout; a
#: config with more is not searched, and its statement of checks says why
MAX_PAIRS = 20_000_000_000
#: reference texts embedded and searched at a time: memory holds the test texts' vectors and this
#: many others (128 MB), never a whole train split's
REFERENCE_CHUNK = 131_072
#: texts embedded per call of the model
EMBED_BATCH = 256
#: the splits whose rows can be a test row's partner, in the order ties are broken
REFERENCE_SPLITS = ("train", "validation")

INSTALL_HINT = "pip install 'hubsurvey[semantic]'"


# --- the models ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class EmbeddingModel:
    """A static embedding model: its name and its weights' SHA-256 (provenance), and ``encode``,
    texts -> one float32 vector each (not normalized)."""

    name: str
    weights_sha256: str
    dim: int
    encode: Callable[[list[str]], np.ndarray] = field(compare=False, repr=False)


def _wordllama_folder() -> Path:
    try:
        import wordllama
    except ImportError:
        raise UsageError(f"--semantic needs a static embedding model: {INSTALL_HINT} (wordllama), "
                         "or --semantic-model PATH with model2vec installed") from None
    return Path(wordllama.__file__).parent


def _model2vec_folder(spec: str) -> Path:
    """The folder of a model2vec model: ``spec`` as a local folder, else a model id already in the
    local Hugging Face cache (looked up offline; never downloaded)."""
    try:
        import model2vec  # noqa: F401 - the check that it is installed
    except ImportError:
        raise UsageError("--semantic-model needs model2vec: pip install model2vec") from None
    folder = Path(spec).expanduser()
    if not folder.is_dir():
        from huggingface_hub import snapshot_download  # the local cache only: local_files_only

        try:
            with hub_offline():
                folder = Path(snapshot_download(spec, repo_type="model", local_files_only=True))
        except Exception:
            raise UsageError(f"--semantic-model {spec}: no such folder, nor a model in the local Hugging Face "
                             "cache (weights are never downloaded)") from None
    missing = [n for n in ("model.safetensors", "tokenizer.json", "config.json") if not (folder / n).is_file()]
    if missing:
        raise UsageError(f"--semantic-model {spec}: not a model2vec folder (no {', '.join(missing)})")
    return folder


def check_model(spec: str | None) -> None:
    """Refuse, in one line (exit 2), a model that cannot be loaded: the extra not installed, a
    folder that is not a model. Cheap: the weights are not read."""
    if spec is None:
        _wordllama_folder()
    else:
        _model2vec_folder(spec)


@functools.lru_cache(maxsize=4)
def load_model(spec: str | None = None) -> EmbeddingModel:
    """The model ``--semantic-model`` names (None: wordllama's own weights), loaded once a process."""
    return _load_wordllama() if spec is None else _load_model2vec(spec)


def _load_wordllama() -> EmbeddingModel:
    folder = _wordllama_folder()
    from wordllama import WordLlama

    with hub_offline():
        model = WordLlama.load(cache_dir=folder, disable_download=True)
    weights = sorted((folder / "weights").glob("*.safetensors"))
    name = f"wordllama {weights[0].stem}" if weights else "wordllama"
    return EmbeddingModel(name, file_digest(weights[0]) if weights else "", int(model.embedding.shape[1]),
                          lambda texts: np.asarray(model.embed(texts, batch_size=64), dtype=np.float32))


def _load_model2vec(spec: str) -> EmbeddingModel:
    folder = _model2vec_folder(spec)
    from model2vec import StaticModel

    try:
        with hub_offline():  # an existing folder: read from disk
            model = StaticModel.from_pretrained(folder, force_download=False)
    except Exception as e:
        first = (str(e).strip().splitlines() or [type(e).__name__])[0]
        raise UsageError(f"--semantic-model {spec}: model2vec cannot read it: {first}") from None
    return EmbeddingModel(f"model2vec {folder.name}", file_digest(folder / "model.safetensors"), int(model.dim),
                          lambda texts: np.asarray(model.encode(texts, use_multiprocessing=False), dtype=np.float32))


def embed(model: EmbeddingModel, texts: Sequence[str]) -> np.ndarray:
    """Unit vectors of ``texts`` (their first MAX_CHARS characters); a text the model has no token
    for gets the zero vector, whose cosine with anything is 0. Texts of like length are embedded
    together (a batch is padded to its longest)."""
    out = np.zeros((len(texts), model.dim), dtype=np.float32)
    order = np.argsort(np.fromiter((min(len(t), MAX_CHARS) for t in texts), dtype=np.int64, count=len(texts)),
                       kind="stable")
    for start in range(0, len(texts), EMBED_BATCH):
        picked = order[start:start + EMBED_BATCH]
        out[picked] = model.encode([texts[i][:MAX_CHARS] for i in picked])
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    np.divide(out, norms, out=out, where=norms > 0)
    out[~np.isfinite(out).all(axis=1)] = 0
    return out


# --- the texts -------------------------------------------------------------------------------------


def _as_text(values: pa.ChunkedArray) -> pa.ChunkedArray:
    """A column's values as normalized strings (NULL stays NULL): a list's elements joined by a
    space, any other value as Arrow casts it to a string (or Python prints it)."""
    t = values.type
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return normalize_array(values.cast(pa.string()))
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        joined = [None if v is None else " ".join(str(x) for x in v if x is not None) for v in values.to_pylist()]
        return normalize_array(pa.chunked_array([pa.array(joined, pa.string())]))
    try:
        return normalize_array(values.cast(pa.string()))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        printed = [None if v is None else str(v) for v in values.to_pylist()]
        return normalize_array(pa.chunked_array([pa.array(printed, pa.string())]))


def _read_columns(split: SplitData, columns: Sequence[str]) -> list[pa.ChunkedArray]:
    if split.table is not None:
        return [split.table.column(split.table.schema.get_field_index(c)) for c in columns]
    tables = [pq.ParquetFile(path).read(columns=list(columns)) for path in split.files]
    return [pa.chunked_array([c for t in tables for c in t.column(i).chunks], type=tables[0].schema.field(i).type)
            for i in range(len(columns))] if tables else [pa.chunked_array([], pa.string()) for _ in columns]


def row_texts(split: SplitData, text_columns: Sequence[str]) -> list[str | None]:
    """Each row's text as it is compared: its text columns, normalized, joined by a newline (None:
    a blank row, every column empty, whitespace or NULL)."""
    columns = [_as_text(c) for c in _read_columns(split, text_columns)]
    if not columns:
        return []
    parts = [c.to_pylist() for c in columns]
    return ["\n".join(p for p in row if p) or None for row in zip(*parts)]


@dataclass
class Distinct:
    """The distinct texts of one split, in order of their first row: the first row's position and
    how many rows hold each."""

    texts: list[str]
    first: list[int]
    rows: list[int]


def distinct(texts: Sequence[str | None]) -> Distinct:
    found: dict[str, int] = {}
    out = Distinct([], [], [])
    for position, text in enumerate(texts):
        if text is None:
            continue
        at = found.get(text)
        if at is None:
            found[text] = len(out.texts)
            out.texts.append(text)
            out.first.append(position)
            out.rows.append(1)
        else:
            out.rows[at] += 1
    return out


# --- the search ------------------------------------------------------------------------------------


@dataclass
class Nearest:
    """Pairs (query, reference, cosine), sorted by query, then cosine descending, then reference."""

    query: np.ndarray
    reference: np.ndarray
    cosine: np.ndarray


def _keep_first(q: np.ndarray, r: np.ndarray, s: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The first ``k`` of each query in (query, cosine descending, reference) order."""
    order = np.lexsort((r, -s, q))
    q, r, s = q[order], r[order], s[order]
    if not len(q):
        return q, r, s
    starts = np.flatnonzero(np.r_[True, q[1:] != q[:-1]])
    rank = np.arange(len(q)) - np.repeat(starts, np.diff(np.r_[starts, len(q)]))
    keep = rank < k
    return q[keep], r[keep], s[keep]


def nearest(queries: np.ndarray, reference: np.ndarray, *, k: int = NEAREST, threshold: float = DEFAULT_SEMANTIC_THRESHOLD,
            excluded: Mapping[int, Sequence[int]] | None = None) -> Nearest:
    """For each query vector, its ``k`` nearest reference vectors by inner product (cosine, for unit
    vectors) at or above ``threshold``, exactly: every product is computed, a block of queries
    against a block of the reference at a time (one matrix product each), and each block's best
    (every tie at its k-th value included) merged with the best so far. ``excluded``: pairs never
    kept, by query (a text identical to its query)."""
    pairs = [(q, r) for q, rs in (excluded or {}).items() for r in rs]
    ex_q = np.array([q for q, _ in pairs], dtype=np.int64)
    ex_r = np.array([r for _, r in pairs], dtype=np.int64)
    out_q: list[np.ndarray] = []
    out_r: list[np.ndarray] = []
    out_s: list[np.ndarray] = []
    queries = np.ascontiguousarray(queries, dtype=np.float32)
    reference = np.ascontiguousarray(reference, dtype=np.float32)
    for q0 in range(0, len(queries), QUERY_BLOCK):
        block = queries[q0:q0 + QUERY_BLOCK]
        in_block = (ex_q >= q0) & (ex_q < q0 + len(block))
        best_q = np.empty(0, np.int64)
        best_r = np.empty(0, np.int64)
        best_s = np.empty(0, np.float32)
        for r0 in range(0, len(reference), REFERENCE_BLOCK):
            scores = block @ reference[r0:r0 + REFERENCE_BLOCK].T
            width = scores.shape[1]
            here = in_block & (ex_r >= r0) & (ex_r < r0 + width)
            scores[ex_q[here] - q0, ex_r[here] - r0] = -np.inf
            above = scores >= threshold
            many = np.flatnonzero(above.sum(axis=1) > k)
            if len(many):  # more than k above the threshold: the k best, and every tie at the k-th
                rows = scores[many]
                kth = np.partition(rows, width - k, axis=1)[:, width - k]
                above[many] = rows >= kth[:, None]
            qi, ri = np.nonzero(above)
            best_q, best_r, best_s = _keep_first(np.r_[best_q, qi + q0], np.r_[best_r, ri + r0],
                                                 np.r_[best_s, scores[qi, ri]], k)
        out_q.append(best_q)
        out_r.append(best_r)
        out_s.append(best_s)
    if not out_q:
        return Nearest(np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0, np.float32))
    return Nearest(np.concatenate(out_q), np.concatenate(out_r), np.concatenate(out_s))


def search(model: EmbeddingModel, queries: Sequence[str], reference: Sequence[str], *, k: int = NEAREST,
           threshold: float = DEFAULT_SEMANTIC_THRESHOLD, excluded: Mapping[int, Sequence[int]] | None = None) -> Nearest:
    """:func:`nearest` over the texts' vectors, the reference embedded REFERENCE_CHUNK texts at a time
    and each chunk's best merged: the same pairs as one search over all of it."""
    empty = Nearest(np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0, np.float32))
    if not queries or not reference:
        return empty
    vectors = embed(model, queries)
    q, r, s = [empty.query], [empty.reference], [empty.cosine]
    for r0 in range(0, len(reference), REFERENCE_CHUNK):
        chunk = reference[r0:r0 + REFERENCE_CHUNK]
        inside = {i: [j - r0 for j in js if r0 <= j < r0 + len(chunk)] for i, js in (excluded or {}).items()}
        found = nearest(vectors, embed(model, chunk), k=k, threshold=threshold, excluded=inside)
        q.append(found.query)
        r.append(found.reference + r0)
        s.append(found.cosine)
    return Nearest(*_keep_first(np.concatenate(q), np.concatenate(r), np.concatenate(s), k))


# --- one config -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SemanticRequest:
    """What ``--semantic`` asks: the threshold and the model (None: wordllama's own weights)."""

    threshold: float = DEFAULT_SEMANTIC_THRESHOLD
    model: str | None = None


@dataclass
class SemanticResult:
    """One config's candidates: ``info`` (what was run and the counts; the statement of checks
    and ``audit --json`` show it) and the stored pairs (rows of ``semantic_candidates`` without
    their identity and provenance)."""

    info: dict[str, Any]
    pairs: list[dict[str, Any]]


def _cut(text: str) -> str:
    return text[:PAIR_TEXT_CHARS] + "…" if len(text) > PAIR_TEXT_CHARS else text


def candidates(data: ConfigData, text_columns: Sequence[str], request: SemanticRequest, *,
               max_stored: int = MAX_STORED) -> SemanticResult:
    """The paraphrase candidates of one config: each distinct test text's nearest train or validation
    texts at cosine >= the threshold, identical texts left out (the exact figures count them); the
    ``max_stored`` highest pairs are kept."""
    started = time.perf_counter()
    model = load_model(request.model)
    test = distinct(row_texts(data.splits["test"], text_columns))
    sides = [(name, distinct(row_texts(data.splits[name], text_columns))) for name in REFERENCE_SPLITS
             if name in data.splits]
    reference_texts = [t for _, d in sides for t in d.texts]
    where = [(name, d, i) for name, d in sides for i in range(len(d.texts))]
    at: dict[str, list[int]] = {}
    for j, text in enumerate(reference_texts):
        at.setdefault(text, []).append(j)
    excluded = {i: at[t] for i, t in enumerate(test.texts) if t in at}
    info: dict[str, Any] = {
        "method": SEMANTIC_METHOD, "method_version": SEMANTIC_METHOD_VERSION, "model": model.name,
        "model_sha256": model.weights_sha256, "dim": model.dim, "threshold": request.threshold,
        "nearest": NEAREST, "max_chars": MAX_CHARS, "search": "exact", "test_texts": len(test.texts),
        "reference_texts": len(reference_texts), "identical_left_out": len(excluded)}
    if len(test.texts) * len(reference_texts) > MAX_PAIRS:
        info.update(ran=False, why_not=f"{len(test.texts)} test x {len(reference_texts)} train and validation texts: "
                                       f"more pairs than the exact search's limit ({MAX_PAIRS:.0e})",
                    seconds=round(time.perf_counter() - started, 3))
        return SemanticResult(info, [])
    found = search(model, test.texts, reference_texts, threshold=request.threshold, excluded=excluded)
    with_candidate = np.unique(found.query)
    rank = np.arange(len(found.query)) - np.searchsorted(found.query, found.query)
    pairs = []
    for n in np.argsort(-found.cosine, kind="stable")[:max_stored]:
        qi, rj = int(found.query[n]), int(found.reference[n])
        split, side, i = where[rj]
        pairs.append({"test_position": test.first[qi], "test_rows": test.rows[qi], "test_text": _cut(test.texts[qi]),
                      "partner_split": split, "partner_position": side.first[i], "partner_rows": side.rows[i],
                      "partner_text": _cut(side.texts[i]), "cosine": round(float(found.cosine[n]), 6),
                      "rank": int(rank[n]) + 1})
    info.update(ran=True, pairs=len(found.query), pairs_stored=len(pairs),
                test_texts_with_candidates=len(with_candidate),
                test_rows_with_candidates=int(sum(test.rows[i] for i in with_candidate)),
                seconds=round(time.perf_counter() - started, 3))
    return SemanticResult(info, pairs)
