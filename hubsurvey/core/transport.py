"""The HTTP transport under every Hub request: deadlines, the drip floor, decompression caps.

huggingface_hub has one process-wide HTTP client; :func:`configure_http` installs ours once per
process (through the library's public ``set_client_factory``). Every request made while a
:class:`RequestLimits` is active (the Hub client activates one per call, see
:meth:`hubsurvey.core.hub.HubClient.call`) gets:

- connect and read timeouts no longer than what is left of the call's deadline;
- for an API answer, the deadline over the whole body too; for a file, the body is bounded by the
  job's and the run's deadlines instead (a large file may take longer than one request's deadline
  while it flows);
- a drip floor: a body that arrives slower than ``drip_floor`` bytes a second, averaged over
  ``drip_window`` seconds, is a timeout;
- a cap on what an API answer may inflate to (gzip bombs, endless pages): decompression is done
  here, in bounded steps, so the cap holds before memory is spent;
- a redirect limit (a loop ends as ``TooManyRedirects``, a Hub fault);
- the ``RateLimit`` headers of every answer go to the call's pacing.

A host name that does not resolve, or a refused connection, raises :class:`HubUnreachableError`
at once: no retry loop treats it as transient.
"""

from __future__ import annotations

import contextlib
import math
import threading
import time
import zlib
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

import httpx2

from hubsurvey.core.errors import HubFaultError, HubUnreachableError
from hubsurvey.core.safety import MAX_JSON_DEPTH, json_depth

MAX_REDIRECTS = 10
INFLATE_STEP = 1 << 20  # bytes inflated at a time: a bomb is caught after at most this much more


@dataclass
class RequestLimits:
    """The limits of one Hub call (over all its attempts). Mutable: pacing pushes the deadline
    back by the time it waited for the quota (waiting for the quota is not the Hub being slow)."""

    deadline: float = math.inf  # monotonic: the call's requests must be answered by then
    hard_deadline: float = math.inf  # the job's or the run's end: nothing goes on past it
    connect_timeout: float = 10.0
    read_timeout: float = 60.0
    drip_floor: float = 0.0  # bytes a second; 0: no floor
    drip_window: float = 10.0
    max_body: int | None = None  # decoded bytes an answer may hold; None: no cap
    file: bool = False  # a file's body runs on the hard deadline and the floor, not the call's deadline
    observe: Callable[[Mapping[str, str]], None] | None = None
    clock: Callable[[], float] = field(default=time.monotonic, repr=False)

    def left(self, *, hard_only: bool = False) -> float:
        end = self.hard_deadline if hard_only else min(self.deadline, self.hard_deadline)
        return end - self.clock()


_LIMITS: ContextVar[RequestLimits | None] = ContextVar("hubsurvey_request_limits", default=None)
_DEFAULT = RequestLimits()


@contextlib.contextmanager
def limits(active: RequestLimits) -> Iterator[RequestLimits]:
    """Make ``active`` the limits of every request this thread makes inside the block."""
    token = _LIMITS.set(active)
    try:
        yield active
    finally:
        _LIMITS.reset(token)


def _timeout_error(request: httpx2.Request, message: str) -> httpx2.ReadTimeout:
    return httpx2.ReadTimeout(message, request=request)


