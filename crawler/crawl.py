"""Crawl: list Hub datasets, decide eligibility, resolve candidates, record every dataset seen.

Stages for each listed dataset, cheapest first:

1. the listing's metadata (gated, private, disabled, size_categories and modality tags): no request;
2. incremental skip: a dataset whose sha equals the sha it was resolved at keeps its earlier
   resolution: no request;
3. resolution: the commit ``refs/convert/parquet`` points at (one call: it is recorded as
   ``parquet_sha``, and everything below, and later the job's downloads, use that commit, so a
   branch update in between cannot mix revisions), one tree listing of it (configs, splits, files
   and their bytes) and one ranged read of a test file's Parquet footer (HF features: is it text?). Row counts come from the
   card's ``dataset_info`` split sizes when it states every split and agrees with that footer;
   otherwise from every file's footer, stopping as soon as the total passes ``max_rows``.

Every listed dataset is written to the ``datasets`` table as eligible or excluded with a reason.
``hubsurvey crawl`` is a thin layer over :func:`crawl`.
"""

from __future__ import annotations

import itertools
import json
import time
from collections import Counter, deque
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
from huggingface_hub.errors import GatedRepoError, RevisionNotFoundError

from hubsurvey.core.errors import GatedError, HubStoppedAnsweringError, HubUnreachableError
from hubsurvey.core.hub import HubClient, branch_split, is_transient
from hubsurvey.core.roles import features_from_arrow, infer_roles
from hubsurvey.core.runs import Runs, RunStatus
from hubsurvey.core.splits import canonical_split
from hubsurvey.core.store import Store, now
from hubsurvey.crawler import rules
from hubsurvey.crawler.rules import CrawlFilters

EXPAND = ["gated", "disabled", "private", "sha", "lastModified", "tags", "cardData", "downloads", "likes", "author"]
BATCH = 500  # rows written to DuckDB per transaction


@dataclass
class Resolution:
    """What the Parquet branch says about one dataset."""

    reason: str | None  # exclusion reason, or None when eligible
    configs: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    total_rows: int | None = None
    parquet_sha: str | None = None  # the Parquet-branch commit resolved (downloads are pinned to it)


@dataclass
class CrawlSummary:
    listed: int = 0
    eligible: int = 0
    excluded: Counter = field(default_factory=Counter)
    resolved: int = 0  # datasets resolved in this crawl (not skipped as unchanged)
    api_calls: int = 0
    file_calls: int = 0
    seconds: float = 0.0

    def line(self) -> str:
        """The one-line summary the crawl command ends with."""
        excluded = ", ".join(f"{k} {v}" for k, v in sorted(self.excluded.items())) or "none"
        return (
            f"listed {self.listed}, eligible {self.eligible}, excluded {sum(self.excluded.values())} ({excluded});"
            f" resolved {self.resolved}; {self.api_calls} API + {self.file_calls} file requests in {self.seconds:.1f} s"
        )

    def as_json(self) -> dict[str, Any]:
        return {
            "listed": self.listed,
            "eligible": self.eligible,
            "excluded": dict(self.excluded),
            "resolved": self.resolved,
            "api_calls": self.api_calls,
            "file_calls": self.file_calls,
            "seconds": round(self.seconds, 3),
        }


def card_split_rows(card: Mapping[str, Any] | None) -> dict[str, dict[str, int]]:
    """``{config: {split: num_examples}}`` from a card's ``dataset_info`` (dict, or list per config)."""
    info = (card or {}).get("dataset_info")
    entries = info if isinstance(info, list) else [info] if isinstance(info, dict) else []
    out: dict[str, dict[str, int]] = {}
    for entry in entries:
        if not isinstance(entry, dict):
            continue
        splits = entry.get("splits") or []
        splits = [{"name": k, **v} for k, v in splits.items()] if isinstance(splits, dict) else splits
        for split in splits:
            if isinstance(split, dict) and isinstance(split.get("num_examples"), int):
                out.setdefault(entry.get("config_name", "default"), {})[split["name"]] = split["num_examples"]
    return out


def _is_test(split: str) -> bool:
    return canonical_split(split) == "test"


def _is_text(meta: Any) -> bool:
    schema: pa.Schema = meta.schema.to_arrow_schema()
    return bool(infer_roles(features_from_arrow(schema)).text_columns)


def resolve(client: HubClient, dataset_id: str, filters: CrawlFilters, card: Mapping[str, Any] | None = None) -> Resolution:
    """Configs, splits, files, rows and text-ness from the Parquet branch (see the module doc).

    Row counts: when the card's ``dataset_info`` states the size of every split on the branch,
    those sizes are used and checked against the footer of one test file (read anyway for the
    features); a disagreement, or a card without sizes, means every footer is read.
    """
    try:
        return _resolve(client, dataset_id, filters, card)
    except RevisionNotFoundError:
        return Resolution(rules.NO_PARQUET_EXPORT)
    except (GatedError, GatedRepoError):  # the token (or no token) may not read the files
        return Resolution(rules.GATED)


