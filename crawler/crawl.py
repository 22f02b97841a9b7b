"""Crawl: list Hub datasets, decide eligibility, resolve candidates, record every dataset seen.

Stages for each listed dataset, cheapest first:

1. the listing's metadata (gated, private, disabled, size_categories and modality tags, and the
   card's ``dataset_info``: splits, their sizes, features): no request. The card only excludes
   (see :mod:`rules`); such rows say ``decided_by = 'listing'``;
2. incremental skip: a dataset whose sha equals the sha it was resolved at keeps its earlier
   resolution: no request;
3. resolution, in one API call: the dataset info of ``refs/convert/parquet`` with file sizes
   (its commit is recorded as ``parquet_sha``, and everything below, and later the job's
   downloads, use that commit, so a branch update in between cannot mix revisions; its files give
   configs, splits and bytes), then one ranged read of a test file's Parquet footer (HF features:
   is it text?) from the file (resolvers) quota. Row counts come from the card's ``dataset_info``
   split sizes when it states every split and agrees with that footer; otherwise from every
   file's footer, stopping as soon as the total passes ``max_rows``. A dataset whose card names
   its Parquet files (:func:`rules.card_named_files`) is resolved from those files' footers
   instead, with no API call (``decided_by = 'card'``), unless one is missing or disagrees.

The listing is read page by page, sorted by ``lastModified`` (newest first). Each page's datasets
are written in one transaction with the listing's cursor (the next page's URL, table
``crawl_listings``): a crawl that is killed, or whose page keeps failing, resumes there. A
completed listing keeps its newest ``lastModified`` (the high-water mark): ``since_last`` lists
only down to it, so a night re-decides just the datasets changed since.

A Hub fault while resolving (an HTML page, truncated or malformed JSON, 5xx or timeouts after
every retry) is recorded as ``hub_fault:<class>`` and retried by the next crawl; only properties
of the dataset (no test split, too many rows, gated, not text...) stand until its sha changes.

Every listed dataset is written to the ``datasets`` table as eligible or excluded with a reason.
``hubsurvey crawl`` is a thin layer over :func:`crawl`.
"""

from __future__ import annotations

import contextvars
import json
import logging
import re
import time
from collections import Counter, deque
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import pyarrow as pa
from huggingface_hub.errors import (
    EntryNotFoundError,
    GatedRepoError,
    HfHubHTTPError,
    RepositoryNotFoundError,
    RevisionNotFoundError,
)

from hubsurvey.core.errors import (
    GatedError,
    HubError,
    HubFaultError,
    HubStoppedAnsweringError,
    HubTimeoutError,
    HubUnreachableError,
    OutOfTimeError,
    one_line,
)
from hubsurvey.core.hub import PARQUET_REVISION, HubClient, RepoFile, branch_split, is_transient
from hubsurvey.core.roles import features_from_arrow, infer_roles
from hubsurvey.core.runs import Runs, RunStatus
from hubsurvey.core.safety import refuse_secrets
from hubsurvey.core.splits import canonical_split
from hubsurvey.core.store import Store, now
from hubsurvey.crawler import rules
from hubsurvey.crawler.rules import CrawlFilters

# What the listing must carry to decide: facts, tags, the card, and the main branch's file names
# (a card-less dataset's splits come from them).
EXPAND = ["gated", "disabled", "private", "sha", "lastModified", "tags", "cardData", "siblings", "downloads", "likes", "author"]
LISTING_SORT = "lastModified"  # newest first: what changed since the last crawl comes first
SINCE_LAST_MARGIN = timedelta(hours=1)  # a since-last listing reads this far past its high-water mark
_COMMIT = re.compile(r"[0-9a-f]{40}")  # a branch commit as the Hub names it; anything else is not pinned to
RETRY_BATCH = 100  # pending datasets asked for by id, decided and written together
# At most this many asked for by id in one crawl (the longest waiting first): a free token's API quota
# of 5 minutes. After a night of Hub faults the rest wait for the next crawls (or a full listing,
# which reaches them all for about one call per 1,000 datasets).
RETRY_LIMIT = 1000
PAGES_IN_FLIGHT = 2  # listing pages whose datasets may be resolving while the next page is read

