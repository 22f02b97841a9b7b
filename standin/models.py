"""The stand-in's models: listing entries of Hub models, for ``GET /api/models``.

A hub root's ``index.json`` may list models beside its datasets (``{"datasets": [...],
"models": [...]}``). An entry::

    {"id": "owner/name",                         # required
     "sha": "<40 hex>",                          # default: sha1 of the id and its card
     "cardData": {"datasets": ["org/data"], ...},  # the card's metadata
     "tags": [...],                              # default: derived from the card, as the Hub does
     "private": false, "pipeline_tag", "library_name", "downloads", "likes",
     "createdAt", "lastModified"}

The Hub derives a ``dataset:<id>`` tag from every id of the card's ``datasets:``, and
``list_models(filter="dataset:<id>")`` matches those tags; so does the stand-in.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from .repos import iso_date, object_id, sha1_hex

# What ``expand`` may ask for in a models listing (huggingface_hub 2.4's ExpandModelProperty_T).
MODEL_EXPANDABLE = frozenset(
    {
        "author", "cardData", "config", "createdAt", "disabled", "downloads", "downloadsAllTime", "evalResults",
        "gated", "gguf", "inference", "inferenceProviderMapping", "lastModified", "library_name", "likes",
        "mask_token", "model-index", "pipeline_tag", "private", "safetensors", "sha", "siblings", "spaces",
        "tags", "transformersInfo", "trendingScore", "widgetData", "resourceGroup",
    }
)
# What a models listing item carries when neither ``expand`` nor ``full`` is given.
DEFAULT_MODEL_PROPS = ("likes", "downloads", "trendingScore", "private", "tags", "pipeline_tag", "library_name",
                       "createdAt", "modelId")


def tags_from_model_card(card: dict[str, Any]) -> list[str]:
    """The tags the Hub derives from a model card: ``dataset:<id>`` per declared dataset, the
    license, the languages, the library and the card's own tags."""
    def values(key: str) -> list[str]:
        value = card.get(key)
        return [value] if isinstance(value, str) else [v for v in value or [] if isinstance(v, str)]

    tags = [*values("library_name"), *values("tags")]
    tags += [f"dataset:{d}" for d in values("datasets")]
    tags += [f"license:{v}" for v in values("license")] + [f"language:{v}" for v in values("language")]
    return list(dict.fromkeys(tags))


def model_props(entry: dict[str, Any]) -> dict[str, Any]:
    """Every listing property of a model entry, with deterministic defaults for what it leaves out."""
    model_id = entry.get("id", "")
    if model_id.count("/") != 1 or not all(model_id.split("/")):
        raise ValueError(f"model id must look like 'owner/name', got {model_id!r}")
    card = entry.get("cardData") or {}
    h = hashlib.sha1(model_id.encode()).digest()
    created = int.from_bytes(h[:2], "big") % 900
    downloads = entry.get("downloads", int.from_bytes(h[2:5], "big") % 100_000)
    return {
        "_id": object_id(model_id),
        "id": model_id,
        "modelId": model_id,
        "author": model_id.split("/")[0],
        "sha": entry.get("sha") or sha1_hex("model", model_id, json.dumps(card, sort_keys=True)),
        "cardData": card or None,
        "tags": list(entry.get("tags", tags_from_model_card(card))),
        "private": bool(entry.get("private", False)),
        "gated": entry.get("gated", False),
        "disabled": bool(entry.get("disabled", False)),
        "pipeline_tag": entry.get("pipeline_tag"),
        "library_name": entry.get("library_name", card.get("library_name")),
        "downloads": downloads,
        "likes": entry.get("likes", downloads // 100),
        "trendingScore": entry.get("trendingScore", 0),
        "createdAt": entry.get("createdAt", iso_date(created)),
        "lastModified": entry.get("lastModified", iso_date(created + h[5])),
    }
