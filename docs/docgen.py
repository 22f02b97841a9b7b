"""The generated parts of the README and of docs/*.md, for cog (cogapp).

    cog -r -I docs README.md docs/*.md         regenerate them
    cog --check -I docs README.md docs/*.md    what scripts/check runs: fails when one is stale

Each block is generated from the product itself: the CLI's own help, a freshly created results DB
(hubsurvey/core/store.py), the method registry (hubsurvey/core/figures.py) and the findings SQL
(analysis/findings.sql). The only hand-written part is the meaning of each stored column outside
`measurements` (TABLES, below): generation fails when the DB has a column that TABLES does not
explain, or TABLES explains one the DB does not have, so the schema page cannot drift.
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from hubsurvey.core import figure_docs, figures

# The help text must not depend on the terminal it is generated in: a fixed width, no colour, no
# rich formatting (typer reads TYPER_USE_RICH when it is imported).
HELP_WIDTH = 100
os.environ["TYPER_USE_RICH"] = "0"
os.environ["NO_COLOR"] = "1"
os.environ["COLUMNS"] = str(HELP_WIDTH)
os.environ["TERM"] = "dumb"


def _out(text: str) -> None:
    import cog  # only there while cog runs

    cog.out(text)


# --- cli.md -----------------------------------------------------------------------------------------

def help_text(*args: str) -> str:
    """`hubsurvey ARGS --help`, as a terminal HELP_WIDTH wide shows it."""
    from typer.testing import CliRunner

    from hubsurvey.cli import app

    result = CliRunner().invoke(
        app, [*args, "--help"], prog_name="hubsurvey",
        terminal_width=HELP_WIDTH, max_content_width=HELP_WIDTH,
    )
    if result.exit_code != 0:
        raise RuntimeError(f"hubsurvey {' '.join(args)} --help exited {result.exit_code}: {result.output}")
    return "\n".join(line.rstrip() for line in result.output.strip("\n").splitlines())


def command_names() -> list[str]:
    """Every command, in the order `hubsurvey --help` lists them (hubsurvey.cli.COMMANDS)."""
    from hubsurvey.cli import COMMANDS

    return [command.name for command in COMMANDS]


def cli_reference() -> None:
    """docs/cli.md: the top-level help, then every command's `--help`, each under its own heading."""
    parts = ["## hubsurvey\n\n```\n$ hubsurvey --help\n" + help_text() + "\n```\n"]
    parts += [f"## hubsurvey {name}\n\n```\n$ hubsurvey {name} --help\n{help_text(name)}\n```\n"
              for name in command_names()]
    _out("\n".join(parts))


def command_list() -> None:
    """A line per command, with its one-line help, linked to its section of docs/cli.md."""
    from hubsurvey.cli import COMMANDS

    for command in COMMANDS:
        summary = command.summary.rstrip(".")
        _out(f"- [`hubsurvey {command.name}`](cli.md#hubsurvey-{command.name}): {summary}\n")


# The Python function behind each command (the README's table). Generation fails when a command has
# no entry, or an entry names a function that does not import.
COMMAND_FUNCTIONS: dict[str, tuple[str, ...]] = {
    "audit": ("hubsurvey.survey.audit.audit",),
    "crawl": ("hubsurvey.crawler.crawl.crawl",),
    "run": ("hubsurvey.pipeline.run_survey",),
    "status": ("hubsurvey.core.status.status",),
    "demo": ("hubsurvey.commands.survey.demo",),
    "crossleaks": ("hubsurvey.analysis.crossleaks.crossleaks",),
    "show": ("hubsurvey.analysis.examples.find_examples", "hubsurvey.analysis.crossleaks.find_cross_rows"),
    "sql": ("hubsurvey.analysis.findings.create_views",),
    "report": ("hubsurvey.analysis.report.render_report",),
    "export": ("hubsurvey.analysis.export.export_results",),
    "publish": ("hubsurvey.analysis.publish.publish",),
    "contamination": ("hubsurvey.survey.contamination_check.run_contamination",),
    "check": ("hubsurvey.survey.check.check",),
    "notify": ("hubsurvey.analysis.notify.notify",),
    "site": ("hubsurvey.analysis.site.build_site",),
    "exposure": ("hubsurvey.survey.exposure.run_exposure",),
    "scores": ("hubsurvey.survey.scores.run_scores",),
    "history": ("hubsurvey.analysis.history.history",),
    "clean": ("hubsurvey.survey.clean.clean",),
}


def _resolves(dotted: str) -> bool:
    import importlib

    module, _, name = dotted.rpartition(".")
    try:
        return callable(getattr(importlib.import_module(module), name, None))
    except ImportError:
        return False


