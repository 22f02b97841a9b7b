"""hubsurvey notify, the opt-in Hub bot: escaping, paths, and every Hub path through the stand-in
(dry run, post, never twice for one revision, a new revision, opt-out, the cap, bad tokens, gated)."""

from __future__ import annotations

import html
import re
import shutil
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from leaks import db_hits, secret_hits
from markdown_it import MarkdownIt
from typer.testing import CliRunner

from hubsurvey.analysis import notify as bot
from hubsurvey.analysis.site import dataset_href, dataset_page_path, href
from hubsurvey.cli import app
from hubsurvey.core.errors import UsageError
from hubsurvey.core.hub import HubClient
from hubsurvey.core.store import Store
from hubsurvey_standin import Faults, Scope, StandinHub

runner = CliRunner()
WRITE = "hf_notify_write_token_3e8a1f0c9b7d"
READ = "hf_notify_read_token_6b2d9c4e1a05"
# values a hostile dataset puts in its rows: a mention, a link, HTML, a code fence, control characters
HOSTILE = ["@alice look [here](https://evil.example/x)", "<img src=x onerror=alert(1)>",
           "``` `tick` ```\x1b[31m red", "**bold** _it_ \u202e gnp.exe", "<https://evil.example/auto>"]
COMMONMARK = MarkdownIt("commonmark")


# --- escaping, paths, titles (no Hub) ----------------------------------------------------------------

def _code_spans(rendered_html: str) -> list[str]:
    return [html.unescape(s) for s in re.findall(r"<code>(.*?)</code>", rendered_html, re.DOTALL)]


@pytest.mark.parametrize("value", [*HOSTILE, "`", " lead", "trail ", "``", "a`b``c", "", None, "x" * 400])
def test_a_value_is_one_code_span_holding_exactly_its_visible_text(value):
    out = COMMONMARK.render(f"see {bot.inline_code(value)} here")
    assert _code_spans(out) == [bot._neutral(value, bot.VALUE_CHARS) or "(empty)"]
    assert "<a " not in out and "<img" not in out and "@" not in out and "\x1b" not in out


@pytest.mark.slow
@settings(max_examples=100, deadline=None)
@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=60))
def test_any_text_stays_inside_its_code_span(value):
    out = COMMONMARK.render(f"- {bot.inline_code(value)}")
    assert _code_spans(out) == [bot._neutral(value, bot.VALUE_CHARS) or "(empty)"]
    assert "<a " not in out and "@" not in out


@pytest.mark.parametrize("dataset_id", ["acme/ok", "../../etc/passwd", "acme/../../x", "a/b/c", "..", "/abs", "x" * 600])
def test_a_message_path_stays_inside_its_folder(tmp_path, dataset_id):
    path = bot.message_path(tmp_path, dataset_id)
    assert path.parent == tmp_path and path.name.endswith(".md") and len(path.name) < 255


def test_the_bot_recognises_its_own_titles_only():
    made = "[hubsurvey] Test split check: 12.5% of test rows contaminated (verdict unreliable, revision 0123456789ab)"
    assert bot.parse_title(made) == {"verdict": "unreliable", "revision": "0123456789ab"}
    assert bot.parse_title("Test split leaks (verdict unreliable, revision 0123456789ab)") is None
    assert bot.parse_title("[hubsurvey] something else") is None


def test_lists_site_urls_and_opt_out(tmp_path):
    entries = ["acme", "beta/one", "gamma/*-test"]
    assert [bot.listed(d, entries) for d in ("acme/x", "beta/one", "beta/two", "gamma/a-test", "gamma/a")] == \
        [True, True, False, True, False]
    (tmp_path / "l.txt").write_text("# reviewed\nacme  # all of it\n\nbeta/one\n")
    assert bot.read_list(tmp_path / "l.txt") == ["acme", "beta/one"]
    assert bot.check_site_url("https://s.example/") == "https://s.example"
    for bad in ("javascript:alert(1)", "https://s.example/a b", "https://s.example/)](x", "ftp://s.example",
                "https://someone@s.example"):
        with pytest.raises(UsageError):
            bot.check_site_url(bad)
    # the link to the page the site writes the dataset on (d/<shard>.html) and its anchor there
    from urllib.parse import unquote, urlsplit

    from hubsurvey.analysis.site import dataset_anchor

    page = bot.site_page("https://s.example", "acme/x y")
    assert unquote(urlsplit(page).path) == "/" + dataset_page_path("acme/x y")
    assert urlsplit(page).fragment == dataset_anchor("acme/x y") == "acme:2Fx:20y"
    assert bot.opted_out(["a", "HubSurvey-Opt-Out"]) and bot.opted_out([], {"hubsurvey": "opt-out"})
    assert not bot.opted_out(["hubsurvey"], {"hubsurvey": "yes"})


