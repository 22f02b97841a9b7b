"""``hubsurvey status``: what the DB holds, and how a run in progress is doing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hubsurvey.core import livestate
from hubsurvey.core.errors import StoreError
from hubsurvey.core.runs import Runs
from hubsurvey.core.store import Store


def status(db: str | Path) -> dict[str, Any]:
    """A summary of the DB: last run (the last survey, ``run``; else the last command recorded),
    the latest command when it is another one, queue by status, failures by class, measured rows,
    and the live progress of a run in progress.

    While a run holds the DB, the figures come from its read snapshot (``snapshot`` says which run
    and when) and ``live`` holds its progress from the holder file (at most a second old). A run
    left ``running`` by a process that is gone (``kill -9``) is marked ``interrupted`` first, and
    its leftover holder file is reported under ``interrupted``, never as a run in progress.
    """
    info = livestate.read_holder(db)
    alive = livestate.holder_alive(info)
    store = Store.open_for_reading(db)
    if store._check_version() == 0:  # a DuckDB file, but not hubsurvey's: one line, as every read command
        store.close()
        raise StoreError(f"{db}: holds no hubsurvey results (run `hubsurvey run` or `hubsurvey audit` first)")
    if store.snapshot_of is None and Runs(store).stale():
        store.close()  # repair needs a write: the DB is free, since a read-only open of it succeeded
        with Store(db) as writer:
            Runs(writer).mark_interrupted()
        store = Store.open_for_reading(db)
    with store:
        snapshot = store.snapshot_of
        columns = "run_id, command, status, started_at, finished_at, counts"
        # the last survey (a `run`), which a later notify, crossleaks or audit must not hide; without
        # one, the last command of any kind
        last = store.records(f"SELECT {columns} FROM runs ORDER BY command = 'run' DESC, started_at DESC LIMIT 1")
        latest = store.records(f"SELECT {columns} FROM runs ORDER BY started_at DESC LIMIT 1")
        queue = dict(store.query("SELECT status, count(*) FROM jobs GROUP BY status ORDER BY status")[1])
        failures = store.records(
            "SELECT error_class, count(*) AS jobs, any_value(error_message) AS example FROM jobs "
            "WHERE status = 'failed' GROUP BY error_class ORDER BY jobs DESC, error_class"
        )
        datasets = dict(store.query("SELECT status, count(*) FROM datasets GROUP BY status")[1])
        measured = store.query("SELECT count(*), count(DISTINCT dataset_id) FROM current_measurements")[1][0]
    for record in (*last, *latest):
        if isinstance(record["counts"], str):  # a JSON column reads back as text: decode it once
            record["counts"] = json.loads(record["counts"])
    live = livestate.read_holder(db) if alive else None  # the freshest progress, read last
    return {
        "db": str(db),
        "running": f" ({livestate.describe_holder(live)})" if live else None,
        "live": live,
        "interrupted": info if info and not alive else None,
        "snapshot": {"run_id": snapshot["run_id"], "taken_at": snapshot["snapshot_at"]} if snapshot else None,
        "last_run": last[0] if last else None,
        # the last command of any kind, when it is not last_run (a notify dry run after the survey)
        "latest_command": latest[0] if latest and latest[0]["run_id"] != last[0]["run_id"] else None,
        "queue": queue,
        "failures": failures,
        "datasets": datasets,
        "measurements": {"rows": measured[0], "datasets": measured[1]},
    }