def command_table() -> None:
    """README: every command, its one-line help and the function behind it, linked to docs/cli.md."""
    from hubsurvey.cli import COMMANDS

    names = [c.name for c in COMMANDS]
    if sorted(names) != sorted(COMMAND_FUNCTIONS):
        raise ValueError(f"docs/docgen.py COMMAND_FUNCTIONS must name every command: {sorted(names)}")
    broken = [f for fs in COMMAND_FUNCTIONS.values() for f in fs if not _resolves(f)]
    if broken:
        raise ValueError(f"docs/docgen.py COMMAND_FUNCTIONS names functions that do not import: {broken}")
    lines = ["| command | what it does | Python function behind it |", "|---|---|---|"]
    for command in COMMANDS:
        name = command.name
        summary = command.summary.rstrip(".")
        functions = ", ".join(f"`{f}`" for f in COMMAND_FUNCTIONS[name])
        lines.append(f"| [`{name}`](docs/cli.md#hubsurvey-{name}) | {summary} | {functions} |")
    _out("\n".join(lines) + "\n")


# --- schema.md --------------------------------------------------------------------------------------

# The meaning of every column of every table but `measurements` (whose columns come from the
# registry and store.IDENTITY_COLUMNS / PROVENANCE_COLUMNS). A key may name several columns,
# comma-separated, which then share the meaning and one row of the table.
_PROVENANCE = "provenance: the method and its version, the hubsurvey version, when, and by which run"
TABLES: dict[str, dict[str, str]] = {
    "schema_version": {
        "version": "a migration applied: the number of its file in `hubsurvey/core/migrations/`",
        "applied_at": "when",
    },
    "examples": {
        "dataset_id, revision_sha, config": "the config measured, at the revision measured",
        "label_column": "the label column, for label kinds (NULL for text-key kinds: shared by the config's label columns)",
        "profile": "`raw` or `normalized`",
        "kind": "`leak_train_test`, `leak_validation_test`, `leak_train_validation`, `duplicate_<split>`, "
                "`label_conflict_train_test`, `conflicting_text_<split>`, and the near-duplicate kinds",
        "rank": "1: the key on most rows",
        "key": "JSON: the text columns' values of the key's first test row, else its first row; strings cut at "
               "200 characters, lists at 50 items",
        "key_truncated": "whether a value of `key` was cut",
        "rows_train, rows_validation, rows_test": "rows holding the key in each split (NULL: no such split)",
        "positions": "JSON: the first 10 row positions per split, 0-based",
        "labels": "JSON, label kinds only: the text's labels per split",
        "jaccard": "a near-duplicate example is a pair: its Jaccard similarity (NULL: an exact example)",
        "partner": "JSON, near-duplicate pairs: the other side (`split`, `position`, `text`, `labels`)",
        "method, method_version, tool_version, measured_at, run_id": _PROVENANCE,
    },
    "datasets": {
        "dataset_id": "Hub id (primary key)",
        "sha": "main revision at the last crawl",
        "author, tags, gated, private, disabled, downloads, likes, last_modified": "listing metadata",
        "status": "`eligible` or `excluded`",
        "exclusion_reason": "gated, private, disabled, no_test_split, too_many_rows, not_text, no_parquet_export, "
                            "filtered, invalid_listing:\\<field\\> (a listing item with a value of the wrong kind), "
                            "hub_fault:\\<class\\> (the Hub failed to answer; the next crawl retries it), "
                            "not_found (a pending dataset the Hub answers 404 for when asked again: deleted, renamed or private), "
                            "error:\\<class\\>",
        "decided_by": "where the decision came from: `listing` (the listing's metadata and card alone, no request; "
                      "it only ever excludes), `parquet` (the Parquet branch's files, listed in one API call) or `card` (the "
                      "Parquet branch's files as the card names them, each found by its footer with the card's rows; "
                      "no API call)",
        "total_rows": "total rows confirmed from the Parquet metadata (NULL: not resolved)",
        "configs": 'JSON `{config: {split: {"files": [...], "rows": n, "rows_from": ...}}}`',
        "resolved_sha": "the sha at which configs/total_rows were resolved (re-crawls skip unchanged ones)",
        "parquet_sha": "the commit of `refs/convert/parquet` the configs were resolved at (jobs download exactly it)",
        "first_seen, last_seen": "crawl timestamps",
        "run_id": "the run that last saw it",
    },
    "crawl_listings": {
        "listing_key": "the listing query (filters, expand, sort, Hub address) as canonical JSON; primary key",
        "next_url": "the cursor: the next page to fetch, written with each page's datasets (NULL: the listing completed)",
        "pages, items": "pages and items written since the listing started",
        "mode": "`full`, or `since_last` (newest first, stopping at the last completed listing's high-water mark)",
        "newest": "the newest `lastModified` seen by the listing in progress",
        "high_water": "the newest `lastModified` of the last completed listing (where `crawl --since-last` stops)",
        "started_at, updated_at, completed_at": "when the listing started, last wrote a page, and completed",
        "run_id": "the crawl that last wrote it",
    },
    "jobs": {
        "job_id": "`dataset_id@revision_sha/config`",
        "dataset_id, revision_sha, config": "what to measure",
        "parquet_sha": "the Parquet-branch commit to download",
        "status": "pending, running, done, failed, superseded (the dataset moved to a newer sha before it ran)",
        "attempts": "attempts so far",
        "error_class, error_message": "why the last attempt failed (one line, no secrets)",
        "transient": "whether that failure may go away on a retry (network, 5xx, a dead worker)",
        "queued_at, started_at, finished_at, seconds": "timing of the last attempt",
        "run_id": "the run that last touched it",
    },
    "runs": {
        "run_id": "primary key",
        "command": "`run` (also `demo`), `crawl`, `audit`, `crossleaks`, `contamination`, `notify`",
        "args": "the arguments (JSON), without secrets",
        "started_at, finished_at": "start and end",
        "status": "running, done, failed, interrupted, timed_out",
        "counts": "JSON counts (listed, eligible, measured, failed, ...)",
        "tool_version": "the hubsurvey version",
        "pid, host": "the process that recorded it: a `running` run whose process is gone is marked `interrupted`",
        "error_class, error_message": "why a failed run failed (`offline`, `hub`, `store`, `internal`, ...), "
                                      "one line, no secrets",
    },
    "fingerprints": {
        "dataset_id, config, split": "the split (canonical name: train, validation, test); primary key",
        "revision_sha": "the revision whose rows the file holds (crossleaks reads only the revisions "
                        "`current_measurements` uses)",
        "rows": "rows in the file (the split's rows)",
        "path": "the Parquet file, relative to `<db>.fingerprints/`",
        "hash": "how the hash was computed (`duckdb-<version> hash(normalized text key)`); files of another "
                "scheme are not compared and are measured again",
        "written_at, run_id": "when, and by which run or audit",
        "content_fingerprint": "the split's order-independent content fingerprint, `hs1:<32 hex digits>` "
                               "([method](method.md#split-fingerprints)); NULL: written before fingerprints",
    },
    "cross_overlaps": {
        "test_dataset, test_config, test_revision": "A: the test split probed",
        "source_dataset, source_config, source_split, source_revision": "B's split holding some of A's test rows",
        "rows": "distinct test rows of A (row positions) whose normalized text hash occurs in B's split",
        "test_rows": "rows of A's test split",
        "pct": "rows / test_rows × 100",
        "relation": "`copy`, `leak`, `shared_test` or `family` ([method](method.md#leaks-across-datasets-cross-2026))",
        "copy_threshold": "the `--copy-threshold` that classified it",
        "method, method_version, tool_version, computed_at, run_id": _PROVENANCE + " (`cross-2026`, 1)",
    },
    "dataset_families": {
        "dataset_id": "a member (primary key)",
        "family_id": "the family: its smallest dataset id",
        "members": "every dataset of the family, sorted",
        "computed_at, run_id": "provenance",
    },
    "benchmarks": {
        "benchmark_id, benchmark_config, benchmark_split": "the benchmark test set (as the benchmarks file names it; "
                                                            "a local file: `local:<name>`, `default`, `test`)",
        "text_columns": "the columns whose text forms an item",
        "revision_sha": "the benchmark's main revision when it was indexed (a local file: its sha256; NULL: not indexed)",
        "parquet_sha": "the Parquet-branch commit its items were read from",
        "items, short_items": "items indexed; those shorter than 13 words (matched whole)",
        "status, error_message": "`indexed`, or `failed` and why (one line)",
        "method, method_version, tool_version, indexed_at, run_id": _PROVENANCE + " (`bench-2026`, 1)",
    },
    "contamination": {
        "dataset_id, revision_sha, config": "the surveyed config, at the revision measured",
        "split, split_name": "the canonical split (train, validation, test) and the dataset's own name for it",
        "rows_split": "rows of the split",
        "text_columns": "the columns whose text was checked (the measurement's text columns)",
        "benchmark_id, benchmark_config, benchmark_split, benchmark_revision":
            "the benchmark, at the revision it was checked against",
        "contaminated_rows": "rows holding 13 consecutive words of an item, or whose whole text (or one text "
                             "column's) equals an item shorter than 13 words; each row once",
        "contaminated_pct": "contaminated_rows / rows_split × 100 (NULL: no rows)",
        "examples": 'JSON, up to 5, the first rows: `[{"position": row position (0-based), "item": the benchmark '
                    'item\'s index (row position in its split), "match": "13-gram" or "whole", "passage": the '
                    "matched words, cut at 200 characters}]`",
        "candidates, verified": "candidates of the hash join, and those that matched word for word "
                                "(the others were rejected)",
        "method, method_version, tool_version, measured_at, run_id": _PROVENANCE + " (`bench-2026`, 1)",
    },
    "notifications": {
        "dataset_id, revision_sha": "the dataset, at the measured revision the message is about",
        "verdict": "the dataset's verdict (`findings_dataset_verdict`) at that revision",
        "profile, figure": "the key profile of the headline figure (`notify --profile`) and its column, "
                           "e.g. `normalized_contaminated_test_pct`",
        "method, method_version": "the figure's method (`exact-2026`) and its version",
        "contaminated_pct": "that figure's worst value over the dataset's configs (%)",
        "status": "`drafted` (dry run: written for review), `posted`, `skipped` or `failed`",
        "reason": "why it was skipped or failed, one line (NULL: drafted or posted)",
        "discussion_num, discussion_url": "the Hub discussion the bot opened, or found already open for this revision",
        "title": "the discussion's title (the bot recognises its own discussions by it)",
        "message_path": "the dry run's Markdown file (NULL: none written)",
        "tool_version, created_at, run_id": "the hubsurvey version, when, and the `notify` run",
    },
    "exposure_lookups": {
        "dataset_id": "the contaminated surveyed dataset whose declaring models were listed (`dataset:<id>`)",
        "revision_sha": "its revision whose contamination the listing answers",
        "contamination_digest": "sha256 of its contamination rows at that revision (each split and benchmark, with "
                                "the benchmark's revision and the counts); the dataset is listed again when it "
                                "changes (NULL: the listing failed)",
        "max_models": "the cap: models kept per dataset (`--max-models`)",
        "models": "models kept (NULL: the listing failed)",
        "capped": "the Hub listed more models than the cap (NULL: the listing failed)",
        "status": "'listed', 'failed' (the next lookup lists it again), or 'clean' (listed before, a new check found "
                  "it clean: its model rows were removed, with no call)",
        "error_class, error_message": "why the listing failed: the error class (`hub_fault`, `hub`, `offline` ...) "
                                      "and one line",
        "method, method_version, tool_version, looked_up_at, run_id": _PROVENANCE + " (`exposure-2026`, 1)",
    },
    "model_exposure": {
        "model_id, model_sha": "a Hub model whose card declares the dataset, at the revision it had when listed",
        "declared_by": "'card:datasets' (its card's `datasets:` lists it), or 'tag:dataset' (only the Hub's "
                       "`dataset:` tag names it)",
        "dataset_id, revision_sha, config": "the declared dataset's contaminated config, at the revision checked",
        "split, split_name": "the canonical split and the dataset's own name for it",
        "text_columns": "the columns whose text was checked",
        "benchmark_id, benchmark_config, benchmark_split, benchmark_revision":
            "the benchmark whose items the split holds, at the revision it was checked against",
        "contaminated_rows, rows_split, contaminated_pct": "the split's rows holding the benchmark's items, its rows, "
                                                          "and their ratio × 100, as `contamination` held them",
        "method, method_version, tool_version, looked_up_at, run_id": _PROVENANCE + " (`exposure-2026`, 1)",
    },
    "score_lookups": {
        "dataset_id": "the surveyed dataset whose declaring models were listed for their scores (`dataset:<id>`; "
                      "primary key)",
        "revision_sha": "its revision when listed; the dataset is listed again when it changes",
        "max_models": "the cap: models kept per dataset (`--max-models`)",
        "models": "models kept (NULL: the listing failed)",
        "capped": "the Hub listed more models than the cap (NULL: the listing failed)",
        "scores": "scores stored from the models this listing read (NULL: the listing failed)",
        "api_calls, file_calls": "the calls the listing took: API calls (its pages) and file calls (`.eval_results` "
                                 "files, benchmarks' `eval.yaml`)",
        "status": "'listed', or 'failed' (the next lookup lists it again; its earlier scores stay)",
        "error_class, error_message": "why the listing failed: the error class (`hub_fault`, `hub`, `offline` ...) "
                                      "and one line",
        "method, method_version, tool_version, looked_up_at, run_id": _PROVENANCE + " (`scores-2026`, 1)",
    },
    "reported_scores": {
        "score_id": "stable per (model, source, file, position in it)",
        "model_id, model_sha": "the Hub model reporting the score, at the revision it had when listed",
        "source, source_file": "`model-index` (its card) or `eval_results` (the file `.eval_results/<name>.yaml`, "
                               "named in source_file)",
        "dataset_id": "the dataset the score was measured on",
        "config": "its config, as reported, or from the benchmark's `eval.yaml` (NULL: not named)",
        "split_reported, split": "the split as reported (or mapped through `eval.yaml`), and its canonical name "
                                 "(train, validation, test; NULL: unknown or another split)",
        "task": "the model-index task type, or the eval result's task id",
        "metric, value": "the metric (model-index `type`; NULL for an eval result) and its value (NULL: not a number)",
        "verified": "model-index: the metric's `verified`; eval result: it carries a `verifyToken` (not checked here)",
        "note": "`split unknown`: an eval result whose benchmark has no `eval.yaml`, or whose task is not in it",
        "declared_datasets": "the training data the card declares (`datasets:`); a `dataset:` tag alone is none",
        "base_model": "the card's `base_model`: recorded, never followed",
        "listed_via": "the surveyed dataset whose listing found the model",
        "method, method_version, tool_version, looked_up_at, run_id": _PROVENANCE + " (`scores-2026`, 1)",
    },
    "clean_test": {
        "dataset_id, revision_sha, config": "the config cleaned, at its revision (primary key with profile)",
        "parquet_sha": "the Parquet-branch commit read (NULL: a folder)",
        "profile": "`raw`, `normalized` or `near`: whose rule made a test row contaminated ([clean](clean.md))",
        "text_columns": "the columns whose values form the text key",
        "test_split": "the dataset's own name of its test split",
        "rows_test, rows_kept": "rows of the test split, and those kept",
        "dropped": 'rows dropped by reason, each row once, under its first of `{"train", "validation", '
                   '"repeated", "near"}` (JSON)',
        "kept_positions": "the kept rows' 0-based positions in the test split, ascending (positions, never rows)",
        "test_fingerprint, clean_fingerprint": "the hs1 fingerprints of the test split and of the clean split",
        "near": "the near-duplicate parameters (threshold, shingle, ...) under `near`; NULL otherwise",
        "method, method_version, tool_version, cleaned_at, run_id":
            _PROVENANCE + " (`exact-2026` for raw and normalized, `near-2026` for near)",
    },
    "column_measurements": {
        "dataset_id, revision_sha, config": "the config measured, at the revision measured",
        "label_column": "the measurement row's label column (NULL: none; the label figures are then NR)",
        "text_columns": "the whole text key's columns (the measurement's text columns)",
        "text_column": "the one text column whose values are compared (its empty and NULL values are never matched)",
        "profile": "`raw` or `normalized`",
        "method, method_version, tool_version, measured_at, run_id": _PROVENANCE + " (`exact-2026`, 1)",
        **{c.name: c.definition if c.percent_of or c.figure in figures.PER_COLUMN_FIGURES else
           f"{c.definition}; the text key is this column alone ({figure_docs.nr_rule(c)})"
           for c in figures.per_column_columns()},
    },
    "group_measurements": {
        "dataset_id, revision_sha, config": "the config measured, at the revision measured",
        "group_column": "the column whose values name a group (a dialogue, file, document, thread, author, URL)",
        "source": "`inferred` (an id-like or url column left out of the text key whose values repeat within a "
                  "split) or `declared` (the roles file's `groups`)",
        "numbering_reused": "the values are a numbering restarting per split (every value 1 to 18 ASCII digits, and "
                            "two splits or more each with its smallest value 0 or 1 and its distinct values at least "
                            "half of 0..largest): one value names another group in each split",
        "in_verdict": "false for a reused numbering: reported, marked, kept out of every verdict",
        "method, method_version, tool_version, measured_at, run_id": _PROVENANCE + " (`groups-2026`, 1)",
        **{c.name: f"{c.definition} ({figure_docs.nr_rule(c)})" for c in figures.group_columns()},
    },
    "time_measurements": {
        "dataset_id, revision_sha, config": "the config measured, at the revision measured",
        "date_column": "the column whose values date a row (a value that does not read as a timestamp is left out)",
        "source": "`inferred` (a date or timestamp type, or a date-like name, left out of the text key) or `declared` "
                  "(the roles file's `dates`)",
        "method, method_version, tool_version, measured_at, run_id": _PROVENANCE + " (`time-2026`, 1)",
        **{c.name: f"{c.definition} ({figure_docs.nr_rule(c)})" for c in figures.time_columns()},
    },
    "semantic_candidates": {
        "dataset_id, revision_sha, config": "the config measured, at the revision measured",
        "text_columns": "the columns whose values form the text embedded (the text key's)",
        "test_position": "the first test row (0-based) holding the test text",
        "test_rows": "test rows holding the test text (identical under the normalized profile)",
        "test_text": "the test text as embedded: its text columns under the normalized profile, joined by a "
                     "newline, cut at 200 characters (…)",
        "partner_split": "`train` or `validation`: the split of the partner text",
        "partner_position": "the first row of that split holding the partner text",
        "partner_rows": "rows of that split holding it",
        "partner_text": "the partner text, as `test_text`",
        "cosine": "the two texts' cosine under the model (at least `threshold`)",
        "rank": "1 for the test text's nearest partner, 2 and 3 for the next (ties: the partner first in "
                "order, train before validation)",
        "threshold": "the cosine threshold of the run (`--semantic-threshold`, default 0.8)",
        "model": "the static model: `wordllama l2_supercat_256` (wordllama's shipped weights) or `model2vec <folder>`",
        "model_sha256": "the SHA-256 of the model's weights file",
        "search": "`exact`: every pair's cosine computed",
        "method, method_version, tool_version, measured_at, run_id": _PROVENANCE + " (`semantic-2026`, 1; run_id "
                                                                    "NULL: a one-off audit)",
    },
    "label_names": {
        "dataset_id, revision_sha, config": "the config measured, at the revision measured",
        "label_column": "the measurement row's label column whose HF feature is a ClassLabel, or a list of them",
        "label_id": "the ClassLabel id: the name's position in the feature's `names`",
        "name": "the id's name as the Parquet schema's `huggingface` metadata gives it: untrusted Hub text, cut at "
                "200 characters (ending in …), at most 10,000 names per column (an id past them is shown as its id)",
        "feature": "`ClassLabel` (one label per row), or `List(ClassLabel)` (a list per row: multi-label, a tag per "
                   "token; nested lists nest it)",
        "tool_version, measured_at, run_id": "provenance: the hubsurvey version that read the names, when, and by "
                                             "which run (with the config's measurements)",
    },
}