def _candidate(revision: str, verdict: str) -> bot.Candidate:
    return bot.Candidate("acme/x", revision, verdict, "exact-2026", "normalized", "normalized_contaminated_test_pct",
                         12.0, [{"config": "default"}], [], [], None, None, None, "0", "")


def test_a_repeat_is_the_same_revision_or_the_verdict_the_authors_last_heard():
    told = [("c" * 40, "caution", 2, "second"), ("a" * 40, "unreliable", 1, "first")]  # newest first
    assert bot._repeat(_candidate("a" * 40, "clean"), told, "recorded")[1] == "first"  # that revision: never again
    assert bot._repeat(_candidate("b" * 40, "caution"), told, "recorded") == (
        "already notified at revision cccccccccccc with the same verdict caution (discussion #2, recorded)", "second")
    # unreliable, then caution, now unreliable again: the verdict changed since the last message
    assert bot._repeat(_candidate("b" * 40, "unreliable"), told, "recorded") == (None, None)
    assert bot._repeat(_candidate("b" * 40, "unreliable"), [], "recorded") == (None, None)
    assert bot._repeat(_candidate("abcdef0123456789" + "0" * 24, "x"), [("abcdef012345", "y", 3, "short")], "on the Hub")[1] == "short"


# --- through the stand-in ---------------------------------------------------------------------------------

def _texts(prefix: str, n: int) -> list[str]:
    return [f"{prefix} sentence number {i} about rivers" for i in range(n)]


def _write(root: Path, dataset_id: str, leaked: list[str], clean_test: int) -> Path:
    """train: 30 own rows + the leaked texts; test: the leaked texts + ``clean_test`` own rows."""
    folder = root / dataset_id.replace("/", "__")
    train = _texts(f"{dataset_id} train", 30) + leaked
    test = leaked + _texts(f"{dataset_id} test", clean_test)
    for split, texts in (("train", train), ("test", test)):
        out = folder / "default" / split
        out.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.table({"text": pa.array(texts, pa.string())}), out / "0000.parquet")
    return folder


TAGS = ["task_categories:text-classification", "language:en", "modality:text", "format:parquet"]
DATASETS = {  # id: (leaked test rows, clean test rows, index entry extras)
    "acme/leaky": (HOSTILE, 5, {}),                           # 5 of 10: 50%
    "acme/mild": (["one leaked row"], 60, {}),                # 1 of 61: below 5%
    "acme/optout": (_texts("opt", 4), 6, {"tags": [*TAGS, "hubsurvey-opt-out"]}),
    "acme/optcard": (_texts("card", 4), 6, {"cardData": {"hubsurvey": "opt-out", "tags": ["x"]}}),
    "acme/gated": (_texts("gate", 4), 6, {"gated": "manual"}),
    "acme/private": (_texts("priv", 4), 6, {"private": True}),
    "beta/two": (_texts("two", 2), 8, {}),                    # 20%
    "beta/three": (_texts("three", 3), 7, {}),                # 30%
}


@pytest.fixture(scope="module")
def surveyed(tmp_path_factory):
    """A stand-in serving the datasets above, and a DB that crawled it and audited each of them."""
    import json

    from hubsurvey.crawler.crawl import crawl
    from hubsurvey.survey.audit import audit

    base = tmp_path_factory.mktemp("notify")
    root = base / "hub"
    entries = []
    for dataset_id, (leaked, clean, extra) in DATASETS.items():
        _write(root, dataset_id, leaked, clean)
        entries.append({"id": dataset_id, "tags": TAGS, **extra})
    (root / "index.json").write_text(json.dumps(entries))
    db = base / "results.duckdb"
    with StandinHub(root, valid_tokens={WRITE}, read_only_tokens={READ}) as hub:
        client = HubClient(endpoint=hub.url, token=WRITE, rate=0, file_rate=0, cache_dir=base / "cache")
        with Store(db) as store:
            crawl(store, client)
        for dataset_id in DATASETS:
            outcome = audit(dataset_id, db=db, client=client, near=False)
            assert not outcome.errors, outcome.errors
        yield hub, db, base


