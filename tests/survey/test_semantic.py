"""Paraphrase candidates for review (``survey/semantic.py``, ``--semantic``).

The search equals a plain-Python brute force: exactly on random integer vectors (ties included, the
blocks made tiny), and on real shared configs through ``candidates`` with a static model the test
builds (a bag of hashed words: no weights to load, so the fast tier runs it). The tests that load
a real model (wordllama's shipped weights; a model2vec folder the test writes) are ``slow``.
"""

from __future__ import annotations

import json
import sys
import zlib
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import ROOT
from typer.testing import CliRunner

from hubsurvey.analysis.findings import create_views
from hubsurvey.analysis.report import render_report
from hubsurvey.cli import app
from hubsurvey.core import figures
from hubsurvey.core.errors import UsageError
from hubsurvey.core.store import Store
from hubsurvey.survey import semantic
from hubsurvey.survey.normalize import normalize_text
from hubsurvey.survey.sources import ConfigData, FolderSource, SplitData, check_config

sys.path.insert(0, str(ROOT / "benchmarks"))
from semantic_rewrites import KINDS, rewrite

DIM = 64


def _hashed_words(texts: list[str]) -> np.ndarray:
    """A static model the test owns: each word adds 1 to one of DIM coordinates (its CRC32)."""
    out = np.zeros((len(texts), DIM), dtype=np.float32)
    for i, text in enumerate(texts):
        for word in text.split():
            out[i, zlib.crc32(word.encode()) % DIM] += 1
    return out


HASHED = semantic.EmbeddingModel("test hashed words", "0" * 64, DIM, _hashed_words)


@pytest.fixture
def hashed_model(monkeypatch):
    """--semantic with the test's own static model (no wordllama needed)."""
    monkeypatch.setattr(semantic, "load_model", lambda spec=None: HASHED)
    monkeypatch.setattr(semantic, "check_model", lambda spec=None: None)
    import hubsurvey.survey.audit as audit_module

    monkeypatch.setattr(audit_module, "check_model", lambda spec=None: None)
    return HASHED


# --- the references ---------------------------------------------------------------------------------


def brute_force(queries: np.ndarray, reference: np.ndarray, k: int, threshold: float,
                excluded: dict[int, list[int]]) -> list[tuple[int, int, float]]:
    """Every (query, reference) product in plain Python, sorted per query by (-product, reference),
    the first k at or above the threshold."""
    out = []
    for i, q in enumerate(queries.tolist()):
        scored = []
        for j, r in enumerate(reference.tolist()):
            if j in excluded.get(i, []):
                continue
            s = sum(a * b for a, b in zip(q, r))
            if s >= threshold:
                scored.append((-s, j))
        out += [(i, j, -s) for s, j in sorted(scored)[:k]]
    return out


def _value_text(value) -> str | None:
    if value is None:
        return None
    if isinstance(value, list):
        return normalize_text(" ".join(str(x) for x in value if x is not None))
    return normalize_text(value if isinstance(value, str) else str(value))


def reference_candidates(data: ConfigData, columns: list[str], model: semantic.EmbeddingModel, threshold: float,
                         k: int = semantic.NEAREST) -> dict[int, list[tuple[float, str, int]]]:
    """Per first test position of a distinct test text: its partners (cosine, split, first position),
    best first, from every pair's cosine in float64, identical texts left out."""
    def texts(split: str) -> dict[str, int]:
        table = data.splits[split].table if data.splits[split].table is not None else \
            pa.concat_tables([pq.read_table(f) for f in data.splits[split].files])
        first: dict[str, int] = {}
        for position, row in enumerate(table.select(columns).to_pylist()):
            text = "\n".join(t for t in (_value_text(row[c]) for c in columns) if t)
            if text:
                first.setdefault(text, position)
        return first

    def unit(items: list[str]) -> np.ndarray:
        vectors = model.encode([t[:semantic.MAX_CHARS] for t in items]).astype(np.float64)
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        return np.divide(vectors, norms, out=np.zeros_like(vectors), where=norms > 0)

    test = texts("test")
    reference = [(split, text, pos) for split in ("train", "validation") if split in data.splits
                 for text, pos in texts(split).items()]
    if not test or not reference:
        return {}
    cosines = unit(list(test)) @ unit([t for _, t, _ in reference]).T
    out = {}
    for i, (text, position) in enumerate(test.items()):
        scored = sorted((-cosines[i, j], j) for j, (_, other, _) in enumerate(reference)
                        if other != text and cosines[i, j] >= threshold)
        if scored:
            out[position] = [(-s, reference[j][0], reference[j][2]) for s, j in scored[:k]]
    return out


