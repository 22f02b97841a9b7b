"""Split names: the three the method uses, and the names datasets give them."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from hubsurvey.core.errors import BadInputError

#: The method's splits, in the published order.
CANONICAL_SPLITS = ("train", "validation", "test")

#: A dataset's own split name (lower-cased) -> the method's split. Anything else is not measured.
SPLIT_ALIASES = {
    "train": "train",
    "validation": "validation",
    "valid": "validation",
    "dev": "validation",
    "val": "validation",
    "test": "test",
}


def canonical_split(name: str) -> str | None:
    """The method's name for a dataset's split name, or None when the split is not measured."""
    return SPLIT_ALIASES.get(name.lower())


# On the Parquet branch a split's folder may be "partial-train" (partial export) or "train-part3"
# (more than 10,000 shards); split names themselves never contain "-".
_BRANCH_SPLIT = re.compile(r"^(?P<layout>(?:partial-)?(?P<split>[^/]+?))(?:-part\d+)?$")
#: a split stored as numbered files beside the config's other splits: train-00000-of-00003.parquet
SHARDED_FILE = re.compile(r"^(?P<split>.+?)-\d{5}-of-(?P<total>\d{5})$")


def branch_split(directory: str) -> str:
    """The split a Parquet-branch folder holds."""
    m = _BRANCH_SPLIT.match(directory)
    return m.group("split") if m else directory


def folder_layout(directory: str) -> str:
    """Which export of its split a folder is: ``train/`` (also ``train-part0/``, ``train-part1/``:
    one export cut in parts) or ``partial-train/`` (a partial export)."""
    m = _BRANCH_SPLIT.match(directory)
    return (m.group("layout") if m else directory) + "/"


def file_layout(stem: str) -> str:
    """Which export of its split a file beside the splits is: ``test.parquet``, or
    ``test-*-of-00003.parquet`` (shards of one export share their total)."""
    m = SHARDED_FILE.match(stem)
    return f"{m.group('split')}-*-of-{m.group('total')}.parquet" if m else f"{stem}.parquet"


def refuse_two_layouts(dataset_id: str, config: str, layouts: Mapping[str, Iterable[str]]) -> None:
    """Refuse a config in which one split is stored in two layouts (``test/`` and ``test.parquet``,
    ``test/`` and ``partial-test/``): they are two exports of the split, and measuring both would
    count its rows twice. Which one is current cannot be told from the files, so neither is taken."""
    for split, found in sorted(layouts.items()):
        distinct = sorted(set(found))
        if len(distinct) > 1:
            raise BadInputError(
                f"{dataset_id} [{config}]: split {split!r} is stored in {len(distinct)} layouts "
                f"({', '.join(distinct)}); refusing to count its rows twice"
            )


def branch_layouts(paths: Iterable[str]) -> dict[str, list[str]]:
    """Split -> the layouts of its files, for paths on the Parquet branch (``config/folder/.../file``)."""
    out: dict[str, list[str]] = {}
    for path in paths:
        parts = path.split("/")
        if len(parts) >= 3:
            out.setdefault(branch_split(parts[1]), []).append(folder_layout(parts[1]))
    return out
