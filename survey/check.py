"""A gate for a dataset author's CI: measure a dataset as ``audit`` does, then test limits on its figures.

``hubsurvey check`` is a thin layer over :func:`check`. Each condition is one registry figure,
tested per (config, label column) against a limit given on the command line (a limit not given is
not tested):

==============  =======================  ===================================================
condition       option                   figure (``audit --json``)
==============  =======================  ===================================================
contaminated    ``--max-contaminated``   ``<profile>_contaminated_test_pct`` (exact-2026)
near            ``--max-near``           ``near_contaminated_test_pct`` (near-2026)
conflicting     ``--max-conflicting``    ``<profile>_test_rows_in_train_conflicting_label_pct``
benchmark       ``--max-benchmark``      ``contaminated_pct`` of each (split, benchmark) of
                                         ``--benchmarks FILE`` (bench-2026), once per config
==============  =======================  ===================================================

A figure holds when it is at most its limit, compared on its counts (the rows it counts against the
limit's share of its split's rows), never on a rounded percentage: a limit of 0 means no row. It is
shown as ``audit --json`` prints it (a percentage rounded to 3 decimals, with more decimals only
when the rounding would hide that it is above its limit). A figure that is NR (NULL: a config without a label column has no
conflicting-label figure, near-duplicates not measured) is not tested: its verdict is ``skipped``,
with the reason. The check's exit code is :data:`~hubsurvey.core.errors.ExitCode.CHECK_FAILED` (6)
when a condition fails; a config that could not be measured keeps the error's own code.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
import xml.etree.ElementTree as ET
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

from huggingface_hub.errors import HfHubHTTPError

from hubsurvey import __version__
from hubsurvey.core import figures
from hubsurvey.core.errors import BadInputError, ExitCode, HubError, UsageError, one_line
from hubsurvey.core.hub import HubClient, is_transient
from hubsurvey.core.safety import xml_text
from hubsurvey.core.store import Store
from hubsurvey.survey import contamination as bench
from hubsurvey.survey.audit import audit

#: the key profile of the exact figures unless ``--profile`` says otherwise
DEFAULT_PROFILE = figures.NORMALIZED.name

PASS, FAIL, SKIPPED = "pass", "fail", "skipped"


def _exact_percent(stem: str) -> Callable[[str], str]:
    """The registry's percentage column of the exact figure ``stem``, under a profile."""
    (figure,) = [f for f in figures.PROFILE_FIGURES if f.stem == stem]
    assert figure.percent is not None
    percent = figure.percent[0]
    return lambda profile: f"{profile}_{percent}"


def _near_percent(name: str) -> Callable[[str], str]:
    """The registry's percentage column of the near figure ``name`` (the same under every profile)."""
    (figure,) = [f for f in figures.NEAR_FIGURES if f.name == name]
    assert figure.percent is not None
    percent = figure.percent[0]
    return lambda profile: percent


@dataclass(frozen=True)
class Condition:
    """One kind of limit ``check`` tests: its name, its option, and the figure it reads."""

    name: str
    option: str
    #: the figure's column in ``measurements`` (and key in ``audit --json``) under a profile
    column: Callable[[str], str]


CONDITIONS: tuple[Condition, ...] = (
    Condition("contaminated", "--max-contaminated", _exact_percent("test_rows_contaminated")),
    Condition("near", "--max-near", _near_percent("test_rows_near_contaminated")),
    Condition("conflicting", "--max-conflicting", _exact_percent("test_rows_in_train_conflicting_label")),
    # not a measurements column: the contamination table's, per (split, benchmark)
    Condition("benchmark", "--max-benchmark", lambda profile: "contaminated_pct"),
)
CONDITION_BY_NAME = {c.name: c for c in CONDITIONS}


