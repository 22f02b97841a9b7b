"""``hubsurvey audit``: a thin layer over :func:`hubsurvey.survey.audit.audit`, with its renderers.

The command opens the target (a Hub id, a local folder, or the generated sample) and the Hub
client, calls :func:`~hubsurvey.survey.audit.audit`, and renders the outcome: :func:`render_table`
(a block per measured row, :func:`render_row`, then the contamination lines and where it was
stored), :func:`render_json` or :func:`render_csv`. Each config and label column's block ends with
its verdict (:func:`verdict_line`, judged by :func:`row_verdicts` as every other surface judges it);
``--json`` carries it under ``"verdict"``. Each block of a row has a renderer of its own
(``render_exact``, ``render_per_column``, ``render_near``, ``render_fingerprints``) and, for
``--json``, its object (``exact_json``, ``per_column_json``, ``near_json``, ``fingerprints_json``).

A measured row carries the figures of each text column alone as ``per_column``:
``{column: {profile: {figure: value}}}``, for a config with two text columns or more (absent
otherwise). ``audit --json`` shows them under ``exact.per_column`` with the names ``exact.raw``
uses; the table shows a few of them per column (:data:`PER_COLUMN_SHOWN`).
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Annotated, Any

import typer

from hubsurvey.analysis.verdicts import ConfigVerdict, dataset_verdict
from hubsurvey.commands.beside import beside_json, render_beside
from hubsurvey.commands.common import format_csv, hub_client, is_hub_answer
from hubsurvey.commands.options import (
    MAX_COUNT,
    Benchmarks,
    Db,
    Examples,
    Format,
    Json,
    NoNear,
    Roles,
    Semantic,
    SemanticModel,
    SemanticThreshold,
    at_least,
    output_format,
)
from hubsurvey.core import figures
from hubsurvey.core.errors import BadInputError, HubError, HubsurveyError, UsageError, one_line
from hubsurvey.core.options import DEFAULT_SEMANTIC_THRESHOLD, share
from hubsurvey.core.safety import json_text, visible
from hubsurvey.core.store import DEFAULT_DB
from hubsurvey.survey.audit import AuditOutcome
from hubsurvey.survey.audit import audit as run_audit
from hubsurvey.survey.sample import write_sample
from hubsurvey.survey.semantic import SemanticRequest
from hubsurvey.survey.sources import is_folder

#: paraphrase candidates the table shows per config (``--json`` has every stored one)
SEMANTIC_PAIRS_SHOWN = 3

#: The figures the table shows for each text column (JSON has them all).
PER_COLUMN_SHOWN = ("test_rows_in_train", "test_rows_column_in_train_only", "test_rows_contaminated")


def audit(
    target: Annotated[str | None, typer.Argument(help="Hub id (owner/name) or local folder; default: the generated sample")] = None,
    config: Annotated[str | None, typer.Option("--config", help="Measure only this config")] = None,
    examples: Examples = figures.DEFAULT_EXAMPLES,
    no_near: NoNear = False,
    fmt: Format = None,
    as_json: Json = False,
    db: Db = Path(DEFAULT_DB),
    roles: Roles = None,
    benchmarks: Benchmarks = None,
    semantic: Semantic = False,
    semantic_threshold: SemanticThreshold = DEFAULT_SEMANTIC_THRESHOLD,
    semantic_model: SemanticModel = None,
) -> None:
    """Measure a dataset's leaks and duplicates (LLE, exact and near-duplicate methods), store and print them.

    Prints the LLE figures, then the exact figures (raw and normalized profiles), then the
    near-duplicate figures (--no-near skips them), and ends each config and label column with one
    line: its verdict and the figure that decided it. --format json (or --json) prints only a JSON
    array, one object per row: the LLE keys, the exact figures under "exact", the near ones under
    "near", each split's content fingerprint under "fingerprints" and the verdict under "verdict".
    The examples behind the counts are stored; `hubsurvey show` prints them. --benchmarks FILE also checks each config for
    contamination with those benchmarks (stored in the contamination table; the table format prints
    one line per split and benchmark). --semantic also lists paraphrase candidates for review (under
    "semantic" in JSON; stored in semantic_candidates), which never change a figure or a verdict.
    """
    fmt = output_format(fmt, as_json)
    at_least("--examples", examples, 0, MAX_COUNT)
    paraphrases = semantic_request(semantic, semantic_threshold, semantic_model)
    if target is None:
        target = str(write_sample(Path(tempfile.gettempdir()) / "hubsurvey-sample" / "hubsurvey__sample-reviews"))
        if fmt == "table":
            typer.echo(f"No target given: auditing the generated sample dataset at {target}\n")
    # A folder's audit needs no Hub client, and so never loads the Hub's HTTP stack (0.2-0.3 s of
    # imports); benchmarks may name Hub datasets, so they get one.
    client = hub_client() if benchmarks is not None or not is_folder(target) else None
    try:
        outcome = run_audit(target, config=config, examples=examples, near=not no_near, db=db, roles_file=roles,
                            client=client, benchmarks_file=benchmarks, semantic=paraphrases)
    except Exception as e:
        if not is_hub_answer(e):
            raise
        raise hub_refusal(target, e) from None  # the Hub's answer about this dataset
    if fmt == "json":
        typer.echo(render_json(outcome.rows))
    elif fmt == "csv":
        sys.stdout.write(render_csv(outcome.rows))
    else:
        render_table(outcome, db, examples)
    for error in outcome.errors:
        typer.echo(f"error: {visible(str(error), one_line=True)}", err=True)
    if outcome.errors:
        raise typer.Exit(outcome.exit_code)


def semantic_request(semantic: bool, threshold: float, model: str | None) -> SemanticRequest | None:
    """What --semantic asks (None: not asked); its other options without it are refused."""
    share("--semantic-threshold", threshold)
    if not semantic:
        if model is not None or threshold != DEFAULT_SEMANTIC_THRESHOLD:
            raise UsageError("--semantic-threshold and --semantic-model need --semantic")
        return None
    return SemanticRequest(threshold, model)


def hub_refusal(target: str, exc: BaseException) -> HubsurveyError:
    """A refusal of the dataset (4xx but 408 and 429: missing, gated, a bad revision) is bad input
    (exit 2); a Hub that kept failing (429, 5xx after every retry) is the Hub (exit 4)."""
    from hubsurvey.core.hub import is_transient  # here only once the Hub has answered

    if is_transient(exc):
        return HubError(f"{target}: {one_line(exc)}")
    return BadInputError(f"{target}: {one_line(exc)}")


# --- the table ------------------------------------------------------------------------------------


def render_table(outcome: AuditOutcome, db: Path, examples: int) -> None:
    """Print each measured row's block, the contamination lines, and where the rows were stored."""
    verdicts = row_verdicts(outcome.rows)
    for result in outcome.results:
        for row in result.rows:
            typer.echo(render_row(row))
            typer.echo(verdict_line(verdicts[row["config"], row["label_column"]]))
        typer.echo("")
    for found in outcome.contamination:
        typer.echo(render_contamination(found))
    if outcome.results:
        shown = f"; examples: hubsurvey show {outcome.dataset_id} --db {db}" if examples else ""
        typer.echo(f"stored {len(outcome.rows)} row(s) in {db}{shown}")


