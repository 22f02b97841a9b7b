"""Scores at risk (method ``scores-2026``): the scores Hub models report, beside what their declared
training data holds of the split each score was measured on.

For every surveyed Hub dataset (at its current revision), list the models whose card declares it
as training data (``HfApi.list_models(filter="dataset:<id>", expand=[..., "cardData", "siblings"])``,
through :meth:`hubsurvey.core.hub.HubClient.list_models_declaring`), and read every score they
report, wherever it was measured:

- ``model-index`` in the card (``cardData``, which the listing already carries: no call per model),
  one result per metric: dataset, config, split, metric, value, verified;
- ``.eval_results/*.yaml`` in the model repo (the Hub's 2026 eval results; one file call each, for
  the models whose ``siblings`` hold such files): dataset and task. A task names no split: it is
  mapped through the benchmark's ``eval.yaml`` (one file call per benchmark and lookup), and the
  score says ``split unknown`` when the benchmark has none or the task is not in it.

Each score is stored with the datasets its model declares (the card's ``datasets:``; a ``dataset:``
tag alone is none), in table ``reported_scores``; the view ``scores_at_risk`` joins them with the
stored figures (the same dataset's exact figures, leaks across datasets, the 13-gram check) when
it is read, so a later measurement, crossleaks or contamination check shows at once.

- **Capped**: at most ``max_models`` models per dataset (``--max-models``); the lookup row says
  whether the Hub listed more (``capped``).
- **Incremental**: a dataset is listed again when its revision or the cap changed, or its last
  listing failed (``relookup``: every one). Model cards change on their own: ``--relookup``
  reads them again.
- **Faults**: a listing, or a file, that fails is one line naming the dataset (or the file) and
  the cause; the scores of an earlier listing stay; an unreachable Hub, or one that stopped
  answering, ends the lookup.
- ``base_model`` is recorded, never followed: a fine-tune's base model's training data is not
  read.

:class:`ScoresStep` is the run's step (after exposure and crossleaks; ``run --no-scores`` skips
it) and :func:`run_scores` the ``hubsurvey scores`` command, recorded as a run of its own.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from hubsurvey import __version__
from hubsurvey.core.errors import (
    GatedError,
    HubStoppedAnsweringError,
    HubsurveyError,
    HubUnreachableError,
    InternalError,
    one_line,
)
from hubsurvey.core.hub import SCORES_EXPAND, HubClient
from hubsurvey.core.runs import Runs
from hubsurvey.core.splits import canonical_split
from hubsurvey.core.steps import Counts, RunContext, RunEnd, RunOptions, Step
from hubsurvey.core.store import Store, now

log = logging.getLogger(__name__)

METHOD = "scores-2026"
METHOD_VERSION = 1
DEFAULT_MAX_MODELS = RunOptions.max_models
SOURCE_MODEL_INDEX = "model-index"
SOURCE_EVAL_RESULTS = "eval_results"
#: what a score whose benchmark task could not be mapped to a split says
SPLIT_UNKNOWN = "split unknown"
#: a model's ``.eval_results`` files read at most (the rest are left, and the count says so)
MAX_EVAL_FILES = 20
_EVAL_FILE = re.compile(r"^\.eval_results/[^/]+\.ya?ml$")
_DATASET_ID = re.compile(r"^[\w.-]+/[\w.-]+$")

#: the surveyed Hub datasets, each at its current revision
_SURVEYED = """
    SELECT dataset_id, min(revision_sha) AS revision_sha FROM current_measurements
    WHERE source = 'hub' GROUP BY dataset_id ORDER BY dataset_id"""


def _names(value: Any) -> list[str]:
    """A card field that may be one string or a list of strings, as a list of strings."""
    if isinstance(value, str):
        return [value]
    return [v for v in value or [] if isinstance(v, str)] if isinstance(value, list) else []


def declared_datasets(card: Mapping[str, Any] | None) -> list[str]:
    """The datasets a model declares as training data: its card's ``datasets:``, sorted, each once.
    The Hub's ``dataset:<id>`` tags are no declaration: the Hub derives them from the datasets a
    ``model-index`` reports results on too, which is how the listing finds a model that reports a
    score on a dataset and declares nothing."""
    return sorted({n for n in _names((card or {}).get("datasets")) if n})


def _number(value: Any) -> float | None:
    """A reported value as a number (a numeric string too); None when it is none, or not finite."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        number = float(value)
    elif isinstance(value, str):
        try:
            number = float(value.strip().rstrip("%"))
        except ValueError:
            return None
    else:
        return None
    return number if math.isfinite(number) else None


