"""``hubsurvey site``: a thin layer over :func:`hubsurvey.analysis.site.build_site`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from hubsurvey.analysis.site import build_site
from hubsurvey.commands.common import open_results
from hubsurvey.commands.options import ReadDb
from hubsurvey.core.errors import BadInputError
from hubsurvey.core.outputs import output_folder
from hubsurvey.core.store import DEFAULT_DB

SiteOut = Annotated[Path, typer.Option("--out", help="Folder of the site (replaced whole if it is a site built before)")]
SiteUrl = Annotated[str | None, typer.Option(
    "--site-url", help="Where the site is served (http or https): each dataset's citable block then gives its page's URL")]
BadgesUrl = Annotated[str | None, typer.Option(
    "--badges-url", help="Where the results dataset (publish) serves its badges/ files, e.g. "
                         "https://huggingface.co/datasets/OWNER/NAME/resolve/main: each dataset then gives its badge's markdown")]


def site(out: SiteOut = Path("site"), db: ReadDb = Path(DEFAULT_DB), site_url: SiteUrl = None,
         badges_url: BadgesUrl = None) -> None:
    """Build a static site of the results: an index of every dataset, and each dataset on the page of its shard.

    Self-contained (no server, no CDN): open <out>/index.html from disk, or serve the folder as a
    static Space (`publish --site`). The searchable table needs JavaScript; without it the index
    shows the headline figures and links to a plain list of every dataset page.
    """
    output_folder(out)  # before the DB: a file named as the folder is refused first
    with open_results(db) as store:
        try:
            summary = build_site(store, out, progress=lambda done, total: typer.echo(f"pages: {done} of {total}", err=True),
                                 site_url=site_url, badges_url=badges_url)
        except OSError as e:
            raise BadInputError(f"{out}: {e.strerror or e}") from None
    typer.echo(summary.line())
