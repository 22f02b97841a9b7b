"""The stand-in's models: listing entries of Hub models, for ``GET /api/models``.

A hub root's ``index.json`` may list models beside its datasets (``{"datasets": [...],
"models": [...]}``). An entry::

    {"id": "owner/name",                         # required
     "sha": "<40 hex>",                          # default: sha1 of the id and its card
     "cardData": {"datasets": ["org/data"], ...},  # the card's metadata
     "tags": [...],                              # default: derived from the card, as the Hub does
     "private": false, "pipeline_tag", "library_name", "downloads", "likes",
     "createdAt", "lastModified",
     "eval_results": {"<name>.yaml": [{"dataset": {"id": "org/bench", "task_id": "t"}, "value": 0.9}]}}

The card's ``model-index`` (the scores the Trainer writes) rides in ``cardData``, as on the Hub.
A model's files are ``README.md`` (its card), ``config.json`` and, per ``eval_results`` key, the
YAML file ``.eval_results/<name>.yaml`` (the Hub's 2026 eval results); ``siblings`` lists them and
``/<owner>/<name>/resolve/<rev>/<path>`` serves them (:func:`model_files`).

The Hub derives a ``dataset:<id>`` tag from every id of the card's ``datasets:``, and
``list_models(filter="dataset:<id>")`` matches those tags; so does the stand-in.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import yaml

from . import cards
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
    # the datasets a model-index reports results on are tagged too, so listing dataset:<id> finds a
    # model that reports a score on it without declaring it as training data
    tags += [f"dataset:{r['dataset']['type']}" for e in card.get("model-index") or [] if isinstance(e, dict)
             for r in e.get("results") or [] if isinstance(r, dict) and isinstance(r.get("dataset"), dict)
             and isinstance(r["dataset"].get("type"), str)]
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
    files = model_files(entry)
    return {
        "siblings": [{"rfilename": path} for path in files],
        "id": model_id,
        "modelId": model_id,
        "author": model_id.split("/")[0],
        "_id": object_id(model_id),
        "sha": entry.get("sha") or sha1_hex("model", model_id, json.dumps(card, sort_keys=True),
                                            *(json.dumps(entry.get("eval_results") or {}, sort_keys=True),)
                                            if entry.get("eval_results") else ()),
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


def model_files(entry: dict[str, Any]) -> dict[str, bytes]:
    """A model entry's files, path -> bytes: its card (README.md, ``cardData`` as YAML front
    matter), a config.json, and its ``.eval_results/*.yaml`` files."""
    model_id = entry.get("id", "")
    files = {".gitattributes": b"*.safetensors filter=lfs diff=lfs merge=lfs -text\n",
             "README.md": cards.readme(entry.get("cardData") or {}, model_id).encode(),
             "config.json": b'{"model_type": "bert"}\n'}
    for name, results in sorted((entry.get("eval_results") or {}).items()):
        if "/" in name or not name.endswith((".yaml", ".yml")):
            raise ValueError(f"{model_id}: an eval results file is named <name>.yaml, got {name!r}")
        files[f".eval_results/{name}"] = yaml.safe_dump(results, sort_keys=False, allow_unicode=True).encode()
    return files
