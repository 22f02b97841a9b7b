"""Blank rows, groups shared across splits and time order (rows-2026, groups-2026, time-2026) against
plain-Python references (standin/reference.py: ``blank_reference``, ``group_reference``,
``time_reference``; no code shared with the engine), on the shared miam and silicone configs and on
random data (Hypothesis); the statement of what was checked; the roles file's groups and dates; the
stored tables and ``audit --json``.
"""

from __future__ import annotations

import datetime as dt
import json
import sys

import duckdb
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_exact_reference import _load_rows

from hubsurvey.core import figure_sql, figures
from hubsurvey.core.roles import RoleOverrides, resolve_roles
from hubsurvey.core.store import Store
from hubsurvey.survey.measure import measure_config
from hubsurvey.survey.metrics import Engine
from hubsurvey.survey.sources import ConfigData, FolderSource, SplitData, check_config
from hubsurvey_standin.reference import (
    blank_reference,
    group_reference,
    is_blank,
    is_whitespace,
    time_reference,
)

GROUP_NAMES = [c.name for c in figures.group_columns()]
TIME_NAMES = [c.name for c in figures.time_columns()]
BLANK_NAMES = [c.name for c in figures.figure_columns(figures.ROWS_METHOD)]


def _same(engine: dict, reference: dict, names: list[str], where: object = "") -> None:
    for name in names:
        e, r = engine[name], reference[name]
        if isinstance(r, float) and e is not None:
            assert e == pytest.approx(r, rel=1e-12, abs=1e-9), (where, name, e, r)
        else:
            assert e == r, (where, name, e, r)


def _data(splits: dict[str, pa.Table], dataset_id: str = "random/data") -> ConfigData:
    named = {s: SplitData(s, s, (), t) for s, t in splits.items()}
    return check_config(ConfigData(dataset_id, "default", "r0", named, {}, ()))


def _groups_of(data: ConfigData, columns: list[str]) -> dict[str, dict]:
    with Engine(data) as engine:
        return {g["group_column"]: {**g["figures"], "repeats": g["repeats"], "numbering_reused": g["numbering_reused"]}
                for g in engine.measure_groups(columns)}


# --- the shared datasets: miam and silicone ---------------------------------------------------------

CONFIGS = [("PierreColombo__miam", c) for c in ("dihana", "ilisten", "loria", "maptask", "vm2")] + \
          [("eusip__silicone", c) for c in ("iemocap", "maptask", "meld_e", "meld_s", "oasis", "sem")]


@pytest.mark.slow
@pytest.mark.parametrize(("folder", "config"), CONFIGS, ids=[f"{f.split('__')[1]}/{c}" for f, c in CONFIGS])
def test_group_figures_equal_the_reference_on_shared_configs(shared_datasets, folder, config):
    """Every column left out of the text key as id-like, measured by the engine and by the reference."""
    data = check_config(FolderSource(shared_datasets / folder).load(config))
    roles = resolve_roles(data.features, data.dataset_id, data.config)
    candidates = list(roles.group_columns())
    assert candidates, "every miam and silicone config has an id-like column (Idx at least)"
    rows = _load_rows(data)
    found = _groups_of(data, candidates)
    for column in candidates:
        reference = group_reference(rows, column)
        _same(found[column], reference, [*GROUP_NAMES, "repeats", "numbering_reused"], (config, column))
        if column == "Idx":  # a row id, unique per row in every split: never a group
            assert not reference["repeats"]


@pytest.mark.slow
def test_miam_maptask_file_ids_shared_with_train(shared_datasets):
    """The recordings of miam/maptask: 4,795 of its 5,335 test utterances come from a File_ID that is
    also in train; Dialogue_ID restarts at 0 in every split (kept out of the verdict); Idx is a row id."""
    data = FolderSource(shared_datasets / "PierreColombo__miam").load("maptask")
    result = measure_config(data, n_configs=5, source="folder", examples=0, methods=list(figures.methods_measured(near=False)))
    groups = {g["group_column"]: g for g in result.rows[0]["groups"]}
    assert set(groups) == {"File_ID", "Dialogue_ID"}  # Idx left out: unique per row
    files = groups["File_ID"]
    assert (files["test_rows_group_in_train"], result.rows[0]["rows_test"]) == (4795, 5335)
    assert files == {**files, **{k: v for k, v in group_reference(_load_rows(check_config(data)), "File_ID").items()
                                 if k in GROUP_NAMES}}
    assert files["test_groups_in_train"] == 22 and files["groups_test"] == 25
    assert files["in_verdict"] and not files["numbering_reused"]
    assert groups["Dialogue_ID"]["numbering_reused"] and not groups["Dialogue_ID"]["in_verdict"]
    checks = {c["check"]: c for c in json.loads(result.rows[0]["checks"])}
    assert checks["groups"] == {"check": "groups", "ran": True, "columns": ["Dialogue_ID", "File_ID"], "row_ids": ["Idx"]}
    # the text figures do not see it: no test utterance of maptask's is a train row
    assert result.rows[0]["raw_test_rows_in_train_pct"] < 95


