"""The ``hubsurvey`` command: the top of the package, the only module that imports the commands.

Every command is a plain function (here for ``audit``, in :mod:`hubsurvey.commands` for the rest)
registered in one place, :data:`COMMANDS`, and run inside one error handler: a
:class:`~hubsurvey.core.errors.HubsurveyError` prints ``error: <one line>`` on stderr and exits with
its code; anything else is a bug: one line saying so, exit 5, the traceback logged at debug level
(``-v``).
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import os
import signal
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Annotated, Any

import click
import typer

from hubsurvey import __version__
from hubsurvey.commands.options import (
    MAX_COUNT,
    Benchmarks,
    Db,
    Examples,
    Format,
    Json,
    NoNear,
    Roles,
    at_least,
    output_format,
)
from hubsurvey.commands.per_column import per_column_json, render_per_column
from hubsurvey.core import figures
from hubsurvey.core.errors import BadInputError, ExitCode, HubsurveyError, one_line
from hubsurvey.core.runs import STOP_REQUESTED
from hubsurvey.core.safety import json_text, visible, visible_output
from hubsurvey.core.store import DEFAULT_DB

log = logging.getLogger("hubsurvey.cli")

HELP = """hubsurvey: can I believe the test split of this dataset?

Measures leaks (test rows also in train or validation) and duplicates in the splits of Hugging Face
Hub datasets (the LLE method): one dataset with `audit`, or the whole Hub, unattended, with `run`.
Results go to a DuckDB file (results.duckdb) that `sql`, `report`, `export` and `publish` read.

\b
Start here:
  hubsurvey demo                 a whole survey of a generated mini-hub, offline
  hubsurvey audit OWNER/NAME     measure one Hub dataset (or a local folder)
  hubsurvey COMMAND -h           the options of one command

\b
Exit codes:
  0  success
  1  partial: some configs or datasets failed, the rest was stored
  2  bad input: nothing could be measured, or a command-line value is out of range
  3  the results DB cannot be used (missing, empty, locked, newer schema)
  4  the Hub cannot be used (unreachable, listing refused, authentication)
  5  internal error: a bug in hubsurvey (-v shows the traceback)
  6  check failed: a limit of `hubsurvey check` does not hold (all was measured)
