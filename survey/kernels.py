"""The compiled passes a run uses, compiled once per install, before its jobs start.

numba compiles a pass the first time a process calls it and keeps it in its on-disk cache
(:mod:`hubsurvey.core.compiled`): beside the installed modules, or under ``NUMBA_CACHE_DIR``.
Without this step, the first run of an install had every worker compile every pass itself, at
once, silently, inside its first job (and that job's time in the ETA). Here the run compiles them
before its first job, in child processes of their own, one per group of passes, side by side on
the machine's cores, and says so in one line; the jobs then load them from the cache.

Only the groups the run uses are compiled (:func:`groups_for`): the fingerprint's always, the
near-duplicate passes unless ``--no-near``, the contamination check's with ``--benchmarks``. Each
group compiles by running its real code on the generated sample dataset (``survey/sample.py``),
so the passes get the argument types a job gives them. A group compiled by this install and
version is marked done in the cache folder (:func:`hubsurvey.core.compiled.cache_folder`) and
not compiled again; a kernel's source edited since is compiled again (the mark names the
sources' sizes and times, as numba's own cache index does).
"""

from __future__ import annotations

import hashlib
import logging
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

#: each group of compiled passes: the modules holding its kernels (whose sources key its mark)
GROUPS: dict[str, tuple[str, ...]] = {
    "fingerprint": ("hubsurvey.core.fingerprint", "hubsurvey.core.compiled"),
    "near": ("hubsurvey.survey.near", "hubsurvey.survey.passages", "hubsurvey.core.compiled"),
    "contamination": ("hubsurvey.survey.passages", "hubsurvey.survey.contamination", "hubsurvey.core.compiled"),
}

#: the line a run prints before it compiles
ANNOUNCE = "compiling the {what} kernels once for this install, about {seconds} s"
#: the compile's wall time on 2 idle cores: its children took 22.5 (fingerprint), 34.5 (near-duplicates,
#: then the sample's whole job) and 3.6 (contamination) CPU-seconds, side by side (docs/benchmarks.md)
TYPICAL_SECONDS = 35


def groups_for(*, near: bool, benchmarks: bool) -> tuple[str, ...]:
    """The groups of passes a run's jobs use."""
    return ("fingerprint", *(("near",) if near else ()), *(("contamination",) if benchmarks else ()))


def _mark(group: str) -> Path | None:
    """The file saying ``group`` is compiled for this install (None: no writable cache folder)."""
    import importlib.util

    import numba

    from hubsurvey import __version__
    from hubsurvey.core.compiled import cache_folder

    stamp = hashlib.sha256()
    stamp.update(f"{__version__} {numba.__version__} {sys.version} {sys.executable}".encode())
    for module in GROUPS[group]:
        spec = importlib.util.find_spec(module)
        origin = spec.origin if spec is not None else None
        if origin is None:
            return None
        stat = os.stat(origin)
        stamp.update(f"{origin} {stat.st_size} {stat.st_mtime_ns}".encode())
    folder = cache_folder(__file__)
    return folder / f"kernels-{group}-{stamp.hexdigest()[:16]}.done" if folder is not None else None


def to_compile(groups: Sequence[str]) -> list[str]:
    """The groups among ``groups`` that this install has not compiled yet. Without a cache folder
    it can write (a read-only install and home), none: each process compiles what it uses."""
    marks = {group: _mark(group) for group in groups}
    return [group for group, mark in marks.items() if mark is not None and not mark.exists()]


def compile_groups(groups: Sequence[str], *, say: Callable[[str], None] | None = None) -> float:
    """Compile ``groups`` (those not compiled yet), each in a child process, side by side; return
    the seconds it took (0 when there was nothing to compile). ``say`` gets the one line announcing
    it. A group whose child fails is left to the jobs, which compile what they use as they always
    could."""
    left = to_compile(groups)
    if not left:
        return 0.0
    if say is not None:
        say(ANNOUNCE.format(what=" and ".join(_WORDS[g] for g in left), seconds=TYPICAL_SECONDS))
    started = time.perf_counter()
    # sessions of their own: Ctrl-C reaches the run alone, which ends them (below)
    children = [subprocess.Popen([sys.executable, "-m", __name__, group], stdin=subprocess.DEVNULL,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
                for group in left]
    try:
        for group, child in zip(left, children):
            _, err = child.communicate()
            if child.returncode != 0:
                last = (err.decode(errors="replace").strip().splitlines() or [""])[-1]
                log.warning("compiling the %s kernels failed (exit %s: %s); the jobs compile what they use",
                            _WORDS[group], child.returncode, last)
    finally:
        for child in children:  # an interrupted run: its children go with it
            if child.poll() is None:
                child.kill()
                child.wait()
    return time.perf_counter() - started


_WORDS = {"fingerprint": "fingerprint", "near": "near-duplicate", "contamination": "contamination"}


def compile_group(group: str) -> None:
    """Run ``group``'s passes on the sample dataset as a job runs them (in this process), then mark
    the group compiled."""
    from hubsurvey.survey.sample import write_sample
    from hubsurvey.survey.sources import open_source

    with tempfile.TemporaryDirectory(prefix="hubsurvey-kernels-") as tmp:
        source = open_source(str(write_sample(Path(tmp) / "hubsurvey__sample")))
        _run_group(group, source.load(source.configs()[0]))
    mark = _mark(group)
    if mark is not None:
        mark.touch()


def _run_group(group: str, data: Any) -> None:
    from hubsurvey.core.figures import methods_measured
    from hubsurvey.survey.measure import fingerprint_split, measure_config

    if group == "fingerprint":
        for split in data.splits.values():
            fingerprint_split(split)
        mark = _mark(group)  # the near group's child waits for it (below)
        if mark is not None:
            mark.touch()
        measure_config(data, n_configs=1, source="hub", methods=list(methods_measured(near=False)))
    elif group == "near":
        from hubsurvey.survey import near

        near.compile_passes(python_strings=True)
        # A job of the near method also fingerprints its splits: once the fingerprint group's child
        # has cached its passes, the whole job on the sample compiles what else it uses (the passes'
        # variants for the arrays it reads), and nothing twice.
        deadline = time.monotonic() + 600
        while "fingerprint" in to_compile(["fingerprint"]) and time.monotonic() < deadline:
            time.sleep(0.2)
        measure_config(data, n_configs=1, source="hub", methods=list(methods_measured(near=True)))
    elif group == "contamination":
        import pyarrow.parquet as pq

        from hubsurvey.survey.contamination import Benchmark, config_rows, index_from_tables

        test = pq.read_table(data.splits["test"].files[0], columns=["text"]).slice(0, 50)
        index = index_from_tables([(Benchmark("hubsurvey/kernels", "default", "test", ("text",)), None, test)])
        config_rows(data, ["text"], index)
    else:
        raise ValueError(f"no group of compiled passes named {group!r} (have: {', '.join(GROUPS)})")


if __name__ == "__main__":  # one group, in a child of compile_groups
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C stops the run, which ends this child
    compile_group(sys.argv[1])
