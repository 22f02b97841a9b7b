"""hubsurvey site: the static site's figures equal the DB's, every link resolves, hostile names stay
text, every page has its history and split fingerprints, and publish --site pushes it
as a static Space to the stand-in. The browser's side is tests/analysis/test_site_browser.py."""

from __future__ import annotations

import json
import re
from html import unescape
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
from markupsafe import escape
from test_analysis_fixtures import T0, audit_folder, build_planted_db, write_folder
from typer.testing import CliRunner

from hubsurvey.analysis.findings import create_views
from hubsurvey.analysis.site import (
    GLOSSARY,
    INDEX_COLUMNS,
    MARKER,
    _js_json,
    build_site,
    dataset_anchor,
    dataset_href,
    dataset_page_path,
    href,
    is_site_file,
)
from hubsurvey.analysis.verdicts import dataset_verdict
from hubsurvey.cli import app
from hubsurvey.core import figures
from hubsurvey.core.errors import BadInputError
from hubsurvey.core.store import Store, insert

runner = CliRunner()
#: A name that would break out of an attribute, a cell or a script if it were not escaped.
HOSTILE_ID = "evil/<script>alert('x')</script>\"</td><td>"
HOSTILE_CONFIG = "cfg</td><script>alert(\"c\")</script>'"


# --- the pages, as a browser's parser reads them ----------------------------------------------------


class Page(HTMLParser):
    """What a test reads from one page: its links, its scripts, the text of every element with a
    ``data-*`` marker, and all of its text."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.links: list[str] = []
        self.scripts: list[dict[str, str | None]] = []
        self.marked: dict[tuple[str, str], list[str]] = {}
        self.text: list[str] = []
        self._open: list[tuple[str, str] | None] = []
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        for name in ("href", "src"):
            if a.get(name):
                self.links.append(a[name])  # type: ignore[arg-type]
        if tag == "script":
            self.scripts.append(a)
        marker = next(((k, v or "") for k, v in attrs if k in ("data-column", "data-figure", "data-verdict-count",
                                                               "data-verdict", "data-fingerprint", "data-field")), None)
        if tag not in ("br", "meta", "link", "input", "img"):
            self._open.append(marker)
            if marker:
                self.marked.setdefault(marker, []).append("")

    def handle_endtag(self, tag: str) -> None:
        if tag not in ("br", "meta", "link", "input", "img") and self._open:
            self._open.pop()

    def handle_data(self, data: str) -> None:
        self.text.append(data)
        for marker in self._open:
            if marker:
                self.marked[marker][-1] += data

    def value(self, attr: str, name: str) -> list[str]:
        return [v.strip() for v in self.marked.get((attr, name), [])]


def read_page(path: Path) -> Page:
    return Page(path.read_text(encoding="utf-8"))


def index_data(site: Path) -> list[dict]:
    """Every row of the index's data files, as site.js receives them."""
    rows = []
    for path in sorted((site / "data").glob("index-*.js"), key=lambda p: int(p.stem.split("-")[1])):
        match = re.fullmatch(r"hubsurvey\.add\((\d+), (\d+), (.*)\);\n", path.read_text(encoding="utf-8"), re.DOTALL)
        assert match, path
        rows += [dict(zip(INDEX_COLUMNS, r)) for r in json.loads(match.group(3))]
    return rows


def article(site: Path, dataset_id: str) -> str:
    """A dataset's article on its shard page, as HTML."""
    text = (site / dataset_page_path(dataset_id)).read_text(encoding="utf-8")
    start = text.index(f'<article class="dataset" id="{escape(dataset_anchor(dataset_id))}"')
    return text[start:text.index("</article>", start)]


def page_of(site: Path, dataset_id: str) -> Page:
    return Page(article(site, dataset_id))


def _ids(path: Path) -> set[str]:
    return set(re.findall(r' id="([^"]*)"', path.read_text(encoding="utf-8")))


def broken_links(site: Path) -> list[str]:
    """Every local link of every page that names no file of the site (or leaves the site), or a
    fragment that names no element of its page."""
    broken = []
    root = site.resolve()
    for page in site.rglob("*.html"):
        for link in read_page(page).links:
            url = urlsplit(link)
            if url.scheme in ("http", "https"):
                continue
            assert not url.scheme, f"{page}: {link}"  # no javascript:, data: or file: links
            target = (page.parent / unquote(url.path)).resolve() if url.path else page.resolve()
            if not target.is_relative_to(root) or not target.is_file():
                broken.append(f"{page.relative_to(site)} -> {link}")
            elif url.fragment and str(escape(unquote(url.fragment))) not in _ids(target):
                broken.append(f"{page.relative_to(site)} -> {link} (no such id)")
    return broken


