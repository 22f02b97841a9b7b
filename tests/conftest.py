"""Shared fixtures. Real data comes from ../shared/datasets; tests using it skip when it is absent."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import pytest

# huggingface_hub reads these once, at import: set them before any test module imports it, so that
# no test touches the user's cache or sends telemetry.
_HF_HOME = tempfile.mkdtemp(prefix="hubsurvey-tests-hf-")
os.environ["HF_HOME"] = _HF_HOME
os.environ["HF_HUB_CACHE"] = os.path.join(_HF_HOME, "hub")
os.environ["HUBSURVEY_CACHE_DIR"] = os.path.join(_HF_HOME, "hubsurvey")  # the survey's own download cache
os.environ["HF_HUB_DISABLE_TELEMETRY"] = "1"
os.environ.pop("HF_TOKEN", None)

SHARED_DATASETS = Path(
    os.environ.get("HUBSURVEY_SHARED_DATASETS", Path(__file__).resolve().parents[2] / "shared" / "datasets")
)


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