@pytest.mark.slow
@pytest.mark.parametrize(("folder", "config"), CONFIGS[:2] + CONFIGS[5:7],
                         ids=["miam/dihana", "miam/ilisten", "silicone/iemocap", "silicone/maptask"])
def test_blank_rows_equal_the_reference_on_shared_configs(shared_datasets, folder, config):
    data = FolderSource(shared_datasets / folder).load(config)
    result = measure_config(data, n_configs=2, source="folder", examples=0, methods=[figures.ROWS_METHOD])
    rows = _load_rows(check_config(data))
    for row in result.rows:
        _same(row, blank_reference(rows, row["text_columns"], row["label_column"]), BLANK_NAMES, config)


# --- random data -------------------------------------------------------------------------------------

#: whitespace of every kind, letters, and the empty string: blank and not blank texts
_WHITE = "".join(chr(c) for c in (9, 10, 11, 12, 13, 28, 31, 32, 0x85, 0xA0, 0x1680, 0x2007, 0x2028, 0x2029, 0x3000))
_TEXT = st.one_of(st.none(), st.text(alphabet=_WHITE, max_size=3), st.text(alphabet=_WHITE + "ab\u200b", max_size=3))
_GROUP = st.one_of(st.none(), st.sampled_from(["", "0", "1", "2", "3", "a", "b", "07", "1.5"]))


def _blank_rows(tables: dict[str, pa.Table], text: list[str], labels: list[str]) -> list[dict]:
    """The rows method's figures alone (no near stage: Hypothesis runs it many times)."""
    overrides = RoleOverrides({"random/data": {"default": {"text": text, "labels": labels}}})
    return measure_config(_data(tables), n_configs=1, source="memory", overrides=overrides, examples=0,
                          methods=[figures.ROWS_METHOD]).rows


def _split_rows(values: st.SearchStrategy, min_size: int = 0) -> st.SearchStrategy:
    return st.lists(values, min_size=min_size, max_size=12)


@pytest.mark.slow
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.fixed_dictionaries({"test": _split_rows(st.tuples(_TEXT, _TEXT, st.one_of(st.none(), st.integers(0, 2))), 1)},
                             optional={s: _split_rows(st.tuples(_TEXT, _TEXT, st.one_of(st.none(), st.integers(0, 2))))
                                       for s in ("train", "validation")}))
def test_blank_rows_equal_the_reference_on_random_data(splits):
    rows = {s: [{"a": a, "b": b, "label": label} for a, b, label in values] for s, values in splits.items()}
    schema = pa.schema([("a", pa.string()), ("b", pa.string()), ("label", pa.int64())])
    found = _blank_rows({s: pa.Table.from_pylist(r, schema=schema) for s, r in rows.items()}, ["a", "b"], ["label"])
    _same(found[0], blank_reference(rows, ["a", "b"], "label"), BLANK_NAMES)


@pytest.mark.slow
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.fixed_dictionaries({"test": _split_rows(st.lists(_TEXT, max_size=3) | st.none(), 1)},
                             optional={"train": _split_rows(st.lists(_TEXT, max_size=3) | st.none())}))
def test_blank_token_lists_equal_the_reference(splits):
    rows = {s: [{"tokens": v} for v in values] for s, values in splits.items()}
    schema = pa.schema([("tokens", pa.list_(pa.string()))])
    found = _blank_rows({s: pa.Table.from_pylist(r, schema=schema) for s, r in rows.items()}, ["tokens"], [])
    _same(found[0], blank_reference(rows, ["tokens"], None), BLANK_NAMES)


@pytest.mark.slow
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.fixed_dictionaries({"test": _split_rows(_GROUP, 1)},
                             optional={s: _split_rows(_GROUP) for s in ("train", "validation")}),
       st.booleans())
