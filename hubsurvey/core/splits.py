"""Split names: the three the method uses, and the names datasets give them."""

from __future__ import annotations

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
