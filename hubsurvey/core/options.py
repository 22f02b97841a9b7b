"""Command-line options declared on the dataclass fields they fill, and the checks of their values.

A field that the command line sets carries its flag and help in its metadata
(``field(default=..., metadata=flag("--job-timeout", "Seconds one job may take", parse=positive))``);
:mod:`hubsurvey.commands.options` turns every declared field of a dataclass into one typer option,
and the values given back into the dataclass. So an option is written once, with its field: the
flag, its help, its default (the field's) and its check. No command-line library is imported here.

:class:`HubOptions` is the Hub client's options that several commands share: one value, the
overrides of :class:`~hubsurvey.core.settings.Settings`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import MISSING, Field, asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from hubsurvey.core.errors import UsageError
from hubsurvey.core.settings import PLANS, Settings

#: where ``run`` and ``report`` write the report unless told otherwise
DEFAULT_REPORT_DIR = Path("out")

# helps of options that several commands share, with a field of RunOptions
EXAMPLES_HELP = "Store up to N examples of each kind behind the counts (0: none); `hubsurvey show` prints them"
NO_NEAR_HELP = "Skip the near-duplicate figures (MinHash-LSH over character shingles); they stay NULL"
COPY_THRESHOLD_HELP = ("crossleaks: A is a copy of B when this share of A's test rows is in B's test split "
                       "and as much of A's train in B's train (or neither has a train split)")
BENCHMARKS_HELP = ("Benchmarks file (TOML: [[benchmark]] id, config, split, text_columns, or path to a local "
                   ".jsonl/.csv/.parquet file and text_columns); 'default': the shipped list")
ROLES_HELP = "Roles override file (TOML)"
MAX_MODELS_HELP = "Models listed per dataset, at most (the lookup records whether it reached it)"
#: the cosine at or above which a test row and its nearest train or validation row are a paraphrase candidate
DEFAULT_SEMANTIC_THRESHOLD = 0.8
SEMANTIC_HELP = ("Also list paraphrase candidates for review: test rows whose static embedding is near a train or "
                 "validation row's (stored apart, in semantic_candidates; never a leak count or a verdict). "
                 "Needs the 'semantic' extra, or --semantic-model")
SEMANTIC_THRESHOLD_HELP = "--semantic: the cosine at or above which a pair is a candidate"
SEMANTIC_MODEL_HELP = ("--semantic: a static model2vec model, a local folder or a model id already in the local "
                       "Hugging Face cache (never downloaded) [default: wordllama's own weights]")

#: a flag's default is its field's unless it says otherwise
FIELD_DEFAULT: Any = type("FieldDefault", (), {"__repr__": lambda self: "FIELD_DEFAULT"})()

#: a check of one value from the command line: (flag, value) -> the field's value, or UsageError (exit 2)
Parse = Callable[[str, Any], Any]


@dataclass(frozen=True)
class Flag:
    """How the command line sets one dataclass field."""

    flag: str  # "--job-timeout"
    help: str
    type: Any = None  # the command line's type, when not the field's (Path for a field that holds text)
    default: Any = FIELD_DEFAULT  # the command line's default, when not the field's
    parse: Parse | None = None  # checks and converts the value given into the field's
    negated: bool = False  # a --no-X switch for a field that is True unless it is given
    metavar: str | None = None
    min: int | None = None

    @property
    def parameter(self) -> str:
        """The name of the command's parameter: the flag without its dashes (``--no-near``: ``no_near``)."""
        return self.flag.lstrip("-").replace("-", "_")


def flag(name: str, help: str, **how: Any) -> dict[str, Flag]:
    """A field's metadata declaring its command-line option (see :class:`Flag`)."""
    return {"cli": Flag(name, help, **how)}


def declared(cls: type) -> list[tuple[Field[Any], Flag]]:
    """The fields of dataclass ``cls`` that the command line sets, in their order, with their flags."""
    return [(f, f.metadata["cli"]) for f in fields(cls) if f.metadata.get("cli") is not None]


def field_default(f: Field[Any]) -> Any:
    if f.default_factory is not MISSING:
        return f.default_factory()
    return None if f.default is MISSING else f.default


def command_line_default(f: Field[Any], how: Flag) -> Any:
    """The default the command line shows for a declared field: the field's, unless its flag says."""
    if how.default is not FIELD_DEFAULT:
        return how.default
    return (not field_default(f)) if how.negated else field_default(f)


def field_value(how: Flag, value: Any) -> Any:
    """The field's value from the command line's (a --no-X switch inverted, then checked)."""
    if how.negated:
        value = not value
    return how.parse(how.flag, value) if how.parse else value


# --- checks: one line and exit 2 --------------------------------------------------------------------
# Every number a command takes goes through these: NaN and the infinities are refused everywhere (a
# comparison with NaN is always false, so a range check alone would let it through), and each option
# has a largest value beyond which it means nothing (or breaks the arithmetic of time, processes and SQL).

