"""Where things are on the survey site: a dataset's page and anchor, and the site's checked base URL.

The site (:mod:`hubsurvey.analysis.site`) writes its pages at these paths; the Hub bot
(:mod:`hubsurvey.analysis.notify`) and the results' badges link to them. A dataset's link depends
on its id alone, so it never moves when others are added.
"""

from __future__ import annotations

import hashlib
import re
from urllib.parse import quote

from hubsurvey.core.errors import UsageError

#: Hex digits of the shard of a dataset's page: 4,096 pages at most (the Hub advises fewer than
#: 10,000 files per folder and 100,000 per repository).
SHARD_DIGITS = 3


def dataset_shard(dataset_id: str) -> str:
    """The shard a dataset's page is in: the first :data:`SHARD_DIGITS` hex digits of the id's
    sha256. It depends on the id alone, so a dataset's link never moves when others are added."""
    return hashlib.sha256(dataset_id.encode()).hexdigest()[:SHARD_DIGITS]


def dataset_page_path(dataset_id: str) -> str:
    """The page a dataset is on, relative to the site: ``d/<shard>.html``, one page per shard of
    datasets (at most 16**SHARD_DIGITS pages, however many datasets: the site fits a Space)."""
    return f"d/{dataset_shard(dataset_id)}.html"


def dataset_anchor(dataset_id: str) -> str:
    """The dataset's element id on its shard page: the id percent-encoded with ``:`` for ``%``
    (``owner/name`` -> ``owner:2Fname``), one-to-one (``:`` never survives the encoding) and safe in
    a URL fragment and a CSS selector's attribute."""
    return quote(dataset_id, safe="").replace("%", ":")


def dataset_href(dataset_id: str) -> str:
    """A dataset's stable link, relative to the site: ``d/<shard>.html#<anchor>``."""
    return f"{href(dataset_page_path(dataset_id))}#{dataset_anchor(dataset_id)}"


def href(path: str) -> str:
    """A site path as a relative URL: each component percent-encoded, so ``%2F`` in a file name
    stays the file's name instead of becoming a ``/``."""
    return "/".join(quote(part, safe="") for part in path.split("/"))


def check_site_url(url: str | None) -> str | None:
    """The site's base URL, without a trailing slash: http(s), no spaces, no Markdown delimiters."""
    if url is None:
        return None
    url = url.rstrip("/")
    if not re.fullmatch(r"https?://[A-Za-z0-9._~:/%?#!$&'*+,;=-]+", url) or re.search(r"[()<>\[\]\s`]", url):
        raise UsageError(f"--site-url must be an http(s) URL without spaces, brackets or parentheses, not {url!r}")
    return url


def site_page(site_url: str, dataset_id: str) -> str:
    """The dataset's stable link on the survey site, :func:`dataset_href`:
    its shard's page and its anchor there (``d/<shard>.html#<anchor>``)."""
    return f"{site_url}/{dataset_href(dataset_id)}"
