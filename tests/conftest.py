"""Shared fixtures, the test tiers, and where a test run keeps its files (never in the source tree).

Real data comes from ../shared/datasets; tests using it skip when it is absent.

The test modules sit in folders mirroring the code: tests/core, tests/crawler, tests/survey,
tests/analysis, tests/pipeline (the runner), tests/commands (the CLI and its commands) and
tests/standin, each module in the folder of the package it mostly covers. The helpers they share
stay here, in tests/ (this file's fixtures and ``standin_client``, ``leaks``, the references, the
planted datasets of ``test_analysis_fixtures``), importable from any folder (pyproject's
``pythonpath``); a module name is unique across the folders.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

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
# fast     `pytest -n auto -m "not slow"`: for every edit, within 30 s on 2 cores. So a test that
#          starts the stand-in, a subprocess, Dask or a survey is slow, and so is one that runs a
#          compiled pass (numba: every audit and measurement, and a fixture built by audits): on a
#          fresh checkout numba compiles its passes first (half a minute), never in the fast tier.
# default  `pytest -n auto` (the README's command): the fast tier and the `slow` tests, about 5
#          minutes on 2 cores: every module, the stand-in, the CLI and the outputs, on real data.
#          `-n auto` (pytest-xdist) runs them on one worker process per core: most of the slow
#          tests wait on a stand-in, a subprocess or a file as much as they compute.
# ci       what the default leaves out (pyproject's addopts deselect it), two CI steps of their own:
#          `pytest -n auto -m "(exhaustive or whole) and not e2e"` (neither times anything: one
#          worker per core), then `pytest -m e2e`, one test at a time (its quota windows and
#          deadlines are timed). `pytest -m ""` runs everything.
# A test module marks its slow tests itself (`@pytest.mark.slow`). Which slow tests only CI runs is
# decided here, in one place, by node id prefix (a module, a test, or one parametrization):
#   E2E_TESTS         whole surveys, subprocesses, clusters, injected faults: every test under the
#                     prefix is marked `e2e` (and `slow`, so the fast tier never runs it);
#   WHOLE_TESTS       a whole command chain over a survey that times nothing (every command the docs
#                     give, a push to the stand-in, a survey under a cache budget, a report, results
#                     dataset, site and notify of one survey): marked `whole` and `slow`. Each leaves
#                     a lighter test of the same code in README's command (a dry run beside a push,
#                     one hostile tag of four), so that the newcomer's command takes about 5 minutes;
#   EXHAUSTIVE_TESTS  the oracle sweeps over every shared config (or every code point): only the
#                     tests under the prefix that are already `slow` are marked `exhaustive`, so a
#                     sweep's fast parametrizations stay in the fast tier, and its parametrizations
#                     marked `sample` as well as `slow` stay in README's command.
# Durations measured with `--durations=0` on 2 shared cores (load average 10), end to end.
E2E_TESTS: dict[str, str] = {
    "tests/pipeline/test_runner.py": "whole `hubsurvey run` surveys: kill -9 and resume, faults, Dask, timeouts (200 s)",
    "tests/commands/test_watch.py": "a real `hubsurvey run` subprocess watched by status, sql and report",
    "tests/commands/test_no_secrets.py": "every command in a subprocess with a planted token, its outputs searched (130 s)",
    "tests/core/test_adversarial.py::test_a_hostile_hub_gives_the_figures_or_one_line": "10 hostile stand-ins (140 s)",
    "tests/core/test_hostile_hub.py": "surveys through a stand-in that injects Hub faults",
    "tests/pipeline/test_mixed_revisions.py": "surveys across a branch update between crawl and download",
    "tests/analysis/test_analysis_minihub.py": "a whole survey of the mini-hub, then every output",
    "tests/commands/test_cli.py::test_demo_writes_only_into_its_own_folder": "the demo in a subprocess, as a new user runs it",
    "tests/core/test_hostile_inputs.py::test_the_demo_runs_with_offline_mode_set": "the demo in a subprocess under HF_HUB_OFFLINE=1",
    "tests/commands/test_newcomer.py::test_after_the_one_time_compile_a_two_text_column_job_compiles_nothing":
        "the one-time compile into a fresh numba cache, then a job in a subprocess (40 s)",
    "tests/standin/test_standin.py::test_full_listing_of_100k_is_fast": "the 100k-dataset listing, timed",
    "tests/analysis/test_publish.py::test_publish_end_to_end_against_the_standin": "build, push and re-push to the stand-in",
    "tests/survey/test_contamination.py::test_a_run_with_benchmarks_stores_the_truth_and_the_command_agrees": "a whole run",
    "tests/survey/test_contamination.py::test_the_13gram_scan_runs_as_dask_tasks": "a Dask LocalCluster",
    "tests/survey/test_local_benchmarks.py::test_a_run_and_the_command_keep_the_private_items_on_the_machine": "a whole run (105 s)",
    "tests/pipeline/test_signals.py": "a demo and a run stopped by real signals in subprocesses, then resumed (60 s)",
    "tests/survey/test_hostile_runs.py": "whole surveys against hostile stand-ins: shared files, removed configs, SIGTERM (60 s)",
    "tests/analysis/test_site.py::test_the_demo_db_builds_a_site_whose_figures_equal_the_db": "the demo's whole survey, then its site",
    "tests/analysis/test_site.py::test_a_shard_page_holding_every_dataset_of_the_demo_has_no_duplicate_id":
        "the demo's whole survey, then its site on one shard page",
    "tests/survey/test_exposure.py::test_runs_list_the_models_once_and_again_when_a_revision_changes": "three whole runs",
    "tests/analysis/test_history_nights.py": "two nights of the mini-hub survey with benchmarks, a commit between them (40 s at load 5, 230 s at load 10)",
    "tests/survey/test_cache.py::test_a_survey_with_a_small_budget_never_goes_over_it": "two whole surveys under a cache budget (10 s)",
    "tests/core/test_transport.py::test_a_crawl_holds_the_quota_of_a_compressed_clock_with_no_429_after_the_first_window":
        "quota windows on a compressed clock, waited out (5 s)",
    "tests/core/test_transport.py::test_a_stream_of_calls_holds_the_quota_with_no_429_after_the_first_window":
        "quota windows on a compressed clock, waited out (5 s)",
    "tests/core/test_transport.py::test_a_hub_scale_crawl_holds_both_buckets_of_a_compressed_clock_with_no_429_after_the_first_window":
        "a Hub-scale crawl over quota windows on a compressed clock (4 s)",
    "tests/analysis/test_site_browser.py::test_only_the_rows_in_view_are_drawn_and_every_chunk_loads": "Chromium scrolling three data chunks (6 s)",
    "tests/survey/test_cluster.py::test_an_unreachable_scheduler_ends_the_run_before_the_crawl": "a run refused before its crawl (25 s)",
    "tests/survey/test_cluster.py::test_three_workers_hold_one_resolver_quota_with_no_429_after_the_first_window":
        "three Dask worker processes under quota windows of 15 s (2 min)",
    "tests/survey/test_cluster.py::test_the_run_deadline_and_the_breaker_hold_across_the_cluster": "a cluster run ended by the breaker (30 s)",
    "tests/survey/test_cluster.py::test_file_rate_is_one_pace_for_the_whole_cluster": "a cluster run at --file-rate 3 (30 s)",
    "tests/survey/test_cluster.py::test_a_crawl_during_the_measurement_draws_on_the_cluster_quota_with_the_workers":
        "a cluster run crawling during its measurement, under quota windows of 3 s (30 s)",
    "tests/survey/test_cluster.py::test_a_job_past_its_memory_ceiling_is_stopped_and_recorded_as_locally": "a cluster run (40 s)",
    "tests/survey/test_cluster.py::test_a_job_past_its_timeout_is_stopped_and_the_worker_takes_the_next":
        "two cluster runs, one job stopped at its timeout (80 s)",
    "tests/core/test_transport.py::test_max_hours_bounds_a_wait_for_the_quota_reset": "a run bounded by --max-hours (15 s)",
    "tests/core/test_transport.py::test_crawl_max_hours_bounds_the_crawl_and_a_wait_for_the_quota": "a crawl bounded by --max-hours (15 s)",
}
# Durations measured with `--durations=0` under README's command (2 cores, 2026-12-07).
WHOLE_TESTS: dict[str, str] = {
    "tests/commands/test_doc_commands.py::test_the_read_commands_and_notifys_commands_run_as_written":
        "the demo's whole survey, then every read command the docs give (45 s); README's command parses them all",
    "tests/survey/test_cache.py::test_a_job_larger_than_the_budget_fails_alone": "a survey under a cache budget (11 s)",
    "tests/survey/test_cache.py::test_measurements_record_the_parquet_commit_downloaded": "a survey through the stand-in (9 s)",
    "tests/survey/test_cache.py::test_a_branch_that_moved_after_the_crawl_is_not_mixed_in": "a survey through the stand-in (8 s)",
    "tests/analysis/test_publish.py::test_push_deletes_the_files_it_no_longer_produces_in_the_same_commit":
        "two pushes to the stand-in (10 s)",
    "tests/analysis/test_publish.py::test_each_publish_builds_in_a_fresh_temp_folder_removed_afterwards": "three publishes (7 s)",
    "tests/analysis/test_publish.py::test_private_repo_and_refused_token": "pushes to the stand-in (6 s)",
    "tests/commands/test_newcomer.py::test_publish_without_push_never_prints_a_folder_it_removed": "publishes (10 s)",
    "tests/analysis/test_site.py::test_publish_site_is_a_dry_run_first_then_one_commit_to_a_static_space":
        "a site built and pushed to the stand-in (8 s)",
    "tests/analysis/test_crossleaks.py::test_the_minihub_survey_finds_the_planted_cross_relations": "a mini-hub survey (10 s)",
    "tests/analysis/test_crossleaks.py::test_the_results_dataset_carries_the_cross_tables_and_their_config":
        "crossleaks, then the whole results dataset (7 s)",
    "tests/survey/test_scores.py::test_the_report_the_results_dataset_the_site_and_notify_show_them":
        "the report, results dataset, site and notify of one survey (10 s)",
    "tests/survey/test_exposure.py::test_the_view_the_report_and_the_results_dataset": "a survey, its report and results dataset (8 s)",
    "tests/analysis/test_outputs.py::test_report_written_at_the_end_of_a_run_shows_its_final_state": "a whole run (9 s)",
    # README's command keeps the first of the four math-like tags (a$b)
    **{f"tests/analysis/test_outputs.py::test_a_math_like_tag_does_not_break_the_report[task_categories:{tag}]": "a report (3 s)"
       for tag in ("$x^$", r"\\$x^$", r"$\\frac{$")},
    # of the crawls through injected faults, README's command keeps the first fault of each test
    **{f"tests/crawler/test_crawl.py::test_transient_faults_are_retried_and_the_crawl_matches_a_clean_one[{fault}]":
       "two crawls, one through a fault (1.4 s)" for fault in ("5xx-burst", "reset", "truncated", "slow")},
    **{f"tests/crawler/test_crawl_listing.py::test_a_malformed_listing_page_is_a_hub_error_and_the_next_crawl_resumes_there[{page}]":
       "two crawls, one through a malformed page (2.3 s)" for page in ("object", "truncated")},
    **{f"tests/crawler/test_crawl_listing.py::test_a_hub_fault_while_resolving_is_retried_by_the_next_crawl[{fault}]":
       "two crawls, one through a fault (1 s)"
       for fault in ("truncated-HubFaultError", "list-HubFaultError", "no_sha-HubFaultError", "redirect_loop-HubFaultError",
                     "503-HfHubHTTPError")},
}
# SLOW_TESTS: tests of the fast tier's modules that start the stand-in, a subprocess or numba's
# compiler, marked `slow` here (by node id prefix, as above) so that the fast tier never runs them.
SLOW_TESTS: dict[str, str] = {
    "tests/survey/test_exposure.py": "the stand-in serving the mini-hub's models",
    "tests/survey/test_audit.py::test_audit_hub_errors_are_one_line": "the stand-in",
    "tests/survey/test_check.py::test_a_hub_id_is_checked_through_the_standin": "the stand-in",
    "tests/survey/test_contamination.py::test_the_planted_contamination_equals_truth": "the mini-hub generated and indexed",
    "tests/survey/test_contamination.py::test_planted_counts_survive_a_tiny_candidate_filter": "the mini-hub generated and indexed",
    "tests/crawler/test_crawl.py::test_gated_files_are_not_retried": "the stand-in",
    "tests/crawler/test_crawl_listing.py::test_each_reason_is_decided_from_the_listing_with_no_request_and_the_card_never_admits":
        "the stand-in",
    "tests/crawler/test_crawl_listing.py::test_a_killed_crawl_resumes_from_the_cursor_written_with_the_last_page": "the stand-in",
    "tests/crawler/test_crawl_listing.py::test_a_tree_page_that_links_to_itself_ends": "the stand-in",
    "tests/analysis/test_notify.py::test_the_standin_speaks_discussions_as_huggingface_hub_does": "the stand-in",
    "tests/survey/test_near_reading.py::test_the_near_stage_runs_on_numbas_workqueue_threading_layer": "a subprocess compiling numba",
    "tests/core/test_store.py::test_an_older_db_that_cannot_be_upgraded_is_refused_in_one_line": "a subprocess",
    "tests/core/test_transport.py::test_a_tree_page_that_links_to_itself_ends": "the stand-in",
}
EXHAUSTIVE_TESTS: dict[str, str] = {
    "tests/survey/test_semantic.py::test_candidates_on_shared_configs_equal_the_reference[openai__gsm8k-main]": "(10 s)",
    "tests/survey/test_engine.py::test_real_hash_collisions_fall_back_to_exact_values[eriktks__conll2003-conll2003]": "(7 s)",
    "tests/survey/test_clean.py::test_kept_rows_equal_plain_python_and_an_audit_finds_none[eriktks__conll2003-conll2003-raw]":
        "(3 s)",
    "tests/survey/test_clean.py::test_kept_rows_equal_plain_python_and_an_audit_finds_none[eriktks__conll2003-conll2003-normalized]":
        "(3 s)",
    "tests/survey/test_near_recall.py::test_engine_against_the_exhaustive_reference": "every shared config (1100 s)",
    "tests/survey/test_near_reference.py::test_near_reference_on_each_shared_dataset": "every shared dataset (280 s)",
    "tests/survey/test_near_reference.py::test_prefix_index_equals_full_index_on_small_shared_configs": "(20 s)",
    "tests/survey/test_contamination.py::test_the_engine_equals_a_plain_python_reference_on_the_shared_datasets": "(90 s)",
    "tests/survey/test_passages.py::test_every_code_point_alone_and_beside_others_folds_as_normalize_text": "(70 s)",
    "tests/survey/test_exact_reference.py::test_invariants_on_every_shared_config": "(60 s)",
    "tests/survey/test_engine.py::test_every_shared_config_equals_reference": "every shared config (50 s)",
    "tests/survey/test_engine.py::test_engine_equals_reference_on_random_splits": "the hypothesis sweep of random splits (23 s)",
    "tests/survey/test_per_column.py::test_random_splits_equal_reference": "the hypothesis sweep of random splits (7 s)",
    "tests/survey/test_per_column.py::test_every_multi_column_shared_config_equals_reference": "17 shared configs (55 s)",
    "tests/analysis/test_crossleaks.py::test_crossleaks_on_the_shared_datasets_equals_sets_over_their_rows": "(20 s)",
    "tests/survey/test_near_compiled.py::test_shared_configs_pair_as_the_reference": "every shared config (110 s)",
    "tests/core/test_fingerprint.py::test_every_shared_split_equals_the_reference": "every shared split (15 s)",
    "tests/survey/test_beside.py::test_group_figures_equal_the_reference_on_shared_configs": "11 miam and silicone configs (15 s)",
    "tests/survey/test_beside.py::test_blank_rows_equal_the_reference_on_random_data": "a hypothesis sweep (10 s)",
    "tests/survey/test_beside.py::test_blank_token_lists_equal_the_reference": "a hypothesis sweep (7 s)",
    "tests/survey/test_beside.py::test_group_figures_equal_the_reference_on_random_data": "a hypothesis sweep (13 s)",
    "tests/survey/test_beside.py::test_time_figures_equal_the_reference_on_random_data": "a hypothesis sweep (8 s)",
}


def _under(nodeid: str, prefixes: dict[str, str]) -> bool:
    return any(nodeid == p or nodeid.startswith((p + "::", p + "[")) for p in prefixes)


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark the tests only CI runs: E2E_TESTS `e2e` and `slow`, WHOLE_TESTS `whole` and `slow`, the
    slow ones of EXHAUSTIVE_TESTS (but a `sample`) `exhaustive`; and SLOW_TESTS `slow`."""
    for item in items:
        if _under(item.nodeid, E2E_TESTS):
            item.add_marker(pytest.mark.e2e)
            item.add_marker(pytest.mark.slow)
            continue
        if _under(item.nodeid, WHOLE_TESTS):
            item.add_marker(pytest.mark.whole)
            item.add_marker(pytest.mark.slow)
            continue
        if _under(item.nodeid, SLOW_TESTS):
            item.add_marker(pytest.mark.slow)
        if _under(item.nodeid, EXHAUSTIVE_TESTS) and item.get_closest_marker("slow") and not item.get_closest_marker("sample"):
            item.add_marker(pytest.mark.exhaustive)


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    """A run that takes the slow tests compiles the kernels once, here, as `hubsurvey run` does
    before its jobs: otherwise each pytest-xdist worker compiles them in its first slow test, the
    same work once per worker. Skipped by the fast tier (it runs no compiled pass), by an xdist
    worker (its controller did it) and by a run that only collects."""
    config = session.config
    if hasattr(config, "workerinput") or config.option.collectonly or "not slow" in (config.option.markexpr or ""):
        return
    from hubsurvey.survey.kernels import GROUPS, compile_groups

    compile_groups(list(GROUPS))


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


