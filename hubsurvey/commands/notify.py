"""``hubsurvey notify``: a thin layer over :func:`hubsurvey.analysis.notify.notify` (the opt-in Hub bot)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from hubsurvey.analysis.notify import notify as run_notify
from hubsurvey.analysis.notify import read_list
from hubsurvey.commands.options import MAX_COUNT, Db, at_least, percentage
from hubsurvey.core.errors import StoreError
from hubsurvey.core.hub import HubClient
from hubsurvey.core.outputs import output_folder
from hubsurvey.core.runs import Runs
from hubsurvey.core.store import DEFAULT_DB, Store

DEFAULT_OUT = Path("hubsurvey-notify")


def notify(
    db: Db = Path(DEFAULT_DB),
    min_contaminated: Annotated[float, typer.Option(
        "--min-contaminated", help="Notify datasets whose worst contaminated_test_pct is at least this (%)")] = 5.0,
    profile: Annotated[str, typer.Option(
        "--profile", help="Key profile of the headline figure: raw or normalized")] = "normalized",
    max_posts: Annotated[int, typer.Option("--max", help="At most N messages (drafted or posted) per run")] = 10,
    allow: Annotated[Path | None, typer.Option(
        "--allow", help="Only datasets in this file (one owner/name, owner or glob a line)")] = None,
    deny: Annotated[Path | None, typer.Option("--deny", help="Never datasets in this file (same format)")] = None,
    out: Annotated[Path, typer.Option("--out", help="Folder of the messages, one <owner>__<name>.md each")] = DEFAULT_OUT,
    post: Annotated[bool, typer.Option(
        "--post", help="Post the messages as Hub discussions (needs HF_TOKEN; default: dry run, nothing touches the Hub)")] = False,
    site_url: Annotated[str | None, typer.Option(
        "--site-url", help="Where the survey's site (`hubsurvey site`) is served: each message links the dataset's page "
        "there")] = None,
) -> None:
    """Draft (and with --post, open) one Hub discussion per dataset at or above the threshold.

    Dry run by default: each message is written to --out for review and nothing touches the Hub.
    Never posts twice for one revision (the notifications table and the Hub's own discussions list),
    nor on gated, private, denied or opted-out datasets (card tag hubsurvey-opt-out).
    """
    at_least("--max", max_posts, 0, MAX_COUNT)
    percentage("--min-contaminated", min_contaminated)
    output_folder(out)
    allowed, denied = read_list(allow), read_list(deny) or []
    if not Path(db).is_file():
        raise StoreError(f"{db}: no such results DB (run `hubsurvey run` or `hubsurvey audit` first)")
    client = HubClient() if post else None
    args = {"min_contaminated": min_contaminated, "profile": profile, "max": max_posts, "allow": str(allow) if allow else None,
            "deny": str(deny) if deny else None, "out": str(out), "post": post, "site_url": site_url}
    with Store(db) as store, Runs(store).recording("notify", args) as recording:
        result = run_notify(store, out_dir=out, profile=profile, min_contaminated=min_contaminated, max_posts=max_posts,
                            allow=allowed, deny=denied, post=post, client=client, site_url=site_url,
                            run_id=recording.run_id)
        recording.counts = result.as_json()
    for n in result.notices:
        where = n.discussion_url or (str(n.path) if n.path else "")
        why = f": {n.reason}" if n.reason else ""
        typer.echo(f"{n.status:8} {n.candidate.dataset_id} @ {n.candidate.revision_sha[:12]} "
                   f"({n.candidate.figure} {n.candidate.contaminated_pct:g}%, {n.candidate.verdict}){why}"
                   f"{'  ' + where if where else ''}")
    counts = result.as_json()
    typer.echo(f"notify: {counts['candidates']} dataset(s) at or above {min_contaminated:g}% ({profile} profile); "
               f"{counts['drafted']} drafted, {counts['posted']} posted, {counts['skipped']} skipped, "
               f"{counts['failed']} failed, {counts['left']} left for the next run (--max {max_posts})")
    if not post:
        typer.echo(f"dry run: nothing was posted; review the messages in {out}/, then add --post")
    if counts["failed"]:
        raise typer.Exit(1)