# --- paths and the data file (no DB) -------------------------------------------------------------------


@pytest.mark.parametrize("name", ["..", "../../etc/passwd", "owner/name", "a/../../b", "%2e%2e/x", "x" * 600,
                                  HOSTILE_ID, "ü/名前", "/abs"])
def test_a_dataset_page_never_leaves_its_folder_and_its_link_names_it(tmp_path, name):
    path = dataset_page_path(name)
    assert re.fullmatch(r"d/[0-9a-f]{3}\.html", path)  # a shard's page: 4,096 at most, whatever the Hub holds
    target = (tmp_path / path).resolve()
    assert target.parent == (tmp_path / "d").resolve()
    assert unquote(href(path)) == path
    link = urlsplit(dataset_href(name))
    assert unquote(link.path) == path and link.fragment == dataset_anchor(name)
    assert re.fullmatch(r"[A-Za-z0-9._~:-]+", link.fragment)  # safe in a fragment and an id, as written
    assert dataset_anchor(name) != dataset_anchor(name + "x") and dataset_anchor(name) == dataset_anchor(name)


def test_anchors_are_one_to_one():
    names = ["a/b", "a:2Fb", "a%2Fb", "a_2Fb", "a.b", "A/b"]
    assert len({dataset_anchor(n) for n in names}) == len(names)


def test_the_data_file_cannot_close_a_tag():
    text = _js_json([["</script><script>alert(1)</script>", "a&b>c"]])
    assert "<" not in text and ">" not in text and "&" not in text
    assert json.loads(text) == [["</script><script>alert(1)</script>", "a&b>c"]]


@pytest.mark.slow
def test_a_folder_that_is_not_a_site_is_never_overwritten(tmp_path):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "thesis.tex").write_text("precious")
    with Store(tmp_path / "r.duckdb") as store, pytest.raises(BadInputError, match="not a site hubsurvey built"):
        build_site(store, out)
    assert (out / "thesis.tex").read_text() == "precious"
    with Store(tmp_path / "r.duckdb") as store, pytest.raises(BadInputError, match="no measurements"):
        build_site(store, tmp_path / "new")
    assert not (tmp_path / "new").exists()


def test_the_space_owns_only_what_the_site_writes():
    assert all(is_site_file(p) for p in ("index.html", "README.md", "d/abc.html", "list/1.html", "data/index-0.js",
                                         "site.js", "site.css", GLOSSARY, MARKER))
    assert not any(is_site_file(p) for p in ("app.py", "notes/d/x.html", "LICENSE", "dx.html"))


# --- a site of the planted DB ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    root = tmp_path_factory.mktemp("site-planted")
    db = build_planted_db(root / "db")
    with Store(db, read_only=True) as store:
        summary = build_site(store, root / "site")
    return db, root / "site", summary


def _plain_per_dataset(db: Path) -> dict[str, dict]:
    """Per dataset, from current_measurements alone, in Python: the LLE text leaks and test
    duplicates summed over configs (a config's text figures once), for the headline."""
    with Store(db, read_only=True) as store:
        rows = store.records("SELECT dataset_id, config, text_leaks_train_wrt_test AS lt, "
                             "text_leaks_validation_wrt_test AS lv, text_duplication_test AS dt FROM current_measurements")
    configs: dict[tuple[str, str], dict] = {}
    for r in rows:
        configs[(r["dataset_id"], r["config"])] = r
    out: dict[str, dict] = {}
    for (dataset_id, _), r in configs.items():
        d = out.setdefault(dataset_id, {"leaks": None, "dups": None})
        for key, value in (("leaks", r["lt"]), ("leaks", r["lv"]), ("dups", r["dt"])):
            if value is not None:
                d[key] = (d[key] or 0) + value
    return out


