"""``hubsurvey crossleaks``: a thin layer over :func:`hubsurvey.analysis.crossleaks.crossleaks`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from hubsurvey.analysis.crossleaks import crossleaks as run_crossleaks
from hubsurvey.commands.common import format_table
from hubsurvey.commands.options import MAX_COUNT, MAX_MB, CopyThreshold, Db, at_least, positive
from hubsurvey.core.errors import StoreError
from hubsurvey.core.options import share
from hubsurvey.core.runs import Runs
from hubsurvey.core.store import DEFAULT_DB, Store


def crossleaks(
    copy_threshold: CopyThreshold = 0.8,
    memory_mb: Annotated[int, typer.Option("--memory-mb", help="DuckDB's memory limit for the join, MB (it spills beyond)")] = 2048,
    top: Annotated[int, typer.Option("--top", help="How many leaking pairs to print")] = 10,
    db: Db = Path(DEFAULT_DB),
) -> None:
    """Find leaks across datasets: every test split against every other dataset's splits.

    Joins the per-row fingerprints kept beside the DB (one hash of each row's normalized text),
    classifies each overlap (copy, leak, shared_test, family) and replaces the cross_overlaps and
    dataset_families tables. `run` does this at its end unless --no-crossleaks.
    """
    share("--copy-threshold", copy_threshold)
    positive("--memory-mb", memory_mb, MAX_MB)
    at_least("--top", top, 0, MAX_COUNT)
    if not Path(db).is_file():
        raise StoreError(f"{db}: no such results DB (run `hubsurvey run` or `hubsurvey audit` first)")
    with Store(db) as store:
        with Runs(store).recording("crossleaks", {"copy_threshold": copy_threshold, "memory_mb": memory_mb}) as recording:
            summary = run_crossleaks(store, copy_threshold=copy_threshold, memory_limit=f"{memory_mb}MB",
                                     run_id=recording.run_id)
            recording.counts = summary.as_json()
        leaks = store.query(
            "SELECT test_dataset, test_config, source_dataset, source_config, source_split, rows, test_rows, "
            "round(pct, 2) AS pct FROM cross_overlaps WHERE relation = 'leak' ORDER BY rows DESC, pct DESC, "
            "test_dataset, source_dataset, source_split LIMIT $n", {"n": top})
    typer.echo(summary.line())
    if top and leaks[1]:
        typer.echo(format_table(*leaks))
