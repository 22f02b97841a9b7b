"""Hostile values at the borders: control characters, secrets echoed into data, non-finite floats.

Three rules, each applied in one place:

- **Control characters** (C0 but tab and newline, DEL, C1, and the bidirectional overrides that
  reorder what a terminal shows) are made *visible* in every human-facing output: terminal output
  of the commands, error and log lines, REPORT.md and report.html. ``ESC ] 0 ; t BEL`` prints as
  ``\\x1b]0;t\\x07``. The data itself is kept exact: the DB, Parquet and CSV files, and JSON, which
  escapes them as ``\\u001b`` (valid JSON that decodes to the exact value).
- **Secrets** (the token, and every secret registered in :mod:`hubsurvey.core.errors`) never enter
  stored data: a Hub answer that holds one is scrubbed (metadata) or refused (file paths) where it
  becomes Python values, and the store scrubs whatever it writes (:func:`scrub_value`).
- **Non-finite floats** (NaN, infinities) are ``null`` in JSON output (:func:`json_text`): ``NaN`` is
  not JSON, and jq and JavaScript reject it.
"""

from __future__ import annotations

import codecs
import contextlib
import dataclasses
import json
import math
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from hubsurvey.core import errors

# C0 controls but \t and \n, DEL and C1; the bidi embeddings, overrides and isolates (U+202A-E,
# U+2066-9), which make a terminal show text in another order than it is written.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
# the same, with tab and newline: for one-line contexts (a table cell, a name in an error line)
_CONTROL_ONE_LINE = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return {9: "\\t", 10: "\\n", 13: "\\r"}.get(code) or (f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")


def visible(text: str, *, one_line: bool = False) -> str:
    """``text`` with its control characters written out (``\\x1b``, ``\\u202e``); tab and newline kept
    unless ``one_line``."""
    return (_CONTROL_ONE_LINE if one_line else _CONTROL).sub(_escape, text)


# What XML 1.0 forbids in a document (its Char production), lone surrogates and U+FFFE/U+FFFF
# included; visible() leaves most of these as they are, and a strict parser rejects the whole file.
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def xml_text(text: str) -> str:
    """``text`` as one line an XML 1.0 document can hold: control characters written out as by
    :func:`visible`, and every other character XML forbids (U+FFFE, U+FFFF, a lone surrogate) as a
    ``\\u`` escape. The serializer then escapes ``<``, ``&`` and quotes."""
    return _NOT_XML.sub(lambda m: f"\\u{ord(m.group()):04x}", visible(text, one_line=True))


def has_control(text: str) -> bool:
    return _CONTROL_ONE_LINE.search(text) is not None


class VisibleStream:
    """A text stream that writes :func:`visible` text to another one: a command's stdout and stderr.

    It has no ``buffer`` (click would write bytes past it). ``unfiltered`` is the stream below, for
    a progress bar that moves the cursor on purpose.
    """

    def __init__(self, stream: Any):
        self.unfiltered = stream
        self.encoding = getattr(stream, "encoding", "utf-8") or "utf-8"
        self.errors = getattr(stream, "errors", "strict") or "strict"

    def write(self, text: str) -> int:
        self.unfiltered.write(visible(text))
        return len(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        self.unfiltered.flush()

    def isatty(self) -> bool:
        return bool(getattr(self.unfiltered, "isatty", lambda: False)())

    def fileno(self) -> int:
        return self.unfiltered.fileno()

    def writable(self) -> bool:
        return True

    def readable(self) -> bool:
        return False

    def seekable(self) -> bool:
        return False

    @property
    def closed(self) -> bool:
        return bool(getattr(self.unfiltered, "closed", False))


def unfiltered(stream: Any) -> Any:
    """The stream below a :class:`VisibleStream` (any other stream as it is)."""
    return getattr(stream, "unfiltered", stream)


# --- small text files: lists and settings an operator gives ---------------------------------------

#: the most a list or settings file may hold: far more than any real one (a list of every Hub
#: dataset is about 30 MB), and a bound on ``--allow /dev/zero``
MAX_TEXT_FILE_BYTES = 64 * 2**20


def read_text_file(path: str | Path, what: str, error: type[errors.HubsurveyError] = errors.UsageError,
                   limit: int | None = None) -> str:
    """A list or settings file as text, read as an editor may have saved it: UTF-8 with or without
    a byte order mark (or UTF-16 with one), any line ends. ``error`` (exit 2) names the file when it
    cannot be read, is larger than ``limit`` (``/dev/zero`` is refused, not read forever), or holds
    NUL bytes (not a text file). ``limit`` defaults to :data:`MAX_TEXT_FILE_BYTES`."""
    limit = MAX_TEXT_FILE_BYTES if limit is None else limit
    try:
        with open(path, "rb") as f:
            raw = f.read(limit + 1)
    except OSError as e:
        raise error(f"{path}: cannot read the {what}: {e.strerror or e}") from None
    if len(raw) > limit:
        raise error(f"{path}: the {what} is larger than {limit // 2**20} MB: not a {what}")
    try:
        if raw.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
            text = raw.decode("utf-16")
        else:
            text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise error(f"{path}: the {what} is not UTF-8 text ({e.reason} at byte {e.start})") from None
    if "\x00" in text:
        raise error(f"{path}: the {what} holds NUL bytes: not a text file")
    return text


# --- secrets ------------------------------------------------------------------------------------

def secrets() -> tuple[str, ...]:
    """Every secret the process knows: registered ones (the client's token) and the environment's."""
    return errors.known_secrets()


def holds_secret(value: Any, known: tuple[str, ...] | None = None) -> bool:
    """True when ``value`` (a string, or any nesting of lists, dicts and dataclasses) holds a secret."""
    known = secrets() if known is None else known
    if not known:
        return False
    return any(secret in text for text in _strings(value) for secret in known)


def _strings(value: Any) -> Any:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _strings(k)
            yield from _strings(v)
    elif isinstance(value, (list, tuple, set, frozenset)):
        for v in value:
            yield from _strings(v)
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        yield from _strings(vars(value))


def scrub_value(value: Any, known: tuple[str, ...] | None = None) -> Any:
    """``value`` with every secret in its strings replaced by ``***``; lists, tuples, dicts and
    dataclass instances are copied only where they hold one (the common case costs one scan)."""
    known = secrets() if known is None else known
    if not known or not holds_secret(value, known):
        return value
    if isinstance(value, str):
        return errors.scrub(value, known)
    if isinstance(value, dict):
        return {scrub_value(k, known): scrub_value(v, known) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return type(value)(scrub_value(v, known) for v in value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        for name, field_value in list(vars(value).items()):
            try:
                object.__setattr__(value, name, scrub_value(field_value, known))
            except (AttributeError, TypeError):  # a slot or read-only property: leave it
                continue
        return value
    return value


def refuse_secrets(value: Any, what: str) -> Any:
    """``value`` unchanged, or :class:`~hubsurvey.core.errors.HubError` when it holds a secret: a
    Hub (or a proxy) echoed the credentials into names that would become paths and rows."""
    if holds_secret(value):
        raise errors.HubError(f"{what}: the Hub's answer holds the token (echoed credentials): refused")
    return value


# --- JSON ---------------------------------------------------------------------------------------

def finite(value: Any) -> Any:
    """``value`` with every NaN and infinity (at any depth) replaced by None."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(v) for v in value]
    return value


def json_text(value: Any, **options: Any) -> str:
    """Valid JSON for output: NaN and infinities are null; control characters, C1 included, are
    ``\\u`` escapes (the decoded value is exact; a terminal shows them as text)."""
    options.setdefault("ensure_ascii", False)
    text = json.dumps(finite(value), allow_nan=False, **options)
    # json escapes C0 itself; C1 and the bidi controls are valid raw in JSON strings but not on a terminal
    return _CONTROL.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


#: the deepest nesting of lists and objects a JSON answer (or metadata) may have: real ones (the Hub's
#: listings, dataset infos, trees, HF features) nest a few levels; Python's parser fails past ~1000
MAX_JSON_DEPTH = 100
# a JSON string (its escapes included) and every byte that is not a bracket: what depth does not see
_JSON_STRING = re.compile(rb'"(?:[^"\\]++|\\.)*+"', re.DOTALL)
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
_BRACKET_STEPS = bytes.maketrans(b"[{]}", b"\x01\x01\xff\xff")


def json_depth(text: bytes) -> int:
    """The deepest nesting of lists and objects in a JSON text, without parsing it (strings and
    their escapes skipped), in a few passes at C speed: a streamed answer is checked whole."""
    brackets = _JSON_STRING.sub(b"", text).translate(None, _NOT_BRACKETS)
    if not brackets:
        return 0
    steps = np.frombuffer(brackets.translate(_BRACKET_STEPS), dtype=np.int8).astype(np.int64)
    return int(np.cumsum(steps).max())


def loads_bounded(text: str | bytes, limit: int | None = None) -> Any:
    """``json.loads`` of a text from outside (a Hub answer, file metadata), refused with
    ``ValueError`` when it nests deeper than ``limit`` (:data:`MAX_JSON_DEPTH`) levels: parsing it
    (or walking it) would end in a RecursionError."""
    raw = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
    limit = MAX_JSON_DEPTH if limit is None else limit
    if json_depth(raw) > limit:
        raise ValueError(f"JSON nested deeper than {limit} levels")
    return json.loads(text)


@contextlib.contextmanager
def visible_output() -> Iterator[None]:
    """While a command runs, its stdout and stderr show control characters as text (one choke
    point for every line a command prints: tables, CSV, Markdown, error lines)."""
    saved = sys.stdout, sys.stderr
    if not isinstance(sys.stdout, VisibleStream):
        sys.stdout = VisibleStream(sys.stdout)
    if not isinstance(sys.stderr, VisibleStream):
        sys.stderr = VisibleStream(sys.stderr)
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved
