"""Options shared by several commands, declared once, in one ``Annotated`` style.

Defaults come from the dataclasses the options fill (:class:`CrawlFilters`, :class:`RunOptions`,
:class:`HubClient`'s pacing), so that a default is written in exactly one place.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from hubsurvey.core.errors import UsageError

#: where ``run`` and ``report`` write the report unless told otherwise
DEFAULT_REPORT_DIR = Path("out")
#: the output formats of ``audit``, ``status`` and ``sql``
FORMATS = ("table", "json", "csv")

Db = Annotated[Path, typer.Option("--db", help="Results DB")]
ReadDb = Annotated[Path, typer.Option("--db", help="Results DB (opened read-only)")]
Format = Annotated[str | None, typer.Option("--format", help="Output format: table, json or csv [default: table]")]
Json = Annotated[bool, typer.Option("--json", help="Same as --format json")]
Examples = Annotated[int, typer.Option(
    "--examples", help="Store up to N examples of each kind behind the counts (0: none); `hubsurvey show` prints them")]
CopyThreshold = Annotated[float, typer.Option(
    "--copy-threshold", help="crossleaks: A is a copy of B when this share of A's test rows is in B's test split "
    "and as much of A's train in B's train (or neither has a train split)")]
NoCrossleaks = Annotated[bool, typer.Option(
    "--no-crossleaks", help="Skip the leaks-across-datasets step at the end (`hubsurvey crossleaks` runs it alone)")]
NoNear = Annotated[bool, typer.Option(
    "--no-near", help="Skip the near-duplicate figures (MinHash-LSH over character shingles); they stay NULL")]

# --- the crawl's filters (CrawlFilters) -------------------------------------------------------------
Authors = Annotated[list[str] | None, typer.Option("--author", help="Only these authors (repeatable)")]
DenyAuthors = Annotated[list[str] | None, typer.Option("--deny-author", help="Never these authors (repeatable)")]
Tasks = Annotated[list[str] | None, typer.Option("--task", help="task_categories filter (repeatable)")]
Languages = Annotated[list[str] | None, typer.Option("--language", help="language filter (repeatable)")]
Search = Annotated[str | None, typer.Option("--search", help="Dataset name contains")]
Limit = Annotated[int | None, typer.Option("--limit", help="List at most N datasets (0: no limit)")]
MaxRows = Annotated[int, typer.Option("--max-rows", help="Keep datasets with fewer rows than this")]
AllowGated = Annotated[bool, typer.Option("--allow-gated", help="Also keep gated datasets (needs HF_TOKEN)")]

# --- the Hub client's pacing ------------------------------------------------------------------------
Rate = Annotated[float | None, typer.Option(
    "--rate", help="A fixed pace of API requests per second instead of the quota (0: unpaced) [default: follow the quota]")]
FileRate = Annotated[float | None, typer.Option(
    "--file-rate", help="A fixed pace of file requests per second instead of the quota (0: unpaced) [default: follow the quota]")]
Plan = Annotated[str | None, typer.Option(
    "--plan", help="The Hub plan whose quota pacing starts from: anonymous, free or pro "
    "[default: $HUBSURVEY_PLAN, else free with a token, anonymous without]")]
Deadline = Annotated[float | None, typer.Option(
    "--deadline", help="Seconds one Hub request may take, over its connect, reads and retries "
    "[default: $HUBSURVEY_DEADLINE or 60]")]

# --- the run (RunOptions) ---------------------------------------------------------------------------
Workers = Annotated[int | None, typer.Option("--workers", help="Local worker processes (default: one per core)")]
MaxHours = Annotated[float | None, typer.Option("--max-hours", help="Stop taking new jobs after this long (0: no limit)")]
Executor = Annotated[str | None, typer.Option(
    "--executor", help="Where jobs run: local (worker processes here) or dask (a cluster: give --dask) [default: local, "
    "or dask with --dask]")]
Dask = Annotated[str | None, typer.Option("--dask", help="Run jobs on a Dask cluster: tcp://scheduler:8786")]
JobTimeout = Annotated[float, typer.Option("--job-timeout", help="Seconds one job may take (local workers)")]
MemoryMb = Annotated[int, typer.Option("--memory-mb", help="Memory ceiling of one local worker, MB")]
ReportDir = Annotated[Path, typer.Option("--report-dir", help="Where the refreshed report goes")]
Roles = Annotated[Path | None, typer.Option("--roles", help="Roles override file (TOML)")]
CacheDir = Annotated[Path | None, typer.Option(
    "--cache-dir", help="The survey's download cache [default: $HUBSURVEY_CACHE_DIR or ~/.cache/hubsurvey/hub]")]
MaxCacheGb = Annotated[float, typer.Option(
    "--max-cache-gb", help="The cache never holds more than this many GB; a larger job fails (too_large_for_cache)")]
KeepCache = Annotated[bool, typer.Option("--keep-cache", help="Keep each job's downloaded files after measuring")]
# contamination with benchmarks
Benchmarks = Annotated[str | None, typer.Option(
    "--benchmarks", metavar="FILE",
    help="Benchmarks file (TOML: [[benchmark]] id, config, split, text_columns, or path to a local "
         ".jsonl/.csv/.parquet file and text_columns); 'default': the shipped list")]
NoExposure = Annotated[bool, typer.Option(
    "--no-exposure", help="Skip listing the models that declare the contaminated datasets (`hubsurvey exposure` runs it alone)")]
MaxModels = Annotated[int, typer.Option(
    "--max-models", min=1, help="Models listed per contaminated dataset, at most (the lookup records whether it reached it)")]


# --- validation: one line and exit 2 ---------------------------------------------------------------

def at_least(name: str, value: float | int | None, minimum: float | int) -> None:
    """Refuse ``value`` below ``minimum`` (None means: not given)."""
    if value is not None and value < minimum:
        raise UsageError(f"{name} must be at least {minimum}, not {value}")


def positive(name: str, value: float | int | None) -> None:
    if value is not None and value <= 0:
        raise UsageError(f"{name} must be greater than 0, not {value}")


def unlimited_if_zero(name: str, value: float | int | None) -> float | int | None:
    """``0`` means no limit (None); a negative value is refused."""
    at_least(name, value, 0)
    return value or None


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