@contextmanager
def fresh_store() -> Iterator[object]:
    """A results DB created from nothing, as the first command on a new path creates it."""
    from hubsurvey.core.store import Store

    with tempfile.TemporaryDirectory(prefix="hubsurvey-docs-") as folder:
        store = Store(Path(folder) / "results.duckdb")
        try:
            yield store
        finally:
            store.close()


def _columns(con: object, relation: str) -> dict[str, str]:
    rows = con.execute(  # type: ignore[attr-defined]
        "SELECT column_name, data_type FROM duckdb_columns() WHERE table_name = ? ORDER BY column_index",
        [relation],
    ).fetchall()
    return {name: ("TIMESTAMPTZ" if kind == "TIMESTAMP WITH TIME ZONE" else kind) for name, kind in rows}


def _table_rows(table: str, columns: dict[str, str]) -> list[str]:
    """The `| column | type | meaning |` rows of one table, in its column order, checked against TABLES."""
    meanings = TABLES[table]
    groups = {name: key for key in meanings for name in key.split(", ")}
    missing = [c for c in columns if c not in groups]
    stale = [c for c in groups if c not in columns]
    if missing or stale:
        raise ValueError(f"docs/docgen.py TABLES[{table!r}] is out of date: columns without a meaning {missing}, "
                         f"meanings of columns the table does not have {stale}")
    rows, done = [], set()
    for column in columns:
        key = groups[column]
        if key in done:
            continue
        done.add(key)
        names = key.split(", ")
        types = [columns[n] for n in names]
        shown = types[0] if len(set(types)) == 1 else ", ".join(types)
        rows.append(f"| {', '.join(names)} | {shown} | {meanings[key]} |")
    return rows