def render_row(row: dict[str, Any]) -> str:
    """A readable block for one measured (dataset, config, label column)."""
    kinds = figures.KEY_KINDS
    lines = [
        f"{row['dataset_id']} @ {row['revision_sha'][:12]}  config={row['config']}  "
        f"label={row['label_column'] or '(none)'}  text={','.join(row['text_columns'])}",
        "  rows: " + "  ".join(f"{s} {row[f'rows_{s}']}" for s in ("train", "validation", "test") if row[f"rows_{s}"] is not None),
        f"  {'':26}{kinds[0].title:>12}{kinds[1].title:>14}",
    ]
    for f in figures.KEY_FIGURES:
        cells = [figures.published(row[f.name(kind)], f.fmt) for kind in kinds]
        lines.append(f"  {f.title:26}{cells[0]:>12}{cells[1]:>14}")
    for rf in figures.ROW_FIGURES:
        lines.append(f"  {rf.title:26}{figures.published(row[rf.name], rf.fmt):>12}")
    blocks = [block for block in (render_exact(row), render_per_column(row), render_near(row), render_beside(row),
                                  render_semantic(row), render_fingerprints(row)) if block]
    return "\n".join([*lines, *blocks])


def render_contamination(found: dict[str, Any]) -> str:
    """One line per split and benchmark checked for contamination."""
    return visible(f"contamination: {found['config']}/{found['split_name']} against {found['benchmark_id']} "
                   f"[{found['benchmark_config']}/{found['benchmark_split']}] @ {(found['benchmark_revision'] or '?')[:12]}: "
                   f"{found['contaminated_rows']} of {found['rows_split']} rows", one_line=True)


