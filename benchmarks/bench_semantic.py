"""Paraphrase candidates (``--semantic``): recall on planted rewrites, false candidates, speed.

    nice -n 10 python benchmarks/bench_semantic.py [--shared ../shared/datasets] [--planted 300] [--repeat 2]

Needs the ``semantic`` extra (wordllama) and the shared datasets; the ANN rows need faiss-cpu
(``pip install faiss-cpu``; left out when it is not installed). Prints, side by side:

1. **Recall on planted rewrites.** ``--planted`` test rows of rotten_tomatoes (movie reviews,
   about 20 words), each reworded (``semantic_rewrites.py``: synonyms, clause order, fillers, and
   the three together) and added to train. Recall: the planted pairs among the candidates, at each
   threshold.
2. **False candidates.** The share of test rows with a candidate where none was planted: the
   other rotten_tomatoes test rows against its own train (reviews of other films), and the
   rotten_tomatoes test split against banking77's train (another domain).
3. **Speed, 2 cores.** tweet_eval ``emoji`` (45k train, 5k validation, 50k test): the measurement
   without ``--semantic`` (the baseline) and with it, alternating; then its parts: embedding
   (texts/s), the exact search by blocks, and two faiss indexes (IVF-Flat, HNSW; build + search)
   with their recall of the exact search's pairs (identical texts not left out, in both).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

sys.path.insert(0, str(Path(__file__).parent))
from semantic_rewrites import KINDS, rewrite

from hubsurvey.core.figures import methods_measured
from hubsurvey.survey import semantic
from hubsurvey.survey.measure import measure_config
from hubsurvey.survey.sources import ConfigData, FolderSource, SplitData, check_config

THRESHOLDS = (0.7, 0.75, 0.8, 0.85, 0.9)


def _table(split: SplitData) -> pa.Table:
    import pyarrow.parquet as pq

    return split.table if split.table is not None else pa.concat_tables([pq.read_table(f) for f in split.files])


def planted(data: ConfigData, kind: str, n: int) -> tuple[ConfigData, dict[int, int]]:
    """``data`` with ``n`` test rows' rewrites (by ``kind``) appended to train: the config, and each
    planted test position's train position."""
    test, train = _table(data.splits["test"]), _table(data.splits["train"])
    rng = np.random.default_rng(0)
    texts = test.column("text").to_pylist()
    chosen = sorted(rng.choice(len(texts), size=min(n, len(texts)), replace=False).tolist())
    rewrites, truth = [], {}
    for i in chosen:
        new = rewrite(texts[i], kind, seed=i)
        if " ".join(new.casefold().split()) == " ".join(texts[i].casefold().split()):
            continue  # nothing to reword
        truth[i] = train.num_rows + len(rewrites)
        rewrites.append(new)
    extra = pa.table({c: (pa.array(rewrites, train.schema.field(c).type) if c == "text"
                          else pa.array([train.column(c)[0].as_py()] * len(rewrites), train.schema.field(c).type))
                      for c in train.column_names})
    splits = {**data.splits, "train": SplitData("train", "train", table=pa.concat_tables([train, extra])),
              "test": SplitData("test", "test", table=test)}
    return ConfigData(data.dataset_id, data.config, data.revision_sha, splits, data.features), truth


def recall(data: ConfigData, truth: dict[int, int], threshold: float) -> tuple[float, float]:
    """(planted pairs found, share of the other test rows with a candidate) at ``threshold``."""
    found = semantic.candidates(data, ["text"], semantic.SemanticRequest(threshold), max_stored=10**9)
    pairs = {(p["test_position"], p["partner_split"], p["partner_position"]) for p in found.pairs}
    hit = sum((t, "train", r) in pairs for t, r in truth.items())
    others = {p["test_position"] for p in found.pairs if p["test_position"] not in truth}
    rest = data.splits["test"].num_rows - len(truth)
    return hit / len(truth), len(others) / rest


def unrelated(queries: ConfigData, other: ConfigData, threshold: float) -> float:
    data = ConfigData("bench/unrelated", "default", "0", {"test": queries.splits["test"], "train": other.splits["train"]},
                      queries.features)
    found = semantic.candidates(data, ["text"], semantic.SemanticRequest(threshold), max_stored=10**9)
    return found.info["test_rows_with_candidates"] / queries.splits["test"].num_rows


