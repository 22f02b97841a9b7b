"""Models that declare contaminated training data (method ``exposure-2026``).

For every surveyed dataset that the contamination check found holding a benchmark's items (table
``contamination``, at the dataset's current revision), list the Hub models whose card declares it
as training data (``HfApi.list_models(filter="dataset:<id>")``, through
:meth:`hubsurvey.core.hub.HubClient.list_models_declaring`) and store, per model, the dataset's
contaminated (config, split, benchmark) rows beside it (table ``model_exposure``).

- **Capped**: at most ``max_models`` models per dataset (``--max-models``); the lookup row says
  whether the Hub listed more (``capped``).
- **Incremental**: a dataset's lookup row keeps the digest of the contamination rows it answered
  (:func:`contamination_digest`: the revision, each contaminated and clean (config, split,
  benchmark) with its benchmark revision and counts). A dataset is listed again only when that
  digest changes (a new revision, a new check, a benchmark at a new revision), when the cap
  changes, or when its last listing failed. A dataset listed before that a new check finds clean
  loses its model rows (its lookup row says ``clean``), without a call.
- **Faults**: a listing that fails is one line naming the dataset and the cause, recorded with its
  error class (a Hub fault is a ``hub_fault``); the model rows of an earlier listing stay, and the
  next lookup lists it again. An unreachable Hub, or one that stopped answering, ends the lookup
  (the other datasets wait for the next one).

What it does not prove: a card's ``datasets:`` is a declaration. A model may have been trained on
part of a dataset only (its train split, not the contaminated one), or on more than it declares.

:class:`ExposureStep` is the run's step (after contamination; ``run --no-exposure`` skips it) and
:func:`run_exposure` the ``hubsurvey exposure`` command, recorded as a run of its own.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hubsurvey import __version__
from hubsurvey.core.errors import HubStoppedAnsweringError, HubsurveyError, HubUnreachableError, InternalError, one_line
from hubsurvey.core.hub import HubClient
from hubsurvey.core.runs import Runs
from hubsurvey.core.steps import Counts, RunContext, RunEnd, RunOptions, Step
from hubsurvey.core.store import Store, now

log = logging.getLogger(__name__)

METHOD = "exposure-2026"
METHOD_VERSION = 1
DEFAULT_MAX_MODELS = RunOptions.max_models  # models kept per dataset
#: how a model declares a dataset: its card's ``datasets:`` lists it, or only the Hub's ``dataset:`` tag names it
DECLARED_BY_CARD = "card:datasets"
DECLARED_BY_TAG = "tag:dataset"

#: the contamination rows a lookup answers: each Hub dataset's checks at its current configs' revision
_CONTAMINATION = """
    SELECT k.dataset_id, k.revision_sha, k.config, k.split, k.split_name, k.text_columns, k.benchmark_id,
           k.benchmark_config, k.benchmark_split, k.benchmark_revision, k.contaminated_rows, k.rows_split,
           k.contaminated_pct, k.method_version
    FROM contamination k
    WHERE EXISTS (SELECT 1 FROM current_measurements m
                  WHERE m.source = 'hub' AND m.dataset_id = k.dataset_id AND m.revision_sha = k.revision_sha
                    AND m.config = k.config)
    ORDER BY k.dataset_id, k.config, k.split, k.benchmark_id, k.benchmark_config, k.benchmark_split"""

#: what the digest of a dataset's contamination covers, per row
_DIGESTED = ("revision_sha", "config", "split", "split_name", "benchmark_id", "benchmark_config", "benchmark_split",
             "benchmark_revision", "contaminated_rows", "rows_split", "method_version")


def checked_datasets(store: Store) -> dict[str, list[dict[str, Any]]]:
    """The Hub datasets checked against benchmarks at their current revision, each with every
    contamination row of that revision (clean ones included: they are part of the digest)."""
    by_dataset: dict[str, list[dict[str, Any]]] = {}
    for row in store.records(_CONTAMINATION):
        by_dataset.setdefault(row["dataset_id"], []).append(row)
    return by_dataset


def is_contaminated(rows: list[dict[str, Any]]) -> bool:
    """A dataset is contaminated when one of its checked splits holds a benchmark's items."""
    return any(r["contaminated_rows"] for r in rows)


