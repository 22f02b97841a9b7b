"""Audit one dataset (a Hub id or a folder): measure every config, store, return what happened.

``hubsurvey audit`` is a thin layer over :func:`audit`.
"""

from __future__ import annotations

import logging
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hubsurvey.core.errors import (
    BadInputError,
    ExitCode,
    HubError,
    HubsurveyError,
    HubUnreachableError,
    InternalError,
    StoreError,
    UsageError,
    scrub,
)
from hubsurvey.core.figures import DEFAULT_EXAMPLES, methods_measured
from hubsurvey.core.roles import RoleOverrides, check_name
from hubsurvey.core.runs import Runs, RunStatus
from hubsurvey.core.signals import raise_if_stopped
from hubsurvey.core.store import Store
from hubsurvey.survey import kernels
from hubsurvey.survey.measure import ConfigResult, measure_config, with_contamination_check
from hubsurvey.survey.semantic import SemanticRequest, check_model
from hubsurvey.survey.sources import FolderSource, open_source

if TYPE_CHECKING:
    from hubsurvey.survey.contamination import BenchmarkIndex

log = logging.getLogger(__name__)


@dataclass
class AuditOutcome:
    """What an audit measured (stored unless db was None) and the one-line errors of what failed."""

    dataset_id: str
    results: list[ConfigResult] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    failures: list[HubsurveyError] = field(default_factory=list)
    #: with benchmarks (an index, or a benchmarks file): the contamination rows of every config measured
    contamination: list[dict[str, Any]] = field(default_factory=list)

    @property
    def rows(self) -> list[dict[str, Any]]:
        return [row for result in self.results for row in result.rows]

    @property
    def exit_code(self) -> ExitCode:
        """0 all measured; 1 partial; else the gravest failure's code (a bug 5, the Hub 4, bad input 2)."""
        return outcome_exit_code(self.failures, done=bool(self.results))

    def failed(self, error: HubsurveyError) -> None:
        self.failures.append(error)
        self.errors.append(scrub(str(error)))


def outcome_exit_code(failures: list[HubsurveyError], *, done: bool) -> ExitCode:
    """A per-config command's exit code: 0 nothing failed; 1 some configs done; else the gravest failure's."""
    if not failures:
        return ExitCode.OK
    if done:
        return ExitCode.PARTIAL
    return max(f.exit_code for f in failures)


def _config_error(exc: Exception, where: str) -> HubsurveyError:
    """A config's failure as a hubsurvey error whose message names the config."""
    if isinstance(exc, HubsurveyError):
        if where.rstrip("]") not in str(exc):  # "ds [config" also matches "ds [config/split]"
            exc.args = (f"{where}: {exc}",)
        return exc
    first = (str(exc).strip().splitlines() or [""])[0]
    text = f"{type(exc).__name__}: {first}".rstrip(": ")
    from hubsurvey.core.hub import is_transient  # here, on a failure: a folder's audit never loads the Hub client

    if is_transient(exc) or type(exc).__module__.split(".")[0] in ("huggingface_hub", "httpx2"):
        error: HubsurveyError = HubError(f"{where}: {text}")
    else:
        error = InternalError.of(where, exc)
    error.__cause__ = exc
    return error


