"""The Hub client's model listings: the models that declare a dataset as training data.

:class:`HubModels` sits behind :class:`hubsurvey.core.hub.HubClient` (``client.models``; the
client's ``list_models_declaring`` calls it). Each page of a listing is the client's call on the
API bucket, retried on its own.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import httpx2
from huggingface_hub.hf_api import ModelInfo

from hubsurvey.core.errors import HubFaultError
from hubsurvey.core.hub_calls import HubCalls
from hubsurvey.core.safety import scrub_value

#: what a listing of models asks for (``expand``): each model's revision, its card's metadata, its tags
MODEL_EXPAND = ("sha", "cardData", "tags")
#: what the scores step's listing asks for besides: each model's files (its ``.eval_results/*.yaml``)
SCORES_EXPAND = (*MODEL_EXPAND, "siblings")


class HubModels:
    """Model listings through the client."""

    def __init__(self, hub: HubCalls) -> None:
        self.hub = hub

    def declaring(self, dataset_id: str, *, limit: int, expand: Iterable[str] = MODEL_EXPAND,
                              raw: bool = False) -> list[Any]:
        """The models that declare ``dataset_id`` as training data (``ModelInfo``, at most ``limit``):
        ``HfApi.list_models(filter="dataset:<id>", limit=limit, expand=MODEL_EXPAND)``, paged here
        so that each page is paced on the API bucket and retried on its own.

        The Hub matches the filter against the ``dataset:`` tags it derives from the model card's
        ``datasets:``. Any failure of the listing is a :class:`HubError`; an answer that is no
        list of models is a :class:`HubFaultError`. ``raw``: the items as the Hub sent them (dicts,
        with ``cardData`` whole: ``ModelInfo`` drops a ``model-index`` it cannot parse entirely).
        """
        what = f"listing the models that declare {dataset_id}"
        params: list[tuple[str, Any]] = [("filter", f"dataset:{dataset_id}"), ("limit", limit)]
        params += [("expand", e) for e in expand]
        models: list[Any] = []
        try:
            for items, _following, _fetched in self.hub.pages(f"{self.hub.endpoint}/api/models", params, what):
                for item in scrub_value(items)[:limit - len(models)]:
                    if not isinstance(item, dict) or not isinstance(item.get("id"), str) or not item["id"]:
                        raise HubFaultError(f"{what}: the Hub listed an item that is no model (no id)")
                    item.setdefault("siblings", None)
                    try:
                        models.append(item if raw else ModelInfo(**item))
                    except (TypeError, ValueError, AttributeError) as e:
                        raise HubFaultError(f"{what}: the Hub's item for {item['id']!r} is not a model's: {e}") from e
                if len(models) >= limit:
                    break
        except (httpx2.HTTPError, OSError) as e:
            raise self.hub.listing_error(e, what) from e
        return models
