"""The one client through which hubsurvey talks to the Hub.

It wraps ``huggingface_hub`` with what the library does not do for every call, configured by one
:class:`~hubsurvey.core.settings.Settings` (built once, at the start of a command):

- one deadline per call (``deadline``, default 60 s) over its connect, every read and every retry,
  enforced by the transport under huggingface_hub's process-wide client
  (:mod:`hubsurvey.core.transport`, installed once per process); a body that drips below the floor
  rate is a timeout; an API answer may not inflate past ``max_response_mb``;
- fail fast offline: a host name that does not resolve, or a refused connection, is not transient;
  it raises :class:`HubUnreachableError` at once instead of being retried;
- one retry loop, ours (tenacity), for every call including the paginated listings (paged here, one
  page at a time, so a retry resumes at the failed page) and file downloads (done here through the
  library's session, not ``hf_hub_download``, whose own retry and resume loop would multiply the
  deadline): on 429, 5xx, timeouts, connection resets and Hub faults (an HTML page, malformed
  JSON); never on 401, 403 or 404;
- pacing that follows the Hub's quota, one bucket for API calls and one for resolver calls
  (:mod:`hubsurvey.core.pacing`), or a fixed ``rate`` / ``file_rate`` when given;
- a circuit breaker: after ``breaker`` consecutive calls that timed out, every call fails at once
  with :class:`HubStoppedAnsweringError` (exit code 4);
- token hygiene: the token is passed to huggingface_hub and nowhere else, and every error raised
  through the client is scrubbed of it (:func:`hubsurvey.core.errors.scrub_exception`);
- a download cache of the survey's own (never the user's huggingface_hub cache).

The client lists datasets and reads their metadata itself; its files (downloads, ranged reads),
model listings and discussions are collaborators behind it (``client.files``, ``client.models``,
``client.community``: :mod:`~hubsurvey.core.hub_files`, :mod:`~hubsurvey.core.hub_models`,
:mod:`~hubsurvey.core.hub_discussions`), whose every request is the client's :meth:`HubClient.call`.
The client's own methods for them (``download``, ``parquet_footer``, ``small_file``,
``list_models_declaring``, ``whoami``, ``discussions``, ``create_discussion``) are what callers use.
Nothing else in the project opens HTTP connections to the Hub.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import re
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import parse_qsl, quote, urlsplit

import httpx2
from huggingface_hub import HfApi
from huggingface_hub.errors import GatedRepoError, HfHubHTTPError, OfflineModeIsEnabled
from huggingface_hub.hf_api import DatasetInfo
from huggingface_hub.utils import build_hf_headers, get_session, hf_raise_for_status
from tenacity import RetryCallState, Retrying, retry_if_exception, stop_after_attempt, stop_any, wait_exponential_jitter
from tenacity.stop import stop_base

from hubsurvey.core.errors import (
    GatedError,
    HubError,
    HubFaultError,
    HubStoppedAnsweringError,
    HubsurveyError,
    HubTimeoutError,
    HubUnreachableError,
    OutOfTimeError,
    one_line,
    scrub,
    scrub_exception,
)
from hubsurvey.core.hub_discussions import HubDiscussions
from hubsurvey.core.hub_files import HubFiles, ParquetFile, delete_files
from hubsurvey.core.hub_models import MODEL_EXPAND, SCORES_EXPAND, HubModels
from hubsurvey.core.pacing import API, RESOLVERS, Breaker, HubLimits, Pace, parse_ratelimit
from hubsurvey.core.safety import refuse_secrets, scrub_value
from hubsurvey.core.settings import Settings
from hubsurvey.core.splits import branch_split
from hubsurvey.core.transport import MAX_REDIRECTS, RequestLimits, configure_http, limits, origin, unreachable_cause

log = logging.getLogger(__name__)

__all__ = ["MODEL_EXPAND", "SCORES_EXPAND", "HubClient", "ParquetFile", "RepoFile", "branch_split", "delete_files", "is_transient",
           "unreachable_cause"]

PARQUET_REVISION = "refs/convert/parquet"
RETRY_STATUSES = {408, 429, 500, 502, 503, 504}

T = TypeVar("T")

#: the end (monotonic) of the job whose calls this context makes: see HubClient.time_limit
_JOB_END: ContextVar[float] = ContextVar("hubsurvey_job_end", default=math.inf)


@dataclass
class CallTally:
    """The calls one piece of work made through a client (:meth:`HubClient.tally`), apart from
    the calls other work made through the same client at the same time."""

    calls: int = 0  # API calls
    file_calls: int = 0  # file (resolve) requests


_TALLY: ContextVar[CallTally | None] = ContextVar("hubsurvey_call_tally", default=None)


def is_transient(exc: BaseException) -> bool:
    """True for failures worth retrying: rate limits, 5xx, timeouts, resets, truncated bodies,
    Hub faults. An unreachable Hub (no DNS, connection refused, offline mode) is not transient.
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
    m = re.search(r"\bt=(\d+(?:\.\d+)?)", ratelimit)
    if m:
        return float(m.group(1))
    retry_after = headers.get("Retry-After", "")
    if retry_after.strip().isdigit():  # the HTTP-date form is ignored, as huggingface_hub does
        return float(retry_after)
    return None


