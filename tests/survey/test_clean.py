"""Clean test splits (survey/clean.py, ``hubsurvey clean``): the kept rows against a plain-Python
computation and against the figures, an audit of the clean split, the folder, the manifest, the
DB, and the published positions loaded back with ``hubsurvey.load_clean_test``."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from fingerprint_reference import reference_fingerprint
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from hubsurvey.cli import app
from hubsurvey.core.errors import BadInputError, OutputExistsError
from hubsurvey.core.store import Store, safe_name
from hubsurvey.survey.clean import REASONS, clean
from hubsurvey.survey.measure import measure_config
from hubsurvey.survey.sources import FolderSource
from hubsurvey_standin.reference import _freeze, near_rows, normalize_value

SPLITS = ("train", "validation", "test")
#: the figure each profile's clean removes, as the audit stores it
CONTAMINATED = {"raw": "raw_test_rows_contaminated", "normalized": "normalized_test_rows_contaminated",
                "near": "test_rows_near_contaminated"}
runner = CliRunner()


def _rows(folder: Path, config: str) -> dict[str, list[dict]]:
    out = {}
    for split in SPLITS:
        files = sorted((folder / config / split).glob("*.parquet")) if (folder / config / split).is_dir() else []
        if files:
            out[split] = [row for f in files for row in pq.read_table(f).to_pylist()]
    return out


def reference_dropped(splits: dict[str, list[dict]], text_columns: list[str], profile: str) -> dict[int, str]:
    """Test position -> reason, by plain loops over the rows (the stand-in's own normalization)."""
    def key(row: dict) -> tuple:
        return tuple(_freeze(row[c] if profile == "raw" else normalize_value(row[c])) for c in text_columns)

    train = {key(r) for r in splits.get("train", [])}
    validation = {key(r) for r in splits.get("validation", [])}
    dropped, seen = {}, set()
    for pos, row in enumerate(splits["test"]):
        k = key(row)
        if k in train:
            dropped[pos] = "train"
        elif k in validation:
            dropped[pos] = "validation"
        elif k in seen:
            dropped[pos] = "repeated"
        seen.add(k)
    return dropped


def _manifest_dropped(entry: dict) -> dict[int, str]:
    kept = set(entry["kept_positions"])
    return {p: "?" for p in range(entry["rows_test"]) if p not in kept}


def _audit_with_clean_test(original: Path, config: str, clean_out: Path, entry: dict, tmp: Path) -> dict:
    """Measure (train and validation as they were, the clean test): the first row of figures."""
    folder = tmp / "with-clean" / config
    for split in ("train", "validation"):
        if (original / config / split).is_dir():
            shutil.copytree(original / config / split, folder / split)
    (folder / "test").mkdir(parents=True)
    shutil.copy(clean_out / entry["path"], folder / "test" / "0000.parquet")
    result = measure_config(FolderSource(tmp / "with-clean").load(config), n_configs=1, source="folder", examples=0)
    return result.rows[0]


SHARED = [("CogComp__trec", "default"), ("cardiffnlp__tweet_eval", "hate"), ("PierreColombo__miam", "loria"),
          ("eriktks__conll2003", "conll2003")]


@pytest.mark.slow
@pytest.mark.parametrize("profile", ["raw", "normalized"])
@pytest.mark.parametrize("repo, config", SHARED)
def test_kept_rows_equal_plain_python_and_an_audit_finds_none(shared_datasets, tmp_path, repo, config, profile):
    original = shared_datasets / repo
    outcome = clean(str(original), out=tmp_path / "out", config=config, profile=profile)
    entry = outcome.configs[config]
    splits = _rows(original, config)
    expected = reference_dropped(splits, entry["text_columns"], profile)
    assert entry["kept_positions"] == [p for p in range(len(splits["test"])) if p not in expected]
    assert entry["dropped"] == {r: list(expected.values()).count(r) for r in REASONS}
    assert entry["rows_kept"] + sum(entry["dropped"].values()) == entry["rows_test"] == len(splits["test"])
    # the clean file is those rows, in order, with the split's schema and HF features
    written = pq.read_table(tmp_path / "out" / entry["path"])
    test_file = sorted((original / config / "test").glob("*.parquet"))[0]
    assert written.to_pylist() == [splits["test"][p] for p in entry["kept_positions"]]
    assert written.schema.metadata[b"huggingface"] == pq.read_schema(test_file).metadata[b"huggingface"]
    assert written.schema.remove_metadata().equals(pq.read_schema(test_file).remove_metadata())
    assert entry["fingerprint"] == reference_fingerprint(written.schema.names, written.to_pylist())
    # the audit's own figure counts exactly the dropped rows; with the clean test it counts none
    audited = measure_config(FolderSource(original).load(config), n_configs=1, source="folder", examples=0).rows[0]
    assert audited[CONTAMINATED[profile]] == len(expected)
    assert _audit_with_clean_test(original, config, tmp_path / "out", entry, tmp_path)[CONTAMINATED[profile]] == 0


@pytest.mark.slow
@pytest.mark.parametrize("repo, config", SHARED[:3])
def test_near_drops_what_the_near_figures_count(shared_datasets, tmp_path, repo, config):
    original = shared_datasets / repo
    entry = clean(str(original), out=tmp_path / "out", config=config, profile="near").configs[config]
    audited = measure_config(FolderSource(original).load(config), n_configs=1, source="folder", examples=0).rows[0]
    dropped = set(_manifest_dropped(entry))
    assert len(dropped) == audited["test_rows_near_contaminated"] == sum(entry["dropped"].values())
    assert entry["rows_kept"] + len(dropped) == entry["rows_test"]
    # every dropped row is near-contaminated by the exhaustive plain-Python reference (LSH finds, never invents)
    splits = _rows(original, config)
    truth = near_rows(splits, entry["text_columns"], None)["test_rows_near_contaminated"]
    assert dropped <= truth and len(dropped) >= 0.95 * len(truth)
    # near includes normalized: an exact normalized match is dropped too, under its own reason
    exact = reference_dropped(splits, entry["text_columns"], "normalized")
    assert set(exact) <= dropped and entry["dropped"]["near"] == len(dropped - set(exact))
    assert entry["near"]["status"] == "measured" and entry["method"] == "near-2026"
    assert _audit_with_clean_test(original, config, tmp_path / "out", entry, tmp_path)["test_rows_near_contaminated"] == 0


_texts = st.sampled_from(["a b", "A  b", "a b ", "c", "C", "ß", "ss", "x y z", "", "é", "e\u0301", "a\u00a0b"])


@pytest.mark.slow
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.dictionaries(st.sampled_from(SPLITS), st.lists(st.one_of(st.none(), _texts), max_size=8), min_size=1),
       st.sampled_from(["raw", "normalized"]))
