"""What the Hub client's collaborators (:mod:`~hubsurvey.core.hub_files`,
:mod:`~hubsurvey.core.hub_models`, :mod:`~hubsurvey.core.hub_discussions`) use of it.

Every request they make goes through the client's :meth:`HubCalls.call`: paced on its bucket,
bounded by the deadline, retried, counted by the breaker, and scrubbed of the token. They never
import the client (:class:`hubsurvey.core.hub.HubClient` builds them around itself).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Protocol, TypeVar

from huggingface_hub import HfApi

from hubsurvey.core.errors import HubError

T = TypeVar("T")


class HubCalls(Protocol):
    """The Hub client as its collaborators see it."""

    endpoint: str
    cache_dir: Path  # the survey's download cache (a run may point it at its own)

    @property
    def has_token(self) -> bool: ...

    @property
    def api(self) -> HfApi: ...

    def call(self, fn: Callable[..., T], *args: Any, _file: bool = False, _what: str | None = None, **kwargs: Any) -> T:
        """Run ``fn`` as one Hub request (``_file``: on the resolver bucket)."""
        ...

    def headers(self) -> dict[str, str]:
        """The headers of a request through huggingface_hub's session (the token's, when there is one)."""
        ...

    def pages(self, url: str, params: Any, what: str) -> Iterator[tuple[list[Any], str | None, str]]:
        """Each page of a Link-paginated listing as (items, next URL, URL fetched), each retried on its own."""
        ...

    def listing_error(self, e: BaseException, what: str) -> HubError:
        """The one-line :class:`HubError` of a listing that failed with a library error."""
        ...
