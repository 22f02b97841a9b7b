"""Options shared by several commands, declared once.

Two kinds, both written once:

- an option one command or a few take alone: an ``Annotated`` alias here (``Db``, ``Format``...);
- an option that fills a dataclass field (:class:`~hubsurvey.core.steps.RunOptions`,
  :class:`~hubsurvey.crawler.rules.CrawlFilters`, :class:`~hubsurvey.core.options.HubOptions`, an
  executor's options): declared on the field itself (:func:`hubsurvey.core.options.flag`), and
  offered as one :class:`OptionGroup` to every command that takes it. The command names one
  parameter of the group's type (``@takes(hub=HUB)``, then ``hub: HubOptions``); its signature
  shows the group's options in their place, and the command gets one value built from them.
"""

from __future__ import annotations

import functools
import inspect
import typing
from collections.abc import Callable, Iterator, Mapping
from dataclasses import Field, fields
from pathlib import Path
from typing import Annotated, Any, Generic, TypeVar

import typer

from hubsurvey.core.errors import UsageError
from hubsurvey.core.options import (
    BENCHMARKS_HELP,
    COPY_THRESHOLD_HELP,
    DEFAULT_REPORT_DIR,
    EXAMPLES_HELP,
    MAX_COUNT,
    MAX_MB,
    MAX_MODELS_HELP,
    MAX_WORKERS,
    NO_NEAR_HELP,
    ROLES_HELP,
    SEMANTIC_HELP,
    SEMANTIC_MODEL_HELP,
    SEMANTIC_THRESHOLD_HELP,
    Flag,
    HubOptions,
    at_least,
    command_line_default,
    field_value,
    percentage,
    positive,
    unlimited_if_zero,
)
from hubsurvey.crawler.rules import CrawlFilters

__all__ = ["DEFAULT_REPORT_DIR", "FILTERS", "HUB", "HUB_API", "MAX_COUNT", "MAX_MB", "MAX_WORKERS", "OptionGroup", "at_least",
           "percentage", "positive", "takes", "unlimited_if_zero"]

T = TypeVar("T")
C = TypeVar("C", bound=Callable[..., Any])

#: the output formats of ``audit``, ``status`` and ``sql``
FORMATS = ("table", "json", "csv")

Db = Annotated[Path, typer.Option("--db", help="Results DB")]
ReadDb = Annotated[Path, typer.Option("--db", help="Results DB (opened read-only)")]
Format = Annotated[str | None, typer.Option("--format", help="Output format: table, json or csv [default: table]")]
Json = Annotated[bool, typer.Option("--json", help="Same as --format json")]
# the options below are also fields of RunOptions (run takes them from there): one help each
Examples = Annotated[int, typer.Option("--examples", help=EXAMPLES_HELP)]
CopyThreshold = Annotated[float, typer.Option("--copy-threshold", help=COPY_THRESHOLD_HELP)]
NoNear = Annotated[bool, typer.Option("--no-near", help=NO_NEAR_HELP)]
Roles = Annotated[Path | None, typer.Option("--roles", help=ROLES_HELP)]
Benchmarks = Annotated[str | None, typer.Option("--benchmarks", metavar="FILE", help=BENCHMARKS_HELP)]
MaxModels = Annotated[int, typer.Option("--max-models", help=MAX_MODELS_HELP)]
Semantic = Annotated[bool, typer.Option("--semantic", help=SEMANTIC_HELP)]
SemanticThreshold = Annotated[float, typer.Option("--semantic-threshold", help=SEMANTIC_THRESHOLD_HELP)]
SemanticModel = Annotated[str | None, typer.Option("--semantic-model", metavar="PATH", help=SEMANTIC_MODEL_HELP)]


# --- options declared on dataclass fields, as groups ---------------------------------------------------

def _option(how: Flag, type_: Any) -> Any:
    extra: dict[str, Any] = {}
    if how.metavar is not None:
        extra["metavar"] = how.metavar
    if how.min is not None:
        extra["min"] = how.min
    return Annotated[type_, typer.Option(how.flag, help=how.help, **extra)]