@pytest.mark.slow
def test_the_headline_figures_equal_the_db(planted):
    db, site, summary = planted
    index = read_page(site / "index.html")
    per_dataset = _plain_per_dataset(db)
    n = len(per_dataset)
    assert summary.datasets == n == 4 and summary.dataset_pages == len({dataset_page_path(d) for d in per_dataset})
    assert index.value("data-figure", "datasets") == [str(n)]
    leaks = [d for d in per_dataset.values() if d["leaks"] is not None]
    dups = [d for d in per_dataset.values() if d["dups"] is not None]
    assert index.value("data-figure", "pct_with_leaks") == [f"{100 * sum(d['leaks'] > 0 for d in leaks) / len(leaks):.2f}%"]
    assert index.value("data-figure", "pct_with_test_duplicates") == [
        f"{100 * sum(d['dups'] > 0 for d in dups) / len(dups):.2f}%"]
    with Store(db, read_only=True) as store:
        create_views(store)
        verdicts = dict(store.query("SELECT dataset_id, verdict FROM findings_dataset_verdict")[1])
    for verdict in ("clean", "minor", "caution", "unreliable"):
        assert index.value("data-verdict-count", verdict) == [str(sum(v == verdict for v in verdicts.values()))]
    # the table's data: one row per dataset, its verdict, linked to its page
    rows = index_data(site)
    assert {r["id"]: r["verdict"] for r in rows} == verdicts
    for r in rows:
        assert r["href"] == dataset_href(r["id"]) and (site / unquote(urlsplit(r["href"]).path)).is_file()
        assert page_of(site, r["id"]).value("data-verdict", r["verdict"]) == [r["verdict"]]


def figure_rows(html: str) -> dict[tuple[str, str], dict[str, list[str]]]:
    """Per (config, method), each figure row's name and values, as a dataset's article shows them."""
    out: dict[tuple[str, str], dict[str, list[str]]] = {}
    for config_html in html.split('<section class="config">')[1:]:
        config = unescape(re.search(r'<span class="config-name">(.*?)</span>', config_html).group(1))
        table = config_html.split('<table class="figures">')[1].split("</table>")[0]
        for method, body in re.findall(r'<tbody data-method="([^"]+)">(.*?)(?=<tbody|$)', table, re.DOTALL):
            rows = re.findall(r"^<tr><th>([^<]+)((?:<td>[^<\n]*)+)$", body, re.MULTILINE)
            out[(config, method)] = {unescape(name): values.split("<td>")[1:] for name, values in rows}
    return out


#: A page shows an LLE figure's two keys and an exact figure's two key profiles in one cell.
PAGE_TWINS = {figures.LLE_METHOD: ("text_", "text_and_label_"), figures.EXACT_METHOD: ("raw_", "normalized_")}


def shown_values(method: str, name: str, cell: str, row: dict) -> dict[str, str]:
    """Read one cell of a figure row back into the registry's columns and their published values:
    ``a`` or ``a · b`` names the count (or value) column and its percentage (``a_pct`` when the
    registry has it, else ``b``), ``x (y)`` the two values, ``first / second`` the twins' (one value:
    both twins agree)."""
    columns = {c.name: c for c in figures.figure_columns(method)}
    count, _, pct = name.partition(" · ")
    twins = PAGE_TWINS.get(method, ("",))
    twins = twins if any(t + count in columns for t in twins if t) else ("",)
    pct = pct or (f"{count}_pct" if twins[0] + f"{count}_pct" in columns else "")
    parts = cell.split(" / ")
    assert len(parts) in (1, len(twins)), (name, cell)
    out = {}
    for twin, part in zip(twins, parts * len(twins) if len(parts) == 1 else parts, strict=True):
        value, _, percent = part.partition(" (")
        out[twin + count] = value
        if pct:
            out[twin + pct] = percent.removesuffix(")") if percent else value  # NR: NR alone
    return out


