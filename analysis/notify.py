"""The opt-in Hub bot: tell a dataset's authors how many leaks and duplicates its test split has.

``hubsurvey notify`` is a thin layer over :func:`notify`. For each surveyed Hub dataset whose
headline figure, the worst ``<profile>_contaminated_test_pct`` over its configs (profile
``normalized`` by default), is at or above ``min_contaminated``, it renders ONE discussion from
``templates/notify.md.j2``: the figures, three stored examples, the dataset's page on the survey
site, how to get its clean split and how to reproduce the figures, and how to opt out.

Dry run by default: each message goes to ``<out>/<owner>__<name>.md`` for a person to review, and
nothing touches the Hub. With ``post``, messages are posted through the Hub client the caller passes
in (this module never imports it), at most ``max_posts`` per run, each call paced and retried by it.

It never posts twice for one dataset revision: the ``notifications`` table records every decision,
and before posting the Hub's own list of the token's discussions on the dataset is read, so a
deleted table (or another machine's run) cannot make it post again. A new revision is notified
again only when its verdict changed: the same verdict at a new revision repeats what the authors
were already told, and a dataset committed to daily would otherwise get a discussion a day.

An allow list, when given, narrows the candidates to the datasets it names. Skipped, and recorded
with the reason (once per revision and reason): datasets in the deny list, gated or private (as
stored, and as the Hub says at posting time), opted out (the card tag :data:`OPT_OUT_TAG`, or
``hubsurvey: opt-out`` in the card metadata), already notified, or measured at a revision the Hub
has moved on from.

Every value from the data reaches the message through :func:`inline_code` or :func:`shell_word`.
In a code span: control characters made visible, ``@`` replaced so nobody is mentioned, so no value
can become a link, HTML or emphasis. In a command: the exact value, quoted for the shell, with
``@`` and control characters written as escapes (bash's ``$'...'``), so the command names the real
config and still mentions nobody.
"""

from __future__ import annotations

import fnmatch
import json
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from hubsurvey import __version__
from hubsurvey.analysis.examples import KIND_WORDS
from hubsurvey.analysis.findings import create_views
from hubsurvey.analysis.render import environment, pct3
from hubsurvey.analysis.site_links import check_site_url, site_page
from hubsurvey.core import figures
from hubsurvey.core.errors import HubError, HubStoppedAnsweringError, HubUnreachableError, UsageError, one_line
from hubsurvey.core.outputs import output_folder
from hubsurvey.core.safety import read_text_file, visible
from hubsurvey.core.store import Store, insert, now, quote_ident, safe_name

TEMPLATE = "notify.md.j2"
PROFILES = tuple(p.name for p in figures.PROFILES)
DEFAULT_PROFILE = "normalized"
#: the verdict rules' "unreliable" bound (findings_verdict_rules): below it a dataset is minor or caution
DEFAULT_MIN_CONTAMINATED = 5.0
DEFAULT_MAX_POSTS = 10
#: a card tag (``tags: [hubsurvey-opt-out]``) that keeps the bot away from a dataset
OPT_OUT_TAG = "hubsurvey-opt-out"
#: card metadata ``hubsurvey: opt-out`` does the same
OPT_OUT_CARD_KEY, OPT_OUT_CARD_VALUE = "hubsurvey", "opt-out"
TITLE_PREFIX = "[hubsurvey]"
#: how the bot recognises its own discussions on the Hub: the revision and verdict its title names
_TITLE = re.compile(r"^\[hubsurvey\] .*\(verdict (?P<verdict>[a-z]+), revision (?P<revision>[0-9a-f]{7,40})\)$")
#: the example kinds a message shows, in this order: leaks into test, then test duplicates
EXAMPLE_KINDS = ("leak_train_test", "leak_validation_test", "duplicate_test")
EXAMPLES_SHOWN = 3
VALUE_CHARS = 160  # an example's value is cut here in the message (the site shows more)
_AT = "\uff20"  # FULLWIDTH COMMERCIAL AT: reads as @, mentions nobody


class Status:
    DRAFTED = "drafted"
    POSTED = "posted"
    SKIPPED = "skipped"
    FAILED = "failed"


