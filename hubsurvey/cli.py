"""The ``hubsurvey`` command: the top of the package, the only module that imports the commands.

Every command is a plain function in :mod:`hubsurvey.commands`, registered in one place,
:data:`COMMANDS`, and run inside one error handler: a :class:`~hubsurvey.core.errors.HubsurveyError`
prints ``error: <one line>`` on stderr and exits with its code; anything else is a bug: one line
saying so, exit 5, the traceback logged at debug level (``-v``).
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import importlib
import logging
import os
import shlex
import signal
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import click
import typer
from typer.core import TyperGroup
from typer.models import CommandInfo

from hubsurvey import __version__
from hubsurvey.core.errors import ExitCode, HubsurveyError, one_line
from hubsurvey.core.runs import Interrupted
from hubsurvey.core.safety import visible, visible_output
from hubsurvey.core.settings import register_token
from hubsurvey.core.signals import STOP_REQUESTED, sigterm_as_ctrl_c, stop_signal
from hubsurvey.logs import setup_logging

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
  130  interrupted by Ctrl-C: a run keeps its pending jobs for the next one
  143  stopped by SIGTERM, as Ctrl-C stops it
"""

@dataclass(frozen=True)
class Command:
    """One command: the function of its name in ``module``, and the one line ``--help`` lists it
    with (its docstring's first line; a test keeps the two equal)."""

    name: str
    module: str
    summary: str

    def function(self) -> Callable[..., Any]:
        return getattr(importlib.import_module(self.module), self.name)


#: The one place commands are registered, in the order ``--help`` lists them. A command's module
#: (and the stage it calls) is imported only when that command runs or shows its help, as pip's
#: command table does: ``hubsurvey --help`` imports none of them, and a command only its own.
COMMANDS: tuple[Command, ...] = (
    Command("audit", "hubsurvey.commands.audit",
            "Measure a dataset's leaks and duplicates (LLE, exact and near-duplicate methods), store and print them."),
    Command("crawl", "hubsurvey.commands.crawl",
            "List Hub datasets, apply the survey's filters and record every one with its outcome."),
    Command("run", "hubsurvey.commands.survey",
            "Crawl, measure every eligible config not measured at its current sha, refresh the report."),
    Command("status", "hubsurvey.commands.survey", "Summarise the DB: last run, queue, failures by class."),
    Command("demo", "hubsurvey.commands.survey",
            "Generate a mini-hub, serve it on loopback and survey it (no network; never touches real results)."),
    Command("crossleaks", "hubsurvey.commands.crossleaks",
            "Find leaks across datasets: every test split against every other dataset's splits."),
    Command("show", "hubsurvey.commands.analysis",
            "Print the stored examples behind a dataset's counts (leaks, duplicates, label conflicts)."),
    Command("sql", "hubsurvey.commands.analysis",
            "Run a SQL query over the results DB (read-only, no file access) and print the result."),
    Command("report", "hubsurvey.commands.results", "Render the findings as REPORT.md and a self-contained report.html."),
    Command("export", "hubsurvey.commands.results",
            "Export the results as Parquet (NULL stays null) and CSV (NULL written NR)."),
    Command("publish", "hubsurvey.commands.publish",
            "Build the results dataset (Parquet, CSV, card) and, with --push, upload it in one commit."),
    Command("contamination", "hubsurvey.commands.contamination",
            "Check the surveyed datasets against benchmark test sets (13-gram contamination), alone."),
    Command("exposure", "hubsurvey.commands.exposure",
            "List the Hub models whose cards declare a contaminated dataset as training data."),
    Command("scores", "hubsurvey.commands.scores",
            "Read the scores Hub models report on the surveyed datasets, and flag those at risk."),
    Command("check", "hubsurvey.commands.check",
            "Gate a dataset in CI: measure it as audit does and fail (exit 6) when a figure is above its limit."),
    Command("notify", "hubsurvey.commands.notify",
            "Draft (and with --post, open) one Hub discussion per dataset at or above the threshold."),
    Command("site", "hubsurvey.commands.site",
            "Build a static site of the results: an index of every dataset, and each dataset on the page of its shard."),
    Command("history", "hubsurvey.commands.history",
            "Print every revision measured of a dataset: when, which run, its verdict and headline figures."),
    Command("clean", "hubsurvey.commands.clean",
            "Write each config's test split without its contaminated rows (in train or validation, or repeated)."),
)
_BY_NAME = {command.name: command for command in COMMANDS}


def command_functions() -> list[Callable[..., Any]]:
    """Every command's function, in :data:`COMMANDS`' order (each module imported)."""
    return [command.function() for command in COMMANDS]