@pytest.fixture
def hub_db(surveyed, tmp_path, monkeypatch):
    """The stand-in with no discussions yet, a fresh copy of the DB, and the environment of a user."""
    hub, db, _ = surveyed
    hub.discussions.clear()
    hub.set_faults(Faults())
    hub.reset_stats()
    copy = tmp_path / "results.duckdb"
    shutil.copy(db, copy)
    monkeypatch.setenv("HF_ENDPOINT", hub.url)
    monkeypatch.chdir(tmp_path)
    return hub, copy


def _notify(db: Path, *args: str, token: str | None = WRITE, monkeypatch=None):
    if monkeypatch is not None:
        if token:
            monkeypatch.setenv("HF_TOKEN", token)
        else:
            monkeypatch.delenv("HF_TOKEN", raising=False)
    return runner.invoke(app, ["notify", "--db", str(db), "--out", str(db.parent / "msgs"), *args])


def _rows(db: Path) -> list[tuple]:
    with duckdb.connect(str(db), read_only=True) as con:
        return con.execute("SELECT dataset_id, status, reason, discussion_num FROM notifications "
                           "ORDER BY created_at, dataset_id").fetchall()


def _mine(hub: StandinHub) -> dict[str, list[str]]:
    return {repo: [d["title"] for d in found] for repo, found in hub.discussions.items() if found}


@pytest.mark.slow
def test_dry_run_drafts_reviews_and_touches_no_hub(hub_db, monkeypatch):
    hub, db = hub_db
    hub.reset_stats()
    r = _notify(db, "--site-url", "https://survey.example.org", token=None, monkeypatch=monkeypatch)
    assert r.exit_code == 0, r.output
    assert sum(v for k, v in hub.stats().items()) == 0  # not one request
    rows = {d: (s, reason) for d, s, reason, _ in _rows(db)}
    assert rows == {
        "acme/leaky": ("drafted", None), "beta/three": ("drafted", None), "beta/two": ("drafted", None),
        "acme/optcard": ("drafted", None),  # its card metadata is only read when posting
        "acme/optout": ("skipped", "opted out (card tag hubsurvey-opt-out)"),
        "acme/gated": ("skipped", "gated (manual)"),
        "acme/private": ("skipped", "private"),
    }  # acme/mild is below the threshold
    files = sorted(p.name for p in (db.parent / "msgs").iterdir())
    assert files == ["acme__leaky.md", "acme__optcard.md", "beta__three.md", "beta__two.md"]
    text = (db.parent / "msgs" / "acme__leaky.md").read_text()
    assert "50.0% of the test rows" in text and "hubsurvey audit acme/leaky --config default" in text
    assert "hubsurvey clean acme/leaky --config default" in text and "hubsurvey-opt-out" in text
    page = f"https://survey.example.org/{href(dataset_page_path('acme/leaky'))}#acme:2Fleaky"  # the site's link
    assert page == f"https://survey.example.org/{dataset_href('acme/leaky')}" and page in text
    rendered = COMMONMARK.render(text)
    links = re.findall(r'<a href="([^"]*)"', rendered)
    assert links == [page]  # no link from the data
    assert "<img" not in rendered and "@" not in text and "\x1b" not in text and "\u202e" not in text
    spans = _code_spans(rendered)
    assert sum(s in spans for s in (bot._neutral(v, bot.VALUE_CHARS) for v in HOSTILE)) == 3  # three examples
    assert _mine(hub) == {}