class OptionGroup(Generic[T]):
    """The declared fields of dataclass ``cls`` as options that commands share, built back into one value.

    ``build`` makes the value from the fields' values (default: ``cls(**values)``); ``without``
    leaves fields out (a command that has no use for them); ``insert`` fills the place of a field
    with the declared fields of other dataclasses (an executor's options: ``run --dask``), whose
    values reach ``build`` under that field's name, by field name.
    """

    def __init__(self, cls: type[T], build: Callable[[dict[str, Any]], T] | None = None, *,
                 without: tuple[str, ...] = (), insert: Mapping[str, Callable[[], list[type]]] | None = None):
        self.cls = cls
        self._build: Callable[[dict[str, Any]], T] = build or (lambda values: cls(**values))
        self.without = without
        self.insert = dict(insert or {})

    def _declared(self) -> Iterator[tuple[Field[Any], Flag, Any, str | None]]:
        """(field, flag, the field's type, the inserted field whose place it fills) in option order."""
        for f in fields(self.cls):  # type: ignore[arg-type]
            if f.name in self.insert:
                for other in self.insert[f.name]():
                    hints = typing.get_type_hints(other)
                    for g in fields(other):
                        if g.metadata.get("cli") is not None:
                            yield g, g.metadata["cli"], hints[g.name], f.name
            elif f.metadata.get("cli") is not None and f.name not in self.without:
                yield f, f.metadata["cli"], typing.get_type_hints(self.cls)[f.name], None

    @functools.cached_property
    def parameters(self) -> list[inspect.Parameter]:
        """The group's options as a command's parameters: flag, help and default from each field."""
        out = []
        for f, how, field_type, _slot in self._declared():
            type_ = bool if how.negated else (how.type if how.type is not None else field_type)
            out.append(inspect.Parameter(how.parameter, inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                         default=command_line_default(f, how), annotation=_option(how, type_)))
        return out

    def option(self, parameter: str) -> Any:
        """One option of the group, for a command that takes it alone: ``Annotated[type, GROUP.option(name)]``."""
        return next(p.annotation for p in self.parameters if p.name == parameter).__metadata__[0]

    def value(self, given: Mapping[str, Any]) -> T:
        """The group's value from the command line's (by parameter name; one not given: its default),
        each checked (UsageError, exit 2, on a bad one)."""
        values: dict[str, Any] = {}
        for f, how, _type, slot in self._declared():
            value = field_value(how, given.get(how.parameter, command_line_default(f, how)))
            (values if slot is None else values.setdefault(slot, {}))[f.name] = value
        return self._build(values)


def takes(**groups: OptionGroup[Any]) -> Callable[[C], C]:
    """Give a command option groups: its parameter named as a group becomes the group's options
    (in its place) on the command line, and holds the group's one value when the command runs."""

    def decorate(command: C) -> C:
        signature = inspect.signature(command, eval_str=True)
        params: list[inspect.Parameter] = []
        owned: dict[str, list[str]] = {}
        for p in signature.parameters.values():
            if p.name in groups:
                owned[p.name] = [q.name for q in groups[p.name].parameters]
                params += groups[p.name].parameters
            else:
                params.append(p)
        names = [p.name for p in params]
        if len(names) != len(set(names)) or set(owned) != set(groups):
            raise TypeError(f"{command.__name__}: option groups {sorted(groups)} do not fit its parameters {names}")

        @functools.wraps(command)
        def with_groups(**given: Any) -> Any:
            for name, options in owned.items():  # in the command's order: its first bad option is the one told
                given[name] = groups[name].value({option: given.pop(option) for option in options if option in given})
            return command(**given)

        with_groups.__signature__ = signature.replace(parameters=params)  # type: ignore[attr-defined]
        with_groups.__annotations__ = {p.name: p.annotation for p in params}
        return typing.cast(C, with_groups)

    return decorate


#: the Hub client's options (--rate, --file-rate, --plan, --deadline): one value, the Settings' overrides
HUB = OptionGroup(HubOptions)
#: the same, less --file-rate, for a command that downloads no file (exposure)
HUB_API = OptionGroup(HubOptions, without=("file_rate",))
#: the crawl's filters (--author, --deny-author, --task, --language, --search, --limit, --max-rows,
#: --allow-gated), declared on CrawlFilters' fields: crawl and run take them
FILTERS = OptionGroup(CrawlFilters)


def output_format(fmt: str | None, as_json: bool = False) -> str:
    """The one output-format convention: ``--format table|json|csv``; ``--json`` is ``--format json``."""
    if fmt is not None and fmt not in FORMATS:
        raise UsageError(f"--format must be one of {', '.join(FORMATS)}, not {fmt!r}")
    if as_json and fmt not in (None, "json"):
        raise UsageError(f"--json and --format {fmt} contradict each other")
    return "json" if as_json else (fmt or "table")


def say_snapshot(run_id: str, taken_at: str) -> None:
    """The one stderr line of a read command that read a running survey's snapshot, not the DB."""
    typer.echo(f"note: the DB is held by the running survey {run_id}; read its snapshot taken at {taken_at}", err=True)
