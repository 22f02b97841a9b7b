"""numba's njit as every compiled pass of hubsurvey uses it (the contamination check, near-duplicates,
split fingerprints)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numba
import numpy as np
import pyarrow as pa


def read_only(data: np.ndarray) -> np.ndarray:
    """``data`` as a read-only view (the array itself untouched). A compiled pass takes a text
    column's bytes read-only whatever held them (an Arrow buffer read from Parquet is writable, a
    Python ``bytes`` is not): numba compiles a pass once per array type, and one type is compiled
    once, in the run's one-time compile, instead of again in a job that brings the other."""
    view = data.view()
    view.flags.writeable = False
    return view


def string_buffers(values: pa.Array, *, missing_bytes: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(the bytes buffer, read-only, whole; the n + 1 offsets into it as int64) of a string or
    binary array, in place: what a compiled pass takes of a text column. An array of empty values
    may have no bytes buffer: ``missing_bytes`` zero bytes stand in for it."""
    large = pa.types.is_large_string(values.type) or pa.types.is_large_binary(values.type)
    offsets = np.frombuffer(values.buffers()[1], dtype=np.int64 if large else np.int32)[values.offset:values.offset + len(values) + 1]
    buffer = values.buffers()[2]
    data = np.frombuffer(buffer, dtype=np.uint8) if buffer is not None else np.zeros(missing_bytes, np.uint8)
    return read_only(data), offsets.astype(np.int64)


def compiled(**options: Any) -> Callable[[Callable[..., Any]], Any]:
    """numba's njit with its on-disk cache (beside the module, else the user's cache folder), and
    without it when neither can be written (a read-only install and home): compiled per process."""
    def wrap(function: Callable[..., Any]) -> Any:
        try:
            return numba.njit(cache=True, **options)(function)
        except RuntimeError:  # "cannot cache function ...: no locator available"
            return numba.njit(cache=False, **options)(function)
    return wrap


def cache_folder(module_file: str) -> Path | None:
    """Where derived tables of a compiled pass are kept between processes, as numba keeps the pass
    itself: ``NUMBA_CACHE_DIR`` (as numba read it) when it is set, else the module's ``__pycache__``
    when it can be written; None otherwise (the table is then built in each process)."""
    configured = numba.config.CACHE_DIR  # type: ignore[attr-defined]
    folder = Path(configured) / "hubsurvey" if configured else Path(module_file).resolve().parent / "__pycache__"
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    return folder if os.access(folder, os.W_OK) else None
