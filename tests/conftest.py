"""Shared fixtures. Real data comes from ../shared/datasets; tests using it skip when it is absent."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

SHARED_DATASETS = Path(os.environ.get("HUBSURVEY_SHARED_DATASETS", Path(__file__).resolve().parents[2] / "shared" / "datasets"))


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
def _isolated_hf_home(tmp_path_factory, monkeypatch):
    """Never touch the user's huggingface cache, and never reach a real Hub from a test."""
    home = tmp_path_factory.getbasetemp() / "hf_home"
    monkeypatch.setenv("HF_HOME", str(home))
    monkeypatch.setenv("HF_HUB_CACHE", str(home / "hub"))
    monkeypatch.setenv("HF_HUB_DISABLE_TELEMETRY", "1")
    monkeypatch.delenv("HF_TOKEN", raising=False)
