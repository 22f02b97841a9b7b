"""The compiled near-duplicate pass against the numpy path it replaced (tests/near_numpy.py), bit for
bit: shingle hashes, densified signatures, band hashes, candidate pairs, verified pairs and their
Jaccards, on planted texts, random texts (Hypothesis) and shared configs; the same with one thread
or two; and the text cap: a huge cell is shingled in bounded memory, and the cap is recorded."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import unicodedata

import near_numpy
import numba
import numpy as np
import pyarrow as pa
import pytest
from conftest import shared_index
from hypothesis import given, settings
from hypothesis import strategies as st

from hubsurvey.core.compiled import string_buffers
from hubsurvey.core.roles import resolve_roles
from hubsurvey.survey import near, normalize
from hubsurvey.survey.api import measure
from hubsurvey.survey.sources import FolderSource, check_config

PARAMS = near.NearParams()


@pytest.fixture(autouse=True)
def _one_thread():
    """One thread for the small inputs here, as find_pairs picks for them (waking the pool costs
    more than the work); test_one_thread_or_two_give_the_same_pairs asks for two."""
    before = numba.get_num_threads()
    numba.set_num_threads(1)
    yield
    numba.set_num_threads(before)
SENTENCE = "the committee will meet on thursday to discuss the new budget for the regional library"
PLANTED = ["hello world", "hello world!", "", "ab", "abcde", "abcdef", "中文数据很好用", "hello world", "😀😀😀😀😀😀",
           "a\u0301bcdef", SENTENCE, SENTENCE.replace("thursday", "friday"), SENTENCE[::-1], SENTENCE.upper(),
           "x" * 3, "ab" * 200, "\x00\x00\x00\x00\x00\x00", "\U0010ffff" * 7]


def _same_sketches(texts: list[str], params: near.NearParams = PARAMS) -> None:
    sketched = near.sketch_texts(texts, params, with_signatures=True)
    hashes, text_of = near_numpy.shingle_hashes(texts, params.shingle_size, params.seed)
    signatures = near_numpy.densify(near_numpy.signatures(hashes, text_of, len(texts), params.bins))
    assert sketched.signatures is not None and (sketched.signatures == signatures).all()
    assert (sketched.bands == near_numpy.band_hashes(signatures, params.band_rows)).all()
    want_sketch = (signatures[:, :: params.bins // near.SKETCH_BINS] >> np.uint64(48)).astype(np.uint16)
    assert (sketched.sketch == want_sketch).all()
    compiled, compiled_of = near.shingle_hashes(texts, params.shingle_size, params.seed)
    for i in range(len(texts)):
        assert sorted(compiled[compiled_of == i].tolist()) == sorted(hashes[text_of == i].tolist())


def _same_pairs(texts: list[str], query: np.ndarray, params: near.NearParams = PARAMS, **kwargs) -> near.NearPairs:
    new = near.find_pairs(texts, query, params, **kwargs)
    old = near_numpy.find_pairs(texts, query, params, **{k: v for k, v in kwargs.items() if k != "threads"})
    assert new.pairs.tolist() == old.pairs.tolist()
    assert new.jaccard.tolist() == old.jaccard.tolist()  # the same floats, not approximately
    assert (new.candidates, new.capped, new.verified, new.cut) == (old.candidates, old.capped, old.verified, 0)
    half = len(texts) // 2  # two chunks: each read in place
    from_arrow = near.find_pairs(pa.chunked_array([texts[:half], texts[half:]], pa.string()), query, params, **kwargs)
    assert from_arrow.pairs.tolist() == new.pairs.tolist() and from_arrow.jaccard.tolist() == new.jaccard.tolist()
    assert (from_arrow.candidates, from_arrow.verified) == (new.candidates, new.verified)
    return new


@pytest.mark.slow
def test_planted_texts_sketch_as_the_reference():
    _same_sketches(PLANTED)
    _same_sketches(PLANTED, near.NearParams(shingle_size=3, bins=64, band_rows=2, seed=7))


@pytest.mark.slow
@settings(max_examples=25, deadline=None)
@given(st.lists(st.text(alphabet=st.sampled_from("abcde .é中😀\u0301"), max_size=40), min_size=1, max_size=30),
       st.integers(0, 2**63 - 1))
def test_random_texts_sketch_and_pair_as_the_reference(texts, seed):
    params = near.NearParams(seed=seed)
    _same_sketches(texts, params)
    query = np.array([i % 3 == 0 for i in range(len(texts))])
    _same_pairs(texts, query, params)


@pytest.mark.slow
def test_texts_around_the_shingle_buffer_sketch_as_the_reference():
    """A text is shingled a buffer of code points at a time, the last n - 1 carried into the next:
    texts ending just before, at and after a buffer's edge (and two, three buffers), ASCII or not."""
    edge = near._SHINGLE_CHUNK
    rng = np.random.default_rng(5)
    alphabet = [*"abcdefgh ", "é", "中", "😀"]
    texts = ["".join(rng.choice(alphabet, size=length)) for length in
             [edge - 6, edge - 5, edge - 4, edge - 1, edge, edge + 1, edge + 4, edge + 5, 2 * edge - 3, 2 * edge + 2, 3 * edge + 17]]
    texts += [t.replace("é", "e").replace("中", "z").replace("😀", "s") for t in texts]  # all ASCII
    _same_sketches(texts)
    _same_sketches(texts, near.NearParams(shingle_size=9, seed=3))
    for cap in (edge - 1, edge, edge + 1, 2 * edge + 5):  # a cap inside a buffer and on its edge
        hashes, text_of = near.shingle_hashes(texts, PARAMS.shingle_size, PARAMS.seed, cap=cap)
        want, want_of = near_numpy.shingle_hashes([t[:cap] for t in texts], PARAMS.shingle_size, PARAMS.seed)
        for i in range(len(texts)):
            assert sorted(hashes[text_of == i].tolist()) == sorted(want[want_of == i].tolist())