"""

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    rich_markup_mode=None,  # plain help: no <bool> type tags, and \b blocks kept as written
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _interrupt(signum: int, _frame: Any) -> None:
    STOP_REQUESTED.set()
    raise KeyboardInterrupt(f"signal {signal.Signals(signum).name}")


@contextlib.contextmanager
def _sigterm_as_ctrl_c() -> Iterator[None]:
    """SIGTERM (what ``systemctl stop`` and ``kill`` send) stops a command as Ctrl-C does: the run
    is recorded interrupted and its lock, holder file, snapshot and WAL are cleaned up."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    STOP_REQUESTED.clear()  # a command of its own (the tests run several in one process)
    previous = {number: signal.signal(number, _interrupt) for number in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


def _keep_control_sequences() -> None:
    """click (and typer's copy of it) drops CSI sequences from echoed text, and only off a terminal,
    while OSC and BEL pass: the command's context asks it to keep them all, so that the output
    filter shows every one as text, on a terminal or not."""
    getters: list[Callable[..., Any]] = [click.get_current_context]
    with contextlib.suppress(ImportError):  # typer vendors click from 0.2x
        from typer._click.globals import get_current_context

        getters.append(get_current_context)
    for get in getters:
        context = get(silent=True)
        if context is not None:
            context.color = True


def handled(command: Callable[..., Any]) -> Callable[..., Any]:
    """Run ``command`` inside the one error handler (see the module docstring)."""

    @functools.wraps(command)
    def run(*args: Any, **kwargs: Any) -> Any:
        _keep_control_sequences()
        try:
            with visible_output(), _sigterm_as_ctrl_c():
                return command(*args, **kwargs)
        except (typer.Exit, typer.Abort, click.exceptions.Exit, click.exceptions.Abort, click.ClickException):
            raise
        except BrokenPipeError:
            # the reader stopped reading (`... | head`): what it took is what it asked for, as with
            # any Unix filter; stdout goes to /dev/null so the interpreter's final flush stays quiet
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            raise typer.Exit(int(ExitCode.OK)) from None
        except HubsurveyError as e:
            log.debug("%s failed", command.__name__, exc_info=True)
            typer.echo(f"error: {visible(one_line(e), one_line=True)}", err=True)
            raise typer.Exit(int(e.exit_code)) from None
        except Exception as e:
            if STOP_REQUESTED.is_set():  # the stop's doing (an interrupted DuckDB query): as Ctrl-C ends
                raise KeyboardInterrupt(str(e)) from e
            log.debug("internal error in %s", command.__name__, exc_info=True)
            typer.echo(f"internal error (a bug in hubsurvey): {visible(one_line(e), one_line=True)}", err=True)
            raise typer.Exit(int(ExitCode.INTERNAL)) from None

    return run


def _show_version(value: bool) -> None:
    if value:
        typer.echo(f"hubsurvey {__version__}")
        raise typer.Exit()


@app.callback(help=HELP)
@handled
def _main(
    version: Annotated[bool, typer.Option("--version", is_eager=True, callback=_show_version, help="Print the version and exit")] = False,
    verbose: Annotated[int, typer.Option("-v", "--verbose", count=True, show_default=False, help="More log detail (-v: debug, with tracebacks)")] = 0,
    log_level: Annotated[str | None, typer.Option("--log-level", help="DEBUG, INFO, WARNING or ERROR [default: INFO]")] = None,
) -> None:
    from hubsurvey.core.settings import register_token
    from hubsurvey.logs import setup_logging

    setup_logging(verbose=verbose, level=log_level)
    register_token()




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
    blocks = [block for block in (render_exact(row), render_per_column(row), render_near(row), render_fingerprints(row)) if block]
    return "\n".join([*lines, *blocks])


def fingerprints_json(row: dict[str, Any]) -> dict[str, str | None]:
    """Each split's content fingerprint (``hs1:...``; null for an absent split)."""
    return {split: row.get(f"fingerprint_{split}") for split in ("train", "validation", "test")}


def render_fingerprints(row: dict[str, Any]) -> str:
    """The splits' content fingerprints, to cite the split measured (docs/method.md)."""
    shown = [f"{split} {fp}" for split, fp in fingerprints_json(row).items() if fp]
    return f"  {'fingerprints':26}" + "  ".join(shown) if shown else ""


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


def _hub_errors() -> tuple[type[BaseException], ...]:
    """The Hub's answers about one dataset (missing, gated, a bad revision, or a failure after every
    retry), told apart by :func:`_hub_refusal`.

    hubsurvey's own Hub errors (unreachable, timed out: exit 4) keep their exit code."""
    from huggingface_hub.errors import HfHubHTTPError

    return (HfHubHTTPError,)


def _hub_refusal(target: str, exc: BaseException) -> HubsurveyError:
    """A refusal of the dataset (4xx but 408 and 429) is bad input (exit 2); a Hub that kept
    failing (429, 5xx after every retry) is the Hub (exit 4)."""
    from hubsurvey.core.errors import HubError
    from hubsurvey.core.hub import is_transient

    if is_transient(exc):
        return HubError(f"{target}: {one_line(exc)}")
    return BadInputError(f"{target}: {one_line(exc)}")


def _audit_csv(rows: list[dict[str, Any]]) -> str:
    from hubsurvey.commands.analysis import format_csv

    objs = [lle_json(r) for r in rows]
    names = list(objs[0]) if objs else [*figures.lle_published_columns(), "dataset_id", "config", "label_column", "text_columns"]
    return format_csv(names, [[o[n] for n in names] for o in objs])


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
) -> None:
    """Measure a dataset's leaks and duplicates (LLE, exact and near-duplicate methods), store and print them.

    Prints the LLE figures, then the exact figures (raw and normalized profiles), then the
    near-duplicate figures (--no-near skips them). --format json (or --json) prints only a JSON
    array, one object per row: the LLE keys, the exact figures under "exact", the near ones under
    "near" and each split's content fingerprint under "fingerprints". The examples behind the counts
    are stored; `hubsurvey show` prints them. --benchmarks FILE also checks each config for
    contamination with those benchmarks (stored in the contamination table; the table format prints
    one line per split and benchmark).
    """
    from hubsurvey.core.hub import HubClient
    from hubsurvey.core.settings import Settings
    from hubsurvey.survey.audit import audit as run_audit

    fmt = output_format(fmt, as_json)
    at_least("--examples", examples, 0, MAX_COUNT)
    if target is None:
        from hubsurvey.survey.sample import write_sample

        target = str(write_sample(Path(tempfile.gettempdir()) / "hubsurvey-sample" / "hubsurvey__sample-reviews"))
        if fmt == "table":
            typer.echo(f"No target given: auditing the generated sample dataset at {target}\n")
    try:
        outcome = run_audit(target, config=config, examples=examples, near=not no_near, db=db, roles_file=roles,
                            client=HubClient(Settings.from_env()),  # the settings, read once
                            benchmarks_file=benchmarks)
    except _hub_errors() as e:
        raise _hub_refusal(target, e) from None
    if fmt == "json":
        objs = [{**lle_json(r), "exact": exact_json(r), "near": near_json(r), "fingerprints": fingerprints_json(r)}
                for r in outcome.rows]
        typer.echo(json_text(objs, indent=1, default=str))
    elif fmt == "csv":
        sys.stdout.write(_audit_csv(outcome.rows))
    else:
        for result in outcome.results:
            for row in result.rows:
                typer.echo(render_row(row))
            typer.echo("")
        for r in outcome.contamination:
            typer.echo(visible(f"contamination: {r['config']}/{r['split_name']} against {r['benchmark_id']} "
                               f"[{r['benchmark_config']}/{r['benchmark_split']}] @ {(r['benchmark_revision'] or '?')[:12]}: "
                               f"{r['contaminated_rows']} of {r['rows_split']} rows", one_line=True))
        if outcome.results:
            shown = f"; examples: hubsurvey show {outcome.dataset_id} --db {db}" if examples else ""
            typer.echo(f"stored {len(outcome.rows)} row(s) in {db}{shown}")
    for error in outcome.errors:
        typer.echo(f"error: {visible(str(error), one_line=True)}", err=True)
    if outcome.errors:
        raise typer.Exit(outcome.exit_code)


def _commands() -> list[Callable[..., Any]]:
    """Every command, in the order ``hubsurvey --help`` lists them."""
    from hubsurvey.commands import (
        analysis,
        check,
        clean,
        contamination,
        crawl,
        exposure,
        history,
        notify,
        scores,
        site,
        survey,
    )

    return [audit, crawl.crawl, survey.run, survey.status, survey.demo,
            analysis.crossleaks, analysis.show, analysis.sql, analysis.report, analysis.export, analysis.publish,
            contamination.contamination, exposure.exposure, scores.scores, check.check, notify.notify, site.site, history.history,
            clean.clean]


#: the one place commands are registered, each inside the error handler
COMMANDS = _commands()
for _command in COMMANDS:
    app.command(_command.__name__, short_help=(_command.__doc__ or "").strip().splitlines()[0])(handled(_command))


def main() -> None:  # pragma: no cover - console entry point
    app()


if __name__ == "__main__":  # pragma: no cover
    main()