def _hub_error(exc: BaseException, what: str, token: str | None, deadline: float | None = None) -> BaseException:
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
        within = f" (deadline {deadline:g} s)" if deadline else ""
        return HubTimeoutError(scrub(f"{what}: the Hub did not answer in time{within}: {first}", (token,)))
    return exc


def _as_hub_fault(exc: BaseException, what: str) -> HubFaultError | None:
    """A Hub fault for an answer that is no valid answer (raised inside a call), else None."""
    if isinstance(exc, json.JSONDecodeError):
        return HubFaultError(f"{what}: the Hub's answer is not valid JSON ({exc.msg} at char {exc.pos})")
    if isinstance(exc, RecursionError):  # the transport bounds JSON's nesting; whatever else nests without end is the answer's
        return HubFaultError(f"{what}: the Hub's answer nests without end ({(str(exc).splitlines() or [''])[0]})")
    if isinstance(exc, httpx2.TooManyRedirects):
        return HubFaultError(f"{what}: the Hub's answers redirect in a loop (more than {MAX_REDIRECTS} redirects)")
    if isinstance(exc, httpx2.DecodingError):
        return HubFaultError(f"{what}: the Hub's answer cannot be decoded ({(str(exc).splitlines() or [''])[0]})")
    return None


class _OutOfTime(stop_base):
    """tenacity stop: the call's deadline (or the job's, or the run's) has passed."""

    def __init__(self, active: RequestLimits):
        self._active = active

    def __call__(self, retry_state: RetryCallState) -> bool:
        return self._active.left() <= 0


@dataclass(frozen=True)
class RepoFile:
    path: str
    size: int


_SETTING_NAMES = frozenset(f.name for f in fields(Settings))


def _as_overrides(settings: Settings) -> dict[str, Any]:
    """A Settings' fields as overrides of ``Settings.from_env({})`` (``token=False`` for none)."""
    values = {name: getattr(settings, name) for name in _SETTING_NAMES}
    values["token"] = settings.token or False
    return values


@dataclass(frozen=True)
class ListingPage:
    """One page of the dataset listing: its raw items, and the URL of the next page (the cursor)."""

    items: list[Any]
    next_url: str | None
    url: str  # the URL this page was fetched from


def _json_body(response: Any, what: str) -> Any:
    """A response's JSON, or :class:`HubFaultError` when the body is not JSON (HTML, truncated)."""
    try:
        return response.json()
    except ValueError as e:  # json.JSONDecodeError and UnicodeDecodeError are ValueErrors
        kind = response.headers.get("content-type", "no content type").split(";")[0]
        raise HubFaultError(f"{what}: the Hub's answer is not JSON ({kind}, {len(response.content)} bytes): {type(e).__name__}") from e


def _url_key(url: str) -> tuple[Any, ...]:
    """A URL compared as the server reads it: origin, path and the sorted query pairs."""
    parts = urlsplit(str(url))
    return parts.scheme, parts.netloc, parts.path, tuple(sorted(parse_qsl(parts.query, keep_blank_values=True)))