def _family(count: int, size: int = 20) -> list[str]:
    """Texts alike in families of ``size`` (one word changed), so that buckets hold several texts."""
    words = SENTENCE.split()
    return [" ".join(f"w{i}" if k == i % len(words) else f"{w}{i // size}" for k, w in enumerate(words)) for i in range(count)]


@pytest.mark.slow
@pytest.mark.parametrize("max_bucket,max_pairs", [(5_000, 10_000_000), (3, 10_000_000), (5_000, 400), (2, 50)])
def test_candidate_pairs_and_their_caps_as_the_reference(max_bucket, max_pairs):
    texts = _family(600, size=60)
    query = np.arange(len(texts)) % 4 == 0
    sketched = near.sketch_texts(texts, PARAMS)
    new, new_capped = near.candidate_pairs(sketched.bands, query, max_pairs, max_bucket)
    old, old_capped = near_numpy.candidate_pairs(np.ascontiguousarray(sketched.bands), query, max_pairs, max_bucket)
    assert new.tolist() == old.tolist() and new_capped == old_capped
    assert len(new) or max_pairs < 1000  # the case has candidates, not an empty agreement


@pytest.mark.slow
@pytest.mark.parametrize("threads", [1, 2])
def test_one_thread_or_two_give_the_same_pairs(threads, monkeypatch):
    monkeypatch.setattr(near, "TEXTS_PER_THREAD", 100)  # two threads from 200 texts
    texts = _family(2_000) + PLANTED
    found = _same_pairs(texts, np.arange(len(texts)) % 5 == 0, threads=threads)
    assert len(found.pairs) > 100


def test_one_thread_holds_for_the_calling_thread_alone():
    """The near stage's reader thread runs its own compiled passes on one thread, while the pass,
    launched from the stage's thread, keeps every core."""
    import threading

    import numba

    before = numba.get_num_threads()
    seen: list[int] = []

    def reader() -> None:
        near.one_thread()
        seen.append(numba.get_num_threads())

    worker = threading.Thread(target=reader)
    worker.start()
    worker.join()
    assert seen == [1]
    assert numba.get_num_threads() == before


SHARED = [(e["id"], c) for e in shared_index() for c in e["configs"]]
_SMALLEST = sorted((sum(splits.values()), e["id"], c) for e in shared_index() for c, splits in e["configs"].items())
#: README's command's `sample` of the sweep (the two smallest configs); CI takes every config
SAMPLE = {(d, c) for _, d, c in _SMALLEST[:2]}