# What one row of each table is, and how it is written; the tables are listed in this order.
TABLE_NOTES: dict[str, str] = {
    "datasets": "Every dataset the crawler listed, one row each.",
    "crawl_listings": "The cursor of each listing query, one row each: a crawl killed or failing mid-listing resumes "
                      "at its next page.",
    "jobs": "The survey queue, one row per (dataset, revision, config).",
    "runs": "One row per command that changed the DB.",
    "examples": "The rows behind the counts, bounded: up to N (`--examples`, default 20) per (dataset, revision, "
                "config, label column, profile, kind). Replaced with the config's measurements, in the same "
                "transaction; `hubsurvey show` prints them.",
    "fingerprints": "The index of the fingerprint files (below), one row per (dataset, config, split).",
    "cross_overlaps": "Leaks across datasets, one row per (test split, split of another dataset) that share rows. "
                      "Rewritten whole by each `crossleaks`.",
    "dataset_families": "Datasets joined by copies, one row per member. Rewritten whole by each `crossleaks`.",
    "notifications": "What the Hub bot (`hubsurvey notify`) did about each dataset revision, one row per decision: "
                     "drafted, posted, skipped (and why) or failed. It never posts twice for one revision "
                     "([the bot](notify.md)).",
    "benchmarks": "The benchmark test sets as indexed, one row per (id, config, split). Of a local benchmark (a "
                  "private eval set, [local benchmarks](local-benchmarks.md)) nothing of its items is stored, here or "
                  "in `contamination`: counts, its file's sha256, and examples of the surveyed rows only.",
    "contamination": "One row per (surveyed dataset, revision, config, split, benchmark). A config's rows for the "
                     "benchmarks checked are replaced together, in one transaction (with the job's measurements "
                     "when the run checks them).",
    "exposure_lookups": "One row per contaminated dataset whose declaring models were listed on the Hub. Replaced "
                        "with the dataset's model_exposure rows, in one transaction.",
    "model_exposure": "One row per (model, declared dataset, contaminated config and split, benchmark). A dataset's "
                      "rows are replaced together when its contamination (or the cap) changes; a failed listing "
                      "leaves them as they were.",
    "score_lookups": "One row per surveyed dataset whose declaring models were listed for the scores they report "
                     "(`hubsurvey scores`). Replaced with the scores of the models it read, in one transaction.",
    "reported_scores": "One row per score a listed model reports: its card's `model-index` (one per metric) or an "
                       "entry of its `.eval_results/*.yaml`. The view `scores_at_risk` joins them with the stored "
                       "figures ([scores at risk](model-scores.md)).",
    "clean_test": "The test rows `hubsurvey clean --db` kept, one row per (dataset, revision, config, profile); "
                  "publish exports them as the `clean_test` config.",
    "column_measurements": "The exact figures of each text column alone, for configs with two text columns or more: "
                           "one row per (measurement row, text column, profile); its figure columns come from the "
                           "registry (`figures.per_column_columns()`). Replaced with the config's measurements, in "
                           "the same transaction. [Per-column figures](per-column.md).",
    "group_measurements": "Groups shared across splits: one row per (config, group column) of a measured config; a "
                          "column whose values never repeat within a split is a row id, never a group, and has no "
                          "row (the config's `checks` name it). Its figure columns come from the registry "
                          "(`figures.group_columns()`). Replaced with the config's measurements, in the same "
                          "transaction. [Method](method.md#beyond-the-pair-of-texts-groups-blank-rows-time-order).",
    "time_measurements": "Time order: one row per (config, date column) that dates at least one row (or is "
                         "declared); figure columns from the registry (`figures.time_columns()`). Replaced with the "
                         "config's measurements, in the same transaction.",
    "semantic_candidates": "Paraphrase candidates for review (`semantic-2026`, opt-in: `audit --semantic`, "
                           "`run --semantic`): one row per (distinct test text, one of its 3 nearest train or "
                           "validation texts) at cosine >= the threshold, the 1000 highest of a config; texts identical "
                           "to the test text are left out (the exact figures count them). Never a figure: no leak count "
                           "and no verdict reads it. The config's `checks` entry `semantic` holds the counts over every "
                           "pair. Replaced with the config's measurements, in the same transaction (a measurement "
                           "without `--semantic` leaves none). [Method](method.md#paraphrase-candidates-for-review).",
    "label_names": "The ClassLabel names of each label column measured, one row per (config, label column, id), "
                   "read by the workers from the Parquet schema's features (no dataset code runs). Replaced with "
                   "the config's measurements, in the same transaction. The site and `hubsurvey show` print a label "
                   "as its name and id (`joy (1)`) from them; the figures, examples and exports keep the ids.",
    "schema_version": "The migrations applied, one row each.",
}


