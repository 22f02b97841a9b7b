"""The static site at Hub scale: build time, size, first render of the index and a keystroke in its
search box, in headless Chromium, beside two baselines measured in the same run.

    python benchmarks/bench_site.py [--datasets 100000] [--small 1000] [--out /tmp/hubsurvey-bench-site]

- ``site N``: ``hubsurvey site`` over a DB of N synthetic, schema-true datasets
  (``tests/site_data.py``: one real audit cloned, written through the Store);
- ``site small``: the same site over the first ``--small`` datasets;
- ``naive N``: the baseline the windowed table replaces: the same N rows as one static HTML table,
  its search hiding the rows that do not match (``display: none``), as a page without windowing does.

First render: ms from navigation start until the table shows its first rows (the site: site.js's
first draw; naive: the load event, when the whole table is parsed and laid out), and until every
data chunk is in (the site). Keystroke: ms from the input event to the next painted frame (median
of the queries below, each typed one character at a time from an empty box; the naive page types
only the first, as each of its keystrokes can take seconds). Targets: first render <= 2000 ms,
keystroke <= 100 ms. The system's Chromium is driven by playwright (no browser is downloaded).

Fit for a Space (``--before PYTHON``): the site of the same N datasets built by this checkout and by
the hubsurvey installed beside PYTHON (the code before the site was sharded), each in a child
process of its own, printed side by side: build seconds, MB and files, against the target of a
static Space at 100,000 datasets (under 10,000 files and 500 MB). One way to get that PYTHON::

    pip install --no-deps --target /tmp/before-pkg <checkout of the code before>
    printf '#!/bin/sh\nPYTHONPATH=/tmp/before-pkg exec %s "$@"\n' "$(which python)" > /tmp/before-python

``--no-browser`` skips the browser's measures (the size comparison alone).
"""

from __future__ import annotations

import argparse
import html
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from site_data import synthetic_db

from hubsurvey.analysis.site import build_site, index_rows
from hubsurvey.core.store import Store

CHROMIUM = "/usr/bin/chromium"
QUERIES = ("dataset-0", "owner12", "dataset-09", "zzz")  # typed a character at a time
TARGET_FIRST_MS, TARGET_KEY_MS = 2000, 100

NAIVE_JS = """
document.getElementById('search').addEventListener('input', function () {
  var q = this.value.toLowerCase(), rows = document.querySelectorAll('#rows tr');
  for (var i = 0; i < rows.length; i++) rows[i].style.display = rows[i].dataset.id.indexOf(q) < 0 ? 'none' : '';
});
window.hubsurveyNaive = true;
"""


def naive_page(store: Store, out: Path) -> Path:
    """Every dataset as one static table with a search that hides rows: the baseline."""
    out.mkdir(parents=True, exist_ok=True)
    rows = index_rows(store)
    body = "\n".join(
        f'<tr data-id="{html.escape(r["dataset_id"].lower())}"><th scope="row"><a href="{r["href"]}">'
        f'{html.escape(r["dataset_id"])}</a></th><td>{r["verdict"]}</td><td>{r["contaminated_pct"]}</td>'
        f'<td>{r["near_pct"]}</td><td>{", ".join(r["benchmarks"])}</td><td>{html.escape(r["family"] or "")}</td>'
        f'<td>{", ".join(r["tasks"])}</td></tr>' for r in rows)
    page = out / "naive.html"
    page.write_text(f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>naive</title></head><body>"
                    f"<input id='search' type='search'><table><tbody id='rows'>{body}</tbody></table>"
                    f"<script>{NAIVE_JS}</script></body></html>", encoding="utf-8")
    return page