def test_group_figures_equal_the_reference_on_random_data(splits, as_integers):
    if as_integers:  # the same values as an integer column (the strings that are not integers: NULL)
        splits = {s: [int(v) if v is not None and v.isdigit() else None for v in values] for s, values in splits.items()}
        kind = pa.int64()
    else:
        kind = pa.string()
    rows = {s: [{"text": f"row {i}", "g": v} for i, v in enumerate(values)] for s, values in splits.items()}
    data = _data({s: pa.Table.from_pylist(r, schema=pa.schema([("text", pa.string()), ("g", kind)])) for s, r in rows.items()})
    found = _groups_of(data, ["g"])["g"]
    _same(found, group_reference(rows, "g"), [*GROUP_NAMES, "repeats", "numbering_reused"])


_DATE = st.one_of(st.none(), st.datetimes(min_value=dt.datetime(2000, 1, 1), max_value=dt.datetime(2030, 1, 1)))


@pytest.mark.slow
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.fixed_dictionaries({"test": _split_rows(_DATE, 1)},
                             optional={s: _split_rows(_DATE) for s in ("train", "validation")}),
       st.booleans())
def test_time_figures_equal_the_reference_on_random_data(splits, as_text):
    """Timestamps, or the same as ISO text (read with TRY_CAST), give the reference's figures."""
    rows = {s: [{"text": f"row {i}", "when": v} for i, v in enumerate(values)] for s, values in splits.items()}
    kind = pa.string() if as_text else pa.timestamp("us")
    tables = {s: pa.Table.from_pylist([{"text": r["text"], "when": (r["when"].isoformat(sep=" ") if as_text and r["when"] else r["when"])}
                                       for r in rs], schema=pa.schema([("text", pa.string()), ("when", kind)]))
              for s, rs in rows.items()}
    with Engine(_data(tables)) as engine:
        found = engine.measure_dates(["when"])[0]["figures"]
    _same(found, time_reference(rows, "when"), TIME_NAMES)


@pytest.mark.slow
def test_the_whitespace_class_is_pythons_on_every_code_point():
    """blank_sql's regular expression matches exactly the characters str.split() splits on."""
    points = [c for c in range(sys.maxunicode + 1) if not 0xD800 <= c <= 0xDFFF]
    table = pa.table({"c": pa.array([chr(c) for c in points])})
    con = duckdb.connect()
    con.register("chars", table)
    matched = con.execute(f"SELECT list(c) FROM chars WHERE {figure_sql.blank_sql('c', 'VARCHAR')}").fetchone()[0]
    assert set(matched) == {chr(c) for c in points if is_whitespace(chr(c))} == {chr(c) for c in points if chr(c).isspace()}
    assert is_blank("") and is_blank(" \u3000") and not is_blank("\u200b")


def test_miam_ilisten_test_dialogues_renumbered_from_zero_are_a_reused_numbering(shared_datasets):
    """ilisten's train and validation dialogues share one numbering (disjoint), its test dialogues
    are numbered 0 to 19 again: the 846 test rows whose Dialogue_ID is in train are no leak."""
    data = FolderSource(shared_datasets / "PierreColombo__miam").load("ilisten")
    found = _groups_of(check_config(data), ["Dialogue_ID"])["Dialogue_ID"]
    assert found["numbering_reused"] and found["test_rows_group_in_train"] == 846
    assert found["validation_rows_group_in_train"] == 0


def test_numbering_and_row_ids_by_hand():
    """Counted by hand: a dialogue numbering restarting per split; a row id; a real shared group."""
    splits = {"train": [{"t": "x", "dialogue": d, "file": f, "idx": i} for i, (d, f) in enumerate(
                  [("0", "f1"), ("0", "f1"), ("1", "f2"), ("2", "f3")])],
              "test": [{"t": "y", "dialogue": d, "file": f, "idx": i} for i, (d, f) in enumerate(
                  [("0", "f3"), ("1", "f9"), ("1", "f9")])]}
    data = _data({s: pa.Table.from_pylist(r) for s, r in splits.items()})
    found = _groups_of(data, ["dialogue", "file", "idx"])
    assert found["dialogue"]["numbering_reused"] and found["dialogue"]["test_rows_group_in_train"] == 3
    assert not found["file"]["numbering_reused"]
    assert (found["file"]["test_rows_group_in_train"], found["file"]["test_groups_in_train"], found["file"]["groups_test"]) == (1, 1, 2)
    assert found["file"]["largest_group_pct_test"] == pytest.approx(200 / 3)
    assert found["file"]["rows_per_group_train"] == pytest.approx(4 / 3)
    assert not found["idx"]["repeats"] and found["file"]["repeats"]


