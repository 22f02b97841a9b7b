"""Dataset cards: README.md YAML front matter, its validation, and the Hub tags derived from it.

The Hub keeps three views of one card in step: the README's YAML front matter, ``cardData`` (that
YAML as JSON) and the ``key:value`` tags. The stand-in derives whichever views an index entry or a
pushed README does not give, with the rules below.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

import yaml

# Card keys that the Hub turns into ``key:value`` tags.
TAG_KEYS = (
    "task_categories",
    "task_ids",
    "language",
    "license",
    "size_categories",
    "multilinguality",
    "language_creators",
    "annotations_creators",
    "source_datasets",
)

_FRONT_MATTER = re.compile(r"\A---[ \t]*\r?\n(.*?)(?:\r?\n)?^---[ \t]*$", re.DOTALL | re.MULTILINE)


def card_from_tags(tags: Iterable[str]) -> dict[str, Any]:
    """The card metadata implied by ``key:value`` tags (only the keys in ``TAG_KEYS``)."""
    card: dict[str, Any] = {}
    for tag in tags:
        key, sep, val = tag.partition(":")
        if sep and key in TAG_KEYS:
            card.setdefault(key, []).append(val)
    return card


def with_split_sizes(card: dict[str, Any], split_rows: dict[str, dict[str, int]] | None) -> dict[str, Any]:
    """The card with ``dataset_info`` split sizes, as ``datasets`` writes them when it pushes."""
    if not split_rows:
        return card
    info = [
        {"config_name": config, "splits": [{"name": split, "num_examples": n} for split, n in sorted(splits.items())]}
        for config, splits in sorted(split_rows.items())
    ]
    return {**card, "dataset_info": info}


def tags_from_card(card: dict[str, Any]) -> list[str]:
    """The tags the Hub shows for a card: ``key:value`` for ``TAG_KEYS``, plus its free ``tags``."""
    tags: list[str] = []
    for key in TAG_KEYS:
        vals = card.get(key)
        if isinstance(vals, (str, int, float)):
            vals = [vals]
        for val in vals or []:
            tags.append(f"{key}:{val}")
    tags.extend(str(t) for t in card.get("tags") or [] if isinstance(t, (str, int, float)))
    return tags


def readme(card: dict[str, Any], title: str) -> str:
    """A README.md whose front matter is ``card`` (no front matter when the card is empty)."""
    body = f"# {title}\n\nServed by the hubsurvey stand-in.\n"
    if not card:
        return body
    return "---\n" + yaml.safe_dump(card, sort_keys=False, allow_unicode=True) + "---\n\n" + body


def front_matter(text: str) -> str | None:
    """The YAML text between the leading ``---`` fences, or None when there is none."""
    match = _FRONT_MATTER.match(text)
    return match.group(1) if match else None


def parse_card(text: str) -> tuple[dict[str, Any], list[str]]:
    """Parse and validate a README's front matter: ``(card, errors)``.

    Errors, as the Hub's validate-yaml reports them: YAML that does not parse, front matter that is
    not a mapping, ``configs`` that is not a list of mappings each with a string ``config_name``,
    and a ``size_categories`` that is not a list. A README without front matter is valid and empty.
    """
    raw = front_matter(text)
    if raw is None:
        return {}, []
    try:
        card = yaml.safe_load(raw)
    except yaml.YAMLError as exc:
        return {}, [f"Invalid YAML in the README.md metadata: {exc}"]
    if card is None:
        return {}, []
    if not isinstance(card, dict):
        return {}, ["The README.md metadata must be a YAML mapping"]
    errors: list[str] = []
    configs = card.get("configs")
    if configs is not None:
        if not isinstance(configs, list):
            errors.append('"configs" must be an array')
        else:
            for i, config in enumerate(configs):
                if not isinstance(config, dict) or not isinstance(config.get("config_name"), str):
                    errors.append(f'"configs[{i}].config_name" is required and must be a string')
    sizes = card.get("size_categories")
    if sizes is not None and not isinstance(sizes, list):
        errors.append('"size_categories" must be an array')
    return card, errors