class DiscussionClient(Protocol):
    """What posting needs of :class:`hubsurvey.core.hub.HubClient` (the command passes one in)."""

    @property
    def has_token(self) -> bool: ...
    def scrub(self, text: str) -> str: ...
    def whoami(self) -> dict[str, Any]: ...
    def dataset_info(self, repo_id: str, revision: str | None = None, **kwargs: Any) -> Any: ...
    def discussions(self, repo_id: str, *, author: str | None = None) -> list[Any]: ...
    def create_discussion(self, repo_id: str, title: str, description: str, *, author: str) -> Any: ...


@dataclass(frozen=True)
class Candidate:
    """A surveyed dataset at or above the threshold: what its message says."""

    dataset_id: str
    revision_sha: str
    verdict: str
    verdict_basis: str
    profile: str
    figure: str  # the headline figure's column, e.g. normalized_contaminated_test_pct
    contaminated_pct: float
    configs: list[dict[str, Any]]  # per config: rows and counts under the profile, worst first
    examples: list[dict[str, Any]]
    tags: list[str]
    gated: str | None
    private: bool | None
    measured_at: Any
    tool_version: str
    methods: str
    scores: dict[str, int] = field(default_factory=dict)  # reported scores on the dataset: "reported", "at_risk"

    @property
    def worst_config(self) -> str:
        return str(self.configs[0]["config"])


@dataclass
class Notice:
    """One decision about one candidate, as the ``notifications`` table records it."""

    candidate: Candidate
    title: str
    status: str
    reason: str | None = None
    path: Path | None = None
    discussion_num: int | None = None
    discussion_url: str | None = None


@dataclass
class NotifyResult:
    notices: list[Notice] = field(default_factory=list)
    candidates: int = 0
    left: int = 0  # candidates not considered: the cap was reached
    post: bool = False
    user: str | None = None

    def count(self, status: str) -> int:
        return sum(n.status == status for n in self.notices)

    def as_json(self) -> dict[str, Any]:
        return {"candidates": self.candidates, "considered": len(self.notices), "left": self.left,
                **{s: self.count(s) for s in (Status.DRAFTED, Status.POSTED, Status.SKIPPED, Status.FAILED)}}


# --- escaping: every value from the data goes through these ------------------------------------------

def _neutral(value: Any, limit: int | None = None) -> str:
    """A value as one line of text that mentions nobody: control characters visible, ``@`` replaced."""
    text = visible("null" if value is None else str(value), one_line=True).replace("@", _AT)
    if limit is not None and len(text) > limit:
        text = text[:limit] + "…"
    return text


def inline_code(value: Any, limit: int | None = VALUE_CHARS) -> str:
    """A value as a Markdown code span: nothing in it renders (no link, HTML, emphasis, mention).

    The fence is one backtick longer than the longest run inside, and padded with a space when the
    text starts or ends with a backtick or a space (CommonMark strips one such space each side, unless
    the span holds only spaces).
    """
    text = _neutral(value, limit) or "(empty)"
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    if (text[0] in "` " or text[-1] in "` ") and text.strip(" "):  # a span of spaces alone is kept whole
        text = f" {text} "
    return f"{fence}{text}{fence}"


# What a shell word may not show as it is: ``@`` (it could mention someone), control characters,
# line and paragraph separators, the bidi controls (they reorder what a reader sees), a BOM
_SHELL_ESCAPED = re.compile("[@\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\ufeff\ud800-\udfff]")


def shell_word(value: Any) -> str:
    """A value as one shell word for a command shown in a code block, naming the value exactly.

    A plain value is quoted as ``shlex.quote`` does; one holding ``@`` or a control character is
    written in bash's ``$'...'`` quoting, each such character an escape (``\\x40``, ``\\x0a``,
    ``\\u202e``): the command still names the real config, and the message mentions nobody.
    """
    text = "null" if value is None else str(value)
    if not _SHELL_ESCAPED.search(text):
        return shlex.quote(text)
    out = []
    for char in text:
        code = ord(char)
        if char in "\\'":
            out.append("\\" + char)
        elif _SHELL_ESCAPED.match(char):
            out.append(f"\\x{code:02x}" if code < 0x80 else f"\\u{code:04x}")
        else:
            out.append(char)
    return "$'" + "".join(out) + "'"