@pytest.mark.slow
def test_post_then_never_twice_even_without_the_table(hub_db, monkeypatch):
    hub, db = hub_db
    r = _notify(db, "--post", monkeypatch=monkeypatch)
    assert r.exit_code == 0, r.output
    posted = _mine(hub)
    assert sorted(posted) == ["acme/leaky", "beta/three", "beta/two"]
    assert all(len(t) == 1 and bot.parse_title(t[0])["verdict"] == "unreliable" for t in posted.values())
    body = hub.discussions["acme/leaky"][0]["events"][0]["data"]["latest"]["raw"]
    assert body == (db.parent / "msgs" / "acme__leaky.md").read_text().strip()  # the library strips it
    statuses = {d: (s, reason) for d, s, reason, _ in _rows(db)}
    assert statuses["acme/optcard"] == ("skipped", "opted out (dataset card)")
    assert statuses["acme/gated"] == ("skipped", "gated (manual)") and statuses["acme/private"] == ("skipped", "private")
    assert statuses["acme/optout"][0] == "skipped"
    assert {d for d, (s, _) in statuses.items() if s == "posted"} == set(posted)

    again = _notify(db, "--post", monkeypatch=monkeypatch)
    assert again.exit_code == 0 and _mine(hub) == posted
    assert "already notified for this revision (discussion #1, recorded)" in again.output
    assert ("acme/leaky", "skipped", "already notified for this revision (discussion #1, recorded)", 1) in _rows(db)

    with duckdb.connect(str(db)) as con:
        con.execute("DELETE FROM notifications")
    third = _notify(db, "--post", monkeypatch=monkeypatch)
    assert third.exit_code == 0, third.output
    assert _mine(hub) == posted  # the Hub's own list caught it
    found = {d: (s, reason, n) for d, s, reason, n in _rows(db)}
    assert found["acme/leaky"] == ("skipped", "already notified for this revision (discussion #1, on the Hub)", 1)


@pytest.mark.slow
def test_a_discussion_of_someone_else_with_the_title_does_not_count(hub_db, monkeypatch):
    hub, db = hub_db
    with Store(db, read_only=True) as store:
        c = next(c for c in bot.candidates(store) if c.dataset_id == "beta/two")
    hub.add_discussion("beta/two", bot.title(c), "a copy by someone", author="someone-else")
    hub.discussions_page_size = 1  # the list is paged: every page is read
    try:
        r = _notify(db, "--post", "--allow", str(_list(db, "beta/two")), monkeypatch=monkeypatch)
    finally:
        hub.discussions_page_size = 50
    assert r.exit_code == 0, r.output
    assert [d["author"]["name"] for d in hub.discussions["beta/two"]] == ["someone-else", "standin-user"]


def _list(db: Path, *entries: str) -> Path:
    path = db.parent / f"list-{len(entries)}-{entries[0].replace('/', '_')}.txt"
    path.write_text("\n".join(entries) + "\n")
    return path


@pytest.mark.slow
def test_opt_out_by_deny_and_allow_lists(hub_db, monkeypatch):
    hub, db = hub_db
    r = _notify(db, "--post", "--deny", str(_list(db, "acme", "beta/two")), monkeypatch=monkeypatch)
    assert r.exit_code == 0, r.output
    assert sorted(_mine(hub)) == ["beta/three"]
    reasons = {d: reason for d, _s, reason, _ in _rows(db)}
    assert reasons["acme/leaky"] == reasons["beta/two"] == "in the deny list"
    r = _notify(db, "--post", "--allow", str(_list(db, "beta/*")), monkeypatch=monkeypatch)
    assert sorted(_mine(hub)) == ["beta/three", "beta/two"]
    assert "acme/" not in r.output  # the allow list narrows the candidates: the others are not considered
    # a skip is recorded once per revision and reason, however many runs meet it
    _notify(db, "--deny", str(_list(db, "acme", "beta/two")), token=None, monkeypatch=monkeypatch)
    assert [d for d, _s, reason, _ in _rows(db) if reason == "in the deny list"].count("acme/leaky") == 1


@pytest.mark.slow
def test_at_most_n_posts_a_run(hub_db, monkeypatch):
    hub, db = hub_db
    r = _notify(db, "--post", "--max", "1", monkeypatch=monkeypatch)
    assert r.exit_code == 0, r.output
    assert list(_mine(hub)) == ["acme/leaky"]  # the worst first
    assert "1 posted" in r.output and "left for the next run" in r.output
    r = _notify(db, "--post", "--max", "1", monkeypatch=monkeypatch)
    assert sorted(_mine(hub)) == ["acme/leaky", "beta/three"]


