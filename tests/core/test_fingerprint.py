"""The split fingerprint (hubsurvey/core/fingerprint.py): its properties, and the vectorized code
against a plain-Python implementation of its definition (tests/fingerprint_reference.py)."""

from __future__ import annotations

import json
import math
import random
import struct
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import SHARED_DATASETS, shared_index
from fingerprint_reference import reference_fingerprint
from hypothesis import given, settings
from hypothesis import strategies as st

from hubsurvey.core.fingerprint import files_fingerprint, split_fingerprint
from hubsurvey.core.store import Store
from hubsurvey.survey.audit import audit


def _reference(table: pa.Table) -> str:
    return reference_fingerprint(table.schema.names, table.to_pylist())


def _split_files() -> list[Path]:
    return sorted(SHARED_DATASETS.glob("*/*/*/*.parquet")) if shared_index() else []


#: a few shared splits (strings and ClassLabels; token lists and nested features) for README's command;
#: CI's sweep takes every split
SMALL = ["CogComp__trec", "universal-dependencies__universal_dependencies"]


@pytest.mark.slow
@pytest.mark.parametrize("path", [p for p in _split_files() if p.parts[-4] in SMALL], ids=lambda p: "/".join(p.parts[-4:-1]))
def test_engine_equals_the_reference_on_shared_splits(path):
    table = pq.read_table(path)
    assert split_fingerprint(table) == _reference(table) == files_fingerprint([str(path)])


@pytest.mark.slow
@pytest.mark.parametrize("path", _split_files(), ids=lambda p: "/".join(p.parts[-4:-1]))
def test_every_shared_split_equals_the_reference(path):
    table = pq.read_table(path)
    assert split_fingerprint(table) == _reference(table)


@pytest.fixture(scope="module")
def conll_test(shared_datasets) -> pa.Table:
    return pq.read_table(shared_datasets / "eriktks__conll2003/conll2003/test/0000.parquet")


@pytest.mark.slow
def test_row_order_and_sharding_do_not_matter(conll_test, tmp_path):
    order = list(range(conll_test.num_rows))
    random.Random(1).shuffle(order)
    shuffled = conll_test.take(order)
    assert split_fingerprint(shuffled) == split_fingerprint(conll_test)
    # the same rows in three files of other sizes, listed in another order
    paths = []
    for k, (a, b) in enumerate([(0, 1000), (1000, 1001), (1001, conll_test.num_rows)]):
        paths.append(str(tmp_path / f"{k}.parquet"))
        pq.write_table(shuffled.slice(a, b - a), paths[-1], row_group_size=300)
    assert files_fingerprint(paths[::-1]) == split_fingerprint(conll_test)


@pytest.mark.slow
def test_one_row_changed_added_removed_or_repeated_changes_it(conll_test):
    base = split_fingerprint(conll_test)
    rows = conll_test.to_pylist()
    changed = [dict(r) for r in rows]
    changed[17]["tokens"] = [*changed[17]["tokens"][:-1], changed[17]["tokens"][-1] + "x"]
    label_changed = [dict(r) for r in rows]
    label_changed[5]["ner_tags"] = [t + 1 for t in label_changed[5]["ner_tags"]]
    variants = {
        "a token changed": changed,
        "a label changed": label_changed,
        "a row added": [*rows, rows[0] | {"id": "new"}],
        "a row removed": rows[1:],
        "a row repeated": [*rows, rows[42]],
    }
    seen = {base}
    for name, variant in variants.items():
        fp = split_fingerprint(pa.Table.from_pylist(variant, schema=conll_test.schema))
        assert fp not in seen, name
        seen.add(fp)
    # a row repeated twice is not the same as the row once (a XOR would cancel the pair out)
    twice = pa.Table.from_pylist([*rows, rows[42], rows[42]], schema=conll_test.schema)
    assert split_fingerprint(twice) not in seen


