"""One error model for every stage and command.

Every hubsurvey error carries the process exit code it means and a short stable ``error_class``
(stored with failed jobs and runs). Messages are one line that names the dataset, the config and
(where known) the split, then the cause, so that a failure in an overnight run explains itself.
:func:`one_line` is the one formatter every command prints errors through; it scrubs secrets.

Exit codes (documented in the README and ``hubsurvey --help``):

====  =====================================================================================
0     success
1     partial: some configs or datasets failed, the rest was stored
2     bad input: nothing could be measured, or a command-line value is out of range
3     the results DB cannot be used (locked, newer schema, not a hubsurvey DuckDB, read-only)
4     the Hub cannot be used (unreachable, listing refused, authentication)
5     internal error: a bug in hubsurvey (the traceback is kept with the job or run)
====  =====================================================================================
"""

from __future__ import annotations

import os
from enum import IntEnum


class ExitCode(IntEnum):
    OK = 0
    PARTIAL = 1
    BAD_INPUT = 2
    STORE = 3
    HUB = 4
    INTERNAL = 5


class HubsurveyError(Exception):
    """Base class: every error hubsurvey raises on purpose."""

    exit_code: ExitCode = ExitCode.INTERNAL
    #: a short stable class name stored with failed jobs and runs
    error_class = "internal"


class SurveyError(HubsurveyError):
    """Something stopped one (dataset, config) from being measured."""

    exit_code = ExitCode.BAD_INPUT
    error_class = "survey_error"


class BadInputError(SurveyError):
    """The dataset cannot be measured as it is (no test split, empty test, unsafe names...)."""

    error_class = "bad_input"


class UnreadableDataError(SurveyError):
    """A data file could not be read (truncated, corrupt, not Parquet)."""

    error_class = "unreadable"


class SchemaMismatchError(SurveyError):
    """Splits (or files of one split) disagree on their columns or types."""

    error_class = "schema_mismatch"


class UsageError(HubsurveyError):
    """A command-line value is out of range or a target is neither a folder nor a Hub id."""

    exit_code = ExitCode.BAD_INPUT
    error_class = "usage"


class OutputExistsError(UsageError):
    """An output folder holds files and overwriting was not asked for."""

    error_class = "output_exists"


class StoreError(HubsurveyError):
    """The results DB cannot be used (newer schema, locked, not a hubsurvey DuckDB file)."""

    exit_code = ExitCode.STORE
    error_class = "store"


class HubError(HubsurveyError):
    """The Hub cannot be used: unreachable, or it refused a request the whole command needs."""

    exit_code = ExitCode.HUB
    error_class = "hub"


class HubUnreachableError(HubError):
    """A name that does not resolve, a refused connection: not transient, give up at once."""

    error_class = "offline"


class InternalError(HubsurveyError):
    """A bug: anything that is not a known data, store or Hub error."""

    exit_code = ExitCode.INTERNAL
    error_class = "internal"


def exit_code_of(exc: BaseException) -> ExitCode:
    return exc.exit_code if isinstance(exc, HubsurveyError) else ExitCode.INTERNAL


def scrub(text: str, secrets: tuple[str | None, ...] = ()) -> str:
    """Remove secrets (``HF_TOKEN`` and any given) from a text. Every printed error passes here."""
    for secret in (*secrets, os.environ.get("HF_TOKEN"), os.environ.get("HUGGING_FACE_HUB_TOKEN")):
        if secret and len(secret) >= 4:
            text = text.replace(secret, "***")
    return text


def one_line(exc: BaseException) -> str:
    """The one-line form of an error, scrubbed of secrets.

    A hubsurvey error prints its own message (it already names the dataset and config); anything
    else is prefixed with its type, and an unexpected one says that it is a bug.
    """
    lines = str(exc).strip().splitlines()
    first = lines[0] if lines else ""
    if isinstance(exc, HubsurveyError):
        text = first or type(exc).__name__
    else:
        text = f"{type(exc).__name__}: {first}" if first else type(exc).__name__
    return scrub(text)