def _mapping(value: Any) -> dict[str, Any]:
    """A YAML or JSON mapping, or an empty one for anything else."""
    return value if isinstance(value, dict) else {}


def _text(value: Any) -> str | None:
    return str(value) if isinstance(value, str | int | float) and not isinstance(value, bool) and str(value) else None


def model_index_results(card: Mapping[str, Any] | None) -> tuple[list[dict[str, Any]], int]:
    """The scores of a card's ``model-index``, one per (result, metric): dataset, config, split (as
    reported), metric, value and verified; and how many results were skipped (no dataset id, no
    metric)."""
    out: list[dict[str, Any]] = []
    skipped = 0
    entries = (card or {}).get("model-index")
    for entry in entries if isinstance(entries, list) else []:
        results = entry.get("results") if isinstance(entry, dict) else None
        for result in results if isinstance(results, list) else []:
            dataset = _mapping(result.get("dataset")) if isinstance(result, dict) else {}
            metrics = result.get("metrics") if isinstance(result, dict) else None
            dataset_id = _text(dataset.get("type"))
            if dataset_id is None or not isinstance(metrics, list) or not metrics:
                skipped += 1
                continue
            task = _mapping(result.get("task"))
            for metric in metrics:
                if not isinstance(metric, dict):
                    skipped += 1
                    continue
                out.append({
                    "dataset_id": dataset_id, "config": _text(dataset.get("config")),
                    "split_reported": _text(dataset.get("split")), "task": _text(task.get("type")),
                    "metric": _text(metric.get("type")) or _text(metric.get("name")),
                    "value": _number(metric.get("value")), "verified": metric.get("verified") is True,
                    "source": SOURCE_MODEL_INDEX, "source_file": None})
    return out, skipped


def eval_results_entries(body: bytes, path: str) -> tuple[list[dict[str, Any]], int]:
    """The scores of one ``.eval_results/*.yaml`` file: a list of ``{dataset: {id, task_id},
    value, verifyToken?}``. ``verified`` is whether the file carries a ``verifyToken`` (the Hub
    checks it; hubsurvey does not). Returns the scores and the entries skipped."""
    try:
        data = yaml.safe_load(body.decode("utf-8"))
    except (UnicodeDecodeError, yaml.YAMLError):
        return [], 1
    out: list[dict[str, Any]] = []
    skipped = 0
    for entry in data if isinstance(data, list) else [data] if isinstance(data, dict) else []:
        dataset = _mapping(entry.get("dataset")) if isinstance(entry, dict) else {}
        dataset_id = _text(dataset.get("id"))
        if dataset_id is None or not isinstance(entry, dict):
            skipped += 1
            continue
        out.append({"dataset_id": dataset_id, "config": None, "split_reported": None,
                    "task": _text(dataset.get("task_id")), "metric": None, "value": _number(entry.get("value")),
                    "verified": bool(entry.get("verifyToken")), "source": SOURCE_EVAL_RESULTS, "source_file": path})
    return out, skipped