def store_tables() -> None:
    """Every table of a fresh DB but `measurements`: what a row is, its columns, their types and meanings."""
    with fresh_store() as store:
        con = store.con  # type: ignore[attr-defined]
        tables = {t for (t,) in con.execute("SELECT table_name FROM duckdb_tables() WHERE NOT internal").fetchall()}
        tables.discard("measurements")
        if tables != set(TABLE_NOTES) or tables != set(TABLES):
            raise ValueError(f"docs/docgen.py TABLE_NOTES and TABLES must explain exactly the store's tables "
                             f"{sorted(tables)}")
        for table, note in TABLE_NOTES.items():
            _out(f"### `{table}`\n\n{note}\n\n| column | type | meaning |\n|---|---|---|\n")
            _out("\n".join(_table_rows(table, _columns(con, table))) + "\n\n")


def measurements_table() -> None:
    """`measurements`: every column of a fresh DB with its type, and its meaning from the registry."""
    from hubsurvey.core import figures
    from hubsurvey.core.store import result_columns

    meanings = {"measurement_id": "`dataset_id@revision_sha/config#label_column` (primary key)", **result_columns()}
    nr = {c.name: figure_docs.nr_rule(c) for c in figures.figure_columns()}
    with fresh_store() as store:
        columns = _columns(store.con, "measurements")  # type: ignore[attr-defined]
    missing = [c for c in columns if c not in meanings]
    if missing:
        raise ValueError(f"measurements columns without a meaning in the store or the registry: {missing}")
    lines = ["| column | type | meaning |", "|---|---|---|"]
    for name, kind in columns.items():
        meaning = meanings[name].replace("|", "\\|") + (f" ({nr[name]})" if name in nr else "")
        lines.append(f"| {name} | {kind} | {meaning} |")
    _out("\n".join(lines) + "\n")