def measure(browser, page_path: Path, naive: bool) -> dict[str, float]:
    page = browser.new_page(viewport={"width": 1200, "height": 900})
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(page_path.resolve().as_uri(), timeout=300_000)
    if naive:
        page.wait_for_function("window.hubsurveyNaive === true", timeout=300_000)
        first = page.evaluate("performance.getEntriesByType('navigation')[0].loadEventEnd")
        every = first
    else:
        page.wait_for_function("hubsurvey.times().allLoaded !== null", timeout=300_000)
        times = page.evaluate("hubsurvey.times()")
        first, every = times["firstDraw"], times["allLoaded"]
    page.set_default_timeout(600_000)  # the naive page may take seconds a keystroke at Hub scale
    keys = []
    for query in QUERIES[:1] if naive else QUERIES:  # the baseline: one query, to keep the run bounded
        for i in range(len(query) + 1):  # from the empty box, a character at a time
            keys.append(page.evaluate("""q => new Promise(done => {
                const box = document.getElementById('search'), t0 = performance.now();
                box.value = q; box.dispatchEvent(new Event('input'));
                requestAnimationFrame(() => setTimeout(() => done(performance.now() - t0), 0));
            })""", query[:i]))
    assert not errors, errors
    page.close()
    return {"first": first, "every": every, "key": statistics.median(keys), "key_max": max(keys)}


def folder_size(folder: Path) -> tuple[int, int]:
    files = [p for p in folder.rglob("*") if p.is_file()]
    return len(files), sum(p.stat().st_size for p in files)


TARGET_FILES, TARGET_MB = 10_000, 500  # a static Space at 100,000 datasets


def child_build(db: Path, out: Path) -> None:
    """Build the site of ``db`` into ``out`` with the hubsurvey this interpreter imports; print one
    JSON line (seconds, files, bytes, the module built with)."""
    import hubsurvey.analysis.site as site_module

    shutil.rmtree(out, ignore_errors=True)
    with Store(db, read_only=True) as store:
        t = time.perf_counter()
        site_module.build_site(store, out)
        seconds = time.perf_counter() - t
    files, size = folder_size(out)
    print(json.dumps({"seconds": seconds, "files": files, "bytes": size, "module": site_module.__file__}))


def compare_builds(out: Path, before: Path, n: int) -> None:
    """This checkout's site and the one before, of the same N datasets, each built in a child
    process. The code before may know an older schema: the DB is generated by it, and this
    checkout builds from a copy its Store upgrades (a migration adds tables; the rows stay)."""
    db = out / f"r-{n}-before.duckdb"
    if not db.exists():
        subprocess.run([str(before), __file__, "--child-generate", str(db), str(n)], check=True)
    upgraded = out / f"r-{n}-now.duckdb"
    shutil.copy(db, upgraded)
    with Store(upgraded):
        pass
    rows = {}
    for label, python, source in (("before", str(before), db), ("now", sys.executable, upgraded)):
        folder = out / f"site-{n}-{label}"
        done = subprocess.run([python, __file__, "--child-build", str(source), str(folder)], capture_output=True,
                              text=True, check=True)
        rows[label] = json.loads(done.stdout.strip().splitlines()[-1])
        print(f"{label}: {rows[label]} (load {os.getloadavg()[0]:.1f})", flush=True)
        shutil.rmtree(folder, ignore_errors=True)
    if rows["before"]["module"] == rows["now"]["module"]:
        sys.exit(f"--before {before} imports this checkout's hubsurvey, not the code before")
    print(f"\nthe site of {n} datasets, built in one run (2 cores, shared):")
    print(f"{'':10}{'build s':>10}{'MB':>10}{'files':>10}")
    for label, r in rows.items():
        print(f"{label:10}{r['seconds']:>10.1f}{r['bytes'] / 1e6:>10.1f}{r['files']:>10}")
    now = rows["now"]
    scope = "" if n == 100_000 else f" (judged at {n} datasets: the target is for 100,000)"
    print(f"target for a Space: < {TARGET_FILES} files ({'met' if now['files'] < TARGET_FILES else 'MISSED'}), "
          f"< {TARGET_MB} MB ({'met' if now['bytes'] / 1e6 < TARGET_MB else 'MISSED'}){scope}")