# --- roles, storage, audit --json -------------------------------------------------------------------


def _forum(tmp_path):
    """A folder dataset whose posts are grouped by thread ("source": not an id-like name) and dated."""
    folder = tmp_path / "org__forum"
    day = dt.datetime(2024, 1, 1)
    for split, threads, first in (("train", ["a", "a", "b", "c"], 0), ("test", ["c", "c", "d"], 2)):
        (folder / split).mkdir(parents=True)
        import pyarrow.parquet as pq

        pq.write_table(pa.table({"text": [f"{split} post {i}" for i in range(len(threads))], "source": threads,
                                 "posted": [day + dt.timedelta(days=first + i) for i in range(len(threads))],
                                 "post_id": [f"{split}-{i}" for i in range(len(threads))]}),
                       folder / split / "0000.parquet")
    return folder


@pytest.mark.slow
def test_roles_file_declares_groups_and_dates_and_they_are_stored(tmp_path):
    folder = _forum(tmp_path)
    roles_file = tmp_path / "roles.toml"
    roles_file.write_text('["org/forum"."*"]\ngroups = ["source"]\n')
    db = tmp_path / "r.duckdb"
    from hubsurvey.survey.audit import audit

    outcome = audit(str(folder), db=db, roles_file=roles_file, near=False)
    assert not outcome.errors
    row = outcome.rows[0]
    # text and labels still inferred, without the declared group column
    assert row["text_columns"] == ["text"] and row["roles_source"] == "inferred"
    assert [(g["group_column"], g["source"], g["test_rows_group_in_train"]) for g in row["groups"]] == [("source", "declared", 2)]
    # "posted" is a timestamp left out of the text key: a date column, inferred
    (dates,) = row["dates"]
    assert (dates["date_column"], dates["source"], dates["train_rows_after_test_start"]) == ("posted", "inferred", 1)
    with Store(db, read_only=True) as store:
        stored = store.records("SELECT * FROM group_measurements")
        assert [(r["group_column"], r["source"], r["method"], r["test_rows_group_in_train"]) for r in stored] == [
            ("source", "declared", figures.GROUPS_METHOD, 2)]
        (timed,) = store.records("SELECT * FROM time_measurements")
        assert timed["train_rows_after_test_start"] == 1 and timed["method"] == figures.TIME_METHOD
        checks = json.loads(store.records("SELECT checks FROM measurements")[0]["checks"])
        assert {c["check"]: c["ran"] for c in checks}["time_order"] is True
    # measured again: the config's rows are replaced, not added
    audit(str(folder), db=db, roles_file=roles_file, near=False)
    with Store(db, read_only=True) as store:
        assert store.query("SELECT count(*) FROM group_measurements")[1] == [(1,)]


@pytest.mark.slow
def test_roles_file_naming_an_unknown_group_column_is_one_clear_error(tmp_path):
    folder = _forum(tmp_path)
    roles_file = tmp_path / "roles.toml"
    roles_file.write_text('["org/forum"."*"]\ngroups = ["thread"]\n')
    from hubsurvey.survey.audit import audit

    outcome = audit(str(folder), db=None, roles_file=roles_file, near=False)
    assert outcome.errors == ["org/forum [default]: roles name unknown columns ['thread']"]


@pytest.mark.slow
def test_statement_of_checks_names_what_ran_and_what_did_not(tmp_path):
    folder = _forum(tmp_path)
    data = FolderSource(folder).load("default")
    result = measure_config(data, n_configs=1, source="folder", examples=0,
                            methods=[figures.LLE_METHOD, figures.EXACT_METHOD, figures.ROWS_METHOD])
    checks = {c["check"]: c for c in json.loads(result.rows[0]["checks"])}
    assert list(checks) == ["lle", "exact_raw", "exact_normalized", "near", "per_column", "blank_rows", "groups",
                                   "time_order", "contamination", "semantic"]
    assert checks["near"] == {"check": "near", "ran": False, "why_not": "not asked (--no-near)"}
    assert checks["per_column"] == {"check": "per_column", "ran": True}  # text and source: two text columns
    assert checks["groups"]["ran"] is False and checks["time_order"]["ran"] is False  # not asked
    assert checks["contamination"] == {"check": "contamination", "ran": False, "why_not": "no benchmarks given"}
    # post_id is unique per row: a row id, left out; "source" is not an id-like name: not inferred
    result = measure_config(data, n_configs=1, source="folder", examples=0, methods=list(figures.methods_measured(near=False)))
    groups = next(c for c in json.loads(result.rows[0]["checks"]) if c["check"] == "groups")
    assert groups == {"check": "groups", "ran": False, "columns": [], "row_ids": ["post_id"],
                      "why_not": "no group column (id-like columns whose values repeat within a split, or declared)"}
    assert result.rows[0]["groups"] == []


