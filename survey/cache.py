"""The survey cache's budget: the coordinator's downloads never take the cache over ``max_bytes``.

The prefetching executor downloads the next jobs' files while the workers measure, so several
jobs' files are on disk at once. Before a job's download starts, :meth:`CacheBudget.admit`
reserves the job's size (known from the crawl's tree listing) and makes room for it:

- it evicts files that no job in flight uses (oldest first: a run with ``--keep-cache`` keeps
  recent files; otherwise they are leftovers of failed or killed jobs);
- it admits the job only when ``bytes on disk + bytes still to come for the jobs downloading +
  this job's bytes <= max_bytes``. Downloads only add a job's own files (at most its reservation),
  so that sum bounds the cache at every moment; when it cannot be met the download waits for a
  job to finish (its files are then deleted, or evictable);
- each job reserves its files' bytes plus :data:`METADATA_BYTES` for huggingface_hub's own small
  files (``CACHEDIR.TAG``, refs, locks);
- a job larger than the whole budget fails alone with :class:`TooLargeForCacheError`
  (``too_large_for_cache``) rather than take the cache over its budget.

Files of jobs in flight (downloading or being measured) are never evicted: their dataset's folder in
the cache is protected until the job ends. The peak of the bound is kept in :attr:`peak`.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path

from hubsurvey.core.errors import TooLargeForCacheError

log = logging.getLogger(__name__)

GB = 10**9
#: what huggingface_hub writes beside a job's files (CACHEDIR.TAG, refs, locks): reserved with each job
METADATA_BYTES = 4096
#: re-check the cache at least this often while a download waits for room (seconds)
WAIT_STEP = 1.0


def repo_folder(cache_dir: Path, dataset_id: str) -> Path:
    """The dataset's folder in a huggingface_hub cache (``datasets--owner--name``)."""
    return cache_dir / ("datasets--" + dataset_id.replace("/", "--"))


class CacheBudget:
    """Admission of downloads into a cache of at most ``max_bytes`` (see the module doc). Thread-safe."""

    def __init__(self, cache_dir: str | Path, max_bytes: int):
        self.cache_dir = Path(cache_dir)
        self.max_bytes = int(max_bytes)
        self._cond = threading.Condition()
        self._downloading: dict[str, int] = {}  # job -> bytes reserved, until its download ends
        self._in_flight: dict[str, Path] = {}  # job -> its dataset's cache folder (never evicted)
        self.peak = 0  # the largest bound admitted: bytes on disk + bytes still to come

    def admit(self, job_id: str, dataset_id: str, nbytes: int) -> None:
        """Reserve ``nbytes`` for the job's download; wait for room, evicting unused files first."""
        nbytes += METADATA_BYTES
        if nbytes > self.max_bytes:
            raise TooLargeForCacheError(
                f"{dataset_id}: its files take {nbytes / GB:.3f} GB, more than the cache budget of "
                f"{self.max_bytes / GB:.3f} GB (--max-cache-gb)"
            )
        with self._cond:
            while True:
                coming = sum(self._downloading.values())
                on_disk = self._make_room(self.max_bytes - coming - nbytes)
                if on_disk + coming + nbytes <= self.max_bytes:
                    break
                if not self._in_flight:  # nothing will free room: only unevictable files are left
                    raise TooLargeForCacheError(
                        f"{dataset_id}: no room for {nbytes / GB:.3f} GB in the cache budget of "
                        f"{self.max_bytes / GB:.3f} GB ({on_disk / GB:.3f} GB cannot be evicted)"
                    )
                self._cond.wait(WAIT_STEP)
            self._downloading[job_id] = nbytes
            self._in_flight[job_id] = repo_folder(self.cache_dir, dataset_id)
            self.peak = max(self.peak, on_disk + coming + nbytes)

    def downloaded(self, job_id: str) -> None:
        """The job's files are on disk: they count as bytes on disk now, not as bytes to come."""
        with self._cond:
            self._downloading.pop(job_id, None)
            self._cond.notify_all()

    def release(self, job_id: str) -> None:
        """The job ended (measured, failed or timed out): its files may be evicted."""
        with self._cond:
            self._downloading.pop(job_id, None)
            self._in_flight.pop(job_id, None)
            self._cond.notify_all()

    def _make_room(self, target: int) -> int:
        """Evict unprotected files, oldest first, until the cache holds at most ``target`` bytes
        (or nothing evictable is left); return the bytes on disk after."""
        protected = tuple(self._in_flight.values())
        files = []
        total = 0
        if self.cache_dir.exists():
            for path in self.cache_dir.rglob("*"):
                try:
                    if path.is_file() and not path.is_symlink():
                        stat = path.stat()
                        files.append((stat.st_mtime, stat.st_size, path))
                        total += stat.st_size
                except FileNotFoundError:  # deleted meanwhile by a worker
                    continue
        for _mtime, size, path in sorted(files, key=lambda f: f[0]):
            if total <= target:
                break
            if path.suffix == ".lock" or any(path.is_relative_to(p) for p in protected):
                continue
            path.unlink(missing_ok=True)
            total -= size
            log.debug("evicted %s (%d bytes) to keep the cache within its budget", path, size)
        if self.cache_dir.exists():
            for link in self.cache_dir.rglob("*"):  # snapshot links whose blob was evicted
                if link.is_symlink() and not link.exists():
                    link.unlink(missing_ok=True)
        return total
