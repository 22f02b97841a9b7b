"""A second adversarial pass: more hostile-Hub and hostile-dataset cases.

Every case runs ``hubsurvey audit`` as a user would and must end with either the correct figures
(those of the plain-Python reference, or the mini-hub's truth) or one clear ``error:`` line per
failure with a meaningful exit code: never a hang, a traceback, a wrong figure, a leaked token or
a file written outside its folder.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from hubsurvey.cli import app
from hubsurvey.core.errors import ExitCode
from hubsurvey.core.figures import figure_names
from hubsurvey.core.hub import HubClient
from hubsurvey.core.store import Store
from hubsurvey_standin import Faults, Scope, StandinHub
from hubsurvey_standin.reference import lle_reference

runner = CliRunner()
TOKEN = "hf_AdversarialSecret_2468013579"
TARGET = "mini-nlp/toy_ner"
FIGURES = figure_names()


def _truth(root: Path, dataset_id: str) -> dict[tuple[str, str | None], dict]:
    truth = json.loads((root / "truth.json").read_text())
    return {(m["config"], m["label_column"]): m["figures"] for m in truth["measurements"] if m["dataset_id"] == dataset_id}


def _stored(db: Path, dataset_id: str) -> dict[tuple[str, str | None], dict]:
    with Store(db, read_only=True) as store:
        rows = store.records("SELECT * FROM measurements WHERE dataset_id = $d", {"d": dataset_id})
    return {(r["config"], r["label_column"]): {f: r[f] for f in FIGURES} for r in rows}


def _same(got: dict, want: dict) -> bool:
    return all(
        (got[f] is None and want[f] is None) or (got[f] is not None and want[f] is not None and abs(got[f] - want[f]) < 1e-9)
        for f in want
    )


def _clean_failure(result, codes: set[int]) -> None:
    """A failure is error lines only (one per failed config), a documented code, no traceback."""
    assert result.exit_code in codes, (result.exit_code, result.output)
    assert "Traceback" not in result.output, result.output
    # log records of libraries may span lines (huggingface_hub's "Trying to resume download..."):
    # the command's own lines are the "error: " ones, and there must be at least one
    assert any(line.startswith("error: ") for line in result.stderr.splitlines()), result.stderr
    assert not any(line.startswith(("  File ", "Traceback")) for line in result.stderr.splitlines())
    assert TOKEN not in result.output


def _files_outside(tmp: Path, before: set[Path]) -> set[Path]:
    """New files in the parent of the test folder (a path escaping its folder would land there)."""
    return {p for p in tmp.parent.iterdir() if p not in before}


# --- a hostile Hub ------------------------------------------------------------------------------

# name -> (faults, expected: "figures" or a set of exit codes)
HUB_CASES: dict[str, tuple[Faults, object]] = {
    "slow_responses": (Faults(slow_ms=150), "figures"),
    "reset_every_third_request": (Faults(reset_every=3), "figures"),
    "429_every_other_request": (Faults(rate_limit_every=2, rate_limit_secs=0), "figures"),
    "500_bursts": (Faults(error_burst_every=4, error_burst_len=1, error_status=500), "figures"),
    "every_file_read_truncated": (Faults(truncate_every=1, scope=Scope(categories=frozenset({"resolve_get"}))),
                                  {ExitCode.BAD_INPUT, ExitCode.HUB}),
    "corrupt_parquet": (Faults(corrupt_parquet=(TARGET,)), {ExitCode.BAD_INPUT}),
    "503_storm_on_info": (Faults(error_burst_every=1, error_burst_len=1, error_status=503,
                                 scope=Scope(categories=frozenset({"info"}))), {ExitCode.HUB}),
    "echoing_401_on_tree": (Faults(error_burst_every=1, error_burst_len=1, error_status=401, echo_auth=True,
                                   scope=Scope(categories=frozenset({"tree", "parquet_api"}))), {ExitCode.HUB, ExitCode.BAD_INPUT}),
    "hang_on_file_reads": (Faults(hang_every=1, scope=Scope(categories=frozenset({"resolve_get"}))),
                           {ExitCode.HUB, ExitCode.BAD_INPUT}),
    "429_storm_on_file_reads": (Faults(rate_limit_every=1, rate_limit_secs=0, scope=Scope(categories=frozenset({"resolve_get"}))),
                                {ExitCode.HUB, ExitCode.BAD_INPUT}),
}


@pytest.mark.slow
@pytest.mark.parametrize("case", list(HUB_CASES))
def test_a_hostile_hub_gives_the_figures_or_one_line(minihub, tmp_path, monkeypatch, case):
    faults, expected = HUB_CASES[case]
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    monkeypatch.setenv("HUBSURVEY_CONNECT_TIMEOUT", "1")
    monkeypatch.setenv("HUBSURVEY_READ_TIMEOUT", "1")
    monkeypatch.setenv("HUBSURVEY_MAX_ATTEMPTS", "4")
    monkeypatch.setenv("HUBSURVEY_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    before = set(tmp_path.parent.iterdir())
    db = tmp_path / "r.duckdb"
    with StandinHub(minihub, faults=faults, valid_tokens={TOKEN}) as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        started = time.monotonic()
        result = runner.invoke(app, ["audit", TARGET, "--db", str(db)])
        elapsed = time.monotonic() - started
        injected = hub.stats()["faults_injected"]
    assert elapsed < 120, elapsed  # bounded: huggingface_hub resumes a download by itself inside each of our attempts
    assert _files_outside(tmp_path, before) == set()
    if expected == "figures":
        assert result.exit_code == 0, result.output
        assert TOKEN not in result.output
        want, got = _truth(minihub, TARGET), _stored(db, TARGET)
        assert set(got) == set(want) and all(_same(got[k], want[k]) for k in want)
        assert case == "slow_responses" or injected > 0
    else:
        _clean_failure(result, {int(c) for c in expected})


@pytest.mark.slow
def test_a_huge_retry_after_is_capped_by_max_wait(minihub, monkeypatch):
    """A 429 asking for 10^6 s does not stall the client: it waits at most ``max_wait``."""
    faults = Faults(rate_limit_every=2, rate_limit_secs=1_000_000, scope=Scope(categories=frozenset({"info"})))
    waits: list[float] = []
    sleep, caller = time.sleep, threading.get_ident()

    def recorded_sleep(seconds: float) -> None:  # the client's waits: this thread's (the stand-in serves on others)
        if threading.get_ident() == caller:
            waits.append(seconds)
        sleep(seconds)

    with StandinHub(minihub, faults=faults) as hub:
        client = HubClient(endpoint=hub.url, token=False, rate=0, file_rate=0, max_wait=0.2)
        with monkeypatch.context() as patched:
            patched.setattr(time, "sleep", recorded_sleep)
            shas = [client.dataset_info(TARGET).sha for _ in range(4)]
        refused = hub.stats()["faults_injected"]
    assert len(set(shas)) == 1 and refused >= 2
    assert len(waits) >= refused and max(waits) <= 0.2, waits  # a wait after each 429, none past max_wait


# --- odd names: dataset ids, config names, a file escaping its folder ----------------------------

@pytest.mark.parametrize("target", ["../../etc/passwd-like", "org/ds/../../x", "org/ds?x=1#y", "org/ds\nname", "org/" + "x" * 300])
@pytest.mark.slow
def test_an_odd_dataset_id_is_refused_in_one_line(minihub, tmp_path, monkeypatch, target):
    monkeypatch.chdir(tmp_path)
    before = set(tmp_path.parent.iterdir())
    with StandinHub(minihub) as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        monkeypatch.setenv("HUBSURVEY_MAX_ATTEMPTS", "1")
        result = runner.invoke(app, ["audit", target, "--db", str(tmp_path / "r.duckdb")])
    _clean_failure(result, {ExitCode.BAD_INPUT, ExitCode.HUB})
    assert _files_outside(tmp_path, before) == set()


@pytest.mark.parametrize("config", ["../../x", "..", "/etc", "default/../../x", "a\x00b"])
@pytest.mark.parametrize("where", ["hub", "folder"])
@pytest.mark.slow
def test_a_config_name_with_path_traversal_is_refused(minihub, tmp_path, monkeypatch, config, where):
    monkeypatch.chdir(tmp_path)
    before = set(tmp_path.parent.iterdir())
    target = TARGET if where == "hub" else str(minihub / "mini-nlp__toy_ner")
    with StandinHub(minihub) as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        result = runner.invoke(app, ["audit", target, "--config", config, "--db", str(tmp_path / "r.duckdb")])
    _clean_failure(result, {ExitCode.BAD_INPUT})
    assert _files_outside(tmp_path, before) == set()


@pytest.mark.slow
def test_a_split_file_symlinked_outside_the_folder_is_not_read(tmp_path):
    """A dataset folder whose test file is a symlink to a file outside it (a secret elsewhere)."""
    outside = tmp_path / "outside.parquet"
    pq.write_table(pa.table({"text": ["secret-row"]}), outside)
    folder = tmp_path / "org__linked"
    (folder / "default" / "train").mkdir(parents=True)
    (folder / "default" / "test").mkdir(parents=True)
    pq.write_table(pa.table({"text": ["a", "b"]}), folder / "default" / "train" / "0000.parquet")
    (folder / "default" / "test" / "0000.parquet").symlink_to(outside)
    result = runner.invoke(app, ["audit", str(folder), "--db", str(tmp_path / "r.duckdb"), "--examples", "3"])
    if result.exit_code == 0:  # measured as a local file the user owns: no content printed beyond examples
        assert "Traceback" not in result.output
    else:
        _clean_failure(result, {ExitCode.BAD_INPUT})


# --- hostile datasets not covered by test_hostile_data.py ----------------------------------------

def _folder(tmp: Path, splits: dict[str, object], config: str = "default") -> Path:
    folder = tmp / "hostile__ds2"
    for split, content in splits.items():
        out = folder / config / split
        out.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            (out / "0000.parquet").write_bytes(content)
        else:
            pq.write_table(content, out / "0000.parquet")
    return folder


def _t(**cols) -> pa.Table:
    return pa.table(cols)


DATA_CASES: dict[str, tuple[Callable[[], dict[str, object]], object]] = {
    # refusals: one line, exit 2
    "zero_byte_test_file": (lambda: {"train": _t(text=["a"]), "test": b""}, {ExitCode.BAD_INPUT}),
    "text_file_named_parquet": (lambda: {"train": _t(text=["a"]), "test": b"text,label\nhello,1\n"}, {ExitCode.BAD_INPUT}),
    "parquet_magic_only": (lambda: {"train": _t(text=["a"]), "test": b"PAR1PAR1"}, {ExitCode.BAD_INPUT}),
    "binary_text_column": (lambda: {"train": _t(text=pa.array([b"a", b"b"])), "test": _t(text=pa.array([b"a"]))},
                           {ExitCode.OK, ExitCode.BAD_INPUT}),
    "split_types_disagree": (lambda: {"train": _t(text=pa.array([1, 2])), "test": _t(text=["1"])}, {ExitCode.BAD_INPUT}),
    # figures
    "nul_characters_in_text": (lambda: {"train": _t(text=["a\x00b", "a", "a\x00"]), "test": _t(text=["a\x00b", "a\x00c", "a"])}, "figures"),
    "empty_train_split": (lambda: {"train": _t(text=pa.array([], pa.string())), "test": _t(text=["x", "x"])}, "figures"),
    "only_empty_strings": (lambda: {"train": _t(text=["", ""]), "test": _t(text=["", "x"])}, "figures"),
    "surrogate_like_and_rtl": (lambda: {"train": _t(text=["\u202eabc", "\ufeffx"]), "test": _t(text=["\u202eabc", "x"])}, "figures"),
    "trailing_whitespace_distinct": (lambda: {"train": _t(text=["a ", "a"]), "test": _t(text=["a", "a\t"])}, "figures"),
}


@pytest.mark.parametrize("case", list(DATA_CASES))
@pytest.mark.slow
def test_a_hostile_dataset_gives_the_figures_or_one_line(tmp_path, monkeypatch, case):
    make, expected = DATA_CASES[case]
    splits = make()
    folder = _folder(tmp_path, splits)
    monkeypatch.chdir(tmp_path)
    db = tmp_path / "r.duckdb"
    result = runner.invoke(app, ["audit", str(folder), "--db", str(db)])
    if expected == "figures":
        assert result.exit_code == 0, result.output
        rows = {s: t.to_pylist() for s, t in splits.items() if isinstance(t, pa.Table)}
        want = lle_reference(rows, ["text"], None)
        (got,) = _stored(db, "hostile/ds2").values()
        assert _same(got, want), (got, want)
    elif result.exit_code != 0:
        _clean_failure(result, {int(c) for c in expected})
    else:
        assert int(ExitCode.OK) in {int(c) for c in expected}