def test_the_package_exports_it():
    import hubsurvey

    assert hubsurvey.split_fingerprint is split_fingerprint
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        hubsurvey.nothing  # noqa: B018


@pytest.mark.slow
def test_string_layout_and_dictionary_encoding_do_not_matter():
    texts = ["a", None, "b", "a", "ünï"]
    plain = pa.table({"t": pa.array(texts, pa.string()), "n": pa.array([1, 2, None, 4, 5], pa.int64())})
    other = pa.table({"t": pa.array(texts, pa.large_string()).dictionary_encode(), "n": pa.array([1, 2, None, 4, 5], pa.int32())})
    assert split_fingerprint(plain) == split_fingerprint(other) == _reference(plain)
    assert split_fingerprint(plain) != split_fingerprint(plain.rename_columns(["text", "n"]))  # names are content
    assert split_fingerprint(plain.slice(0, 0)) == reference_fingerprint(["t", "n"], [])


_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**63), 2**63 - 1), st.text(max_size=8),
    st.floats(allow_nan=True, allow_infinity=True), st.binary(max_size=6),
)


@st.composite
def _tables(draw) -> pa.Table:
    n = draw(st.integers(0, 12))
    kinds = draw(st.lists(st.sampled_from(["str", "int", "int8", "uint32", "uint64", "float", "bool", "bin", "list_str", "list_int", "struct", "nested"]),
                          min_size=1, max_size=4))
    columns = {}
    strs = st.one_of(st.none(), st.text(max_size=10))
    for i, kind in enumerate(kinds):
        values, typ = {
            "str": (strs, pa.string()),
            "int": (st.one_of(st.none(), st.integers(-(2**63), 2**63 - 1)), pa.int64()),
            "int8": (st.one_of(st.none(), st.integers(-(2**7), 2**7 - 1)), pa.int8()),
            "uint32": (st.one_of(st.none(), st.integers(0, 2**32 - 1)), pa.uint32()),
            "uint64": (st.one_of(st.none(), st.integers(0, 2**64 - 1)), pa.uint64()),
            "float": (st.one_of(st.none(), st.floats(width=32)), pa.float32()),
            "bool": (st.one_of(st.none(), st.booleans()), pa.bool_()),
            "bin": (st.one_of(st.none(), st.binary(max_size=6)), pa.binary()),
            "list_str": (st.one_of(st.none(), st.lists(strs, max_size=4)), pa.list_(pa.string())),
            "list_int": (st.one_of(st.none(), st.lists(st.integers(-5, 5), max_size=4)), pa.large_list(pa.int16())),
            "struct": (st.one_of(st.none(), st.fixed_dictionaries({"a": strs, "b": st.one_of(st.none(), st.integers(0, 9))})),
                       pa.struct([("a", pa.string()), ("b", pa.int8())])),
            "nested": (st.one_of(st.none(), st.lists(st.lists(strs, max_size=3), max_size=3)), pa.list_(pa.list_(pa.string()))),
        }[kind]
        columns[f"c{i}"] = pa.array(draw(st.lists(values, min_size=n, max_size=n)), typ)
    return pa.table(columns)


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(_tables(), st.randoms(use_true_random=False))
def test_random_tables_equal_the_reference_in_any_order(table, rng):
    fp = split_fingerprint(table)
    assert fp == _reference(table)
    order = list(range(table.num_rows))
    rng.shuffle(order)
    assert split_fingerprint(table.take(pa.array(order, pa.int64()))) == fp
    if table.num_rows:  # one row more, a repeat of one of them, is another split
        assert split_fingerprint(pa.concat_tables([table, table.slice(0, 1)])) != fp


@pytest.mark.slow
def test_floats_are_their_bits():
    """0.0 and -0.0 are different values to a reader of the file, and NaN is itself."""
    values = [0.0, -0.0, math.nan, math.inf, 1e-310, 0.1]
    fps = {split_fingerprint(pa.table({"x": pa.array([v])})) for v in values}
    assert len(fps) == len(values)
    table = pa.table({"x": pa.array(values)})
    assert split_fingerprint(table) == _reference(table)