def contamination_digest(rows: list[dict[str, Any]]) -> str:
    """sha256 of a dataset's contamination rows (the fields of ``_DIGESTED``, in a stable order)."""
    canonical = sorted(json.dumps([r[k] for k in _DIGESTED], default=str) for r in rows)
    return hashlib.sha256("\n".join(canonical).encode()).hexdigest()


def declared_by(model: Any, dataset_id: str) -> str:
    """How ``model`` (a ``ModelInfo``) declares the dataset: its card's ``datasets:`` (a list or one
    string), else the Hub's ``dataset:`` tag alone."""
    declared = getattr(getattr(model, "card_data", None), "datasets", None)
    names = [declared] if isinstance(declared, str) else declared if isinstance(declared, list) else []
    return DECLARED_BY_CARD if dataset_id in names else DECLARED_BY_TAG


@dataclass
class ExposureSummary:
    """What one lookup did."""

    contaminated: int = 0  # datasets contaminated at their current revision
    looked_up: int = 0  # listed on the Hub by this lookup
    unchanged: int = 0  # listed before, for the same contamination and cap: not listed again
    capped: int = 0  # listings that reached the cap
    models: set[str] = field(default_factory=set)  # the models this lookup's listings found
    failed: list[str] = field(default_factory=list)  # one line each
    left: int = 0  # not listed: the Hub became unreachable or stopped answering
    cleared: int = 0  # listed before, found clean by a new check since: their model rows removed
    stopped: BaseException | None = None  # that error

    def counts(self) -> dict[str, Any]:
        return {"datasets_contaminated": self.contaminated, "datasets_looked_up": self.looked_up,
                "datasets_unchanged": self.unchanged, "datasets_capped": self.capped, "models": len(self.models),
                "datasets_failed": len(self.failed), "datasets_left": self.left, "datasets_cleared": self.cleared}

    def line(self) -> str:
        return counts_line(self.counts())


def counts_line(counts: Mapping[str, Any]) -> str:
    """A lookup's counts (:meth:`ExposureSummary.counts`, as a run records them) in one line."""
    return (f"exposure: {counts['datasets_contaminated']} contaminated dataset(s), {counts['datasets_looked_up']} "
            f"listed on the Hub ({counts['datasets_capped']} at the cap), {counts['datasets_unchanged']} unchanged "
            f"since their last listing, {counts['models']} model(s) found, {counts['datasets_failed']} failed"
            + (f", {counts['datasets_left']} left for the next lookup" if counts["datasets_left"] else "")
            + (f", {counts['datasets_cleared']} found clean since" if counts.get("datasets_cleared") else ""))


def _lookup(dataset_id: str, rows: list[dict[str, Any]], max_models: int, run_id: str | None) -> dict[str, Any]:
    """The parts of a dataset's lookup row every outcome shares (which revision, cap, provenance)."""
    return {"dataset_id": dataset_id, "revision_sha": rows[0]["revision_sha"], "max_models": max_models,
            "method": METHOD, "method_version": METHOD_VERSION, "tool_version": __version__, "looked_up_at": now(),
            "run_id": run_id}


def _due(stored: dict[str, Any] | None, digest: str, max_models: int) -> bool:
    """Whether a dataset must be listed (again): never listed, its last listing failed, or its
    contamination or the cap changed since."""
    return (stored is None or stored["status"] != "listed" or stored["contamination_digest"] != digest
            or stored["max_models"] != max_models)


