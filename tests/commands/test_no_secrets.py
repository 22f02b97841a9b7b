"""No secret anywhere: HF_TOKEN set to a planted secret through crawl, run,
report, export and publish --push against a Hub stand-in that requires the token and echoes the
Authorization header into its errors. Scanned with SQL on a DB too large for a raw-bytes grep."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest
from leaks import db_hits, db_text_columns, secret_hits

from hubsurvey_standin import Faults, Scope, StandinHub, generate_minihub

SECRET = "hf_NoSecretsE2E_planted_7c1d9e2a4b"
FILLER = 6000  # listed datasets: the datasets table exceeds 5,000 rows


def test_the_sql_scan_finds_what_a_raw_bytes_grep_misses(tmp_path):
    """The reason for the helper: in a 20,000-row table DuckDB compresses the strings, and the one
    row holding the secret is not in the file's bytes; the SQL scan finds it."""
    db = tmp_path / "big.duckdb"
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE errors AS SELECT 'HTTP 403 Authorization: Bearer ' "
                "|| CASE WHEN i = 10000 THEN ? ELSE 'hf_' || md5(i::VARCHAR) END || ' org/ds-' || i AS msg, "
                "['x', 'y'] AS tags FROM range(20000) r(i)", [SECRET])
    con.close()
    assert SECRET.encode() not in db.read_bytes()  # a raw-bytes grep would pass this DB
    assert db_hits(db, SECRET) == ["main.errors.msg (1 rows)"]
    # lists of strings, JSON, and identifiers that need quoting are scanned too
    con = duckdb.connect(str(db))
    con.execute("INSERT INTO errors VALUES ('ok', ['z', ?])", [SECRET])
    con.execute('CREATE TABLE "odd ""name""" ("a b" JSON)')
    con.execute('INSERT INTO "odd ""name""" VALUES (?)', [f'{{"t": "{SECRET}"}}'])
    con.close()
    assert db_hits(db, SECRET) == ["main.errors.msg (1 rows)", "main.errors.tags (1 rows)", 'main.odd "name".a b (1 rows)']