# What each view of the store shows (store.views(); they hold no data). Checked like TABLES.
VIEWS: dict[str, str] = {
    "survey_measurements": "Hub survey results: for each (dataset, config), its newest measured revision",
    "current_measurements": "what findings, exports and publish read: `survey_measurements`, plus one-off audits "
                            "(folders, in-memory data) of datasets the survey has not measured. An audit never "
                            "displaces a dataset's Hub rows",
    "lle": "the 14 published columns of `current_measurements`: text, `NR` for NULL, `10.049%`, `7.0`",
    "lle_typed": "the same columns as numbers (NULL for NR; `test_biased` rounded to 3 decimals as published), "
                 "plus the row's identity: the view to query",
    "near_curve": "the near-duplicate threshold curve, one row per (measurement, threshold): test rows with a "
                  "train row at Jaccard >= threshold",
    "history": "every revision measured of every (dataset, config, label column), oldest first: when, which "
               "revision and run, the row's verdict and the headline figures of each method "
               "([history](history.md))",
    "scores_at_risk": "every score a listed Hub model reports, beside the rows of its evaluated split that the "
                      "training data its card declares holds, with its status: `at_risk`, `clean`, `undeclared` or "
                      "`not_surveyed` ([scores at risk](model-scores.md); the columns below)",
}


