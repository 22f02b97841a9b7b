"""numba's njit as every compiled pass of hubsurvey uses it (the contamination check, near-duplicates,
split fingerprints)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numba


def compiled(**options: Any) -> Callable[[Callable[..., Any]], Any]:
    """numba's njit with its on-disk cache (beside the module, else the user's cache folder), and
    without it when neither can be written (a read-only install and home): compiled per process."""
    def wrap(function: Callable[..., Any]) -> Any:
        try:
            return numba.njit(cache=True, **options)(function)
        except RuntimeError:  # "cannot cache function ...: no locator available"
            return numba.njit(cache=False, **options)(function)
    return wrap