def _distinct_texts(data) -> tuple[list[str], np.ndarray]:
    """The shared config's distinct normalized texts (as the engine forms them) and which are test or
    validation texts."""
    roles = resolve_roles(data.features, data.dataset_id, data.config)
    asked: dict[str, bool] = {}
    for name, split in data.splits.items():
        table = pa.concat_tables([__import__("pyarrow.parquet").parquet.read_table(f) for f in split.files])
        columns = [normalize.normalize_array(table.column(c)).to_pylist() for c in roles.text_columns]
        for text in near.row_texts(columns):
            asked[text] = asked.get(text, False) or name in ("test", "validation")
    return list(asked), np.array(list(asked.values()))


@pytest.mark.parametrize("dataset_id,config", [
    pytest.param(d, c, marks=[pytest.mark.slow, pytest.mark.sample] if (d, c) in SAMPLE else [pytest.mark.slow])
    for d, c in SHARED
] or [pytest.param(None, None, marks=pytest.mark.skip("no shared datasets"))])
def test_shared_configs_pair_as_the_reference(shared_datasets, dataset_id, config):
    data = check_config(FolderSource(shared_datasets / dataset_id.replace("/", "__")).load(config))
    texts, query = _distinct_texts(data)
    assert max(map(len, texts)) < PARAMS.max_text_chars  # the cap changes nothing here
    _same_pairs(texts, query)


@pytest.mark.slow
def test_arrow_row_texts_equal_the_python_ones():
    column = pa.chunked_array([["a b", None, ""], ["x", None, "ü"]], pa.large_string())
    assert near.arrow_row_texts([column]).to_pylist() == ["a b", None, "", "x", None, "ü"]  # NULL: the pass's ""
    assert near.arrow_row_texts([pa.array([["a"], None])]) is None  # lists take row_texts
    assert near.arrow_row_texts([column, column]) is None  # so do several columns
    sketched = near.sketch_texts(near.arrow_row_texts([column]), PARAMS)
    assert (sketched.bands == near.sketch_texts(near.row_texts([column.to_pylist()]), PARAMS).bands).all()


# --- the text cap --------------------------------------------------------------------------------

@pytest.mark.slow
def test_a_text_over_the_cap_is_shingled_on_its_first_characters():
    params = near.NearParams(max_text_chars=200)
    head = (SENTENCE + " ") * 3
    texts = [head[:200] + "x" * 5_000, head[:200] + "y" * 9_000, "short"]
    found = near.find_pairs(texts, np.array([True, False, False]), params)
    assert found.cut == 2
    assert found.pairs.tolist() == [[0, 1]] and found.jaccard.tolist() == [1.0]  # their first 200 agree
    from_arrow = near.find_pairs(pa.array(texts), np.array([True, False, False]), params)
    assert from_arrow.cut == 2 and from_arrow.pairs.tolist() == [[0, 1]]
    (row,) = measure({"train": pa.table({"text": texts[1:]}), "test": pa.table({"text": texts[:1]})}, text_columns=["text"])
    info = json.loads(row["near"])
    assert info["max_text_chars"] == near.NearParams.max_text_chars and info["texts_cut"] == 0


@pytest.mark.slow
def test_the_cap_and_the_texts_it_cut_are_recorded(monkeypatch):
    from hubsurvey.survey.metrics import Engine

    monkeypatch.setattr(Engine, "near_params", near.NearParams(max_text_chars=50))
    tables = {"train": pa.table({"text": [SENTENCE, "tiny"]}), "test": pa.table({"text": [SENTENCE + " again", "x"]})}
    (row,) = measure(tables, text_columns=["text"])
    info = json.loads(row["near"])
    assert info["max_text_chars"] == 50 and info["texts_cut"] == 2
    assert row["test_rows_near_train"] == 1  # their first 50 characters are one text


_HUGE_CELL = textwrap.dedent("""
    import json, resource, sys
    import numpy as np
    from hubsurvey.survey import near
    cell = int(sys.argv[1])
    base = "".join(chr(0x4E00 + (i * 7919) % 20000) for i in range(cell // 2))  # 3 UTF-8 bytes, 4 in UTF-32
    texts = [base + base, base + "x" + base, "a short text", "another short text"]
    near.find_pairs(texts[2:], np.array([True, False]), near.NearParams())  # loaded and compiled
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    found = near.find_pairs(texts, np.array([True, False, True, False]), near.NearParams())
    grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    print(json.dumps({"grown_mb": grown / 1024, "cut": found.cut, "pairs": found.pairs.tolist()}))
""")