def test_random_splits_equal_plain_python(tmp_path_factory, splits, profile):
    splits.setdefault("test", ["a b"])
    if not splits["test"]:
        splits["test"] = ["c"]
    tmp = tmp_path_factory.mktemp("random")
    for split, texts in splits.items():
        (tmp / "ds" / "default" / split).mkdir(parents=True)
        table = pa.table({"text": pa.array(texts, pa.string()), "label": pa.array(range(len(texts)), pa.int64())})
        pq.write_table(table, tmp / "ds" / "default" / split / "0000.parquet")
    entry = clean(str(tmp / "ds"), out=tmp / "out", profile=profile).configs["default"]
    rows = {s: [{"text": t} for t in texts] for s, texts in splits.items()}
    expected = reference_dropped(rows, ["text"], profile)
    assert entry["kept_positions"] == [p for p in range(len(splits["test"])) if p not in expected]
    assert entry["dropped"] == {r: list(expected.values()).count(r) for r in REASONS}
    assert entry["rows_kept"] + sum(entry["dropped"].values()) == len(splits["test"])
    assert pq.read_table(tmp / "out" / entry["path"]).num_rows == entry["rows_kept"]  # an empty split is written too
    if entry["rows_kept"]:  # (an audit refuses a test split of zero rows)
        assert _audit_with_clean_test(tmp / "ds", "default", tmp / "out", entry, tmp)[CONTAMINATED[profile]] == 0


