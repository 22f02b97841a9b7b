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
6     check failed: everything was measured and a limit of ``hubsurvey check`` does not hold
      (not an error: a verdict, so a CI tells it apart from codes 1-5)
====  =====================================================================================
"""

from __future__ import annotations

import contextlib
from enum import IntEnum


class ExitCode(IntEnum):
    OK = 0
    PARTIAL = 1
    BAD_INPUT = 2
    STORE = 3
    HUB = 4
    INTERNAL = 5
    CHECK_FAILED = 6
    INTERRUPTED = 130  # 128 + SIGINT, as a shell reports a command Ctrl-C ended
    TERMINATED = 143  # 128 + SIGTERM


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


class DataFileMissingError(SurveyError):
    """A downloaded file is gone from the cache before it was read (an eviction, a clean-up): not
    the data's fault, so transient: the next attempt downloads it again."""

    error_class = "file_missing"
    transient = True


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


class OutdatedSchemaError(StoreError):
    """A DB opened read-only has an older schema than this hubsurvey's: it must be upgraded (by a
    write open, which migrates it) before the views and findings can be read."""

    def __init__(self, message: str, problem: str):
        super().__init__(message)
        self.problem = problem  # the DB and its version, without the advice


class DbLockedError(StoreError):
    """Another process holds the DB: DuckDB allows one writer and, meanwhile, no other process
    (read-only included). The message names the survey run holding it when there is one."""


class HubError(HubsurveyError):
    """The Hub cannot be used: unreachable, or it refused a request the whole command needs."""

    exit_code = ExitCode.HUB
    error_class = "hub"


class HubUnreachableError(HubError):
    """A name that does not resolve, a refused connection: not transient, give up at once."""

    error_class = "offline"


class GatedError(HubError):
    """A gated dataset whose files the token (or no token) may not read: an outcome, not a failure."""

    error_class = "gated"


class HubTimeoutError(HubError):
    """The Hub did not answer within the timeouts, on every attempt: worth retrying in a later run."""

    error_class = "hub_timeout"
    transient = True


class OutOfTimeError(HubTimeoutError):
    """A request that would wait (for the quota, a retry or the breaker) past the job's or the run's
    end (``--job-timeout``, ``--max-hours``): not the Hub being slow, so the breaker does not count
    it; the job goes back to pending for the next run."""

    error_class = "out_of_time"


class HubStoppedAnsweringError(HubTimeoutError):
    """Too many requests in a row timed out, across jobs: the Hub (or the way to it) stopped
    answering. The run ends with exit code 4 and leaves what is left pending for the next run."""

    error_class = "hub_stopped"


class HubFaultError(HubError):
    """The Hub (or a proxy before it) answered with something that is no valid answer: an HTML
    page, malformed or truncated JSON, the wrong JSON type, a redirect loop, a body larger than a
    response may be. A Hub fault, not a bug; worth retrying, in this call and in a later run."""

    error_class = "hub_fault"
    transient = True


class ParquetMovedError(HubError):
    """The Parquet branch a job was queued at was rewritten, its commit is gone, and the branch's new
    commit lacks some of the job's files: the next crawl that lists the dataset resolves it again,
    and the job is queued anew"""

    error_class = "parquet_moved"


class TooLargeForCacheError(HubError):
    """One job's files are larger than the whole cache budget (``--max-cache-gb``): the job fails
    alone rather than let the cache go over its budget; a larger budget measures it."""

    error_class = "too_large_for_cache"


class ClusterUnreachableError(HubsurveyError):
    """The run's Dask scheduler does not answer: nothing was measured; try again when it does (exit 4,
    as an unreachable Hub)."""

    exit_code = ExitCode.HUB
    error_class = "cluster_unreachable"


class InternalError(HubsurveyError):
    """A bug: anything that is not a known data, store or Hub error."""

    exit_code = ExitCode.INTERNAL
    error_class = "internal"

    @classmethod
    def of(cls, where: str, exc: BaseException) -> InternalError:
        """The bug ``exc`` met at ``where``, in one line; the original is chained (its traceback kept)."""
        first = (str(exc).strip().splitlines() or [""])[0]
        error = cls(f"{where}: internal error (a bug in hubsurvey, please report it): {type(exc).__name__}: {first}".rstrip(": "))
        error.__cause__ = exc
        return error


def exit_code_of(exc: BaseException) -> ExitCode:
    return exc.exit_code if isinstance(exc, HubsurveyError) else ExitCode.INTERNAL


_SECRETS: set[str] = set()


def register_secret(secret: str | None) -> None:
    """Remember a secret for :func:`scrub`: the settings register their token when they are built
    (:meth:`hubsurvey.core.settings.Settings.from_env`), so the scrubber's secrets come from them."""
    if secret and len(secret) >= 4:
        _SECRETS.add(secret)


def known_secrets() -> tuple[str, ...]:
    """Every secret the process knows: those registered from the settings (longest first)."""
    candidates = tuple(_SECRETS)
    return tuple(sorted({s for s in candidates if s and len(s) >= 4}, key=len, reverse=True))


def scrub(text: str, secrets: tuple[str | None, ...] = ()) -> str:
    """Remove secrets (the settings' token, registered when they were built, and any given) from a text.

    This is the one scrubbing place: every error message that is printed, logged or stored
    (one-line messages, job tracebacks, Hub client errors) passes here.
    """
    candidates = (*secrets, *known_secrets())
    for secret in sorted({s for s in candidates if s and len(s) >= 4}, key=len, reverse=True):
        text = text.replace(secret, "***")
    return text


def scrub_exception(exc: BaseException, secrets: tuple[str | None, ...] = ()) -> BaseException:
    """Scrub an exception in place: its arguments, and those of every exception chained to it.

    A Hub (or proxy) may echo the ``Authorization`` header into an error body, which the HTTP
    library copies into the exception's message; a traceback printed or stored later then shows
    every chained message, so the whole chain is cleaned, not just the outer message.
    """
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        with contextlib.suppress(AttributeError, TypeError):  # exotic exception types
            current.args = tuple(scrub(a, secrets) if isinstance(a, str) else a for a in current.args)
        for attr in ("server_message", "message"):
            value = getattr(current, attr, None)
            if isinstance(value, str):
                with contextlib.suppress(AttributeError, TypeError):  # a read-only attribute
                    setattr(current, attr, scrub(value, secrets))
        current = current.__cause__ or current.__context__
    return exc


def one_line(exc: BaseException) -> str:
    """The one-line form of an error, scrubbed of secrets.

    A hubsurvey error prints its own message (it already names the dataset and config); anything
    else is prefixed with its type. Whoever decides that an error is a bug says so (the CLI handler,
    the job runner).
    """
    lines = str(exc).strip().splitlines()
    first = lines[0] if lines else ""
    if isinstance(exc, HubsurveyError):
        text = first or type(exc).__name__
    else:
        text = f"{type(exc).__name__}: {first}" if first else type(exc).__name__
    return scrub(text)
