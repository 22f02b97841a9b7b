"""Audit one dataset (a Hub id or a folder): measure every config, store, return what happened.

``hubsurvey audit`` is a thin layer over :func:`audit`.
"""

from __future__ import annotations

from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hubsurvey.core.errors import (
    BadInputError,
    ExitCode,
    HubsurveyError,
    HubUnreachableError,
    InternalError,
    StoreError,
    scrub,
)
from hubsurvey.core.figures import DEFAULT_EXAMPLES, methods_measured
from hubsurvey.core.roles import RoleOverrides, check_name
from hubsurvey.core.runs import Runs, RunStatus
from hubsurvey.core.store import Store
from hubsurvey.survey.measure import ConfigResult, measure_config
from hubsurvey.survey.sources import FolderSource, open_source


@dataclass
class AuditOutcome:
    """What an audit measured (stored unless db was None) and the one-line errors of what failed."""

    dataset_id: str
    results: list[ConfigResult] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    failures: list[HubsurveyError] = field(default_factory=list)

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
    from hubsurvey.core.hub import is_transient

    first = (str(exc).strip().splitlines() or [""])[0]
    text = f"{type(exc).__name__}: {first}".rstrip(": ")
    if is_transient(exc) or type(exc).__module__.split(".")[0] in ("huggingface_hub", "httpx2"):
        from hubsurvey.core.errors import HubError

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
) -> AuditOutcome:
    """Measure every config of ``target`` (or just ``config``); write each to ``db`` as it is done.

    A config that fails, for any reason, is reported in ``errors`` (one line naming the config)
    and the others go on; only an unreachable Hub or an unusable DB stops the audit. Each config's
    rows are written in one transaction, so a failure never leaves half a config in the DB.
    """
    source = open_source(target, client=client, dataset_id=dataset_id)
    overrides = RoleOverrides.load(roles_file)
    configs = source.configs()
    if config is not None:
        check_name(source.dataset_id, "config", config)
        if config not in configs:
            raise BadInputError(f"{source.dataset_id} [{config}]: no such config (have: {', '.join(configs)})")
    outcome = AuditOutcome(source.dataset_id)
    kind = "folder" if isinstance(source, FolderSource) else "hub"
    store = Store(db) if db is not None else None
    args = {"target": target, "config": config, "roles": str(roles_file) if roles_file else None}
    try:
        with Runs(store).recording("audit", args) if store is not None else nullcontext(None) as recording:
            if recording is not None:
                recording.counts = lambda: {"configs": len(outcome.results), "rows": len(outcome.rows),
                                            "errors": len(outcome.errors)}
            for name in [config] if config else configs:
                try:
                    result = measure_config(
                        source.load(name), n_configs=len(configs), source=kind, overrides=overrides, examples=examples,
                        methods=list(methods_measured(near=near))
                    )
                except (HubUnreachableError, StoreError, KeyboardInterrupt):
                    raise
                except Exception as e:
                    outcome.failed(_config_error(e, f"{source.dataset_id} [{name}]"))
                    continue
                if store is not None and recording is not None:
                    store.replace_measurements(result.dataset_id, result.revision_sha, result.config, result.rows,
                                               result.examples, fingerprints=result.fingerprints, run_id=recording.run_id)
                outcome.results.append(result)
            if recording is not None and outcome.errors and not outcome.results:
                recording.status = RunStatus.FAILED
    finally:
        if store is not None:
            store.close()
    return outcome
