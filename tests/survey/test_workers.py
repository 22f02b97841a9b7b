"""The local executor's worker processes, as a run starts and ends them."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

# A run whose pool lost a worker hard (the pool ends a job past its timeout with SIGTERM, then
# SIGKILL): the worker had launched numba's threads, as every measurement does.
RUN = textwrap.dedent("""
    import os, signal, sys

    def measure_then_die():
        import numba
        numba.set_num_threads(1)  # what a job's near stage does first: numba launches its threads
        os.kill(os.getpid(), signal.SIGKILL)

    if __name__ == "__main__":
        from hubsurvey.core.hub import HubClient
        from hubsurvey.survey.executors.local import LocalExecutor

        executor = LocalExecutor(HubClient(token=False, rate=0, file_rate=0), workers=1, budget=None)
        future = executor._pool.schedule(measure_then_die)
        try:
            future.result(timeout=60)
        except Exception as e:
            print("worker ended:", type(e).__name__)
        executor.close()
""")


@pytest.mark.slow
def test_a_worker_ended_hard_leaves_no_semaphore_for_the_run_to_warn_of(tmp_path):
    """numba guards its thread launch with a named semaphore when the process's start method is a
    fork one, as a forkserver's child inherits; a worker killed before its exit hooks never released
    it, and the run ended with the resource tracker's leaked-semaphore warning on stderr."""
    script = tmp_path / "run.py"
    script.write_text(RUN)
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "worker ended:" in done.stdout, done.stdout
    assert "leaked semaphore" not in done.stderr, done.stderr
    assert "resource_tracker" not in done.stderr, done.stderr


# A worker that reports where it imported hubsurvey from, the module the server preloads included.
WHERE = textwrap.dedent("""
    def where():
        import hubsurvey
        import hubsurvey.survey.jobs  # noqa: F401
        return hubsurvey.__file__

    if __name__ == "__main__":
        from hubsurvey.core.hub import HubClient
        from hubsurvey.survey.executors.local import LocalExecutor

        executor = LocalExecutor(HubClient(token=False, rate=0, file_rate=0), workers=1, budget=None)
        try:
            print("worker imports hubsurvey from:", executor._pool.schedule(where).result(timeout=60))
        finally:
            executor.close()
""")


@pytest.mark.slow
def test_a_run_started_beside_a_folder_named_hubsurvey_has_workers_that_import_the_install(tmp_path):
    """Run from the folder a clone was made in, a run's fork server (``python -c``, the working
    folder first on its path) imported the clone's folder as the package, in place of the editable
    install, and every worker died at start: every job of ``hubsurvey demo`` failed."""
    import hubsurvey

    (tmp_path / "scripts").mkdir()
    (tmp_path / "scripts" / "run.py").write_text(WHERE)
    work = tmp_path / "work"
    (work / "hubsurvey" / "docs").mkdir(parents=True)  # a clone's folder: no __init__.py at its top
    done = subprocess.run([sys.executable, str(tmp_path / "scripts" / "run.py")], capture_output=True, text=True,
                          timeout=120, cwd=work)
    assert done.returncode == 0, done.stderr[-2000:]
    assert f"worker imports hubsurvey from: {hubsurvey.__file__}" in done.stdout, done.stdout