#: the largest count an option takes (rows, examples, messages, models, datasets listed): SQL's BIGINT holds it
MAX_COUNT = 2**53
#: the largest number of local processes or threads
MAX_WORKERS = 1024
#: the largest time limit in seconds (a year) or hours (ten years): a sleep or a clock cannot go further
MAX_SECONDS, MAX_HOURS = 365 * 86_400.0, 10 * 365 * 24.0
#: the largest memory or cache size, in MB or GB (a petabyte, an exabyte)
MAX_MB = 2**30
#: the largest fixed pace, in requests a second
MAX_RATE = 1e6


def finite(name: str, value: float | int | None, maximum: float | int | None = None) -> None:
    """Refuse NaN, the infinities and (given ``maximum``) a value above it; None means: not given."""
    if value is None:
        return
    if isinstance(value, float) and not math.isfinite(value):
        raise UsageError(f"{name} must be a finite number, not {value}")
    if maximum is not None and value > maximum:
        raise UsageError(f"{name} must be at most {maximum:g}, not {value:g}")


def at_least(name: str, value: float | int | None, minimum: float | int, maximum: float | int | None = None) -> None:
    """Refuse ``value`` below ``minimum``, above ``maximum``, or not finite (None means: not given)."""
    finite(name, value, maximum)
    if value is not None and value < minimum:
        raise UsageError(f"{name} must be at least {minimum}, not {value}")


def positive(name: str, value: float | int | None, maximum: float | int | None = None) -> None:
    finite(name, value, maximum)
    if value is not None and value <= 0:
        raise UsageError(f"{name} must be greater than 0, not {value}")


def percentage(name: str, value: float | None) -> None:
    """A percentage: between 0 and 100."""
    finite(name, value)
    if value is not None and not 0 <= value <= 100:
        raise UsageError(f"{name} is a percentage: between 0 and 100, not {value:g}")


def unlimited_if_zero(name: str, value: float | int | None, maximum: float | int | None = None) -> float | int | None:
    """``0`` means no limit (None); a negative or non-finite value is refused."""
    at_least(name, value, 0, maximum)
    return value or None


def minimum(low: float | int, high: float | int | None = None) -> Parse:
    """A check: at least ``low`` (and at most ``high``), finite."""
    def check(name: str, value: Any) -> Any:
        at_least(name, value, low, high)
        return value
    return check


def greater_than_zero(name: str, value: Any, maximum: float | int | None = None) -> Any:
    positive(name, value, maximum)
    return value


def more_than_zero(high: float | int) -> Parse:
    """A check: greater than 0 and at most ``high``, finite."""
    def check(name: str, value: Any) -> Any:
        return greater_than_zero(name, value, high)
    return check


def zero_or_up_to(high: float | int) -> Parse:
    """A check for a limit where 0 means none: at least 0, at most ``high``, finite; 0 becomes None."""
    def check(name: str, value: Any) -> Any:
        return unlimited_if_zero(name, value, high)
    return check


def share(name: str, value: float | None) -> float | None:
    """A share of rows: in (0, 1]."""
    finite(name, value)
    if value is not None and not 0 < value <= 1:
        raise UsageError(f"{name} must be greater than 0 and at most 1, not {value}")
    return value


def one_of(choices: Mapping[str, Any] | tuple[str, ...]) -> Parse:
    """A check: one of ``choices`` (None: not given)."""
    def check(name: str, value: Any) -> Any:
        if value is not None and value not in choices:
            raise UsageError(f"{name} must be one of {', '.join(choices)}, not {value!r}")
        return value
    return check


# --- the Hub client's options -------------------------------------------------------------------------

_QUOTA = "[default: follow the quota]"


@dataclass(frozen=True)
class HubOptions:
    """The Hub client's options of a command: overrides of :class:`Settings` (None: not given, the
    environment's value stays). ``Settings.from_env(**hub.overrides())`` is the command's settings."""

    rate: float | None = field(default=None, metadata=flag(
        "--rate", f"A fixed pace of API requests per second instead of the quota (0: unpaced) {_QUOTA}",
        parse=minimum(0, MAX_RATE)))
    file_rate: float | None = field(default=None, metadata=flag(
        "--file-rate", f"A fixed pace of file requests per second instead of the quota (0: unpaced) {_QUOTA}",
        parse=minimum(0, MAX_RATE)))
    plan: str | None = field(default=None, metadata=flag(
        "--plan", "The Hub plan whose quota pacing starts from: anonymous, free or pro "
        "[default: $HUBSURVEY_PLAN, else free with a token, anonymous without]", parse=one_of(PLANS)))
    deadline: float | None = field(default=None, metadata=flag(
        "--deadline", "Seconds one Hub request may take, over its connect, reads and retries "
        "[default: $HUBSURVEY_DEADLINE or 60]", parse=more_than_zero(MAX_SECONDS)))

    def overrides(self) -> dict[str, Any]:
        """The keyword arguments of :meth:`Settings.from_env`."""
        return asdict(self)

    def settings(self) -> Settings:
        """The command's settings, built once: the environment, then these overrides."""
        return Settings.from_env(**self.overrides())