def lookup_exposure(store: Store, client: HubClient, *, max_models: int = DEFAULT_MAX_MODELS, run_id: str | None = None,
                    relookup: bool = False, progress: Callable[[str], None] | None = None) -> ExposureSummary:
    """List the models declaring each contaminated dataset whose contamination changed since its
    last listing (every one with ``relookup``), storing each dataset's models in one transaction.
    See the module docstring."""
    if max_models < 1:
        raise ValueError("max_models must be at least 1")
    summary = ExposureSummary()
    stored = {r["dataset_id"]: r for r in store.records("SELECT * FROM exposure_lookups")}
    todo = []
    for dataset_id, rows in checked_datasets(store).items():
        digest = contamination_digest(rows)
        if not is_contaminated(rows):
            earlier = stored.get(dataset_id)
            if earlier is not None and earlier["contamination_digest"] != digest:
                # checked again and found clean: its models are no longer exposed through it (no call)
                store.replace_exposure(_lookup(dataset_id, rows, max_models, run_id) | {
                    "contamination_digest": digest, "models": 0, "capped": False, "status": "clean",
                    "error_class": None, "error_message": None}, [])
                summary.cleared += 1
            continue
        summary.contaminated += 1
        if relookup or _due(stored.get(dataset_id), digest, max_models):
            todo.append((dataset_id, rows, digest))
        else:
            summary.unchanged += 1
    for n, (dataset_id, rows, digest) in enumerate(todo):
        if progress:
            progress(dataset_id)
        lookup = _lookup(dataset_id, rows, max_models, run_id)
        common = {k: lookup[k] for k in ("method", "method_version", "tool_version", "looked_up_at", "run_id")}
        try:
            models = client.list_models_declaring(dataset_id, limit=max_models + 1)
        except Exception as e:  # one dataset's listing never stops the others
            error = e if isinstance(e, HubsurveyError) else InternalError.of(f"listing the models that declare {dataset_id}", e)
            message = one_line(error)
            log.warning("%s", message)
            summary.failed.append(message)
            store.record_exposure_failure({**lookup, "contamination_digest": None, "models": None, "capped": None,
                                           "error_class": error.error_class, "error_message": message})
            if isinstance(error, HubUnreachableError | HubStoppedAnsweringError):
                summary.stopped, summary.left = error, len(todo) - n - 1
                break
            continue
        models = list({m.id: m for m in reversed(models)}.values())[::-1]  # a model listed twice counts once
        capped = len(models) > max_models
        models = models[:max_models]
        exposure = [{"model_id": m.id, "model_sha": m.sha, "declared_by": declared_by(m, dataset_id),
                     "dataset_id": dataset_id, "revision_sha": r["revision_sha"], "config": r["config"],
                     "split": r["split"], "split_name": r["split_name"], "text_columns": list(r["text_columns"]),
                     "benchmark_id": r["benchmark_id"], "benchmark_config": r["benchmark_config"],
                     "benchmark_split": r["benchmark_split"], "benchmark_revision": r["benchmark_revision"],
                     "contaminated_rows": r["contaminated_rows"], "rows_split": r["rows_split"],
                     "contaminated_pct": r["contaminated_pct"], **common}
                    for m in models for r in rows if r["contaminated_rows"]]
        store.replace_exposure({**lookup, "contamination_digest": digest, "models": len(models), "capped": capped,
                                "status": "listed", "error_class": None, "error_message": None}, exposure)
        summary.looked_up += 1
        summary.capped += capped
        summary.models.update(m.id for m in models)
    return summary


@dataclass
class ExposureStep(Step):
    """List the models declaring the contaminated datasets (after the contamination step; once every
    job is done: with jobs left pending, the next run does it). ``run --no-exposure`` skips it; a
    run with nothing contaminated records nothing."""

    name: str = "exposure"

    def run(self, ctx: RunContext) -> Counts:
        if not ctx.options.exposure or ctx.left_pending:
            return {}
        ctx.phase("exposure")
        summary = lookup_exposure(ctx.store, ctx.client, max_models=ctx.options.max_models, run_id=ctx.run_id)
        if not (summary.contaminated or summary.cleared):
            return {}
        ctx.snapshot()
        return summary.counts()

    def summary(self, counts: Counts, end: RunEnd) -> list[str]:
        return [counts_line(counts)] if counts else []


def run_exposure(db: str | Path, client: HubClient, *, max_models: int = DEFAULT_MAX_MODELS, relookup: bool = False,
                 progress: Callable[[str], None] | None = None) -> ExposureSummary:
    """``hubsurvey exposure``: the lookup alone, recorded as an ``exposure`` run. An unreachable Hub
    (or one that stopped answering) fails the run with its error, after recording what was listed."""
    summary = ExposureSummary()
    with Store(db) as store, Runs(store).recording("exposure", {"max_models": max_models, "relookup": relookup}) as recording:
        recording.counts = lambda: summary.counts()
        summary = lookup_exposure(store, client, max_models=max_models, run_id=recording.run_id, relookup=relookup,
                                  progress=progress)
        if summary.stopped is not None:
            raise summary.stopped
    return summary