@dataclass(frozen=True)
class Verdict:
    """One tested condition of one (config, label column), or of one (config, split, benchmark)."""

    config: str
    label_column: str | None
    condition: str
    figure: str  # the registry column, or for a benchmark: contaminated_pct[split] vs <benchmark>
    value: float | None  # as audit --json prints it (NR: None)
    limit: float
    status: str  # pass, fail or skipped
    reason: str | None = None  # why the figure is NR (a skipped verdict)

    @property
    def name(self) -> str:
        """The testcase's name: the condition, the label column (or the benchmark's split) and figure."""
        return f"{self.condition}[{self.label_column or '-'}]: {self.figure}"

    def line(self, dataset_id: str) -> str:
        """One line naming the dataset, config, figure, value and limit."""
        label = f" label={self.label_column}" if self.label_column else ""
        where = f"{dataset_id} [{self.config}]{label}: {self.figure}"
        if self.status == SKIPPED:
            return f"{where} = NR, not tested against the limit {self.limit:g}% ({self.reason})"
        return f"{where} = {self.value:g}% {'above' if self.status == FAIL else 'within'} the limit {self.limit:g}%"

    def as_json(self) -> dict[str, Any]:
        return {"config": self.config, "label_column": self.label_column, "condition": self.condition,
                "figure": self.figure, "value": self.value, "limit": self.limit, "status": self.status,
                "reason": self.reason}


@dataclass
class CheckResult:
    """What :func:`check` measured and decided: every verdict, and the errors of what failed to measure."""

    dataset_id: str
    profile: str
    limits: dict[str, float]
    verdicts: list[Verdict] = field(default_factory=list)
    revisions: dict[str, str] = field(default_factory=dict)  # config -> revision measured
    text_columns: dict[str, list[str]] = field(default_factory=dict)  # config -> the text columns measured
    methods: dict[str, int] = field(default_factory=dict)  # the methods measured, with their versions
    #: config -> its statement of what was checked ([{"check", "ran", ...}], as measurements.checks)
    checks: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)  # one line each (a config, a benchmark)
    error_code: ExitCode = ExitCode.OK  # the errors' code (audit's rule)

    @property
    def failed(self) -> list[Verdict]:
        return [v for v in self.verdicts if v.status == FAIL]

    @property
    def passed(self) -> bool:
        return not self.failed and not self.errors

    @property
    def exit_code(self) -> ExitCode:
        """0 every condition holds; an error's own code when something could not be measured (a
        verdict on part of the dataset is no verdict); else 6 when a condition fails."""
        if self.errors:
            return self.error_code
        return ExitCode.CHECK_FAILED if self.failed else ExitCode.OK

    def as_json(self) -> dict[str, Any]:
        """The verdicts as data, in a stable key order (``check --format json``)."""
        return {
            "dataset_id": self.dataset_id,
            "passed": self.passed,
            "exit_code": int(self.exit_code),
            "profile": self.profile,
            "limits": {c.name: self.limits[c.name] for c in CONDITIONS if c.name in self.limits},
            "revisions": dict(sorted(self.revisions.items())),
            "text_columns": dict(sorted(self.text_columns.items())),
            "tool_version": __version__,
            "methods": self.methods,
            "checks": dict(sorted(self.checks.items())),
            "conditions": [v.as_json() for v in self.verdicts],
            "failed": len(self.failed),
            "errors": list(self.errors),
        }


def check_limits(limits: dict[str, float | None], profile: str, benchmarks: str | Path | None, *,
                 near: bool = True) -> dict[str, float]:
    """The limits that are tested (given ones; ``benchmark`` defaults to 0 with a benchmarks file),
    each checked to be a percentage; one line and exit 2 when a value is out of range."""
    if profile not in {p.name for p in figures.PROFILES}:
        raise UsageError(f"--profile must be one of {', '.join(p.name for p in figures.PROFILES)}, not {profile!r}")
    unknown = set(limits) - set(CONDITION_BY_NAME)
    if unknown:
        raise UsageError(f"no such condition: {', '.join(sorted(unknown))}")
    tested = {name: value for name, value in limits.items() if value is not None}
    if benchmarks is not None:
        tested.setdefault("benchmark", 0.0)  # a benchmarks file asks for the check: any contaminated row fails it
    elif "benchmark" in tested:
        raise UsageError("--max-benchmark needs --benchmarks FILE (the benchmarks to check against)")
    if not near and "near" in tested:
        raise UsageError("--no-near skips the near-duplicate figures; it contradicts --max-near")
    for name, value in tested.items():
        if not 0 <= value <= 100:
            raise UsageError(f"{CONDITION_BY_NAME[name].option} is a percentage: between 0 and 100, not {value:g}")
    if not tested:
        raise UsageError("nothing to check: give at least one of "
                         + ", ".join(c.option for c in CONDITIONS if c.name != "benchmark") + " or --benchmarks FILE")
    return {c.name: float(tested[c.name]) for c in CONDITIONS if c.name in tested}


