"""REPORT.md, report.html (escaping, self-contained, rendered by headless Chromium) and the dataset card."""

from __future__ import annotations

import base64
import io
import re
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import pytest
import yaml
from test_analysis_fixtures import DATASETS, SECRET, T0, audit_folder, build_planted_db, write_folder
from typer.testing import CliRunner

from hubsurvey.analysis.card import render_card
from hubsurvey.analysis.charts import TEXT_AND_LABEL_COLOR, TEXT_COLOR
from hubsurvey.analysis.report import render_report
from hubsurvey.cli import app
from hubsurvey.core.store import Store, insert

# End-to-end over a planted DB: the fast tier leaves this module out.
pytestmark = pytest.mark.slow

runner = CliRunner()
XSS = "<script>alert(1)</script>"
XSS_TAG = "<img src=x onerror=alert(2)>"
CHROMIUM = Path("/usr/bin/chromium")


@pytest.fixture(scope="module")
def planted_db(tmp_path_factory):
    return build_planted_db(tmp_path_factory.mktemp("planted"))


@pytest.fixture(scope="module")
def report_dir(planted_db, tmp_path_factory):
    out = tmp_path_factory.mktemp("report")
    with Store(planted_db, read_only=True) as store:
        paths = render_report(store, out)
    assert [p.name for p in paths] == ["REPORT.md", "report.html"]
    return out


@pytest.fixture(scope="module")
def xss_db(tmp_path_factory):
    """A dataset whose id is a script tag, crawled with a task category that is an HTML tag."""
    root = tmp_path_factory.mktemp("xss")
    db = root / "results.duckdb"
    audit_folder(write_folder(root, "acme/alpha", DATASETS["acme/alpha"]), db, dataset_id=XSS)
    with Store(db) as store:
        insert(store.con, "datasets", {"dataset_id": XSS, "tags": [f"task_categories:{XSS_TAG}"],
                                       "status": "eligible", "first_seen": T0, "last_seen": T0})
        assert store.records("SELECT dataset_id FROM current_measurements") == [{"dataset_id": XSS}]
    return db


def _rgb(hex_colour: str) -> tuple[int, int, int]:
    return tuple(int(hex_colour[i:i + 2], 16) for i in (1, 3, 5))


def _count_colour(image, colour: tuple[int, int, int], tolerance: int = 6) -> int:
    rgb = image.convert("RGB")
    return sum(n for n, px in rgb.getcolors(maxcolors=1 << 24) if all(abs(a - b) <= tolerance for a, b in zip(px, colour)))


# --- REPORT.md ----------------------------------------------------------------------------------------


@pytest.mark.slow
def test_markdown_tables_carry_hand_computed_values_and_denominators(report_dir):
    md = (report_dir / "REPORT.md").read_text()
    # findings_splits (see test_analysis.test_splits): train text 2 of 4, validation text 2 of 3 ...
    assert "| train | text | 2 | 4 | 50.00% | 2 | 4 | 50.00% |" in md
    assert "| validation | text+label | 1 | 2 | 50.00% | 0 | 2 | 0.00% |" in md
    assert "| 20% | 3 | 4 | 75.00% | 0 | 3 | 0.00% |" in md
    assert "**1** of **3** rows (33.33%)" in md
    assert "| 1 | gamma | acme/gamma | default | NR | 6 | 1 | 1 | 33.333% | NR |" in md
    assert "| failed job | unreadable | 2 | 6 | 33.33% | 2 |" in md
    # every table is introduced by its denominator
    sections = re.split(r"^## ", md, flags=re.MULTILINE)
    for section in sections:
        if "\n|" in section and not section.startswith(("What was measured", "Provenance")):  # not findings
            assert "enominator" in section or "Ranked among" in section, section[:60]
    assert '"task_categories": \\["text-classification"\\]' in md  # the run's filter, as provenance
    assert SECRET not in md


@pytest.mark.slow
def test_markdown_has_the_exact_findings_with_their_denominators(report_dir):
    md = (report_dir / "REPORT.md").read_text()
    section = md.split("## 8. Beyond LLE")[1].split("\n## ")[0]
    assert "4 of 4 datasets (4 of 4 result rows)" in " ".join(section.split())  # all measured by exact-2026
    # label conflicts over alpha, beta, delta (gamma has no label): alpha's t1 (label 0 in test, 1 in
    # train), beta's u0 (labels 0 and 1 in test)
    assert ("| label conflict | raw | 2 | 3 | 66.67% | test row in train with another label: 1 datasets (33.33%), "
            "1 test rows; text with two labels in one split: 1 datasets (33.33%) |") in section
    # train↔validation leaks over alpha, gamma, delta (beta has no validation): none
    assert "| train↔validation leak | normalized | 0 | 3 | 0.00% | 0 validation rows in train of 6 (0.00%) |" in section
    assert "| normalized contamination exceeds raw | normalized vs raw | 0 | 4 | 0.00% |" in section
    assert "No dataset gains." in section
    assert "`hubsurvey show <dataset> --kind leaks|duplicates|conflicts`" in section
    definitions = md.split("## Definitions")[1]
    assert "- **test_rows_contaminated**: test rows in train or validation" in definitions
    assert "normalized_: each text value Unicode NFKC-normalized" in definitions