@pytest.mark.slow
def test_no_token_or_a_read_only_or_refused_token_posts_nothing(hub_db, monkeypatch):
    hub, db = hub_db
    r = _notify(db, "--post", token=None, monkeypatch=monkeypatch)
    assert r.exit_code == 4 and "HF_TOKEN" in r.output and len(r.output.strip().splitlines()) == 1
    r = _notify(db, "--post", token=READ, monkeypatch=monkeypatch)
    assert r.exit_code == 4 and "read-only" in r.output and READ not in r.output
    r = _notify(db, "--post", token="hf_not_a_token_of_this_hub_1234", monkeypatch=monkeypatch)
    assert r.exit_code == 4 and "refused the token (HTTP 401)" in r.output
    # a token the Hub knows, that it refuses to write discussions with (403)
    hub.set_faults(Faults(error_burst_every=1, error_burst_len=1, error_status=403,
                          scope=Scope(categories=frozenset({"discussions"}))))
    r = _notify(db, "--post", monkeypatch=monkeypatch)
    assert r.exit_code == 4 and "refused the token (HTTP 403)" in r.output, r.output
    assert _mine(hub) == {}
    assert not secret_hits(WRITE, texts={"output": r.output}, paths=[db.parent / "msgs"])


@pytest.mark.slow
def test_a_new_revision_is_notified_again_only_when_its_verdict_changed(hub_db, surveyed, monkeypatch):
    from hubsurvey.survey.audit import audit

    hub, db = hub_db
    _, _, base = surveyed
    # beta/two at 20%: unreliable. Posted once.
    r = _notify(db, "--post", "--allow", str(_list(db, "beta/two", "acme/mild")), "--min-contaminated", "1",
                monkeypatch=monkeypatch)
    assert r.exit_code == 0, r.output
    assert sorted(_mine(hub)) == ["acme/mild", "beta/two"]  # acme/mild: 1.6%, caution
    client = HubClient(endpoint=hub.url, token=WRITE, rate=0, file_rate=0, cache_dir=base / "cache2")
    # a new revision of beta/two with the same content (same verdict), and of acme/mild with many leaks
    before = {d: hub.catalog.get(d).main.sha for d in ("beta/two", "beta/three", "acme/mild")}
    hub.set_sha("beta/two", "b" * 40)
    newer = _write(base / "newer", "acme/mild", _texts("mild now", 20), 10)
    hub.set_sha("acme/mild", "c" * 40, parquet_dir=newer)
    try:
        # not measured again yet: the figures are of a revision the Hub has left, nothing is posted
        hub.set_sha("beta/three", "d" * 40)
        stale = _notify(db, "--post", "--allow", str(_list(db, "beta/three")), monkeypatch=monkeypatch)
        assert stale.exit_code == 0 and "the Hub is at dddddddddddd (measure it again)" in stale.output, stale.output
        assert "beta/three" not in _mine(hub)
        for dataset_id in ("beta/two", "acme/mild"):
            assert not audit(dataset_id, db=db, client=client, near=False).errors
        r = _notify(db, "--post", "--allow", str(_list(db, "beta/two", "acme/mild")), "--min-contaminated", "1",
                    monkeypatch=monkeypatch)
    finally:  # the module's stand-in serves the original revisions to the other tests
        hub.set_sha("beta/two", before["beta/two"])
        hub.set_sha("beta/three", before["beta/three"])
        hub.set_sha("acme/mild", before["acme/mild"], parquet_dir=base / "hub" / "acme__mild")
        shutil.rmtree(base / "newer")
    assert r.exit_code == 0, r.output
    titles = _mine(hub)
    assert len(titles["beta/two"]) == 1
    assert [bot.parse_title(t)["verdict"] for t in titles["acme/mild"]] == ["caution", "unreliable"]
    assert "already notified at revision" in r.output and "with the same verdict unreliable" in r.output


