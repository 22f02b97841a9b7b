"""The fork server that the measuring processes are made from, locally and on a Dask worker.

forkserver, not fork: forking a process that runs threads (downloads, a Dask client, tqdm) can hand
the child a lock held by a thread that does not exist there, and hang it. The server preloads the
job module once, so each worker starts without importing DuckDB again.
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.context
import multiprocessing.forkserver
import multiprocessing.process
import multiprocessing.util
import os
import shutil
import signal
import tempfile
import threading
from collections.abc import Sequence

from hubsurvey.core.settings import safe_import_path


def start_forkserver(preload: Sequence[str]) -> multiprocessing.context.ForkServerContext:
    """The forkserver context, its server started (once a process) preloading ``preload``.

    - **Its path is the install's.** The server runs as ``python -c``, which puts the working
      folder first on its import path. Started from a folder that holds one named ``hubsurvey`` (a
      clone, seen from the folder it was cloned in), the server imported that folder as the
      package, in place of an editable install, whose finder comes after the path: every job
      failed, its worker dying at start. ``PYTHONSAFEPATH`` keeps the working folder off the
      server's path; its workers take theirs from the process that starts them.
    - **It is deaf to Ctrl-C** (from the main thread): Ctrl-C reaches every process of the
      terminal's process group, and workers that took it would each print a KeyboardInterrupt
      traceback (and the server one of its own while it imports the job module) before the
      coordinator ends the run. Ignored there, it is the coordinator alone that stops: it records
      the run interrupted and terminates the workers. An ignored signal is kept across exec, and
      Python installs its Ctrl-C handler only over the default disposition.
    - **Its socket can be bound** (from the main thread): see :func:`_socket_folder_within_reach`.

    Once the server runs, none of this changes anything."""
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(list(preload))
    main = threading.current_thread() is threading.main_thread()
    if main:
        _socket_folder_within_reach()
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN) if main else None
    try:
        with safe_import_path():
            multiprocessing.forkserver.ensure_running()
    finally:
        if main:
            signal.signal(signal.SIGINT, previous)
    return context


#: The longest path of a Unix socket (``sun_path``: 108 bytes on Linux, 104 on the BSDs and macOS).
_SUN_PATH_MAX = 104


def _socket_folder_within_reach() -> None:
    """Keep the fork server's socket path short enough to bind.

    The server listens on a Unix socket in multiprocessing's temporary folder
    (``$TMPDIR/pymp-XXXXXXXX/listener-XXXXXXXX``). Under a deep ``TMPDIR`` its path passed the
    limit and the run ended with ``AF_UNIX path too long`` (exit 5). As Python 3.14's
    multiprocessing does, a ``TMPDIR`` too deep for it is passed over for the system's temporary
    folder; the folder is removed at exit as multiprocessing removes its own."""
    config = multiprocessing.process.current_process()._config  # type: ignore[attr-defined]
    base = tempfile.gettempdir()
    if config.get("tempdir") is not None or len(base) + len("/pymp-XXXXXXXX/listener-XXXXXXXX") <= _SUN_PATH_MAX:
        return
    for folder in ("/tmp", "/var/tmp", "/usr/tmp"):
        if os.path.isdir(folder) and os.access(folder, os.W_OK | os.X_OK):
            tempdir = tempfile.mkdtemp(prefix="pymp-", dir=folder)
            multiprocessing.util.Finalize(None, shutil.rmtree, args=(tempdir, True), exitpriority=-100)
            config["tempdir"] = tempdir
            return