def _cli(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess:
    """One hubsurvey command in its own process, at DEBUG (tracebacks logged), output captured."""
    code = "import sys; from hubsurvey.cli import app; sys.argv[0] = 'hubsurvey'; app()"
    return subprocess.run([sys.executable, "-c", code, "-v", *args], env=env, cwd=cwd, capture_output=True,
                          text=True, timeout=600)


@pytest.mark.slow
def _minihub_benchmarks(path: Path) -> Path:
    from hubsurvey_standin.minihub import BENCHMARKS

    path.write_text("".join(f"[[benchmark]]\nid = {json.dumps(b['id'])}\nconfig = {json.dumps(b['config'])}\n"
                            f"split = {json.dumps(b['split'])}\ntext_columns = {json.dumps(b['text_columns'])}\n\n"
                            for b in BENCHMARKS))
    return path


def test_a_planted_token_reaches_no_db_column_log_report_export_or_published_file(tmp_path):
    root = generate_minihub(tmp_path / "hub", seed=0, filler=FILLER)
    db = tmp_path / "results.duckdb"
    # A careless proxy: refused requests come back with the request's Authorization header in the
    # body and in X-Error-Message. During the crawl: tree listings and dataset infos (exclusions);
    # during the run: the file reads of some jobs (job errors, stored with their message).
    def echo(dataset: str, *categories: str) -> Faults:
        return Faults(error_burst_every=1, error_burst_len=1, error_status=403, echo_auth=True,
                      scope=Scope(categories=frozenset(categories), dataset=dataset))
    env = {**os.environ, "HF_TOKEN": SECRET, "HF_HUB_CACHE": str(tmp_path / "hf"), "HUBSURVEY_CACHE_DIR": str(tmp_path / "cache"),
           "HUBSURVEY_MAX_ATTEMPTS": "2", "HUBSURVEY_READ_TIMEOUT": "5"}
    outputs: dict[str, str] = {}
    with StandinHub(root, faults=echo("mini-nlp/t*", "tree", "info"), valid_tokens={SECRET}) as hub:
        env["HF_ENDPOINT"] = hub.url
        steps = {
            "crawl": ["crawl", "--db", str(db), "--rate", "0", "--file-rate", "0"],
            "run": ["run", "--db", str(db), "--rate", "0", "--file-rate", "0", "--workers", "2",
                    "--report-dir", str(tmp_path / "run-report")],
            # the models declaring the contaminated datasets: their listings echo the header too
            "contamination": ["contamination", "--db", str(db), "--rate", "0", "--file-rate", "0",
                              "--benchmarks", str(_minihub_benchmarks(tmp_path / "benchmarks.toml"))],
            "exposure": ["exposure", "--db", str(db), "--rate", "0"],
            "report": ["report", "--db", str(db), "--out", str(tmp_path / "report")],
            "export": ["export", "--db", str(db), "--out", str(tmp_path / "export")],
            "export-lle": ["export", "--db", str(db), "--out", str(tmp_path / "export-lle"), "--lle-compat"],
            "publish": ["publish", "--db", str(db), "--repo", "me/survey-results", "--push", "--out", str(tmp_path / "publish")],
            "notify": ["notify", "--db", str(db), "--post", "--max", "3", "--out", str(tmp_path / "notify")],
            "site": ["site", "--db", str(db), "--out", str(tmp_path / "site")],
            "publish-site": ["publish", "--site", "--db", str(db), "--repo", "me/survey-site", "--push",
                             "--out", str(tmp_path / "space")],
        }
        for name, args in steps.items():
            if name == "run":
                hub.set_faults(echo("mini-nlp/[in]*", "resolve_get"))
            elif name == "exposure":
                hub.set_faults(echo("mini-nlp/[it]*", "models"))
            elif name == "report":
                hub.set_faults(Faults())
            elif name == "notify":  # one dataset's info refused, with the header echoed: recorded, scrubbed
                hub.set_faults(echo("mini-lab/messy_text", "info"))
            result = _cli(args, env, tmp_path)
            outputs[f"{name} stdout"], outputs[f"{name} stderr"] = result.stdout, result.stderr
            assert result.returncode in (0, 1), (name, result.returncode, result.stderr[-3000:])
            assert "Traceback" not in result.stderr, (name, result.stderr[-3000:])
        assert hub.stats()["faults_injected"] > 0  # the echoing errors happened
        # (the run failed the jobs of mini-nlp/[in]*: toy_ner and topics_no_val are the contaminated ones here)
        assert "listing the models that declare mini-nlp/toy_ner failed: HTTP 403" in outputs["exposure stderr"]
        repo = hub.catalog.get("me/survey-results")
        received = {path: blob.read() for path, blob in repo.main.files.items()}
        received |= {f"commit {i}": repr(c).encode() for i, c in enumerate(hub.commits("me/survey-results"))}
        received |= {f"discussions of {repo}": repr(found).encode() for repo, found in hub.discussions.items()}
        space = hub.catalog.get("me/survey-site", "space")
        received |= {f"space {path}": blob.read() for path, blob in space.main.files.items()}
    assert sum(len(found) for found in hub.discussions.values()) == 3  # notify posted 3, one dataset failed
    assert "failed   mini-lab/messy_text" in outputs["notify stdout"]
    assert any(p.endswith(".parquet") for p in received) and "README.md" in received

    # the DB is one that a raw-bytes grep could not vouch for
    con = duckdb.connect(str(db), read_only=True)
    (largest,) = con.execute("SELECT count(*) FROM datasets").fetchone()
    con.close()
    assert largest > 5000 and db_text_columns(db) >= 20
    assert db_hits(db, "Authorization: Bearer ***")  # the echoed header was stored, scrubbed
    hits = secret_hits(SECRET, db=db, texts=outputs,
                       paths=[tmp_path / "run-report", tmp_path / "report", tmp_path / "export",
                              tmp_path / "export-lle", tmp_path / "publish", tmp_path / "notify", tmp_path / "site",
                              tmp_path / "space"],
                       blobs=received)
    assert not hits, hits
    # and the scan does see the files it vouches for
    names = {p.name for p in (tmp_path / "export").iterdir()} | {p.name for p in (tmp_path / "report").iterdir()}
    assert {"results.csv", "REPORT.md", "report.html"} <= names