@pytest.mark.slow
def test_report_is_deterministic(planted_db, report_dir, tmp_path):
    with Store(planted_db, read_only=True) as store:
        render_report(store, tmp_path)
    for name in ("REPORT.md", "report.html"):
        assert (tmp_path / name).read_bytes() == (report_dir / name).read_bytes(), name


@pytest.mark.slow
def test_report_command(planted_db, tmp_path):
    r = runner.invoke(app, ["report", "--out", str(tmp_path / "r"), "--db", str(planted_db), "--top", "1"])
    assert r.exit_code == 0, r.output
    md = (tmp_path / "r" / "REPORT.md").read_text()
    assert "## 4. Top 1 rows" in md and "acme/gamma" in md and "| 2 | beta" not in md
    r = runner.invoke(app, ["report", "--out", str(tmp_path / "r2"), "--db", str(tmp_path / "none.duckdb")])
    assert r.exit_code == 3 and not (tmp_path / "r2").exists()


@pytest.mark.slow
def test_report_on_an_empty_store(tmp_path):
    with Store(tmp_path / "empty.duckdb") as store:
        md_path, html_path = render_report(store, tmp_path / "out")
    assert "(no rows)" in md_path.read_text() and "n/a" in md_path.read_text()
    assert "data:image/png;base64," in html_path.read_text()


# --- report.html ----------------------------------------------------------------------------------------


@pytest.mark.slow
def test_html_escapes_dataset_and_tag_names(xss_db, tmp_path):
    with Store(xss_db, read_only=True) as store:
        md_path, html_path = render_report(store, tmp_path)
    html, md = html_path.read_text(), md_path.read_text()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "&lt;img src=x onerror=alert(2)&gt;" in html
    assert "<script" not in html.lower() and "<img src=x" not in html
    assert "<script" not in md.lower() and "<img src=x" not in md and "&lt;script&gt;alert(1)&lt;/script&gt;" in md


def test_html_is_self_contained(report_dir):
    html = (report_dir / "report.html").read_text()
    assert not re.search(r"https?://|//[a-z0-9.-]+\.[a-z]{2,}/", html, re.IGNORECASE)
    assert "<script" not in html.lower() and "<link" not in html.lower()
    assert "@import" not in html and "url(" not in html and "@font-face" not in html
    sources = re.findall(r'<img [^>]*src="([^"]*)"', html)
    # splits, test bias, task categories, raw vs normalized contamination, near vs exact, the near curve
    assert len(sources) == 6 and all(s.startswith("data:image/png;base64,") for s in sources)


@pytest.mark.slow
def test_charts_are_pngs_drawn_in_the_series_colours(report_dir):
    from PIL import Image

    html = (report_dir / "report.html").read_text()
    splits_png = re.search(r'id="chart-splits"[^>]*src="data:image/png;base64,([^"]+)"', html).group(1)
    image = Image.open(io.BytesIO(base64.b64decode(splits_png)))
    assert image.size[0] >= 600
    assert _count_colour(image, _rgb(TEXT_COLOR)) > 2000
    assert _count_colour(image, _rgb(TEXT_AND_LABEL_COLOR)) > 1000


