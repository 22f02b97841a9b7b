"""Eligibility rules. Every rule is configurable; the defaults reproduce the 2024 survey.

A dataset is surveyed when it is not gated, private or disabled, has fewer than ``max_rows`` rows in
total, has a test split and has text columns. Decisions are made in the cheapest order: first from
the listing's metadata (no request), then from the Parquet branch (one tree listing and the
Parquet footers).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

# Exclusion reasons stored in datasets.exclusion_reason (plus "error:<ExceptionClass>").
GATED, PRIVATE, DISABLED = "gated", "private", "disabled"
NO_TEST_SPLIT, TOO_MANY_ROWS, NOT_TEXT, NO_PARQUET_EXPORT = "no_test_split", "too_many_rows", "not_text", "no_parquet_export"
FILTERED = "filtered"  # excluded by an optional user filter (author deny list, ...)

# size_categories tags whose lower bound is at least 1M rows (datasets' size_categories.json).
_SIZE_LOWER_BOUNDS = {
    "n<1K": 0, "1K<n<10K": 1_000, "10K<n<100K": 10_000, "100K<n<1M": 100_000,
    "1M<n<10M": 1_000_000, "10M<n<100M": 10_000_000, "100M<n<1B": 100_000_000,
    "1B<n<10B": 10**9, "10B<n<100B": 10**10, "100B<n<1T": 10**11, "n>1T": 10**12,
}


@dataclass
class CrawlFilters:
    """What to list and what to keep. The defaults reproduce the survey."""

    max_rows: int = 1_000_000  # keep datasets with fewer rows than this, in total
    allow_gated: bool = False
    require_text: bool = True
    authors: list[str] = field(default_factory=list)  # allow list (empty: everyone)
    deny_authors: list[str] = field(default_factory=list)
    task_categories: list[str] = field(default_factory=list)
    languages: list[str] = field(default_factory=list)
    search: str | None = None
    limit: int | None = None

    def as_json(self) -> dict[str, Any]:
        return asdict(self)

    def listing_queries(self) -> list[dict[str, Any]]:
        """The listings to request: one per author when authors are given (the Hub filters by one
        author server-side), else one; each with the other server-side filters."""
        base = self.listing_kwargs()
        if len(self.authors) <= 1:
            return [base]
        return [{**base, "author": author} for author in dict.fromkeys(self.authors)]

    def listing_kwargs(self) -> dict[str, Any]:
        """The filters the Hub applies server-side (fewer pages to fetch)."""
        kwargs: dict[str, Any] = {}
        if len(self.authors) == 1:
            kwargs["author"] = self.authors[0]
        if self.task_categories:
            kwargs["task_categories"] = self.task_categories
        if self.languages:
            kwargs["language"] = self.languages
        if self.search:
            kwargs["search"] = self.search
        if self.limit:
            kwargs["limit"] = self.limit
        return kwargs


def _tag_values(tags: Iterable[str], prefix: str) -> list[str]:
    return [t.split(":", 1)[1] for t in tags if t.startswith(prefix + ":")]


def min_rows_from_tags(tags: Iterable[str]) -> int | None:
    """The smallest row count the size_categories tags allow (None: no such tag)."""
    bounds = [_SIZE_LOWER_BOUNDS[v] for v in _tag_values(tags, "size_categories") if v in _SIZE_LOWER_BOUNDS]
    return min(bounds) if bounds else None


def decide_from_listing(item: Mapping[str, Any], filters: CrawlFilters) -> str | None:
    """An exclusion reason from the listing alone, or None when the dataset needs resolving."""
    author = item.get("author") or item["id"].split("/")[0]
    if filters.authors and len(filters.authors) > 1 and author not in filters.authors:
        return FILTERED
    if author in filters.deny_authors:
        return FILTERED
    if item.get("disabled"):
        return DISABLED
    if item.get("private"):
        return PRIVATE
    if item.get("gated") not in (None, False, "false") and not filters.allow_gated:
        return GATED
    tags = item.get("tags") or []
    lower = min_rows_from_tags(tags)
    if lower is not None and lower >= filters.max_rows:
        return TOO_MANY_ROWS
    modalities = _tag_values(tags, "modality")
    if filters.require_text and modalities and "text" not in modalities:
        return NOT_TEXT
    return None