@pytest.mark.slow
def test_audit_json_gains_the_new_keys_and_keeps_the_others(tmp_path, shared_datasets):
    from typer.testing import CliRunner

    from hubsurvey.cli import app

    out = CliRunner().invoke(app, ["audit", str(shared_datasets / "PierreColombo__miam"), "--config", "maptask",
                                   "--json", "--no-near", "--db", str(tmp_path / "r.duckdb")])
    assert out.exit_code == 0, out.output
    (row,) = json.loads(out.stdout)
    assert set(row) >= {*figures.lle_published_columns(), "exact", "near", "fingerprints", "rows", "groups", "dates", "checks"}
    assert {g["group_column"]: g["test_rows_group_in_train"] for g in row["groups"]} == {"Dialogue_ID": 5335, "File_ID": 4795}
    assert row["rows"]["test_rows_blank_text"] == 0 and row["dates"] == []


# --- the outputs: site page, report, results dataset ------------------------------------------------


@pytest.fixture(scope="module")
def maptask_db(shared_datasets, tmp_path_factory):
    """miam (maptask alone, no near stage) and the forum (a declared group, a date column) in one DB."""
    from hubsurvey.survey.audit import audit

    tmp = tmp_path_factory.mktemp("beside")
    db = tmp / "r.duckdb"
    audit(str(shared_datasets / "PierreColombo__miam"), config="maptask", near=False, examples=0, db=db)
    roles = tmp / "roles.toml"
    roles.write_text('["org/forum"."*"]\ngroups = ["source"]\n')
    audit(str(_forum(tmp)), near=False, examples=0, db=db, roles_file=roles)
    return db


@pytest.mark.slow
def test_the_site_page_shows_checks_groups_and_dates_as_the_db_holds_them(maptask_db, tmp_path):
    import re

    from hubsurvey.analysis.site import build_site, dataset_page_path

    with Store(maptask_db, read_only=True) as store:
        build_site(store, tmp_path / "site")
        groups = store.records("SELECT * FROM group_measurements WHERE dataset_id = 'PierreColombo/miam' ORDER BY group_column")
        checks = json.loads(store.records("SELECT checks FROM measurements WHERE dataset_id = 'PierreColombo/miam'")[0]["checks"])
        dated = store.records("SELECT * FROM time_measurements")
    html = (tmp_path / "site" / dataset_page_path("PierreColombo/miam")).read_text()
    section = html.split('<section class="beside"')[1].split("</section>")[0]
    ran, not_run = re.search(r'<p class="checks"><strong>Checked</strong>: (.*)\.<br>\n<strong>Not run</strong>: (.*)\.</p>',
                             section).groups()
    names = {line: [part.split(" (")[0] for part in text.split("; ")] for line, text in (("ran", ran), ("no", not_run))}
    assert names == {"ran": [c["check"] for c in checks if c["ran"]], "no": [c["check"] for c in checks if not c["ran"]]}
    for g in groups:
        row = section.split(f'data-group-column="{g["group_column"]}"')[1].split("</tr>")[0]
        assert f'data-in-verdict="{"yes" if g["in_verdict"] else "no"}"' in row
        cell = re.search(r'<td data-column="test_rows_group_in_train">([^<]*)</td>', row).group(1)
        assert cell == f"{g['test_rows_group_in_train']} ({figures.published(g['test_rows_group_in_train_pct'], figures.Format.PERCENT)})"
        assert ("numbering restarts per split" in row) == g["numbering_reused"]
    assert "4795 (89.878%)" in section
    forum = (tmp_path / "site" / dataset_page_path("org/forum")).read_text()
    (d,) = dated
    assert re.search(r'<td data-column="train_rows_after_test_start">([^<]*)</td>', forum).group(1) == \
        f"{d['train_rows_after_test_start']} ({figures.published(d['train_rows_after_test_start_pct'], figures.Format.PERCENT)})"