@pytest.mark.slow
def test_hub_and_folder_give_the_same_fingerprints(shared_datasets, tmp_path, monkeypatch):
    """The same split read from the stand-in Hub and from a folder: one fingerprint, in audit --json,
    the measurements columns and the fingerprints table."""
    import huggingface_hub.constants
    from typer.testing import CliRunner

    from hubsurvey.cli import app
    from hubsurvey_standin import StandinHub

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("HUBSURVEY_CACHE_DIR", str(tmp_path / "cache"))
    runner = CliRunner()
    with StandinHub(shared_datasets) as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        result = runner.invoke(app, ["audit", "CogComp/trec", "--json", "--no-near", "--db", str(tmp_path / "hub.duckdb")])
    assert result.exit_code == 0, result.output
    from_hub = {json.dumps(o["fingerprints"]) for o in json.loads(result.stdout)}
    folder = audit(str(shared_datasets / "CogComp__trec"), near=False, db=tmp_path / "folder.duckdb")
    expected = {s: _reference(pq.read_table(shared_datasets / f"CogComp__trec/default/{s}/0000.parquet"))
                for s in ("train", "test")}
    for row in folder.rows:
        assert {s: row[f"fingerprint_{s}"] for s in ("train", "validation", "test")} == {**expected, "validation": None}
    assert from_hub == {json.dumps({"train": expected["train"], "validation": None, "test": expected["test"]})}
    for db in ("hub.duckdb", "folder.duckdb"):
        with Store(tmp_path / db, read_only=True) as store:
            stored = dict(store.query("SELECT split, content_fingerprint FROM fingerprints")[1])
        assert stored == expected


@pytest.mark.slow
def test_the_compiled_md5_equals_hashlib_at_every_padding_boundary():
    """Rows of every length around the 64-byte block and its 56-byte padding limit, and long ones
    around the pass's scratch buffer (a row is digested 4,096 bytes at a time)."""
    import hashlib
    import random

    import numpy as np

    from hubsurvey.core import fingerprint

    rng = random.Random(7)
    values = [bytes(rng.randrange(256) for _ in range(n)) for n in [*range(200), 1000, *range(4030, 4100), 8191, 8192, 8193, 65_537]]
    rows = pa.array(values, pa.large_binary())
    out = np.empty((len(values), 4), dtype=np.uint32)
    fingerprint._md5_rows(np.frombuffer(rows.buffers()[2], dtype=np.uint8),
                          np.frombuffer(rows.buffers()[1], dtype=np.int64), out)
    assert [out[i].tobytes() for i in range(len(values))] == [hashlib.md5(v).digest() for v in values]


@pytest.mark.slow
def test_rows_digested_two_at_a_time_equal_hashlib_in_any_order():
    """The pass digests rows in pairs: each waits for the next of as many blocks (a long one for any
    that fits its buffer), and a row too long for the buffer goes alone in between. Rows of every
    block count, in a shuffled order, several tasks of rows, and a task ending with rows still
    waiting: each digest is hashlib's."""
    import hashlib

    import numpy as np

    from hubsurvey.core import fingerprint

    rng = random.Random(13)
    lengths = [rng.choice([rng.randrange(0, 600), rng.randrange(600, 4200), rng.randrange(4000, 9000)])
               for _ in range(3 * fingerprint._ROWS_PER_TASK + 37)]
    values = [rng.randbytes(n) for n in lengths]
    rows = pa.array(values, pa.large_binary())
    out = np.empty((len(values), 4), dtype=np.uint32)
    fingerprint._md5_rows(np.frombuffer(rows.buffers()[2], dtype=np.uint8),
                          np.frombuffer(rows.buffers()[1], dtype=np.int64), out)
    assert [out[i].tobytes() for i in range(len(values))] == [hashlib.md5(v).digest() for v in values]


