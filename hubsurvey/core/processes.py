"""Whether a process still runs: shared by the runs table and the live state, which import nothing
of each other through it."""

from __future__ import annotations


def process_alive(pid: int, *, created_at: float | None = None, started_before: float | None = None) -> bool:
    """Whether process ``pid`` still runs and is the one meant: not a zombie, and not a reused pid
    (a process created at another time than ``created_at``, or after ``started_before``)."""
    import psutil

    try:
        process = psutil.Process(pid)
        if process.status() == psutil.STATUS_ZOMBIE:
            return False
        if created_at is not None and abs(process.create_time() - created_at) > 1:
            return False
        if started_before is not None and process.create_time() > started_before + 1:
            return False
    except psutil.NoSuchProcess:
        return False
    except psutil.Error:  # no permission to look: assume it is alive
        return True
    return True