@pytest.mark.slow
def test_the_folder_is_audited_and_several_configs_make_several_folders(shared_datasets, tmp_path):
    out = tmp_path / "out"
    result = runner.invoke(app, ["clean", str(shared_datasets / "omilab__hebrew_sentiment"), "--out", str(out),
                                 "--db", str(tmp_path / "r.duckdb")])
    assert result.exit_code == 0, result.output
    manifest = json.loads((out / "manifest.json").read_text())
    assert set(manifest["configs"]) == {"morph", "token"} and manifest["profile"] == "normalized"
    assert manifest["dataset"] == "omilab/hebrew_sentiment" and manifest["parquet_sha"] is None
    assert manifest["method"] == "exact-2026" and manifest["fingerprint_version"] == "hs1"
    for config, entry in manifest["configs"].items():
        assert (out / config / "test" / "0000.parquet").is_file() and entry["path"] == f"{config}/test/0000.parquet"
        assert f"[{config}] normalized: kept {entry['rows_kept']} of {entry['rows_test']}" in result.stdout
    audited = runner.invoke(app, ["audit", str(out), "--json", "--no-near", "--db", str(tmp_path / "a.duckdb")])
    assert audited.exit_code == 0, audited.output
    for obj in json.loads(audited.stdout):
        entry = manifest["configs"][obj["config"]]
        assert obj["exact"]["normalized"]["test_rows_repeated"] == 0
        assert obj["fingerprints"] == {"train": None, "validation": None, "test": entry["fingerprint"]}
    with Store(tmp_path / "r.duckdb", read_only=True) as store:
        stored = store.records("SELECT config, rows_kept, kept_positions, clean_fingerprint, dropped FROM clean_test ORDER BY config")
        (runs,) = store.query("SELECT count(*) FROM runs WHERE command = 'clean' AND status = 'done'")[1][0]
    assert [(r["config"], r["rows_kept"], r["kept_positions"], r["clean_fingerprint"]) for r in stored] == [
        (c, e["rows_kept"], e["kept_positions"], e["fingerprint"]) for c, e in sorted(manifest["configs"].items())]
    assert runs == 1


@pytest.mark.slow
def test_bad_input_is_one_line_and_config_names_stay_inside(shared_datasets, tmp_path):
    # a config name that is not a plain path component is written under its safe name
    src = tmp_path / "ds" / "we%ird name"
    shutil.copytree(shared_datasets / "CogComp__trec" / "default", src)
    outcome = clean(str(tmp_path / "ds"), out=tmp_path / "out")
    entry = outcome.configs["we%ird name"]
    assert entry["path"] == f"{safe_name('we%ird name')}/test/0000.parquet" and (tmp_path / "out" / entry["path"]).is_file()
    with pytest.raises(BadInputError, match="--profile 'fuzzy'"):
        clean(str(tmp_path / "ds"), out=tmp_path / "o2", profile="fuzzy")
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "notes.txt").write_text("mine")
    with pytest.raises(OutputExistsError, match="not a clean test split"):
        clean(str(tmp_path / "ds"), out=tmp_path / "busy")
    assert (tmp_path / "busy" / "notes.txt").read_text() == "mine"
    # a config without a test split fails alone, in one line naming it; the other is cleaned
    shutil.copytree(shared_datasets / "CogComp__trec" / "default" / "train", tmp_path / "ds" / "notest" / "train")
    outcome = clean(str(tmp_path / "ds"), out=tmp_path / "out")
    assert set(outcome.configs) == {"we%ird name"} and int(outcome.exit_code) == 1
    assert outcome.errors == ["ds [notest]: no test split (found: train)"]
    result = runner.invoke(app, ["clean", str(tmp_path / "ds"), "--out", str(tmp_path / "out")])
    assert result.exit_code == 1 and result.stderr.strip().splitlines() == ["error: ds [notest]: no test split (found: train)"]


TOKEN = "hf_clean_test_token_8c2e4a"