def eval_yaml_tasks(body: bytes | None) -> dict[str, dict[str, str | None]]:
    """A benchmark's ``eval.yaml``: its tasks, task id -> ``{"config", "split"}``. A task is an item
    of ``tasks`` with an ``id`` (or ``task_id``, ``name``), a ``config`` (or ``subset``,
    ``config_name``) and a ``split``; a file without tasks, or that is no YAML, gives none."""
    if not body:
        return {}
    try:
        data = yaml.safe_load(body.decode("utf-8"))
    except (UnicodeDecodeError, yaml.YAMLError):
        return {}
    tasks = data.get("tasks") if isinstance(data, dict) else None
    out: dict[str, dict[str, str | None]] = {}
    for task in tasks if isinstance(tasks, list) else []:
        if not isinstance(task, dict):
            continue
        task_id = next((_text(task.get(k)) for k in ("id", "task_id", "name") if _text(task.get(k))), None)
        if task_id is not None:
            out[task_id] = {"config": next((_text(task.get(k)) for k in ("config", "subset", "config_name")
                                            if _text(task.get(k))), None),
                            "split": _text(task.get("split"))}
    return out


def _score_id(model_id: str, row: Mapping[str, Any], n: int) -> str:
    """A score's id: stable for the same model, source, file and position."""
    key = json.dumps([model_id, row["source"], row["source_file"], n], ensure_ascii=False)
    return hashlib.sha1(key.encode()).hexdigest()[:16]


@dataclass
class ScoresSummary:
    """What one lookup did."""

    surveyed: int = 0  # surveyed Hub datasets at their current revision
    looked_up: int = 0  # listed on the Hub by this lookup
    unchanged: int = 0  # listed before at the same revision and cap: not listed again
    capped: int = 0  # listings that reached the cap
    models: set[str] = field(default_factory=set)  # the models this lookup read
    scores: int = 0  # scores stored by this lookup
    split_unknown: int = 0  # of which, eval results whose task maps to no split
    skipped: int = 0  # results or entries that name no dataset or no metric
    api_calls: int = 0  # API calls (listing pages)
    file_calls: int = 0  # file calls (.eval_results files, eval.yaml)
    failed: list[str] = field(default_factory=list)  # one line each
    left: int = 0  # not listed: the Hub became unreachable or stopped answering
    stopped: BaseException | None = None

    def counts(self) -> dict[str, Any]:
        return {"datasets_surveyed": self.surveyed, "datasets_looked_up": self.looked_up,
                "datasets_unchanged": self.unchanged, "datasets_capped": self.capped, "models": len(self.models),
                "scores": self.scores, "split_unknown": self.split_unknown, "skipped": self.skipped,
                "api_calls": self.api_calls, "file_calls": self.file_calls, "failed": len(self.failed),
                "datasets_left": self.left}

    def line(self) -> str:
        return counts_line(self.counts())


def counts_line(counts: Mapping[str, Any]) -> str:
    """A lookup's counts (:meth:`ScoresSummary.counts`, as a run records them) in one line."""
    return (f"scores: {counts['datasets_surveyed']} surveyed dataset(s), {counts['datasets_looked_up']} listed on "
            f"the Hub ({counts['datasets_capped']} at the cap), {counts['datasets_unchanged']} unchanged since their "
            f"last listing, {counts['models']} model(s) read, {counts['scores']} score(s) stored "
            f"({counts['split_unknown']} split unknown), {counts['api_calls']} API and {counts['file_calls']} file "
            f"call(s), {counts['failed']} failed"
            + (f", {counts['datasets_left']} left for the next lookup" if counts.get("datasets_left") else ""))


class _Benchmarks:
    """Each benchmark's ``eval.yaml`` tasks, read once per lookup (None: the file could not be read)."""

    def __init__(self, client: HubClient) -> None:
        self.client = client
        self.tasks: dict[str, dict[str, dict[str, str | None]] | None] = {}

    def split_of(self, dataset_id: str, task: str | None) -> dict[str, str | None] | None:
        if dataset_id not in self.tasks:
            body = None
            if _DATASET_ID.match(dataset_id):
                try:
                    body = self.client.small_file(dataset_id, "eval.yaml", repo_type="dataset")
                except GatedError:  # a gated benchmark's files: its eval.yaml unread, its tasks' splits unknown
                    body = None
            self.tasks[dataset_id] = eval_yaml_tasks(body)
        tasks = self.tasks[dataset_id] or {}
        if task is None and len(tasks) == 1:  # one task: the one a result without task_id names
            return next(iter(tasks.values()))
        return tasks.get(task or "")


