"""Measure one (dataset, config): roles -> engine -> result rows with their provenance.

This is the unit of work of every executor (the ``audit`` command, a local worker process, a Dask
worker). It returns plain data; only the caller writes to the results DB.
"""

from __future__ import annotations

import json
import time
from collections.abc import Collection
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import duckdb
import pyarrow as pa

from hubsurvey import __version__
from hubsurvey.core.errors import InternalError, SurveyError, UnreadableDataError, UsageError
from hubsurvey.core.figures import (
    DEFAULT_EXAMPLES,
    EXACT_METHOD,
    EXACT_METHOD_VERSION,
    GROUPS_METHOD,
    LLE_METHOD,
    LLE_METHOD_VERSION,
    NEAR_METHOD,
    NEAR_METHOD_VERSION,
    ROWS_METHOD,
    SEMANTIC_METHOD,
    SEMANTIC_METHOD_VERSION,
    TIME_METHOD,
    registered_methods,
)
from hubsurvey.core.fingerprint import files_fingerprint, split_fingerprint
from hubsurvey.core.roles import ColumnRoles, RoleOverrides, class_label_names, resolve_roles
from hubsurvey.core.store import now
from hubsurvey.survey.metrics import Engine
from hubsurvey.survey.near import one_thread
from hubsurvey.survey.semantic import SemanticRequest, SemanticResult, candidates
from hubsurvey.survey.sources import ConfigData, SplitData, check_config

#: A key value is cut to this many characters (strings) or elements (lists) in the examples table.
EXAMPLE_VALUE_CHARS = 200
EXAMPLE_VALUE_ITEMS = 50


@dataclass
class ConfigResult:
    """The rows of one measured config, ready for ``Store.replace_measurements``."""

    dataset_id: str
    config: str
    revision_sha: str
    roles: ColumnRoles
    rows: list[dict[str, Any]]
    examples: list[dict[str, Any]] = field(default_factory=list)  # rows of the examples table
    seconds: float = 0.0
    #: per canonical split: a table of (row, hash) with the normalized text key's hash of every row
    #: (``Engine.fingerprints``), for leaks across datasets; None when not measured (LLE alone)
    fingerprints: dict[str, Any] | None = None


def _data_error_types() -> tuple[type[BaseException], ...]:
    return (
        pa.ArrowInvalid,
        pa.ArrowTypeError,
        pa.ArrowNotImplementedError,
        pa.ArrowIOError,
        duckdb.IOException,
        duckdb.ConversionException,
        duckdb.InvalidInputException,
    )


def is_data_error(exc: BaseException) -> bool:
    """True for the errors that mean the data cannot be read as it is (the documented cases):
    Arrow invalid, type or not-implemented data, DuckDB IO, conversion or invalid input errors.
    Everything else that escapes the engine is a bug."""
    return isinstance(exc, _data_error_types())


def fingerprint_split(split: SplitData) -> str:
    """A split's content fingerprint (``hubsurvey.core.fingerprint``), from its Arrow table or its files."""
    return split_fingerprint(split.table) if split.table is not None else files_fingerprint(split.files)


def lle_dataset_name(dataset_id: str, config: str, label_column: str | None, n_configs: int, n_labels: int) -> str:
    """``<dataset>`` + ``,<config>`` (several configs) + ``(<label>)`` (several label columns)."""
    name = dataset_id.rstrip("/").split("/")[-1]
    if n_configs > 1:
        name += f",{config}"
    if label_column and n_labels > 1:
        name += f"({label_column})"
    return name