@pytest.mark.slow
def test_load_clean_test_from_the_db_and_from_the_published_results(shared_datasets, tmp_path, monkeypatch):
    """Against the stand-in Hub: clean a Hub id into a DB, load the clean split back from the DB,
    publish the results (the clean_test config), and load it again from the published positions."""
    import datasets
    import huggingface_hub.constants

    import hubsurvey
    from hubsurvey_standin import StandinHub

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("HUBSURVEY_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "datasets-cache"))
    db, out = tmp_path / "r.duckdb", tmp_path / "out"
    with StandinHub(shared_datasets, valid_tokens={TOKEN}) as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        result = runner.invoke(app, ["clean", "CogComp/trec", "--out", str(out), "--db", str(db)])
        assert result.exit_code == 0, result.output
        manifest = json.loads((out / "manifest.json").read_text())
        entry = manifest["configs"]["default"]
        assert manifest["source"] == "hub" and len(manifest["parquet_sha"]) == 40 and len(manifest["revision"]) == 40
        # the Hub's split and the folder's give the same clean rows and fingerprints
        folder = clean(str(shared_datasets / "CogComp__trec"), out=tmp_path / "from-folder").configs["default"]
        assert (entry["kept_positions"], entry["fingerprint"], entry["test_fingerprint"]) == (
            folder["kept_positions"], folder["fingerprint"], folder["test_fingerprint"])

        loaded = hubsurvey.load_clean_test("CogComp/trec", "default", db=db)
        assert isinstance(loaded, datasets.Dataset) and loaded.num_rows == entry["rows_kept"]
        assert loaded.to_list() == pq.read_table(out / entry["path"]).to_pylist()
        original = datasets.Dataset.from_parquet(str(shared_datasets / "CogComp__trec/default/test/0000.parquet"))
        assert loaded.features == original.features  # ClassLabel names kept

        runner.invoke(app, ["audit", "CogComp/trec", "--no-near", "--examples", "0", "--db", str(db)])
        monkeypatch.setenv("HF_TOKEN", TOKEN)
        published = runner.invoke(app, ["publish", "--repo", "me/clean-results", "--db", str(db), "--out",
                                        str(tmp_path / "pub"), "--push"])
        assert published.exit_code == 0, published.output
        assert (tmp_path / "pub" / "data" / "clean_test-00000-of-00001.parquet").is_file()
        assert "config_name: clean_test" in (tmp_path / "pub" / "README.md").read_text()
        monkeypatch.delenv("HF_TOKEN")
        again = hubsurvey.load_clean_test("CogComp/trec", "default", results="me/clean-results")
        assert again.to_list() == loaded.to_list()
        with pytest.raises(BadInputError, match=r"CogComp/trec \[default\] \(near\): no clean test split recorded"):
            hubsurvey.load_clean_test("CogComp/trec", "default", "near", results="me/clean-results")
    published_rows = pq.read_table(tmp_path / "pub" / "data" / "clean_test-00000-of-00001.parquet").to_pylist()
    assert [(r["dataset_id"], r["config"], r["profile"], r["kept_positions"]) for r in published_rows] == [
        ("CogComp/trec", "default", "normalized", entry["kept_positions"])]
    assert set(published_rows[0]) == {  # positions, counts and fingerprints: no row of the dataset
        "dataset_id", "revision_sha", "parquet_sha", "config", "profile", "text_columns", "test_split", "rows_test",
        "rows_kept", "dropped", "kept_positions", "test_fingerprint", "clean_fingerprint", "near", "method",
        "method_version", "tool_version", "cleaned_at"}


@pytest.mark.slow
def test_a_save_to_disk_folder_keeps_its_features(tmp_path):
    """An Arrow folder written by datasets: the clean Parquet carries its features (ClassLabel names)."""
    import datasets

    features = datasets.Features({"text": datasets.Value("string"), "label": datasets.ClassLabel(names=["neg", "pos"])})
    splits = {"train": ["a", "b"], "test": ["A", "c", "c", "d"]}
    datasets.DatasetDict({s: datasets.Dataset.from_dict({"text": t, "label": [i % 2 for i in range(len(t))]}, features=features)
                          for s, t in splits.items()}).save_to_disk(str(tmp_path / "ds"))
    entry = clean(str(tmp_path / "ds"), out=tmp_path / "out").configs["default"]
    assert entry["kept_positions"] == [1, 3] and entry["dropped"] == {"train": 1, "validation": 0, "repeated": 1, "near": 0}
    loaded = datasets.Dataset.from_parquet(str(tmp_path / "out" / entry["path"]))
    assert loaded.features == features and loaded["text"] == ["c", "d"]


SECRET = "hf_CleanPlanted_token_3e9b1f7a"


@pytest.mark.slow
def test_a_hub_that_echoes_the_token_fails_the_config_in_one_line_without_it(shared_datasets, tmp_path, monkeypatch):
    """A careless proxy echoes the Authorization header into its errors while the files download:
    the config fails as a Hub fault (exit 4), in one line, and no output, DB column or file holds
    the token; a second dataset, served cleanly, is cleaned."""
    import huggingface_hub.constants
    from leaks import db_hits, secret_hits

    from hubsurvey_standin import Faults, Scope, StandinHub

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("HUBSURVEY_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("HUBSURVEY_MAX_ATTEMPTS", "2")
    faults = Faults(error_burst_every=1, error_burst_len=1, error_status=403, echo_auth=True,
                    scope=Scope(categories=frozenset({"resolve_get"}), dataset="CogComp/trec"))
    db = tmp_path / "r.duckdb"
    with StandinHub(shared_datasets, faults=faults, valid_tokens={SECRET}) as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        monkeypatch.setenv("HF_TOKEN", SECRET)
        failed = runner.invoke(app, ["clean", "CogComp/trec", "--out", str(tmp_path / "trec"), "--db", str(db)])
        cleaned = runner.invoke(app, ["clean", "openai/gsm8k", "--out", str(tmp_path / "gsm8k"), "--db", str(db)])
    assert failed.exit_code == 4 and len(failed.stderr.strip().splitlines()) == 1, failed.output  # the Hub's fault
    assert failed.stderr.startswith("error: CogComp/trec [default]: HfHubHTTPError: 403") and "***" in failed.stderr
    assert not (tmp_path / "trec" / "manifest.json").exists()
    assert cleaned.exit_code == 0, cleaned.output
    assert secret_hits(SECRET, texts={"failed": failed.output, "cleaned": cleaned.output},
                       paths=[tmp_path / "trec", tmp_path / "gsm8k"]) == []
    assert db_hits(db, SECRET) == []


@pytest.mark.slow
def test_a_clean_into_an_earlier_clean_adds_a_config_or_replaces_every_file(shared_datasets, tmp_path):
    src = tmp_path / "ds"
    for config in ("a", "b"):
        shutil.copytree(shared_datasets / "CogComp__trec" / "default", src / config)
    out = tmp_path / "out"
    clean(str(src), out=out, config="a")
    clean(str(src), out=out, config="b")  # same dataset, revision and profile: the manifest gains b
    manifest = json.loads((out / "manifest.json").read_text())
    assert set(manifest["configs"]) == {"a", "b"} and (out / "a/test/0000.parquet").is_file()
    clean(str(src), out=out, config="b", profile="raw")  # another profile: a's normalized file goes
    manifest = json.loads((out / "manifest.json").read_text())
    assert set(manifest["configs"]) == {"b"} and manifest["profile"] == "raw"
    assert not (out / "a").exists() and (out / "b/test/0000.parquet").is_file()


_words = st.lists(st.sampled_from(["river", "stone", "blue", "quiet", "paper", "seven", "glass", "north"]),
                  min_size=6, max_size=12).map(" ".join)


@pytest.mark.slow
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(_words, min_size=2, max_size=6), st.lists(st.tuples(st.sampled_from(["train", "validation", "test"]),
       st.integers(0, 5), st.sampled_from(["", ".", "!", " x"])), min_size=1, max_size=10))
def test_random_near_splits_drop_what_the_figure_counts(tmp_path_factory, sources, plants):
    """Texts and one-character edits of them planted in the three splits: the near clean drops
    exactly the rows test_rows_near_contaminated counts, all near-contaminated by the exhaustive
    reference, and an audit with the clean test counts none."""
    splits: dict[str, list[str]] = {"train": [sources[0]], "validation": [], "test": [sources[-1]]}
    for split, k, edit in plants:
        splits[split].append(sources[k % len(sources)] + edit)
    tmp = tmp_path_factory.mktemp("near")
    for split, texts in splits.items():
        if texts:
            (tmp / "ds" / "default" / split).mkdir(parents=True)
            pq.write_table(pa.table({"text": pa.array(texts, pa.string())}), tmp / "ds" / "default" / split / "0000.parquet")
    entry = clean(str(tmp / "ds"), out=tmp / "out", profile="near").configs["default"]
    audited = measure_config(FolderSource(tmp / "ds").load("default"), n_configs=1, source="folder", examples=0).rows[0]
    dropped = set(_manifest_dropped(entry))
    event(f"near rows dropped: {bool(entry['dropped']['near'])}")
    assert len(dropped) == audited["test_rows_near_contaminated"] == sum(entry["dropped"].values())
    rows = {s: [{"text": t} for t in texts] for s, texts in splits.items() if texts}
    assert dropped <= near_rows(rows, ["text"], None)["test_rows_near_contaminated"]
    if entry["rows_kept"]:
        assert _audit_with_clean_test(tmp / "ds", "default", tmp / "out", entry, tmp)["test_rows_near_contaminated"] == 0
