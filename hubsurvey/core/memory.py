"""Give memory that DuckDB has freed back to the system at once, not seconds later; and keep numpy's
arrays on the system's ordinary pages (:func:`ordinary_pages`).

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

import numpy as np
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


def ordinary_pages() -> None:
    """Numpy's arrays of 4 MB or more on ordinary 4 KB pages, as every other allocation of the process.

    Numpy asks the kernel for 2 MB pages (``madvise(MADV_HUGEPAGE)``) for every such array. A
    measurement allocates and frees hundreds of them (the near stage's band hashes and sketches,
    the fingerprint's batches), and the kernel zeroes each 2 MB page whole when it is first touched,
    compacting memory to find one: at the 1M-row benchmark a fifth of the process's CPU was that
    zeroing, and with ordinary pages the whole audit took 0.83 times the time (``docs/benchmarks.md``,
    "Figures behind the code's choices"). Numpy reads ``NUMPY_MADVISE_HUGEPAGE`` only when imported;
    this switch holds from the call on, in any process (a pool's or a cluster's worker too)."""
    switch = getattr(getattr(np, "_core", None), "multiarray", None)
    setter = getattr(switch, "_set_madvise_hugepage", None)
    if setter is not None:  # a numpy without the switch allocates as it does
        setter(False)