def assert_same_candidates(found: semantic.SemanticResult, expected: dict, tolerance: float = 1e-5) -> None:
    """The engine's pairs are the reference's: per test text, the same cosines rank by rank, and each
    partner's cosine the reference's for that partner (partners tied within ``tolerance`` may swap;
    a pair within it of the threshold may be in or out)."""
    threshold = found.info["threshold"]
    by_test: dict[int, list[dict]] = {}
    for pair in found.pairs:
        by_test.setdefault(pair["test_position"], []).append(pair)
    for position in set(by_test) | set(expected):
        got = sorted(by_test.get(position, []), key=lambda p: p["rank"])
        want = expected.get(position, [])
        assert [p["rank"] for p in got] == list(range(1, len(got) + 1))
        longer = [p["cosine"] for p in got] if len(got) > len(want) else [w[0] for w in want]
        assert all(c < threshold + tolerance for c in longer[min(len(got), len(want)):]), (position, got, want)
        partners = {(split, pos): cos for cos, split, pos in want}
        for pair, (cosine, _, _) in zip(got, want):
            assert pair["cosine"] == pytest.approx(cosine, abs=tolerance), (position, pair, want)
            key = (pair["partner_split"], pair["partner_position"])
            # the reference's partner, or one tied with the reference's last
            assert pair["cosine"] == pytest.approx(partners.get(key, want[-1][0]), abs=tolerance), (position, pair, want)