def store_views() -> None:
    """The views of a fresh DB (recreated from the registry whenever it is opened for writing)."""
    with fresh_store() as store:
        con = store.con  # type: ignore[attr-defined]
        views = [v for (v,) in con.execute(
            "SELECT view_name FROM duckdb_views() WHERE NOT internal AND NOT temporary").fetchall()]
        if sorted(views) != sorted(VIEWS):
            raise ValueError(f"docs/docgen.py VIEWS is out of date: the store's views are {sorted(views)}")
        measurements = list(_columns(con, "measurements"))
        lines = ["| view | what it shows | columns |", "|---|---|---|"]
        for view in VIEWS:
            columns = list(_columns(con, view))
            shown = "those of `measurements`" if columns == measurements else ", ".join(columns)
            lines.append(f"| `{view}` | {VIEWS[view]} | {shown} |")
        _out("\n".join(lines) + "\n")


def history_columns() -> None:
    """The history view's columns, each with its meaning (hubsurvey/core/history.py), checked
    against the view of a fresh DB."""
    from hubsurvey.core.history import history_columns as meanings

    with fresh_store() as store:
        columns = _columns(store.con, "history")  # type: ignore[attr-defined]
    if list(columns) != list(meanings()):
        raise ValueError(f"hubsurvey/core/history.py history_columns() must explain the view's columns {list(columns)}")
    lines = ["| column | type | meaning |", "|---|---|---|"]
    lines += [f"| `{name}` | {kind} | {meanings()[name].replace('|', chr(92) + '|')} |" for name, kind in columns.items()]
    _out("\n".join(lines) + "\n")