@pytest.mark.slow
def test_a_30_mb_cell_is_shingled_in_bounded_memory():
    """Two texts of 10 M characters (30 MB of UTF-8 each): the pass's peak grows by its cap's worth
    (the numpy path held 8 bytes a shingle several times over, gigabytes here)."""
    proc = subprocess.run([sys.executable, "-c", _HUGE_CELL, str(10_000_000)], capture_output=True, text=True, check=True)
    result = json.loads(proc.stdout)
    assert result["cut"] == 2 and result["pairs"] == [[0, 1]]  # the same first million characters
    assert result["grown_mb"] < 150, result


# --- the normalized profile, folded by the compiled pass the contamination check uses -------------

def _assert_normalizes_as_the_definition(texts: list[str | None], arrow_type: pa.DataType = pa.string()) -> None:
    got = near.normalize_column(pa.chunked_array([pa.array(texts, arrow_type)]))
    assert got.to_pylist() == [None if t is None else normalize.normalize_text(t) for t in texts]


@pytest.mark.slow
def test_every_code_point_alone_and_in_context_normalizes_as_the_definition():
    """Below U+3400 (Latin to Hangul jamo, the combining marks, the Indic vowel signs) and the
    tricky characters of the contamination pass's tests, alone, between letters and spaces, after a
    letter it may compose with and before a combining mark (tests/survey/test_passages.py has the rest)."""
    from test_passages import TRICKY, code_points

    points = code_points(0x3400) + list(TRICKY)
    for make in (lambda ch: ch, lambda ch: f" A{ch}b  ", lambda ch: f"e{ch}", lambda ch: f"{ch}\u0301 x\t"):
        _assert_normalizes_as_the_definition([make(ch) for ch in points])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.none(), st.text(alphabet=st.one_of(st.sampled_from(" \t\n\xa0\u3000AbİßﬁÅe\u0301ㄱ가😀"),
                                                                 st.characters(codec="utf-8")), max_size=40)), max_size=30))
@pytest.mark.slow
def test_random_texts_normalize_as_the_definition(texts):
    _assert_normalizes_as_the_definition(texts)
    _assert_normalizes_as_the_definition(texts, pa.large_string())


@pytest.mark.slow
def test_slices_nulls_and_folds_longer_than_the_text_normalize_as_the_definition():
    texts = ["  Hello\tWORLD  ", None, "İ" * 100, "", None, "ﬁne  ß", "a\u0301", " "]  # İ folds to 3 bytes from 2
    column = pa.array(texts, pa.string())
    for start in range(len(texts)):
        got = near.normalize_column(pa.chunked_array([column.slice(start)]))
        assert got.to_pylist() == [None if t is None else normalize.normalize_text(t) for t in texts[start:]]


def _is_plain(text: str) -> bool:
    """A plain row, in words: printable ASCII, single spaces between its words, none at its ends."""
    return all(32 <= ord(c) <= 126 for c in text) and "  " not in text and text == text.strip(" ")


@pytest.mark.slow
def test_plain_rows_are_found_as_defined_and_normalize_as_the_definition():
    """The shortcut for plain rows (their bytes with A-Z lowered): the rows it takes are exactly the
    plain ones, at any slice, with rows longer than a tested block and a double space, a tab or a
    non-ASCII byte on either side of a block's end."""
    from hubsurvey.survey import passages

    assert passages._plain_ascii(passages.char_table()) and passages._plain_ascii(passages.ascii_char_table())
    printable = "".join(chr(c) for c in range(33, 127))
    block = passages._PLAIN_BLOCK
    texts: list[str | None] = [printable, f"A {printable} Z", "", None, "x", " x", "x ", "a  b", "a\tb", "ÉCOLE", "\x7f"]
    for offset in range(block - 3, block + 3):  # what sits at a block's end moves over it
        for odd in ("  ", " \t", "é", "\x1f", "~ "):
            texts += ["W" * offset + odd + "Q R", "Plain Words", *["z" * 3 * block] * 4]  # most blocks plain
    column = pa.array(texts, pa.string())
    for start in (0, 1, 5, 37):
        part = column.slice(start)
        data, offsets = string_buffers(part)
        found = passages._plain_rows(data, offsets)
        assert found.tolist() == [t is None or _is_plain(t) for t in texts[start:]]
        _assert_normalizes_as_the_definition(texts[start:])
    every = pa.array(["Plain Words here", "MORE words"] * 1000)
    assert passages._plain_rows(*string_buffers(every)).all()  # the whole column in one step
    _assert_normalizes_as_the_definition(every.to_pylist())