def model_scores(model: Mapping[str, Any], client: HubClient, benchmarks: _Benchmarks,
                 summary: ScoresSummary) -> list[dict[str, Any]]:
    """Every score a listed model (its listing item) reports: its card's ``model-index`` results and
    its ``.eval_results`` files' entries (each file read through the client), mapped to a split."""
    model_id, sha = str(model["id"]), _text(model.get("sha"))
    card = _mapping(model.get("cardData"))
    found, skipped = model_index_results(card)
    siblings = model.get("siblings")
    siblings = siblings if isinstance(siblings, list) else []
    files = sorted(str(s.get("rfilename")) for s in siblings
                   if isinstance(s, dict) and _EVAL_FILE.match(str(s.get("rfilename") or "")))
    if not _DATASET_ID.match(model_id):  # a file URL is built from the id: only an owner/name one
        files = []
    for path in files[:MAX_EVAL_FILES]:
        body = client.small_file(model_id, path, revision=sha or "main")
        entries, bad = eval_results_entries(body or b"", path)
        found += entries
        skipped += bad + (body is None)
    skipped += max(0, len(files) - MAX_EVAL_FILES)
    summary.skipped += skipped
    for row in found:
        if row["source"] == SOURCE_EVAL_RESULTS:
            task = benchmarks.split_of(row["dataset_id"], row["task"])
            if task is not None and task.get("split"):
                row["config"], row["split_reported"] = task.get("config"), task["split"]
            else:
                row["note"] = SPLIT_UNKNOWN
                summary.split_unknown += 1
    base = _names(card.get("base_model"))
    declared = declared_datasets(card)
    rows = []
    for n, row in enumerate(found):
        reported = row["split_reported"]
        rows.append({"score_id": _score_id(model_id, row, n), "model_id": model_id, "model_sha": sha,
                     "source": row["source"], "source_file": row["source_file"], "dataset_id": row["dataset_id"],
                     "config": row["config"], "split_reported": reported,
                     "split": canonical_split(reported) if reported else None, "task": row["task"],
                     "metric": row["metric"], "value": row["value"], "verified": row["verified"],
                     "note": row.get("note"), "declared_datasets": declared, "base_model": base})
    return rows


@dataclass
class _Due:
    dataset_id: str
    revision_sha: str