def _nr_reason(condition: str, row: dict[str, Any]) -> str:
    """Why a figure of ``row`` is NR, in a few words."""
    if condition == "conflicting":
        if row.get("label_column") is None:
            return "no label column"
        if row.get("rows_train") is None:
            return "no train split"
    if condition == "near":
        near = row.get("near")
        info = json.loads(near) if isinstance(near, str) else near
        return f"near-duplicates {(info or {}).get('status', 'not measured')}"
    return "not measured"


def _above(count: int, rows: int, limit: float) -> bool:
    """Whether ``count`` rows of ``rows`` are more than ``limit`` percent of them, exactly: counts
    compared, never a rounded percentage (one row in 250,000 is above a limit of 0)."""
    return Fraction(int(count)) * 100 > Fraction(limit) * int(rows)


def _shown(pct: float, limit: float, above: bool) -> float:
    """The percentage as ``audit --json`` prints it (3 decimals), with more decimals only when the
    rounding would hide that it is above its limit (0.0004% above 0%, not 0.0%)."""
    value = round(pct, 3)
    digits = 3
    while above and value <= limit and digits < 15:
        digits += 1
        value = round(pct, digits)
    return value if not above or value > limit else pct


def _verdict(config: str, label: str | None, condition: str, figure: str, counted: tuple[Any, Any, Any],
             limit: float, reason: str | None) -> Verdict:
    """One verdict from (percentage, count, rows): NR when the percentage is; otherwise failed when
    the count is above ``limit`` percent of the rows."""
    pct, count, rows = counted
    if pct is None:
        return Verdict(config, label, condition, figure, None, limit, SKIPPED, reason)
    above = _above(count, rows, limit) if count is not None and rows else pct > limit
    return Verdict(config, label, condition, figure, _shown(pct, limit, above), limit, FAIL if above else PASS)


def _count_columns(column: str) -> tuple[str, str]:
    """The count column and the rows column a registry percentage column divides."""
    columns = figures.figure_columns()
    (pct,) = [c for c in columns if c.name == column and c.percent_of is not None]
    (count,) = [c for c in columns if c.figure is pct.figure and c.profile is pct.profile and c.percent_of is None]
    return count.name, f"rows_{pct.percent_of}"


def verdicts_of(rows: Sequence[dict[str, Any]], contamination: Sequence[dict[str, Any]], limits: dict[str, float],
                profile: str = DEFAULT_PROFILE) -> list[Verdict]:
    """The verdicts on measured rows (``measurements`` rows, as ``audit`` returns them) and their
    contamination rows: per row, each tested figure in ``CONDITIONS`` order; then per config, each
    (split, benchmark). A pure function of its arguments. A figure is above its limit when its count
    is more than the limit's share of its rows (compared exactly); it is shown as ``audit --json``
    prints it."""
    out: list[Verdict] = []
    for row in rows:
        for c in CONDITIONS:
            if c.name == "benchmark" or c.name not in limits:
                continue
            column = c.column(profile)
            count, of = _count_columns(column)
            pct = row.get(column)
            pct = None if pct is None or (isinstance(pct, float) and math.isnan(pct)) else float(pct)
            out.append(_verdict(row["config"], row["label_column"], c.name, column, (pct, row.get(count), row.get(of)),
                                limits[c.name], _nr_reason(c.name, row) if pct is None else None))
    if "benchmark" in limits:
        for k in contamination:
            bench = f"{k['benchmark_id']} [{k['benchmark_config']}/{k['benchmark_split']}]"
            pct = k["contaminated_pct"]
            out.append(_verdict(k["config"], None, "benchmark", f"contaminated_pct[{k['split_name']}] vs {bench}",
                                (pct, k.get("contaminated_rows"), k.get("rows_split")), limits["benchmark"],
                                f"{k['split_name']} has no rows" if pct is None else None))
    return out


