"""Give memory that DuckDB has freed back to the system at once, not seconds later.

DuckDB allocates through a jemalloc of its own (Linux x86-64 builds), which hands freed pages back to
the system in the background, over a decay of seconds. A measurement that drops a large table and
then allocates as much again (the near stage drops ``rows_all``'s texts, then fills its band hashes)
would hold both for those seconds: 150-180 MB of the 1M-row benchmark's peak. jemalloc purges its
arenas on request (``mallctl("arena.<all>.purge")``); DuckDB's library exports that call under its
own prefix. A build without it (another platform, another allocator) has nothing to purge, and this
does nothing.
"""

from __future__ import annotations

import ctypes
import functools
from collections.abc import Callable

import pyarrow as pa

_ALL_ARENAS = 4096  # jemalloc's MALLCTL_ARENAS_ALL


@functools.cache
def _jemalloc_purge() -> Callable[[], object] | None:
    try:
        import duckdb

        library = ctypes.CDLL(duckdb._duckdb.__file__)  # already loaded: the same handle
        mallctl = library.duckdb_je_mallctl
    except (AttributeError, OSError):
        return None
    mallctl.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t]
    mallctl.restype = ctypes.c_int
    name = f"arena.{_ALL_ARENAS}.purge".encode()
    return lambda: mallctl(name, None, None, None, 0)


def release_freed_memory() -> None:
    """Return the pages DuckDB's allocator and Arrow's pool hold free to the system."""
    purge = _jemalloc_purge()
    if purge is not None:
        purge()
    pa.default_memory_pool().release_unused()