def measure_config(
    data: ConfigData,
    *,
    n_configs: int,
    source: str,
    overrides: RoleOverrides | None = None,
    examples: int = DEFAULT_EXAMPLES,
    run_id: str | None = None,
    engine_options: dict[str, Any] | None = None,
    methods: Collection[str] | None = None,
    semantic: SemanticRequest | None = None,
) -> ConfigResult:
    """Validate, infer roles, measure and build the stored rows of one config. With ``semantic``,
    its paraphrase candidates too (``survey/semantic.py``): on each row as ``semantic`` (what ran,
    the counts) and ``semantic_candidates`` (the pairs, stored apart)."""
    started = time.perf_counter()
    data = check_config(data)
    roles = resolve_roles(data.features, data.dataset_id, data.config, overrides)
    # Without the near stage no read of every row is made for the measurement, so the splits'
    # fingerprints are read in a thread of their own while DuckDB measures (one core for it, as
    # the near stage's reading thread): after the measurement, it cost as much as the measurement.
    fingerprinting = (ThreadPoolExecutor(1, thread_name_prefix="fingerprint", initializer=one_thread)
                      if methods is not None and NEAR_METHOD not in methods else None)
    fingerprints_beside = (fingerprinting.submit(lambda: {name: fingerprint_split(split) for name, split in data.splits.items()})
                           if fingerprinting is not None else None)
    try:
        with Engine(data, **(engine_options or {})) as engine:
            # the examples' kinds are the exact method's: measured with it only
            measured = engine.measure(roles.text_columns, roles.label_columns, methods, examples=examples)
            measurements, samples, near = measured.measurements, measured.examples, measured.near
            group_candidates = roles.group_columns()
            groups = (engine.measure_groups(list(group_candidates))
                      if methods is None or GROUPS_METHOD in methods else None)
            date_candidates = roles.date_columns(data.features)
            dates = (engine.measure_dates(list(date_candidates))
                     if methods is None or TIME_METHOD in methods else None)
            rows_by_split = engine.rows
            fingerprints = engine.fingerprints()
            read = engine.split_fingerprints  # the near stage's read gave them, else they are read now
        if fingerprints_beside is not None:
            read = {**fingerprints_beside.result(), **read}
        content = {name: read.get(name) or fingerprint_split(split) for name, split in data.splits.items()}
        paraphrases = candidates(data, roles.text_columns, semantic) if semantic is not None else None
    except (SurveyError, UsageError):
        raise
    except Exception as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        if is_data_error(e):  # corrupt or unreadable files, values DuckDB cannot convert
            raise UnreadableDataError(f"{data.where()}: {type(e).__name__}: {first}") from None
        # Anything else is a bug in hubsurvey, not bad data: keep the traceback (chained).
        raise InternalError.of(data.where(), e) from e
    finally:
        if fingerprinting is not None:  # its files stay until it is done with them
            fingerprinting.shutdown(wait=True, cancel_futures=True)
    measured_at = now()
    group_rows = side_rows(groups, group_candidates, "group_column") if groups is not None else None
    date_rows = side_rows(dates, date_candidates, "date_column") if dates is not None else None
    checks = checks_statement(methods, near.info if near else None, measurements, groups, group_candidates,
                              date_rows, {d["date_column"]: d["error"] for d in dates or [] if "error" in d},
                              paraphrases)
    label_names = class_label_names(data.features)  # the features' ClassLabel names (the Parquet schema's)
    rows = []
    for m in measurements:
        row: dict[str, Any] = {
            "measurement_id": f"{data.dataset_id}@{data.revision_sha}/{data.config}#{m.label_column or ''}",
            "dataset_id": data.dataset_id,
            "revision_sha": data.revision_sha,
            "config": data.config,
            "label_column": m.label_column,
            "text_columns": list(m.text_columns),
            "roles_source": roles.source,
            "dataset_name": lle_dataset_name(
                data.dataset_id, data.config, m.label_column, n_configs, len(roles.label_columns)
            ),
        }
        for split in ("train", "validation", "test"):
            present = data.splits.get(split)
            row[f"{split}_split"] = present.source_name if present else None
            row[f"rows_{split}"] = rows_by_split.get(split)
        row.update(m.figures)
        row.update({f"fingerprint_{split}": content.get(split) for split in ("train", "validation", "test")})
        row.update(
            source=source,
            method=LLE_METHOD,
            method_version=LLE_METHOD_VERSION,
            tool_version=__version__,
            measured_at=measured_at,
            run_id=run_id,
            methods={**{m: v for m, v in registered_methods().items() if methods is None or m in methods},
                     **({SEMANTIC_METHOD: SEMANTIC_METHOD_VERSION} if paraphrases is not None else {})},
            near=_json(near.info) if near else None,
            near_curve=_json([{"threshold": t, "test_rows_near_train": n} for t, n in near.curve.items()])
            if near and near.curve else None,
        )
        if m.per_column is not None:  # the figures of each text column alone: column_measurements
            row["per_column"] = m.per_column
        row["checks"] = _json(checks)
        if group_rows is not None:  # per config, on each of its rows: group_measurements
            row["groups"] = group_rows
        if date_rows is not None:  # time_measurements
            row["dates"] = date_rows
        if paraphrases is not None:  # semantic_candidates: never a figure of the row
            row["semantic"] = paraphrases.info
            row["semantic_candidates"] = paraphrases.pairs
        if (named := label_names.get(m.label_column or "")) is not None:  # the label_names table
            row["label_names"] = {"feature": named.feature, "names": list(named.names)}
        rows.append(row)
    stored = [example_row(data, ex, measured_at=measured_at, run_id=run_id) for ex in samples]
    stored += [near_example_row(data, ex, measured_at=measured_at, run_id=run_id) for ex in (near.examples if near else [])]
    return ConfigResult(
        data.dataset_id, data.config, data.revision_sha or "", roles, rows, stored, time.perf_counter() - started,
        fingerprints,
    )