# --- the search -------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(12))
def test_the_blocks_equal_the_brute_force_on_random_integer_vectors(seed, monkeypatch):
    """Integer vectors: every product is exact in float32 and in Python, so ties are real and the
    (-product, reference) order is checked exactly, across blocks far smaller than the data."""
    rng = np.random.default_rng(seed)
    monkeypatch.setattr(semantic, "QUERY_BLOCK", int(rng.integers(1, 9)))
    monkeypatch.setattr(semantic, "REFERENCE_BLOCK", int(rng.integers(1, 9)))
    n_q, n_r, dim = int(rng.integers(0, 30)), int(rng.integers(0, 40)), int(rng.integers(1, 6))
    queries = rng.integers(-2, 3, size=(n_q, dim)).astype(np.float32)
    reference = rng.integers(-2, 3, size=(n_r, dim)).astype(np.float32)
    if n_q and n_r:
        reference[rng.integers(0, n_r, size=n_r // 3)] = queries[rng.integers(0, n_q)]  # ties
    excluded = {int(i): sorted({int(j) for j in rng.integers(0, n_r, size=2)}) for i in range(0, n_q, 3)} if n_r else {}
    k, threshold = int(rng.integers(1, 5)), float(rng.integers(-1, 4))
    found = semantic.nearest(queries, reference, k=k, threshold=threshold, excluded=excluded)
    got = list(zip(found.query.tolist(), found.reference.tolist(), found.cosine.tolist()))
    assert got == brute_force(queries, reference, k, threshold, excluded)
    # the reference embedded and searched a chunk at a time, merged: the same pairs
    monkeypatch.setattr(semantic, "REFERENCE_CHUNK", int(rng.integers(1, 12)))
    vectors = {f"q{i}": v for i, v in enumerate(queries)} | {f"r{j}": v for j, v in enumerate(reference)}
    as_given = semantic.EmbeddingModel("as given", "", dim, lambda texts: np.array([vectors[t] for t in texts]).reshape(-1, dim))
    monkeypatch.setattr(semantic, "embed", lambda model, texts: model.encode(list(texts)))
    chunked = semantic.search(as_given, [f"q{i}" for i in range(n_q)], [f"r{j}" for j in range(n_r)], k=k,
                              threshold=threshold, excluded=excluded)
    assert list(zip(chunked.query.tolist(), chunked.reference.tolist(), chunked.cosine.tolist())) == got


def test_the_blocks_equal_the_brute_force_on_random_unit_vectors(monkeypatch):
    monkeypatch.setattr(semantic, "QUERY_BLOCK", 17)
    monkeypatch.setattr(semantic, "REFERENCE_BLOCK", 23)
    rng = np.random.default_rng(7)
    reference = rng.standard_normal((200, 16)).astype(np.float32)
    queries = np.r_[reference[:60] + 0.3 * rng.standard_normal((60, 16)).astype(np.float32),
                    rng.standard_normal((40, 16)).astype(np.float32)]
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    reference /= np.linalg.norm(reference, axis=1, keepdims=True)
    found = semantic.nearest(queries, reference, k=3, threshold=0.5)
    expected = brute_force(queries.astype(np.float64), reference.astype(np.float64), 3, 0.5, {})
    assert [(q, r) for q, r, _ in expected] == list(zip(found.query.tolist(), found.reference.tolist()))
    assert found.cosine == pytest.approx([s for _, _, s in expected], abs=1e-5)
    assert 0 < len(expected) < 300


SHARED = [("cardiffnlp__tweet_eval", "irony"), ("cardiffnlp__tweet_eval", "stance_climate"), ("CogComp__trec", "default"),
          ("community-datasets__definite_pronoun_resolution", "plain_text"), ("openai__gsm8k", "main")]


@pytest.mark.slow
@pytest.mark.parametrize("folder, config", SHARED)
def test_candidates_on_shared_configs_equal_the_reference(shared_datasets, folder, config, monkeypatch):
    """Real data, its own text columns (one, or several as in gsm8k and definite_pronoun_resolution),
    through the whole of ``candidates`` with the test's static model, at two thresholds."""
    from hubsurvey.core.roles import resolve_roles

    monkeypatch.setattr(semantic, "load_model", lambda spec=None: HASHED)
    monkeypatch.setattr(semantic, "REFERENCE_CHUNK", 1000)  # several chunks of the reference, merged
    data = check_config(FolderSource(shared_datasets / folder).load(config))
    columns = list(resolve_roles(data.features, data.dataset_id, data.config, None).text_columns)
    for threshold in (0.6, 0.9):
        found = semantic.candidates(data, columns, semantic.SemanticRequest(threshold), max_stored=10**9)
        expected = reference_candidates(data, columns, HASHED, threshold)
        assert_same_candidates(found, expected)
        assert found.info["pairs"] == len(found.pairs) and found.info["threshold"] == threshold
        assert found.info["test_texts_with_candidates"] == len({p["test_position"] for p in found.pairs})
        assert found.info["test_rows_with_candidates"] == sum(
            {p["test_position"]: p["test_rows"] for p in found.pairs}.values())


def test_row_texts_blank_rows_lists_and_numbers_as_the_definition():
    table = pa.table({"a": ["  Hello\tWorld ", None, "", "Ünï  Code", "x"],
                      "b": [["One", "TWO"], None, ["  "], [], None],
                      "n": [1, 2, None, 4, 5]})
    split = SplitData("test", "test", table=table)
    assert semantic.row_texts(split, ["a", "b"]) == ["hello world\none two", None, None, "ünï code", "x"]
    assert semantic.row_texts(split, ["n"]) == ["1", "2", None, "4", "5"]
    found = semantic.distinct([*semantic.row_texts(split, ["a"]), "hello world"])
    assert (found.texts, found.first, found.rows) == (["hello world", "ünï code", "x"], [0, 3, 4], [2, 1, 1])


def test_an_identical_text_is_never_its_own_candidate_and_each_side_is_counted(hashed_model):
    train = pa.table({"text": ["the cat sat on the mat", "The cat  sat on the mat", "dogs bark at night", "a b c d"]})
    test = pa.table({"text": ["the cat sat on the mat", "the mat sat on the cat", "the mat sat on the cat", "zz yy"]})
    data = check_config(ConfigData("t/d", "default", "r", {"train": SplitData("train", "train", table=train),
                                                         "test": SplitData("test", "test", table=test)}))
    found = semantic.candidates(data, ["text"], semantic.SemanticRequest(0.8))
    # the first test text is in train (twice, once normalized): no pair; the second is its reordering
    assert [(p["test_position"], p["test_rows"], p["partner_position"], p["partner_rows"], p["cosine"]) for p in found.pairs] \
        == [(1, 2, 0, 2, 1.0)]
    assert found.info["identical_left_out"] == 1 and found.info["test_rows_with_candidates"] == 2


def test_a_config_past_the_pair_limit_is_not_searched_and_the_statement_says_why(hashed_model, monkeypatch):
    from hubsurvey.commands.audit import render_semantic
    from hubsurvey.survey.measure import checks_statement

    monkeypatch.setattr(semantic, "MAX_PAIRS", 5)
    train = pa.table({"text": ["a b", "c d", "e f"]})
    test = pa.table({"text": ["a b c", "d e"]})
    data = check_config(ConfigData("t/d", "default", "r", {"train": SplitData("train", "train", table=train),
                                                         "test": SplitData("test", "test", table=test)}))
    found = semantic.candidates(data, ["text"], semantic.SemanticRequest())
    assert found.pairs == [] and not found.info["ran"]
    entry = checks_statement(None, None, [], None, {}, None, None, found)[-1]
    assert entry == {"check": "semantic", "ran": False, "why_not": "2 test x 3 train and validation texts: more pairs "
                                                                  "than the exact search's limit (5e+00)"}
    assert render_semantic({"semantic": found.info}) == f"  paraphrase candidates for review: not searched: {entry['why_not']}"
    monkeypatch.setattr(semantic, "MAX_PAIRS", 6)
    assert semantic.candidates(data, ["text"], semantic.SemanticRequest()).info["ran"]


# --- the command line, the store, the statement of checks ---------------------------------------------


def _audit(args: list[str]) -> tuple[int, str]:
    """audit's exit code and its standard output (its output and errors, when it failed)."""
    out = CliRunner().invoke(app, ["audit", *args])
    return out.exit_code, out.stdout if out.exit_code == 0 else out.output


def test_without_the_extra_semantic_is_one_usage_line(monkeypatch, tmp_path, shared_datasets):
    monkeypatch.setitem(sys.modules, "wordllama", None)  # import wordllama: ImportError
    code, output = _audit([str(shared_datasets / "CogComp__trec"), "--semantic", "--no-near", "--db", str(tmp_path / "r.duckdb")])
    assert code == 2 and output.count("\n") == 1, output
    assert "pip install 'hubsurvey[semantic]'" in output and not (tmp_path / "r.duckdb").exists()
    with pytest.raises(UsageError, match="model2vec"):
        semantic.check_model(str(tmp_path))  # a folder without a model (or model2vec not installed)


@pytest.mark.parametrize("args, says", [(["--semantic-threshold", "0.5"], "need --semantic"),
                                        (["--semantic-model", "x"], "need --semantic"),
                                        (["--semantic", "--semantic-threshold", "1.5"], "at most 1"),
                                        (["--semantic", "--semantic-threshold", "nan"], "finite")])
def test_semantic_options_are_checked_before_anything_runs(args, says, tmp_path):
    code, output = _audit(["/nonexistent", *args, "--db", str(tmp_path / "r.duckdb")])
    assert code == 2 and says in output, output
    run = CliRunner().invoke(app, ["run", *args, "--db", str(tmp_path / "r.duckdb")])
    assert run.exit_code == 2 and says in run.output, run.output
    assert not (tmp_path / "r.duckdb").exists()


@pytest.mark.slow  # a whole audit (the engine, its compiled fingerprint pass)
def test_audit_semantic_stores_candidates_apart_and_changes_no_figure(hashed_model, shared_datasets, tmp_path):
    target, db = str(shared_datasets / "cardiffnlp__tweet_eval"), tmp_path / "r.duckdb"
    common = [target, "--config", "irony", "--no-near", "--examples", "0", "--db", str(db)]
    code, plain = _audit([*common, "--json"])
    assert code == 0, plain
    code, with_semantic = _audit([*common, "--json", "--semantic", "--semantic-threshold", "0.7"])
    assert code == 0, with_semantic
    (before,), (after,) = json.loads(plain), json.loads(with_semantic)
    assert "semantic" not in before
    candidates = after.pop("semantic")
    for obj in (before, after):  # the statement of checks says it; every figure and the verdict stay
        check = next(c for c in obj.pop("checks") if c["check"] == "semantic")
    assert check["ran"] and check["threshold"] == 0.7 and check["model"] == "test hashed words"
    assert after == before
    assert candidates["model"] == "test hashed words" and candidates["search"] == "exact"
    assert candidates["test_rows_with_candidates"] == check["test_rows_with_candidates"] > 0
    assert len(candidates["candidates"]) == candidates["pairs_stored"] == min(candidates["pairs"], semantic.MAX_STORED)

    with Store(db) as store:
        stored = store.records("SELECT * FROM semantic_candidates ORDER BY cosine DESC, test_position, partner_position")
        methods, checks = store.con.execute("SELECT methods, checks FROM measurements").fetchone()
    assert len(stored) == candidates["pairs_stored"]
    first = stored[0]
    assert first["dataset_id"] == "cardiffnlp/tweet_eval" and first["config"] == "irony"
    assert first["revision_sha"] and first["run_id"] is None  # a one-off audit, as its measurement row
    assert (first["method"], first["method_version"], first["model"], first["threshold"], first["search"]) == \
        (figures.SEMANTIC_METHOD, figures.SEMANTIC_METHOD_VERSION, "test hashed words", 0.7, "exact")
    assert first["tool_version"] and first["measured_at"] and list(first["text_columns"]) == ["text"]
    assert json.loads(methods)[figures.SEMANTIC_METHOD] == figures.SEMANTIC_METHOD_VERSION
    assert next(c for c in json.loads(checks) if c["check"] == "semantic")["ran"]
    # the findings view and the report: the statement's counts, per config
    with Store(db) as store:
        create_views(store)
        (found,) = store.records("SELECT * FROM findings_semantic_candidates")
        rows_test = store.records("SELECT rows_test FROM measurements")[0]["rows_test"]
        paths = render_report(store, tmp_path / "report")
    assert (found["dataset_id"], found["config"], found["rows_test"], found["threshold"], found["model"]) == \
        ("cardiffnlp/tweet_eval", "irony", rows_test, 0.7, "test hashed words")
    assert (found["test_rows_with_candidates"], found["pairs"]) == (check["test_rows_with_candidates"], candidates["pairs"])
    report = next(p for p in paths if p.name == "REPORT.md").read_text(encoding="utf-8")
    assert f"| cardiffnlp/tweet_eval | irony | {found['test_rows_with_candidates']} | {rows_test} |" in report

    code, table = _audit(common)  # again without --semantic: the config's candidates are replaced by none
    assert code == 0 and "paraphrase candidates" not in table and "not checked: near" in table and "semantic" in table
    with Store(db) as store:
        assert store.records("SELECT count(*) AS n FROM semantic_candidates")[0]["n"] == 0
        (checks,) = store.con.execute("SELECT checks FROM measurements").fetchone()
    assert next(c for c in json.loads(checks) if c["check"] == "semantic") == \
        {"check": "semantic", "ran": False, "why_not": "not asked (--semantic)"}


@pytest.mark.slow  # a whole audit (the engine, its compiled fingerprint pass)
def test_the_table_shows_one_count_line_and_a_few_pairs_with_control_characters_visible(hashed_model, tmp_path):
    folder = tmp_path / "org__ctl" / "default"
    for split, texts in {"train": ["red apples\x1b[2J and green pears", "nothing alike here"],
                         "test": ["green pears and red apples\x1b[2J", "something else entirely"]}.items():
        (folder / split).mkdir(parents=True)
        pq.write_table(pa.table({"text": texts}), folder / split / "0000.parquet")
    code, output = _audit([str(tmp_path / "org__ctl"), "--semantic", "--no-near", "--db", str(tmp_path / "r.duckdb")])
    assert code == 0, output
    lines = [line for line in output.splitlines() if "paraphrase" in line or line.startswith("    1.000")]
    assert lines[0].startswith("  paraphrase candidates for review (cosine >= 0.8, test hashed words; not a leak count): "
                               "1 test row(s) (50.0%), 1 pair(s)"), lines
    assert "\x1b" not in output and "test #0" in lines[1] and "train #0" in lines[1]


def _worker_outcomes(shared_datasets: Path):
    """One shared config measured by the worker function, with --semantic (threshold 0.75) and without."""
    from hubsurvey.core.queue import JobSettings, QueuedJob
    from hubsurvey.survey.jobs import JobSpec, run_job

    folder = shared_datasets / "cardiffnlp__tweet_eval" / "stance_climate"
    files = {split: [str(p) for p in sorted((folder / split).glob("*.parquet"))] for split in ("train", "validation", "test")}
    job = QueuedJob("cardiffnlp/tweet_eval@r/stance_climate", "cardiffnlp/tweet_eval", "r", "stance_climate", 10, files)
    settings = JobSettings(near=False, examples=0, semantic=True, semantic_threshold=0.75)
    outcome = run_job(JobSpec(job, settings, local_files=files))
    plain = run_job(JobSpec(job, JobSettings(near=False, examples=0), local_files=files))
    return job, plain, outcome


@pytest.mark.slow  # two jobs measured (the engine, its compiled fingerprint pass)
def test_run_semantic_reaches_the_worker_through_the_job_settings(hashed_model, shared_datasets):
    from dataclasses import fields

    from hubsurvey.core.queue import JobSettings
    from hubsurvey.core.steps import RunOptions

    declared = {f.name for f in fields(RunOptions)}
    assert {"semantic", "semantic_threshold", "semantic_model"} <= declared & {f.name for f in fields(JobSettings)}
    _, plain, outcome = _worker_outcomes(shared_datasets)
    assert outcome.error_class is None, outcome.message
    row = outcome.rows[0]
    assert row["semantic"]["threshold"] == 0.75 and row["semantic"]["model"] == "test hashed words"
    assert row["semantic_candidates"] and json.loads(row["checks"])[-1]["ran"]
    assert "semantic" not in plain.rows[0] and not json.loads(plain.rows[0]["checks"])[-1]["ran"]


@pytest.mark.slow  # two jobs measured (the engine, its compiled fingerprint pass)
def test_run_semantic_measures_again_the_configs_measured_without_it(hashed_model, shared_datasets, tmp_path):
    """A config done without --semantic is queued again by a run with it; one done with it stays
    done for a run without it (rows holding more methods than asked stay), as --no-near."""
    from hubsurvey.core.queue import JobQueue, JobStatus
    from hubsurvey.core.store import insert, now

    job, plain, with_semantic = _worker_outcomes(shared_datasets)
    configs = {job.config: {split: {"files": paths} for split, paths in job.files.items()}}
    with Store(tmp_path / "r.duckdb") as store:
        insert(store.con, "datasets", {"dataset_id": job.dataset_id, "sha": job.revision_sha, "status": "eligible",
                                       "configs": json.dumps(configs), "first_seen": now(), "last_seen": now()})

        def queue(semantic_too: bool) -> JobQueue:
            return JobQueue(store, methods=figures.methods_measured(near=False, semantic=semantic_too))

        (queued,) = queue(False).enqueue("run-1")
        assert queue(False).record(queued, plain) is JobStatus.DONE
        assert queue(False).enqueue("run-2") == []
        (again,) = queue(True).enqueue("run-3")
        assert again.job_id == job.job_id
        assert queue(True).record(again, with_semantic) is JobStatus.DONE
        assert queue(True).enqueue("run-4") == [] and queue(False).enqueue("run-5") == []
        assert store.records("SELECT count(*) AS n FROM semantic_candidates")[0]["n"] == \
            len(with_semantic.rows[0]["semantic_candidates"]) > 0


def test_the_site_and_junit_words_of_the_semantic_check():
    from hubsurvey.analysis.beside import beside_section
    from hubsurvey.survey.check import check_property
    from hubsurvey.survey.measure import checks_statement

    ran = semantic.SemanticResult({"threshold": 0.8, "model": "wordllama l2_supercat_256", "test_rows_with_candidates": 12,
                                   "pairs": 30}, [])
    entry = checks_statement(None, None, [], None, {}, None, None, ran)[-1]
    assert entry == {"check": "semantic", "ran": True, "threshold": 0.8, "model": "wordllama l2_supercat_256",
                     "test_rows_with_candidates": 12, "pairs": 30}
    section = beside_section([{"rows_test": 5, "checks": json.dumps([entry])}], [], [])
    assert section["checks"] == [{"check": "semantic", "ran": True, "words": "cosine >= 0.8, wordllama l2_supercat_256: "
                                                                            "12 test rows with candidates for review"}]
    assert check_property(entry) == "ran: threshold 0.8"
    not_asked = checks_statement(None, None, [], None, {}, None, None)[-1]
    assert check_property(not_asked) == "not run: not asked (--semantic)"


# --- real models (slow) ---------------------------------------------------------------------------


def _tiny_model2vec(folder: Path, vocab: list[str], vectors: np.ndarray) -> Path:
    """The files model2vec's local loader reads: a WordLevel tokenizer, the vectors, the config."""
    from safetensors.numpy import save_file
    from tokenizers import Tokenizer, models, pre_tokenizers

    folder.mkdir(parents=True)
    tokenizer = Tokenizer(models.WordLevel({w: i for i, w in enumerate(vocab)}, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer.save(str(folder / "tokenizer.json"))
    save_file({"embeddings": np.ascontiguousarray(vectors, dtype=np.float32)}, str(folder / "model.safetensors"))
    (folder / "config.json").write_text(json.dumps({"model_type": "model2vec", "normalize": False,
                                                    "hidden_dim": int(vectors.shape[1])}))
    return folder


@pytest.mark.slow
def test_a_model2vec_folder_built_here_loads_offline_and_embeds_as_its_vectors(tmp_path, monkeypatch):
    pytest.importorskip("model2vec")
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")  # the loader sets it for itself
    vocab = ["[UNK]", "[PAD]", "cat", "dog", "mat", "sat", "the", "on"]
    vectors = np.random.default_rng(0).standard_normal((len(vocab), 8)).astype(np.float32)
    folder = _tiny_model2vec(tmp_path / "tiny", vocab, vectors)
    semantic.load_model.cache_clear()
    model = semantic.load_model(str(folder))
    assert model.dim == 8 and model.name == "model2vec tiny" and len(model.weights_sha256) == 64
    got = semantic.embed(model, ["the cat sat", "dog on the mat"])
    for text, vector in zip(["the cat sat", "dog on the mat"], got):
        mean = vectors[[vocab.index(w) for w in text.split()]].mean(axis=0)
        assert vector == pytest.approx(mean / np.linalg.norm(mean), abs=1e-5)
    import os

    assert os.environ["HF_HUB_OFFLINE"] == "0"  # restored
    (folder / "model.safetensors").unlink()
    with pytest.raises(UsageError, match=r"not a model2vec folder \(no model.safetensors\)"):
        semantic.check_model(str(folder))
    with pytest.raises(UsageError, match="never downloaded"):
        semantic.check_model("someone/not-in-the-cache")


@pytest.mark.slow
def test_audit_semantic_model_reads_the_users_folder(tmp_path):
    pytest.importorskip("model2vec")
    vocab = ["[UNK]", "[PAD]", "red", "green", "apples", "pears", "and", "cars", "fast"]
    vectors = np.random.default_rng(1).standard_normal((len(vocab), 16)).astype(np.float32)
    model = _tiny_model2vec(tmp_path / "my-model", vocab, vectors)
    folder = tmp_path / "org__fruit" / "default"
    for split, texts in {"train": ["red apples and green pears", "fast cars"], "test": ["green pears and red apples", "cars"]}.items():
        (folder / split).mkdir(parents=True)
        pq.write_table(pa.table({"text": texts}), folder / split / "0000.parquet")
    code, output = _audit([str(tmp_path / "org__fruit"), "--semantic", "--semantic-model", str(model), "--no-near",
                           "--json", "--db", str(tmp_path / "r.duckdb")])
    assert code == 0, output
    (row,) = json.loads(output)
    pairs = [(p["test_position"], p["partner_position"], p["cosine"]) for p in row["semantic"]["candidates"]]
    assert pairs[0] == (0, 0, pytest.approx(1.0)) and row["semantic"]["model"] == "model2vec my-model"


@pytest.mark.slow
def test_wordllama_finds_most_planted_rewrites_of_shared_rows(shared_datasets):
    """The shipped weights, offline: 150 rotten_tomatoes test rows reworded (each kind) and added to
    train; at the default threshold the candidates hold at least 80% of them."""
    pytest.importorskip("wordllama")
    data = check_config(FolderSource(shared_datasets / "cornell-movie-review-data__rotten_tomatoes").load("default"))
    test = data.splits["test"]
    texts = pa.concat_tables([pq.read_table(f) for f in test.files]).column("text").to_pylist()
    train = pa.concat_tables([pq.read_table(f) for f in data.splits["train"].files])
    chosen = list(range(0, len(texts), len(texts) // 150))[:150]
    for kind in KINDS:
        rewrites = {i: rewrite(texts[i], kind, seed=i) for i in chosen}
        planted = {i: train.num_rows + n for n, i in enumerate(rewrites)}
        extra = pa.table({"text": list(rewrites.values()), "label": pa.array([0] * len(rewrites), train.schema.field("label").type)})
        splits = {**data.splits, "train": SplitData("train", "train", table=pa.concat_tables([train, extra]))}
        found = semantic.candidates(ConfigData(data.dataset_id, "default", "r", splits, data.features), ["text"],
                                    semantic.SemanticRequest(), max_stored=10**9)
        pairs = {(p["test_position"], p["partner_position"]) for p in found.pairs if p["partner_split"] == "train"}
        recall = sum((i, j) in pairs for i, j in planted.items()) / len(planted)
        assert recall >= 0.8, (kind, recall)
        assert found.info["model"].startswith("wordllama")


@pytest.mark.slow
def test_wordllama_candidates_on_a_shared_config_equal_the_reference(shared_datasets):
    pytest.importorskip("wordllama")
    data = check_config(FolderSource(shared_datasets / "cardiffnlp__tweet_eval").load("stance_feminist"))
    found = semantic.candidates(data, ["text"], semantic.SemanticRequest(0.8), max_stored=10**9)
    assert_same_candidates(found, reference_candidates(data, ["text"], semantic.load_model(None), 0.8))
    assert found.info["pairs"] > 0
    # a bag of words: word order is invisible (docs/method.md says so)
    swapped = semantic.embed(semantic.load_model(None), ["the dog bit the man", "the man bit the dog"])
    assert float(swapped[0] @ swapped[1]) == pytest.approx(1.0, abs=1e-6)
