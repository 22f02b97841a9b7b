"""The site shows the survey's newest results: what changed since the last run (on the index, as the
report computes it), each dataset's badge (the files the results dataset holds, and the markdown
to paste), the models that declare contaminated training data, the history and split fingerprints
of every page, and the clean test splits. Two recorded runs of small planted folders, measured by
the real pipeline, a real ``clean --db``; every value is compared with the DB's rows."""

from __future__ import annotations

import html
import json
import re
from datetime import UTC, datetime
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

import pytest
from test_analysis_fixtures import write_folder
from test_history import _night
from test_site import HOSTILE_ID, article, broken_links
from typer.testing import CliRunner

from hubsurvey.analysis.badges import badge_path, read_badges
from hubsurvey.analysis.findings import create_views
from hubsurvey.analysis.history import since_last_run
from hubsurvey.analysis.render import num, pct3, when
from hubsurvey.analysis.site import SHIELDS_ENDPOINT, build_site, dataset_href, space_url
from hubsurvey.cli import app
from hubsurvey.core.store import Store, insert, insert_many
from hubsurvey.survey.clean import clean

# The fixture audits small folders and cleans one (a few seconds): the fast tier leaves these out.
pytestmark = pytest.mark.slow

SITE_URL = "https://example.org/survey"
RESULTS_URL = "https://example.org/results/resolve/main"
HOSTILE_MODEL = "m/<b>one</b>\"</td>"
BENCHMARK = "bench/<i>x</i>"
T1 = datetime(2026, 11, 30, 1, 2, 3, tzinfo=UTC)


class Tables(HTMLParser):
    """Every ``<table>`` of a page as its class and rows; a row is its cells' text and the links in it."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tables: list[tuple[str, list[dict]]] = []
        self._cell: list[str] | None = None
        self._head = False
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "thead":
            self._head = True
        elif tag == "table":
            self.tables.append((a.get("class") or "", []))
        elif tag == "tr" and self.tables:
            self.tables[-1][1].append({"cells": [], "links": [], "head": self._head})
        elif tag in ("td", "th") and self.tables and self.tables[-1][1]:
            self._cell = [""]
            self.tables[-1][1][-1]["cells"].append(self._cell)
        elif tag == "a" and self._cell is not None:
            self.tables[-1][1][-1]["links"].append(a.get("href"))

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th"):
            self._cell = None
        elif tag == "thead":
            self._head = False

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell[0] += data

    def rows(self, cls: str) -> list[list[str]]:
        """The body rows (not the header) of every table of class ``cls``, as cell texts."""
        return [[c[0].strip() for c in r["cells"]] for r in self._body(cls)]

    def links(self, cls: str) -> list[list[str]]:
        return [r["links"] for r in self._body(cls)]

    def _body(self, cls: str) -> list[dict]:
        return [r for name, rows in self.tables if name == cls for r in rows if not r["head"]]


def tables_of(path: Path) -> Tables:
    return Tables(path.read_text(encoding="utf-8"))


def article_tables(site: Path, dataset_id: str) -> Tables:
    return Tables(article(site, dataset_id))


def section(path: Path, name: str) -> str:
    return path.read_text(encoding="utf-8").split(f'id="{name}"')[1].split("</section>")[0]


def part(site: Path, dataset_id: str, name: str) -> str:
    """One part of a dataset's article: its ``<section id="<anchor>/<name>">``."""
    return re.split(rf'<section id="[^"]*/{name}">', article(site, dataset_id))[1].split("</section>")[0]


