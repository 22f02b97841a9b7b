"""The ``hubsurvey`` command. Each command is a thin layer over one documented Python function.

Exit codes (every command):
  0  success
  1  partial: some configs or datasets failed, the rest was stored
  2  bad input: nothing could be measured (the reason is printed on one line)
  3  the results DB could not be used (locked, newer schema, not a DuckDB file)
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any, Optional

import typer

from hubsurvey.core.store import DEFAULT_DB, StoreError

app = typer.Typer(add_completion=False, no_args_is_help=True, help=__doc__.split("\n")[0])

EXIT_OK, EXIT_PARTIAL, EXIT_BAD_INPUT, EXIT_STORE = 0, 1, 2, 3


@app.callback()
def _main() -> None:
    """hubsurvey: can I believe the test split of this dataset?"""

LLE_JSON_KEYS = (
    "dataset_name",
    "text_leaks_train_wrt_test",
    "text_leaks_validation_wrt_test",
    "text_duplication_train",
    "text_duplication_validation",
    "text_duplication_test",
    "text_test_biased",
    "text_and_label_leaks_train_wrt_test",
    "text_and_label_leaks_validation_wrt_test",
    "text_and_label_duplication_train",
    "text_and_label_duplication_validation",
    "text_and_label_duplication_test",
    "text_and_label_test_biased",
    "difference_annotation_in_train_and_validation_splits",
)


def fail(message: str, code: int = EXIT_BAD_INPUT) -> typer.Exit:
    """Print one line on stderr and return the Exit to raise."""
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(code)


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


class progress_bar:
    """tqdm on a terminal; on a pipe (cron) a plain log line every ``every`` items instead."""

    def __init__(self, desc: str, *, unit: str = "it", total: int | None = None, every: int = 1000):
        self.desc, self.unit, self.total, self.every = desc, unit, total, every
        self._bar = None
        self._last_logged = 0

    def __enter__(self) -> "progress_bar":
        if sys.stderr.isatty():
            from tqdm import tqdm

            self._bar = tqdm(desc=self.desc, unit=f" {self.unit}", total=self.total, file=sys.stderr)
        return self

    def update_to(self, counts: dict[str, Any]) -> None:
        done = counts.get("listed", counts.get("done", 0))
        if self._bar is not None:
            if counts.get("total") and self._bar.total != counts["total"]:
                self._bar.total = counts["total"]
            self._bar.set_postfix({k: v for k, v in counts.items() if isinstance(v, int) and k != "listed"}, refresh=False)
            self._bar.update(done - self._bar.n)
        elif done - self._last_logged >= self.every or done == counts.get("total"):
            self._last_logged = done
            typer.echo(f"{self.desc}: {json.dumps(counts, sort_keys=True, default=str)}", err=True)

    def __exit__(self, *exc: Any) -> None:
        if self._bar is not None:
            self._bar.close()


def lle_json(row: dict[str, Any]) -> dict[str, Any]:
    """One row as the --json object: the lle view's columns as numbers, plus its identity."""
    out: dict[str, Any] = {}
    for key in LLE_JSON_KEYS:
        source = "difference_annotation" if key.startswith("difference_annotation") else key
        value = row[source]
        if value is not None and key.endswith("test_biased"):
            value = round(value, 3)
        elif value is not None and source == "difference_annotation":
            value = float(value)
        out[key] = value
    out.update(
        dataset_id=row["dataset_id"],
        config=row["config"],
        label_column=row["label_column"],
        text_columns=list(row["text_columns"]),
    )
    return out


def _fmt(value: Any, percent: bool = False) -> str:
    if value is None:
        return "NR"
    return f"{round(value, 3)}%" if percent else str(value)


