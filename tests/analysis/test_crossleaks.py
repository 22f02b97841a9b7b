"""Leaks across datasets (cross-2026): per-row fingerprints, the crossleaks join and its classes.

Every expected figure comes from ``hubsurvey_standin.reference.cross_reference``, sets over the
rows written, in plain Python (no code shared with the SQL), or from the planted truth of the
mini-hub (truth.json, computed the same way when it is generated).
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from hubsurvey.analysis.crossleaks import crossleaks, families_of, find_cross_rows
from hubsurvey.analysis.findings import findings
from hubsurvey.cli import app
from hubsurvey.core.store import Store, fingerprint_path, fingerprints_dir, safe_name
from hubsurvey.survey.audit import audit
from hubsurvey_standin.reference import cross_reference

runner = CliRunner()
WORDS = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa", "lambda", "mu", "nu",
         "xi", "omicron", "pi", "rho", "sigma"]


# --- paths ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["../../etc", "..", ".", "a/b", "a\\b", "x%2Fy", "ümlaut/名前", "a" * 400, "c=d", "\x00"])
def test_a_hub_name_never_leaves_the_fingerprints_folder(tmp_path, name):
    root = fingerprints_dir(tmp_path / "r.duckdb")
    assert root == tmp_path / "r.duckdb.fingerprints"
    rel = fingerprint_path(name, name, "test")
    parts = rel.split("/")
    assert len(parts) == 4 and [p.split("=", 1)[0] for p in parts[:3]] == ["dataset", "config", "split"]
    assert all(len(p.encode()) < 255 for p in parts) and "\x00" not in rel
    assert (root / rel).resolve().is_relative_to(root.resolve())


def test_safe_names_stay_distinct():
    names = ["a/b", "a%2Fb", "a_b", "A/b", "a" * 400, "a" * 399 + "b"]
    assert len({safe_name(n) for n in names}) == len(names)


# --- a small survey of folders: planted copies and leaks ------------------------------------------


def _texts(rng: random.Random, n: int) -> list[str]:
    out: set[str] = set()
    while len(out) < n:
        out.add(" ".join(rng.choices(WORDS, k=rng.randint(4, 9))))
    return sorted(out)


def _write(root: Path, dataset: str, splits: dict[str, list[str]]) -> Path:
    folder = root / dataset.replace("/", "__")
    for split, texts in splits.items():
        path = folder / "default" / split / "0000.parquet"
        path.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.table({"text": texts, "label": [len(t) % 2 for t in texts]}), path)
    return folder


def _planted(tmp_path: Path) -> dict[str, dict[str, list[str]]]:
    rng = random.Random(13)
    base = {"train": _texts(rng, 60), "test": _texts(rng, 25)}
    base["test"] = [t for t in base["test"] if t not in base["train"]]
    base["test"] += base["test"][:2]  # two test rows repeated: counted as rows, not as distinct texts
    absorb = {"train": _texts(rng, 30) + base["test"], "validation": base["test"][:5], "test": _texts(rng, 10)}
    # part of the test split, in another case and spacing: equal under the normalized profile
    partial = {"train": _texts(rng, 30) + ["  " + t.upper() for t in base["test"][5:12]], "test": _texts(rng, 8)}
    datasets = {"acme/base": base, "acme/mirror": {s: list(v) for s, v in base.items()},
                "other/absorb": absorb, "other/partial": partial, "other/alone": {"train": _texts(rng, 20), "test": _texts(rng, 9)}}
    return datasets


def _reference(datasets: dict[str, dict[str, list[str]]], threshold: float = 0.8) -> dict:
    configs = {(d, "default"): {s: [{"text": t} for t in texts] for s, texts in splits.items()} for d, splits in datasets.items()}
    return cross_reference(configs, {d: ["text"] for d in datasets}, threshold)


def _got(store: Store) -> list[dict]:
    return store.records("SELECT test_dataset, test_config, source_dataset, source_config, source_split, rows, test_rows, "
                         "relation FROM cross_overlaps ORDER BY ALL")


def _key(o: dict) -> tuple:
    return tuple(o[k] for k in ("test_dataset", "test_config", "source_dataset", "source_config", "source_split",
                                "rows", "test_rows", "relation"))


def _survey(tmp: Path) -> tuple[Path, dict[str, dict[str, list[str]]]]:
    """The planted datasets, each audited from its folder into one DB."""
    datasets = _planted(tmp)
    db = tmp / "r.duckdb"
    for dataset, splits in datasets.items():
        outcome = audit(str(_write(tmp / "data", dataset, splits)), db=db, near=False, examples=0)
        assert not outcome.errors
    return db, datasets


@pytest.fixture(scope="module")
def surveyed(tmp_path_factory):
    """Shared by the tests that only read it (crossleaks again gives the same tables)."""
    return _survey(tmp_path_factory.mktemp("cross"))


@pytest.fixture
def fresh(tmp_path):
    """A DB of its own, for a test that measures again."""
    return _survey(tmp_path)


@pytest.mark.slow
def test_crossleaks_equals_the_plain_python_reference_and_classifies_the_plants(surveyed):
    db, datasets = surveyed
    with Store(db) as store:
        summary = crossleaks(store)
        got = _got(store)
        families = store.records("SELECT dataset_id, family_id, members FROM dataset_families ORDER BY dataset_id")
        found = findings(store)
    want = _reference(datasets)
    assert sorted(map(_key, got)) == sorted(map(_key, want["overlaps"]))
    by = {(o["test_dataset"], o["source_dataset"], o["source_split"]): o for o in got}
    base_test = len(datasets["acme/base"]["test"])
    # the fork is a copy (both ways), never a leak: its train split holds nothing of base's test, and
    # pairs within the family are classified 'family'
    assert by[("acme/mirror", "acme/base", "test")]["relation"] == "copy"
    assert by[("acme/base", "acme/mirror", "test")]["relation"] == "copy"
    assert not any(o["relation"] == "leak" and {o["test_dataset"], o["source_dataset"]} <= {"acme/base", "acme/mirror"}
                   for o in got)
    # the whole test split in absorb's train, five of its rows in its validation, 7 in partial's train
    assert by[("acme/base", "other/absorb", "train")]["rows"] == base_test
    assert by[("acme/base", "other/absorb", "train")]["relation"] == "leak"
    assert by[("acme/base", "other/absorb", "validation")]["rows"] == 5 + 2  # the two repeated test rows are among them
    assert by[("acme/base", "other/partial", "train")]["rows"] == 7 and by[("acme/base", "other/partial", "train")]["relation"] == "leak"
    assert by[("acme/mirror", "other/absorb", "train")]["relation"] == "leak"  # the mirror's test leaks there too
    assert [(f["dataset_id"], f["family_id"], list(f["members"])) for f in families] == [
        ("acme/base", "acme/base", ["acme/base", "acme/mirror"]), ("acme/mirror", "acme/base", ["acme/base", "acme/mirror"])]
    assert (summary.families, summary.copies, summary.test_splits, summary.missing) == (1, 2, 5, 0)
    (o,) = found["cross_overview"]
    assert (o["test_splits"], o["leaking_test_splits"], o["families"], o["copies"]) == (5, 2, 1, 1)
    assert o["datasets"] == 4 and o["leaking_datasets"] == 1  # base and its mirror count once
    assert found["cross_top_leaks"][0]["rows"] == base_test and found["cross_top_leaks"][0]["pct"] == 100.0


@pytest.mark.slow
def test_a_higher_threshold_and_disagreeing_train_splits_are_not_copies(tmp_path):
    rng = random.Random(7)
    base = {"train": _texts(rng, 40), "test": _texts(rng, 20)}
    datasets = {"a/base": base,
                "b/same_test_new_train": {"train": _texts(random.Random(8), 40), "test": list(base["test"])},
                "c/most_of_test": {"train": list(base["train"]), "test": base["test"][:17] + _texts(random.Random(9), 3)}}
    db = tmp_path / "r.duckdb"
    for dataset, splits in datasets.items():
        assert not audit(str(_write(tmp_path / "data", dataset, splits)), db=db, near=False, examples=0).errors
    for threshold in (0.8, 0.9):
        with Store(db) as store:
            crossleaks(store, copy_threshold=threshold)
            got = _got(store)
        assert sorted(map(_key, got)) == sorted(map(_key, _reference(datasets, threshold)["overlaps"]))
        relation = {(o["test_dataset"], o["source_dataset"], o["source_split"]): o["relation"] for o in got}
        assert relation[("b/same_test_new_train", "a/base", "test")] == "shared_test"  # trains disagree
        assert relation[("c/most_of_test", "a/base", "test")] == ("copy" if threshold == 0.8 else "shared_test")  # 17 of 20


@pytest.mark.slow
def test_fingerprints_are_replaced_when_the_revision_changes(fresh, tmp_path):
    db, datasets = fresh
    root = fingerprints_dir(db)
    with Store(db) as store:
        before = store.records("SELECT split, revision_sha, rows, path FROM fingerprints WHERE dataset_id = 'other/absorb' ORDER BY split")
    assert [r["split"] for r in before] == ["test", "train", "validation"]
    table = pq.read_table(root / before[1]["path"])
    assert table.column_names == ["dataset_id", "revision_sha", "config", "split", "row", "hash"]
    assert table.column("row").to_pylist() == list(range(len(datasets["other/absorb"]["train"])))
    assert str(table.schema.field("hash").type) == "uint64"
    # a new revision without a validation split: its file goes, the others are rewritten
    changed = {"train": datasets["other/absorb"]["train"][:10], "test": datasets["other/absorb"]["test"]}
    folder = tmp_path / "data2" / "other__absorb"
    _write(tmp_path / "data2", "other/absorb", changed)
    assert not audit(str(folder), db=db, near=False, examples=0).errors
    with Store(db) as store:
        after = store.records("SELECT split, revision_sha, rows, path FROM fingerprints WHERE dataset_id = 'other/absorb' ORDER BY split")
        crossleaks(store)
        got = _got(store)
    assert [r["split"] for r in after] == ["test", "train"] and after[0]["revision_sha"] != before[0]["revision_sha"]
    assert not (root / before[2]["path"]).exists() and (root / after[1]["path"]).exists()
    assert pq.read_table(root / after[1]["path"]).num_rows == 10
    assert not list(root.rglob("*.tmp"))
    want = _reference({**datasets, "other/absorb": changed})
    assert sorted(map(_key, got)) == sorted(map(_key, want["overlaps"]))


@pytest.mark.slow
def test_the_rows_behind_a_pair_point_into_both_datasets(surveyed):
    db, datasets = surveyed
    with Store(db) as store:
        rows = find_cross_rows(store, "acme/base", "other/partial", limit=50)
    base, partial = datasets["acme/base"]["test"], datasets["other/partial"]["train"]
    assert len(rows) == 7
    for r in rows:
        assert r["source_split"] == "train" and len(r["source_rows"]) == 1
        assert " ".join(partial[r["source_rows"][0]].split()).lower() == base[r["test_row"]]


@pytest.mark.slow
def test_cli_crossleaks_and_show_source(surveyed):
    db, _ = surveyed
    result = runner.invoke(app, ["crossleaks", "--db", str(db)])
    assert result.exit_code == 0, result.output
    assert "2 copy relation(s), 1 family" in result.output and "other/absorb" in result.output
    shown = runner.invoke(app, ["show", "acme/base", "--source", "other/absorb", "--db", str(db), "--limit", "2"])
    assert shown.exit_code == 0, shown.output
    assert "in other/absorb [default] train: leak" in shown.output and "test@" in shown.output
    as_json = json.loads(runner.invoke(app, ["show", "base", "--source", "absorb", "--db", str(db), "--format", "json"]).output)
    assert {r["source_split"] for r in as_json} == {"train", "validation"}
    bad = runner.invoke(app, ["crossleaks", "--db", str(db), "--copy-threshold", "1.5"])
    assert bad.exit_code == 2 and "--copy-threshold" in bad.output
    with Store(db, read_only=True) as store:
        assert store.query("SELECT status FROM runs WHERE command = 'crossleaks'")[1] == [("done",)]



@pytest.mark.slow
def test_report_and_card_show_the_leaks_across_datasets(surveyed, tmp_path):
    from hubsurvey.analysis.card import render_card
    from hubsurvey.analysis.report import render_report

    db, datasets = surveyed
    with Store(db) as store:
        crossleaks(store)
        md, html = render_report(store, tmp_path / "report")
        card = render_card(store, "someone/results")
    n = len(datasets["acme/base"]["test"])
    for text in (md.read_text(), card):
        assert "Leaks across datasets" in text
        assert f"| acme/base | default | other/absorb | default | train | {n} | {n} | 100.00% |" in text
        assert "| families (datasets joined by copies) / their datasets | 1 / 2 |" in text
    page = html.read_text()
    assert 'id="cross"' in page and "<td>other/absorb</td>" in page and "&lt;test dataset&gt;" in page

@pytest.mark.slow
def test_the_results_dataset_carries_the_cross_tables_and_their_config(surveyed, tmp_path):
    import csv
    import io

    import yaml

    from hubsurvey.analysis.publish import build_folder, is_owned
    from hubsurvey_standin.cards import front_matter, parse_card

    db, _ = surveyed
    with Store(db) as store:
        crossleaks(store)
        got = _got(store)
    with Store(db, read_only=True) as store:
        built = build_folder(store, tmp_path / "out", "me/results")
    files = [f.path_in_repo for f in built]
    out = tmp_path / "out"
    assert {"data/cross_overlaps-00000-of-00001.parquet", "cross_overlaps.csv", "dataset_families.csv"} <= set(files)
    assert all(is_owned(f) for f in files)  # publish --push removes them once they are no longer produced
    rows = list(csv.DictReader(io.StringIO((out / "cross_overlaps.csv").read_text())))
    table = pq.read_table(out / "data/cross_overlaps-00000-of-00001.parquet").to_pylist()
    assert sorted(map(_key, got)) == sorted(_key({**r, "rows": int(r["rows"]), "test_rows": int(r["test_rows"])}) for r in rows)
    assert len(table) == len(rows) and {r["relation"] for r in table} == {o["relation"] for o in got}
    families = list(csv.DictReader(io.StringIO((out / "dataset_families.csv").read_text())))
    assert {(f["dataset_id"], f["family_id"]) for f in families} == {("acme/base", "acme/base"), ("acme/mirror", "acme/base")}
    card = (out / "README.md").read_text()
    assert parse_card(card)[1] == []
    configs = yaml.safe_load(front_matter(card))["configs"]
    assert configs[1] == {"config_name": "cross_overlaps",
                          "data_files": [{"split": "train", "path": "data/cross_overlaps-*.parquet"}]}
    # the default config's glob does not pick the cross table up
    assert not Path("data/cross_overlaps-00000-of-00001.parquet").match(configs[0]["data_files"][0]["path"])
    # crossleaks again (as every run does): the same cross files byte for byte, so publish has nothing new to upload
    with Store(db) as store:
        crossleaks(store)
    with Store(db, read_only=True) as store:
        again = {f.path_in_repo: f.sha256 for f in build_folder(store, tmp_path / "again", "me/results")}
    cross_files = ("data/cross_overlaps-00000-of-00001.parquet", "cross_overlaps.csv", "dataset_families.csv")
    assert [again[p] for p in cross_files] == [next(f.sha256 for f in built if f.path_in_repo == p) for p in cross_files]


def test_families_are_connected_components():
    edges = [("b", "a"), ("c", "b"), ("x", "y")]
    got = families_of(edges)
    assert got["c"] == got["a"] == ["a", "b", "c"] and got["x"] == ["x", "y"] and "z" not in got


# --- the mini-hub, through the stand-in: the planted relations equal truth.json -------------------


@pytest.mark.slow
def test_the_minihub_survey_finds_the_planted_cross_relations(tmp_path):
    from hubsurvey.core.hub import HubClient
    from hubsurvey.pipeline import RunOptions, run_survey
    from hubsurvey_standin import StandinHub, generate_minihub

    root = generate_minihub(tmp_path / "hub", seed=0)
    truth = json.loads((root / "truth.json").read_text())["cross"]
    with StandinHub(root) as hub:
        client = HubClient(endpoint=hub.url, token=False, rate=0, file_rate=0, cache_dir=tmp_path / "cache")
        summary = run_survey(tmp_path / "r.duckdb", client, None, RunOptions(workers=2, near=False))
    assert summary.failed == 0 and summary.crossleaks is not None and summary.crossleaks["missing"] == 0
    with Store(tmp_path / "r.duckdb") as store:
        got = _got(store)
        families = {r["dataset_id"]: list(r["members"]) for r in store.records("SELECT * FROM dataset_families")}
    assert sorted(map(_key, got)) == sorted(map(_key, truth["overlaps"]))
    assert families == truth["families"]
    by = {(o["test_dataset"], o["source_dataset"], o["source_split"]): o for o in got}
    for plant in truth["planted"]:
        if plant["relation"] == "copy":  # the fork: a copy both ways, in one family, never a leak
            for a, b in ((plant["test_dataset"], plant["source_dataset"]), (plant["source_dataset"], plant["test_dataset"])):
                assert by[(a, b, "test")]["relation"] == "copy"
                assert all(by[(a, b, s)]["relation"] == "family" for s in ("train", "validation") if (a, b, s) in by)
            assert families[plant["test_dataset"]] == sorted([plant["test_dataset"], plant["source_dataset"]])
        else:
            found = by[(plant["test_dataset"], plant["source_dataset"], plant["source_split"])]
            assert found["relation"] == "leak" and found["rows"] >= plant["rows"]
    assert not any(o["relation"] == "leak" for o in got if o["test_dataset"] in families
                   and o["source_dataset"] in families[o["test_dataset"]])
    # a config whose fingerprints are gone is measured again by the next run; --no-crossleaks leaves the tables
    with Store(tmp_path / "r.duckdb") as store:
        store.con.execute("DELETE FROM fingerprints WHERE dataset_id = 'mini-lab/topics_partial'")
    with StandinHub(root) as hub:
        client = HubClient(endpoint=hub.url, token=False, rate=0, file_rate=0, cache_dir=tmp_path / "cache")
        again = run_survey(tmp_path / "r.duckdb", client, None, RunOptions(workers=1, near=False, crossleaks=False))
    assert (again.done, again.failed, again.crossleaks) == (1, 0, None)
    with Store(tmp_path / "r.duckdb") as store:
        assert sorted(map(_key, _got(store))) == sorted(map(_key, truth["overlaps"]))
        assert store.query("SELECT count(*) FROM fingerprints WHERE dataset_id = 'mini-lab/topics_partial'")[1] == [(3,)]


# --- the shared datasets: the SQL against sets over their rows ---------------------------------------


def _shared_rows(folder: Path, config: str) -> dict[str, list[dict]]:
    """Every split of a shared config, rows as dicts, with pyarrow alone (canonical split names)."""
    names = {"train": "train", "validation": "validation", "valid": "validation", "dev": "validation", "test": "test"}
    return {names[d.name]: [r for f in sorted(d.glob("*.parquet")) for r in pq.read_table(f).to_pylist()]
            for d in sorted((folder / config).iterdir()) if d.name in names}


@pytest.fixture(scope="module")
def shared_survey(shared_datasets, tmp_path_factory):
    """Every shared dataset audited into one DB (no near figures, no examples), then crossleaks."""
    db = tmp_path_factory.mktemp("shared-cross") / "r.duckdb"
    for entry in json.loads((shared_datasets / "index.json").read_text()):
        audit(str(shared_datasets / entry["id"].replace("/", "__")), db=db, near=False, examples=0)
    with Store(db) as store:
        summary = crossleaks(store)
    return db, summary


@pytest.mark.slow
def test_crossleaks_on_the_shared_datasets_equals_sets_over_their_rows(shared_datasets, shared_survey):
    db, summary = shared_survey
    with Store(db, read_only=True) as store:
        got = _got(store)
        measured = store.records("SELECT DISTINCT dataset_id, config, text_columns FROM current_measurements")
    assert summary.missing == 0 and summary.test_splits == len({(m["dataset_id"], m["config"]) for m in measured})
    configs = {(m["dataset_id"], m["config"]): _shared_rows(shared_datasets / m["dataset_id"].replace("/", "__"), m["config"])
               for m in measured}
    columns = {(m["dataset_id"], m["config"]): list(m["text_columns"]) for m in measured}
    want = cross_reference(configs, columns)
    assert sorted(map(_key, got)) == sorted(map(_key, want["overlaps"]))
    # the real copy among them: silicone's maptask is miam's maptask re-uploaded (its whole test
    # split, and 92.5 % of its train, are miam's), so the two are one family and never a leak
    by = {(o["test_dataset"], o["test_config"], o["source_dataset"], o["source_split"]): o for o in got}
    copy = by[("eusip/silicone", "maptask", "PierreColombo/miam", "test")]
    assert copy["relation"] == "copy" and copy["rows"] == copy["test_rows"]
    with Store(db, read_only=True) as store:
        families = store.records("SELECT dataset_id, family_id FROM dataset_families ORDER BY dataset_id")
    assert families == [{"dataset_id": "PierreColombo/miam", "family_id": "PierreColombo/miam"},
                        {"dataset_id": "eusip/silicone", "family_id": "PierreColombo/miam"}]
    assert not any(o["relation"] == "leak" and {o["test_dataset"], o["source_dataset"]} == {"eusip/silicone", "PierreColombo/miam"}
                   for o in got)