def _hub_refusal(target: str, exc: BaseException) -> HubError | BadInputError:
    """The Hub's answer about the dataset (missing, gated...) is bad input; a Hub that kept failing is the Hub."""
    return (HubError if is_transient(exc) else BadInputError)(f"{target}: {one_line(exc)}")


def _index(benchmarks: str | Path, client: Any, db: str | Path | None) -> tuple[Any, list[str]]:
    """The benchmarks of a file ('default': the shipped list), indexed through the Hub client, and the
    one-line reasons of those that could not be; recorded in the ``benchmarks`` table when ``db`` is given."""
    from hubsurvey.survey.contamination_check import index_benchmarks  # lazy: keeps `hubsurvey --help` fast

    asked = bench.load_benchmarks(None if benchmarks == "default" else benchmarks)
    if db is None:
        index, not_indexed = bench.index_from_hub(asked, client)
        return index, [f"benchmark {b.key}: not indexed: {why}" for b, why in not_indexed]
    with Store(db) as store:
        index = index_benchmarks(store, client, benchmarks)
        reasons = {(r["benchmark_id"], r["benchmark_config"], r["benchmark_split"]): r["error_message"] for r in store.records(
            "SELECT benchmark_id, benchmark_config, benchmark_split, error_message FROM benchmarks WHERE status = 'failed'")}
    indexed = {b.benchmark.key for b in index.benchmarks}
    return index, [f"benchmark {b.key}: not indexed: {reasons.get((b.id, b.config, b.split))}"
                   for b in asked if b.key not in indexed]


def check(
    target: str,
    *,
    config: str | None = None,
    profile: str = DEFAULT_PROFILE,
    max_contaminated: float | None = None,
    max_near: float | None = None,
    max_conflicting: float | None = None,
    max_benchmark: float | None = None,
    benchmarks: str | Path | None = None,
    db: str | Path | None = None,
    roles_file: str | Path | None = None,
    dataset_id: str | None = None,
    near: bool = True,
    client: Any = None,
) -> CheckResult:
    """Measure ``target`` (a Hub id or a folder; every config, or ``config``) with
    :func:`hubsurvey.survey.audit.audit` and test each given limit (percentages, see the module doc).

    Nothing is stored unless ``db`` is given (then as ``audit`` stores it, with the contamination
    rows). ``near=False`` skips the near-duplicate figures, as ``audit --no-near`` does (then
    ``max_near`` cannot be tested). ``dataset_id`` names a folder's dataset (default: from the folder's name). Raises the audit's own errors (bad input, an unreachable Hub, an unusable DB); a config
    that fails is one of ``errors`` and the others are still tested.
    """

    limits = check_limits({"contaminated": max_contaminated, "near": max_near, "conflicting": max_conflicting,
                           "benchmark": max_benchmark}, profile, benchmarks, near=near)
    if client is None:
        client = HubClient()
    not_indexed: list[str] = []
    index = None
    try:
        if benchmarks is not None:
            index, not_indexed = _index(benchmarks, client, db)
        outcome = audit(target, config=config, near=near, db=db, roles_file=roles_file, dataset_id=dataset_id,
                        client=client, benchmarks=index)
    except HfHubHTTPError as e:
        raise _hub_refusal(target, e) from None
    return CheckResult(outcome.dataset_id, profile, limits,
                       verdicts_of(outcome.rows, outcome.contamination, limits, profile),
                       revisions={r.config: r.revision_sha for r in outcome.results},
                       text_columns={r.config: list(r.roles.text_columns) for r in outcome.results},
                       methods=figures.methods_measured(near=near),
                       checks={r.config: _checks(r.rows) for r in outcome.results},
                       errors=[*outcome.errors, *not_indexed],
                       # a benchmark not indexed leaves part of the check undone: partial
                       error_code=outcome.exit_code if outcome.errors else ExitCode.PARTIAL)