def _resolve(client: HubClient, dataset_id: str, filters: CrawlFilters, card: Mapping[str, Any] | None) -> Resolution:
    sha = client.parquet_sha(dataset_id)  # pin the branch: every read below, and the job's downloads, use this commit
    resolution = _resolve_at(client, dataset_id, filters, card, sha)
    resolution.parquet_sha = sha
    return resolution


def _resolve_at(client: HubClient, dataset_id: str, filters: CrawlFilters, card: Mapping[str, Any] | None, sha: str) -> Resolution:
    files = client.parquet_tree(dataset_id, revision=sha)
    if not files:
        return Resolution(rules.NO_PARQUET_EXPORT)
    layout: dict[str, dict[str, list[Any]]] = {}
    for f in files:
        parts = f.path.split("/")
        if len(parts) == 3:
            layout.setdefault(parts[0], {}).setdefault(branch_split(parts[1]), []).append(f)
    for splits in layout.values():
        for fs in splits.values():
            fs.sort(key=lambda f: f.path)
    # "bytes": what the split's files take on disk, so a job can reserve its room in the cache budget
    listing = {c: {s: {"files": [f.path for f in fs], "bytes": sum(f.size for f in fs)} for s, fs in sp.items()}
               for c, sp in layout.items()}
    tested = [(c, s) for c, sp in layout.items() for s in sp if _is_test(s)]
    if not tested:
        return Resolution(rules.NO_TEST_SPLIT, listing)
    # One footer of a test split: the features (is it text?) and a check of the card's sizes.
    probe_config, probe_split = tested[0]
    probe = client.parquet_footer(dataset_id, layout[probe_config][probe_split][0].path, revision=sha)
    text_found = _is_text(probe)
    stated = card_split_rows(card)
    card_covers = all(s in stated.get(c, {}) for c, sp in layout.items() for s in sp)
    probe_files = layout[probe_config][probe_split]
    card_agrees = card_covers and (len(probe_files) > 1 or stated[probe_config][probe_split] == probe.num_rows)
    if card_agrees:
        configs = {c: {s: {**v, "rows": stated[c][s], "rows_from": "card, checked"} for s, v in sp.items()} for c, sp in listing.items()}
        total = sum(stated[c][s] for c, sp in layout.items() for s in sp)
        if total >= filters.max_rows:
            return Resolution(rules.TOO_MANY_ROWS, configs, total)
    else:
        configs, total = {}, 0
        for config, splits in layout.items():
            configs[config] = {}
            for split in sorted(splits, key=lambda n: not _is_test(n)):
                rows = 0
                for f in splits[split]:
                    meta = probe if f.path == probe_files[0].path else client.parquet_footer(dataset_id, f.path, revision=sha)
                    rows += meta.num_rows
                    if not text_found and _is_test(split):
                        text_found = _is_text(meta)
                    if total + rows >= filters.max_rows:
                        return Resolution(rules.TOO_MANY_ROWS, configs, total + rows)
                configs[config][split] = {**listing[config][split], "rows": rows, "rows_from": "footers"}
                total += rows
    if filters.require_text and not text_found:
        return Resolution(rules.NOT_TEXT, configs, total)
    return Resolution(None, configs, total)


def _listing_row(item: Any) -> dict[str, Any]:
    gated = getattr(item, "gated", None)
    return {
        "id": item.id,
        "sha": getattr(item, "sha", None),
        "author": getattr(item, "author", None) or item.id.split("/")[0],
        "tags": list(getattr(item, "tags", None) or []),
        "gated": gated,
        "private": bool(getattr(item, "private", False)),
        "disabled": bool(getattr(item, "disabled", False)),
        "downloads": getattr(item, "downloads", None),
        "likes": getattr(item, "likes", None),
        "last_modified": getattr(item, "last_modified", None),
        "card": item.card_data.to_dict() if getattr(item, "card_data", None) is not None else None,
    }


def crawl(
    store: Store,
    client: HubClient,
    filters: CrawlFilters | None = None,
    *,
    run_id: str | None = None,
    workers: int = 4,
    progress: Callable[[dict[str, Any]], None] | None = None,
) -> CrawlSummary:
    """List, decide and record every dataset; return counts. Resolutions run on ``workers`` threads
    (the client's pacing still bounds the request rate).

    Without ``run_id`` the crawl is a command of its own and records its own ``runs`` row (a survey
    run passes its id and records the run itself).
    """
    if run_id is not None:
        return _crawl(store, client, filters, run_id=run_id, workers=workers, progress=progress)
    filters = filters or CrawlFilters()
    runs = Runs(store)
    run_id = runs.start("crawl", {"filters": filters.as_json()})
    status, summary, failure = RunStatus.FAILED, None, None
    try:
        summary = _crawl(store, client, filters, run_id=run_id, workers=workers, progress=progress)
        status = RunStatus.DONE
        return summary
    except BaseException as e:
        status = RunStatus.INTERRUPTED if isinstance(e, KeyboardInterrupt) else RunStatus.FAILED
        failure = e
        raise
    finally:
        runs.finish(run_id, status, summary.as_json() if summary else {}, error=failure)


