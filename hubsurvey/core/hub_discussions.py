"""The Hub client's discussions (the opt-in bot, ``hubsurvey notify``): the token's account, a
dataset's discussions, a new one.

:class:`HubDiscussions` sits behind :class:`hubsurvey.core.hub.HubClient` (``client.community``;
the client's ``whoami``, ``discussions`` and ``create_discussion`` call it). Every request is the
client's call, paced and retried.
"""

from __future__ import annotations

from typing import Any

from hubsurvey.core.errors import HubError
from hubsurvey.core.hub_calls import HubCalls


class HubDiscussions:
    """Discussions through the client."""

    def __init__(self, hub: HubCalls) -> None:
        self.hub = hub

    def whoami(self) -> dict[str, Any]:
        """The token's account (``/api/whoami-v2``): its ``name``, and ``auth.accessToken.role``.
        Without a token: :class:`HubError` (exit 4), no request made."""
        if not self.hub.has_token:
            raise HubError("no Hub token: set HF_TOKEN to a token that can write discussions")
        return dict(self.hub.call(self.hub.api.whoami, _what="whoami"))

    def discussions(self, repo_id: str, *, author: str | None = None) -> list[Any]:
        """Every discussion (not pull request) of a dataset, opened by ``author`` when given, open or
        closed (``HfApi.get_repo_discussions``: all its pages, retried as one call)."""
        return self.hub.call(lambda: list(self.hub.api.get_repo_discussions(
            repo_id, author=author, discussion_type="discussion", repo_type="dataset")), _what=f"{repo_id} discussions")

    def create_discussion(self, repo_id: str, title: str, description: str, *, author: str) -> Any:
        """Open a discussion on a dataset (``HfApi.create_discussion``), paced and retried like every call.

        Creating is not idempotent: a retry first looks for a discussion of ``author`` with this
        title (the attempt that failed may have created it, e.g. a timeout after the Hub wrote it)
        and returns that one instead of opening a second."""
        attempts = 0

        def create() -> Any:
            nonlocal attempts
            attempts += 1
            if attempts > 1:
                for found in self.hub.api.get_repo_discussions(repo_id, author=author, discussion_type="discussion",
                                                            repo_type="dataset"):
                    if found.title == title.strip():
                        return found
            return self.hub.api.create_discussion(repo_id, title, description=description, repo_type="dataset")

        return self.hub.call(create, _what=f"{repo_id} new discussion")