def _checks(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A config's statement of what was checked (its rows share it)."""
    value = rows[0].get("checks") if rows else None
    return json.loads(value) if isinstance(value, str) else list(value or [])


def check_property(check: dict[str, Any]) -> str:
    """One check of the statement as a JUnit property value: ``ran`` or ``not run``, and with what
    (a threshold, columns, benchmarks) or why not."""
    if not check.get("ran"):
        return f"not run: {check.get('why_not') or 'not asked'}"
    detail = ([f"threshold {check['threshold']}"] if check.get("threshold") is not None else []) \
        + [str(c) for c in check.get("columns") or []] + [str(b) for b in check.get("benchmarks") or []]
    return "ran" + (f": {', '.join(detail)}" if detail else "")


# --- JUnit XML -------------------------------------------------------------------------------------

def _xml_text(value: Any) -> str:
    """Text XML 1.0 can hold: control characters written out, U+FFFE, U+FFFF and lone surrogates
    escaped (:func:`~hubsurvey.core.safety.xml_text`); the serializer escapes < & and quotes."""
    return xml_text(str(value))


def junit_tree(result: CheckResult) -> ET.ElementTree:
    """The verdicts as JUnit XML: one ``<testsuite>`` for the dataset, one ``<testcase>`` per
    (config, label column, condition), ``classname`` dataset.config; a failed condition has a
    ``<failure>``, an untested one (NR) a ``<skipped>``, and each config that could not be measured
    an ``<error>`` testcase."""
    failures, skipped = len(result.failed), sum(v.status == SKIPPED for v in result.verdicts)
    suites = ET.Element("testsuites", name="hubsurvey check", tests=str(len(result.verdicts) + len(result.errors)),
                        failures=str(failures), errors=str(len(result.errors)), skipped=str(skipped))
    suite = ET.SubElement(suites, "testsuite", name=_xml_text(f"hubsurvey check {result.dataset_id}"),
                          tests=suites.get("tests", "0"), failures=str(failures), errors=str(len(result.errors)),
                          skipped=str(skipped))
    properties = ET.SubElement(suite, "properties")
    for name, value in [("profile", result.profile), ("tool_version", __version__),
                        *((f"limit.{k}", f"{v:g}") for k, v in result.limits.items()),
                        *((f"revision.{k}", v) for k, v in sorted(result.revisions.items())),
                        *((f"text_columns.{k}", ",".join(v)) for k, v in sorted(result.text_columns.items())),
                        *((f"method.{k}", str(v)) for k, v in result.methods.items()),
                        *((f"checked.{config}.{c.get('check')}", check_property(c))
                          for config, checks in sorted(result.checks.items()) for c in checks)]:
        ET.SubElement(properties, "property", name=_xml_text(name), value=_xml_text(value))
    for v in result.verdicts:
        case = ET.SubElement(suite, "testcase", classname=_xml_text(f"{result.dataset_id}.{v.config}"),
                             name=_xml_text(v.name))
        if v.status == FAIL:
            ET.SubElement(case, "failure", message=_xml_text(v.line(result.dataset_id)), type=v.condition)
        elif v.status == SKIPPED:
            ET.SubElement(case, "skipped", message=_xml_text(f"NR: {v.reason}"))
    for n, error in enumerate(result.errors):
        case = ET.SubElement(suite, "testcase", classname=_xml_text(result.dataset_id), name=f"measure #{n + 1}")
        ET.SubElement(case, "error", message=_xml_text(error), type="error")
    ET.indent(suites)
    return ET.ElementTree(suites)


def write_junit(result: CheckResult, path: str | Path) -> Path:
    """Write the JUnit XML of ``result`` to ``path`` atomically (a temporary file beside it, then a
    rename): a CI system never reads half a file, and a failed write leaves the old one."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as out:
            junit_tree(result).write(out, encoding="utf-8", xml_declaration=True)
            out.write(b"\n")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path
