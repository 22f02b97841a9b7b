"""``hubsurvey publish``: the results dataset (or, with ``--site``, the static site) on the Hub.

A thin layer over :func:`hubsurvey.analysis.publish.publish` and, for ``publish --site``,
:func:`hubsurvey.analysis.site.publish_site`. It reads the results DB only, and writes to the Hub
only with ``--push``.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated

import typer

from hubsurvey.analysis.publish import PublishError
from hubsurvey.analysis.publish import publish as run_publish
from hubsurvey.analysis.site import publish_site as run_publish_site
from hubsurvey.commands.common import open_results
from hubsurvey.commands.options import ReadDb
from hubsurvey.core.errors import BadInputError
from hubsurvey.core.hub import HubClient
from hubsurvey.core.outputs import output_folder
from hubsurvey.core.store import DEFAULT_DB


def publish(
    repo: Annotated[str, typer.Option("--repo", help="Target dataset repo, OWNER/NAME")],
    push: Annotated[bool, typer.Option("--push", help="Upload (default: only build the folder and print the plan)")] = False,
    private: Annotated[bool, typer.Option("--private", help="Create the repo private (an existing repo keeps its visibility)")] = False,
    db: ReadDb = Path(DEFAULT_DB),
    out: Annotated[Path | None, typer.Option("--out", help="Folder to build (default: a folder under the temp dir)")] = None,
    with_report: Annotated[bool, typer.Option("--report/--no-report", help="Include REPORT.md")] = True,
    license: Annotated[str | None, typer.Option("--license", help="License of the results in the card [default: cc-by-4.0]")] = None,
    pretty_name: Annotated[str | None, typer.Option("--pretty-name", help="Title of the results dataset in the card")] = None,
    site: Annotated[bool, typer.Option(
        "--site", help="Publish the static site (`hubsurvey site`) to the static Space --repo instead")] = False,
) -> None:
    """Build the results dataset (Parquet, CSV, card) and, with --push, upload it in one commit."""
    if out is not None:
        output_folder(out)  # before the DB: a file named as the folder is refused first
    if site:
        publish_site(repo, push=push, private=private, db=db, out=out)
        return
    card = {k: v for k, v in (("license", license), ("pretty_name", pretty_name)) if v is not None}
    with open_results(db) as store, _refused_in_one_line():
        result = run_publish(store, repo, out_dir=out, push=push, private=private, report=with_report,
                             client=HubClient() if push else None, **card)
    typer.echo(f"target: dataset {result.repo_id}{' (private)' if private else ''}")
    # a folder of its own (no --out) is removed when publish returns: never print it as if it were there
    typer.echo("folder: temporary, removed (--out DIR keeps it)" if result.folder_removed else f"folder: {result.folder}")
    for f in result.files:
        typer.echo(f"  {f.path_in_repo:40} {f.size:>10} bytes")
    typer.echo(f"  {'total':40} {result.total_size:>10} bytes in {len(result.files)} files")
    _say_push(push, result.unchanged, result.commit_url, "repo",
              f"{len(result.files)} files (changed: {', '.join(result.changed)})")


@contextlib.contextmanager
def _refused_in_one_line() -> Iterator[None]:
    """A publish the Hub or its checks refuse, or a file it cannot write: one line, exit 2."""
    try:
        yield
    except PublishError as e:
        raise BadInputError(" ".join(str(e).split())) from None
    except OSError as e:
        raise BadInputError(f"{type(e).__name__}: {e}") from None


def _say_push(push: bool, unchanged: bool, commit_url: str | None, repo_kind: str, pushed: str) -> None:
    """The last lines of a publish: a dry run, an unchanged repo, or the commit made."""
    if not push:
        typer.echo(f"dry run: nothing uploaded; add --push to create the {repo_kind} and upload these files in one commit")
    elif unchanged:
        typer.echo(f"unchanged: the {repo_kind} already holds exactly these files; no commit made")
    else:
        typer.echo(f"pushed: one commit with {pushed}")
        if commit_url:
            typer.echo(f"commit: {commit_url}")


def publish_site(repo: str, *, push: bool, private: bool, db: Path, out: Path | None) -> None:
    """``publish --site``: build the site with a Space card and, with ``push``, upload it to the
    static Space ``repo`` in one commit (:func:`hubsurvey.analysis.site.publish_site`). Without
    ``--out`` the folder is a temporary one, removed at the end."""
    folder = Path(tempfile.mkdtemp(prefix="hubsurvey-site-")) / "site" if out is None else out
    try:
        with open_results(db) as store, _refused_in_one_line():
            result = run_publish_site(store, repo, folder, push=push, private=private,
                                      client=HubClient() if push else None)
    finally:
        if out is None:
            shutil.rmtree(folder.parent, ignore_errors=True)
    size = sum(f.size for f in result.files)
    typer.echo(f"target: static space {result.repo_id}{' (private)' if private else ''}")
    typer.echo("folder: temporary, removed (--out DIR keeps it)" if out is None else f"folder: {folder}")
    typer.echo(f"  {result.summary.datasets} dataset(s): {len(result.files)} files, {size} bytes")
    _say_push(push, result.unchanged, result.commit_url, "space",
              f"{len(result.files)} files ({len(result.changed)} changed, {len(result.deleted)} deleted)")
