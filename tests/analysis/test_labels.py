"""ClassLabel names: read by the workers from the Parquet schema's ``huggingface`` metadata (never by
running dataset code), stored by the one writer (``label_names``), and shown as ``name (id)`` by
``show`` and the site; compared with the names plain pyarrow reads from the shared datasets."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import SHARED_DATASETS as SHARED
from conftest import shared_index
from typer.testing import CliRunner

from hubsurvey import __version__
from hubsurvey.core.roles import MAX_LABEL_NAME_CHARS, MAX_LABEL_NAMES, class_label_names, features_from_arrow

runner = CliRunner()


def plain_names(path: Path) -> dict[str, tuple[int, list[str]]]:
    """The reference: a Parquet file's ClassLabel names as plain pyarrow and json read them, per
    column: (how many lists the ClassLabel is in, its names)."""
    metadata = pq.read_schema(path).metadata or {}
    features = json.loads(metadata.get(b"huggingface", b"{}")).get("info", {}).get("features", {})
    out = {}
    for column, feature in features.items():
        depth = 0
        while isinstance(feature, list) or (isinstance(feature, dict) and feature.get("_type") in ("List", "Sequence", "LargeList")):
            feature = feature[0] if isinstance(feature, list) else feature["feature"]
            depth += 1
        if isinstance(feature, dict) and feature.get("_type") == "ClassLabel" and "names" in feature:
            out[column] = (depth, feature["names"])
    return out


def first_files() -> list[Path]:
    """The first Parquet file of every config of the shared datasets (empty when they are absent)."""
    if not shared_index():
        return []
    return [sorted(config.rglob("*.parquet"))[0] for dataset in sorted(SHARED.iterdir()) if dataset.is_dir()
            for config in sorted(dataset.iterdir()) if config.is_dir() and any(config.rglob("*.parquet"))]


@pytest.mark.parametrize("path", first_files(), ids=lambda p: f"{p.parents[2].name}/{p.parents[1].name}")
def test_the_names_of_every_shared_config_are_the_ones_pyarrow_reads(path):
    found = class_label_names(features_from_arrow(pq.read_schema(path)))
    expected = plain_names(path)
    assert {c: (n.feature, list(n.names)) for c, n in found.items()} == {
        c: ("List(" * depth + "ClassLabel" + ")" * depth, names) for c, (depth, names) in expected.items()}


def test_the_shared_datasets_hold_single_and_list_class_labels():
    """The comparison above covers both kinds: a label per row (emotion) and a tag per token (conll2003)."""
    files = first_files()
    if not files:
        pytest.skip("../shared/datasets is absent")
    kinds = {n.feature for p in files for n in class_label_names(features_from_arrow(pq.read_schema(p))).values()}
    assert {"ClassLabel", "List(ClassLabel)"} <= kinds


def test_names_are_bounded_untrusted_text():
    names = [f"n{i}" for i in range(MAX_LABEL_NAMES + 5)]
    features = {
        "many": {"_type": "ClassLabel", "names": names},
        "long": {"_type": "ClassLabel", "names": ["x" * (MAX_LABEL_NAME_CHARS + 50), 7, "\x1b[31mred"]},
        "legacy": [{"_type": "ClassLabel", "names": ["a", "b"]}],
        "nested": {"_type": "Sequence", "feature": {"_type": "List", "feature": {"_type": "ClassLabel", "names": ["o"]}}},
        "counted": {"_type": "ClassLabel", "num_classes": 3},  # no names: nothing to show
        "text": {"_type": "Value", "dtype": "string"},
        "odd": {"_type": "ClassLabel", "names": "not a list"},
    }
    found = class_label_names(features)
    assert set(found) == {"many", "long", "legacy", "nested"}
    assert found["many"].names == tuple(names[:MAX_LABEL_NAMES])
    long = found["long"].names
    assert len(long[0]) == MAX_LABEL_NAME_CHARS and long[0].endswith("…") and long[1] == "7"
    assert long[2] == "\x1b[31mred"  # stored as given: made visible where printed
    assert found["legacy"].feature == "List(ClassLabel)" and found["nested"].feature == "List(List(ClassLabel))"


# --- stored by the writer, shown by show and the site -----------------------------------------------------


@pytest.fixture(scope="module")
def labelled(tmp_path_factory):
    """emotion (a label per row) and conll2003 (a tag per token) audited into one DB, and its site."""
    from hubsurvey.analysis.site import build_site
    from hubsurvey.core.store import Store
    from hubsurvey.survey.audit import audit

    if not shared_index():
        pytest.skip("../shared/datasets is absent")
    tmp = tmp_path_factory.mktemp("labels")
    db = tmp / "r.duckdb"
    for name in ("dair-ai__emotion", "eriktks__conll2003"):
        outcome = audit(str(SHARED / name), near=False, db=db)
        assert not outcome.errors, outcome.errors
    with Store(db, read_only=True) as store:
        build_site(store, tmp / "site")
    return db, tmp / "site"


def _reference(dataset: str) -> dict[tuple[str, str], list[str]]:
    """(config, column) -> names, as plain pyarrow reads each config's first file."""
    return {(p.parents[1].name, column): names for p in first_files() if p.parents[2].name == dataset
            for column, (_, names) in plain_names(p).items()}