@pytest.mark.slow
def test_a_column_in_another_script_takes_the_walk_not_the_shortcut():
    from hubsurvey.survey import passages

    texts = ["Καλημέρα κόσμε, τι κάνεις; Ωραία μέρα" * 20] * 200 + ["plain tail"]
    data, offsets = string_buffers(pa.array(texts))
    assert len(passages._plain_rows(data, offsets)) == 0  # every block holds other bytes: no shortcut
    _assert_normalizes_as_the_definition(texts)


@pytest.mark.slow
def test_the_ascii_table_is_the_whole_tables_first_rows():
    from hubsurvey.survey import passages

    whole, ascii_only = passages.char_table(), passages.ascii_char_table()
    assert len(ascii_only.classes) == 128
    assert (ascii_only.ascii == whole.ascii).all()
    for cp in range(128):
        assert ascii_only.classes[cp] == whole.classes[cp] or (
            ascii_only.classes[cp] >= 0 and whole.classes[cp] >= 0 and  # the same folded bytes, at its own index
            bytes(ascii_only.folded[ascii_only.starts[ascii_only.classes[cp]]:ascii_only.starts[ascii_only.classes[cp] + 1]])
            == bytes(whole.folded[whole.starts[whole.classes[cp]]:whole.starts[whole.classes[cp] + 1]]))


@pytest.mark.slow
def test_the_character_table_is_built_once_then_read_from_the_cache_and_rebuilt_when_unreadable(tmp_path, monkeypatch):
    from hubsurvey.survey import passages

    monkeypatch.setattr(passages, "cache_folder", lambda _module: tmp_path)
    passages.char_table.cache_clear()
    try:
        built = passages.char_table()  # nothing stored yet: built, and written
        (stored,) = tmp_path.glob("passages.chars-*.npz")
        assert not list(tmp_path.glob(".chars-*"))  # written whole: no part left

        def never(_limit):
            raise AssertionError("built again although the cache holds the table")

        passages.char_table.cache_clear()
        with monkeypatch.context() as m:
            m.setattr(passages, "_char_table", never)
            loaded = passages.char_table()
        for name in passages._TABLE_ARRAYS:
            assert np.array_equal(getattr(loaded, name), getattr(built, name)), name
            assert getattr(loaded, name).dtype == getattr(built, name).dtype
        # a file cut short, and one whose arrays have the wrong shape: built again, and rewritten
        for damage in (lambda: stored.write_bytes(stored.read_bytes()[:1000]),
                       lambda: np.savez(stored, classes=np.zeros(5, np.int32), starts=built.starts,
                                        folded=built.folded, ascii=built.ascii)):
            damage()
            passages.char_table.cache_clear()
            again = passages.char_table()
            for name in passages._TABLE_ARRAYS:
                assert np.array_equal(getattr(again, name), getattr(built, name)), name
            with np.load(stored) as rewritten:
                assert np.array_equal(rewritten["classes"], built.classes)
    finally:
        passages.char_table.cache_clear()


def test_the_character_tables_cache_file_is_named_by_what_the_table_depends_on(tmp_path, monkeypatch):
    from hubsurvey.survey import passages

    monkeypatch.setattr(passages, "cache_folder", lambda _module: tmp_path)
    first = passages._char_table_file()
    assert first is not None and first.parent == tmp_path and unicodedata.unidata_version in first.name
    monkeypatch.setattr(passages, "TABLE_LIMIT", passages.TABLE_LIMIT + 1)
    assert passages._char_table_file() != first
    monkeypatch.setattr(passages, "cache_folder", lambda _module: None)
    assert passages._char_table_file() is None


def test_the_compiled_passes_cache_folder_follows_numba(tmp_path, monkeypatch):
    from hubsurvey.core import compiled

    monkeypatch.setattr(numba.config, "CACHE_DIR", str(tmp_path / "numba"))
    assert compiled.cache_folder(str(tmp_path / "pkg" / "module.py")) == tmp_path / "numba" / "hubsurvey"
    monkeypatch.setattr(numba.config, "CACHE_DIR", "")  # numba's default: beside the module
    assert compiled.cache_folder(str(tmp_path / "pkg" / "module.py")) == tmp_path / "pkg" / "__pycache__"