def assert_pages_equal_the_db(db: Path, site: Path) -> int:
    """Every figure of every dataset's article is the DB's value, published; its definition is on
    the glossary page; every current example is on the article (or counted in the cap). Returns the
    datasets checked."""
    from hubsurvey.analysis.site import PAGE_EXAMPLES

    with Store(db, read_only=True) as store:
        measured = store.records("SELECT * FROM current_measurements ORDER BY dataset_id, config, label_column NULLS FIRST")
        examples = store.records(
            "SELECT dataset_id, config, kind, count(DISTINCT (key, positions, label_column)) AS n FROM examples e "
            "JOIN (SELECT DISTINCT dataset_id, revision_sha, config FROM current_measurements) "
            "USING (dataset_id, revision_sha, config) GROUP BY ALL")
    shown_examples: dict[str, int] = {}
    for e in examples:
        shown_examples[e["dataset_id"]] = shown_examples.get(e["dataset_id"], 0) + min(e["n"], PAGE_EXAMPLES)
    by_dataset: dict[str, list[dict]] = {}
    for row in measured:
        by_dataset.setdefault(row["dataset_id"], []).append(row)
    glossary = "".join(read_page(site / GLOSSARY).text)
    for column in figures.figure_columns():
        assert column.definition in glossary
    for dataset_id, rows in by_dataset.items():
        html = article(site, dataset_id)
        text = "".join(Page(html).text)
        shown = figure_rows(html)
        configs: dict[str, list[dict]] = {}
        for r in rows:
            configs.setdefault(r["config"], []).append(r)
        for config, config_rows in configs.items():
            measured_by = set.intersection(*(set(json.loads(r["methods"] or "{}")) for r in config_rows))
            no_validation = all(r["rows_validation"] is None for r in config_rows)
            for method in (figures.LLE_METHOD, figures.EXACT_METHOD, figures.NEAR_METHOD):
                if method != figures.LLE_METHOD and method not in measured_by:
                    assert (config, method) not in shown  # not measured: not shown as NR
                    continue
                # each label column's cell, read back into the registry's columns, is the DB's value
                for i, r in enumerate(config_rows):
                    got: dict[str, str] = {}
                    for name, cells in shown[(config, method)].items():
                        got.update(shown_values(method, name, cells[i], r))
                    expected = {c.name: figures.published(r[c.name], c.fmt) for c in figures.figure_columns(method)}
                    assert {k: expected[k] for k in got} == got, (dataset_id, config, method)
                    # every figure is shown, but a validation figure of a config without a validation split (NR)
                    missing = set(expected) - set(got)
                    assert all(no_validation and "validation" in k and expected[k] == figures.NR for k in missing), \
                        (dataset_id, config, method, missing)
        for r in rows:
            assert r["revision_sha"] in text and (r["parquet_sha"] is None or r["parquet_sha"] in text)
        # the answer first: the verdict naming its config, and a verdict per config and label column
        judged = dataset_verdict(rows)
        page = Page(html)
        assert page.value("data-verdict", judged.verdict) == [judged.verdict]
        assert page.value("data-field", "verdict_reason") == [judged.because]
        assert f"from config {judged.decided_by.config}" in judged.because
        several = len(judged.configs) > 1
        # a verdict per config and label column in a table; one alone is the verdict line's (no table of one row)
        assert page.value("data-field", "config_value") == ([figures.published(c.value, figures.Format.PERCENT)
                                                             for c in judged.configs] if several else [])
        assert ('class="config-verdicts"' in html) == several
        assert ('class="toc"' in html) == (len(configs) > 1)  # a table of contents where the article is long
        if not several:
            assert f"{judged.decided_by.figure} {figures.published(judged.decided_by.value, figures.Format.PERCENT)}" \
                in judged.because and f'href="../{GLOSSARY}#verdicts"' in html.split("</p>")[0]
        # the answer first, then the figures, the history (when a revision before the current one was
        # measured), the citable block and the examples
        order = ['class="verdict-line"', 'class="config-verdicts"', 'class="toc"', 'class="figures"',
                 'class="history"', 'class="cite"', "<h2>Examples behind the counts"]
        at = [html.index(marker) for marker in order if marker in html]
        assert at == sorted(at) and len(at) >= 4, (dataset_id, at)
        # the stored examples of the current revision: one row each (both profiles on one), the first few per kind
        assert html.count('<td class="example-key">') == shown_examples.get(dataset_id, 0), dataset_id
    return len(by_dataset)


@pytest.mark.slow
def test_every_figure_of_every_page_equals_the_db_and_has_its_definition(planted):
    db, site, _ = planted
    assert assert_pages_equal_the_db(db, site) == 4


@pytest.mark.slow
def test_every_local_link_resolves_and_every_page_is_reachable_without_script(planted):
    _, site, _ = planted
    assert broken_links(site) == []
    # the plain list pages link every dataset page (the way in without JavaScript)
    listed = set()
    for page in (site / "list").glob("*.html"):
        listed |= {unquote(urlsplit(link).fragment) for link in read_page(page).links if "/d/" in f"/{link}"}
    with Store(planted[0], read_only=True) as store:
        surveyed = {r[0] for r in store.query("SELECT DISTINCT dataset_id FROM current_measurements")[1]}
    assert listed == {dataset_anchor(d) for d in surveyed} and len(listed) == 4
    assert {p.name for p in (site / "d").iterdir()} == {dataset_page_path(d).split("/")[1] for d in surveyed}
    index = (site / "index.html").read_text()
    assert 'href="list/1.html"' in index and "<noscript>" in index
    # no external script, style or font: nothing but the site's own files is loaded
    for page in site.rglob("*.html"):
        assert not re.search(r'(src|href)="(https?:)?//[^"]*\.(js|css|woff2?)"', page.read_text())


