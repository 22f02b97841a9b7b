"""Shared fixtures, the test tiers, and where a test run keeps its files (never in the source tree).

Real data comes from ../shared/datasets; tests using it skip when it is absent.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# A test run writes nothing into the source tree. The caches that would land there by default
# (hypothesis's example database and charmap beside the current folder, numba's compiled pass
# beside survey/passages.py) go to a folder of the temp dir kept from run to run, one per checkout
# (so numba does not compile again and hypothesis replays its failing examples); huggingface_hub's
# home and the survey's download cache go to a folder of this session, removed at its end.
# The variables are set before any test module imports numba, hypothesis's database or
# huggingface_hub (which read them once), and subprocesses of the tests inherit them.
_KEPT = Path(tempfile.gettempdir()) / f"hubsurvey-tests-{hashlib.sha1(str(ROOT).encode()).hexdigest()[:10]}"
os.environ.setdefault("NUMBA_CACHE_DIR", str(_KEPT / "numba"))
os.environ.setdefault("HYPOTHESIS_STORAGE_DIRECTORY", str(_KEPT / "hypothesis"))
_HF_HOME = tempfile.mkdtemp(prefix="hubsurvey-tests-hf-")
os.environ["HF_HOME"] = _HF_HOME
os.environ["HF_HUB_CACHE"] = os.path.join(_HF_HOME, "hub")
os.environ["HUBSURVEY_CACHE_DIR"] = os.path.join(_HF_HOME, "hubsurvey")  # the survey's own download cache
os.environ["HF_HUB_DISABLE_TELEMETRY"] = "1"
os.environ.pop("HF_TOKEN", None)

SHARED_DATASETS = Path(
    os.environ.get("HUBSURVEY_SHARED_DATASETS", Path(__file__).resolve().parents[2] / "shared" / "datasets")
)

# --- the tiers -------------------------------------------------------------------------------------
# fast   `pytest -m "not slow"`: under 30 s on 2 cores, for every edit.
# normal `pytest` (the README's command): the fast tier and the `slow` tests, about 5 minutes on
#        2 cores; the `e2e` tests are deselected by pyproject's addopts (`-m "not e2e"`).
# e2e    `pytest -m e2e`: the end-to-end tests, which CI runs as a step of its own.
# `pytest -m ""` runs everything. A test module marks its slow tests itself (`@pytest.mark.slow`);
# which tests are end to end is decided here, in one place: every test under one of these node id
# prefixes is marked `e2e` (and `slow`, so the fast tier never runs it). Each takes many seconds
# on 2 cores because it runs a whole survey, a subprocess, a cluster or a large generated Hub.
E2E_TESTS: dict[str, str] = {
    "tests/test_runner.py": "whole `hubsurvey run` surveys against the stand-in: kill -9 and resume, faults, Dask",
    "tests/test_watch.py": "a real `hubsurvey run` subprocess watched by status, sql and report",
    "tests/test_cli.py::test_demo_writes_only_into_its_own_folder": "the demo in a subprocess, as a new user runs it",
    "tests/test_no_secrets.py": "every command in a subprocess with a token set, its outputs searched",
    "tests/test_standin.py::test_full_listing_of_100k_is_fast": "the 100k-dataset listing",
    "tests/test_hostile_hub.py": "surveys through a stand-in that injects Hub faults",
    "tests/test_mixed_revisions.py": "surveys across a branch update between crawl and download",
    "tests/test_analysis_minihub.py": "a whole survey of the mini-hub, then every output",
}


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark the end-to-end tests (E2E_TESTS) `e2e` and `slow`."""
    for item in items:
        if any(item.nodeid == p or item.nodeid.startswith((p + "::", p + "[")) for p in E2E_TESTS):
            item.add_marker(pytest.mark.e2e)
            item.add_marker(pytest.mark.slow)


def pytest_unconfigure(config: pytest.Config) -> None:
    shutil.rmtree(_HF_HOME, ignore_errors=True)


@pytest.fixture(scope="session")
def shared_datasets() -> Path:
    if not (SHARED_DATASETS / "index.json").exists():
        pytest.skip("../shared/datasets is absent")
    return SHARED_DATASETS


def shared_index() -> list[dict]:
    """The shared index (empty when the folder is absent), for parametrising tests."""
    index = SHARED_DATASETS / "index.json"
    return json.loads(index.read_text()) if index.exists() else []


@pytest.fixture(autouse=True)
def _no_token(monkeypatch):
    """A test that needs HF_TOKEN sets it itself."""
    monkeypatch.delenv("HF_TOKEN", raising=False)