@pytest.mark.slow
@pytest.mark.parametrize("layout", ["string", "large_string", "string_view", "sliced"])
def test_the_columns_pass_equals_hashlib_of_each_rows_joined_bytes(layout):
    """The compiled pass makes a string column's ``s<length>:`` prefix (and ``n`` for a null) itself
    and digests a row's columns one after the other: every row's digest, summed, equals hashlib's
    MD5 of its ``hs1`` bytes joined by hand, for strings of every length around the 64-byte block
    and the 56-byte padding limit (one byte or several), beside an integer and a list column."""
    import hashlib

    from hubsurvey.core import fingerprint

    rng = random.Random(11)
    lengths = [*range(130), 1000, 4090, 4096, 8200]
    texts = [None if i % 9 == 4 else "".join(rng.choice("ab é漢\n") for _ in range(n)) for i, n in enumerate(lengths)]
    numbers = [None if i % 7 == 3 else rng.randrange(-10**12, 10**12) for i in range(len(texts))]
    numbers[-12:] = [-(2**63), 2**63 - 1, 0, -1, 9, 10, -10, 99, -100, None, 10**18, -(10**18) + 1]  # beside long texts too
    tokens = [None if i % 5 == 1 else ["x" * (i % 4), "é"] for i in range(len(texts))]
    kind = {"string": pa.string(), "large_string": pa.large_string(), "string_view": pa.string_view(),
            "sliced": pa.string()}[layout]
    table = pa.table({"n": pa.array(numbers, pa.int64()), "t": pa.array(texts, kind), "l": pa.array(tokens),
                      "u": pa.array(texts[::-1], kind)})
    if layout == "sliced":
        table = table.slice(5, len(texts) - 9)
    columns = [c.combine_chunks() for c in table.columns]

    def piece(value) -> bytes:  # the definition, by hand
        if value is None:
            return b"n"
        if isinstance(value, str):
            raw = value.encode()
            return b"s%d:%s" % (len(raw), raw)
        if isinstance(value, int):
            return b"i%d;" % value
        return b"l%d:%s" % (len(value), b"".join(piece(v) for v in value))

    rows = table.to_pylist()
    digests = [hashlib.md5(b"".join(piece(row[name]) for name in table.schema.names)).digest() for row in rows]
    expected = sum(int.from_bytes(d, "little") for d in digests) % 2**128
    assert fingerprint._digest_sum_of_columns(columns) == expected


def _read(path: Path, batch_rows: int = 2_000) -> pa.Table:
    from hubsurvey.core.fingerprint import parquet_batches

    batches = list(parquet_batches(str(path), batch_rows))
    return pa.Table.from_batches(batches) if batches else pq.read_table(path).slice(0, 0)