@pytest.mark.slow
def test_a_rebuild_replaces_the_site_whole_and_a_failed_one_keeps_it(planted, tmp_path, monkeypatch):
    db, _, _ = planted
    out = tmp_path / "site"
    with Store(db, read_only=True) as store:
        build_site(store, out)
        # a page an earlier build wrote (its sealed marker lists it) that this build does not write
        (out / "d" / "stale.html").write_text("old")
        from hubsurvey.analysis.site import SITE_FORMAT
        from hubsurvey.core.outputs import seal

        files = [p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file() and p.name != MARKER]
        (out / MARKER).write_text(json.dumps(seal({"tool_version": "older"}, out, files, SITE_FORMAT)))
        build_site(store, out)
        assert not (out / "d" / "stale.html").exists()
        before = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}

        import hubsurvey.analysis.site as site_module

        def fail(*args, **kwargs):
            raise OSError(28, "No space left on device")

        monkeypatch.setattr(site_module, "_write_site", fail)
        with pytest.raises(OSError, match="No space left"):
            build_site(store, out)
    assert {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()} == before
    assert [p.name for p in tmp_path.iterdir()] == ["site"]  # no build folder left behind


# --- hostile names, history and fingerprints ------------------------------------------------------------


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    """A DB whose dataset id and config name hold a script tag, quotes and ``</td>``, with a task
    category that is an HTML tag."""
    root = tmp_path_factory.mktemp("site-hostile")
    db = root / "results.duckdb"
    audit_folder(write_folder(root, "acme/alpha", {"train": [("a", 0), ("b", 1)], "test": [("a", 0), ("a", 0)]}), db,
                 dataset_id=HOSTILE_ID)
    audit_folder(write_folder(root, "acme/plain", {"train": [("x", 0)], "test": [("y", 0)]}), db)
    with Store(db) as store:
        for table in ("measurements", "examples"):
            store.con.execute(f"UPDATE {table} SET config = $c WHERE dataset_id = $d", {"c": HOSTILE_CONFIG, "d": HOSTILE_ID})
        insert(store.con, "datasets", {"dataset_id": HOSTILE_ID, "tags": ["task_categories:<img src=x onerror=alert(2)>"],
                                       "status": "eligible", "first_seen": T0, "last_seen": T0})
    return db


