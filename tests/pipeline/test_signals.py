"""Ctrl-C and SIGTERM, sent for real to a `hubsurvey demo` or `hubsurvey run` subprocess while its
jobs run: one closing line, exit 130 or 143, no traceback from any process (the coordinator, the
fork server, the workers), no claim of a report it did not write, and the run recorded
``interrupted`` with its jobs pending."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hubsurvey.core.store import Store
from hubsurvey_standin import Faults, Scope, StandinHub
from hubsurvey_standin.catalog import write_hub_root

#: a line of hubsurvey's own log (hubsurvey.logs: off a terminal, timestamped)
LOG_LINE = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d{4} (INFO|WARNING) hubsurvey[.\w]*: ")


def _phase(db: Path) -> str | None:
    """The running survey's phase, from its holder file (None before it exists)."""
    try:
        return json.loads(Path(f"{db}.run.json").read_text()).get("phase")
    except (OSError, ValueError):
        return None


def _stop_while_measuring(args: list[str], db: Path, sig: signal.Signals, *, cwd: Path,
                          env: dict[str, str] | None = None) -> tuple[int, str, str]:
    """Start ``hubsurvey ARGS`` in a session of its own, wait until its jobs run, send ``sig`` to
    its whole process group (as a terminal's Ctrl-C or `systemctl stop` do), and return what it did."""
    proc = subprocess.Popen([sys.executable, "-m", "hubsurvey.cli", *args], cwd=cwd, env={**os.environ, **(env or {})},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        deadline = time.monotonic() + 600  # a fresh install compiles its kernels first
        while _phase(db) != "measuring" and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert proc.poll() is None, proc.communicate()
        time.sleep(1.0)  # the workers have started their first jobs
        os.killpg(proc.pid, sig)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
    return proc.returncode, out, err


def _assert_stopped(db: Path, code: int, out: str, err: str, expected: int, resume: str) -> None:
    assert code == expected, (out, err[-3000:])
    assert "Traceback" not in err and "Traceback" not in out, err[-3000:]
    # the run's own log lines (the compile's announcement, progress), then the one closing line:
    # nothing from the workers, the fork server or a library
    lines = [line for line in err.strip().splitlines() if not LOG_LINE.match(line)]
    assert len(lines) == 1 and err.strip().splitlines()[-1] == lines[0], err[-3000:]
    line = lines[0]
    assert line.startswith("interrupted: ") and f"resume with `{resume}" in line, line
    with Store(db, read_only=True) as store:
        runs = store.records("SELECT status, error_class FROM runs WHERE command = 'run'")
        pending = store.query("SELECT count(*) FROM jobs WHERE status = 'pending'")[1][0][0]
        running = store.query("SELECT count(*) FROM jobs WHERE status = 'running'")[1][0][0]
    assert runs == [{"status": "interrupted", "error_class": None}]
    assert running == 0 and pending > 0
    assert f"{pending} job{'s' if pending != 1 else ''} left pending" in line


@pytest.mark.parametrize("sig, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
@pytest.mark.slow
def test_the_demo_stopped_while_measuring_ends_in_one_line(tmp_path, sig, code):
    db, report = tmp_path / "demo.duckdb", tmp_path / "report"
    exit_code, out, err = _stop_while_measuring(["demo", "--db", str(db), "--report-dir", str(report)], db, sig,
                                                cwd=tmp_path)
    _assert_stopped(db, exit_code, out, err, code, f"hubsurvey demo --db {db}")
    assert "demo results" not in out and "report:" not in out  # the report was never written
    assert not report.exists()
    left = sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("demo.duckdb"))
    assert set(left) <= {"demo.duckdb", "demo.duckdb.lock", "demo.duckdb.fingerprints"}, left


CONFIGS = 16


def _slow_hub(tmp_path: Path) -> Path:
    import pyarrow as pa

    files = {f"c{i}/{split}/0000.parquet": pa.table({"text": [f"{split} {i} {j}" for j in range(200)] + ["same"],
                                                     "label": [j % 2 for j in range(201)]})
             for i in range(CONFIGS) for split in ("train", "test")}
    return write_hub_root(tmp_path / "hub", {"slow/ds": files})


@pytest.mark.slow
def test_a_run_stopped_by_ctrl_c_ends_in_one_line_and_resumes(tmp_path):
    db = tmp_path / "r.duckdb"
    args = ["run", "--db", str(db), "--rate", "0", "--file-rate", "0", "--workers", "2", "--report-dir", str(tmp_path / "out")]
    # each file answers in 0.4 s: the run is still measuring when the signal comes
    slow = Faults(slow_ms=400, scope=Scope(categories=frozenset({"resolve_get", "resolve_head"})))
    with StandinHub(_slow_hub(tmp_path), faults=slow) as hub:
        env = {"HF_ENDPOINT": hub.url, "HUBSURVEY_CACHE_DIR": str(tmp_path / "cache")}
        exit_code, out, err = _stop_while_measuring(args, db, signal.SIGINT, cwd=tmp_path, env=env)
        _assert_stopped(db, exit_code, out, err, 130, "hubsurvey run --db")
        # what it says resumes it: the same command takes the pending jobs to their end
        again = subprocess.run([sys.executable, "-m", "hubsurvey.cli", *args], cwd=tmp_path, env={**os.environ, **env},
                               capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stderr[-3000:]
    with Store(db, read_only=True) as store:
        assert store.query("SELECT status, count(*) FROM jobs GROUP BY status")[1] == [("done", CONFIGS)]


@pytest.mark.slow
def test_ctrl_c_while_the_hub_holds_a_resolution_unanswered_ends_the_crawl_at_once(tmp_path):
    """The crawl's resolutions run in threads: a request the Hub accepted and never answers would
    hold Ctrl-C until its deadline (60 s), were the threads waited for. They are not: the crawl
    ends in seconds, in one line, exit 130, and records the run interrupted."""
    db = tmp_path / "r.duckdb"
    hang = Faults(hang_every=1, scope=Scope(categories=frozenset({"info", "tree"})))
    with StandinHub(_slow_hub(tmp_path), faults=hang) as hub:
        proc = subprocess.Popen([sys.executable, "-m", "hubsurvey.cli", "crawl", "--db", str(db), "--rate", "0"],
                                cwd=tmp_path, env={**os.environ, "HF_ENDPOINT": hub.url}, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, start_new_session=True)
        try:
            deadline = time.monotonic() + 120
            while not hub.stats()["faults_injected"] and proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.05)
            assert proc.poll() is None and hub.stats()["faults_injected"], proc.communicate()
            time.sleep(0.5)
            sent = time.monotonic()
            os.killpg(proc.pid, signal.SIGINT)
            _, err = proc.communicate(timeout=120)
            took = time.monotonic() - sent
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.communicate()
    assert proc.returncode == 130, err[-3000:]
    assert took < 15, f"the crawl took {took:.1f} s to end after Ctrl-C"
    lines = [line for line in err.strip().splitlines() if not LOG_LINE.match(line)]
    assert len(lines) == 1 and lines[0].startswith("interrupted: ") and "Traceback" not in err, err[-3000:]
    with Store(db, read_only=True) as store:
        assert store.records("SELECT status FROM runs WHERE command = 'crawl'") == [{"status": "interrupted"}]