@pytest.mark.slow
def test_a_file_of_flat_columns_read_by_duckdb_gives_pyarrows_values_and_fingerprint(tmp_path, monkeypatch):
    """A fingerprint (and the near stage, which fingerprints what it reads) reads a file of flat
    columns with DuckDB (faster, less memory): the same values in the same order as pyarrow's."""
    nan_with_payload = struct.unpack("<d", struct.pack("<Q", 0x7FF8_0000_0000_0123))[0]
    n = 15_000  # seven batches of the read and a part
    rng = random.Random(4)
    table = pa.table({
        "text": pa.array([None if i % 97 == 0 else ("" if i % 89 == 0 else f"t{rng.random()} ü日本\t") for i in range(n)]),
        "i8": pa.array([rng.randrange(-128, 128) for _ in range(n)], pa.int8()),
        "u64": pa.array([rng.randrange(0, 2**64) for _ in range(n)], pa.uint64()),
        "i64": pa.array([None if i % 5 == 0 else rng.randrange(-2**63, 2**63) for i in range(n)], pa.int64()),
        "f32": pa.array([rng.random() for _ in range(n)], pa.float32()),
        "f64": pa.array([[0.0, -0.0, math.nan, nan_with_payload, math.inf, 1e-310, None][i % 7] for i in range(n)]),
        "flag": pa.array([None if i % 3 == 0 else bool(i % 2) for i in range(n)]),
    })
    path = tmp_path / "flat.parquet"
    pq.write_table(table, path, row_group_size=6_000)

    def not_pyarrow(*args, **kwargs):
        raise AssertionError("a file of flat columns is read by DuckDB")

    with monkeypatch.context() as m:
        m.setattr(pq.ParquetFile, "iter_batches", not_pyarrow)
        read = _read(path)
    assert read.num_rows == n
    for name in table.column_names:  # the same values, bit for bit, in the same order
        got, want = read.column(name).combine_chunks(), table.column(name).combine_chunks()
        if pa.types.is_floating(want.type):  # NaN is not equal to itself: compare the bits
            assert got.is_valid().equals(want.is_valid())
            got, want = (pa.array(np.asarray(a.drop_null()).view(f"u{a.type.byte_width}")) for a in (got, want))
        assert got.equals(want), name
    assert split_fingerprint(read) == files_fingerprint([str(path)]) == split_fingerprint(table)

    # large strings (DuckDB would give them 32-bit offsets) and lists: pyarrow reads them
    for other in (pa.array(["x"] * n, pa.large_string()), pa.array([["a", None]] * n)):
        pq.write_table(table.append_column("other", other), path, row_group_size=6_000)
        spied: list[object] = []
        with monkeypatch.context() as m:
            m.setattr(pq.ParquetFile, "iter_batches", lambda self, *a, _read=pq.ParquetFile.iter_batches, _seen=spied, **k:
                      _seen.append(self) or _read(self, *a, **k))
            read = _read(path)
        assert spied and read.column("other").type == other.type
        assert split_fingerprint(read) == files_fingerprint([str(path)])


@pytest.mark.slow
@pytest.mark.parametrize("path", [p for p in _split_files() if p.parts[-4] in SMALL], ids=lambda p: "/".join(p.parts[-4:-1]))
def test_the_read_of_shared_splits_gives_pyarrows_fingerprint(path):
    """Flat splits (DuckDB reads them) and nested ones (pyarrow does)."""
    assert split_fingerprint(_read(path)) == split_fingerprint(pq.read_table(path))


@pytest.mark.slow
def test_a_string_duckdb_refuses_is_read_by_pyarrow_from_that_row_on(tmp_path):
    """DuckDB checks that strings are UTF-8, pyarrow does not: a split with such a value in a column
    the survey does not measure is fingerprinted as before, whichever batch holds it."""
    from hubsurvey.core import fingerprint

    n = 100_000
    for bad in (10, 90_000):  # in DuckDB's first read, and in a row group after batches it gave (86,000 here)
        values = [f"v{i}".encode() for i in range(n)]
        values[bad] = b"not \xff\xfe UTF-8"
        offsets = np.concatenate([[0], np.cumsum([len(v) for v in values])]).astype(np.int32)
        strings = pa.Array.from_buffers(pa.string(), n, [None, pa.py_buffer(offsets.tobytes()), pa.py_buffer(b"".join(values))])
        path = tmp_path / f"not-utf8-{bad}.parquet"
        pq.write_table(pa.table({"x": strings, "y": pa.array(range(n))}), path, row_group_size=10_000)
        given: list[int] = []
        after = fingerprint._batches_after
        with pytest.MonkeyPatch.context() as m:
            m.setattr(fingerprint, "_batches_after",
                      lambda batches, rows, _given=given, _after=after: _given.append(rows) or _after(batches, rows))
            read = _read(path)
        assert len(given) == 1 and given[0] <= bad and (given[0] == 0 or bad > 10)  # where DuckDB stopped
        assert read.num_rows == n and read.column("y").to_pylist() == list(range(n))
        assert split_fingerprint(read) == split_fingerprint(pq.read_table(path)) == files_fingerprint([str(path)])