def render_row(row: dict[str, Any]) -> str:
    """A readable block for one measured (dataset, config, label column)."""
    lines = [
        f"{row['dataset_id']} @ {row['revision_sha'][:12]}  config={row['config']}  "
        f"label={row['label_column'] or '(none)'}  text={','.join(row['text_columns'])}",
        "  rows: " + "  ".join(f"{s} {row[f'rows_{s}']}" for s in ("train", "validation", "test") if row[f"rows_{s}"] is not None),
        f"  {'':26}{'text':>12}{'text+label':>14}",
    ]
    labels = [
        ("leaks train→test", "leaks_train_wrt_test"),
        ("leaks validation→test", "leaks_validation_wrt_test"),
        ("duplicates train", "duplication_train"),
        ("duplicates validation", "duplication_validation"),
        ("duplicates test", "duplication_test"),
        ("test biased", "test_biased"),
    ]
    for title, name in labels:
        pct = name == "test_biased"
        lines.append(
            f"  {title:26}{_fmt(row['text_' + name], pct):>12}{_fmt(row['text_and_label_' + name], pct):>14}"
        )
    lines.append(f"  {'difference_annotation':26}{_fmt(row['difference_annotation']):>12}")
    return "\n".join(lines)


def render_examples(examples: dict[str, list[dict[str, Any]]]) -> str:
    lines = []
    for kind in ("leaked", "duplicated"):
        lines.append(f"  top {kind} examples (rows per split):")
        if not examples.get(kind):
            lines.append("    (none)")
        for ex in examples.get(kind, []):
            counts = " ".join(f"{s}={n}" for s, n in ex["counts"].items() if n)
            text = json.dumps(ex["text"], ensure_ascii=False, default=str)
            lines.append(f"    [{counts}] {text[:160]}")
    return "\n".join(lines)


@app.command()
def audit(
    target: Optional[str] = typer.Argument(None, help="Hub id (owner/name) or local folder; default: the generated sample"),
    config: Optional[str] = typer.Option(None, "--config", help="Measure only this config"),
    examples: int = typer.Option(0, "--examples", help="Also print the top N leaked and duplicated examples"),
    as_json: bool = typer.Option(False, "--json", help="Print only a JSON array, one object per row"),
    db: Path = typer.Option(Path(DEFAULT_DB), "--db", help="Results DB"),
    roles: Optional[Path] = typer.Option(None, "--roles", help="Roles override file (TOML)"),
) -> None:
    """Measure a dataset's leaks and duplicates (LLE method), store and print them."""
    from hubsurvey.survey.audit import audit as run_audit
    from hubsurvey.core.errors import HubsurveyError, exit_code_of, one_line

    if target is None:
        from hubsurvey.survey.sample import write_sample

        target = str(write_sample(Path(tempfile.gettempdir()) / "hubsurvey-sample" / "hubsurvey__sample-reviews"))
        if not as_json:
            typer.echo(f"No target given: auditing the generated sample dataset at {target}\n")
    try:
        outcome = run_audit(target, config=config, examples=examples, db=db, roles_file=roles)
    except StoreError as e:
        raise fail(str(e), EXIT_STORE)
    except HubsurveyError as e:  # bad input (2), the Hub unusable (4), a bug (5): one line each
        raise fail(one_line(e), e.exit_code)
    except Exception as e:  # anything unforeseen is a bug: one line, exit 5
        raise fail(f"{target}: {one_line(e)}", exit_code_of(e))
    if as_json:
        typer.echo(json.dumps([lle_json(r) for r in outcome.rows], ensure_ascii=False, indent=1))
    else:
        for result in outcome.results:
            for row in result.rows:
                typer.echo(render_row(row))
            if examples:
                typer.echo(render_examples(result.examples))
            typer.echo("")
        if outcome.results:
            typer.echo(f"stored {len(outcome.rows)} row(s) in {db}")
    for error in outcome.errors:
        typer.echo(f"error: {error}", err=True)
    if outcome.errors:
        raise typer.Exit(outcome.exit_code)


def _register_stage_commands() -> None:
    """Stages add their own commands (crawl, run, sql, export, publish...) when they exist."""
    import importlib

    for module in ("hubsurvey.crawler.cli", "hubsurvey.survey.cli", "hubsurvey.analysis.cli"):
        try:
            mod = importlib.import_module(module)
        except ModuleNotFoundError as e:
            if e.name != module:
                raise
            continue
        mod.register(app)


_register_stage_commands()


def main() -> None:  # pragma: no cover - console entry point
    app()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