log = logging.getLogger(__name__)


@dataclass
class Resolution:
    """What the Parquet branch says about one dataset."""

    reason: str | None  # exclusion reason, or None when eligible
    configs: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    total_rows: int | None = None
    parquet_sha: str | None = None  # the Parquet-branch commit resolved (downloads are pinned to it)
    files_from: str = "branch"  # "branch": its listing (one API call); "card": the card named them, their footers agreed


@dataclass
class CrawlSummary:
    listed: int = 0
    eligible: int = 0
    excluded: Counter = field(default_factory=Counter)
    resolved: int = 0  # datasets resolved in this crawl (not skipped as unchanged)
    from_listing: int = 0  # datasets decided from the listing alone (no request)
    from_card: int = 0  # datasets whose Parquet files the card named and their footers confirmed (no API call)
    hub_faults: int = 0  # resolutions that met a Hub fault (retried by the next crawl)
    retried: int = 0  # datasets an earlier crawl left pending, asked for by id (a since-last crawl)
    pending_left: int = 0  # those over the crawl's limit (RETRY_LIMIT), left for the next crawls
    pages: int = 0  # listing pages read
    resumed: bool = False  # the listing resumed from a stored cursor
    api_calls: int = 0
    file_calls: int = 0
    seconds: float = 0.0
    out_of_time: bool = False  # stopped at --max-hours; the next crawl resumes the listing

    def line(self) -> str:
        """The one-line summary the crawl command ends with."""
        excluded = ", ".join(f"{k} {v}" for k, v in sorted(self.excluded.items())) or "none"
        return (
            f"listed {self.listed}, eligible {self.eligible}, excluded {sum(self.excluded.values())} ({excluded});"
            f" resolved {self.resolved}; {self.from_listing} decided from the listing;"
            + (f" {self.retried} left pending by an earlier crawl asked for again;" if self.retried else "")
            + (f" {self.pending_left} more left pending for the next crawls;" if self.pending_left else "")
            + f" {self.api_calls} API + {self.file_calls} file requests in {self.seconds:.1f} s"
        )

    def as_json(self) -> dict[str, Any]:
        return {
            "listed": self.listed,
            "eligible": self.eligible,
            "excluded": dict(self.excluded),
            "resolved": self.resolved,
            "from_listing": self.from_listing,
            "from_card": self.from_card,
            "hub_faults": self.hub_faults,
            "pages": self.pages,
            "resumed": self.resumed,
            "api_calls": self.api_calls,
            "file_calls": self.file_calls,
            "seconds": round(self.seconds, 3),
            **({"retried": self.retried} if self.retried else {}),
            **({"pending_left": self.pending_left} if self.pending_left else {}),
            **({"out_of_time": True} if self.out_of_time else {}),
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


def resolve(client: HubClient, dataset_id: str, filters: CrawlFilters, card: Mapping[str, Any] | None = None,
            files: list[str] | None = None) -> Resolution:
    """Configs, splits, files, rows and text-ness from the Parquet branch (see the module doc).

    When the card and the main branch's file names settle the branch's layout
    (:func:`rules.card_named_files`), the files the card names are read first, each by its footer,
    with no API call; if one is missing or holds other rows than the card states, the branch is
    listed as below.

    Row counts: when the card's ``dataset_info`` states the size of every split on the branch,
    those sizes are used and checked against the footer of one test file (read anyway for the
    features); a disagreement, or a card without sizes, means every footer is read.
    """
    named = None if filters.list_every_branch else rules.card_named_files(card, files)
    files_from = "card" if named else "branch"
    try:
        resolution = _resolve_named(client, dataset_id, filters, named) if named else None
        if resolution is None:
            files_from = "branch"
            resolution = _resolve(client, dataset_id, filters, card)
        return resolution
    except RevisionNotFoundError:
        return Resolution(rules.NO_PARQUET_EXPORT, files_from=files_from)
    except (GatedError, GatedRepoError):  # the token (or no token) may not read the files
        return Resolution(rules.GATED, files_from=files_from)


def _resolve_named(client: HubClient, dataset_id: str, filters: CrawlFilters,
                   named: dict[str, dict[str, int]]) -> Resolution | None:
    """The resolution from the files the card names (``{config}/{split}/0000.parquet``), or None
    when the branch does not hold them as stated (then it is listed).

    Each file's footer must hold the card's rows for its split, every file must come from one
    commit (the first read's, to which the others are pinned), and the Hub must say its size (the
    job reserves it in the cache budget). A test split is read first: its footer says whether
    the dataset is text.
    """
    order = sorted(((c, s) for c, sp in named.items() for s in sp), key=lambda cs: not _is_test(cs[1]))
    if not order or not _is_test(order[0][1]):
        return None  # no test split named: only the branch's listing may say so
    # the names become paths, rows and folders: a card echoing the token is refused whole, as a listing is
    refuse_secrets([name for sp in named.items() for name in (sp[0], *sp[1])], f"{dataset_id}: the files the card names")
    commit: str | None = None
    text_found = False
    configs: dict[str, dict[str, dict[str, Any]]] = {}
    for config, split in order:
        path = f"{config}/{split}/0000.parquet"
        try:
            found = client.parquet_file(dataset_id, path, revision=commit or PARQUET_REVISION)
        except EntryNotFoundError:
            log.debug("%s: the Parquet branch has no %s; listing it", dataset_id, path)
            return None
        except RevisionNotFoundError:
            if commit is None:  # no Parquet branch at all
                raise
            # the branch was rewritten since the first read, and its commit is gone: its listing names the new one
            log.debug("%s: the Parquet branch moved from %s; listing it", dataset_id, commit)
            return None
        if not _COMMIT.fullmatch(found.commit or "") or found.size is None or found.metadata.num_rows != named[config][split] \
                or (commit is not None and found.commit != commit):
            log.debug("%s: %s does not hold what the card states; listing the branch", dataset_id, path)
            return None
        commit = found.commit
        text_found = text_found or (_is_test(split) and _is_text(found.metadata))
        configs.setdefault(config, {})[split] = {"files": [path], "bytes": found.size, "rows": named[config][split],
                                                 "rows_from": "footers"}
    total = sum(rows for sp in named.values() for rows in sp.values())
    reason = rules.TOO_MANY_ROWS if total >= filters.max_rows else rules.NOT_TEXT if filters.require_text and not text_found else None
    return Resolution(reason, configs, total, commit, files_from="card")


#: Listings of a Parquet branch rewritten while its footers are read, before the resolution is left
#: to the next crawl: the converter rewrites a branch in one push, so a second listing names a
#: commit that holds still.
BRANCH_LISTINGS = 2


def _resolve(client: HubClient, dataset_id: str, filters: CrawlFilters, card: Mapping[str, Any] | None) -> Resolution:
    # One API call: the branch's commit (every read below, and the job's downloads, are pinned to
    # it) and its files with their sizes.
    listings = 1
    while True:
        sha, files = client.parquet_files(dataset_id)
        try:
            resolution = _resolve_at(client, dataset_id, filters, card, sha, files)
        except RevisionNotFoundError:  # a footer pinned to the listed commit: the branch moved since
            log.debug("%s: the Parquet branch moved from %s while its footers were read", dataset_id, sha)
            if listings == BRANCH_LISTINGS:
                raise HubFaultError(f"{dataset_id}: the Parquet branch moved {listings} times while its footers "
                                    "were read; the next crawl resolves it again") from None
            listings += 1
            continue
        resolution.parquet_sha = sha
        return resolution


def _resolve_at(client: HubClient, dataset_id: str, filters: CrawlFilters, card: Mapping[str, Any] | None, sha: str,
                files: list[RepoFile]) -> Resolution:
    if not files:
        return Resolution(rules.NO_PARQUET_EXPORT)
    layout: dict[str, dict[str, list[Any]]] = {}
    for f in files:
        parts = f.path.split("/")
        if len(parts) >= 3:  # config/split/file, or deeper (config/split/part-0/file): the split's too
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


class BadListingItem(ValueError):
    """One listing item carries a value of the wrong kind: that item is excluded, the crawl goes on."""

    def __init__(self, field_name: str, value: Any):
        super().__init__(f"the listing's {field_name} {_shown(value)} is not valid")
        self.field_name = field_name


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _timestamp(value: Any) -> datetime | None:
    """An ISO 8601 listing timestamp (``2024-01-02T03:04:05.000Z``) as a UTC datetime."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise ValueError(value)
    parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def _listing_row(item: Mapping[str, Any]) -> dict[str, Any]:
    """The ``datasets`` fields of one raw listing item, checked field by field: a wrong kind of
    value raises :class:`BadListingItem` naming the field (the item is then excluded alone)."""

    def typed(name: str, kinds: tuple[type, ...], default: Any = None) -> Any:
        value = item.get(name, default)
        if value is not None and (not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds)):
            raise BadListingItem(name, value)
        return value

    tags = typed("tags", (list,)) or []
    if not all(isinstance(t, str) for t in tags):
        raise BadListingItem("tags", tags)
    gated = item.get("gated")
    if gated not in (None, False, True, "auto", "manual", "false", "true"):
        raise BadListingItem("gated", gated)
    try:
        last_modified = _timestamp(item.get("lastModified"))
    except ValueError:
        raise BadListingItem("lastModified", item.get("lastModified")) from None
    siblings = typed("siblings", (list,))
    files = None
    if siblings is not None:
        if not all(isinstance(f, dict) and isinstance(f.get("rfilename"), str) for f in siblings):
            raise BadListingItem("siblings", siblings)
        files = [f["rfilename"] for f in siblings]
    return {
        "id": item["id"],
        "sha": typed("sha", (str,)),
        "author": typed("author", (str,)) or item["id"].split("/")[0],
        "tags": list(tags),
        "gated": gated,
        "private": bool(typed("private", (bool,), False)),
        "disabled": bool(typed("disabled", (bool,), False)),
        "downloads": typed("downloads", (int,)),
        "likes": typed("likes", (int,)),
        "last_modified": last_modified,
        "card": typed("cardData", (dict,)),
        "files": files,  # the main branch's file names: decisions only, never stored
    }


def _bad_row(item: Mapping[str, Any], problem: BadListingItem) -> dict[str, Any]:
    """What is stored for a listing item that cannot be decided: its id, the reason, nothing else."""
    return {"id": item["id"], "sha": None, "author": item["id"].split("/")[0], "tags": [], "gated": None,
            "private": False, "disabled": False, "downloads": None, "likes": None, "last_modified": None, "card": None,
            "files": None, "invalid": problem.field_name}


def _dataset_id(item: Any) -> str | None:
    """The item's dataset id when it is one (``owner/name``), else None (the item cannot be stored)."""
    repo_id = item.get("id") if isinstance(item, dict) else None
    if isinstance(repo_id, str) and repo_id.count("/") == 1 and all(repo_id.split("/")):
        return repo_id
    return None


def is_hub_fault(exc: BaseException) -> bool:
    """True when a failed resolution says nothing about the dataset: the Hub (or a proxy) failed
    to answer properly, even after every retry. The next crawl tries again."""
    if isinstance(exc, (HubFaultError, HubTimeoutError)):  # the client's call() types every invalid answer
        return True
    return is_transient(exc)


# Failures that earlier versions stored as permanent ("error:<class>" with a resolved_sha) although
# they are Hub faults: such a dataset is resolved again instead of staying excluded until its sha changes.
_FAULT_CLASSES = frozenset({"JSONDecodeError", "HubTimeoutError", "HubFaultError", "TooManyRedirects", "DecodingError",
                            "RemoteProtocolError", "ReadError", "ReadTimeout", "ConnectTimeout", "HfHubHTTPError"})


def _hub_fault_recorded_as_permanent(reason: str | None) -> bool:
    return reason is not None and reason.startswith("error:") and reason.removeprefix("error:") in _FAULT_CLASSES


def listing_key(query: Mapping[str, Any], endpoint: str = "") -> str:
    """The key of one listing query in ``crawl_listings``: the Hub, the filters, properties and
    order (a cursor is resumed only by the same listing of the same Hub)."""
    return json.dumps({"endpoint": endpoint, "query": dict(query), "expand": EXPAND, "sort": LISTING_SORT},
                      sort_keys=True, default=str)


def crawl(
    store: Store,
    client: HubClient,
    filters: CrawlFilters | None = None,
    *,
    run_id: str | None = None,
    workers: int = 4,
    progress: Callable[[dict[str, Any]], None] | None = None,
    recheck_listing: bool = False,
    since_last: bool = False,
    max_hours: float | None = None,
) -> CrawlSummary:
    """List, decide and record every dataset; return counts. Resolutions run on ``workers`` threads
    (the client's pacing still bounds the request rate).

    ``recheck_listing``: resolve against the Parquet branch every dataset that only the card or
    its tags excluded (a stale card cannot keep a dataset out). ``since_last``: list only down to
    the last completed listing's newest ``lastModified`` (with a margin), so that only datasets
    changed since are re-decided. A listing left unfinished by an earlier crawl resumes from its
    cursor either way. ``max_hours``: the crawl stops there, every request, retry and wait for the
    quota included, keeping what it listed (a run bounds its crawl by its own ``--max-hours``).

    Without ``run_id`` the crawl is a command of its own and records its own ``runs`` row (a survey
    run passes its id and records the run itself).
    """
    options: dict[str, Any] = {"workers": workers, "progress": progress, "recheck_listing": recheck_listing, "since_last": since_last}
    if run_id is not None:
        return _crawl(store, client, filters, run_id=run_id, **options)
    filters = filters or CrawlFilters()
    args = {"filters": filters.as_json(), "recheck_listing": recheck_listing, "since_last": since_last,
            "max_hours": max_hours}
    if max_hours:
        client.stop_after(max_hours * 3600)  # every request, retry and wait for the quota
    try:
        with Runs(store).recording("crawl", args) as recording:
            summary = _crawl(store, client, filters, run_id=recording.run_id, **options)
            recording.counts = summary.as_json()
            if summary.out_of_time:
                recording.status = RunStatus.TIMED_OUT
    finally:
        if max_hours:
            client.stop_after(None)
    return summary


@dataclass
class _Entry:
    """One listed dataset on its way to the store: decided, or waiting for its resolution."""

    meta: dict[str, Any]
    prior: dict[str, Any] | None
    row: dict[str, Any] | None = None
    future: Future | None = None


@dataclass
class _Page:
    next_url: str | None
    entries: list[_Entry]
    newest: datetime | None

    def done(self) -> bool:
        return all(e.future is None or e.future.done() for e in self.entries)


class _Crawler:
    """One crawl: the listings of its queries, their datasets decided and written page by page."""

    def __init__(self, store: Store, client: HubClient, filters: CrawlFilters, *, run_id: str, pool: ThreadPoolExecutor,
                 progress: Callable[[dict[str, Any]], None] | None, recheck_listing: bool, since_last: bool):
        self.store, self.client, self.filters, self.run_id, self.pool = store, client, filters, run_id, pool
        self.progress, self.recheck_listing, self.since_last = progress, recheck_listing, since_last
        self.summary = CrawlSummary()
        self.seen: set[str] = set()  # ids decided by this crawl: an id listed twice is decided once

    # --- one listing query, page by page ---------------------------------------------------------

    def listing(self, query: dict[str, Any], window: int) -> None:
        key = listing_key(query, self.client.endpoint)
        state = self.store.crawl_listing(key) or {}
        resuming = bool(state.get("next_url"))
        mode = state.get("mode") if resuming else ("since_last" if self.since_last else "full")
        stop_below = state.get("high_water") if mode == "since_last" else None
        if stop_below is not None:
            stop_below -= SINCE_LAST_MARGIN
        cursor: dict[str, Any] = {
            "listing_key": key, "next_url": None, "mode": mode,
            "pages": state.get("pages", 0) if resuming else 0, "items": state.get("items", 0) if resuming else 0,
            "newest": state.get("newest") if resuming else None, "high_water": state.get("high_water"),
            "started_at": state.get("started_at") if resuming else now(), "completed_at": None, "run_id": self.run_id,
        }
        if resuming:
            self.summary.resumed = True
            log.info("resuming the listing at page %d (%d items already written)", cursor["pages"] + 1, cursor["items"])
        limit = query.get("limit")
        if resuming and limit is not None:
            query = {**query, "limit": max(0, int(limit) - int(cursor["items"]))}
        pages = self.client.list_dataset_pages(expand=EXPAND, sort=LISTING_SORT, start_url=state.get("next_url") if resuming else None,
                                               **query)
        pending: deque[_Page] = deque()
        last_modified: datetime | None = None
        ordered = True
        try:
            for page in pages:
                self.summary.pages += 1
                entries: list[tuple[str, Any]] = []
                stopped = False
                for item in page.items:
                    repo_id = _dataset_id(item)
                    if repo_id is None:
                        log.warning("the listing holds an item without a dataset id (%s); skipped", self.client.scrub(_shown(item)))
                        continue
                    modified = _safe_timestamp(item.get("lastModified"))
                    if modified is not None and last_modified is not None and modified > last_modified and ordered:
                        ordered = False  # not newest first: the high-water mark cannot end this listing
                        if stop_below is not None:
                            log.warning("the listing is not sorted by lastModified, newest first: listing it whole")
                    last_modified = modified or last_modified
                    if stop_below is not None and ordered and modified is not None and modified < stop_below:
                        stopped = True
                        break
                    entries.append((repo_id, item))
                pending.append(self._page(entries, None if stopped else page.next_url))
                while pending and (pending[0].done() or len(pending) > window):
                    self._write(pending.popleft(), cursor)
                if stopped:
                    break
        except HubError:
            while pending:  # what was listed before the failure is kept, with its cursor
                self._write(pending.popleft(), cursor)
            raise
        while pending:
            self._write(pending.popleft(), cursor)
        newest = cursor["newest"]
        high = max((t for t in (newest, cursor["high_water"]) if t is not None), default=None)
        self.store.upsert_datasets([], {**cursor, "next_url": None, "high_water": high, "newest": None,
                                        "completed_at": now(), "updated_at": now()})

    # --- the datasets an earlier crawl left pending ---------------------------------------------

    def retry_pending(self, batch: int = RETRY_BATCH, limit: int | None = None) -> None:
        """Ask the Hub, by id, for the datasets an earlier crawl left pending and this one did not
        list (a since-last listing reaches only what changed): one API call each, then decided and
        written as if listed, ``batch`` at a time, at most ``limit`` of them (default
        :data:`RETRY_LIMIT`; the longest waiting first). A dataset the Hub answers 404 (or 403, disabled) for is recorded as such; one whose
        answer is a Hub fault stays pending."""
        pending = [d for d in self.store.pending_datasets() if d not in self.seen and self._admits(d)]
        limit = RETRY_LIMIT if limit is None else limit
        if len(pending) > limit:
            log.warning("%d datasets an earlier crawl left pending: asking again for the %d waiting longest; "
                        "the next crawls, or a full one, reach the rest", len(pending), limit)
            self.summary.pending_left = len(pending) - limit
            pending = pending[:limit]
        elif pending:
            log.info("asking again for %d datasets an earlier crawl left pending", len(pending))
        for start in range(0, len(pending), batch):
            chunk = pending[start:start + batch]
            asked = [self.pool.submit(contextvars.copy_context().run, self._ask, d) for d in chunk]
            items: list[tuple[str, Any]] = []
            unserved: dict[str, list[str]] = {}
            for dataset_id, future in zip(chunk, asked):
                answer = future.result()
                if isinstance(answer, dict):
                    items.append((dataset_id, answer))
                elif answer is not None:
                    unserved.setdefault(answer, []).append(dataset_id)
                else:
                    self.summary.hub_faults += 1
            self.summary.retried += len(chunk)
            for reason, ids in unserved.items():
                self.store.mark_unserved(ids, reason, self.run_id)
                self.summary.excluded[reason] += len(ids)
            page = self._page(items, None)
            self._write(page, None)

    def _admits(self, dataset_id: str) -> bool:
        """Whether the crawl's author filters admit this dataset (its listing filters them)."""
        author = dataset_id.split("/")[0]
        return (not self.filters.authors or author in self.filters.authors) and author not in self.filters.deny_authors

    def _ask(self, dataset_id: str) -> dict[str, Any] | str | None:
        """The dataset as the listing gives it; else why the Hub no longer serves it (an exclusion
        reason), or None for a Hub fault (it stays pending)."""
        try:
            item = self.client.dataset_item(dataset_id, EXPAND)
        except (HubUnreachableError, HubStoppedAnsweringError, OutOfTimeError):  # the crawl stops (--max-hours: keeping what it wrote)
            raise
        except RepositoryNotFoundError:
            return rules.NOT_FOUND
        except Exception as e:
            if isinstance(e, HfHubHTTPError) and e.response is not None and e.response.status_code == 403:
                return rules.DISABLED
            log.warning("%s: asked again, the Hub failed to answer (%s); it stays pending", dataset_id,
                        self.client.scrub(one_line(e)))
            return None
        if item.get("id") != dataset_id:  # renamed: the listing shows it under its new name
            return rules.NOT_FOUND
        return item

    def _page(self, items: list[tuple[str, Any]], next_url: str | None) -> _Page:
        """Decide a page's datasets from the listing; start resolving the rest."""
        fresh = [(repo_id, item) for repo_id, item in dict(items).items() if repo_id not in self.seen]
        self.seen.update(repo_id for repo_id, _ in fresh)
        known = self.store.crawl_records([repo_id for repo_id, _ in fresh])
        entries, newest = [], None
        latest_believable = now() + timedelta(days=1)  # a date in the future would end every later since-last listing
        for repo_id, item in fresh:
            try:
                meta = _listing_row(item)
            except BadListingItem as e:
                log.warning("%s: %s; excluded", repo_id, self.client.scrub(str(e)))
                meta = _bad_row(item, e)
            entry = _Entry(meta, known.get(repo_id))
            modified = meta["last_modified"]
            if modified is not None and modified <= latest_believable and (newest is None or modified > newest):
                newest = modified
            self._decide(entry)
            entries.append(entry)
        return _Page(next_url, entries, newest)

    def _decide(self, entry: _Entry) -> None:
        meta, prior = entry.meta, entry.prior
        if meta.get("invalid"):
            entry.row = self._row(entry, f"{rules.INVALID_LISTING}:{meta['invalid']}", None, None, "listing")
            return
        reason = rules.decide_from_listing(meta, self.filters, claims=not self.recheck_listing)
        if reason is not None:
            entry.row = self._row(entry, reason, None, None, "listing")
        elif (prior and prior["resolved_sha"] and prior["resolved_sha"] == meta["sha"] and prior["decided_by"] != "listing"
              and not _hub_fault_recorded_as_permanent(prior["exclusion_reason"])):
            configs = json.loads(prior["configs"]) if isinstance(prior["configs"], str) else prior["configs"]
            kept = Resolution(prior["exclusion_reason"], configs or {}, prior["total_rows"], prior["parquet_sha"])
            entry.row = self._row(entry, prior["exclusion_reason"], kept, meta["sha"], prior["decided_by"])
        else:
            # in a copy of this context: the crawl's call tally (HubClient.tally) counts its calls
            entry.future = self.pool.submit(contextvars.copy_context().run, self._resolve_one, meta)

    def _resolve_one(self, meta: dict[str, Any]) -> tuple[Resolution, bool]:
        """(resolution, final): a Hub fault is not final, the next crawl retries it."""
        try:
            # --recheck-listing trusts no claim: the branch is listed, not named from the card
            files = None if self.recheck_listing else meta["files"]
            return resolve(self.client, meta["id"], self.filters, meta["card"], files), True
        except (HubUnreachableError, HubStoppedAnsweringError):  # no dataset can be resolved: the crawl stops with one line
            raise
        except Exception as e:  # one dataset's failure is recorded, the crawl goes on
            if is_hub_fault(e):
                return Resolution(f"{rules.HUB_FAULT}:{type(e).__name__}"), False
            return Resolution(f"error:{type(e).__name__}"), True

    def _write(self, page: _Page, cursor: dict[str, Any] | None) -> None:
        """Write one page's datasets and the cursor of the next page (None: datasets asked for by
        id, no listing) in one transaction."""
        rows = []
        for entry in page.entries:
            if entry.row is None:
                assert entry.future is not None
                resolution, final = entry.future.result()
                self.summary.resolved += 1
                self.summary.hub_faults += not final
                self.summary.from_card += resolution.files_from == "card"
                entry.row = self._row(entry, resolution.reason, resolution, entry.meta["sha"] if final else None,
                                      "card" if resolution.files_from == "card" else "parquet")
            rows.append(entry.row)
        if cursor is not None:
            if page.newest is not None and (cursor["newest"] is None or page.newest > cursor["newest"]):
                cursor["newest"] = page.newest
            cursor.update(next_url=self._storable(page.next_url), pages=cursor["pages"] + 1,
                          items=cursor["items"] + len(rows), updated_at=now())
        self.store.upsert_datasets(rows, cursor)
        for row in rows:
            self.summary.listed += 1
            self.summary.from_listing += row["decided_by"] == "listing"
            if row["status"] == "eligible":
                self.summary.eligible += 1
            else:
                self.summary.excluded[row["exclusion_reason"]] += 1
        if self.progress:
            self.progress(self.summary.as_json())

    def _storable(self, url: str | None) -> str | None:
        """The cursor as stored: never one that holds the token (a Hub echoing it); such a listing
        then starts over instead of resuming."""
        if url is not None and self.client.scrub(url) != url:
            log.warning("the listing's next-page link holds the token; it is not stored (an interrupted listing starts over)")
            return None
        return url

    def _row(self, entry: _Entry, reason: str | None, resolution: Resolution | None, resolved_sha: str | None,
             decided_by: str) -> dict[str, Any]:
        meta, seen = entry.meta, now()
        return {
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
            "first_seen": entry.prior["first_seen"] if entry.prior else seen,
            "last_seen": seen,
            "run_id": self.run_id,
            "decided_by": decided_by,
        }


def _safe_timestamp(value: Any) -> datetime | None:
    try:
        return _timestamp(value)
    except ValueError:
        return None


def _crawl(
    store: Store,
    client: HubClient,
    filters: CrawlFilters | None,
    *,
    run_id: str,
    workers: int,
    progress: Callable[[dict[str, Any]], None] | None,
    recheck_listing: bool,
    since_last: bool,
) -> CrawlSummary:
    filters = filters or CrawlFilters()
    started = time.perf_counter()
    pool = ThreadPoolExecutor(max_workers=max(1, workers))
    crawler = _Crawler(store, client, filters, run_id=run_id, pool=pool, progress=progress,
                       recheck_listing=recheck_listing, since_last=since_last)
    # the crawl's own calls: jobs measured beside it download through the same client
    with client.tally() as tally:
        try:
            # Several authors: one server-side listing each, one after the other (never the whole Hub).
            for query in filters.listing_queries():
                crawler.listing(query, window=PAGES_IN_FLIGHT)
            if since_last:  # the listing reached what changed; what an earlier crawl left pending is asked for
                crawler.retry_pending()
        except OutOfTimeError as e:  # --max-hours: what was listed is kept, with its cursor; the next crawl resumes
            log.warning("crawl: stopped at --max-hours: %s", client.scrub(str(e)))
            crawler.summary.out_of_time = True
        except BaseException:
            # Ctrl-C, or a failure: the resolutions still in flight are not written, and one the
            # Hub never answers would hold the stop until its deadline (56 s measured): not waited for
            pool.shutdown(wait=False, cancel_futures=True)
            raise
        pool.shutdown(wait=True, cancel_futures=True)
    summary = crawler.summary
    summary.api_calls = tally.calls
    summary.file_calls = tally.file_calls
    summary.seconds = time.perf_counter() - started
    return summary