def code_block(text: str) -> str:
    """Lines as a fenced code block whose fence no line can close."""
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}\n{text}\n{fence}"


# --- lists and opt-out ---------------------------------------------------------------------------------

def read_list(path: Path | None) -> list[str] | None:
    """A dataset list file: one entry a line (``owner/name``, ``owner`` for all its datasets, or a
    glob like ``owner/*-test``); ``#`` starts a comment. Read as an editor may have saved it (a byte
    order mark, CRLF, spaces around an entry) and bounded in size (:func:`read_text_file`); entries
    are matched case-insensitively (:func:`listed`). None: no file given."""
    if path is None:
        return None
    lines = read_text_file(path, "list").splitlines()
    return [entry for line in lines if (entry := line.split("#", 1)[0].replace("\ufeff", "").strip())]


def listed(dataset_id: str, entries: Sequence[str]) -> bool:
    """Whether a list names the dataset (its id, its owner, or a glob), ignoring case: the Hub's ids
    are case-insensitive (``Org/Name`` is ``org/name``)."""
    folded = dataset_id.casefold()
    owner = folded.split("/", 1)[0]
    return any((entry := e.casefold()) == owner or fnmatch.fnmatchcase(folded, entry) for e in entries)


def _words(value: Any) -> list[str]:
    """A card value as the words it holds: a scalar, or the scalars of a list, stripped and lower-cased."""
    items = value if isinstance(value, (list, tuple, set)) else [value]
    return [str(item).strip().lower() for item in items if isinstance(item, (str, int, float, bool))]


def opted_out(tags: Any, card_data: Mapping[str, Any] | None = None) -> bool:
    """True when the card says ``tags: [hubsurvey-opt-out]`` (or ``tags: hubsurvey-opt-out``), or
    ``hubsurvey: opt-out`` (or the list form ``hubsurvey: [opt-out]``)."""
    if OPT_OUT_TAG in _words(tags if tags is not None else []):
        return True
    value = card_data.get(OPT_OUT_CARD_KEY) if isinstance(card_data, Mapping) else None
    return OPT_OUT_CARD_VALUE in _words(value)


# --- what the store says ---------------------------------------------------------------------------------

def headline_figure(profile: str) -> str:
    if profile not in PROFILES:
        raise UsageError(f"--profile must be one of {', '.join(PROFILES)}, not {profile!r}")
    return f"{profile}_contaminated_test_pct"


def candidates(store: Store, *, profile: str = DEFAULT_PROFILE,
               min_contaminated: float = DEFAULT_MIN_CONTAMINATED) -> list[Candidate]:
    """Every Hub dataset of ``current_measurements`` whose worst ``<profile>_contaminated_test_pct``
    (published rounding, 3 decimals) is at least ``min_contaminated``: worst first, then by id.
    Datasets not measured by the exact method have no such figure and are never candidates."""
    return [c for row in candidate_rows(store, profile=profile, min_contaminated=min_contaminated)
            if (c := candidate(store, row, profile)) is not None]


def candidate_rows(store: Store, *, profile: str = DEFAULT_PROFILE,
                   min_contaminated: float = DEFAULT_MIN_CONTAMINATED) -> list[dict[str, Any]]:
    """The candidates' ids, verdicts and headline values, in :func:`candidates`' order: one query,
    so a run that stops at its cap reads the details of only the candidates it considers."""
    figure = headline_figure(profile)
    create_views(store)
    return store.records(
        f"""
        SELECT v.dataset_id, v.verdict, v.verdict_basis, v.{quote_ident(f'worst_{figure}')} AS pct
        FROM findings_dataset_verdict v
        WHERE v.{quote_ident(f'worst_{figure}')} >= $min
          AND v.dataset_id IN (SELECT dataset_id FROM current_measurements WHERE source = 'hub')
        ORDER BY pct DESC, v.dataset_id
        """,
        {"min": float(min_contaminated)},
    )