def side_rows(measured: list[dict[str, Any]], candidates: dict[str, str], column_key: str) -> list[dict[str, Any]]:
    """The group (or date) columns measured, as rows of their table without identity: the column, where
    it comes from (declared or inferred) and its figures. An inferred group column whose values never
    repeat within a split is a row id, never a group: left out (``checks_statement`` names it). A
    group column whose values are a numbering restarting in every split is kept, marked and kept out
    of the verdict (``in_verdict`` false)."""
    out = []
    for found in measured:
        column = found[column_key]
        source = candidates.get(column, "inferred")
        if "error" in found:  # named in the statement of checks
            continue
        if column_key == "group_column":
            if source == "inferred" and not found["repeats"]:
                continue
            out.append({column_key: column, "source": source, "numbering_reused": found["numbering_reused"],
                        "in_verdict": not found["numbering_reused"], **found["figures"]})
        elif source == "declared" or any(found["figures"].get(f"rows_dated_{s}") for s in ("train", "validation", "test")):
            out.append({column_key: column, "source": source, **found["figures"]})
    return out


def checks_statement(methods: Collection[str] | None, near: dict[str, Any] | None, measurements: list[Any],
                     groups: list[dict[str, Any]] | None, group_candidates: dict[str, str],
                     date_rows: list[dict[str, Any]] | None,
                     dates_failed: dict[str, str] | None = None,
                     semantic: SemanticResult | None = None) -> list[dict[str, Any]]:
    """What was checked on a config and what was not: one entry per check, ``{"check", "ran"}`` and
    what it ran with or why it did not (``why_not``); a group or date column DuckDB could not read is
    named under ``not_measured`` with its error (the config's other figures stand). The contamination entry is the caller's
    (:func:`with_contamination_check`). Paraphrase candidates are opt-in (``semantic``: what ran, with
    its model, threshold and counts)."""
    def asked(method: str) -> bool:
        return methods is None or method in methods

    out: list[dict[str, Any]] = [
        {"check": "lle", "ran": asked(LLE_METHOD)},
        {"check": "exact_raw", "ran": asked(EXACT_METHOD)},
        {"check": "exact_normalized", "ran": asked(EXACT_METHOD)},
    ]
    status = (near or {}).get("status")
    near_entry: dict[str, Any] = {"check": "near", "ran": status == "measured"}
    if near:
        near_entry["threshold"] = near.get("threshold")
    if status != "measured":
        near_entry["why_not"] = status or "not asked (--no-near)"
    out.append(near_entry)
    per_column = any(m.per_column for m in measurements)
    out.append({"check": "per_column", "ran": per_column,
                **({} if per_column else {"why_not": "one text column" if asked(EXACT_METHOD) else "not asked"})})
    out.append({"check": "blank_rows", "ran": asked(ROWS_METHOD)})
    if groups is None:
        out.append({"check": "groups", "ran": False, "why_not": "not asked"})
    else:
        measured = [g for g in groups if "error" not in g]
        kept = [g["group_column"] for g in measured
                if g["repeats"] or group_candidates.get(g["group_column"]) == "declared"]
        row_ids = [g["group_column"] for g in measured if g["group_column"] not in kept]
        entry: dict[str, Any] = {"check": "groups", "ran": bool(kept), "columns": kept, "row_ids": row_ids}
        if failed := {g["group_column"]: g["error"] for g in groups if "error" in g}:
            entry["not_measured"] = failed
        if not kept:
            entry["why_not"] = "no group column (id-like columns whose values repeat within a split, or declared)"
        out.append(entry)
    if date_rows is None:
        out.append({"check": "time_order", "ran": False, "why_not": "not asked"})
    else:
        dated = [d["date_column"] for d in date_rows]
        out.append({"check": "time_order", "ran": bool(dated), "columns": dated,
                    **({} if dated else {"why_not": "no date column"}),
                    **({"not_measured": dates_failed} if dates_failed else {})})
    out.append({"check": "contamination", "ran": False, "why_not": "no benchmarks given"})
    if semantic is None:
        out.append({"check": "semantic", "ran": False, "why_not": "not asked (--semantic)"})
    elif not semantic.info.get("ran", True):
        out.append({"check": "semantic", "ran": False, "why_not": semantic.info["why_not"]})
    else:
        info = semantic.info
        out.append({"check": "semantic", "ran": True, "threshold": info["threshold"], "model": info["model"],
                    "test_rows_with_candidates": info["test_rows_with_candidates"], "pairs": info["pairs"]})
    return out


