"""The static site in headless Chromium (the system's /usr/bin/chromium, driven by playwright; no
browser is downloaded): search filters the table, a dataset page opens from the index, no console
error, hostile names stay text, and the table draws only the rows in view. Skipped without Chromium
or playwright."""

from __future__ import annotations

from pathlib import Path

import pytest
from site_data import dataset_ids, synthetic_db
from test_analysis_fixtures import audit_folder, build_planted_db, write_folder
from test_site import HOSTILE_CONFIG, HOSTILE_ID

from hubsurvey.analysis.site import build_site
from hubsurvey.core.store import Store

CHROMIUM = Path("/usr/bin/chromium")
playwright = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install playwright)")
pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not CHROMIUM.exists(), reason="chromium is not installed (apt-get install chromium)")]


@pytest.fixture(scope="module")
def browser():
    with playwright.sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox", "--disable-gpu"])
        yield chromium
        chromium.close()


class Watched:
    """A page whose console errors, uncaught errors and dialogs (an alert() would be one) are kept."""

    def __init__(self, browser) -> None:
        self.page = browser.new_page(viewport={"width": 1200, "height": 900})
        self.problems: list[str] = []
        self.page.on("console", lambda m: self.problems.append(f"console {m.type}: {m.text}") if m.type in
                     ("error", "warning") else None)
        self.page.on("pageerror", lambda e: self.problems.append(f"pageerror: {e}"))
        self.page.on("dialog", lambda d: (self.problems.append(f"dialog: {d.message}"), d.dismiss()))

    def open(self, path: Path) -> None:
        self.page.goto(path.resolve().as_uri())

    def loaded(self) -> dict:
        self.page.wait_for_function("window.hubsurvey && hubsurvey.state().chunks > 0 && "
                                    "hubsurvey.state().loaded === hubsurvey.state().chunks", timeout=30_000)
        return self.page.evaluate("hubsurvey.state()")

    def drawn(self) -> list[str]:
        return self.page.eval_on_selector_all("#rows tr:not(.spacer) th a", "as => as.map(a => a.textContent)")


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The planted datasets and one whose id and config hold a script tag, quotes and ``</td>``."""
    root = tmp_path_factory.mktemp("site-browser")
    db = build_planted_db(root / "db")
    audit_folder(write_folder(root, "x/y", {"train": [("a", 0), ("b", 1)], "test": [("a", 0)]}), db, dataset_id=HOSTILE_ID)
    with Store(db) as store:
        for table in ("measurements", "examples"):
            store.con.execute(f"UPDATE {table} SET config = $c WHERE dataset_id = $d", {"c": HOSTILE_CONFIG, "d": HOSTILE_ID})
    with Store(db, read_only=True) as store:
        build_site(store, root / "site")
    return root / "site"


def test_search_and_filters_narrow_the_table_and_sorting_orders_it(browser, site):
    w = Watched(browser)
    w.open(site / "index.html")
    assert w.loaded() == {"rows": 5, "shown": 5, "loaded": 1, "chunks": 1}
    assert w.drawn() == sorted(["acme/alpha", "acme/beta", "acme/gamma", "acme/delta", HOSTILE_ID])
    w.page.fill("#search", "ALP")  # case-insensitive, as you type
    assert w.drawn() == ["acme/alpha"]
    assert w.page.text_content("#count") == "Showing 1 of 5 datasets"
    w.page.fill("#search", "")
    w.page.select_option("#verdict", "clean")
    assert w.drawn() == ["acme/delta"]
    w.page.select_option("#verdict", "")
    w.page.select_option("#task", "token-classification")
    assert w.drawn() == ["acme/beta"]
    w.page.select_option("#task", "")
    def contaminated() -> list[float]:
        cells = w.page.eval_on_selector_all("#rows tr:not(.spacer) td:nth-of-type(2)", "ts => ts.map(t => t.textContent)")
        return [float(c.rstrip("%")) for c in cells]

    w.page.click("th[data-sort=contaminated_pct] button")
    assert contaminated() == sorted(contaminated()) and len(set(contaminated())) > 2
    assert w.page.get_attribute("th[data-sort=contaminated_pct]", "aria-sort") == "ascending"
    w.page.click("th[data-sort=contaminated_pct] button")
    assert contaminated() == sorted(contaminated(), reverse=True)
    assert w.page.get_attribute("th[data-sort=contaminated_pct]", "aria-sort") == "descending"
    assert w.problems == []


def test_a_dataset_page_opens_from_the_index_and_hostile_names_stay_text(browser, site):
    w = Watched(browser)
    w.open(site / "index.html")
    w.loaded()
    w.page.fill("#search", "<script>")
    assert w.drawn() == [HOSTILE_ID]  # the id, as text: its markup was never parsed
    assert w.page.eval_on_selector_all("#rows script, #rows td td", "es => es.length") == 0
    w.page.click("#rows th a")
    w.page.wait_for_load_state()
    assert w.page.text_content("article:target h1") == HOSTILE_ID
    assert w.page.eval_on_selector_all("script", "es => es.length") == 0  # a dataset page has no script at all
    assert HOSTILE_CONFIG in w.page.text_content("article:target .config-name")
    assert w.page.text_content("article:target [data-verdict]").strip() in ("clean", "minor", "caution", "unreliable")
    # its shard's other datasets are hidden while its anchor is the target (CSS, no script)
    assert [a.is_visible() for a in w.page.query_selector_all("article.dataset")].count(True) == 1
    # back to the index, then a plain list page and another dataset's page from there
    w.page.click("nav a[href$='list/1.html']")
    w.page.click("text=acme/gamma")
    assert w.page.text_content("article:target h1") == "acme/gamma"
    assert w.page.locator("article:target table.figures").count() >= 1
    assert w.problems == []


def test_the_index_renders_without_javascript(browser, site):
    page = browser.new_page(java_script_enabled=False)
    page.goto((site / "index.html").resolve().as_uri())
    assert page.text_content("[data-figure=datasets]") == "5"
    assert page.is_visible("a[href='list/1.html']")
    assert not page.is_visible("#search")  # the controls stay hidden without the script that drives them
    page.close()


def test_only_the_rows_in_view_are_drawn_and_every_chunk_loads(browser, tmp_path, monkeypatch):
    import hubsurvey.analysis.site as site_module

    monkeypatch.setattr(site_module, "CHUNK_ROWS", 1000)  # three chunks from 2,500 datasets
    n = 2 * 1000 + 500
    db = synthetic_db(tmp_path / "r.duckdb", n)
    with Store(db, read_only=True) as store:
        build_site(store, tmp_path / "site")
    w = Watched(browser)
    w.open(tmp_path / "site" / "index.html")
    assert w.loaded() == {"rows": n, "shown": n, "loaded": 3, "chunks": 3}
    drawn = w.drawn()
    assert 10 < len(drawn) < 120  # a window, not 2,500 rows
    ids = sorted(dataset_ids(n))
    assert drawn == ids[:len(drawn)]
    w.page.eval_on_selector("#scroller", "s => { s.scrollTop = s.scrollHeight; s.dispatchEvent(new Event('scroll')); }")
    w.page.wait_for_function(f"document.querySelector('#rows tr:nth-last-child(2) th a').textContent === {ids[-1]!r}")
    w.page.fill("#search", "dataset-0020")
    assert w.page.evaluate("hubsurvey.state().shown") == 100
    assert w.drawn() == [i for i in ids if "dataset-0020" in i][:len(w.drawn())]
    w.page.fill("#search", "dataset-00200")
    assert w.drawn() == [i for i in ids if "dataset-00200" in i]
    assert w.problems == []


# --- screenshots: the answer in the first screen ------------------------------------------------------

#: Where a run also copies its screenshots (e.g. for a review), besides the test's tmp folder.
SCREENSHOTS_ENV = "HUBSURVEY_SCREENSHOTS"
VIEWPORT = {"width": 1280, "height": 800}


def first_screen(browser, url: str, selector: str, shot: Path) -> dict:
    """Open ``url`` in a 1280x800 viewport without script, save the first screen to ``shot`` and
    return the bounding box of ``selector`` (the verdict table) as laid out there."""
    page = browser.new_page(viewport=VIEWPORT, java_script_enabled=False)
    page.goto(url)
    box = page.eval_on_selector(selector, "e => { const r = e.getBoundingClientRect(); "
                                          "return {top: r.top, bottom: r.bottom, width: r.width, visible: r.height > 0}; }")
    page.screenshot(path=str(shot))
    page.close()
    return box


def test_the_verdict_table_is_in_the_first_screen_of_the_index_a_dataset_and_the_report(browser, site, tmp_path):
    """Rendered in headless Chromium at 1280x800: the index's verdict table, a dataset's verdict per
    config (opened from its stable link) and the report's verdicts each start in the first screen,
    above the fold; the screenshots are saved (and copied to $HUBSURVEY_SCREENSHOTS when set)."""
    import os
    import shutil

    from hubsurvey.analysis.report import render_report
    from hubsurvey.analysis.site import dataset_href

    db = site.parent / "db" / "results.duckdb"
    with Store(db, read_only=True) as store:
        _, report_html = render_report(store, tmp_path / "report")
    shots = {
        "index.png": ((site / "index.html").resolve().as_uri(), "table.verdicts"),
        "dataset.png": ((site / "index.html").resolve().as_uri().rsplit("/", 1)[0] + "/" + dataset_href("acme/alpha"),
                        "article:target .answer"),  # acme/alpha: one config, its verdict line (no table of one row)
        "report.png": (report_html.resolve().as_uri(), "#at_a_glance table"),
    }
    for name, (url, selector) in shots.items():
        box = first_screen(browser, url, selector, tmp_path / name)
        assert box["visible"] and 0 <= box["top"] < VIEWPORT["height"], (name, box)
        assert box["width"] <= VIEWPORT["width"], (name, box)  # it fits the page: no sideways overflow
        assert (tmp_path / name).stat().st_size > 10_000  # a picture with content
    if os.environ.get(SCREENSHOTS_ENV):
        out = Path(os.environ[SCREENSHOTS_ENV])
        out.mkdir(parents=True, exist_ok=True)
        for name in shots:
            shutil.copy(tmp_path / name, out / name)