@pytest.mark.slow
def test_hostile_names_stay_text(hostile, tmp_path):
    out = tmp_path / "site"
    result = runner.invoke(app, ["site", "--db", str(hostile), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "2 dataset(s) on 2 page(s)" in result.stdout
    for path in [out / "index.html", *out.glob("list/*.html"), *out.glob("d/*.html")]:
        html = path.read_text()
        page = read_page(path)
        assert all(s.get("src") for s in page.scripts), path  # only the site's own script files
        assert "<script>alert" not in html and "<img src=x" not in html and "</script>\"</td>" not in html
    page = page_of(out, HOSTILE_ID)
    text = "".join(page.text)
    assert HOSTILE_ID in text and HOSTILE_CONFIG in text  # shown as text, exactly
    assert "hubsurvey audit" not in text  # an audited folder: no Hub command to reproduce it
    index = "".join(read_page(out / "index.html").text)
    assert "<img src=x onerror=alert(2)>" in index  # the task filter's option, as text
    assert [r["id"] for r in index_data(out)] == sorted(["acme/plain", HOSTILE_ID])
    assert broken_links(out) == []


@pytest.mark.slow
def test_history_and_fingerprints_are_on_every_page_of_a_db_of_audits(hostile, tmp_path):
    """A DB of one-off audits: every page has its one revision and its split fingerprints in its citable block,
    the DB's values; the index says there is no run to compare with. tests/analysis/test_site_results.py has
    two recorded runs."""
    with Store(hostile, read_only=True) as store:
        build_site(store, tmp_path / "site")
        rows = store.records("SELECT dataset_id, revision_sha, fingerprint_train, fingerprint_validation, fingerprint_test "
                             "FROM current_measurements")
    assert len(rows) == 2
    for row in rows:
        page = page_of(tmp_path / "site", row["dataset_id"])
        (cite,) = page.value("data-field", "cite")
        assert f"  revision: {row['revision_sha']}\n  parquet commit: NR\n  fingerprints: " + ", ".join(
            f"{split} {row[f'fingerprint_{split}'] or 'NR'}" for split in ("train", "validation", "test")) in cite
        assert row["fingerprint_train"].startswith("hs1:") and row["fingerprint_validation"] is None
        # measured once: the citable block is its history (a table of the current revision alone would repeat it)
        assert 'class="history"' not in article(tmp_path / "site", row["dataset_id"])
    index_page = read_page(tmp_path / "site" / "index.html")
    index = "".join(index_page.text)
    assert "No survey run is recorded in this DB (one-off audits only)" in index
    # audits only: leaks across datasets and benchmarks were never measured, and say so (never 0.00%)
    assert index_page.value("data-figure", "pct_leaking") == ["not measured"]
    assert index_page.value("data-figure", "pct_datasets_contaminated") == ["not measured"]
    assert "0.00%" not in index.split("leaks across datasets")[-1]
    for row in rows:
        page = page_of(tmp_path / "site", row["dataset_id"])
        assert page.value("data-field", "cross")[0].startswith("Not measured: leaks across datasets were never computed")


# --- publish --site: a static Space on the stand-in -------------------------------------------------------


TOKEN = "hf_site_test_token_0c9e2b7a41d5"


@pytest.mark.slow
def test_publish_site_is_a_dry_run_first_then_one_commit_to_a_static_space(planted, tmp_path, monkeypatch):
    from huggingface_hub import HfApi

    from hubsurvey_standin import StandinHub

    db, _, _ = planted
    root = tmp_path / "hubroot"
    root.mkdir()
    (root / "index.json").write_text("[]")
    out = tmp_path / "space"
    repo = "me/survey-site"
    with StandinHub(root, valid_tokens={TOKEN}) as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub.url)
        monkeypatch.setenv("HF_TOKEN", TOKEN)
        dry = runner.invoke(app, ["publish", "--site", "--repo", repo, "--db", str(db), "--out", str(out)])
        assert dry.exit_code == 0, dry.output
        assert "dry run: nothing uploaded" in dry.stdout
        assert hub.stats()["create"] == 0 and hub.commits(repo, "space") == []
        assert "sdk: static" in (out / "README.md").read_text()

        args = ["publish", "--site", "--repo", repo, "--db", str(db), "--out", str(out), "--push"]
        first = runner.invoke(app, args)
        assert first.exit_code == 0, first.output
        assert "pushed: one commit" in first.stdout
        commits = hub.commits(repo, "space")
        assert len(commits) == 1
        local = {p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()}
        assert {op["path"] for op in commits[0]["operations"]} == local
        api = HfApi(endpoint=hub.url, token=TOKEN)
        assert api.space_info(repo).sdk == "static"
        assert hub.commits(repo) == [] and api.list_datasets(search="survey-site") is not None
        assert not [d.id for d in api.list_datasets() if d.id == repo]  # a space is not listed as a dataset
        # the Space serves the files as built: the index, and a page whose file name holds a %
        page = dataset_page_path("acme/alpha")  # its shard's page
        assert Path(api.hf_hub_download(repo, page, repo_type="space", cache_dir=tmp_path / "dl")).read_bytes() == \
            (out / page).read_bytes()

        second = runner.invoke(app, args)
        assert second.exit_code == 0, second.output
        assert "unchanged" in second.stdout and len(hub.commits(repo, "space")) == 1
    assert TOKEN not in first.output + second.output + dry.output
    assert not any(TOKEN in p.read_text(errors="replace") for p in out.rglob("*") if p.is_file())


# --- a whole survey of the mini-hub (contamination, leaks across datasets, families) ----------------------


@pytest.fixture(scope="module")
def surveyed(tmp_path_factory):
    """The DB `hubsurvey demo` writes: a whole survey of the mini-hub, with its benchmarks."""
    tmp = tmp_path_factory.mktemp("site-demo")
    result = runner.invoke(app, ["demo", "--db", str(tmp / "demo.duckdb"), "--report-dir", str(tmp / "report"),
                                 "--workers", "2"])
    assert result.exit_code == 0, result.output
    return tmp / "demo.duckdb"


def test_the_demo_db_builds_a_site_whose_figures_equal_the_db(surveyed, tmp_path):
    site = tmp_path / "site"
    with Store(surveyed, read_only=True) as store:
        build_site(store, site)
        plain = {
            "families": dict(store.query("SELECT dataset_id, family_id FROM dataset_families")[1]),
            "out": dict(store.query("SELECT test_dataset, count(*) FROM cross_overlaps GROUP BY ALL")[1]),
            "contamination": dict(store.query(
                "SELECT k.dataset_id, count(*) FROM contamination k WHERE EXISTS (SELECT 1 FROM current_measurements m "
                "WHERE m.dataset_id = k.dataset_id AND m.revision_sha = k.revision_sha AND m.config = k.config) "
                "GROUP BY ALL")[1]),
            "tested": store.query("SELECT count(DISTINCT dataset_id) FROM contamination")[1][0][0],
            "surveyed": store.query("SELECT count(DISTINCT dataset_id) FROM current_measurements")[1][0][0],
        }
    assert plain["surveyed"] >= 13  # the mini-hub's eligible datasets, each with its page
    assert assert_pages_equal_the_db(surveyed, site) == plain["surveyed"]
    assert broken_links(site) == []
    assert plain["families"] and plain["out"] and plain["contamination"]  # the mini-hub plants all three
    rows = {r["id"]: r for r in index_data(site)}
    for dataset_id, row in rows.items():
        assert row["family"] == plain["families"].get(dataset_id)
        html = article(site, dataset_id)
        contamination = html.split('<table class="contamination">')[1].split("</table>")[0] \
            if '<table class="contamination">' in html else ""
        assert contamination.count("<tr><td>") == plain["contamination"].get(dataset_id, 0)
        cross = html.split('<table class="cross">')[1].split("</table>")[0] if '<table class="cross">' in html else ""
        assert cross.count("<tr><td>this dataset [") == plain["out"].get(dataset_id, 0)
        assert ("On the Hub</a>" in html) and "hubsurvey audit " in html  # Hub datasets: a link and a command
    index = read_page(site / "index.html")
    assert index.value("data-figure", "datasets") == [str(plain["surveyed"])]
    assert re.fullmatch(r"\d+\.\d\d%", index.value("data-figure", "pct_leaking")[0])  # the demo ran crossleaks
    assert int(re.search(r"(\d+) of (\d+) datasets checked", "".join(index.text)).group(2)) == plain["tested"]
    # the models the mini-hub's cards declare: the index's rows per benchmark are findings_model_exposure's
    with Store(surveyed, read_only=True) as store:
        create_views(store)
        exposed = store.records("SELECT benchmark_id, model_id, contaminated_rows FROM findings_model_exposure "
                                "ORDER BY benchmark_id, benchmark_config, benchmark_split, contaminated_rows DESC, model_id")
        declared = dict(store.query("SELECT dataset_id, count(DISTINCT model_id) FROM model_exposure GROUP BY ALL")[1])
    assert exposed and declared
    html = (site / "index.html").read_text().split('id="exposure"')[1].split("</section>")[0]
    shown = re.findall(r'<tr><th scope="row">([^<]+)</th><td>[^<]*</td><td>[^<]*</td>\s*<td data-field="exposure_rows">(\d+)</td>', html)
    assert shown == [(e["model_id"], str(e["contaminated_rows"])) for e in exposed]
    for dataset_id, models in declared.items():
        page = page_of(site, dataset_id)
        assert len(set(page.value("data-field", "exposure_model"))) == models


@pytest.mark.slow
def test_a_multi_column_config_shows_each_text_column_alone_as_the_db_holds_it(shared_datasets, tmp_path):
    """A config with several text columns: its page has one table per text column, each figure's
    value per (label column, profile) the column_measurements row's, with the registry's definition."""
    from hubsurvey.survey.audit import audit

    db = tmp_path / "columns.duckdb"
    audit(str(shared_datasets / "community-datasets__definite_pronoun_resolution"), near=False, db=db)
    with Store(db, read_only=True) as store:
        build_site(store, tmp_path / "site")
        rows = store.records("SELECT * FROM column_measurements ORDER BY config, list_position(text_columns, text_column), "
                             "label_column NULLS FIRST, profile = 'normalized', profile")
    assert {r["text_column"] for r in rows} >= {"sentence", "pronoun"}  # two text columns at least
    html = article(tmp_path / "site", "community-datasets/definite_pronoun_resolution")
    glossary = (tmp_path / "site" / GLOSSARY).read_text()
    for text_column in dict.fromkeys(r["text_column"] for r in rows):
        section = html.split(f'data-text-column="{text_column}"')[1].split("</table>")[0]
        mine = [r for r in rows if r["text_column"] == text_column]
        heads = re.findall(r"<th>([^<]*)</th>", section.split("</thead>")[0])[1:]
        assert heads == [f"{r['profile']}, {r['label_column']}" if r["label_column"] else r["profile"] for r in mine]
        cells = re.findall(r"^<tr><th>([^<]+)((?:<td>[^<\n]*)+)$", section, re.MULTILINE)
        assert cells == [(c.published_name, "".join(f"<td>{figures.published(r[c.name], c.fmt)}" for r in mine))
                         for c in figures.per_column_columns()]
        for c in figures.per_column_columns():
            assert str(escape(c.definition)) in glossary


@pytest.mark.parametrize("command,counts,measured", [
    ("run", {"done": 3, "crossleaks": None}, False),  # run --no-crossleaks
    ("run", {"done": 3}, False),
    ("run", {"done": 3, "crossleaks": {"pairs": 0}}, True),  # ran, found nothing: measured, 0
    ("crossleaks", {"pairs": 0}, True),
])
def test_leaks_across_datasets_are_measured_only_where_a_run_computed_them(tmp_path, command, counts, measured):
    from hubsurvey.analysis.site import cross_measured

    with Store(tmp_path / "r.duckdb") as store:
        store.con.execute("INSERT INTO runs (run_id, command, started_at, status, counts, tool_version) "
                          "VALUES ('r1', $c, now(), 'done', $j, '0')", {"c": command, "j": json.dumps(counts)})
        assert cross_measured(store) is measured


def _duplicate_ids(path: Path) -> list[str]:
    counts: dict[str, int] = {}
    for found in re.findall(r'\sid="([^"]*)"', path.read_text(encoding="utf-8")):
        counts[found] = counts.get(found, 0) + 1
    return sorted(i for i, n in counts.items() if n > 1)


def test_a_shard_page_holding_every_dataset_of_the_demo_has_no_duplicate_id(surveyed, tmp_path, monkeypatch):
    """Every article of the demo's datasets on one shard page (as at Hub scale, where a page holds
    about 25): no element id twice on the page, and every link to a section still resolves."""
    import hubsurvey.analysis.site as site_module
    import hubsurvey.analysis.site_links as site_links

    for module in (site_module, site_links):  # every dataset on one page: d/000.html
        monkeypatch.setattr(module, "dataset_shard", lambda dataset_id: "000")
    with Store(surveyed, read_only=True) as store:
        build_site(store, tmp_path / "site")
        surveyed_ids = [r[0] for r in store.query("SELECT DISTINCT dataset_id FROM current_measurements")[1]]
    (page,) = (tmp_path / "site" / "d").glob("*.html")
    html = page.read_text(encoding="utf-8")
    assert html.count('<article class="dataset"') == len(surveyed_ids) >= 13
    assert _duplicate_ids(page) == []
    assert broken_links(tmp_path / "site") == []


@pytest.mark.slow
def test_a_section_id_is_never_another_datasets_anchor(tmp_path, monkeypatch):
    """Two datasets on one page whose ids differ by a section's name (``acme/x`` and ``acme/x-cite``):
    a section's id is ``<anchor>/<section>``, and ``/`` is never in an anchor, so no id repeats."""
    import hubsurvey.analysis.site as site_module
    import hubsurvey.analysis.site_links as site_links

    for module in (site_module, site_links):  # every dataset on one page: d/000.html
        monkeypatch.setattr(module, "dataset_shard", lambda dataset_id: "000")
    db = tmp_path / "r.duckdb"
    for dataset_id in ("acme/x", "acme/x-cite", "acme/x-facts"):
        audit_folder(write_folder(tmp_path, dataset_id, {"train": [("a", 0), ("b", 1)], "test": [("a", 0)]}), db,
                     dataset_id=dataset_id)
    with Store(db, read_only=True) as store:
        build_site(store, tmp_path / "site")
    (page,) = (tmp_path / "site" / "d").glob("*.html")
    assert page.read_text(encoding="utf-8").count('<article class="dataset"') == 3
    assert _duplicate_ids(page) == []
    assert broken_links(tmp_path / "site") == []
