"""The ``normalized`` profile as the engine computes it equals its one-line Python definition.

The engine takes three paths (``Engine._hash_normalized``): ASCII strings in DuckDB SQL, the other
strings in one batched Python call, and lists of strings through a DuckDB function. Each row's
``h_ntext`` must be the hash of ``normalize_text`` applied to its values, whatever path it took.
"""

from __future__ import annotations

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hubsurvey.survey.metrics import Engine
from hubsurvey.survey.normalize import normalize_text
from hubsurvey.survey.sources import ConfigData, SplitData

ASCII_WHITESPACE = " \t\n\x0b\x0c\r\x1c\x1d\x1e\x1f"
# Case, width, ligature, final sigma, sharp s, dotted I, combining accent, non-ASCII whitespace
# (no-break, ideographic, NEL, line separator), CJK and an emoji.
OTHERS = "éÉßẞςΣ\uff21\ufb01İ\u0301\u00a0\u3000\x85\u2028中😀"
ascii_texts = st.text(alphabet="aAzZ." + ASCII_WHITESPACE, max_size=8)
any_texts = st.text(alphabet="aAzZ." + ASCII_WHITESPACE + OTHERS, max_size=8)
strings = st.one_of(st.none(), ascii_texts, any_texts)


def _definition(value):
    """The profile of one value: a string normalized, a list element by element, others as they are."""
    if isinstance(value, str):
        return normalize_text(value)
    if isinstance(value, list):
        return [_definition(v) for v in value]
    return value


def _normalized_hashes(columns: dict[str, pa.Array]) -> tuple[list[int], list[int]]:
    """(the engine's h_ntext per row, the hash of the Python definition per row)."""
    table = pa.table(columns)
    data = ConfigData("org/x", "default", "0" * 40, {"test": SplitData("test", "test", (), table)}, {}, ())
    with Engine(data) as engine:
        engine._load(list(columns), [], normalized=True)
        got = [r[0] for r in engine.con.execute("SELECT h_ntext FROM rows_all ORDER BY pos").fetchall()]
        expected_values = {name: [_definition(v) for v in array.to_pylist()] for name, array in columns.items()}
        expected_table = pa.table({n: pa.array(v, type=columns[n].type) for n, v in expected_values.items()})
        engine.con.register("expected", expected_table)
        hashed = ", ".join(f'"{n}"' for n in columns)
        expected = [r[0] for r in engine.con.execute(f"SELECT hash({hashed}) FROM expected").fetchall()]
    return got, expected


@pytest.mark.slow
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(strings, min_size=1, max_size=20))
def test_one_string_column(values):
    got, expected = _normalized_hashes({"text": pa.array(values, pa.string())})
    assert got == expected


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(strings, st.one_of(st.none(), st.lists(strings, max_size=3)), st.integers(0, 3)),
                min_size=1, max_size=15))
@pytest.mark.slow
def test_string_list_and_number_columns(rows):
    """Three text columns: a string, a list of strings (the DuckDB function) and a number (as it is)."""
    got, expected = _normalized_hashes({
        "a": pa.array([r[0] for r in rows], pa.string()),
        "tokens": pa.array([r[1] for r in rows], pa.list_(pa.string())),
        "n": pa.array([r[2] for r in rows], pa.int64()),
    })
    assert got == expected


def test_every_ascii_whitespace_and_the_batched_path():
    values = ["  A\tb\n\x0bC\x0c\rd\x1ce\x1df\x1eg\x1f ", "a b c d e f g", "Straße", "STRASSE", "\uff21\uff22\uff23", "\ufb01ne",  # fullwidth ABC, the fi ligature
              "ΣΑΣ", "e\u0301", "é", "x\u00a0\u3000y", None, ""]
    got, expected = _normalized_hashes({"text": pa.array(values, pa.string())})
    assert got == expected
    assert got[0] == got[1] and got[2] == got[3] and got[7] == got[8]  # the variants do meet