class HubClient:
    """One object for every Hub call, configured by one :class:`Settings`.

    ``HubClient(settings)`` is how commands make it; keyword arguments (any :class:`Settings`
    field, e.g. ``endpoint``, ``token`` (``False``: none), ``cache_dir``, ``rate``, ``deadline``)
    override the settings, or the environment's when no settings are given (tests, workers).
    See :mod:`hubsurvey.core.settings` for what each setting does and its environment variable.
    """

    def __init__(self, settings: Settings | None = None, **overrides: Any):
        unknown = set(overrides) - _SETTING_NAMES
        if unknown:
            raise TypeError(f"unknown Hub client settings: {sorted(unknown)}")
        if settings is None:
            settings = Settings.from_env(**overrides)
        elif overrides:
            settings = Settings.from_env({}, **{**_as_overrides(settings), **overrides})
        self.settings = settings
        self.endpoint = settings.endpoint
        self._token: str | None = settings.token or None
        self._api = HfApi(endpoint=self.endpoint, token=self._token if self._token else False)
        self.cache_dir = Path(settings.cache_dir)
        self.connect_timeout = settings.connect_timeout
        self.read_timeout = settings.read_timeout
        self.max_attempts = settings.max_attempts
        configure_http()
        self.limits = self.own_limits = HubLimits.of(
            rate=settings.rate, file_rate=settings.file_rate, quotas=settings.quotas, window=settings.quota_window,
            clock_scale=settings.clock_scale, breaker=settings.breaker)
        self._clock_scale = settings.clock_scale
        self._stop_at = math.inf
        self.calls = 0  # API calls made through this client, for politeness accounting
        self.file_calls = 0  # file (resolve) requests: downloads and ranged reads
        # what the client does besides listing datasets, each behind it (every request through call)
        self.files = HubFiles(self, self._token)
        self.models = HubModels(self)
        self.community = HubDiscussions(self)

    @property
    def has_token(self) -> bool:
        return bool(self._token)

    @property
    def breaker(self) -> Breaker:
        return self.limits.breaker

    def share_limits(self, shared: HubLimits | None) -> None:
        """Draw on ``shared`` pacers and breaker (a cluster's, for the whole token) instead of this
        client's own; ``None``: back to its own."""
        self.limits = shared if shared is not None else self.own_limits

    @staticmethod
    def _follows_quota(pacer: Pace) -> bool:
        return pacer.follows_quota

    def scrub(self, text: str) -> str:
        """Remove the token from a message before it reaches a log, the DB or an exception."""
        return scrub(text, (self._token,))

    # --- deadlines beyond one call --------------------------------------------------------------

    def stop_after(self, seconds: float | None) -> None:
        """No call of this client goes on more than ``seconds`` from now (the run's ``--max-hours``):
        a download in flight then stops, as a timeout that the breaker does not count."""
        self._stop_at = math.inf if not seconds else time.monotonic() + seconds

    @contextlib.contextmanager
    def tally(self) -> Iterator[CallTally]:
        """Count the calls made inside the block (in this context: a thread it starts counts too
        when it runs in a copy of it, ``contextvars.copy_context().run``)."""
        counted = CallTally()
        token = _TALLY.set(counted)
        try:
            yield counted
        finally:
            _TALLY.reset(token)

    @contextlib.contextmanager
    def time_limit(self, seconds: float | None) -> Iterator[None]:
        """The calls made inside the block (in this thread) end within ``seconds``: a job's downloads
        under ``--job-timeout``."""
        token = _JOB_END.set(time.monotonic() + seconds if seconds else math.inf)
        try:
            yield
        finally:
            _JOB_END.reset(token)

    def _observe(self, headers: Mapping[str, str]) -> None:
        """Feed the quota headers of any answer to the bucket they name."""
        if "RateLimit" not in headers and "RateLimit-Policy" not in headers:
            return
        for name, state in parse_ratelimit(headers).items():
            pacer = self.limits.pacers.get(name)
            if pacer is not None:
                pacer.observe(state)

    # --- one call ---------------------------------------------------------------------------------

    def call(self, fn: Callable[..., T], *args: Any, _file: bool = False, _what: str | None = None, **kwargs: Any) -> T:
        """Pace, bound by the deadline, retry transient failures, and scrub the token from whatever
        is raised. ``_file``: a resolver call (download or ranged read), paced on that bucket."""
        what = _what or (str(args[0]) if args else self.endpoint)
        self.breaker.check()
        s = self.settings
        now = time.monotonic()
        active = RequestLimits(
            deadline=now + s.deadline,
            hard_deadline=min(self._stop_at, _JOB_END.get()),
            connect_timeout=s.connect_timeout,
            read_timeout=s.read_timeout,
            drip_floor=s.drip_floor,
            drip_window=s.drip_window,
            max_body=s.max_response_bytes,
            file=_file,
            observe=self._observe,
        )
        pacer = self.limits.pacers[RESOLVERS if _file else API]

        def attempt() -> T:
            try:  # waiting for the quota is not the Hub being slow; it is bounded by the job's and the run's end
                active.deadline += pacer.acquire(active.hard_deadline)
            except OutOfTimeError as e:
                raise OutOfTimeError(f"{what}: {e}") from None
            counted = _TALLY.get()
            if _file:
                self.file_calls += 1
                if counted is not None:
                    counted.file_calls += 1
            else:
                self.calls += 1
                if counted is not None:
                    counted.calls += 1
            try:
                return fn(*args, **kwargs)
            except Exception as e:
                fault = _as_hub_fault(e, what)
                if fault is None:
                    raise
                raise fault from e

        backoff = wait_exponential_jitter(initial=1.0, max=s.max_wait)

        def wait(state: RetryCallState) -> float:
            exc = state.outcome.exception() if state.outcome else None
            asked = _server_wait(exc)
            if asked is not None and self._follows_quota(pacer):
                return 0.0  # the bucket learned the reset from the same headers and waits for it
            if asked is not None:
                delay = min((asked + 1.0) * self._clock_scale, s.max_wait)
                if delay >= active.left(hard_only=True):  # the job's or the run's end comes first
                    raise OutOfTimeError(f"{what}: the Hub asked for a wait of {delay:.0f} s, past the time left")
                active.deadline += delay  # the Hub's own wait is pacing, not slowness
                return delay
            return max(0.0, min(backoff(state), active.left()))

        retrying = Retrying(
            retry=retry_if_exception(lambda e: is_transient(e) and not isinstance(e, OutOfTimeError)),
            wait=wait,
            stop=stop_any(stop_after_attempt(s.max_attempts), _OutOfTime(active)),
            reraise=True,
        )
        with limits(active):
            try:
                result = retrying(attempt)
            except Exception as e:
                error = _hub_error(e, what, self._token, s.deadline)
                if type(error) is HubTimeoutError and time.monotonic() >= self._stop_at:
                    # the run's --max-hours ended the request, not the Hub: the step keeps what it has
                    error = OutOfTimeError(f"{what}: the run's --max-hours ended the request")
                self._account(error, what, active)
                if error is e:
                    raise
                raise error from e
        self.breaker.answered()
        return result

    def _account(self, error: BaseException, what: str, active: RequestLimits) -> None:
        """Count a failed call for the breaker: a timeout counts, any answer resets the count."""
        if isinstance(error, (HubStoppedAnsweringError, OutOfTimeError)):
            return
        if isinstance(error, HubTimeoutError):
            if active.left(hard_only=True) <= 0:  # the job's or the run's time is up, not the Hub
                return
            self.breaker.timed_out(one_line(error))
        elif not isinstance(error, HubUnreachableError):
            self.breaker.answered()

    # --- listing and metadata ----------------------------------------------------------------

    def headers(self) -> dict[str, str]:
        return build_hf_headers(token=self._token if self._token else False)

    def _get_json_page(self, url: str, params: Any = None, what: str = "a listing page") -> tuple[Any, str | None, str]:
        """One page of a paginated listing: (its JSON, the next page's URL or None, the URL fetched).

        A body that is not JSON (a proxy's HTML page with status 200, a truncated answer) is a
        :class:`HubFaultError`: transient, so it is retried like a 5xx.
        """
        response = get_session().get(url, params=params, headers=self.headers())
        hf_raise_for_status(response)
        fetched = str(response.request.url) if response.request is not None else url
        return _json_body(response, what), response.links.get("next", {}).get("url"), fetched

    def pages(self, url: str, params: Any, what: str) -> Iterator[tuple[list[Any], str | None, str]]:
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
                raise HubFaultError(f"{where}: the Hub answered a JSON {type(page).__name__} where a list of items belongs")
            seen.add(_url_key(fetched))
            if following is not None and _url_key(following) in seen:
                log.warning("%s: the Hub's next-page link points back at a page already read; the listing ends here",
                            self.scrub(what))
                following = None
            elif following is not None and origin(following) != origin(self.endpoint):
                log.warning("%s: the Hub's next-page link leaves %s; the listing ends here", self.scrub(what), self.endpoint)
                following = None
            yield page, following, fetched
            next_url, params = following, None  # the next URL already carries every parameter

    def _paginate(self, url: str, params: Any, what: str) -> Iterator[Any]:
        """Every item of a Link-paginated listing; each page is retried on its own."""
        for page, _following, _fetched in self.pages(url, params, what):
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
            for items, following, fetched in self.pages(url, params, f"listing datasets on {self.endpoint}"):
                items = scrub_value(items)  # a token echoed into tags, a card, a description: never stored
                if remaining is not None:
                    items, remaining = items[:remaining], max(0, remaining - len(items))
                    following = following if remaining else None
                yield ListingPage(items, following, fetched)
                if remaining == 0:
                    return
        except (httpx2.HTTPError, OSError) as e:
            raise self.listing_error(e, f"listing datasets on {self.endpoint}") from e

    def listing_error(self, e: BaseException, what: str) -> HubError:
        """The :class:`HubError` (exit code 4) for a listing that failed with a library error."""
        if isinstance(e, HfHubHTTPError):
            status = e.response.status_code if e.response is not None else "?"
            said = (getattr(e, "server_message", None) or "").strip().splitlines()
            cause = said[0] if said else (str(e).strip().splitlines() or [""])[0]
            return HubError(self.scrub(f"{what} failed: HTTP {status}: {cause}"))
        return HubError(self.scrub(f"{what} failed: {type(e).__name__}: {e}"))

    def list_datasets(self, *, limit: int | None = None, expand: Iterable[str] | None = None, **filters: Any) -> Iterator[Any]:
        """Stream dataset listings (``DatasetInfo``), page by page, each page paced and retried.

        ``filters``: ``author``, ``search``, ``filter`` and the typed tag filters of
        ``HfApi.list_datasets`` (``task_categories``, ``language``, ``size_categories`` ...).
        Any failure of the listing is a :class:`HubError` (exit code 4): nothing can be crawled.
        """
        for page in self.list_dataset_pages(limit=limit, expand=expand, **filters):
            for item in page.items:
                item.setdefault("siblings", None)
                yield DatasetInfo(**item)

    def list_models_declaring(self, dataset_id: str, *, limit: int, expand: Iterable[str] = MODEL_EXPAND,
                              raw: bool = False) -> list[Any]:
        """The models that declare ``dataset_id`` as training data (:meth:`HubModels.declaring`)."""
        return self.models.declaring(dataset_id, limit=limit, expand=expand, raw=raw)

    def small_file(self, repo_id: str, path: str, *, repo_type: str = "model", revision: str = "main") -> bytes | None:
        """A small file of a repo read whole, None when the Hub answers 404 (:meth:`HubFiles.small_file`)."""
        return self.files.small_file(repo_id, path, repo_type=repo_type, revision=revision)

    def dataset_info(self, repo_id: str, revision: str | None = None, **kwargs: Any) -> Any:
        return scrub_value(self.call(self._api.dataset_info, repo_id, revision=revision, **kwargs))

    def _parquet_branch(self, repo_id: str, blobs: bool) -> dict[str, Any]:
        """``/api/datasets/{id}/revision/refs%2Fconvert%2Fparquet`` (``blobs``: siblings with sizes),
        checked: a JSON object with a commit ``sha``."""
        url = f"{self.endpoint}/api/datasets/{repo_id}/revision/{quote(PARQUET_REVISION, safe='')}"
        info = self._api_json(url, {"blobs": "true"} if blobs else None, repo_id)
        if not isinstance(info, dict) or not isinstance(info.get("sha"), str) or not info["sha"]:
            raise HubFaultError(f"{repo_id}: the Hub's dataset info of {PARQUET_REVISION} has no commit sha")
        return info

    def _api_json(self, url: str, params: Any, repo_id: str) -> Any:
        """One paced, retried GET of a dataset's API answer, its body parsed as JSON."""

        def get() -> Any:
            response = get_session().get(url, params=params, headers=self.headers())
            hf_raise_for_status(response)
            return _json_body(response, f"{repo_id} dataset info")

        return self.call(get, _what=repo_id)

    def dataset_item(self, repo_id: str, expand: Iterable[str]) -> dict[str, Any]:
        """One dataset as the listing gives it (``/api/datasets/{id}`` with the listing's ``expand``),
        in one API call: checked to be a JSON object naming this dataset. A dataset the Hub no
        longer serves raises huggingface_hub's ``RepositoryNotFoundError``."""
        item = scrub_value(self._api_json(f"{self.endpoint}/api/datasets/{repo_id}", [("expand", e) for e in expand], repo_id))
        if not isinstance(item, dict) or not isinstance(item.get("id"), str):
            raise HubFaultError(f"{repo_id}: the Hub's dataset info is not an object with an id")
        return item

    def parquet_sha(self, repo_id: str) -> str:
        """The commit the dataset's Parquet branch points at: downloads are pinned to it."""
        return str(self._parquet_branch(repo_id, blobs=False)["sha"])

    def parquet_files(self, repo_id: str) -> tuple[str, list[RepoFile]]:
        """The Parquet branch's commit and every Parquet file on it with its size, in ONE API call
        (dataset info at ``refs/convert/parquet`` with ``blobs=true``: its siblings carry sizes)."""
        info = self._parquet_branch(repo_id, blobs=True)
        siblings = info.get("siblings")
        if not isinstance(siblings, list) or not all(isinstance(s, dict) and isinstance(s.get("rfilename"), str) for s in siblings):
            raise HubFaultError(f"{repo_id}: the Hub's dataset info of {PARQUET_REVISION} has no list of files")
        # paths become config names, rows and folder names: a list of files echoing the token is refused whole
        refuse_secrets([s["rfilename"] for s in siblings], f"{repo_id}: the Parquet branch's files")
        files = []
        for sibling in siblings:
            if not sibling["rfilename"].endswith(".parquet"):
                continue
            size = sibling.get("size", (sibling.get("lfs") or {}).get("size") if isinstance(sibling.get("lfs"), dict) else None)
            if not isinstance(size, int) or isinstance(size, bool) or size < 0:
                raise HubFaultError(f"{repo_id}: the Hub gave no size for {sibling['rfilename']!r} on {PARQUET_REVISION}")
            files.append(RepoFile(sibling["rfilename"], size))
        return str(info["sha"]), files

    def parquet_tree(self, repo_id: str, revision: str = PARQUET_REVISION) -> list[RepoFile]:
        """Every Parquet file on the dataset's Parquet branch (one listing, paginated by the Hub)."""
        url = f"{self.endpoint}/api/datasets/{repo_id}/tree/{quote(revision, safe='')}"
        items = list(self._paginate(url, [("recursive", "true"), ("expand", "false")], repo_id))
        if not all(isinstance(it, dict) for it in items):
            raise HubFaultError(f"{repo_id}: the Hub's tree of {revision} holds items that are not objects")
        # paths become config names, rows and folder names: a tree echoing the token is refused whole
        refuse_secrets([it.get("path") for it in items if isinstance(it, dict)], f"{repo_id}: the Parquet branch's tree")
        return [
            RepoFile(it["path"], int(it.get("size") or 0))
            for it in items
            if it.get("type") == "file" and str(it.get("path", "")).endswith(".parquet")
        ]

    # --- files ----------------------------------------------------------------------------------

    def download(self, repo_id: str, path: str, revision: str) -> Path:
        """One file in the survey's cache, downloaded once (:meth:`HubFiles.download`)."""
        return self.files.download(repo_id, path, revision)

    def parquet_footer(self, repo_id: str, path: str, revision: str = PARQUET_REVISION) -> Any:
        """A Parquet file's metadata from one suffix read of its end (:meth:`HubFiles.parquet_footer`)."""
        return self.files.parquet_footer(repo_id, path, revision)

    def parquet_file(self, repo_id: str, path: str, revision: str = PARQUET_REVISION) -> ParquetFile:
        """A Parquet file's footer, commit and size from one suffix read (:meth:`HubFiles.parquet_file`)."""
        return self.files.parquet_file(repo_id, path, revision)

    # --- discussions (the opt-in bot, ``hubsurvey notify``) ---------------------------------------

    def whoami(self) -> dict[str, Any]:
        """The token's account (:meth:`HubDiscussions.whoami`)."""
        return self.community.whoami()

    def discussions(self, repo_id: str, *, author: str | None = None) -> list[Any]:
        """Every discussion of a dataset, by ``author`` when given (:meth:`HubDiscussions.discussions`)."""
        return self.community.discussions(repo_id, author=author)

    def create_discussion(self, repo_id: str, title: str, description: str, *, author: str) -> Any:
        """Open a discussion on a dataset, never twice (:meth:`HubDiscussions.create_discussion`)."""
        return self.community.create_discussion(repo_id, title, description, author=author)

    # --- publishing -----------------------------------------------------------------------------

    @property
    def api(self) -> HfApi:
        """The underlying HfApi, for publishing calls; wrap them with :meth:`call`."""
        return self._api
