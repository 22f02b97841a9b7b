"""The tiers' lists in conftest name tests that exist, so a renamed test cannot slip back into the
README's tier unnoticed, and a test run keeps its caches out of the source tree."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from conftest import E2E_TESTS, EXHAUSTIVE_TESTS, ROOT, SLOW_TESTS, WHOLE_TESTS


@pytest.mark.parametrize("prefix", [*E2E_TESTS, *WHOLE_TESTS, *SLOW_TESTS, *EXHAUSTIVE_TESTS])
def test_every_tier_entry_names_an_existing_module_and_test(prefix):
    path, _, test = prefix.partition("::")
    module = ROOT / path
    assert module.is_file(), f"{prefix}: no such test module"
    if test:
        name = test.split("[")[0]
        assert re.search(rf"^def {re.escape(name)}\(", module.read_text(), re.MULTILINE), f"{prefix}: no such test"


def test_the_caches_a_test_run_writes_live_outside_the_source_tree():
    for variable in ("NUMBA_CACHE_DIR", "HYPOTHESIS_STORAGE_DIRECTORY", "HF_HOME", "HUBSURVEY_CACHE_DIR"):
        folder = Path(os.environ[variable]).resolve()
        assert not folder.is_relative_to(ROOT), f"{variable}={folder} is inside the source tree"
