"""The one client through which hubsurvey talks to the Hub.

It wraps ``huggingface_hub`` (which reads ``HF_ENDPOINT`` and ``HF_TOKEN`` from the environment)
with three things the library does not do for every call:

- retries with tenacity for the calls huggingface_hub does not retry itself (``dataset_info``,
  ``list_repo_refs``, ranged reads, ``create_repo``, commits): on 429 (honouring ``Retry-After`` and
  ``RateLimit: ...;t=N``), 5xx, timeouts and connection resets; never on 401, 403 or 404;
- pacing: at most ``rate`` API calls per second (the anonymous Hub limit is 500 per 5 minutes);
- token hygiene: the token is passed to huggingface_hub and nowhere else, and error messages are
  scrubbed of it before they are raised.

Nothing else in the project opens HTTP connections to the Hub.
"""

from __future__ import annotations

import os
import re
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, TypeVar

import httpx2
from huggingface_hub import HfApi, hf_hub_download
from huggingface_hub.errors import HfHubHTTPError
from tenacity import RetryCallState, retry, retry_if_exception, stop_after_attempt, wait_exponential_jitter

PARQUET_REVISION = "refs/convert/parquet"
RETRY_STATUSES = {408, 429, 500, 502, 503, 504}
# Anonymous Hub limits per 5 minutes: 500 API calls and 3,000 file (resolver) requests; stay under.
DEFAULT_RATE = 1.5
DEFAULT_FILE_RATE = 9.0
FOOTER_PROBE = 64 * 1024  # one suffix read gets the footer of almost every Parquet file

T = TypeVar("T")

# On the Parquet branch a split's folder may be "partial-train" (partial export) or "train-part3"
# (more than 10,000 shards); split names themselves never contain "-".
_BRANCH_SPLIT = re.compile(r"^(?:partial-)?(?P<split>[^/]+?)(?:-part\d+)?$")


def branch_split(directory: str) -> str:
    """The split a Parquet-branch folder holds."""
    m = _BRANCH_SPLIT.match(directory)
    return m.group("split") if m else directory


def is_transient(exc: BaseException) -> bool:
    """True for failures worth retrying: rate limits, 5xx, timeouts, resets, truncated bodies."""
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


class HubError(Exception):
    """A Hub call failed; the message never contains the token."""


@dataclass(frozen=True)
class RepoFile:
    path: str
    size: int


class HubClient:
    """One object for every Hub call. Configuration comes from the environment by default."""

    def __init__(
        self,
        endpoint: str | None = None,
        token: str | bool | None = None,
        *,
        cache_dir: str | Path | None = None,
        rate: float | None = DEFAULT_RATE,
        file_rate: float | None = DEFAULT_FILE_RATE,
        max_attempts: int = 6,
        max_wait: float = 60.0,
    ):
        self.endpoint = (endpoint or os.environ.get("HF_ENDPOINT") or "https://huggingface.co").rstrip("/")
        token = os.environ.get("HF_TOKEN") if token is None else token
        self._token = token or None
        self._api = HfApi(endpoint=self.endpoint, token=self._token if self._token else False)
        self.cache_dir = Path(cache_dir) if cache_dir else None
        self._pacer = _Pacer(rate)
        self._file_pacer = _Pacer(file_rate)
        self._retry = retry(
            retry=retry_if_exception(is_transient),
            wait=_ServerAwareWait(maximum=max_wait),
            stop=stop_after_attempt(max_attempts),
            reraise=True,
        )
        self.calls = 0  # API calls made through this client, for politeness accounting
        self.file_calls = 0  # file (resolve) requests: downloads and ranged reads

    @property
    def has_token(self) -> bool:
        return bool(self._token)

    def scrub(self, text: str) -> str:
        """Remove the token from a message before it reaches a log, the DB or an exception."""
        return text.replace(self._token, "***") if self._token else text

    def call(self, fn: Callable[..., T], *args: Any, _file: bool = False, **kwargs: Any) -> T:
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
        except HfHubHTTPError as e:
            if self._token and self._token in str(e):
                raise HubError(self.scrub(str(e))) from None
            raise

    # --- listing and metadata ----------------------------------------------------------------

    def list_datasets(self, **kwargs: Any) -> Iterable[Any]:
        """Stream dataset listings; huggingface_hub paginates and retries the pages itself."""
        self._pacer.wait()
        self.calls += 1
        return self._api.list_datasets(**kwargs)

    def dataset_info(self, repo_id: str, revision: str | None = None, **kwargs: Any) -> Any:
        return self.call(self._api.dataset_info, repo_id, revision=revision, **kwargs)

    def parquet_tree(self, repo_id: str, revision: str = PARQUET_REVISION) -> list[RepoFile]:
        """Every Parquet file on the dataset's Parquet branch (one listing, paginated by the Hub).

        huggingface_hub already retries each page (http_backoff), so tenacity is not stacked on it.
        """
        self._pacer.wait()
        self.calls += 1
        items = list(self._api.list_repo_tree(repo_id, repo_type="dataset", revision=revision, recursive=True))
        return [
            RepoFile(it.path, int(getattr(it, "size", 0) or 0))
            for it in items
            if getattr(it, "path", "").endswith(".parquet") and hasattr(it, "size")
        ]

    # --- files ----------------------------------------------------------------------------------

    def download(self, repo_id: str, path: str, revision: str) -> Path:
        """Download one file into the huggingface_hub cache (reused across runs)."""
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

        return self.call(get, _file=True)

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