def candidate(store: Store, row: Mapping[str, Any], profile: str) -> Candidate | None:
    """One candidate of :func:`candidate_rows` with what its message says (None: no config of it
    was measured from the Hub by the exact method)."""
    dataset_id = row["dataset_id"]
    configs = _configs(store, dataset_id, profile)
    if not configs:
        return None
    latest = max(configs, key=lambda c: c["measured_at"])
    meta = store.records("SELECT tags, gated, private FROM datasets WHERE dataset_id = $d", {"d": dataset_id})
    return Candidate(
        dataset_id=dataset_id, revision_sha=latest["revision_sha"], verdict=row["verdict"],
        verdict_basis=row["verdict_basis"], profile=profile, figure=headline_figure(profile),
        contaminated_pct=float(row["pct"]), configs=configs, examples=_examples(store, dataset_id, profile),
        tags=list((meta[0]["tags"] if meta else None) or []), gated=meta[0]["gated"] if meta else None,
        private=meta[0]["private"] if meta else None, measured_at=latest["measured_at"],
        tool_version=latest["tool_version"], methods=latest["methods"] or "", scores=_scores(store, dataset_id),
    )


def _scores(store: Store, dataset_id: str) -> dict[str, int]:
    """The scores Hub models report on the dataset (the view ``scores_at_risk``), and how many of them are
    at risk; empty when none was read."""
    reported, at_risk = store.query(
        "SELECT count(*), count(*) FILTER (WHERE status = 'at_risk') FROM scores_at_risk WHERE dataset_id = $d",
        {"d": dataset_id})[1][0]
    return {"reported": int(reported), "at_risk": int(at_risk)} if reported else {}


def _configs(store: Store, dataset_id: str, profile: str) -> list[dict[str, Any]]:
    """Per config measured by the exact method: its revision, split sizes and the profile's counts
    (text figures repeat in each label-column row: taken once), worst contaminated first."""
    def col(stem: str) -> str:
        return quote_ident(f"{profile}_{stem}")

    return store.records(
        f"""
        SELECT config, first(revision_sha ORDER BY measured_at DESC) AS revision_sha,
               max(rows_train) AS rows_train, max(rows_validation) AS rows_validation, max(rows_test) AS rows_test,
               max({col('test_rows_in_train')}) AS in_train,
               max({col('test_rows_in_validation')}) AS in_validation,
               max({col('test_rows_repeated')}) AS repeated,
               max({col('test_rows_contaminated')}) AS contaminated,
               max({col('contaminated_test_pct')}) AS pct,
               max(measured_at) AS measured_at, max(tool_version) AS tool_version,
               any_value(methods) AS methods
        FROM current_measurements
        WHERE dataset_id = $d AND source = 'hub' AND exact_measured(methods)
        GROUP BY config
        ORDER BY pct DESC NULLS LAST, config
        """,
        {"d": dataset_id},
    )


def _examples(store: Store, dataset_id: str, profile: str) -> list[dict[str, Any]]:
    """Up to three stored examples of the current revision: leaks into test first, then test duplicates."""
    rows = store.records(
        """
        SELECT e.config, e.kind, e.key, e.rows_train, e.rows_validation, e.rows_test
        FROM examples e
        JOIN (SELECT DISTINCT dataset_id, revision_sha, config FROM current_measurements) m
          USING (dataset_id, revision_sha, config)
        WHERE e.dataset_id = $d AND e.profile = $p AND list_contains($kinds, e.kind) AND e.label_column IS NULL
        ORDER BY list_position($kinds, e.kind), e.rank, e.config
        LIMIT $n
        """,
        {"d": dataset_id, "p": profile, "kinds": list(EXAMPLE_KINDS), "n": EXAMPLES_SHOWN},
    )
    for row in rows:
        row["key"] = json.loads(row["key"]) if isinstance(row["key"], str) else row["key"]
        row["words"] = KIND_WORDS[row["kind"]]
    return rows