def audit(
    target: str,
    *,
    config: str | None = None,
    examples: int = DEFAULT_EXAMPLES,
    near: bool = True,
    db: str | Path | None = None,
    roles_file: str | Path | None = None,
    dataset_id: str | None = None,
    client: Any = None,
    benchmarks: BenchmarkIndex | None = None,
    benchmarks_file: str | Path | None = None,
    semantic: SemanticRequest | None = None,
) -> AuditOutcome:
    """Measure every config of ``target`` (or just ``config``); write each to ``db`` as it is done.

    A config that fails, for any reason, is reported in ``errors`` (one line naming the config)
    and the others go on; only an unreachable Hub or an unusable DB stops the audit. Each config's
    rows are written in one transaction, so a failure never leaves half a config in the DB.

    ``benchmarks_file`` (a benchmarks TOML; 'default': the shipped one; needs ``db``): each config
    is also checked for contamination with its benchmarks, its rows stored in the same transaction
    as its measurements; a benchmark that cannot be indexed is an error line, the others are used.
    With ``benchmarks`` (an index already built, as ``check`` passes) each measured config is checked
    against it the same way, stored only with ``db``.

    ``semantic`` (``--semantic``): each config's paraphrase candidates too, stored apart
    (``semantic_candidates``); a model that cannot be loaded is refused before anything is measured.
    """
    if semantic is not None:
        check_model(semantic.model)
    if benchmarks_file is not None:  # a bad benchmarks file is refused before anything is measured or stored
        from hubsurvey.survey.contamination_check import check_benchmarks_file  # lazy: keeps `hubsurvey --help` fast

        check_benchmarks_file(benchmarks_file)
    source = open_source(target, client=client, dataset_id=dataset_id)
    overrides = RoleOverrides.load(roles_file)
    configs = source.configs()
    if config is not None:
        check_name(source.dataset_id, "config", config)
        if config not in configs:
            raise BadInputError(f"{source.dataset_id} [{config}]: no such config (have: {', '.join(configs)})")
    outcome = AuditOutcome(source.dataset_id)
    kind = "folder" if isinstance(source, FolderSource) else "hub"
    args: dict[str, Any] = {"target": target, "config": config, "roles": str(roles_file) if roles_file else None}
    if semantic is not None:
        args.update(semantic=True, semantic_threshold=semantic.threshold, semantic_model=semantic.model)
    if benchmarks_file is not None:
        if db is None:
            raise UsageError("an audit against benchmarks stores its contamination rows: it needs a DB")
        args["benchmarks"] = str(benchmarks_file)
    with (Store(db) if db is not None else nullcontext(None) as store,  # closed however the block ends
          Runs(store).recording("audit", args) if store is not None else nullcontext(None) as recording):
        if recording is not None:
            recording.counts = lambda: {"configs": len(outcome.results), "rows": len(outcome.rows),
                                        "errors": len(outcome.errors)}
        index = benchmarks if benchmarks is not None else _benchmark_index(store, client, benchmarks_file, recording, outcome)
        # a fresh install's one-time compile, said in one line, in child processes side by side
        kernels.compile_groups(kernels.groups_for(near=near, benchmarks=index is not None), say=log.info)
        for name in [config] if config else configs:
            try:
                data = source.load(name)
                result = measure_config(
                    data, n_configs=len(configs), source=kind, overrides=overrides, examples=examples,
                    methods=list(methods_measured(near=near)), semantic=semantic,
                )
                contamination = (_config_contamination(data, result.roles.text_columns, index,
                                                       run_id=recording.run_id if recording is not None else None)
                                 if index is not None else None)
                with_contamination_check(result.rows, [(b.benchmark.id, b.benchmark.config, b.benchmark.split)
                                                       for b in index.benchmarks] if index is not None else None)
            except (HubUnreachableError, StoreError, KeyboardInterrupt):
                raise
            except Exception as e:
                raise_if_stopped(e)  # a query Ctrl-C or SIGTERM cut short (DuckDB's own error): the command stops
                outcome.failed(_config_error(e, f"{source.dataset_id} [{name}]"))
                continue
            if store is not None and recording is not None:
                with store.transaction():  # a config's measurements and its contamination rows, or neither
                    store.replace_measurements(result.dataset_id, result.revision_sha, result.config, result.rows,
                                               result.examples, fingerprints=result.fingerprints,
                                               run_id=recording.run_id)
                    if index is not None and contamination is not None:
                        store.replace_contamination(result.dataset_id, result.revision_sha, result.config,
                                                    [(b.benchmark.id, b.benchmark.config, b.benchmark.split)
                                                     for b in index.benchmarks], contamination)
            outcome.results.append(result)
            if contamination is not None:
                outcome.contamination += contamination
        if recording is not None and outcome.errors and not outcome.results:
            recording.status = RunStatus.FAILED
    return outcome


def _config_contamination(data: Any, text_columns: Any, index: BenchmarkIndex, run_id: str | None) -> list[dict[str, Any]]:
    from hubsurvey.survey.contamination import config_rows  # the 13-gram scan: only with benchmarks

    return config_rows(data, text_columns, index, run_id=run_id)


def _benchmark_index(store: Store | None, client: Any, benchmarks_file: str | Path | None, recording: Any,
                     outcome: AuditOutcome) -> BenchmarkIndex | None:
    """The audit's benchmark index (None: no benchmarks file), recorded in the DB; each benchmark
    that could not be indexed is one error line of the audit."""
    if benchmarks_file is None or store is None or recording is None:
        return None
    # lazy: keeps `hubsurvey --help` fast
    from hubsurvey.survey.contamination_check import check_benchmarks_file, index_benchmarks, not_indexed

    if client is None and not all(b.is_local for b in check_benchmarks_file(benchmarks_file)):
        raise UsageError(f"{benchmarks_file}: its Hub benchmarks need a Hub client")
    index = index_benchmarks(store, client, benchmarks_file, run_id=recording.run_id)
    for line in not_indexed(store, recording.run_id):
        outcome.failed(BadInputError(line))
    return index