def render_exact(row: dict[str, Any]) -> str:
    """The exact figures under the LLE block: count (percent of the split's rows) per profile."""
    if not (row.get("methods") or {}).get(figures.EXACT_METHOD) if isinstance(row.get("methods"), dict) else False:
        return ""
    profiles = figures.PROFILES
    lines = [f"  {'exact (rows, each once)':34}" + "".join(f"{p.name:>18}" for p in profiles)]
    for f in figures.PROFILE_FIGURES:
        cells = []
        for profile in profiles:
            cell = figures.published(row.get(f.name(profile)), figures.Format.COUNT)
            if f.percent and row.get(f"{profile.name}_{f.percent[0]}") is not None:
                cell += f" ({figures.published(row[f'{profile.name}_{f.percent[0]}'], figures.Format.PERCENT)})"
            cells.append(cell)
        lines.append(f"  {f.title:34}" + "".join(f"{c:>18}" for c in cells))
    return "\n".join(lines)


def render_per_column(row: dict[str, Any]) -> str:
    """The per-column block under the exact figures: per text column, count (percent of test) per profile."""
    per_column = row.get("per_column")
    if not per_column:
        return ""
    by_name = {c.name: c for c in figures.per_column_columns()}
    titles = {f.stem: f.title for f in figures.per_column_figures()}
    profiles = figures.PROFILES
    lines = [f"  {'per text column (rows, each once)':34}" + "".join(f"{p.name:>18}" for p in profiles)]
    for column, by_profile in per_column.items():
        lines.append(f"  {column}")
        for name in PER_COLUMN_SHOWN:
            count = by_name[name]
            percent = next((c for c in by_name.values() if c.figure is count.figure and c.percent_of), None)
            cells = []
            for profile in profiles:
                found = by_profile.get(profile.name, {})
                cell = figures.published(found.get(name), figures.Format.COUNT)
                if percent is not None and found.get(percent.name) is not None:
                    cell += f" ({figures.published(found[percent.name], figures.Format.PERCENT)})"
                cells.append(cell)
            lines.append(f"    {titles[name]:32}" + "".join(f"{c:>18}" for c in cells))
    return "\n".join(lines)


def _near_info(row: dict[str, Any]) -> dict[str, Any] | None:
    near = row.get("near")
    return json.loads(near) if isinstance(near, str) else near


def render_near(row: dict[str, Any]) -> str:
    """The near-duplicate figures under the exact ones: count (percent), then the curve."""
    info = _near_info(row)
    if not info:
        return ""
    lines = [f"  near-duplicates (Jaccard >= {info['threshold']}, {info['shingle']} shingles; {info['status']})"]
    for f in figures.NEAR_FIGURES:
        cell = figures.published(row.get(f.name), figures.Format.COUNT)
        if f.percent and row.get(f.percent[0]) is not None:
            cell += f" ({figures.published(row[f.percent[0]], figures.Format.PERCENT)})"
        lines.append(f"  {f.title:34}{cell:>18}")
    curve = json.loads(row["near_curve"]) if row.get("near_curve") else []
    if curve:
        lines.append(f"  {'test rows near train at J >=':34}" + "".join(f"{p['threshold']:>8}: {p['test_rows_near_train']}" for p in curve))
    return "\n".join(lines)


def render_semantic(row: dict[str, Any]) -> str:
    """The paraphrase candidates, when --semantic ran: one line of counts, then the first few pairs
    (highest cosine first), control characters made visible."""
    info = row.get("semantic")
    if not info:
        return ""
    if not info.get("ran", True):
        return visible(f"  paraphrase candidates for review: not searched: {info['why_not']}", one_line=True)
    rows_test = row.get("rows_test")
    share_of_test = (f" ({figures.published(100 * info['test_rows_with_candidates'] / rows_test, figures.Format.PERCENT)})"
                     if rows_test else "")
    lines = [visible(f"  paraphrase candidates for review (cosine >= {info['threshold']}, {info['model']}; not a leak count): "
                     f"{info['test_rows_with_candidates']} test row(s){share_of_test}, {info['pairs']} pair(s)", one_line=True)]
    for pair in (row.get("semantic_candidates") or [])[:SEMANTIC_PAIRS_SHOWN]:
        lines.append(visible(f"    {pair['cosine']:.3f}  test #{pair['test_position']} {pair['test_text'][:60]!r}  ~  "
                             f"{pair['partner_split']} #{pair['partner_position']} {pair['partner_text'][:60]!r}", one_line=True))
    return "\n".join(lines)


def render_fingerprints(row: dict[str, Any]) -> str:
    """The splits' content fingerprints, to cite the split measured (docs/method.md)."""
    shown = [f"{split} {fp}" for split, fp in fingerprints_json(row).items() if fp]
    return f"  {'fingerprints':26}" + "  ".join(shown) if shown else ""


# --- the verdict ---------------------------------------------------------------------------------------