def notified(store: Store, dataset_id: str) -> list[dict[str, Any]]:
    """The bot's posted (or found) discussions on a dataset, newest first."""
    return store.records(
        "SELECT revision_sha, verdict, discussion_num, discussion_url, created_at FROM notifications "
        "WHERE dataset_id = $d AND discussion_num IS NOT NULL ORDER BY created_at DESC",
        {"d": dataset_id},
    )


# --- the message -------------------------------------------------------------------------------------------

def title(c: Candidate) -> str:
    """The discussion's title; the bot recognises its own by it (:func:`parse_title`)."""
    return (f"{TITLE_PREFIX} Test split check: {pct3(c.contaminated_pct)} of test rows contaminated "
            f"(verdict {c.verdict}, revision {c.revision_sha[:12]})")


def parse_title(text: str) -> dict[str, str] | None:
    """``{"verdict", "revision"}`` of a title the bot wrote, else None."""
    m = _TITLE.match(text.strip())
    return m.groupdict() if m else None


def clean_command(dataset_id: str, config: str) -> str:
    """The command that writes a config's test split without its contaminated rows, as an author
    runs it (``clean`` needs the folder it writes into)."""
    return f"hubsurvey clean {shell_word(dataset_id)} --config {shell_word(config)} --out clean/"


def render_message(c: Candidate, *, site_url: str | None = None) -> str:
    """One candidate's discussion, in Markdown (``templates/notify.md.j2``)."""
    env = environment()
    env.filters.update(code=inline_code, shell=shell_word)
    clean = "\n".join(clean_command(c.dataset_id, cfg["config"]) for cfg in c.configs if cfg["contaminated"])
    reproduce = "\n".join(f"hubsurvey audit {shell_word(c.dataset_id)} --config {shell_word(cfg['config'])}"
                          for cfg in c.configs)
    examples = [{**e, "values": [(inline_code(k, 40), inline_code(v)) for k, v in (e["key"] or {}).items()]}
                for e in c.examples]
    return env.get_template(TEMPLATE).render(
        c=c, pct=pct3(c.contaminated_pct), page=site_page(site_url, c.dataset_id) if site_url else None,
        clean=code_block(clean or clean_command(c.dataset_id, c.worst_config)),
        reproduce=code_block(reproduce), examples=examples, opt_out_tag=OPT_OUT_TAG,
        has_nr=any(cfg[k] is None for cfg in c.configs for k in ("rows_test", "in_train", "in_validation", "repeated",
                                                                     "contaminated", "pct")),
        profile_words=next(p.words for p in figures.PROFILES if p.name == c.profile),
        version=__version__,
    )


def message_path(out_dir: Path, dataset_id: str) -> Path:
    """``<out>/<owner>__<name>.md``: one path component from :func:`safe_name`, inside ``out_dir``."""
    owner, _, name = dataset_id.partition("/")
    path = out_dir / f"{safe_name(owner)}__{safe_name(name)}.md"
    if path.resolve().parent != out_dir.resolve():
        raise UsageError(f"{dataset_id}: its message path leaves {out_dir}")
    return path


# --- deciding, drafting, posting ----------------------------------------------------------------------------

def _stored_skip(notice: Notice, deny: Sequence[str], store: Store) -> str | None:
    """Why the stored facts alone rule the candidate out (None: they do not); an earlier discussion
    that makes this one a repeat is noted on the notice."""
    c = notice.candidate
    if listed(c.dataset_id, deny):
        return "in the deny list"
    if c.private:
        return "private"
    if c.gated not in (None, "false", "False"):
        return f"gated ({c.gated})"
    if opted_out(c.tags):
        return f"opted out (card tag {OPT_OUT_TAG})"
    rows = notified(store, c.dataset_id)
    reason, row = _repeat(c, [(r["revision_sha"], r["verdict"], r["discussion_num"], r) for r in rows], "recorded")
    if row is not None:
        notice.discussion_num, notice.discussion_url = row["discussion_num"], row["discussion_url"]
    return reason


