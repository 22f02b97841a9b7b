"""``hubsurvey site``: a thin layer over :func:`hubsurvey.analysis.site.build_site`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from hubsurvey.commands.options import ReadDb
from hubsurvey.core.errors import BadInputError
from hubsurvey.core.outputs import output_folder
from hubsurvey.core.store import DEFAULT_DB

SiteOut = Annotated[Path, typer.Option("--out", help="Folder of the site (replaced whole if it is a site built before)")]
SiteUrl = Annotated[str | None, typer.Option(
    "--site-url", help="Where the site is served (http or https): each dataset page then gives its badge's markdown")]


def site(out: SiteOut = Path("site"), db: ReadDb = Path(DEFAULT_DB), site_url: SiteUrl = None) -> None:
    """Build a static site of the results: an index of every dataset and one page per dataset.

    Self-contained (no server, no CDN): open <out>/index.html from disk, or serve the folder as a
    static Space (`publish --site`). The searchable table needs JavaScript; without it the index
    shows the headline figures and links to a plain list of every dataset page.
    """
    from hubsurvey.analysis.site import build_site
    from hubsurvey.commands.analysis import open_results

    output_folder(out)  # before the DB: a file named as the folder is refused first
    store = open_results(db)
    try:
        summary = build_site(store, out, progress=lambda done, total: typer.echo(f"pages: {done} of {total}", err=True),
                             site_url=site_url)
    except OSError as e:
        raise BadInputError(f"{out}: {e.strerror or e}") from None
    finally:
        store.close()
    typer.echo(summary.line())


def publish_site(repo: str, *, push: bool, private: bool, db: Path, out: Path | None) -> None:
    """``publish --site``: build the site with a Space card and, with ``push``, upload it to the
    static Space ``repo`` in one commit (:func:`hubsurvey.analysis.site.publish_site`). Without
    ``--out`` the folder is a temporary one, removed at the end."""
    import shutil
    import tempfile

    from hubsurvey.analysis.publish import PublishError
    from hubsurvey.analysis.site import publish_site as run_publish_site
    from hubsurvey.commands.analysis import open_results

    folder = Path(tempfile.mkdtemp(prefix="hubsurvey-site-")) / "site" if out is None else out
    store = open_results(db)
    try:
        client = None
        if push:
            from hubsurvey.core.hub import HubClient

            client = HubClient()
        result = run_publish_site(store, repo, folder, push=push, private=private, client=client)
    except PublishError as e:
        raise BadInputError(" ".join(str(e).split())) from None
    except OSError as e:
        raise BadInputError(f"{type(e).__name__}: {e}") from None
    finally:
        store.close()
        if out is None:
            shutil.rmtree(folder.parent, ignore_errors=True)
    size = sum(f.size for f in result.files)
    typer.echo(f"target: static space {result.repo_id}{' (private)' if private else ''}")
    typer.echo(f"folder: {folder}{' (temporary, removed)' if out is None else ''}")
    typer.echo(f"  {result.summary.datasets} dataset(s): {len(result.files)} files, {size} bytes")
    if not push:
        typer.echo("dry run: nothing uploaded; add --push to create the space and upload these files in one commit")
    elif result.unchanged:
        typer.echo("unchanged: the space already holds exactly these files; no commit made")
    else:
        typer.echo(f"pushed: one commit with {len(result.files)} files ({len(result.changed)} changed, "
                   f"{len(result.deleted)} deleted)")
        if result.commit_url:
            typer.echo(f"commit: {result.commit_url}")