class _Commands(TyperGroup):
    """The group of :data:`COMMANDS`: every name is known from the start (the order of ``--help``,
    the suggestion for a mistyped one), and a command is built from its function, inside the error
    handler, the first time it is asked for; the list in ``--help`` is the table's."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.commands.update(dict.fromkeys(_BY_NAME))  # type: ignore[arg-type]  # built by get_command

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        if self.commands.get(cmd_name) is None and cmd_name in _BY_NAME:
            entry = _BY_NAME[cmd_name]
            info = CommandInfo(name=entry.name, callback=handled(entry.function()), short_help=entry.summary)
            self.commands[cmd_name] = typer.main.get_command_from_info(info, pretty_exceptions_short=True,
                                                                       rich_markup_mode=None)
        return self.commands.get(cmd_name)

    def format_commands(self, ctx: Any, formatter: Any) -> None:
        with formatter.section("Commands"):
            formatter.write_dl([(command.name, command.summary) for command in COMMANDS])


app = typer.Typer(
    cls=_Commands,
    add_completion=False,
    no_args_is_help=True,
    rich_markup_mode=None,  # plain help: no <bool> type tags, and \b blocks kept as written
    pretty_exceptions_enable=False,
    # color: click drops CSI sequences from echoed text off a terminal (OSC and BEL pass); kept, every
    # one reaches the output filter (visible_output), which shows it as text, on a terminal or not
    context_settings={"help_option_names": ["-h", "--help"], "color": True},
)


def handled(command: Callable[..., Any]) -> Callable[..., Any]:
    """Run ``command`` inside the one error handler (see the module docstring)."""

    @functools.wraps(command)
    def run(*args: Any, **kwargs: Any) -> Any:
        try:
            with visible_output(), sigterm_as_ctrl_c():
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
            if STOP_REQUESTED.is_set():  # a query or a download the stop cut short
                raise _stopped(e) from None
            log.debug("%s failed", command.__name__, exc_info=True)
            typer.echo(f"error: {visible(one_line(e), one_line=True)}", err=True)
            raise typer.Exit(int(e.exit_code)) from None
        except KeyboardInterrupt as e:
            raise _stopped(e) from None
        except Exception as e:
            if STOP_REQUESTED.is_set():  # the stop's doing (an interrupted DuckDB query): as Ctrl-C ends
                raise _stopped(e) from None
            log.debug("internal error in %s", command.__name__, exc_info=True)
            typer.echo(f"internal error (a bug in hubsurvey): {visible(one_line(e), one_line=True)}", err=True)
            raise typer.Exit(int(ExitCode.INTERNAL)) from None

    return run


def interrupted_line(error: BaseException) -> str:
    """The one line a command stopped by Ctrl-C or SIGTERM ends with: what it left behind (a run's
    pending jobs) and the command line that resumes it."""
    if Path(sys.argv[0]).name == "hubsurvey" or sys.argv[0].endswith(os.path.join("hubsurvey", "cli.py")):
        again = shlex.join(["hubsurvey", *sys.argv[1:]])
    else:  # called from Python (tests): the command's name is what is known
        context = click.get_current_context(silent=True)
        again = context.command_path if context is not None else "the same command"
    if isinstance(error, Interrupted):
        return f"interrupted: {error.detail}, resume with `{again}`"
    return f"interrupted: run again with `{again}`"


def _stopped(error: BaseException) -> typer.Exit:
    """Ctrl-C or SIGTERM: one line on stderr, and exit 130 (SIGINT) or 143 (SIGTERM), as a shell
    reports a command its signal ended."""
    log.debug("interrupted", exc_info=error)
    with contextlib.suppress(Exception):  # a closed stderr: the exit code still says it
        typer.echo(visible(interrupted_line(error), one_line=True), err=True)
    return typer.Exit(int(ExitCode.TERMINATED if stop_signal() == signal.SIGTERM else ExitCode.INTERRUPTED))


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
    setup_logging(verbose=verbose, level=log_level)
    register_token()




def main() -> None:
    """The ``hubsurvey`` console command: :data:`app`, then the process ends without the interpreter's
    teardown.

    By then every store is closed, every pool joined and every file written, and what the
    interpreter would still do is free its objects one by one and unload numba's compiled code:
    0.2 s after ``--help`` and 0.5 s after an audit of a million rows (``docs/benchmarks.md``,
    "Start-up and exit"). So the exit hooks run as the interpreter runs them (the thread pools',
    then ``atexit``'s: the logs flushed, Dask's clients closed, temporary folders removed), the
    output is flushed, and the process ends with the command's exit code. ``app`` itself, as tests
    call it in-process, ends as any Python function does."""
    try:
        app()
    except SystemExit as e:
        code = e.code
    else:
        code = 0
    if code is not None and not isinstance(code, int):  # a message to print: Python's own exit prints it
        raise SystemExit(code)
    exit_now(int(code or 0))


def exit_now(code: int) -> None:
    """End the process with ``code`` once the exit hooks have run and the output is flushed, without
    the interpreter's teardown (see :func:`main`). A second Ctrl-C while a hook waits ends it at
    once, with the code it had.

    A command stopped by Ctrl-C or SIGTERM has already stopped what it owns (its workers, its
    store), so its threads are not waited for: what still runs there is a call to the Hub whose
    answer nobody reads, and one the Hub never answers would hold the exit until its deadline."""
    try:
        shutdown = getattr(threading, "_shutdown", None)  # joins non-daemon threads, runs the pools' hooks
        if shutdown is not None and code not in (ExitCode.INTERRUPTED, ExitCode.TERMINATED):
            shutdown()
        atexit._run_exitfuncs()
    except KeyboardInterrupt:
        pass
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a reader that stopped reading, or a stream closed
            stream.flush()
    os._exit(code)


if __name__ == "__main__":  # pragma: no cover
    main()
