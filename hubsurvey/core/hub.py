"""The one client through which hubsurvey talks to the Hub.

It wraps ``huggingface_hub`` (which reads ``HF_ENDPOINT`` and ``HF_TOKEN`` from the environment)
with what the library does not do for every call:

- timeouts on every request (huggingface_hub's own client has none, and its paginated listings
  pass ``timeout=None``): a transport enforces a connect and a read timeout on each request;
- fail fast offline: a host name that does not resolve, or a refused connection, is not transient;
  it raises :class:`HubUnreachableError` at once instead of being retried for half a minute;
- retries with tenacity, for every call including the paginated listings (paged here, one page
  at a time, so a retry resumes at the failed page): on 429 (honouring ``Retry-After`` and
  ``RateLimit: ...;t=N``), 5xx, timeouts and connection resets; never on 401, 403 or 404;
- pacing: at most ``rate`` API calls per second (the anonymous Hub limit is 500 per 5 minutes);
- token hygiene: the token is passed to huggingface_hub and nowhere else, and every error raised
  through the client is scrubbed of it (:func:`hubsurvey.core.errors.scrub_exception`);
- a download cache of the survey's own (never the user's huggingface_hub cache), with functions
  to delete a job's files and to keep the cache under a budget.

Nothing else in the project opens HTTP connections to the Hub.
"""

from __future__ import annotations

import logging
import os
import re
import socket
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import parse_qsl, quote, urlsplit

import httpx2
from huggingface_hub import HfApi, hf_hub_download
from huggingface_hub.errors import GatedRepoError, HfHubHTTPError, OfflineModeIsEnabled
from tenacity import RetryCallState, retry, retry_if_exception, stop_after_attempt, wait_exponential_jitter

from hubsurvey.core.errors import (
    GatedError,
    HubAnswerError,
    HubError,
    HubsurveyError,
    HubTimeoutError,
    HubUnreachableError,
    register_secret,
    scrub,
    scrub_exception,
)
from hubsurvey.core.safety import refuse_secrets, scrub_value
from hubsurvey.core.splits import branch_split  # noqa: F401 - where the stages import it from

log = logging.getLogger(__name__)

PARQUET_REVISION = "refs/convert/parquet"
RETRY_STATUSES = {408, 429, 500, 502, 503, 504}
# Anonymous Hub limits per 5 minutes: 500 API calls and 3,000 file (resolver) requests; stay under.
DEFAULT_RATE = 1.5
DEFAULT_FILE_RATE = 9.0
FOOTER_PROBE = 64 * 1024  # one suffix read gets the footer of almost every Parquet file
DEFAULT_CONNECT_TIMEOUT = 10.0  # seconds to open a connection (HUBSURVEY_CONNECT_TIMEOUT)
DEFAULT_READ_TIMEOUT = 60.0  # seconds to wait for each chunk of a response (HUBSURVEY_READ_TIMEOUT)
DEFAULT_MAX_ATTEMPTS = 6  # attempts per request before a transient failure is final (HUBSURVEY_MAX_ATTEMPTS)

T = TypeVar("T")

def is_transient(exc: BaseException) -> bool:
    """True for failures worth retrying: rate limits, 5xx, timeouts, resets, truncated bodies.

    An unreachable Hub (no DNS, connection refused, offline mode) is not transient.
    """
    if isinstance(exc, HubsurveyError):
        return bool(getattr(exc, "transient", False))
    if isinstance(exc, OfflineModeIsEnabled) or unreachable_cause(exc):
        return False
    if isinstance(exc, HfHubHTTPError):
        status = exc.response.status_code if exc.response is not None else None
        return status in RETRY_STATUSES
    if isinstance(exc, httpx2.HTTPStatusError):
        return exc.response.status_code in RETRY_STATUSES
    return isinstance(exc, (httpx2.TransportError, ConnectionError, TimeoutError))


def _server_wait(exc: BaseException | None) -> float | None:
    """Seconds the server asked us to wait (Retry-After, or RateLimit t= when r=0), if any."""
    response = getattr(exc, "response", None)
    if response is None or response.status_code != 429:
        return None
    headers = response.headers
    ratelimit = headers.get("RateLimit", "")
    m = re.search(r"\bt=(\d+)", ratelimit)
    if m:
        return float(m.group(1)) + 1.0
    retry_after = headers.get("Retry-After", "")
    if retry_after.strip().isdigit():  # the HTTP-date form is ignored, as huggingface_hub does
        return float(retry_after) + 1.0
    return None