def _repeat(c: Candidate, earlier: Sequence[tuple[str, str | None, int | None, Any]], where: str) -> tuple[str | None, Any]:
    """Whether the earlier discussions (newest first) make this one a repeat, and which: one about
    this revision, or the newest one when it told the same verdict (what the authors last heard)."""
    for revision, _verdict, num, found in earlier:
        if revision and (revision == c.revision_sha or c.revision_sha.startswith(revision)):
            return f"already notified for this revision (discussion #{num}, {where})", found
    if earlier and earlier[0][1] == c.verdict:
        revision, verdict, num, found = earlier[0]
        return f"already notified at revision {revision[:12]} with the same verdict {verdict} (discussion #{num}, {where})", found
    return None, None


def _hub_skip(c: Candidate, info: Any) -> str | None:
    """Why the dataset as the Hub shows it now (``dataset_info``) rules the candidate out."""
    if getattr(info, "private", False):
        return "private"
    if getattr(info, "gated", False) not in (False, None, "false"):
        return f"gated ({info.gated})"
    if getattr(info, "disabled", False):
        return "disabled"
    card = getattr(info, "card_data", None)
    if opted_out(getattr(info, "tags", None), card.to_dict() if card is not None else None):
        return "opted out (dataset card)"
    sha = getattr(info, "sha", None)
    if sha and sha != c.revision_sha:
        return f"stale: measured revision {c.revision_sha[:12]}, the Hub is at {sha[:12]} (measure it again)"
    return None


def _on_the_hub(c: Candidate, client: DiscussionClient, user: str) -> tuple[str | None, Any]:
    """Whether the token's own discussions on the dataset make this one a repeat, and which."""
    mine = sorted(client.discussions(c.dataset_id, author=user), key=lambda d: (d.created_at, d.num), reverse=True)
    said = [(parsed["revision"], parsed["verdict"], d.num, d) for d in mine if (parsed := parse_title(d.title))]
    return _repeat(c, said, "on the Hub")


def _http_status(exc: BaseException) -> int | None:
    response = getattr(exc, "response", None)
    return getattr(response, "status_code", None)


def _refused(exc: BaseException) -> bool:
    """The Hub refused the token itself (401, 403 other than a gate): no post can succeed."""
    from huggingface_hub.errors import DisabledRepoError, GatedRepoError, RepositoryNotFoundError

    return _http_status(exc) in (401, 403) and not isinstance(
        exc, (GatedRepoError, RepositoryNotFoundError, DisabledRepoError))


def _account(client: DiscussionClient) -> str:
    """The token's user name; one line (exit 4) without a token or with one that cannot write."""
    if not client.has_token:
        raise HubError("--post needs a Hub token that can write discussions: set HF_TOKEN (nothing was posted)")
    try:
        me = client.whoami()
    except HubError:
        raise
    except Exception as e:
        if _http_status(e) in (401, 403):
            raise HubError(client.scrub(f"the Hub refused the token (HTTP {_http_status(e)}): nothing was posted")) from None
        raise
    role = ((me.get("auth") or {}).get("accessToken") or {}).get("role")
    if role == "read":
        raise HubError("the token is read-only: it cannot write discussions (nothing was posted)")
    name = me.get("name")
    if not isinstance(name, str) or not name:
        raise HubError("the Hub's whoami answer names no user: nothing was posted")
    return name


def _record(store: Store, notice: Notice, run_id: str | None) -> None:
    """One row per decision; a skip already recorded for this revision, for this reason, is not
    recorded again (a gated dataset would otherwise add a row at every run)."""
    c = notice.candidate
    with store.transaction() as con:
        if notice.status == Status.SKIPPED and con.execute(
                "SELECT 1 FROM notifications WHERE dataset_id = $d AND revision_sha = $r AND status = $s "
                "AND reason = $why AND discussion_num IS NOT DISTINCT FROM $n",
                {"d": c.dataset_id, "r": c.revision_sha, "s": notice.status, "why": notice.reason,
                 "n": notice.discussion_num}).fetchone():
            return
        insert(con, "notifications", {
            "dataset_id": c.dataset_id, "revision_sha": c.revision_sha, "verdict": c.verdict, "profile": c.profile,
            "figure": c.figure, "method": figures.EXACT_METHOD, "method_version": figures.EXACT_METHOD_VERSION,
            "contaminated_pct": c.contaminated_pct, "status": notice.status,
            "reason": notice.reason, "discussion_num": notice.discussion_num, "discussion_url": notice.discussion_url,
            "title": notice.title, "message_path": str(notice.path) if notice.path else None,
            "tool_version": __version__, "created_at": now(), "run_id": run_id,
        })