def row_verdicts(rows: list[dict[str, Any]]) -> dict[tuple[str, str | None], ConfigVerdict]:
    """Each measured (config, label column)'s verdict, judged on the dataset's basis as every
    other surface judges it (:func:`hubsurvey.analysis.verdicts.dataset_verdict`)."""
    if not rows:
        return {}
    return {(v.config, v.label_column): v for v in dataset_verdict(rows).configs}


def verdict_line(verdict: ConfigVerdict) -> str:
    """The line that ends a config's block: config, label column, verdict and the figure that
    decided it, e.g. ``verdict hate [label]: unreliable: normalized_contaminated_test_pct 8.047%
    (not clean, normalized_contaminated_test_pct ≥ 5%; exact-2026)``."""
    return visible(f"verdict {verdict.config} [{verdict.label_column or '(no label)'}]: {verdict.reason}", one_line=True)


# --- JSON and CSV -----------------------------------------------------------------------------------


def render_json(rows: list[dict[str, Any]]) -> str:
    """The --json array: one object per row, the LLE keys, then "exact", "near", "fingerprints",
    what was measured beside them, "semantic" (only when --semantic ran) and "verdict" (:func:`row_verdicts`)."""
    verdicts = row_verdicts(rows)
    objs = [{**lle_json(r), "exact": exact_json(r), "near": near_json(r), "fingerprints": fingerprints_json(r),
             **beside_json(r), **semantic_json(r), "verdict": verdicts[r["config"], r["label_column"]].as_dict()}
            for r in rows]
    return json_text(objs, indent=1, default=str)


def render_csv(rows: list[dict[str, Any]]) -> str:
    """The LLE keys of each row as CSV (the header alone when nothing was measured)."""
    objs = [lle_json(r) for r in rows]
    names = list(objs[0]) if objs else [*figures.lle_published_columns(), "dataset_id", "config", "label_column", "text_columns"]
    return format_csv(names, [[o[n] for n in names] for o in objs])


def lle_json(row: dict[str, Any]) -> dict[str, Any]:
    """One row as the --json object: the lle view's columns as numbers, plus its identity."""
    out = figures.lle_record(row)
    out.update(
        dataset_id=row["dataset_id"],
        config=row["config"],
        label_column=row["label_column"],
        text_columns=list(row["text_columns"]),
    )
    return out


def exact_json(row: dict[str, Any]) -> dict[str, Any]:
    """The exact figures of one row as JSON: {"method", "raw": {...}, "normalized": {...}} (NR: null)."""
    out: dict[str, Any] = {"method": figures.EXACT_METHOD}
    for column in figures.figure_columns(figures.EXACT_METHOD):
        assert column.profile is not None
        stem = column.name.removeprefix(column.profile.name + "_")
        out.setdefault(column.profile.name, {})[stem] = figures.json_value(row.get(column.name), column.fmt)
    if (per_column := per_column_json(row)) is not None:  # absent for a config with one text column
        out["per_column"] = per_column
    return out


def per_column_json(row: dict[str, Any]) -> dict[str, dict[str, dict[str, Any]]] | None:
    """``{column: {"raw": {...}, "normalized": {...}}}`` with JSON numbers (NR: null); None when
    the row has no per-column figures (one text column), so that the key is left out."""
    per_column = row.get("per_column")
    if not per_column:
        return None
    columns = figures.per_column_columns()
    return {column: {profile: {c.name: figures.json_value(found.get(c.name), c.fmt) for c in columns}
                     for profile, found in by_profile.items()}
            for column, by_profile in per_column.items()}


def near_json(row: dict[str, Any]) -> dict[str, Any] | None:
    """The near figures of one row as JSON: {"method", "parameters", figures..., "curve"} (NR: null)."""
    info = _near_info(row)
    if not info:
        return None
    out: dict[str, Any] = {"method": figures.NEAR_METHOD, "parameters": info}
    for column in figures.figure_columns(figures.NEAR_METHOD):
        out[column.name] = figures.json_value(row.get(column.name), column.fmt)
    out["curve"] = json.loads(row["near_curve"]) if row.get("near_curve") else None
    return out


def semantic_json(row: dict[str, Any]) -> dict[str, Any]:
    """``{"semantic": {what ran, the counts, "candidates": [pairs]}}`` when --semantic ran; else nothing."""
    info = row.get("semantic")
    if not info:
        return {}
    return {"semantic": {**info, "candidates": list(row.get("semantic_candidates") or [])}}


def fingerprints_json(row: dict[str, Any]) -> dict[str, str | None]:
    """Each split's content fingerprint (``hs1:...``; null for an absent split)."""
    return {split: row.get(f"fingerprint_{split}") for split in ("train", "validation", "test")}
