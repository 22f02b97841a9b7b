"""`hubsurvey check`, the CI gate: exit codes and the exact lines, values equal to `audit --json`'s,
the JUnit XML (parsed, its counts and names, hostile names escaped, written atomically), the JSON
verdicts, a Hub id through the stand-in, benchmarks against the mini-hub's truth, bad input's own
codes, and the integration files (pre-commit hook, the docs' GitHub Actions workflow)."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from conftest import ROOT
from typer.testing import CliRunner

from hubsurvey.cli import app
from hubsurvey.core.errors import ExitCode
from hubsurvey.core.safety import visible
from hubsurvey.survey import check as gate

REPO = ROOT
runner = CliRunner()


def write_split(folder: Path, texts: list[str], labels: list[int], label: str = "label") -> None:
    features = {"text": {"dtype": "string", "_type": "Value"}, label: {"names": ["a", "b"], "_type": "ClassLabel"}}
    table = pa.table({"text": pa.array(texts, pa.string()), label: pa.array(labels, pa.int64())})
    table = table.replace_schema_metadata({b"huggingface": json.dumps({"info": {"features": features}}).encode()})
    folder.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, folder / "0000.parquet")


def plant(root: Path, config: str = "default", label: str = "label") -> Path:
    """A config whose figures are counted by hand below (6 test rows):
    normalized: alpha one x2 (one written ALPHA  one), beta two in train, zeta six in validation, and
    gamma three repeated: 5 contaminated (83.333%); ALPHA  one (label 1) is in train only with label
    0: 1 conflicting (16.667%). raw: ALPHA  one matches nothing: 4 contaminated (66.667%), 0 conflicting."""
    write_split(root / config / "train", ["alpha one", "beta two", "beta two", "epsilon five"], [0, 0, 1, 0], label)
    write_split(root / config / "validation", ["zeta six"], [0], label)
    write_split(root / config / "test", ["alpha one", "ALPHA  one", "beta two", "gamma three", "zeta six", "gamma three"],
                [0, 1, 1, 0, 0, 0], label)
    return root


@pytest.fixture
def planted(tmp_path) -> Path:
    return plant(tmp_path / "org__gate")


def invoke(*args: str):
    return runner.invoke(app, ["check", *map(str, args)])


# --- the verdicts and their exit codes -------------------------------------------------------------

@pytest.mark.slow
def test_a_failing_check_exits_6_with_one_exact_line_per_failed_condition(planted):
    result = invoke(planted, "--max-contaminated", 70, "--max-conflicting", 10)
    assert result.exit_code == ExitCode.CHECK_FAILED == 6, result.output
    assert result.stdout.splitlines() == [
        "FAIL org/gate [default] label=label: normalized_contaminated_test_pct = 83.333% above the limit 70%",
        "FAIL org/gate [default] label=label: normalized_test_rows_in_train_conflicting_label_pct = 16.667% above the limit 10%",
        "check failed: 2 of 2 condition(s) above their limit (org/gate; profile normalized; limits: contaminated 70%, conflicting 10%)",
    ]
    assert result.stderr == ""


@pytest.mark.slow
def test_a_passing_check_exits_0_and_the_profile_picks_the_figure(planted):
    result = invoke(planted, "--profile", "raw", "--max-contaminated", 70, "--max-conflicting", 10)
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [
        "ok   org/gate [default] label=label: raw_contaminated_test_pct = 66.667% within the limit 70%",
        "ok   org/gate [default] label=label: raw_test_rows_in_train_conflicting_label_pct = 0% within the limit 10%",
        "check passed: 2 condition(s) within their limit (org/gate; profile raw; limits: contaminated 70%, conflicting 10%)",
    ]


@pytest.mark.slow
@pytest.mark.parametrize("near", [[], ["--no-near"]])
def test_the_stored_rows_are_audits(planted, tmp_path, near):
    checked, audited = tmp_path / "c.duckdb", tmp_path / "a.duckdb"
    assert invoke(planted, *near, "--max-contaminated", 90, "--db", checked).exit_code == 0
    assert runner.invoke(app, ["audit", str(planted), *near, "--db", str(audited)]).exit_code == 0
    from hubsurvey.core.store import Store

    def stored(db):
        with Store(db, read_only=True) as store:
            return store.records("SELECT * EXCLUDE (measured_at, run_id) FROM measurements")

    assert stored(checked) == stored(audited)
    assert (stored(checked)[0]["near_contaminated_test_pct"] is None) == bool(near)


@pytest.mark.slow
def test_a_folder_can_be_named_by_its_hub_id(planted):
    result = invoke(planted, "--max-contaminated", 70, "--dataset-id", "me/my-dataset")
    assert result.stdout.splitlines()[0].startswith("FAIL me/my-dataset [default] label=label:")


@pytest.mark.slow
def test_a_value_equal_to_its_limit_holds(planted):
    # 5 of 6 test rows: 83.333...%, above 83.333 (compared on the counts, not the rounded 83.333)
    assert invoke(planted, "--max-contaminated", 83.334).exit_code == 0
    assert invoke(planted, "--max-contaminated", 83.333).exit_code == 6
    row = {"config": "c", "label_column": None, "normalized_contaminated_test_pct": 25.0,
           "normalized_test_rows_contaminated": 1, "rows_test": 4}
    assert [v.status for v in gate.verdicts_of([row], [], {"contaminated": 25.0})] == ["pass"]
    assert [v.status for v in gate.verdicts_of([row], [], {"contaminated": 24.999})] == ["fail"]


@pytest.mark.slow
def test_nothing_is_stored_unless_asked(planted, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert invoke(planted, "--max-near", 100).exit_code == 0
    assert not list(tmp_path.glob("*.duckdb"))
    db = tmp_path / "kept.duckdb"
    assert invoke(planted, "--max-near", 100, "--db", db).exit_code == 0
    from hubsurvey.core.store import Store

    with Store(db, read_only=True) as store:
        assert store.query("SELECT count(*) FROM measurements")[1][0][0] == 1


AUDIT_KEYS = {  # condition -> where audit --json prints the figure, under profile p
    "contaminated": lambda o, p: o["exact"][p]["contaminated_test_pct"],
    "near": lambda o, p: o["near"]["near_contaminated_test_pct"],
    "conflicting": lambda o, p: o["exact"][p]["test_rows_in_train_conflicting_label_pct"],
}


@pytest.mark.slow
@pytest.mark.parametrize("profile", ["normalized", "raw"])
def test_the_values_are_audit_json_figures_on_a_shared_config(shared_datasets, tmp_path, profile):
    target = shared_datasets / "CogComp__trec"
    audited = runner.invoke(app, ["audit", str(target), "--json", "--db", str(tmp_path / "a.duckdb")])
    assert audited.exit_code == 0, audited.output
    objs = json.loads(audited.stdout)
    result = invoke(target, "--profile", profile, "--max-contaminated", 1, "--max-near", 5, "--max-conflicting", 0.1,
                    "--format", "json")
    assert result.exit_code == 6, result.output
    got = json.loads(result.stdout)
    expected = [(o["config"], o["label_column"], name, AUDIT_KEYS[name](o, profile))
                for o in objs for name in ("contaminated", "near", "conflicting")]
    assert [(c["config"], c["label_column"], c["condition"], c["value"]) for c in got["conditions"]] == expected
    limits = {"contaminated": 1, "near": 5, "conflicting": 0.1}
    assert all(c["status"] == ("fail" if c["value"] > limits[c["condition"]] else "pass") for c in got["conditions"])
    assert {c["label_column"] for c in got["conditions"]} == {"coarse_label", "fine_label"}
    assert got["failed"] == sum(c["status"] == "fail" for c in got["conditions"]) > 0


@pytest.mark.slow
def test_json_output_has_a_stable_key_order_and_the_provenance(planted):
    result = invoke(planted, "--max-contaminated", 90, "--max-near", 1, "--format", "json")
    assert result.exit_code == 6
    got = json.loads(result.stdout)
    assert list(got) == ["dataset_id", "passed", "exit_code", "profile", "limits", "revisions", "text_columns",
                         "tool_version", "methods", "checks", "conditions", "failed", "errors"]
    assert got["text_columns"] == {"default": ["text"]}
    assert got["methods"] == {"exact-2026": 1, "groups-2026": 1, "lle-2024": 1, "near-2026": 1, "rows-2026": 1,
                              "time-2026": 1}
    assert [c["check"] for c in got["checks"]["default"] if c["ran"]] == ["lle", "exact_raw", "exact_normalized",
                                                                          "near", "blank_rows"]
    assert got["passed"] is False and got["exit_code"] == 6 and got["limits"] == {"contaminated": 90.0, "near": 1.0}
    assert list(got["revisions"]) == ["default"] and len(got["revisions"]["default"]) > 0
    first, near = got["conditions"]
    assert list(first) == ["config", "label_column", "condition", "figure", "value", "limit", "status", "reason"]
    assert first == {"config": "default", "label_column": "label", "condition": "contaminated",
                     "figure": "normalized_contaminated_test_pct", "value": 83.333, "limit": 90.0, "status": "pass",
                     "reason": None}
    # near >= exact (an exact copy has Jaccard 1): above 1%
    assert near["condition"] == "near" and near["value"] >= 83.333 and near["status"] == "fail"
    assert invoke(planted, "--max-contaminated", 90, "--max-near", 1, "--format", "json").stdout == result.stdout


@pytest.mark.slow
def test_an_nr_figure_is_skipped_not_failed(tmp_path):
    root = tmp_path / "org__unlabelled"
    for split, texts in (("train", ["one two", "three"]), ("test", ["one two", "four"])):
        folder = root / "default" / split
        folder.mkdir(parents=True)
        pq.write_table(pa.table({"text": texts}), folder / "0000.parquet")
    junit = tmp_path / "out" / "junit.xml"
    result = invoke(root, "--max-conflicting", 0, "--max-contaminated", 50, "--junit", junit)
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[:2] == [
        "ok   org/unlabelled [default]: normalized_contaminated_test_pct = 50% within the limit 50%",
        "skip org/unlabelled [default]: normalized_test_rows_in_train_conflicting_label_pct = NR, not tested against "
        "the limit 0% (no label column)",
    ]
    suite = ET.parse(junit).getroot().find("testsuite")
    assert (suite.get("tests"), suite.get("failures"), suite.get("skipped")) == ("2", "0", "1")
    assert suite.findall("testcase")[1].find("skipped").get("message") == "NR: no label column"


# --- JUnit XML ----------------------------------------------------------------------------------------

@pytest.mark.slow
def test_junit_has_one_testcase_per_config_label_and_condition(tmp_path):
    root = plant(tmp_path / "org__two", "first")
    plant(root, "second")
    junit = tmp_path / "junit.xml"
    result = invoke(root, "--max-contaminated", 70, "--max-near", 100, "--max-conflicting", 20, "--junit", junit)
    assert result.exit_code == 6
    top = ET.parse(junit).getroot()
    assert top.tag == "testsuites" and (top.get("tests"), top.get("failures"), top.get("errors")) == ("6", "2", "0")
    (suite,) = top.findall("testsuite")
    assert suite.get("name") == "hubsurvey check org/two"
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors"), suite.get("skipped")) == ("6", "2", "0", "0")
    cases = suite.findall("testcase")
    assert [(c.get("classname"), c.get("name")) for c in cases] == [
        (f"org/two.{config}", f"{condition}[label]: {figure}")
        for config in ("first", "second")
        for condition, figure in (("contaminated", "normalized_contaminated_test_pct"),
                                  ("near", "near_contaminated_test_pct"),
                                  ("conflicting", "normalized_test_rows_in_train_conflicting_label_pct"))]
    failures = [(c.get("classname"), c.find("failure")) for c in cases if c.find("failure") is not None]
    assert [(where, f.get("type"), f.get("message")) for where, f in failures] == [
        (f"org/two.{config}", "contaminated",
         f"org/two [{config}] label=label: normalized_contaminated_test_pct = 83.333% above the limit 70%")
        for config in ("first", "second")]
    props = {p.get("name"): p.get("value") for p in suite.find("properties")}
    assert props["profile"] == "normalized" and props["limit.contaminated"] == "70" and "revision.first" in props
    assert props["text_columns.second"] == "text" and props["method.exact-2026"] == "1"
    # what was checked on each config, and what was not
    assert props["checked.first.exact_normalized"] == "ran" and props["checked.second.near"] == "ran: threshold 0.8"
    assert props["checked.first.contamination"] == "not run: no benchmarks given"
    assert props["checked.first.groups"].startswith("not run: no group column")
    # the failure lines on stdout are the failures' messages
    assert [line.removeprefix("FAIL ") for line in result.stdout.splitlines() if line.startswith("FAIL")] == \
        [f.get("message") for _, f in failures]


@pytest.mark.slow
def test_junit_escapes_markup_quotes_and_control_characters(tmp_path):
    config, label = "c<&\"'>\x1b[2J\x07", "lab<&\"el"
    root = plant(tmp_path / "org__hostile", config, label)
    junit = tmp_path / "junit.xml"
    result = invoke(root, "--max-contaminated", 1, "--junit", junit)
    assert result.exit_code == 6, result.output
    raw = junit.read_bytes()
    assert b"\x1b" not in raw and b"\x07" not in raw  # not even escaped: XML 1.0 cannot hold them
    case = ET.parse(junit).getroot().find("testsuite/testcase")  # parses: every name was escaped
    assert case.get("classname") == f"org/hostile.{visible(config, one_line=True)}"
    assert case.get("name") == f"contaminated[{label}]: normalized_contaminated_test_pct"
    assert case.find("failure").get("message").startswith(f"org/hostile [{visible(config, one_line=True)}] label={label}:")


@pytest.mark.slow
def test_junit_is_written_atomically(planted, tmp_path, monkeypatch):
    junit = tmp_path / "junit.xml"
    junit.write_text("<old/>")

    def broken(self, out, **kwargs):
        out.write(b"<testsuites><testsuite")  # half a file, then the disk fills
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(ET.ElementTree, "write", broken)
    result = invoke(planted, "--max-contaminated", 1, "--junit", junit)
    assert result.exit_code == 2
    assert result.stderr == f"error: {junit}: cannot write the JUnit file: [Errno 28] No space left on device\n"
    assert junit.read_text() == "<old/>" and sorted(p.name for p in tmp_path.iterdir()) == ["junit.xml", "org__gate"]


# --- errors keep their own codes -----------------------------------------------------------------------

@pytest.mark.slow
def test_bad_options_are_usage_errors_before_anything_is_measured(planted):
    cases = {
        (): "error: nothing to check: give at least one of --max-contaminated, --max-near, --max-conflicting or --benchmarks FILE",
        ("--max-near", "120"): "error: --max-near is a percentage: between 0 and 100, not 120",
        ("--max-contaminated", "-1"): "error: --max-contaminated is a percentage: between 0 and 100, not -1",
        ("--max-near", "1", "--profile", "lower"): "error: --profile must be one of raw, normalized, not 'lower'",
        ("--max-benchmark", "1"): "error: --max-benchmark needs --benchmarks FILE (the benchmarks to check against)",
        ("--max-near", "1", "--format", "xml"): "error: --format must be one of text, json, not 'xml'",
        ("--max-near", "1", "--no-near"): "error: --no-near skips the near-duplicate figures; it contradicts --max-near",
    }
    for args, line in cases.items():
        result = invoke(planted, *args)
        assert (result.exit_code, result.stderr, result.stdout) == (2, line + "\n", ""), args


@pytest.mark.slow
def test_bad_input_keeps_its_code_and_still_gets_a_junit_report(tmp_path):
    junit = tmp_path / "junit.xml"
    missing = tmp_path / "nope" / "..x"
    result = invoke(missing, "--max-contaminated", 1, "--junit", junit)
    assert result.exit_code == 2 and result.stderr == f"error: {missing}: neither a folder nor a Hub id\n"
    suite = ET.parse(junit).getroot().find("testsuite")
    assert (suite.get("tests"), suite.get("errors"), suite.get("failures")) == ("1", "1", "0")
    assert suite.find("testcase/error").get("message") == f"{missing}: neither a folder nor a Hub id"
    root = tmp_path / "org__notest"
    write_split(root / "default" / "train", ["a"], [0])
    result = invoke(root, "--max-contaminated", 1)
    assert result.exit_code == 2 and result.stderr == "error: org/notest [default]: no test split (found: train)\n"


@pytest.mark.slow
def test_a_config_that_fails_makes_the_check_partial_not_passed(tmp_path):
    root = plant(tmp_path / "org__mixed", "ok")
    write_split(root / "broken" / "train", ["a"], [0])
    junit = tmp_path / "junit.xml"
    result = invoke(root, "--max-contaminated", 100, "--junit", junit)
    assert result.exit_code == ExitCode.PARTIAL  # every measured condition holds, but a config was not measured
    assert result.stdout.splitlines()[-1].startswith("check incomplete: 1 error(s); 0 of 1 condition(s) failed")
    assert result.stderr == "error: org/mixed [broken]: no test split (found: train)\n"
    suite = ET.parse(junit).getroot().find("testsuite")
    assert (suite.get("tests"), suite.get("errors"), suite.get("failures")) == ("2", "1", "0")


# --- a Hub id, through the stand-in ------------------------------------------------------------------

def test_a_hub_id_is_checked_through_the_standin(shared_datasets, tmp_path, monkeypatch):
    from hubsurvey_standin import StandinHub

    monkeypatch.setenv("HUBSURVEY_CACHE_DIR", str(tmp_path / "cache"))
    args = ("--max-contaminated", 2, "--max-conflicting", 1, "--format", "json")
    local = json.loads(invoke(shared_datasets / "CogComp__trec", *args).stdout)
    with StandinHub(shared_datasets) as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        result = invoke("CogComp/trec", *args)
        missing = invoke("nobody/nothing", "--max-contaminated", 1)
        bad_config = invoke("CogComp/trec", "--config", "nope", "--max-contaminated", 1)
    assert result.exit_code == 6, result.output
    got = json.loads(result.stdout)
    assert got["dataset_id"] == "CogComp/trec" and len(got["revisions"]["default"]) == 40
    assert [(c["figure"], c["value"], c["status"]) for c in got["conditions"]] == \
        [(c["figure"], c["value"], c["status"]) for c in local["conditions"]]
    assert missing.exit_code == 2 and re.fullmatch(r"error: nobody/nothing: .+\n", missing.stderr)
    assert bad_config.exit_code == 2 and "CogComp/trec [nope]: no such config" in bad_config.stderr


def test_an_unreachable_hub_is_a_hub_error(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # nothing listens on the discard port
    result = invoke("org/name", "--max-contaminated", 1)
    assert result.exit_code == ExitCode.HUB and len(result.stderr.strip().splitlines()) == 1


@pytest.mark.slow
def test_benchmarks_are_checked_against_the_minihub_truth(tmp_path, monkeypatch):
    from hubsurvey_standin import StandinHub, generate_minihub
    from hubsurvey_standin.minihub import BENCHMARKS

    root = generate_minihub(tmp_path / "hub", seed=0)
    truth = json.loads((root / "truth.json").read_text())
    bench_file = tmp_path / "benchmarks.toml"
    bench_file.write_text("".join(
        f"[[benchmark]]\nid = {json.dumps(b['id'])}\nconfig = {json.dumps(b['config'])}\n"
        f"split = {json.dumps(b['split'])}\ntext_columns = {json.dumps(b['text_columns'])}\n\n" for b in BENCHMARKS))
    monkeypatch.setenv("HUBSURVEY_CACHE_DIR", str(tmp_path / "cache"))
    db = tmp_path / "r.duckdb"
    with StandinHub(root) as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        result = invoke("mini-nlp/reviews_valid", "--benchmarks", bench_file, "--format", "json", "--db", db)
        lenient = invoke("mini-nlp/reviews_valid", "--benchmarks", bench_file, "--max-benchmark", 100)
    assert result.exit_code == 6, result.output
    got = json.loads(result.stdout)
    assert got["limits"] == {"benchmark": 0.0}  # a benchmarks file alone: any contaminated row fails
    expected = {(t["split"], t["benchmark_id"]): t["contaminated_rows"] for t in truth["contamination"]
                if t["dataset_id"] == "mini-nlp/reviews_valid"}
    from hubsurvey.core.store import Store

    with Store(db, read_only=True) as store:
        stored = {(r["split"], r["benchmark_id"]): (r["contaminated_rows"], round(r["contaminated_pct"], 3), r["split_name"])
                  for r in store.records("SELECT * FROM contamination")}
        benchmarks = store.records("SELECT benchmark_id, status FROM benchmarks ORDER BY ALL")
    assert {k: rows for k, (rows, _, _) in stored.items()} == expected  # the planted truth
    by_name = {(name, bench): (rows, pct) for (_, bench), (rows, pct, name) in stored.items()}
    assert [b["status"] for b in benchmarks] == ["indexed", "indexed"]
    conditions = [c for c in got["conditions"] if c["condition"] == "benchmark"]
    assert len(conditions) == len(expected) and all(c["label_column"] is None for c in conditions)
    for c in conditions:
        split, bench = re.fullmatch(r"contaminated_pct\[(\w+)\] vs (\S+) \[default/test\]", c["figure"]).groups()
        rows, pct = by_name[split, bench]  # the dataset's own split name ("valid")
        assert c["value"] == pct and c["status"] == ("fail" if rows else "pass")
    assert lenient.exit_code == 0, lenient.output


# --- the pure parts --------------------------------------------------------------------------------------

def test_verdicts_are_a_pure_function_of_the_rows():
    row = {"config": "c", "label_column": "l", "normalized_contaminated_test_pct": 12.34567,
           "raw_contaminated_test_pct": 1.0, "near_contaminated_test_pct": None, "near": {"status": "not measured"}}
    got = gate.verdicts_of([row], [], {"contaminated": 12.346, "near": 0.0})
    assert [(v.figure, v.value, v.status, v.reason) for v in got] == [
        ("normalized_contaminated_test_pct", 12.346, "pass", None),  # no counts in the row: its percentage
        ("near_contaminated_test_pct", None, "skipped", "near-duplicates not measured")]
    assert gate.verdicts_of([row], [], {"contaminated": 0.5}, profile="raw")[0].status == "fail"


# --- integration files -----------------------------------------------------------------------------------

def test_the_pre_commit_hook_calls_hubsurvey_check():
    (hook,) = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())
    assert hook["id"] == "hubsurvey-check" and hook["language"] == "python"
    assert hook["entry"] == "hubsurvey check" and hook["pass_filenames"] is False
    assert any(a.startswith("--max-") for a in hook["args"])


def test_the_docs_github_workflow_parses_and_calls_hubsurvey_check():
    text = (REPO / "docs" / "check.md").read_text()
    blocks = re.findall(r"```yaml\n(.*?)```", text, re.DOTALL)
    workflows = [w for w in map(yaml.safe_load, blocks) if isinstance(w, dict) and "jobs" in w]
    assert len(workflows) == 1
    steps = [s for job in workflows[0]["jobs"].values() for s in job["steps"]]
    runs = [s["run"] for s in steps if "run" in s]
    assert any(line.strip().startswith("hubsurvey check ") for r in runs for line in r.splitlines())
    assert any("junit" in json.dumps(s) for s in steps if "uses" in s)  # the report is kept


# --- the Hub's faults and the token ------------------------------------------------------------------------

@pytest.mark.slow
def test_an_echoed_token_reaches_no_output_and_a_hostile_hub_is_a_hub_fault(shared_datasets, tmp_path, monkeypatch):
    from hubsurvey_standin import Faults, Scope, StandinHub

    secret = "hf_check_planted_token_8c1d2e3f4a5b"
    monkeypatch.setenv("HF_TOKEN", secret)
    monkeypatch.setenv("HUBSURVEY_MAX_ATTEMPTS", "2")
    junit, db = tmp_path / "junit.xml", tmp_path / "r.duckdb"
    # a careless proxy: the dataset's info is refused with the request's Authorization header in the body
    echo = Faults(error_burst_every=1, error_burst_len=1, error_status=403, echo_auth=True,
                  scope=Scope(categories=frozenset({"info"}), dataset="CogComp/trec"))
    with StandinHub(shared_datasets, faults=echo, valid_tokens={secret}) as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        refused = invoke("CogComp/trec", "--max-contaminated", 1, "--junit", junit, "--db", db)
        audited = runner.invoke(app, ["audit", "CogComp/trec", "--db", str(tmp_path / "a.duckdb")])
    # the refusal is classified as audit classifies it (the Hub kept refusing the config's files)
    assert refused.exit_code == audited.exit_code == ExitCode.HUB, refused.output
    assert refused.stderr == audited.stderr and refused.stderr.startswith("error: CogComp/trec [default]: ")
    assert len(refused.stderr.strip().splitlines()) == 1 and "***" in refused.stderr
    assert secret not in refused.output + refused.stderr and secret.encode() not in junit.read_bytes()
    assert ET.parse(junit).getroot().find("testsuite/testcase/error") is not None
    html = Faults(hostile_every=1, hostile="html", scope=Scope(dataset="CogComp/trec"))
    with StandinHub(shared_datasets, faults=html) as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        faulty = invoke("CogComp/trec", "--max-contaminated", 1, "--junit", junit)
    assert faulty.exit_code == ExitCode.HUB, faulty.output
    assert len(faulty.stderr.strip().splitlines()) == 1 and secret not in faulty.stderr