@pytest.fixture(scope="module")
def two_nights(tmp_path_factory):
    """Night 1: o/worse clean, o/fixed leaky. Night 2: o/worse leaky, o/fixed clean, a hostile id new.
    Then a real clean of o/worse recorded in the DB, and models declaring o/worse (model_exposure)."""
    root = tmp_path_factory.mktemp("site-results")
    db = root / "r.duckdb"
    clean_splits = {"train": [("a", 0), ("b", 1)], "test": [("c", 0), ("d", 1), ("e", 0), ("f", 1)]}
    leaky = {"train": [("a", 0), ("b", 1)], "test": [("a", 0), ("c", 1), ("d", 0), ("d", 1)]}  # 1 in train, 1 repeat
    with Store(db) as store:
        first = _night(store, [(write_folder(root / "1", "o/worse", clean_splits), "o/worse"),
                               (write_folder(root / "1", "o/fixed", leaky), "o/fixed")])
        worse = write_folder(root / "2", "o/worse", leaky)
        second = _night(store, [(worse, "o/worse"), (write_folder(root / "2", "o/fixed", clean_splits), "o/fixed"),
                                (write_folder(root / "2", "x/hostile", leaky), HOSTILE_ID)])
    outcome = clean(str(worse), out=root / "clean", db=db, dataset_id="o/worse")
    assert not outcome.errors, outcome.errors
    with Store(db) as store:
        revision = store.query("SELECT revision_sha FROM current_measurements WHERE dataset_id = 'o/worse'")[1][0][0]
        common = {"dataset_id": "o/worse", "revision_sha": revision, "config": "default", "split": "train",
                  "split_name": "train", "text_columns": ["text"], "benchmark_id": BENCHMARK, "benchmark_config": "default",
                  "benchmark_split": "test", "benchmark_revision": "b" * 40, "rows_split": 2, "method": "exposure-2026",
                  "method_version": 1, "tool_version": "0.1.0", "looked_up_at": T1, "run_id": second}
        insert_many(store.con, "model_exposure", [
            {**common, "model_id": HOSTILE_MODEL, "model_sha": "1" * 40, "declared_by": "card:datasets",
             "contaminated_rows": 2, "contaminated_pct": 100.0},
            {**common, "model_id": "m/two", "model_sha": "2" * 40, "declared_by": "tag:dataset",
             "contaminated_rows": 1, "contaminated_pct": 50.0}])
        insert(store.con, "exposure_lookups", {
            "dataset_id": "o/worse", "revision_sha": revision, "contamination_digest": "d" * 64, "max_models": 100,
            "models": 2, "capped": False, "status": "listed", "method": "exposure-2026", "method_version": 1,
            "tool_version": "0.1.0", "looked_up_at": T1, "run_id": second})
    with Store(db, read_only=True) as store:
        build_site(store, root / "site")
        build_site(store, root / "served", site_url=SITE_URL + "/", badges_url=RESULTS_URL)
    return {"db": db, "site": root / "site", "served": root / "served", "first": first, "second": second}


def test_the_index_shows_what_changed_since_the_last_run(two_nights):
    site = two_nights["site"]
    with Store(two_nights["db"], read_only=True) as store:
        since = since_last_run(store)
    assert since["previous_run"]["run_id"] == two_nights["first"]
    index = tables_of(site / "index.html")
    changes = index.rows("since-verdicts")
    assert [r[:4] for r in changes] == [[c["dataset_id"], c["before"], c["after"], c["change"]]
                                        for c in since["verdict_changes"]]
    assert [r[:4] for r in changes] == [["o/worse", "clean", "unreliable", "worse"], ["o/fixed", "unreliable", "clean", "better"]]
    assert [r[7:] for r in changes] == [[c["revisions_before"][0][:12], c["revisions_after"][0][:12]]
                                        for c in since["verdict_changes"]]
    # each dataset links to its page
    for row, links in zip(changes, index.links("since-verdicts")):
        (link,) = links
        assert link == dataset_href(row[0])
    # the new dataset, its hostile id as text, linked to its page
    assert [r[0] for r in index.rows("since-new")] == [HOSTILE_ID] == [d["dataset_id"] for d in since["new_datasets"]]
    ((link,),) = index.links("since-new")
    assert link == dataset_href(HOSTILE_ID)
    html = (site / "index.html").read_text()
    assert "<script>alert" not in html
    # readable without JavaScript: the section is static HTML, before the script tag
    assert html.index('id="since"') < html.index('<script src="site.js">')
    assert f"when run <code>{since['previous_run']['run_id']}</code> ended" in section(site / "index.html", "since")


def test_each_page_shows_its_badge_and_with_the_badges_url_its_markdown(two_nights):
    """The site holds no badge file (one per dataset would not fit a Space); with --badges-url each
    dataset shows its badge and the markdown of the results dataset's badge file (without it there
    is nothing to paste, and the page shows none)."""
    site, served = two_nights["site"], two_nights["served"]
    with Store(two_nights["db"], read_only=True) as store:
        badges = read_badges(store)
    assert len(badges) == 3
    for folder in (site, served):
        assert not (folder / "badges").exists()
        assert broken_links(folder) == []
    for dataset_id, badge in badges.items():
        page = article(site, dataset_id)
        assert 'class="badge' not in page and "img.shields.io" not in page  # nothing to paste without where they are served
        assert f"{badge['label']}</span> {badge['message']}" in article(served, dataset_id).replace("&#34;", '"')
        markdown = html.unescape(article(served, dataset_id).split('class="badge-markdown">')[1].split("</code>")[0])
        assert markdown.startswith(f"![{badge['label']}]({SHIELDS_ENDPOINT}") and markdown.endswith(")")
        endpoint = markdown[len(f"![{badge['label']}]("):-1]
        (file_url,) = parse_qs(urlsplit(endpoint).query)["url"]  # what shields.io fetches
        assert file_url.startswith(RESULTS_URL + "/badges/")
        assert unquote(file_url[len(RESULTS_URL) + 1:]) == badge_path(dataset_id)  # the file's name, % and all
        # the page's own URL, in its citable block
        assert f"page: {SITE_URL}/{dataset_href(dataset_id)}" in html.unescape(article(served, dataset_id))
    assert badges["o/worse"]["message"] == "50%" and badges["o/fixed"]["message"] == "0%"