@pytest.mark.slow
def test_the_writer_stores_the_names_pyarrow_reads_with_their_provenance(labelled):
    from hubsurvey.core.store import Store

    db, _ = labelled
    with Store(db, read_only=True) as store:
        stored = store.records("SELECT l.*, m.revision_sha AS measured_revision FROM label_names l JOIN measurements m "
                               "USING (dataset_id, config, label_column) ORDER BY dataset_id, config, label_column, label_id")
        label_columns = store.records("SELECT dataset_id, config, label_column FROM measurements WHERE label_column IS NOT NULL")
    for dataset, folder in (("dair-ai/emotion", "dair-ai__emotion"), ("eriktks/conll2003", "eriktks__conll2003")):
        reference = _reference(folder)
        mine = [r for r in stored if r["dataset_id"] == dataset]
        got: dict[tuple[str, str], list[str]] = {}
        for r in mine:
            got.setdefault((r["config"], r["label_column"]), []).append(r["name"])
            assert r["label_id"] == len(got[(r["config"], r["label_column"])]) - 1
            assert r["revision_sha"] == r["measured_revision"] and r["tool_version"] == __version__
        # every measured label column with ClassLabel names, exactly as pyarrow reads them
        measured = {(r["config"], r["label_column"]) for r in label_columns if r["dataset_id"] == dataset}
        assert got == {k: v for k, v in reference.items() if k in measured} and got
    features = {r["feature"] for r in stored}
    assert features == {"ClassLabel", "List(ClassLabel)"}


NAMED = re.compile(r"([^\[\],;]+?) \((\d+)\)")


@pytest.mark.slow
def test_show_prints_each_label_as_its_name_and_id(labelled):
    from hubsurvey.cli import app

    db, _ = labelled
    names = _reference("dair-ai__emotion")
    (column_names,) = [v for (config, column), v in names.items() if column == "label"]
    result = runner.invoke(app, ["show", "dair-ai/emotion", "--kind", "conflicts", "--db", str(db)])
    assert result.exit_code == 0, result.output
    lines = [line for line in result.stdout.splitlines() if line.strip().startswith("labels ")]
    assert lines
    for line in lines:
        pairs = NAMED.findall(line.split("labels ", 1)[1].replace("train: ", "").replace("test: ", "").replace("validation: ", ""))
        assert pairs and all(column_names[int(i)] == name.strip() for name, i in pairs), line
    shown = runner.invoke(app, ["show", "dair-ai/emotion", "--kind", "conflicts", "--db", str(db), "--format", "json"])
    rows = json.loads(shown.stdout)
    for row in rows:  # the ids stay as stored; the names beside them
        assert row["labels_named"] == {s: [f"{column_names[i]} ({i})" for i in v] for s, v in row["labels"].items()}


@pytest.mark.slow
def test_the_site_shows_labels_by_name_and_id(labelled):
    from hubsurvey.analysis.site import dataset_page_path

    _, site = labelled
    for dataset, folder in (("dair-ai/emotion", "dair-ai__emotion"), ("eriktks/conll2003", "eriktks__conll2003")):
        page = (site / dataset_page_path(dataset)).read_text(encoding="utf-8")
        shown = re.findall(r'<span class="labels">labels: ([^<]*)</span>', page)
        assert shown, dataset
        every = {name for names in _reference(folder).values() for name in names}
        for text in shown:
            pairs = NAMED.findall(re.sub(r"\b(train|validation|test) ", "", text.replace("&#39;", "'")))
            assert pairs and all(name.strip() in every for name, _ in pairs), text


@pytest.mark.slow
def test_hostile_names_stay_text_on_the_site_and_visible_in_the_terminal(tmp_path):
    from hubsurvey.analysis.site import build_site, dataset_page_path
    from hubsurvey.cli import app
    from hubsurvey.core.store import Store
    from hubsurvey.survey.audit import audit

    hostile = ["<script>alert(1)</script>", "red\x1b[31m", "x" * 500]
    features = {"text": {"_type": "Value", "dtype": "string"}, "label": {"_type": "ClassLabel", "names": hostile}}
    meta = {b"huggingface": json.dumps({"info": {"features": features}}).encode()}
    texts = {"train": ["same", "same", "other"], "test": ["same"]}
    labels = {"train": [0, 1, 2], "test": [2]}
    for split, rows in texts.items():
        folder = tmp_path / "owner__hostile" / "default" / split
        folder.mkdir(parents=True)
        table = pa.table({"text": rows, "label": pa.array(labels[split], pa.int64())}).replace_schema_metadata(meta)
        pq.write_table(table, folder / "0000.parquet")
    db = tmp_path / "r.duckdb"
    outcome = audit(str(tmp_path / "owner__hostile"), near=False, db=db, dataset_id="owner/hostile")
    assert not outcome.errors, outcome.errors
    with Store(db, read_only=True) as store:
        build_site(store, tmp_path / "site")
        stored = [n for (n,) in store.query("SELECT name FROM label_names ORDER BY label_id")[1]]
    assert stored[:2] == hostile[:2] and len(stored[2]) == MAX_LABEL_NAME_CHARS
    page = (tmp_path / "site" / dataset_page_path("owner/hostile")).read_text(encoding="utf-8")
    assert "<script>alert(1)" not in page and "&lt;script&gt;alert(1)&lt;/script&gt; (0)" in page
    assert "\x1b" not in page
    result = runner.invoke(app, ["show", "owner/hostile", "--kind", "conflicts", "--db", str(db)])
    assert result.exit_code == 0, result.output
    assert "\x1b" not in result.stdout and "red\\x1b[31m (1)" in result.stdout
