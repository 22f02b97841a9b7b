"""Eligibility rules. Every rule is configurable; the defaults reproduce the 2024 survey.

A dataset is surveyed when it is not gated, private or disabled, has fewer than ``max_rows`` rows in
total, has a test split and has text columns. Decisions are made in the cheapest order: first from
the listing's metadata (no request), then from the Parquet branch: the files the card names, by
their footers (no API call, :func:`card_named_files`), or else its listing (one API call) and the
Parquet footers.

The listing holds two kinds of evidence. Facts (gated, private, disabled, the author) are the
Hub's own state. Claims (``size_categories`` and ``modality`` tags, the card's ``dataset_info``)
are what the card's author wrote: they may be stale. A claim only ever excludes a dataset, never
admits one; ``crawl --recheck-listing`` resolves the datasets that claims excluded against their
Parquet files instead.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from hubsurvey.core.options import MAX_COUNT, flag, more_than_zero, unlimited_if_zero
from hubsurvey.core.roles import infer_roles
from hubsurvey.core.splits import canonical_split

# Exclusion reasons stored in datasets.exclusion_reason (plus "error:<ExceptionClass>", a permanent failure).
GATED, PRIVATE, DISABLED = "gated", "private", "disabled"
NO_TEST_SPLIT, TOO_MANY_ROWS, NOT_TEXT, NO_PARQUET_EXPORT = "no_test_split", "too_many_rows", "not_text", "no_parquet_export"
FILTERED = "filtered"  # excluded by an optional user filter (author deny list, ...)
INVALID_LISTING = "invalid_listing"  # "invalid_listing:<field>": a listing item with a value of the wrong kind
HUB_FAULT = "hub_fault"  # "hub_fault:<class>": the Hub failed to answer; retried by the next crawl
NOT_FOUND = "not_found"  # a dataset left pending that the Hub answers 404 for when it is retried (deleted, renamed, private)

# size_categories tags whose lower bound is at least 1M rows (datasets' size_categories.json).
_SIZE_LOWER_BOUNDS = {
    "n<1K": 0, "1K<n<10K": 1_000, "10K<n<100K": 10_000, "100K<n<1M": 100_000,
    "1M<n<10M": 1_000_000, "10M<n<100M": 10_000_000, "100M<n<1B": 100_000_000,
    "1B<n<10B": 10**9, "10B<n<100B": 10**10, "100B<n<1T": 10**11, "n>1T": 10**12,
}


def _listed(_name: str, values: list[str] | None) -> list[str]:
    return list(values or [])


def _limit(name: str, value: int | None) -> int | None:
    limit = unlimited_if_zero(name, value, MAX_COUNT)
    return None if limit is None else int(limit)


@dataclass
class CrawlFilters:
    """What to list and what to keep. The defaults reproduce the survey."""

    # the command line's options (crawl, run): each declared on its field, in the order help lists them
    authors: list[str] = field(default_factory=list, metadata=flag(  # allow list (empty: everyone)
        "--author", "Only these authors (repeatable)", type=list[str] | None, default=None, parse=_listed))
    deny_authors: list[str] = field(default_factory=list, metadata=flag(
        "--deny-author", "Never these authors (repeatable)", type=list[str] | None, default=None, parse=_listed))
    task_categories: list[str] = field(default_factory=list, metadata=flag(
        "--task", "task_categories filter (repeatable)", type=list[str] | None, default=None, parse=_listed))
    languages: list[str] = field(default_factory=list, metadata=flag(
        "--language", "language filter (repeatable)", type=list[str] | None, default=None, parse=_listed))
    search: str | None = field(default=None, metadata=flag("--search", "Dataset name contains"))
    limit: int | None = field(default=None, metadata=flag(
        "--limit", "List at most N datasets (0: no limit)", parse=_limit))
    max_rows: int = field(default=1_000_000, metadata=flag(  # keep datasets with fewer rows than this, in total
        "--max-rows", "Keep datasets with fewer rows than this", parse=more_than_zero(MAX_COUNT)))
    allow_gated: bool = field(default=False, metadata=flag(
        "--allow-gated", "Also keep gated datasets (needs HF_TOKEN)"))
    list_every_branch: bool = field(default=False, metadata=flag(
        "--list-every-branch", "List every Parquet branch (one API call each), never name its files from the card"))
    require_text: bool = True

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


def decide_from_listing(item: Mapping[str, Any], filters: CrawlFilters, *, claims: bool = True) -> str | None:
    """An exclusion reason from the listing alone, or None when the dataset needs resolving.

    ``claims=False``: decide from the Hub's facts only (author filters, disabled, private,
    gated), not from what the card and its tags claim (``--recheck-listing``).
    """
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
    return decide_from_claims(item, filters) if claims else None


def decide_from_claims(item: Mapping[str, Any], filters: CrawlFilters) -> str | None:
    """An exclusion reason from the tags, the card and the file names (claims that may be
    stale), or None."""
    tags = item.get("tags") or []
    lower = min_rows_from_tags(tags)
    if lower is not None and lower >= filters.max_rows:
        return TOO_MANY_ROWS
    modalities = _tag_values(tags, "modality")
    if filters.require_text and modalities and "text" not in modalities:
        return NOT_TEXT
    card = item.get("card")
    return decide_from_card(card, filters) or decide_from_files(item.get("files"), card)


# datasets' split keywords for test, in a file or folder name between separators (its
# KEYWORDS_IN_FILENAME/DIR_NAME patterns, sep = [-._ 0-9/]); matched without case, to err on the
# side of resolving.
_TEST_NAME = re.compile(r"(?:^|[-._ 0-9/])(?:test|testing|eval|evaluation)(?:[-._ 0-9/]|$)", re.IGNORECASE)
_NOT_DATA = re.compile(r"(?:^|/)(?:\.[^/]*|readme\.md|[^/]*\.(?:md|py))$", re.IGNORECASE)


def decide_from_files(files: Iterable[str] | None, card: Mapping[str, Any] | None) -> str | None:
    """NO_TEST_SPLIT when the repo's own files say so, or None.

    A dataset whose card names no configs nor splits gets its splits from its file names, as
    ``datasets`` infers them: a test split needs a file or folder named test, testing, eval or
    evaluation. The rule applies only when the main branch (the listing's ``siblings``) holds
    data files, none of them so named, and no loading script at the root.
    """
    if files is None or (isinstance(card, Mapping) and (card.get("configs") or card.get("dataset_info"))):
        return None
    data = [f for f in files if not _NOT_DATA.search(f)]
    if not data or any("/" not in f and f.endswith(".py") for f in files):
        return None
    return None if any(_TEST_NAME.search(f) for f in data) else NO_TEST_SPLIT


def decide_from_card(card: Mapping[str, Any] | None, filters: CrawlFilters) -> str | None:
    """An exclusion reason from the card, in the order the Parquet branch is judged (no test
    split, then rows, then text), or None when the card does not settle it.

    Split names come from ``dataset_info`` and from ``configs[].data_files`` (a plain pattern or
    list of patterns is the train split, as ``datasets`` reads it). Each rule needs the card to
    speak for every config it names: no test split when every config states its splits and none
    is a test split; too many rows when the stated ``num_examples`` alone reach ``max_rows`` (a
    lower bound); not text when every config states features and none of them is a text column.
    """
    if not isinstance(card, Mapping):
        return None
    entries = card_entries(card)
    declared = config_splits(card)
    described = {e["config"] for e in entries}
    configs = described | set(declared)
    if not configs:
        return None
    splits: dict[str, set[str]] = {}
    for e in entries:
        if e["splits"] is not None:
            splits.setdefault(e["config"], set()).update(e["splits"])
    for config, names in declared.items():
        if names is not None:
            splits.setdefault(config, set()).update(names)
    if set(splits) >= configs and not any(canonical_split(n) == "test" for names in splits.values() for n in names):
        return NO_TEST_SPLIT
    stated = sum(n for e in entries for n in (e["splits"] or {}).values() if n is not None)
    if stated >= filters.max_rows:
        return TOO_MANY_ROWS
    features_stated = filters.require_text and described >= configs and all(e["features"] is not None for e in entries)
    if features_stated and not any(infer_roles(e["features"]).text_columns for e in entries):
        return NOT_TEXT
    return None


def card_named_files(card: Mapping[str, Any] | None, files: Iterable[str] | None) -> dict[str, dict[str, int]] | None:
    """``{config: {split: stated rows}}`` when the card and the main branch's file names settle
    the Parquet branch's layout: one file per split, ``{config}/{split}/0000.parquet``; else None.

    That needs every config of the card's ``configs`` to name its splits in ``data_files``, each
    split's patterns to match exactly one file of the main branch, ``dataset_info`` to state the
    rows of exactly those splits, and no loading script. The Parquet branch then holds the split
    in one file unless the card's rows are stale, which the file's footer shows: the crawl reads
    every named file's footer and lists the branch whenever one disagrees or is missing.
    """
    if not isinstance(card, Mapping) or files is None:
        return None
    files = list(files)
    if any("/" not in f and f.endswith(".py") for f in files):
        return None
    data = [f for f in files if not _NOT_DATA.search(f)]
    configs = card.get("configs")
    if not isinstance(configs, list) or not configs:
        return None
    stated: dict[str, dict[str, int | None] | None] = {e["config"]: e["splits"] for e in card_entries(card)}
    out: dict[str, dict[str, int]] = {}
    for config in configs:
        if not isinstance(config, dict) or not isinstance(config.get("config_name"), str):
            return None
        name = config["config_name"]
        patterns = _split_patterns(config.get("data_files"))
        rows = stated.get(name)
        if name in out or not patterns or not rows or set(rows) != set(patterns) or not _safe_folder(name):
            return None
        for split, globs in patterns.items():
            if rows[split] is None or not _safe_folder(split) or "-" in split or sum(1 for f in data if any(_matches(f, g) for g in globs)) != 1:
                return None
        out[name] = {split: int(n) for split, n in rows.items() if n is not None}
    return out


def _split_patterns(files: Any) -> dict[str, list[str]] | None:
    """A config's ``data_files`` as ``{split: [pattern, ...]}`` when it names its splits, else None."""
    if isinstance(files, dict) and files:
        pairs = list(files.items())
    elif isinstance(files, list) and files and all(isinstance(f, dict) for f in files):
        pairs = [(f.get("split"), f.get("path")) for f in files]
    else:
        return None  # a bare pattern is the train split, but a card may add splits beside it by file name
    out: dict[str, list[str]] = {}
    for split, paths in pairs:
        paths = [paths] if isinstance(paths, str) else paths
        if not isinstance(split, str) or split in out or not isinstance(paths, list) or not paths \
                or not all(isinstance(p, str) and p for p in paths):
            return None
        out[split] = paths
    return out


def _matches(path: str, pattern: str) -> bool:
    """Whether ``datasets`` could read the file for the pattern: a glob whose ``*`` also crosses
    folders, or the pattern as a folder. It matches more than ``datasets`` does, never less, so
    that a split of several files is never taken for one."""
    pattern = pattern.strip("/")
    return fnmatch.fnmatchcase(path, pattern) or path.startswith(pattern + "/") or fnmatch.fnmatchcase(path, pattern + "/*")


def _safe_folder(name: str) -> bool:
    """A config or split name that is one folder of the branch (split names never hold ``-``)."""
    return bool(name) and name not in (".", "..") and "/" not in name and "\\" not in name


def config_splits(card: Mapping[str, Any]) -> dict[str, set[str] | None]:
    """``{config: split names}`` from the card's ``configs``; None when a config's ``data_files``
    does not name them (no data_files: the splits come from file names, which the card does not give)."""
    configs = card.get("configs")
    out: dict[str, set[str] | None] = {}
    for config in configs if isinstance(configs, list) else []:
        if not isinstance(config, dict) or not isinstance(config.get("config_name"), str):
            continue
        files = config.get("data_files")
        names: set[str] | None = None
        if isinstance(files, str) or (isinstance(files, list) and files and all(isinstance(f, str) for f in files)):
            names = {"train"}
        elif isinstance(files, list) and files and all(isinstance(f, dict) and isinstance(f.get("split"), str) for f in files):
            names = {f["split"] for f in files}
        elif isinstance(files, dict) and files and all(isinstance(k, str) for k in files):
            names = set(files)
        out[config["config_name"]] = names
    return out


def card_entries(card: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """The card's ``dataset_info`` (a dict, or a list with one dict per config), as
    ``[{"config", "splits": {name: num_examples or None} or None, "features": HF features or None}]``.
    Anything malformed is None (the card does not settle what it garbles)."""
    info = (card or {}).get("dataset_info") if isinstance(card, Mapping) else None
    raw = info if isinstance(info, list) else [info] if isinstance(info, dict) else []
    entries = []
    for entry in raw:
        if not isinstance(entry, dict):
            continue
        config = entry.get("config_name", "default")
        entries.append({"config": config if isinstance(config, str) else str(config),
                        "splits": _card_splits(entry.get("splits")), "features": _card_features(entry.get("features"))})
    return entries


def _card_splits(splits: Any) -> dict[str, int | None] | None:
    if isinstance(splits, dict):  # an older spelling: {name: {...}}
        splits = [{"name": k, **v} for k, v in splits.items() if isinstance(v, dict)]
    if not isinstance(splits, list) or not splits:
        return None
    out: dict[str, int | None] = {}
    for split in splits:
        if not isinstance(split, dict) or not isinstance(split.get("name"), str):
            return None
        n = split.get("num_examples")
        out[split["name"]] = n if isinstance(n, int) and not isinstance(n, bool) and n >= 0 else None
    return out


_CARD_MEDIA = {"image": "Image", "audio": "Audio", "video": "Video", "pdf": "Pdf", "nifti": "Nifti"}


def _card_features(features: Any) -> dict[str, Any] | None:
    """A card's YAML feature list as HF features (the ``_type`` form infer_roles reads), or None."""
    if not isinstance(features, list) or not features:
        return None
    out: dict[str, Any] = {}
    for feature in features:
        if not isinstance(feature, dict) or not isinstance(feature.get("name"), str):
            return None
        converted = _card_feature(feature)
        if converted is None:
            return None
        out[feature["name"]] = converted
    return out


def _card_feature(spec: Mapping[str, Any]) -> Any:
    """One YAML feature (``dtype``, ``list``/``sequence``/``large_list``, ``struct``) as an HF feature."""
    for key in ("list", "sequence", "large_list"):
        if key in spec:
            inner = spec[key]
            inner_feature = _card_dtype(inner) if not isinstance(inner, dict) else _card_feature(inner)
            return None if inner_feature is None else {"_type": "List", "feature": inner_feature}
    if "struct" in spec:
        return _card_features(spec["struct"])
    if "dtype" in spec:
        return _card_dtype(spec["dtype"])
    return None


def _card_dtype(dtype: Any) -> Any:
    if isinstance(dtype, str):
        media = _CARD_MEDIA.get(dtype)
        return {"_type": media} if media else {"_type": "Value", "dtype": dtype}
    if isinstance(dtype, dict):
        if "class_label" in dtype:
            return {"_type": "ClassLabel"}
        if any(k in dtype for k in ("list", "sequence", "large_list", "struct", "dtype")):
            return _card_feature(dtype)
    if isinstance(dtype, list):  # a struct spelled as a list of named features
        return _card_features(dtype)
    return None
