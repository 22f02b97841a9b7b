"""Audit one dataset (a Hub id or a folder): measure every config, store, return what happened.

``hubsurvey audit`` is a thin layer over :func:`audit`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hubsurvey.core.runs import Runs, RunStatus
from hubsurvey.core.store import Store
from hubsurvey.core.errors import BadInputError, SurveyError
from hubsurvey.survey.measure import ConfigResult, measure_config
from hubsurvey.core.roles import RoleOverrides, check_name
from hubsurvey.survey.sources import FolderSource, open_source


@dataclass
class AuditOutcome:
    """What an audit measured (stored unless db was None) and the one-line errors of what failed."""

    dataset_id: str
    results: list[ConfigResult] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    @property
    def rows(self) -> list[dict[str, Any]]:
        return [row for result in self.results for row in result.rows]


def audit(
    target: str,
    *,
    config: str | None = None,
    examples: int = 0,
    db: str | Path | None = None,
    roles_file: str | Path | None = None,
    dataset_id: str | None = None,
    client: Any = None,
) -> AuditOutcome:
    """Measure every config of ``target`` (or just ``config``); write each to ``db`` as it is done.

    A config that fails is reported in ``errors`` and the others go on. Each config's rows are
    written in one transaction, so a failure never leaves half a config in the DB.
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
    runs = Runs(store) if store is not None else None
    run_id = runs.start("audit", {"target": target, "config": config, "roles": str(roles_file) if roles_file else None}) if runs else None
    status = RunStatus.FAILED
    try:
        for name in [config] if config else configs:
            try:
                result = measure_config(
                    source.load(name), n_configs=len(configs), source=kind, overrides=overrides, examples=examples
                )
            except SurveyError as e:
                outcome.errors.append(str(e))
                continue
            if store is not None:
                store.replace_measurements(result.dataset_id, result.revision_sha, result.config, result.rows)
            outcome.results.append(result)
        status = RunStatus.DONE if outcome.results or not outcome.errors else RunStatus.FAILED
    except KeyboardInterrupt:
        status = RunStatus.INTERRUPTED
        raise
    finally:
        if store is not None:
            try:
                if runs is not None and run_id is not None:
                    runs.finish(run_id, status, {"configs": len(outcome.results), "rows": len(outcome.rows), "errors": len(outcome.errors)})
            finally:
                store.close()
    return outcome