def main() -> None:
    if sys.argv[1:2] == ["--child-build"]:
        child_build(Path(sys.argv[2]), Path(sys.argv[3]))
        return
    if sys.argv[1:2] == ["--child-generate"]:  # the synthetic DB, written by this interpreter's hubsurvey
        synthetic_db(Path(sys.argv[2]), int(sys.argv[3]))
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--datasets", type=int, default=100_000)
    parser.add_argument("--small", type=int, default=1_000)
    parser.add_argument("--out", type=Path, default=Path("/tmp/hubsurvey-bench-site"))
    parser.add_argument("--keep", action="store_true", help="keep the DBs and sites (default: remove the sites)")
    parser.add_argument("--before", type=Path, metavar="PYTHON",
                        help="an interpreter whose hubsurvey is the code before: its site of the N datasets beside this one's")
    parser.add_argument("--no-browser", action="store_true", help="only the build, size and files (with --before)")
    args = parser.parse_args()

    args.out.mkdir(parents=True, exist_ok=True)
    print(f"load average before: {os.getloadavg()}")
    if args.before:
        compare_builds(args.out, args.before, args.datasets)
        if args.no_browser:
            return
    from playwright.sync_api import sync_playwright

    builds = {}
    for label, n in (("site small", args.small), ("site N", args.datasets)):
        db = args.out / f"r-{n}.duckdb"
        if not db.exists():
            t = time.perf_counter()
            synthetic_db(db, n)
            print(f"generated {n} datasets in {time.perf_counter() - t:.1f} s: {db}")
        with Store(db, read_only=True) as store:
            t = time.perf_counter()
            summary = build_site(store, args.out / f"site-{n}")
            built = time.perf_counter() - t
            if label == "site N":
                naive = naive_page(store, args.out / f"site-{n}-naive")
        builds[label] = (n, args.out / f"site-{n}", built, summary, os.getloadavg()[0])
        print(f"{label}: {summary.line()} (load {os.getloadavg()[0]:.1f})", flush=True)

    results = {}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        for label, (_, folder, _, _, _) in builds.items():
            results[label] = measure(browser, folder / "index.html", naive=False)
            print(f"{label}: {results[label]} (load {os.getloadavg()[0]:.1f})", flush=True)
        results["naive N"] = measure(browser, naive, naive=True)
        print(f"naive N: {results['naive N']} (load {os.getloadavg()[0]:.1f})", flush=True)
        browser.close()

    n_big = builds["site N"][0]
    print(f"\nload average after: {os.getloadavg()}  (2 cores, shared)")
    print(f"{'':14}{'datasets':>10}{'build s':>10}{'pages/s':>10}{'MB':>10}{'files':>9}"
          f"{'first ms':>10}{'all ms':>10}{'key ms':>9}{'key max':>9}")
    rows = [(label, builds[label]) for label in builds] + [("naive N", None)]
    for label, build in rows:
        r = results[label]
        if build is not None:
            n, folder, built, summary, _ = build
            files, size = folder_size(folder)
            head = f"{label:14}{n:>10}{built:>10.1f}{summary.dataset_pages / built:>10.0f}{size / 1e6:>10.1f}{files:>9}"
        else:
            size = naive.stat().st_size
            head = f"{label:14}{n_big:>10}{'':>10}{'':>10}{size / 1e6:>10.1f}{1:>9}"
        print(f"{head}{r['first']:>10.0f}{r['every']:>10.0f}{r['key']:>9.1f}{r['key_max']:>9.1f}")
    big = results["site N"]
    print(f"\ntargets at {n_big} datasets: first render {big['first']:.0f} ms (<= {TARGET_FIRST_MS}: "
          f"{'met' if big['first'] <= TARGET_FIRST_MS else 'MISSED'}), keystroke {big['key']:.1f} ms median "
          f"(<= {TARGET_KEY_MS}: {'met' if big['key'] <= TARGET_KEY_MS else 'MISSED'})")
    if not args.keep:
        for _, folder, _, _, _ in builds.values():
            shutil.rmtree(folder, ignore_errors=True)
        shutil.rmtree(naive.parent, ignore_errors=True)


if __name__ == "__main__":
    main()