def _crawl(
    store: Store,
    client: HubClient,
    filters: CrawlFilters | None,
    *,
    run_id: str,
    workers: int,
    progress: Callable[[dict[str, Any]], None] | None,
) -> CrawlSummary:
    filters = filters or CrawlFilters()
    started = time.perf_counter()
    calls0, files0 = client.calls, client.file_calls
    known = {
        r["dataset_id"]: r
        for r in store.records("SELECT dataset_id, first_seen, resolved_sha, status, exclusion_reason, total_rows, configs, parquet_sha FROM datasets")
    }
    summary = CrawlSummary()
    # Several authors: one server-side listing each, one after the other (never the whole Hub).
    listing = itertools.chain.from_iterable(
        client.list_datasets(expand=EXPAND, **query) for query in filters.listing_queries()
    )
    batch: list[dict[str, Any]] = []

    def decided(meta: dict[str, Any], reason: str | None, resolution: Resolution | None, resolved_sha: str | None) -> None:
        summary.listed += 1
        if reason is None:
            summary.eligible += 1
        else:
            summary.excluded[reason] += 1
        seen = now()
        prior = known.get(meta["id"])
        batch.append(
            {
                "dataset_id": meta["id"],
                "sha": meta["sha"],
                "author": meta["author"],
                "tags": meta["tags"],
                "gated": str(meta["gated"]).lower() if meta["gated"] is not None else None,
                "private": meta["private"],
                "disabled": meta["disabled"],
                "downloads": meta["downloads"],
                "likes": meta["likes"],
                "last_modified": meta["last_modified"],
                "status": "eligible" if reason is None else "excluded",
                "exclusion_reason": reason,
                "total_rows": resolution.total_rows if resolution else None,
                "configs": resolution.configs if resolution and resolution.configs else None,
                "resolved_sha": resolved_sha,
                "parquet_sha": resolution.parquet_sha if resolution else None,
                "first_seen": prior["first_seen"] if prior else seen,
                "last_seen": seen,
                "run_id": run_id,
            }
        )
        if progress:
            progress(summary.as_json())
        if len(batch) >= BATCH:
            _flush(store, batch)

    def resolve_one(meta: dict[str, Any]) -> tuple[dict[str, Any], Resolution, bool]:
        """(meta, resolution, final): a transient failure is not final, the next crawl retries it."""
        try:
            return meta, resolve(client, meta["id"], filters, meta["card"]), True
        except (HubUnreachableError, HubStoppedAnsweringError):  # no dataset can be resolved: the crawl stops with one line
            raise
        except Exception as e:  # one dataset's failure is recorded, the crawl goes on
            return meta, Resolution(f"error:{type(e).__name__}"), not is_transient(e)

    def candidates() -> Iterator[dict[str, Any]]:
        for item in listing:
            meta = _listing_row(item)
            reason = rules.decide_from_listing(meta, filters)
            prior = known.get(meta["id"])
            if reason is not None:
                decided(meta, reason, None, None)
            elif prior and prior["resolved_sha"] and prior["resolved_sha"] == meta["sha"]:
                configs = json.loads(prior["configs"]) if isinstance(prior["configs"], str) else prior["configs"]
                decided(meta, prior["exclusion_reason"], Resolution(prior["exclusion_reason"], configs or {}, prior["total_rows"], prior["parquet_sha"]),
                        meta["sha"])
            else:
                yield meta

    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        for meta, resolution, final in _bounded_map(pool, resolve_one, candidates(), workers * 4):
            summary.resolved += 1
            decided(meta, resolution.reason, resolution, meta["sha"] if final else None)
    _flush(store, batch)
    summary.api_calls = client.calls - calls0
    summary.file_calls = client.file_calls - files0
    summary.seconds = time.perf_counter() - started
    return summary


def _bounded_map(pool: ThreadPoolExecutor, fn: Callable[[Any], Any], items: Iterable[Any], window: int) -> Iterator[Any]:
    """pool.map that keeps at most ``window`` items in flight (the listing is a lazy stream)."""
    pending: deque = deque()
    for item in items:
        pending.append(pool.submit(fn, item))
        while len(pending) >= window or (pending and pending[0].done()):
            yield pending.popleft().result()
    while pending:
        yield pending.popleft().result()


def _flush(store: Store, batch: list[dict[str, Any]]) -> None:
    """Write a batch of dataset rows in one transaction (the store replaces earlier rows of the same ids)."""
    store.upsert_datasets(batch)
    batch.clear()