# --- the mini-hub and the Hub client of a stand-in (the tests that serve one share them) -----------


@pytest.fixture(scope="module")
def minihub(tmp_path_factory) -> Path:
    """The generated mini-hub (seed 0; its truth in ``truth.json``), once per test module. Tests
    read it; one that changes a dataset generates a hub of its own."""
    from hubsurvey_standin import generate_minihub  # collecting a test module needs no stand-in

    return generate_minihub(tmp_path_factory.mktemp("minihub"), seed=0)


def benchmarks_file(path: Path, benchmarks: list[dict]) -> Path:
    """A benchmarks file (``--benchmarks``) at ``path`` listing ``benchmarks`` (the mini-hub's truth
    names its planted ones): used by the contamination tests and the nights of the history."""
    lines = []
    for b in benchmarks:
        lines += ["[[benchmark]]", f"id = {json.dumps(b['id'])}", f"config = {json.dumps(b['config'])}",
                  f"split = {json.dumps(b['split'])}", f"text_columns = {json.dumps(b['text_columns'])}", ""]
    path.write_text("\n".join(lines))
    return path


def standin_client(hub: Any, cache: Path | None = None, **settings: Any) -> Any:
    """The Hub client of a stand-in ``hub``: no token, unpaced (rate 0), short waits, its download
    cache in ``cache``; ``settings`` overrides any of them (HubClient's keywords). Imported by the
    test modules: ``from conftest import standin_client``."""
    from hubsurvey.core.hub import HubClient

    defaults: dict[str, Any] = {"token": False, "rate": 0, "file_rate": 0, "max_wait": 0.05}
    if cache is not None:
        defaults["cache_dir"] = cache
    return HubClient(endpoint=hub.url, **{**defaults, **settings})