def with_contamination_check(rows: list[dict[str, Any]], benchmarks: list[tuple[str, str, str]] | None) -> None:
    """Record on each row's ``checks`` whether the 13-gram check ran, and against which benchmarks
    (``(id, config, split)``; None or empty: it did not run)."""
    for row in rows:
        checks = json.loads(row["checks"]) if isinstance(row.get("checks"), str) else row.get("checks")
        if not checks:
            continue
        for entry in checks:
            if entry["check"] == "contamination":
                entry.clear()
                entry.update({"check": "contamination", "ran": bool(benchmarks)})
                if benchmarks:
                    entry["benchmarks"] = [f"{b}[{c}/{s}]" for b, c, s in benchmarks]
                else:
                    entry["why_not"] = "no benchmarks given"
        row["checks"] = _json(checks)


def example_row(data: ConfigData, example: dict[str, Any], *, measured_at: Any, run_id: str | None) -> dict[str, Any]:
    """One row of the ``examples`` table: an engine example with its provenance, values cut short."""
    key, key_truncated = _truncated(example["key"])
    labels, _ = _truncated(example["labels"]) if example["labels"] is not None else (None, False)
    return {
        "dataset_id": data.dataset_id,
        "revision_sha": data.revision_sha,
        "config": data.config,
        "label_column": example["label_column"],
        "profile": example["profile"],
        "kind": example["kind"],
        "rank": example["rank"],
        "key": _json(key),  # JSON text here: the columns keep their order
        "key_truncated": key_truncated,
        **{f"rows_{s}": example["rows"].get(s) for s in ("train", "validation", "test")},
        "positions": _json(example["positions"]),
        "labels": _json(labels) if labels is not None else None,
        "jaccard": None,  # a near-duplicate pair's (near_example_row)
        "partner": None,
        # LLE's leak and duplicate counts and the exact figures share these examples; the kinds
        # are defined by the exact method.
        "method": EXACT_METHOD,
        "method_version": EXACT_METHOD_VERSION,
        "tool_version": __version__,
        "measured_at": measured_at,
        "run_id": run_id,
    }


def near_example_row(data: ConfigData, example: dict[str, Any], *, measured_at: Any, run_id: str | None) -> dict[str, Any]:
    """One row of the ``examples`` table for a near-duplicate pair: its first side (a test or
    validation row) as key, position and labels; its other side as partner; and their Jaccard."""
    a, b = example["a"], example["b"]
    key, key_truncated = _truncated(a["text"])
    partner, partner_truncated = _truncated(b)
    label = example["label_column"]
    return {
        "dataset_id": data.dataset_id,
        "revision_sha": data.revision_sha,
        "config": data.config,
        "label_column": label,
        "profile": "normalized",  # near-duplicates compare the normalized texts
        "kind": example["kind"],
        "rank": example["rank"],
        "key": _json(key),
        "key_truncated": key_truncated or partner_truncated,
        "rows_train": None, "rows_validation": None, "rows_test": None,
        "positions": _json({a["split"]: [a["position"]]}),
        "labels": _json(a["labels"]) if a["labels"] else None,  # {label column: value}, as the partner's
        "jaccard": example["jaccard"],
        "partner": _json(partner),
        "method": NEAR_METHOD,
        "method_version": NEAR_METHOD_VERSION,
        "tool_version": __version__,
        "measured_at": measured_at,
        "run_id": run_id,
    }


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def _truncated(value: Any) -> tuple[Any, bool]:
    """The value with long strings and lists cut (recursively), and whether anything was cut."""
    if isinstance(value, str):
        return (value[:EXAMPLE_VALUE_CHARS] + "…", True) if len(value) > EXAMPLE_VALUE_CHARS else (value, False)
    if isinstance(value, (list, tuple)):
        items = [_truncated(v) for v in value[:EXAMPLE_VALUE_ITEMS]]
        return [v for v, _ in items], len(value) > EXAMPLE_VALUE_ITEMS or any(cut for _, cut in items)
    if isinstance(value, dict):
        cut = {k: _truncated(v) for k, v in value.items()}
        return {k: v for k, (v, _) in cut.items()}, any(c for _, c in cut.values())
    if isinstance(value, (bytes, bytearray)):
        return _truncated(value.hex())
    return value, False