@pytest.mark.slow
@pytest.mark.skipif(not CHROMIUM.exists(), reason="chromium is not installed (apt-get install chromium)")
def test_report_renders_in_headless_chromium(report_dir, tmp_path):
    from PIL import Image

    shot = tmp_path / "shot.png"
    cmd = [
        str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        f"--user-data-dir={tmp_path / 'profile'}", f"--screenshot={shot}", "--window-size=1200,2000",
        "--force-device-scale-factor=1", "--hide-scrollbars",
        (report_dir / "report.html").resolve().as_uri(),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert shot.exists(), proc.stderr[-2000:]
    image = Image.open(shot).convert("RGB")
    assert image.size == (1200, 2000)
    colours = image.getcolors(maxcolors=1 << 24)
    assert len(colours) > 200  # not blank: text, tables and charts
    # both charts of the first screen are drawn: their series colours fill real areas
    assert _count_colour(image, _rgb(TEXT_COLOR)) > 5000
    assert _count_colour(image, _rgb(TEXT_AND_LABEL_COLOR)) > 2000
    # the split chart sits below the contents, the verdicts at a glance and the overview table, in the page body
    red = _rgb(TEXT_COLOR)
    top_band = image.crop((0, 0, 1200, 500))
    chart_band = image.crop((0, 500, 1200, 2000))
    assert _count_colour(chart_band, red) > 5 * max(1, _count_colour(top_band, red))


# --- the dataset card -----------------------------------------------------------------------------------


def test_card_parses_and_has_the_required_yaml(planted_db):
    from huggingface_hub import DatasetCard

    from hubsurvey_standin.cards import front_matter, parse_card

    with Store(planted_db, read_only=True) as store:
        text = render_card(store, "me/results", ["data/train-00000-of-00001.parquet", "results.csv", "lle.csv", "REPORT.md"])
    card = DatasetCard(text)
    data = card.data.to_dict()
    assert data["license"] == "cc-by-4.0" and data["pretty_name"]
    assert data["size_categories"] == ["n<1K"]
    assert data["task_categories"] == ["text-classification", "token-classification"]  # the measured datasets' tags
    assert "lle" in data["tags"]
    assert data["configs"] == [{"config_name": "default", "data_files": [{"split": "train", "path": "data/train-*.parquet"}]}]
    assert yaml.safe_load(front_matter(text)) == data
    assert parse_card(text)[1] == []  # the stand-in's validate-yaml rules
    body = card.text
    # methods with the definitions, NR included
    assert "**NR**: not relevant" in body and "test_biased" in body and "valididation" in body
    # provenance: date, filters of the latest run, versions, method, counts
    assert "2026-01-02 03:04 UTC" in body
    assert '"task_categories": \\["text-classification"\\]' in body and '"limit": 100' in body
    assert SECRET not in text and not re.search(r"^\s*\w*token\w*\s*:", front_matter(text), re.MULTILINE | re.IGNORECASE)
    assert "| method | exact-2026 v1, groups-2026 v1, lle-2024 v1, near-2026 v1, rows-2026 v1, time-2026 v1 |" in body and "hubsurvey 0.1.0" in body  # every method measured
    assert "| result rows / datasets / configs | 4 / 4 / 4 |" in body
    assert "| jobs / done / failed | 6 / 3 / 3 |" in body
    # the findings table states its denominator
    assert 'Denominator ("of")' in body and "| train | text | 2 | 4 | 50.00% |" in body


@pytest.mark.slow
def test_card_escapes_a_hostile_pretty_name_in_yaml(planted_db):
    from huggingface_hub import DatasetCard

    name = 'x"\n---\nlicense: evil # <b>'
    with Store(planted_db, read_only=True) as store:
        text = render_card(store, "me/results", pretty_name=name)
    data = DatasetCard(text).data.to_dict()
    assert data["pretty_name"] == name and data["license"] == "cc-by-4.0"


@pytest.mark.slow
def test_card_takes_filters_from_the_newest_crawl_run(tmp_path):
    from datetime import timedelta

    db = build_planted_db(tmp_path)
    with Store(db) as store:
        insert(store.con, "runs", {
            "run_id": "crawl-1", "command": "crawl",
            "args": {"filter": "language:fr", "min_downloads": 10, "auth": {"hf_token": SECRET}},
            "started_at": T0 - timedelta(days=1), "status": "done", "tool_version": "0.1.0",
        })
    with Store(db, read_only=True) as store:
        text = render_card(store, "me/results")
    provenance = text.split("## Provenance")[1]
    assert "| latest run | run (" in provenance  # the latest run
    assert "language:fr" in provenance and '"min_downloads": 10' in provenance  # the crawl's filters
    assert "text-classification" not in provenance  # not the newest run's filters
    assert SECRET not in text and "hf_token" not in text


@pytest.mark.slow
def test_card_cites_lle_and_shows_no_local_path(tmp_path):
    from datetime import timedelta

    db = build_planted_db(tmp_path)
    local = {"db": "/home/someone/survey/results.duckdb", "report_dir": "out", "roles_file": "./roles.yaml",
             "cache_dir": "/var/cache/hubsurvey", "datasets": ["acme/alpha", "/srv/data/folder"]}
    with Store(db) as store:
        insert(store.con, "runs", {
            "run_id": "run-2", "command": "run", "args": {"filter": "language:en", **local},
            # newer than the planted DB's own run (a real run, started now)
            "started_at": datetime.now(UTC) + timedelta(days=1), "status": "done", "tool_version": "0.1.0",
        })
    with Store(db, read_only=True) as store:
        text = render_card(store, "me/results")
    for needle in ("/home/someone", "results.duckdb", "roles.yaml", "/var/cache", "/srv/data", "report_dir", str(tmp_path)):
        assert needle not in text, needle
    provenance = text.split("## Provenance")[1]
    assert "language:en" in provenance and "acme/alpha" in provenance  # the filters stay
    assert "https://huggingface.co/blog/lbourdois/lle" in text and "LLE: Leaks, leaks everywhere" in text
    assert "https://huggingface.co/datasets/lbourdois/LLE" in text


@pytest.mark.slow
def test_card_task_categories_come_from_the_measured_datasets_only(tmp_path):
    from huggingface_hub import DatasetCard

    db = build_planted_db(tmp_path)
    with Store(db) as store:  # a crawled dataset that was never measured does not count
        insert(store.con, "datasets", {"dataset_id": "acme/unmeasured", "tags": ["task_categories:summarization"],
                                       "status": "eligible", "first_seen": T0, "last_seen": T0})
    with Store(db, read_only=True) as store:
        data = DatasetCard(render_card(store, "me/results")).data.to_dict()
    assert data["task_categories"] == ["text-classification", "token-classification"]
