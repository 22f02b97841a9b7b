"""``hubsurvey check``: a thin layer over :func:`hubsurvey.survey.check.check`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from hubsurvey.commands.options import Benchmarks, NoNear, Roles
from hubsurvey.core.errors import BadInputError, ExitCode, HubsurveyError, UsageError, one_line
from hubsurvey.core.hub import HubClient
from hubsurvey.core.safety import json_text, visible
from hubsurvey.core.settings import Settings
from hubsurvey.survey import check as gate

CHECK_FORMATS = ("text", "json")

Percent = float | None


def percent(value: str | float | None) -> float | None:
    """A percentage limit as written: ``5``, ``0.5`` or ``5%`` (a trailing % is what it means anyway)."""
    if value is None or isinstance(value, float):
        return value
    text = value.strip().removesuffix("%").strip()
    try:
        return float(text)
    except ValueError:
        raise typer.BadParameter(f"{value!r} is not a percentage (5, 0.5 or 5%)") from None


MaxContaminated = Annotated[Percent, typer.Option(
    "--max-contaminated", metavar="PCT", parser=percent,
    help="Fail when a config's <profile>_contaminated_test_pct (test rows in train or validation, or repeated) is above PCT")]
MaxNear = Annotated[Percent, typer.Option(
    "--max-near", metavar="PCT", parser=percent, help="Fail when a config's near_contaminated_test_pct is above PCT")]
MaxConflicting = Annotated[Percent, typer.Option(
    "--max-conflicting", metavar="PCT", parser=percent,
    help="Fail when a label column's <profile>_test_rows_in_train_conflicting_label_pct is above PCT")]
MaxBenchmark = Annotated[Percent, typer.Option(
    "--max-benchmark", metavar="PCT", parser=percent,
    help="With --benchmarks: fail when a split's rows holding a benchmark's items are above PCT % [default: 0]")]
Profile = Annotated[str, typer.Option("--profile", help="Key profile of the exact figures: raw or normalized")]
Junit = Annotated[Path | None, typer.Option("--junit", metavar="FILE", help="Also write the verdicts as JUnit XML")]
CheckFormat = Annotated[str, typer.Option("--format", help="Output format: text or json")]
DatasetId = Annotated[str | None, typer.Option(
    "--dataset-id", metavar="OWNER/NAME", help="A folder's dataset id in the output [default: from the folder's name]")]
StoreDb = Annotated[Path | None, typer.Option(
    "--db", help="Also store the measurements in this results DB, as audit does [default: store nothing]")]


def check(
    target: Annotated[str, typer.Argument(help="Hub id (owner/name) or local folder")],
    config: Annotated[str | None, typer.Option("--config", help="Check only this config")] = None,
    profile: Profile = gate.DEFAULT_PROFILE,
    max_contaminated: MaxContaminated = None,
    max_near: MaxNear = None,
    max_conflicting: MaxConflicting = None,
    benchmarks: Benchmarks = None,
    max_benchmark: MaxBenchmark = None,
    no_near: NoNear = False,
    junit: Junit = None,
    fmt: CheckFormat = "text",
    roles: Roles = None,
    dataset_id: DatasetId = None,
    db: StoreDb = None,
) -> None:
    """Gate a dataset in CI: measure it as audit does and fail (exit 6) when a figure is above its limit.

    Each limit is a percentage, tested per config and label column; a limit not given is not
    tested, and at least one is needed. Exit 0: every condition holds; 6: one does not (one line
    each, naming the config, the figure, its value and the limit); an error keeps its own code.
    """
    if fmt not in CHECK_FORMATS:
        raise UsageError(f"--format must be one of {', '.join(CHECK_FORMATS)}, not {fmt!r}")
    limits = {"contaminated": max_contaminated, "near": max_near, "conflicting": max_conflicting,
              "benchmark": max_benchmark}
    tested = gate.check_limits(limits, profile, benchmarks, near=not no_near)  # bad options: exit 2 before anything is measured
    try:
        result = gate.check(target, config=config, profile=profile, max_contaminated=max_contaminated,
                            max_near=max_near, max_conflicting=max_conflicting, max_benchmark=max_benchmark,
                            benchmarks=benchmarks, db=db, roles_file=roles, dataset_id=dataset_id,
                            near=not no_near, client=HubClient(Settings.from_env()))
    except HubsurveyError as e:
        if junit is not None:  # CI still gets a report: one error testcase saying why
            _write_junit(gate.CheckResult(target, profile, tested, errors=[one_line(e)], error_code=e.exit_code), junit)
        raise
    if junit is not None:
        _write_junit(result, junit)
    if fmt == "json":
        typer.echo(json_text(result.as_json(), indent=1))
    else:
        for line in text_lines(result):
            typer.echo(line)
    for error in result.errors:
        typer.echo(f"error: {visible(error, one_line=True)}", err=True)
    if result.exit_code != ExitCode.OK:
        raise typer.Exit(int(result.exit_code))


def _write_junit(result: gate.CheckResult, path: Path) -> None:
    try:
        gate.write_junit(result, path)
    except OSError as e:  # a folder that cannot be written, a full disk: the old file is left as it was
        raise BadInputError(f"{path}: cannot write the JUnit file: {e}") from None


def text_lines(result: gate.CheckResult) -> list[str]:
    """``check``'s text output: one line per condition (FAIL, ok or skip), then the verdict."""
    mark = {gate.FAIL: "FAIL", gate.PASS: "ok  ", gate.SKIPPED: "skip"}
    lines = [f"{mark[v.status]} {v.line(result.dataset_id)}" for v in result.verdicts]
    tested = sum(v.status != gate.SKIPPED for v in result.verdicts)
    if result.errors and not result.verdicts:
        verdict = f"check incomplete: {len(result.errors)} error(s), nothing measured"
    elif result.errors:
        verdict = f"check incomplete: {len(result.errors)} error(s); {len(result.failed)} of {tested} condition(s) failed"
    elif result.failed:
        verdict = f"check failed: {len(result.failed)} of {tested} condition(s) above their limit"
    else:
        verdict = f"check passed: {tested} condition(s) within their limit"
    limits = ", ".join(f"{name} {value:g}%" for name, value in result.limits.items())
    return [*lines, f"{verdict} ({result.dataset_id}; profile {result.profile}; limits: {limits})"]