def scores_at_risk_columns() -> None:
    """The scores_at_risk view's columns, each with its meaning (hubsurvey/core/store.py), checked
    against the view of a fresh DB."""
    from hubsurvey.core.store import SCORES_AT_RISK_COLUMNS as meanings

    with fresh_store() as store:
        columns = _columns(store.con, "scores_at_risk")  # type: ignore[attr-defined]
    if list(columns) != list(meanings):
        raise ValueError(f"hubsurvey/core/store.py SCORES_AT_RISK_COLUMNS must explain the view's columns {list(columns)}")
    lines = ["| column | type | meaning |", "|---|---|---|"]
    lines += [f"| `{name}` | {kind} | {meanings[name].replace('|', chr(92) + '|')} |" for name, kind in columns.items()]
    _out("\n".join(lines) + "\n")


def findings_views() -> None:
    """Every findings view (analysis/findings.sql): its definition, as written beside its SQL, and its columns."""
    from hubsurvey.analysis.findings import SQL_FILE, create_views, parse_sql

    text = SQL_FILE.read_text()
    _, bodies = parse_sql(text)
    with fresh_store() as store:
        create_views(store)  # type: ignore[arg-type]
        con = store.con  # type: ignore[attr-defined]
        for name in bodies:
            comment = _leading_comment(text, name)
            _out(f"### `{name}`\n\n{comment}\n\nColumns: {', '.join(f'`{c}`' for c in _columns(con, name))}.\n\n")


def _leading_comment(text: str, view: str) -> str:
    """The comment lines right under `-- view: <name>` in findings.sql, as a code block (they are laid out)."""
    match = re.search(rf"^-- view: {re.escape(view)}[ \t]*\n((?:--.*\n)*)", text, re.MULTILINE)
    lines = [line[3:] if line.startswith("-- ") else line[2:] for line in (match.group(1) if match else "").splitlines()]
    return "```\n" + "\n".join(lines).rstrip() + "\n```" if lines else "(no definition written)"


def methods() -> None:
    """The methods of the registry, with their versions."""
    from hubsurvey.core import figures

    for name, version in figures.registered_methods().items():
        count = len(figures.figure_columns(name))
        _out(f"- `{name}`, version {version}: {count} figure column(s)\n")


# --- operations.md ----------------------------------------------------------------------------------

def exit_codes() -> None:
    """The exit codes, as `hubsurvey --help` states them (hubsurvey.cli.HELP), checked against ExitCode."""
    from hubsurvey.cli import HELP
    from hubsurvey.core.errors import ExitCode

    block = HELP.split("Exit codes:", 1)[1]
    codes = [(int(m[1]), m[2]) for m in re.finditer(r"^\s+(\d+)\s+(.+)$", block, re.MULTILINE)]
    if sorted(c for c, _ in codes) != sorted(int(e) for e in ExitCode):
        raise ValueError(f"hubsurvey --help's exit codes {codes} do not match ExitCode {list(ExitCode)}")
    names = {int(e): e.name for e in ExitCode}
    lines = ["| code | `ExitCode` | meaning |", "|---|---|---|"]
    lines += [f"| {code} | `{names[code]}` | {meaning} |" for code, meaning in codes]
    _out("\n".join(lines) + "\n")


def error_classes() -> None:
    """Every error hubsurvey raises on purpose (hubsurvey/core/errors.py): its class, exit code and when."""
    from hubsurvey.core import errors

    found = [v for v in vars(errors).values()
             if isinstance(v, type) and issubclass(v, errors.HubsurveyError) and v is not errors.HubsurveyError
             and v.__module__ == errors.__name__]
    lines = ["| error_class | exit code | exception | when |", "|---|---|---|---|"]
    for error in found:
        doc = " ".join((error.__doc__ or "").split()).split(". ")[0].rstrip(".").replace("``", "`")
        lines.append(f"| `{error.error_class}` | {int(error.exit_code)} | `{error.__name__}` | {doc} |")
    _out("\n".join(lines) + "\n")


def verdict_rules() -> None:
    """The verdict rules per basis, from analysis/verdicts.py (the function every surface judges with)."""
    from hubsurvey.analysis.verdicts import BASIS_ORDER, DECIDING, rule
    from hubsurvey.core.history import VERDICTS

    lines = ["| basis | deciding figure | " + " | ".join(VERDICTS) + " |", "|---|---|" + "---|" * len(VERDICTS)]
    for basis in BASIS_ORDER:
        lines.append(f"| `{basis}` | `{DECIDING[basis][0]}` | " + " | ".join(rule(basis, v) for v in VERDICTS) + " |")
    _out("\n".join(lines) + "\n")