def lookup_scores(store: Store, client: HubClient, *, max_models: int = DEFAULT_MAX_MODELS, run_id: str | None = None,
                  relookup: bool = False, progress: Callable[[str], None] | None = None,
                  out_of_time: Callable[[], bool] | None = None) -> ScoresSummary:
    """List the models declaring each surveyed dataset not listed at its revision and cap yet (every
    one with ``relookup``), read their scores, and store each dataset's in one transaction. See the
    module docstring. ``out_of_time`` (the run's ``--max-hours``): when it says so, the datasets not
    listed yet are left for the next lookup."""
    if max_models < 1:
        raise ValueError("max_models must be at least 1")
    summary = ScoresSummary()
    stored = {r["dataset_id"]: r for r in store.records("SELECT * FROM score_lookups")}
    todo: list[_Due] = []
    for row in store.records(_SURVEYED):
        summary.surveyed += 1
        earlier = stored.get(row["dataset_id"])
        if (relookup or earlier is None or earlier["status"] != "listed" or earlier["revision_sha"] != row["revision_sha"]
                or earlier["max_models"] != max_models):
            todo.append(_Due(row["dataset_id"], row["revision_sha"]))
        else:
            summary.unchanged += 1
    benchmarks = _Benchmarks(client)
    seen: set[str] = set()  # models read by this lookup (a model declaring two datasets is read once)
    for n, due in enumerate(todo):
        if out_of_time is not None and out_of_time():
            summary.left = len(todo) - n
            break
        if progress:
            progress(due.dataset_id)
        calls, file_calls = client.calls, client.file_calls
        lookup = {"dataset_id": due.dataset_id, "revision_sha": due.revision_sha, "max_models": max_models,
                  "method": METHOD, "method_version": METHOD_VERSION, "tool_version": __version__,
                  "looked_up_at": now(), "run_id": run_id}
        try:
            models = client.list_models_declaring(due.dataset_id, limit=max_models + 1, expand=SCORES_EXPAND, raw=True)
            models = list({m["id"]: m for m in reversed(models)}.values())[::-1]  # a model listed twice counts once
            capped = len(models) > max_models
            models = models[:max_models]
            rows, read = [], []
            for model in models:
                if model["id"] in seen:  # read through an earlier dataset's listing of this lookup
                    continue
                seen.add(model["id"])
                read.append(model["id"])
                rows += model_scores(model, client, benchmarks, summary)
        except Exception as e:  # one dataset's listing never stops the others
            error = e if isinstance(e, HubsurveyError) else InternalError.of(f"reading the scores of the models that declare {due.dataset_id}", e)
            message = one_line(error)
            if due.dataset_id not in message:
                message = f"{due.dataset_id}: {message}"
            log.warning("%s", message)
            summary.failed.append(message)
            summary.api_calls += client.calls - calls
            summary.file_calls += client.file_calls - file_calls
            store.record_score_failure({**lookup, "models": None, "capped": None, "scores": None,
                                        "api_calls": client.calls - calls, "file_calls": client.file_calls - file_calls,
                                        "error_class": error.error_class, "error_message": message})
            if isinstance(error, HubUnreachableError | HubStoppedAnsweringError):
                summary.stopped, summary.left = error, len(todo) - n - 1
                break
            continue
        provenance = {k: lookup[k] for k in ("method", "method_version", "tool_version", "looked_up_at", "run_id")}
        rows = [{**r, "listed_via": due.dataset_id, **provenance} for r in rows]
        api, files = client.calls - calls, client.file_calls - file_calls
        store.replace_scores({**lookup, "models": len(models), "capped": capped, "scores": len(rows),
                              "api_calls": api, "file_calls": files, "status": "listed", "error_class": None,
                              "error_message": None}, read, rows)
        summary.looked_up += 1
        summary.capped += capped
        summary.models.update(m["id"] for m in models)
        summary.scores += len(rows)
        summary.api_calls += api
        summary.file_calls += files
    return summary


@dataclass
class ScoresStep(Step):
    """Read the scores the surveyed datasets' models report (after crossleaks, whose leaks the view
    reads; once every job is done: with jobs left pending, the next run does it). ``run
    --no-scores`` skips it."""

    name: str = "scores"

    def run(self, ctx: RunContext) -> Counts:
        if not ctx.options.scores or ctx.left_pending:
            return {}
        ctx.phase("scores")
        summary = lookup_scores(ctx.store, ctx.client, max_models=ctx.options.max_models, run_id=ctx.run_id,
                                out_of_time=ctx.out_of_time)
        if not summary.surveyed:
            return {}
        ctx.snapshot()
        return summary.counts()

    def summary(self, counts: Counts, end: RunEnd) -> list[str]:
        return [counts_line(counts)] if counts else []


def run_scores(db: str | Path, client: HubClient, *, max_models: int = DEFAULT_MAX_MODELS, relookup: bool = False,
               progress: Callable[[str], None] | None = None) -> ScoresSummary:
    """``hubsurvey scores``: the lookup alone, recorded as a ``scores`` run. An unreachable Hub (or
    one that stopped answering) fails the run with its error, after recording what was read."""
    summary = ScoresSummary()
    with Store(db) as store, Runs(store).recording("scores", {"max_models": max_models, "relookup": relookup}) as recording:
        recording.counts = lambda: summary.counts()
        summary = lookup_scores(store, client, max_models=max_models, run_id=recording.run_id, relookup=relookup,
                                progress=progress)
        if summary.stopped is not None:
            raise summary.stopped
    return summary