def notify(
    store: Store,
    *,
    out_dir: str | Path,
    profile: str = DEFAULT_PROFILE,
    min_contaminated: float = DEFAULT_MIN_CONTAMINATED,
    max_posts: int = DEFAULT_MAX_POSTS,
    allow: Sequence[str] | None = None,
    deny: Sequence[str] = (),
    post: bool = False,
    client: DiscussionClient | None = None,
    site_url: str | None = None,
    run_id: str | None = None,
) -> NotifyResult:
    """Draft (and with ``post``, post) one discussion per candidate; record every decision (module doc).

    ``max_posts`` caps the messages of one run, drafted or posted; the candidates after it are left
    for the next run, unrecorded. Posting needs ``client`` (a ``HubClient``) and a token that can write
    discussions: without one, or when the Hub refuses it (401/403), :class:`HubError` (exit 4).
    """
    site_url = check_site_url(site_url)
    out = output_folder(out_dir)
    result = NotifyResult(post=post)
    if post:
        if client is None:  # analysis reads only the store: the caller brings the Hub client
            raise HubError("posting needs a Hub client (hubsurvey.core.hub.HubClient)")
        result.user = _account(client)
    found = [row for row in candidate_rows(store, profile=profile, min_contaminated=min_contaminated)
             if allow is None or listed(row["dataset_id"], allow)]  # the allow list narrows the candidates
    result.candidates = len(found)
    out.mkdir(parents=True, exist_ok=True)
    made = 0
    for i, row in enumerate(found):
        if made >= max_posts:
            result.left = len(found) - i
            break
        c = candidate(store, row, profile)
        if c is None:
            continue
        notice = Notice(c, title(c), Status.SKIPPED)
        notice.reason = _stored_skip(notice, deny, store)
        if notice.reason is None:
            notice.path = message_path(out, c.dataset_id)
            notice.path.write_text(render_message(c, site_url=site_url), encoding="utf-8")
            notice.status = Status.DRAFTED
            if post:
                assert client is not None and result.user is not None
                _post(notice, client, result.user)
            made += notice.status in (Status.DRAFTED, Status.POSTED)
        _record(store, notice, run_id)
        result.notices.append(notice)
        if notice.status == Status.FAILED and notice.reason and notice.reason.startswith("the Hub refused"):
            raise HubError(f"{c.dataset_id}: {notice.reason}; nothing more was posted")
    return result


def _post(notice: Notice, client: DiscussionClient, user: str) -> None:
    """Check the Hub, then post one drafted message; the notice says what happened.

    A failure of this dataset (missing, disabled, failing after every retry) is recorded and the
    others go on; a 401/403 on the token's discussions (the list or the post) refuses the token
    itself, which :func:`notify` turns into exit 4."""
    c = notice.candidate
    mine, step = None, "info"
    try:
        reason = _hub_skip(c, client.dataset_info(c.dataset_id))
        if reason is None:
            step = "discussions"
            reason, mine = _on_the_hub(c, client, user)
        if reason is None:
            assert notice.path is not None
            made = client.create_discussion(c.dataset_id, notice.title, notice.path.read_text(encoding="utf-8"),
                                            author=user)
    except (HubUnreachableError, HubStoppedAnsweringError):
        raise
    except (HubError, OSError) as e:
        notice.status = Status.FAILED
        if step == "discussions" and _refused(e):
            notice.reason = f"the Hub refused the token (HTTP {_http_status(e)})"
        else:
            notice.reason = client.scrub(one_line(e))
        return
    if reason is not None:
        notice.status, notice.reason = Status.SKIPPED, reason
        if mine is not None:
            notice.discussion_num, notice.discussion_url = mine.num, mine.url
        return
    notice.status, notice.discussion_num, notice.discussion_url = Status.POSTED, made.num, made.url