class _ServerAwareWait:
    """tenacity wait: the server's own delay when it gave one, else exponential backoff with jitter."""

    def __init__(self, initial: float = 1.0, maximum: float = 60.0):
        self._backoff = wait_exponential_jitter(initial=initial, max=maximum)
        self._maximum = maximum

    def __call__(self, state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome else None
        asked = _server_wait(exc)
        return min(asked, self._maximum) if asked is not None else self._backoff(state)


class _Pacer:
    """A simple token-bucket limiter shared by every call of one client (thread-safe)."""

    def __init__(self, rate: float | None):
        self._interval = 1.0 / rate if rate else 0.0
        self._next = 0.0
        self._lock = threading.Lock()

    def wait(self) -> None:
        if not self._interval:
            return
        with self._lock:
            now = time.monotonic()
            delay = self._next - now
            self._next = max(now, self._next) + self._interval
        if delay > 0:
            time.sleep(delay)


def _env_float(name: str, default: float) -> float:
    value = os.environ.get(name)
    if not value:
        return default
    try:
        number = float(value)
    except ValueError:
        raise HubError(f"{name}={value!r}: not a number of seconds") from None
    if number <= 0:
        raise HubError(f"{name}={value!r}: must be more than 0")
    return number


def unreachable_cause(exc: BaseException) -> str | None:
    """The cause when ``exc`` says the Hub cannot be reached at all (DNS failure, refused), else None."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, socket.gaierror):
            return f"name does not resolve ({current.strerror or current})"
        if isinstance(current, ConnectionRefusedError):
            return "connection refused"
        current = current.__cause__ or current.__context__
    if isinstance(exc, httpx2.ConnectError):
        text = str(exc).lower()
        if any(s in text for s in ("name or service not known", "nodename nor servname", "name resolution",
                                   "getaddrinfo failed", "no address associated")):
            return f"name does not resolve ({str(exc).strip()})"
        if "connection refused" in text:
            return "connection refused"
    return None


def _origin(url: Any) -> str:
    url = httpx2.URL(str(url))
    port = f":{url.port}" if url.port else ""
    return f"{url.scheme}://{url.host}{port}"


class _TimeoutTransport(httpx2.BaseTransport):
    """Every request gets the configured timeouts, whatever the caller passed (huggingface_hub's
    listings pass none); a connection that cannot be made at all raises HubUnreachableError, which
    no retry loop (ours or huggingface_hub's) treats as transient."""

    def __init__(self, timeout: httpx2.Timeout):
        self._timeout = timeout.as_dict()
        self._inner = httpx2.HTTPTransport()

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        request.extensions = {**request.extensions, "timeout": self._timeout}
        try:
            return self._inner.handle_request(request)
        except httpx2.ConnectError as e:
            cause = unreachable_cause(e)
            if cause:
                raise HubUnreachableError(
                    f"cannot reach {_origin(request.url)}: {cause} (offline? set HF_ENDPOINT)"
                ) from e
            raise

    def close(self) -> None:
        self._inner.close()


def install_timeouts(connect: float, read: float) -> None:
    """Make huggingface_hub's shared HTTP client use these timeouts on every request.

    huggingface_hub has one process-wide client; the last HubClient created sets its timeouts.
    """
    from huggingface_hub import set_client_factory
    from huggingface_hub.utils import _http as hf_http

    timeout = httpx2.Timeout(read, connect=connect, write=read, pool=connect)

    def factory() -> httpx2.Client:
        hooks = getattr(hf_http, "hf_request_event_hook", None)
        return httpx2.Client(
            event_hooks={"request": [hooks]} if hooks else {},
            follow_redirects=True,
            timeout=timeout,
            transport=_TimeoutTransport(timeout),
        )

    set_client_factory(factory)


def _hub_error(exc: BaseException, what: str, token: str | None) -> BaseException:
    """The error to raise for a failed Hub call: scrubbed, and typed when it means an outcome.

    Typed huggingface_hub errors that callers classify per dataset (not found, revision not found)
    keep their type; a gated repo becomes :class:`GatedError`; a timeout after every attempt
    becomes :class:`HubTimeoutError`; offline mode becomes :class:`HubUnreachableError`.
    """
    scrub_exception(exc, (token,))
    if isinstance(exc, HubsurveyError):
        return exc
    first = (str(exc).strip().splitlines() or [""])[0]
    if isinstance(exc, GatedRepoError):
        return GatedError(scrub(f"{what}: gated: the token has no access to its files ({first})", (token,)))
    if isinstance(exc, OfflineModeIsEnabled):
        return HubUnreachableError(f"cannot reach the Hub: {first} (offline? unset HF_HUB_OFFLINE)")
    if isinstance(exc, httpx2.TimeoutException):
        return HubTimeoutError(scrub(f"{what}: the Hub did not answer in time: {type(exc).__name__}: {first}", (token,)))
    return exc


@dataclass(frozen=True)
class RepoFile:
    path: str
    size: int


@dataclass(frozen=True)
class ListingPage:
    """One page of the dataset listing: its raw items, and the URL of the next page (the cursor)."""

    items: list[Any]
    next_url: str | None
    url: str  # the URL this page was fetched from


def _json_body(response: Any, what: str) -> Any:
    """A response's JSON, or :class:`HubAnswerError` when the body is not JSON (HTML, truncated)."""
    try:
        return response.json()
    except ValueError as e:  # json.JSONDecodeError and UnicodeDecodeError are ValueErrors
        kind = response.headers.get("content-type", "no content type").split(";")[0]
        raise HubAnswerError(f"{what}: the Hub's answer is not JSON ({kind}, {len(response.content)} bytes): {type(e).__name__}") from e


def _url_key(url: str) -> tuple[Any, ...]:
    """A URL compared as the server reads it: origin, path and the sorted query pairs."""
    parts = urlsplit(str(url))
    return parts.scheme, parts.netloc, parts.path, tuple(sorted(parse_qsl(parts.query, keep_blank_values=True)))


class HubClient:
    """One object for every Hub call. Configuration comes from the environment by default.

    Arguments (environment variable in brackets; the argument wins):

    - ``endpoint`` [``HF_ENDPOINT``, default https://huggingface.co]; ``token`` [``HF_TOKEN``];
    - ``connect_timeout`` [``HUBSURVEY_CONNECT_TIMEOUT``, default 10 s]: to open a connection;
    - ``read_timeout`` [``HUBSURVEY_READ_TIMEOUT``, default 60 s]: to wait for each chunk of a
      response. Every request has both; a request that times out is retried as transient
      (``max_attempts`` [``HUBSURVEY_MAX_ATTEMPTS``, default 6] in all, with backoff of at most
      ``max_wait`` seconds between them) and then fails with :class:`HubTimeoutError`;
    - a host name that does not resolve, or a refused connection, fails at once with
      :class:`HubUnreachableError` (exit code 4): it is not retried;
    - ``cache_dir`` [``HUBSURVEY_CACHE_DIR``, default ``~/.cache/hubsurvey/hub``]: where files are
      downloaded; never the user's own huggingface_hub cache (see :func:`delete_files` and
      :func:`enforce_budget`);
    - ``rate`` / ``file_rate``: at most this many API / file requests per second.
    """

    def __init__(
        self,
        endpoint: str | None = None,
        token: str | bool | None = None,
        *,
        cache_dir: str | Path | None = None,
        rate: float | None = DEFAULT_RATE,
        file_rate: float | None = DEFAULT_FILE_RATE,
        max_attempts: int | None = None,
        max_wait: float = 60.0,
        connect_timeout: float | None = None,
        read_timeout: float | None = None,
    ):
        self.endpoint = (endpoint or os.environ.get("HF_ENDPOINT") or "https://huggingface.co").rstrip("/")
        token = os.environ.get("HF_TOKEN") if token is None else token
        self._token: str | None = token if isinstance(token, str) and token else None
        register_secret(self._token)
        self._api = HfApi(endpoint=self.endpoint, token=self._token if self._token else False)
        self.cache_dir = Path(cache_dir) if cache_dir else default_cache_dir()
        self.connect_timeout = connect_timeout or _env_float("HUBSURVEY_CONNECT_TIMEOUT", DEFAULT_CONNECT_TIMEOUT)
        self.read_timeout = read_timeout or _env_float("HUBSURVEY_READ_TIMEOUT", DEFAULT_READ_TIMEOUT)
        self.max_attempts = max_attempts or int(_env_float("HUBSURVEY_MAX_ATTEMPTS", DEFAULT_MAX_ATTEMPTS))
        install_timeouts(self.connect_timeout, self.read_timeout)
        self._pacer = _Pacer(rate)
        self._file_pacer = _Pacer(file_rate)
        self._retry = retry(
            retry=retry_if_exception(is_transient),
            wait=_ServerAwareWait(maximum=max_wait),
            stop=stop_after_attempt(self.max_attempts),
            reraise=True,
        )
        self.calls = 0  # API calls made through this client, for politeness accounting
        self.file_calls = 0  # file (resolve) requests: downloads and ranged reads

    @property
    def has_token(self) -> bool:
        return bool(self._token)

    def scrub(self, text: str) -> str:
        """Remove the token from a message before it reaches a log, the DB or an exception."""
        return scrub(text, (self._token,))

    def call(self, fn: Callable[..., T], *args: Any, _file: bool = False, _what: str | None = None, **kwargs: Any) -> T:
        """Pace, retry transient failures, and scrub the token from whatever is raised."""

        def attempt() -> T:
            if _file:
                self._file_pacer.wait()
                self.file_calls += 1
            else:
                self._pacer.wait()
                self.calls += 1
            return fn(*args, **kwargs)

        try:
            return self._retry(attempt)()
        except Exception as e:
            error = _hub_error(e, _what or (str(args[0]) if args else self.endpoint), self._token)
            if error is e:
                raise
            raise error from e

    # --- listing and metadata ----------------------------------------------------------------

    def _headers(self) -> dict[str, str]:
        from huggingface_hub.utils import build_hf_headers

        return build_hf_headers(token=self._token if self._token else False)

    def _get_json_page(self, url: str, params: Any = None, what: str = "a listing page") -> tuple[Any, str | None, str]:
        """One page of a paginated listing: (its JSON, the next page's URL or None, the URL fetched).

        A body that is not JSON (a proxy's HTML page with status 200, a truncated answer) is a
        :class:`HubAnswerError`: transient, so it is retried like a 5xx.
        """
        from huggingface_hub.utils import get_session, hf_raise_for_status

        response = get_session().get(url, params=params, headers=self._headers())
        hf_raise_for_status(response)
        fetched = str(response.request.url) if response.request is not None else url
        return _json_body(response, what), response.links.get("next", {}).get("url"), fetched

    def _pages(self, url: str, params: Any, what: str) -> Iterator[tuple[list[Any], str | None, str]]:
        """Each page of a Link-paginated listing as (items, next URL, URL fetched), each page
        retried on its own. A next link that points back at a page of this listing (a cycle) or
        at another host ends the listing with one warning: following it would never end, or
        would send the token elsewhere."""
        seen: set[tuple[Any, ...]] = set()
        next_url: str | None = url
        while next_url is not None:
            where = f"{what}, page {len(seen) + 1}"
            page, following, fetched = self.call(self._get_json_page, next_url, params, where, _what=what)
            if not isinstance(page, list):
                raise HubAnswerError(f"{where}: the Hub answered a JSON {type(page).__name__} where a list of items belongs")
            seen.add(_url_key(fetched))
            if following is not None and _url_key(following) in seen:
                log.warning("%s: the Hub's next-page link points back at a page already read; the listing ends here",
                            self.scrub(what))
                following = None
            elif following is not None and _origin(following) != _origin(self.endpoint):
                log.warning("%s: the Hub's next-page link leaves %s; the listing ends here", self.scrub(what), self.endpoint)
                following = None
            yield page, following, fetched
            next_url, params = following, None  # the next URL already carries every parameter

    def _paginate(self, url: str, params: Any, what: str) -> Iterator[Any]:
        """Every item of a Link-paginated listing; each page is retried on its own."""
        for page, _following, _fetched in self._pages(url, params, what):
            yield from page

    def _listing_params(self, limit: int | None, expand: Iterable[str] | None, filters: dict[str, Any]) -> list[tuple[str, Any]]:
        """The query string of ``/api/datasets`` for ``HfApi.list_datasets``-style arguments."""
        filters = dict(filters)
        params: list[tuple[str, Any]] = []
        tags = filters.pop("filter", None)
        tag_filters = [tags] if isinstance(tags, str) else list(tags or [])
        for key in ("language_creators", "language", "multilinguality", "size_categories", "task_categories", "task_ids"):
            values = filters.pop(key, None)
            for value in [values] if isinstance(values, str) else values or []:
                tag_filters.append(value if value.startswith(f"{key}:") else f"{key}:{value}")
        params += [("filter", t) for t in tag_filters]
        for key in ("author", "search", "sort"):
            if filters.get(key):
                params.append((key, filters.pop(key)))
        if filters.get("gated") is not None:
            params.append(("gated", str(filters.pop("gated")).lower()))
        if filters:
            raise TypeError(f"unsupported listing arguments: {sorted(filters)}")
        if limit is not None:
            params.append(("limit", limit))
        params += [("expand", e) for e in expand or []]
        return params

    def list_dataset_pages(
        self, *, limit: int | None = None, expand: Iterable[str] | None = None, start_url: str | None = None, **filters: Any
    ) -> Iterator[ListingPage]:
        """The dataset listing page by page, as raw JSON items with the cursor of the next page.

        ``start_url``: a ``next_url`` of an earlier page, to resume a listing there (it already
        carries every parameter; the others are then ignored). ``filters`` as for
        :meth:`list_datasets`. Any failure of the listing is a :class:`HubError` (exit code 4).
        """
        if start_url is not None:
            url, params = start_url, None
        else:
            url, params = f"{self.endpoint}/api/datasets", self._listing_params(limit, expand, filters)
        remaining = limit
        try:
            for items, following, fetched in self._pages(url, params, f"listing datasets on {self.endpoint}"):
                items = scrub_value(items)  # a token echoed into tags, a card, a description: never stored
                if remaining is not None:
                    items, remaining = items[:remaining], max(0, remaining - len(items))
                    following = following if remaining else None
                yield ListingPage(items, following, fetched)
                if remaining == 0:
                    return
        except HfHubHTTPError as e:
            status = e.response.status_code if e.response is not None else "?"
            said = (getattr(e, "server_message", None) or "").strip().splitlines()
            cause = said[0] if said else (str(e).strip().splitlines() or [""])[0]
            raise HubError(self.scrub(f"listing datasets on {self.endpoint} failed: HTTP {status}: {cause}")) from e
        except (httpx2.HTTPError, OSError) as e:
            raise HubError(self.scrub(f"listing datasets on {self.endpoint} failed: {type(e).__name__}: {e}")) from e

    def list_datasets(self, *, limit: int | None = None, expand: Iterable[str] | None = None, **filters: Any) -> Iterator[Any]:
        """Stream dataset listings (``DatasetInfo``), page by page, each page paced and retried.

        ``filters``: ``author``, ``search``, ``filter`` and the typed tag filters of
        ``HfApi.list_datasets`` (``task_categories``, ``language``, ``size_categories`` ...).
        Any failure of the listing is a :class:`HubError` (exit code 4): nothing can be crawled.
        """
        from huggingface_hub.hf_api import DatasetInfo

        for page in self.list_dataset_pages(limit=limit, expand=expand, **filters):
            for item in page.items:
                item.setdefault("siblings", None)
                yield DatasetInfo(**item)

    def dataset_info(self, repo_id: str, revision: str | None = None, **kwargs: Any) -> Any:
        return scrub_value(self.call(self._api.dataset_info, repo_id, revision=revision, **kwargs))

    def _parquet_branch(self, repo_id: str, blobs: bool) -> dict[str, Any]:
        """``/api/datasets/{id}/revision/refs%2Fconvert%2Fparquet`` (``blobs``: siblings with sizes),
        checked: a JSON object with a commit ``sha``."""
        from huggingface_hub.utils import get_session, hf_raise_for_status

        url = f"{self.endpoint}/api/datasets/{repo_id}/revision/{quote(PARQUET_REVISION, safe='')}"

        def get() -> Any:
            response = get_session().get(url, params={"blobs": "true"} if blobs else None, headers=self._headers())
            hf_raise_for_status(response)
            return _json_body(response, f"{repo_id} dataset info")

        info = self.call(get, _what=repo_id)
        if not isinstance(info, dict) or not isinstance(info.get("sha"), str) or not info["sha"]:
            raise HubAnswerError(f"{repo_id}: the Hub's dataset info of {PARQUET_REVISION} has no commit sha")
        return info

    def parquet_sha(self, repo_id: str) -> str:
        """The commit the dataset's Parquet branch points at: downloads are pinned to it."""
        return str(self._parquet_branch(repo_id, blobs=False)["sha"])

    def parquet_files(self, repo_id: str) -> tuple[str, list[RepoFile]]:
        """The Parquet branch's commit and every Parquet file on it with its size, in ONE API call
        (dataset info at ``refs/convert/parquet`` with ``blobs=true``: its siblings carry sizes)."""
        info = self._parquet_branch(repo_id, blobs=True)
        siblings = info.get("siblings")
        if not isinstance(siblings, list) or not all(isinstance(s, dict) and isinstance(s.get("rfilename"), str) for s in siblings):
            raise HubAnswerError(f"{repo_id}: the Hub's dataset info of {PARQUET_REVISION} has no list of files")
        # paths become config names, rows and folder names: a list of files echoing the token is refused whole
        refuse_secrets([s["rfilename"] for s in siblings], f"{repo_id}: the Parquet branch's files")
        files = []
        for sibling in siblings:
            if not sibling["rfilename"].endswith(".parquet"):
                continue
            size = sibling.get("size", (sibling.get("lfs") or {}).get("size") if isinstance(sibling.get("lfs"), dict) else None)
            if not isinstance(size, int) or isinstance(size, bool) or size < 0:
                raise HubAnswerError(f"{repo_id}: the Hub gave no size for {sibling['rfilename']!r} on {PARQUET_REVISION}")
            files.append(RepoFile(sibling["rfilename"], size))
        return str(info["sha"]), files

    def parquet_tree(self, repo_id: str, revision: str = PARQUET_REVISION) -> list[RepoFile]:
        """Every Parquet file on the dataset's Parquet branch (one listing, paginated by the Hub)."""
        url = f"{self.endpoint}/api/datasets/{repo_id}/tree/{quote(revision, safe='')}"
        items = list(self._paginate(url, [("recursive", "true"), ("expand", "false")], repo_id))
        if not all(isinstance(it, dict) for it in items):
            raise HubAnswerError(f"{repo_id}: the Hub's tree of {revision} holds items that are not objects")
        # paths become config names, rows and folder names: a tree echoing the token is refused whole
        refuse_secrets([it.get("path") for it in items if isinstance(it, dict)], f"{repo_id}: the Parquet branch's tree")
        return [
            RepoFile(it["path"], int(it.get("size") or 0))
            for it in items
            if it.get("type") == "file" and str(it.get("path", "")).endswith(".parquet")
        ]

    # --- files ----------------------------------------------------------------------------------

    def download(self, repo_id: str, path: str, revision: str) -> Path:
        """Download one file into the survey's cache (``cache_dir``), reused across runs.

        Pass the Parquet branch's commit sha (:meth:`parquet_sha`) as ``revision`` so that every
        file of one measurement comes from the same commit.
        """
        return Path(
            self.call(
                hf_hub_download,
                repo_id,
                path,
                repo_type="dataset",
                revision=revision,
                endpoint=self.endpoint,
                token=self._token if self._token else False,
                cache_dir=self.cache_dir,
                _file=True,
                _what=f"{repo_id} {path}",
            )
        )

    def file_url(self, repo_id: str, path: str, revision: str) -> str:
        from huggingface_hub import hf_hub_url

        return hf_hub_url(repo_id, path, repo_type="dataset", revision=revision, endpoint=self.endpoint)

    def read_range(self, url: str, start: int, end: int | None = None) -> bytes:
        """Bytes [start, end] of a file (or the last -start bytes when start < 0), retried."""
        from huggingface_hub.utils import get_session, hf_raise_for_status

        rng = f"bytes={start}-" if end is None else f"bytes={start}-{end}"
        if start < 0:
            rng = f"bytes={start}"
        headers = {"Range": rng}
        if self._token:
            headers["authorization"] = f"Bearer {self._token}"

        def get() -> bytes:
            response = get_session().get(url, headers=headers, follow_redirects=True)
            hf_raise_for_status(response)
            return response.content

        return self.call(get, _file=True, _what=url)

    def parquet_footer(self, repo_id: str, path: str, revision: str = PARQUET_REVISION) -> Any:
        """A Parquet file's metadata (rows, schema, HF features) from one suffix read of its end."""
        import struct

        import pyarrow as pa
        import pyarrow.parquet as pq

        url = self.file_url(repo_id, path, revision)
        tail = self.read_range(url, -FOOTER_PROBE)
        if len(tail) < 12 or tail[-4:] != b"PAR1":
            raise ValueError(f"{path}: not a Parquet file (no PAR1 trailer)")
        length = struct.unpack("<i", tail[-8:-4])[0]
        if length + 8 > len(tail):  # a large footer: read exactly what it needs
            tail = self.read_range(url, -(length + 8))
        # The footer alone, framed as a file, is enough for pyarrow to read the metadata.
        return pq.read_metadata(pa.BufferReader(b"PAR1" + tail[-(length + 8):]))

    # --- publishing -----------------------------------------------------------------------------

    @property
    def api(self) -> HfApi:
        """The underlying HfApi, for publishing calls; wrap them with :meth:`call`."""
        return self._api


# --- the survey's download cache -----------------------------------------------------------------

def default_cache_dir() -> Path:
    """``HUBSURVEY_CACHE_DIR``, else ``~/.cache/hubsurvey/hub``: never the user's own HF cache."""
    configured = os.environ.get("HUBSURVEY_CACHE_DIR")
    if configured:
        return Path(configured)
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "hubsurvey" / "hub"


def _blob_of(path: Path) -> Path:
    """The blob a huggingface_hub snapshot entry points at (the file itself when it is not a link)."""
    return path.resolve() if path.is_symlink() else path


def _link_chain(path: Path) -> list[str]:
    """Every path a snapshot link leads through, to the file: the repo's blob (itself a link into
    huggingface_hub's shared store, when it uses one), then the stored file."""
    chain: list[str] = []
    current = os.path.abspath(path)
    while os.path.islink(current) and len(chain) < 40:
        current = os.path.normpath(os.path.join(os.path.dirname(current), os.readlink(current)))
        chain.append(current)
    return chain


def _cache_root(path: Path) -> Path:
    """The huggingface_hub cache a snapshot path is in (the folder above ``datasets--owner--name``)."""
    for parent in path.absolute().parents:
        if parent.name.startswith(("datasets--", "models--", "spaces--")):
            return parent.parent
    return path.absolute().parent


def delete_files(paths: Iterable[str | Path]) -> int:
    """Delete downloaded files (a measured job's): their snapshot links, and the blobs only no other
    link still points at.

    huggingface_hub stores a file's content once per content hash: two configs holding one
    byte-identical file have two snapshot links to one blob, and another job may be about to read
    it. So a blob (and a shared-store file behind it) is deleted only when no remaining link in the
    cache leads to it. Returns the bytes freed. A path already gone is skipped: deleting twice is
    harmless.
    """
    freed = 0
    candidates: set[str] = set()
    roots: set[Path] = set()
    for p in paths:
        path = Path(p)
        if path.is_symlink():
            candidates.update(_link_chain(path))
            roots.add(_cache_root(path))
        try:
            size = path.stat().st_size if path.exists() and not path.is_symlink() else 0
            path.unlink()
            freed += size
        except FileNotFoundError:
            continue
    if not candidates:
        return freed
    still_used: set[str] = set()
    for root in roots:
        for link in root.rglob("*"):
            if link.is_symlink() and os.path.abspath(link) not in candidates:
                still_used.update(_link_chain(link))
    for victim in sorted(candidates - still_used, key=len, reverse=True):
        try:
            size = os.stat(victim).st_size if not os.path.islink(victim) else 0
            os.unlink(victim)
            freed += size
        except FileNotFoundError:
            continue
    return freed


def cache_size(cache_dir: str | Path) -> int:
    """Bytes of regular files under the cache folder (links are not counted twice)."""
    root = Path(cache_dir)
    if not root.exists():
        return 0
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file() and not p.is_symlink())


def enforce_budget(cache_dir: str | Path, max_bytes: int, keep: Iterable[str | Path] = ()) -> int:
    """Evict the oldest files (by modification time) until the cache holds at most ``max_bytes``.

    ``keep``: files in use (a job being measured) that must not be evicted. Dangling snapshot links
    left by an eviction are removed too. Returns the bytes freed.
    """
    root = Path(cache_dir)
    if not root.exists():
        return 0
    kept = {_blob_of(Path(k)) for k in keep} | {Path(k) for k in keep}
    files = [p for p in root.rglob("*") if p.is_file() and not p.is_symlink()]
    total = sum(p.stat().st_size for p in files)
    freed = 0
    for path in sorted(files, key=lambda p: p.stat().st_mtime):
        if total <= max_bytes:
            break
        if path in kept or path.suffix == ".lock":
            continue
        size = path.stat().st_size
        path.unlink(missing_ok=True)
        total -= size
        freed += size
    for link in root.rglob("*"):
        if link.is_symlink() and not link.exists():
            link.unlink(missing_ok=True)
    return freed