def speed(shared: Path, repeat: int) -> None:
    data = check_config(FolderSource(shared / "cardiffnlp__tweet_eval").load("emoji"))
    rows = sum(s.num_rows for s in data.splits.values())
    methods = list(methods_measured(near=False))
    semantic.load_model(None)  # loaded once a process, as a worker does: not timed
    plain, with_semantic = [], []
    for _ in range(repeat):  # alternating: the machine is shared
        t = time.perf_counter()
        measure_config(data, n_configs=1, source="folder", examples=0, methods=methods)
        plain.append(time.perf_counter() - t)
        t = time.perf_counter()
        measure_config(data, n_configs=1, source="folder", examples=0, methods=methods,
                       semantic=semantic.SemanticRequest())
        with_semantic.append(time.perf_counter() - t)
    a, b = statistics.median(plain), statistics.median(with_semantic)
    print(f"\n## speed: tweet_eval emoji, {rows} rows, median of {repeat}, alternating (--no-near in both)")
    print(f"{'audit without --semantic (baseline)':46}{a:8.2f} s  {rows / a:10,.0f} rows/s")
    print(f"{'audit --semantic':46}{b:8.2f} s  {rows / b:10,.0f} rows/s")
    print(f"{'  of which the candidates':46}{b - a:8.2f} s  {rows / (b - a):10,.0f} rows/s")

    model = semantic.load_model(None)
    test = semantic.distinct(semantic.row_texts(data.splits["test"], ["text"]))
    ref = [t for name in ("train", "validation") for t in semantic.distinct(semantic.row_texts(data.splits[name], ["text"])).texts]
    t = time.perf_counter()
    q = semantic.embed(model, test.texts)
    r = semantic.embed(model, ref)
    embed_s = time.perf_counter() - t
    print(f"{'  embedding (distinct texts)':46}{embed_s:8.2f} s  {(len(q) + len(r)) / embed_s:10,.0f} texts/s")
    t = time.perf_counter()
    exact = semantic.nearest(q, r)
    exact_s = time.perf_counter() - t
    print(f"{'  exact search by blocks (' + f'{len(q)} x {len(r)})':46}{exact_s:8.2f} s  {len(q) / exact_s:10,.0f} queries/s"
          f"  pairs {len(exact.query)}")
    try:
        import faiss
    except ImportError:
        print("  faiss-cpu not installed: no ANN row")
        return
    faiss.omp_set_num_threads(2)
    truth = set(zip(exact.query.tolist(), exact.reference.tolist()))
    for name, build in (("faiss IVF-Flat nlist=1024 nprobe=16", lambda: _ivf(faiss, r)),
                        ("faiss HNSW M=32 efSearch=64", lambda: _hnsw(faiss, r))):
        t = time.perf_counter()
        index = build()
        built = time.perf_counter() - t
        t = time.perf_counter()
        scores, ids = index.search(q, semantic.NEAREST)
        searched = time.perf_counter() - t
        ann = {(i, int(j)) for i in range(len(q)) for j, s in zip(ids[i], scores[i])
               if j >= 0 and s >= semantic.DEFAULT_SEMANTIC_THRESHOLD}
        got = len(ann & truth) / len(truth) if truth else 1.0
        print(f"{'  ' + name:46}{built + searched:8.2f} s  {len(q) / (built + searched):10,.0f} queries/s"
              f"  (build {built:.2f} s)  recall of the exact pairs {got:.3f}")


def _ivf(faiss, reference: np.ndarray):
    index = faiss.IndexIVFFlat(faiss.IndexFlatIP(reference.shape[1]), reference.shape[1], 1024, faiss.METRIC_INNER_PRODUCT)
    index.train(reference)
    index.add(reference)
    index.nprobe = 16
    return index


def _hnsw(faiss, reference: np.ndarray):
    index = faiss.IndexHNSWFlat(reference.shape[1], 32, faiss.METRIC_INNER_PRODUCT)
    index.hnsw.efConstruction = 80
    index.add(reference)
    index.hnsw.efSearch = 64
    return index


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--shared", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "datasets")
    parser.add_argument("--planted", type=int, default=300)
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    model = semantic.load_model(None)
    print(f"model: {model.name} ({model.dim}-d), nearest {semantic.NEAREST}, first {semantic.MAX_CHARS} characters")
    reviews = check_config(FolderSource(args.shared / "cornell-movie-review-data__rotten_tomatoes").load("default"))
    print(f"\n## recall on {args.planted} planted rewrites of rotten_tomatoes test rows (added to train)")
    print(f"{'rewrite':10}" + "".join(f"{'cos>=' + str(t):>11}" for t in THRESHOLDS) + f"{'others w/ cand. @0.8':>24}")
    for kind in KINDS:
        data, truth = planted(reviews, kind, args.planted)
        cells, others = [], 0.0
        for threshold in THRESHOLDS:
            found, rest = recall(data, truth, threshold)
            cells.append(f"{found:11.3f}")
            if threshold == semantic.DEFAULT_SEMANTIC_THRESHOLD:
                others = rest
        print(f"{kind:10}" + "".join(cells) + f"{others:24.3f}")
    banking = check_config(FolderSource(args.shared / "PolyAI__banking77").load("default"))
    print("\n## false candidates: test rows with a candidate where none was planted")
    print(f"{'':46}" + "".join(f"{'cos>=' + str(t):>11}" for t in THRESHOLDS))
    print(f"{'rotten_tomatoes test vs banking77 train':46}" + "".join(f"{unrelated(reviews, banking, t):11.3f}" for t in THRESHOLDS))
    print(f"{'rotten_tomatoes test vs its own train':46}" + "".join(
        f"{semantic.candidates(reviews, ['text'], semantic.SemanticRequest(t)).info['test_rows_with_candidates'] / reviews.splits['test'].num_rows:11.3f}"
        for t in THRESHOLDS))
    speed(args.shared, args.repeat)


if __name__ == "__main__":
    main()