class _GuardedStream(httpx2.SyncByteStream):
    """A response body read under the limits: deadline, drip floor, decoded-size cap."""

    def __init__(self, raw: httpx2.SyncByteStream, request: httpx2.Request, active: RequestLimits,
                 encoding: str | None, cap: int | None):
        self._raw = raw
        self._request = request
        self._limits = active
        self._cap = cap
        self._decoder = zlib.decompressobj(16 + zlib.MAX_WBITS) if encoding == "gzip" else (
            zlib.decompressobj() if encoding == "deflate" else None)

    def _check_time(self, started: float, arrivals: deque[tuple[float, int]]) -> None:
        active = self._limits
        now = active.clock()
        if active.left(hard_only=active.file) <= 0:
            raise _timeout_error(self._request, "the answer did not arrive before the deadline")
        if active.drip_floor and now - started >= active.drip_window:
            while arrivals and arrivals[0][0] < now - active.drip_window:
                arrivals.popleft()
            recent = sum(n for _, n in arrivals)
            if recent < active.drip_floor * active.drip_window:
                raise _timeout_error(
                    self._request,
                    f"the answer arrives at {recent / active.drip_window:.0f} bytes/s, under the floor of "
                    f"{active.drip_floor:.0f} bytes/s over {active.drip_window:g} s")

    def _inflate(self, chunk: bytes) -> Iterator[bytes]:
        if self._decoder is None:
            yield chunk
            return
        data = chunk
        while data:
            try:
                out = self._decoder.decompress(data, INFLATE_STEP)
            except zlib.error as e:
                raise HubFaultError(f"{self._request.url}: the answer's compressed body is corrupt ({e})") from None
            data = self._decoder.unconsumed_tail
            if out:
                yield out

    def __iter__(self) -> Iterator[bytes]:
        started = self._limits.clock()
        arrivals: deque[tuple[float, int]] = deque()
        decoded = 0
        # An API answer that is JSON is held whole (huggingface_hub parses it whole anyway) to check
        # its nesting before it is given: one deeper than any real answer is a Hub fault, not a
        # RecursionError in the parser. Anything else (a file, an HTML page) flows as it arrives.
        held: list[bytes] | None = [] if self._cap is not None else None
        is_json: bool | None = None
        for chunk in self._raw:
            arrivals.append((self._limits.clock(), len(chunk)))
            for out in self._inflate(chunk):
                decoded += len(out)
                if self._cap is not None and decoded > self._cap:
                    raise HubFaultError(
                        f"{self._request.url.copy_with(query=None)}: the answer is larger than "
                        f"{self._cap / 2**20:.0f} MB{' once decompressed' if self._decoder else ''} (a Hub fault)")
                if held is None:
                    yield out
                    continue
                held.append(out)
                if is_json is None and (head := out.lstrip()[:1]):
                    is_json = head in (b"[", b"{")
                if is_json is False:
                    yield b"".join(held)
                    held = None
            self._check_time(started, arrivals)
        if self._decoder is not None:
            tail = self._decoder.flush()
            if self._cap is not None and decoded + len(tail) > self._cap:
                raise HubFaultError(f"{self._request.url.copy_with(query=None)}: the answer is larger than "
                                    f"{self._cap / 2**20:.0f} MB once decompressed (a Hub fault)")
            if tail and held is not None:
                held.append(tail)
            elif tail:
                yield tail
        if held:
            body = b"".join(held)
            if is_json is None:
                is_json = body.lstrip()[:1] in (b"[", b"{")
            if is_json and json_depth(body) > MAX_JSON_DEPTH:
                raise HubFaultError(f"{self._request.url.copy_with(query=None)}: the answer nests lists or objects "
                                    f"deeper than {MAX_JSON_DEPTH} levels (a Hub fault)")
            yield body

    def close(self) -> None:
        self._raw.close()


def origin(url: Any) -> str:
    """A URL's scheme, host and port: what a next-page link must keep."""
    url = httpx2.URL(str(url))
    port = f":{url.port}" if url.port else ""
    return f"{url.scheme}://{url.host}{port}"


def unreachable_cause(exc: BaseException) -> str | None:
    """The cause when ``exc`` says the Hub cannot be reached at all (DNS failure, refused), else None."""
    import socket

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


class HubTransport(httpx2.BaseTransport):
    """Every request under the active :class:`RequestLimits` (see the module docstring)."""

    def __init__(self) -> None:
        self._inner = httpx2.HTTPTransport()

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        active = _LIMITS.get() or _DEFAULT
        left = active.left()
        if left <= 0:
            raise _timeout_error(request, "no time left before the deadline")
        connect = min(active.connect_timeout, left)
        read = min(active.read_timeout, left)
        request.extensions = {**request.extensions,
                              "timeout": {"connect": connect, "read": read, "write": read, "pool": connect}}
        # Only encodings decoded here, in bounded steps: none that would inflate unchecked.
        request.headers["Accept-Encoding"] = "gzip, deflate"
        try:
            response = self._inner.handle_request(request)
        except httpx2.ConnectError as e:
            cause = unreachable_cause(e)
            if cause:
                raise HubUnreachableError(
                    f"cannot reach {origin(request.url)}: {cause} (offline? set HF_ENDPOINT)") from e
            raise
        if active.observe is not None:
            active.observe(response.headers)
        encoding = (response.headers.get("Content-Encoding") or "").strip().lower() or None
        headers = response.headers
        if encoding in ("gzip", "deflate"):  # decoded here: the client must not decode again
            headers = httpx2.Headers([(k, v) for k, v in response.headers.multi_items()
                                      if k.lower() not in ("content-encoding", "content-length")])
        elif encoding not in (None, "identity"):
            response.close()
            raise HubFaultError(f"{request.url.copy_with(query=None)}: the answer's encoding {encoding!r} was not asked for")
        is_body_file = active.file and response.status_code < 300
        cap = None if is_body_file else active.max_body
        assert isinstance(response.stream, httpx2.SyncByteStream)
        stream = _GuardedStream(response.stream, request, active, encoding if encoding != "identity" else None, cap)
        return httpx2.Response(response.status_code, headers=headers, stream=stream, extensions=response.extensions)

    def close(self) -> None:
        self._inner.close()


_configured = False
_configure_lock = threading.Lock()


def configure_http() -> None:
    """Install the survey's transport in huggingface_hub's process-wide client, once per process.

    The library's own request hooks (offline mode, request ids) are kept: they are read from the
    client it would have made.
    """
    global _configured
    if _configured:
        return
    with _configure_lock:
        if _configured:
            return
        from huggingface_hub import get_session, set_client_factory

        hooks = list(get_session().event_hooks.get("request", []))

        def factory() -> httpx2.Client:
            return httpx2.Client(
                event_hooks={"request": hooks},
                follow_redirects=True,
                max_redirects=MAX_REDIRECTS,
                timeout=None,  # the transport sets every request's timeouts from its limits
                transport=HubTransport(),
            )

        set_client_factory(factory)
        _configured = True