@pytest.mark.slow
def test_the_report_and_the_results_dataset_show_the_new_figures(maptask_db, tmp_path):
    import pyarrow.parquet as pq

    from hubsurvey.analysis.export import GROUP_PARQUET_PATH, TIME_PARQUET_PATH, export_results
    from hubsurvey.analysis.findings import findings
    from hubsurvey.analysis.report import render_report

    with Store(maptask_db, read_only=True) as store:
        found = findings(store)
        render_report(store, tmp_path / "report")
        export_results(store, tmp_path / "export")
    leaks = {(r["dataset_id"], r["group_column"]): r for r in found["group_leaks"]}
    assert leaks[("PierreColombo/miam", "File_ID")]["test_rows_group_in_train"] == 4795
    assert leaks[("org/forum", "source")]["test_rows_group_in_train"] == 2
    overview = found["group_overview"][0]
    assert (overview["configs"], overview["configs_with_groups"], overview["configs_group_in_train"],
            overview["columns_numbering_reused"]) == (2, 2, 2, 1)
    assert {r["check"]: r["configs_ran"] for r in found["checks"]}["groups"] == 2
    report = (tmp_path / "report" / "REPORT.md").read_text()
    assert "| PierreColombo/miam | maptask | File_ID | 4795 | 5335 | 89.88% | 22 | 25 |" in report
    assert "Dialogue_ID" not in report.split("groups shared across splits, blank rows")[1].split("## ")[0]  # out of the count
    groups = pq.read_table(tmp_path / "export" / GROUP_PARQUET_PATH).to_pylist()
    assert sorted((g["dataset_id"], g["group_column"], g["in_verdict"]) for g in groups) == [
        ("PierreColombo/miam", "Dialogue_ID", False), ("PierreColombo/miam", "File_ID", True), ("org/forum", "source", True)]
    assert pq.read_table(tmp_path / "export" / TIME_PARQUET_PATH).num_rows == 1
    results = pq.read_table(tmp_path / "export" / "data/train-00000-of-00001.parquet").to_pylist()
    assert all(json.loads(r["checks"]) for r in results) and all(r["test_rows_blank_text"] == 0 for r in results)


@pytest.mark.slow
def test_a_group_column_duckdb_cannot_read_is_named_and_the_rest_measured(monkeypatch):
    """One column failing in DuckDB leaves the config's other figures, and its other group columns."""
    splits = {"train": pa.table({"t": ["a", "b"], "file_id": ["f1", "f1"], "doc_id": ["d1", "d2"]}),
              "test": pa.table({"t": ["c", "d"], "file_id": ["f1", "f2"], "doc_id": ["d1", "d1"]})}
    original = Engine._measure_group

    def failing(self, column, rows):
        if column == "doc_id":
            raise duckdb.ConversionException("Conversion Error: planted")
        return original(self, column, rows)

    monkeypatch.setattr(Engine, "_measure_group", failing)
    result = measure_config(_data(splits), n_configs=1, source="memory", examples=0,
                            methods=[figures.LLE_METHOD, figures.GROUPS_METHOD])
    row = result.rows[0]
    assert [g["group_column"] for g in row["groups"]] == ["file_id"] and row["text_leaks_train_wrt_test"] == 0
    groups = next(c for c in json.loads(row["checks"]) if c["check"] == "groups")
    assert groups["not_measured"] == {"doc_id": "ConversionException: Conversion Error: planted"}


@pytest.mark.slow
def test_a_group_column_name_two_columns_share_is_named_and_the_config_measured():
    """Two columns named doc_id: ambiguous, so not measured, and said so; the figures stand."""
    def table(texts: list[str]) -> pa.Table:
        return pa.Table.from_arrays([pa.array(texts), pa.array(["d1"] * len(texts)), pa.array(["d2"] * len(texts))],
                                    names=["t", "doc_id", "doc_id"])

    result = measure_config(_data({"train": table(["a", "b"]), "test": table(["a", "c"])}), n_configs=1, source="memory",
                            examples=0, methods=[figures.LLE_METHOD, figures.GROUPS_METHOD])
    row = result.rows[0]
    assert row["text_leaks_train_wrt_test"] == 1 and row["groups"] == []
    groups = next(c for c in json.loads(row["checks"]) if c["check"] == "groups")
    assert "names 2 columns" in groups["not_measured"]["doc_id"]