@pytest.mark.slow
def test_a_post_retried_after_the_hub_created_it_is_not_posted_twice(hub_db, monkeypatch):
    """The POST's answer is cut after the stand-in created the discussion: the client retries, finds
    it in the token's own discussions by its title, and does not open a second one."""
    hub, db = hub_db
    hub.set_faults(Faults(truncate_every=2, scope=Scope(categories=frozenset({"discussions"}), dataset="beta/two")))
    r = _notify(db, "--post", "--allow", str(_list(db, "beta/two")), monkeypatch=monkeypatch)
    assert r.exit_code == 0, r.output
    assert hub.stats()["faults_injected"] == 1 and hub.stats()["discussions"] == 3  # list, POST, the retry's list
    assert len(hub.discussions["beta/two"]) == 1
    assert [(d, s, n) for d, s, _r, n in _rows(db)] == [("beta/two", "posted", 1)]


@pytest.mark.slow
def test_a_failing_dataset_is_recorded_in_one_line_without_the_token_and_the_others_go_on(hub_db, monkeypatch):
    hub, db = hub_db
    monkeypatch.setenv("HUBSURVEY_MAX_ATTEMPTS", "1")
    hub.set_faults(Faults(error_burst_every=1, error_burst_len=1, error_status=500, echo_auth=True,
                          scope=Scope(categories=frozenset({"info"}), dataset="beta/three")))
    r = _notify(db, "--post", monkeypatch=monkeypatch)
    assert r.exit_code == 1, r.output  # partial: one dataset failed, the rest was posted
    assert sorted(_mine(hub)) == ["acme/leaky", "beta/two"]
    failed = [(d, reason) for d, s, reason, _ in _rows(db) if s == "failed"]
    assert len(failed) == 1 and failed[0][0] == "beta/three" and "500" in failed[0][1]
    assert WRITE not in r.output and not db_hits(db, WRITE)
    assert not secret_hits(WRITE, texts={"output": r.output}, paths=[db.parent / "msgs"])


def test_the_standin_speaks_discussions_as_huggingface_hub_does(tmp_path):
    import json

    from huggingface_hub import HfApi
    from huggingface_hub.errors import HfHubHTTPError

    _write(tmp_path, "acme/one", ["x"], 1)
    (tmp_path / "index.json").write_text(json.dumps([{"id": "acme/one", "tags": TAGS}]))
    with StandinHub(tmp_path, valid_tokens={WRITE}, read_only_tokens={READ}) as hub:
        hub.discussions_page_size = 2
        api = HfApi(endpoint=hub.url, token=WRITE)
        assert api.whoami()["name"] == "standin-user"
        made = [api.create_discussion("acme/one", f"title {i}", description=f"body {i}", repo_type="dataset")
                for i in range(3)]
        assert [d.num for d in made] == [1, 2, 3] and made[2].events[0].content == "body 2"
        assert made[0].url == f"{hub.url}/datasets/acme/one/discussions/1"
        hub.add_discussion("acme/one", "someone's", author="someone", status="closed")
        every = list(api.get_repo_discussions("acme/one", repo_type="dataset"))  # 4 over 2 pages
        assert [(d.num, d.author, d.status) for d in every] == [
            (4, "someone", "closed"), (3, "standin-user", "open"), (2, "standin-user", "open"), (1, "standin-user", "open")]
        assert [d.num for d in api.get_repo_discussions("acme/one", author="someone", repo_type="dataset")] == [4]
        assert [d.num for d in api.get_repo_discussions("acme/one", discussion_status="open", repo_type="dataset")] == [3, 2, 1]
        assert list(api.get_repo_discussions("acme/one", discussion_type="pull_request", repo_type="dataset")) == []
        assert HfApi(endpoint=hub.url, token=READ).whoami()["auth"]["accessToken"]["role"] == "read"
        for token, status in ((READ, 403), ("hf_unknown_token_0000", 401), (False, 401)):
            with pytest.raises(HfHubHTTPError) as refused:
                HfApi(endpoint=hub.url, token=token).create_discussion("acme/one", "a title", repo_type="dataset")
            assert refused.value.response.status_code == status
        with pytest.raises(HfHubHTTPError) as missing:
            api.create_discussion("acme/none", "a title", repo_type="dataset")
        assert missing.value.response.status_code == 404
        assert hub.stats()["discussions"] > 0 and hub.stats()["whoami"] == 2