def test_models_that_declare_contaminated_data_on_the_index_and_the_dataset_page(two_nights):
    site = two_nights["site"]
    with Store(two_nights["db"], read_only=True) as store:
        create_views(store)
        exposed = store.records("SELECT * FROM findings_model_exposure")
        plain = store.records("SELECT model_id, sum(contaminated_rows) AS n FROM model_exposure GROUP BY ALL ORDER BY n DESC")
    assert len(exposed) == 2
    index = tables_of(site / "index.html")
    assert [(r[0], r[1], r[3]) for r in index.rows("exposure")] == [
        (e["model_id"], e["declared_by"], str(e["contaminated_rows"])) for e in exposed]
    assert [r[0] for r in index.rows("exposure")] == [HOSTILE_MODEL, "m/two"]  # hostile text, exactly
    for text in (section(site / "index.html", "exposure"), part(site, "o/worse", "facts")):
        assert "a declaration" in " ".join(text.split()) and f"{BENCHMARK.replace('<', '&lt;').replace('>', '&gt;')} [default/test]" in text
        assert "<b>" not in text and "<i>" not in text
    page = article_tables(site, "o/worse")
    assert [(r[0], r[3]) for r in page.rows("exposure")] == [(r["model_id"], str(r["n"])) for r in plain]
    assert 'class="exposure"' not in article(site, "o/fixed")  # no model declares it


def test_history_and_fingerprints_are_the_db_rows(two_nights):
    site = two_nights["site"]
    with Store(two_nights["db"], read_only=True) as store:
        for dataset_id in ("o/worse", "o/fixed", HOSTILE_ID):
            rows = store.records("SELECT * FROM history WHERE dataset_id = $d ORDER BY measured_at", {"d": dataset_id})
            fingerprints = store.records("SELECT fingerprint_train, fingerprint_validation, fingerprint_test "
                                         "FROM current_measurements WHERE dataset_id = $d", {"d": dataset_id})
            page = article_tables(site, dataset_id)
            # a table when a revision before the current one was measured (else the citable block says it)
            assert page.rows("history") == [] if len(rows) == 1 else page.rows("history") == [
                [r["config"], num(r["label_column"]), r["revision_sha"][:12], when(r["measured_at"]), num(r["run_id"]),
                 r["verdict"], r["verdict_basis"], pct3(r["near_contaminated_test_pct"]),
                 pct3(r["normalized_contaminated_test_pct"]), pct3(r["text_test_biased"]), num(r["rows_test"]),
                 r["tool_version"]] for r in rows]
            assert len(rows) == (1 if dataset_id == HOSTILE_ID else 2)
            (fp,) = fingerprints
            assert fp["fingerprint_train"].startswith("hs1:") and fp["fingerprint_validation"] is None
            cite = html.unescape(part(site, dataset_id, "cite"))
            assert "fingerprints: " + ", ".join(f"{s} {num(fp[f'fingerprint_{s}'])}"
                                                for s in ("train", "validation", "test")) in cite


def test_the_clean_split_on_the_dataset_page(two_nights):
    site = two_nights["site"]
    with Store(two_nights["db"], read_only=True) as store:
        (row,) = store.records("SELECT * FROM clean_test")
    dropped = json.loads(row["dropped"])
    assert (row["rows_test"], row["rows_kept"], dropped["train"], dropped["repeated"]) == (4, 2, 1, 1)
    page = article_tables(site, "o/worse")
    (shown,) = page.rows("clean")
    assert shown[:2] == ["default", "normalized"]
    assert shown[3:9] == [str(row["rows_kept"]), str(row["rows_test"]), *(str(dropped[k]) for k in
                                                                          ("train", "validation", "repeated", "near"))]
    assert shown[9] == row["clean_fingerprint"]
    text = part(site, "o/worse", "clean")
    assert "hubsurvey clean o/worse --config default --out clean-test" in text
    assert "load_clean_test" not in text  # cleaned from a folder: no pinned Hub revision to load
    assert '<table class="clean">' not in article(site, "o/fixed")  # no clean split, no section


def test_the_command_takes_the_site_url_and_refuses_a_bad_one(two_nights, tmp_path):
    runner = CliRunner()
    ok = runner.invoke(app, ["site", "--db", str(two_nights["db"]), "--out", str(tmp_path / "s"),
                             "--site-url", SITE_URL, "--badges-url", RESULTS_URL])
    assert ok.exit_code == 0, ok.output
    assert "img.shields.io/endpoint?url=https%3A%2F%2Fexample.org%2Fresults" in article(tmp_path / "s", "o/worse")
    bad = runner.invoke(app, ["site", "--db", str(two_nights["db"]), "--out", str(tmp_path / "t"),
                              "--site-url", "javascript:alert(1)"])
    assert bad.exit_code == 2 and "--site-url must be an http(s) URL" in bad.output
    assert not (tmp_path / "t").exists()
    assert space_url("me/survey") == "https://huggingface.co/spaces/me/survey/resolve/main"
