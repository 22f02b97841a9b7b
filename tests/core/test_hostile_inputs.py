"""Hostile inputs, fourth pass: a foreign folder is never overwritten, zero means zero, a bad answer
is a Hub fault, never a bug. Each case states its plain expectation and tries variants an attacker
would try next (NaN, infinities, -0, huge values; BOM, CRLF, case; U+FFFE and lone surrogates;
answers nested deeper than any real one; hand-made and spoofed manifests)."""

from __future__ import annotations

import math

import pytest

from hubsurvey.core.pacing import QuotaBucket, QuotaState, parse_ratelimit


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        # a wait that is no number, or a loop that never stops waiting, fails here instead of hanging
        assert math.isfinite(seconds) and seconds >= 0 and len(self.slept) < 100, [*self.slept[-3:], seconds]
        self.slept.append(seconds)
        self.now += seconds


# --- RateLimit headers: a value that is no usable number is ignored, as if not sent -----------------

UNUSABLE = ["nan", "NaN", "inf", "-inf", "Infinity", "1e400", "-1", "-0.5", "1e999999", "abc", "", "0x10", "1e300"]


@pytest.mark.parametrize("value", UNUSABLE)
@pytest.mark.parametrize("key", ["r", "t", "q", "w"])
def test_a_ratelimit_parameter_that_is_no_usable_number_is_ignored(key, value):
    header = "RateLimit" if key in "rt" else "RateLimit-Policy"
    name = {"r": "remaining", "t": "reset_in", "q": "quota", "w": "window"}[key]
    prefix = '"api"' if header == "RateLimit" else '"fixed window";"api"'
    assert getattr(parse_ratelimit({header: f"{prefix};{key}={value}"})["api"], name) is None


@pytest.mark.parametrize("value,expected", [("-0", 0), ("0", 0), ("7", 7), ("7.9", 7), ("1e3", 1000), ("1e15", 10**15)])
def test_a_ratelimit_count_that_is_a_number_is_kept(value, expected):
    assert parse_ratelimit({"RateLimit": f'"api";r={value};t=5'})["api"] == QuotaState("api", expected, 5.0)


@pytest.mark.parametrize("header", [
    '"api";r=nan;t=10', '"api";r=inf;t=10', '"api";r=0;t=nan', '"api";r=0;t=inf', '"api";r=0;t=-5',
    '"api";r=0;t=1e300', '"api";r=-3;t=1', '"api";r=1e400;t=1e400',
])
@pytest.mark.parametrize("policy", ["", '"fixed window";"api";q=nan;w=nan', '"fixed window";"api";q=-1;w=-300',
                                    '"fixed window";"api";q=inf;w=1e300'])
def test_a_bucket_fed_hostile_headers_keeps_pacing_with_finite_waits(header, policy):
    clock = FakeClock()
    bucket = QuotaBucket(2, 300, clock=clock.__call__, sleep=clock.sleep)
    headers = {"RateLimit": header, **({"RateLimit-Policy": policy} if policy else {})}
    for state in parse_ratelimit(headers).values():
        bucket.observe(state)
    for _ in range(5):
        waited = bucket.acquire()
        assert math.isfinite(waited) and 0 <= waited <= 86_400
    assert all(math.isfinite(s) and s >= 0 for s in clock.slept)
    assert bucket.quota >= 1 and math.isfinite(bucket.window) and bucket.window > 0


# --- check --junit: a strict XML parser reads every name ------------------------------------------------

# U+FFFE, U+FFFF, lone surrogates (high, low), every C0 control, DEL, C1, bidi overrides, and the
# characters XML does allow at the edges (U+D7FF, U+E000, U+FFFD, U+10000, U+10FFFF)
NOT_XML = ["\ufffe", "\uffff", "\ud800", "\udfff", "\udbff\udc00"[0], *map(chr, range(0x20)), "\x7f", "\x85", "\u202e"]
XML_EDGES = ["\ud7ff", "\ue000", "\ufffd", "\U00010000", "\U0010ffff", "\u2028", "<&\"'>"]


def _hostile_check_result(text: str):
    from hubsurvey.survey.check import FAIL, SKIPPED, CheckResult, Verdict

    name = f"a{text}b"
    verdicts = [Verdict(name, f"label{text}", "contaminated", f"normalized_contaminated_test_pct{text}", 1.5, 1.0, FAIL),
                Verdict(name, None, "near", "near_contaminated_test_pct", None, 1.0, SKIPPED, f"why{text}")]
    return CheckResult(f"org/{name}", "normalized", {"contaminated": 1.0, "near": 1.0}, verdicts,
                       revisions={name: f"rev{text}"}, text_columns={name: [f"text{text}", "other"]},
                       methods={f"exact{text}": 1}, errors=[f"{name}: broken{text}"])


@pytest.mark.parametrize("char", NOT_XML + XML_EDGES, ids=lambda c: f"U+{ord(c):04X}" if len(c) == 1 else "markup")
def test_junit_parses_with_a_strict_xml_parser_whatever_the_names_hold(tmp_path, char):
    import xml.parsers.expat

    from hubsurvey.core.safety import visible
    from hubsurvey.survey.check import write_junit

    path = write_junit(_hostile_check_result(char), tmp_path / "junit.xml")
    raw = path.read_bytes()
    parser = xml.parsers.expat.ParserCreate()  # strict: any character XML 1.0 forbids is an error
    names: list[str] = []
    parser.StartElementHandler = lambda tag, attrs: names.extend(attrs.values())
    parser.Parse(raw, True)
    shown = visible(char, one_line=True)
    code = ord(char) if len(char) == 1 else 0x20
    if shown == char and not (code in (0x9, 0xA, 0xD) or 0x20 <= code <= 0xD7FF or 0xE000 <= code <= 0xFFFD
                              or 0x10000 <= code <= 0x10FFFF):  # XML 1.0's Char production
        shown = f"\\u{code:04x}"
    assert f"org/a{shown}b.a{shown}b" in names  # the classname, its character written out (or kept, when XML allows it)
    assert any(f"broken{shown}" in n for n in names) and f"rev{shown}" in names


# --- check: a limit of 0 means no row ------------------------------------------------------------------

BIG = 250_000


@pytest.fixture(scope="module")
def one_in_250k(tmp_path_factory):
    """A folder dataset of 250,000 test rows (and 250,000 train rows) where exactly one test row is
    in train, and one benchmark item's 13 words sit in exactly one train row."""
    import json

    import pyarrow as pa
    import pyarrow.parquet as pq

    root = tmp_path_factory.mktemp("big") / "org__big"
    item = "the quick brown fox jumps over the lazy dog while seven wizards quietly box jumping frogs"
    train = [f"train sentence number {i}" for i in range(BIG)]
    train[123_456] = f"prefix {item} suffix"
    test = [f"test sentence number {i}" for i in range(BIG)]
    test[7] = train[99]  # the one contaminated test row
    for split, texts in (("train", train), ("test", test)):
        (root / "default" / split).mkdir(parents=True)
        pq.write_table(pa.table({"text": texts, "label": [i % 2 for i in range(BIG)]}), root / "default" / split / "0.parquet")
    bench = root.parent / "bench"
    bench.mkdir()
    (bench / "evals.jsonl").write_text(json.dumps({"prompt": item}) + "\n", encoding="utf-8")
    (bench / "benchmarks.toml").write_text('[[benchmark]]\npath = "evals.jsonl"\ntext_columns = ["prompt"]\n', encoding="utf-8")
    return root, bench / "benchmarks.toml"


def _check(*args):
    from typer.testing import CliRunner

    from hubsurvey.cli import app

    return CliRunner().invoke(app, ["check", *map(str, args)])


@pytest.mark.slow
def test_one_contaminated_row_in_250k_fails_a_limit_of_zero(one_in_250k):
    root, _ = one_in_250k
    result = _check(root, "--max-contaminated", 0, "--no-near", "--format", "json")
    assert result.exit_code == 6, result.output
    import json

    (verdict,) = json.loads(result.stdout)["conditions"]
    assert verdict["status"] == "fail" and verdict["value"] == 0.0004 and verdict["limit"] == 0.0
    assert _check(root, "--max-contaminated", 0.0004, "--no-near").exit_code == 0  # 1 row in 250,000 is 0.0004%
    assert _check(root, "--max-contaminated", 0.0003999, "--no-near").exit_code == 6
    text = _check(root, "--max-contaminated", 0, "--no-near").stdout
    assert "normalized_contaminated_test_pct = 0.0004% above the limit 0%" in text


@pytest.mark.slow
def test_one_benchmark_item_in_a_250k_train_split_fails_the_default_benchmark_limit(one_in_250k):
    root, bench = one_in_250k
    result = _check(root, "--benchmarks", bench, "--no-near")
    assert result.exit_code == 6, result.output
    assert "contaminated_pct[train] vs " in result.stdout and "= 0.0004% above the limit 0%" in result.stdout


@pytest.mark.parametrize("limit", [0.0, -0.0, 0.0004, 0.0003999, 1e-12, 33.333, 33.334, 50.0, 100.0])
@pytest.mark.parametrize("count,rows", [(0, 1), (1, 1), (1, 3), (1, BIG), (2, BIG), (1, 10**12), (10**12 - 1, 10**12), (1, 2)])
def test_a_verdict_compares_the_counts_exactly(count, rows, limit):
    from fractions import Fraction

    from hubsurvey.survey import check as gate

    row = {"config": "c", "label_column": None, "normalized_contaminated_test_pct": count / rows * 100,
           "normalized_test_rows_contaminated": count, "rows_test": rows}
    (verdict,) = gate.verdicts_of([row], [], {"contaminated": limit})
    above = Fraction(count * 100, rows) > Fraction(limit)  # more than limit % of the rows (the float the option parsed)
    assert verdict.status == ("fail" if above else "pass")
    if above:
        assert verdict.value > limit  # what is shown says it is above


# --- every limit option of every command: finite and in range; every output folder: not a file ----------

#: the arguments each command needs besides the option under test (its Hub calls go to a closed port)
REQUIRED = {"check": ["CHECKED"], "clean": ["CHECKED", "--out", "OUT"], "export": ["--out", "OUT"],
            "publish": ["--repo", "owner/name"], "show": ["owner/name"], "history": ["owner/name"], "sql": ["SELECT 1"],
            "audit": ["CHECKED"]}
NOT_LIMITS = {"--verbose"}
OUTPUT_FOLDERS = {"--out", "--report-dir", "--hub-dir"}


def _cli_params():
    """(command, option, "float" | "integer" | "path") for every numeric option and every output
    folder of the CLI, read from the commands' annotations (``hubsurvey.cli.command_functions``)."""
    import typing

    from hubsurvey.cli import command_functions

    out = []
    for command in command_functions():
        for hint in typing.get_type_hints(command, include_extras=True).values():
            if typing.get_origin(hint) is not typing.Annotated:
                continue
            base, *extras = typing.get_args(hint)
            decls = [d for e in extras for d in (getattr(e, "default", None), *(getattr(e, "param_decls", None) or ()))
                     if isinstance(d, str) and d.startswith("--")]
            if not decls or decls[0] in NOT_LIMITS or getattr(extras[0], "count", False):
                continue
            types = set(typing.get_args(base)) or {base}
            kind = "float" if float in types else "integer" if int in types else "path" if decls[0] in OUTPUT_FOLDERS else None
            if kind:
                out.append((command.__name__, decls[0], kind))
    return sorted(set(out))


def _invoke(tmp_path, monkeypatch, command: str, *args: str):
    from typer.testing import CliRunner

    from hubsurvey.cli import app

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # nothing answers there: no Hub is ever reached
    (tmp_path / "CHECKED").mkdir(exist_ok=True)
    base = [a.replace("OUT", str(tmp_path / "out")) for a in REQUIRED.get(command, [])]
    return CliRunner().invoke(app, [command, *base, "--db", str(tmp_path / "db.duckdb"), *args]
                              if command not in ("demo",) else [command, *args])


NUMERIC = [(c, o, k) for c, o, k in _cli_params() if k in ("float", "integer")]
FOLDERS = [(c, o) for c, o, _ in _cli_params() if o in OUTPUT_FOLDERS]


def test_the_cli_has_the_options_this_pass_checks():
    options = {f"{c} {o}" for c, o, _ in NUMERIC}
    assert {"notify --min-contaminated", "notify --max", "run --max-hours", "crawl --rate", "check --max-contaminated",
            "run --workers", "crossleaks --copy-threshold", "show --limit"} <= options
    assert {("notify", "--out"), ("clean", "--out"), ("site", "--out"), ("report", "--out"), ("export", "--out"),
            ("publish", "--out"), ("run", "--report-dir"), ("demo", "--report-dir"), ("demo", "--hub-dir")} <= set(FOLDERS)


@pytest.mark.slow
@pytest.mark.parametrize("command,option,kind", NUMERIC, ids=[f"{c}{o}" for c, o, _ in NUMERIC])
def test_every_limit_option_refuses_non_finite_negative_and_huge_values(tmp_path, monkeypatch, command, option, kind):
    values = ["nan", "inf", "-inf", "-1", "1e300", "NaN"] if kind == "float" else ["-1", str(10**30)]
    for value in values:
        result = _invoke(tmp_path, monkeypatch, command, option, value)
        assert result.exit_code == 2, (value, result.output)
        lines = [line for line in result.output.splitlines() if line.strip()]
        assert len(lines) == 1 and lines[0].startswith("error: ") and option in lines[0], (value, result.output)
        assert not (tmp_path / "db.duckdb").exists() and not (tmp_path / "out").exists()  # refused before anything


@pytest.mark.slow
@pytest.mark.parametrize("command,option", FOLDERS, ids=[f"{c}{o}" for c, o in FOLDERS])
@pytest.mark.parametrize("where", ["file", "under_a_file"])
def test_every_output_folder_that_is_a_file_is_refused_with_exit_2(tmp_path, monkeypatch, command, option, where):
    target = tmp_path / "taken.txt"
    target.write_text("someone's notes\n")
    path = target if where == "file" else target / "sub" / "folder"
    args = [option, str(path)]
    if command == "publish":
        args += ["--repo", "owner/name"]
    if option != "--out" and command in ("clean", "export"):
        return
    from typer.testing import CliRunner

    from hubsurvey.cli import app

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")
    (tmp_path / "CHECKED").mkdir(exist_ok=True)
    base = [a for a in REQUIRED.get(command, []) if a not in ("--out", "OUT")]
    result = CliRunner().invoke(app, [command, *base, *args] + ([] if command == "demo" else ["--db", str(tmp_path / "db.duckdb")]))
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ") and str(path) in lines[0], result.output
    assert target.read_text() == "someone's notes\n"  # untouched
    assert not (tmp_path / "db.duckdb").exists() and not (tmp_path / "hubsurvey-demo").exists()


# --- notify's lists and the card's opt-out -------------------------------------------------------------

LIST_ENTRIES = ["Org/Denied", "other-owner", "org/*-test"]


@pytest.mark.parametrize("encoding,bom", [("utf-8", b""), ("utf-8", b"\xef\xbb\xbf"), ("utf-16-le", b"\xff\xfe"),
                                          ("utf-16-be", b"\xfe\xff")])
@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"])
def test_a_list_saved_by_any_editor_keeps_its_first_entry(tmp_path, encoding, bom, newline):
    from hubsurvey.analysis.notify import listed, read_list

    text = newline.join([f"{LIST_ENTRIES[0]}  \t", f"  {LIST_ENTRIES[1].upper()}   # a comment", "", "# only a comment",
                         LIST_ENTRIES[2]]) + newline
    path = tmp_path / "deny.txt"
    path.write_bytes(bom + text.encode(encoding))
    entries = read_list(path)
    assert [e.casefold() for e in entries] == [e.casefold() for e in LIST_ENTRIES]
    for dataset_id in ("org/denied", "ORG/DENIED", "Org/Denied", "Other-Owner/anything", "ORG/Some-Test"):
        assert listed(dataset_id, entries), dataset_id
    for dataset_id in ("org/denied2", "org2/denied", "org/test-some", "another/denied"):
        assert not listed(dataset_id, entries), dataset_id


def test_a_bom_in_the_middle_of_a_list_is_not_part_of_an_entry(tmp_path):
    from hubsurvey.analysis.notify import listed, read_list

    path = tmp_path / "deny.txt"
    path.write_bytes(b"\xef\xbb\xbforg/one\n" + b"\xef\xbb\xbforg/two\r\n")  # two files concatenated
    assert listed("org/two", read_list(path)) and listed("org/one", read_list(path))


@pytest.mark.parametrize("content,words", [
    (b"org/a\x00\n", "NUL"), (b"\xff\xfeo\x00r\x00\x00\xd8", "not UTF-8"), (b"caf\xe9\n", "not UTF-8"),
])
def test_a_list_that_is_no_text_is_refused_in_one_line(tmp_path, content, words):
    from hubsurvey.analysis.notify import read_list
    from hubsurvey.core.errors import UsageError

    path = tmp_path / "list.txt"
    path.write_bytes(content)
    with pytest.raises(UsageError, match=words) as caught:
        read_list(path)
    assert str(path) in str(caught.value) and "\n" not in str(caught.value)


@pytest.mark.skipif(not __import__("os").path.exists("/dev/zero"), reason="no /dev/zero")
def test_an_endless_list_is_refused_not_read_for_ever():
    from hubsurvey.analysis.notify import read_list
    from hubsurvey.core.errors import UsageError

    with pytest.raises(UsageError, match="larger than 64 MB") as caught:
        read_list("/dev/zero")
    assert "/dev/zero" in str(caught.value)


@pytest.mark.parametrize("reader", ["roles", "benchmarks"])
def test_every_settings_file_is_bounded_and_read_with_a_bom(tmp_path, monkeypatch, reader):
    from hubsurvey.core import safety
    from hubsurvey.core.errors import BadInputError
    from hubsurvey.core.roles import RoleOverrides
    from hubsurvey.survey.contamination import load_benchmarks

    path = tmp_path / "file.toml"
    if reader == "roles":
        path.write_bytes(b'\xef\xbb\xbf["org/ds".default]\r\ntext = ["text"]\r\n')
        assert RoleOverrides.load(path).lookup("org/ds", "default") is not None
    else:
        (tmp_path / "items.jsonl").write_text('{"prompt": "a b c"}\n')
        path.write_bytes(b'\xef\xbb\xbf[[benchmark]]\r\npath = "items.jsonl"\r\ntext_columns = ["prompt"]\r\n')
        assert len(load_benchmarks(path)) == 1
    load = (lambda p: RoleOverrides.load(p)) if reader == "roles" else load_benchmarks
    path.write_bytes(b"caf\xe9 = 1\n")  # latin-1: one line, exit 2, not a bug
    with pytest.raises(BadInputError, match="not UTF-8"):
        load(path)
    monkeypatch.setattr(safety, "MAX_TEXT_FILE_BYTES", 64)  # the bound, smaller for the test's sake
    path.write_text("# " + "x" * 100 + "\n")
    with pytest.raises(BadInputError, match="larger than"):
        load(path)


@pytest.mark.parametrize("card,tags", [
    ({"hubsurvey": "opt-out"}, None), ({"hubsurvey": ["opt-out"]}, None), ({"hubsurvey": [" Opt-Out "]}, None),
    ({"hubsurvey": ["other", "OPT-OUT"]}, None), ({"hubsurvey": ("opt-out",)}, None), ({}, ["hubsurvey-opt-out"]),
    ({}, "hubsurvey-opt-out"), ({}, [" HubSurvey-Opt-Out"]), (None, ["x", "hubsurvey-opt-out"]),
])
def test_the_card_opt_out_in_every_form(card, tags):
    from hubsurvey.analysis.notify import opted_out

    assert opted_out(tags, card)


@pytest.mark.parametrize("card,tags", [
    ({"hubsurvey": "opt-in"}, None), ({"hubsurvey": ["opt-outs"]}, None), ({"hubsurvey": {"opt-out": True}}, None),
    ({"other": ["opt-out"]}, None), ({}, "hubsurvey"), ({}, ["hubsurvey-opt-out-not"]), (None, None), ({"hubsurvey": None}, []),
])
def test_what_is_no_opt_out(card, tags):
    from hubsurvey.analysis.notify import opted_out

    assert not opted_out(tags, card)


# --- notify: the draft's commands name the real config and mention nobody -----------------------------------

HOSTILE_CONFIGS = ["default", "a@b", "@everyone", "user@example.org", "it's", "\"quoted\"", "$(touch /tmp/pwned)", "`id`",
                   "a\nb", "tab\there", "x\x1b[2Jy", "\u202egnp.exe", "back\\slash@", "--help", "a b", "café@日本",
                   "-", "*", "~root", "\\x40", "$'x'", "a\rb", "\x7f\x85", "\u2028line", "@@", "!!", "a;b|c&d"]


def _commands_in(message: str) -> list[str]:
    """The lines of the message's fenced code blocks (the fence grows with the backtick runs inside)."""
    import re

    lines, out, fence = message.split("\n"), [], None
    for line in lines:
        if fence is None and (m := re.fullmatch(r"(`{3,})", line)):
            fence = m.group(1)
        elif fence is not None and line == fence:
            fence = None
        elif fence is not None:
            out.append(line)
    return out


@pytest.mark.slow
def test_the_draft_commands_name_the_real_config_quoted_for_the_shell_and_ping_nobody():
    import shutil
    import subprocess

    from hubsurvey.analysis import notify as bot

    bash = shutil.which("bash")
    if bash is None:
        pytest.skip("no bash")
    configs = [{"config": name, "contaminated": 1, "rows_test": 10, "in_train": 1, "in_validation": 0, "repeated": 0,
                "pct": 10.0} for name in HOSTILE_CONFIGS]
    c = bot.Candidate("acme/x", "a" * 40, "unreliable", "exact-2026", "normalized", "normalized_contaminated_test_pct",
                      10.0, configs, [], [], None, None, None, "0", "")
    message = bot.render_message(c)
    assert "@" not in message  # nobody is mentioned, anywhere
    commands = [line for line in _commands_in(message) if line.startswith("hubsurvey ")]
    assert len(commands) == 2 * len(HOSTILE_CONFIGS)  # one line each: no value broke a line or the fence
    for command in commands:
        # what bash gives the program: the words after `hubsurvey`, as it parses them (nothing runs)
        words = subprocess.run([bash, "-c", f'set -f; f() {{ printf "%s\\0" "$@"; }}; f {command.removeprefix("hubsurvey ")}'],
                               capture_output=True, check=True).stdout.decode("utf-8", "surrogateescape").split("\0")[:-1]
        assert words[0] in ("clean", "audit") and words[1:3] == ["acme/x", "--config"], words
        assert words[4:] == (["--out", "clean/"] if words[0] == "clean" else []), words  # clean's folder, after the config
        assert words[3] in HOSTILE_CONFIGS, words
    named = {subprocess.run([bash, "-c", f'set -f; printf "%s" {command.split(" --config ", 1)[1].removesuffix(" --out clean/")}'],
                            capture_output=True, check=True).stdout.decode() for command in commands}
    assert named == set(HOSTILE_CONFIGS)
    assert not __import__("os").path.exists("/tmp/pwned")


# --- every JSON the Hub client parses is bounded in depth ----------------------------------------------------

@pytest.mark.parametrize("depth", [0, 1, 5, 100, 101, 1000, 50_000])
@pytest.mark.parametrize("kind", ["[", "{\"a\":"])
def test_json_depth_counts_brackets_outside_strings(depth, kind):
    from hubsurvey.core.safety import json_depth

    close = "]" if kind == "[" else "}"
    text = (kind * depth + "1" + close * depth).encode()
    assert json_depth(text) == depth
    assert json_depth(('{"s": "' + "[" * 5000 + '\\"[[[", "t": [1]}').encode()) == 2  # brackets in strings: none
    assert json_depth(b'["\\\\", [["\\\\\\"]]]"]]]') == 3


@pytest.fixture
def hostile_answers():
    """A Hub that answers every request (any path, GET or POST) with the body the test sets."""
    import http.server
    import threading

    state = {"body": b"{}", "status": 200}

    class Handler(http.server.BaseHTTPRequestHandler):
        def _answer(self):
            length = int(self.headers.get("Content-Length") or 0)
            if length:
                self.rfile.read(length)
            body = state["body"]
            self.send_response(state["status"])
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.send_header("RateLimit", state.get("ratelimit", '"api";r=nan;t=inf'))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = do_HEAD = _answer

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)  # shutdown waits one poll
    thread.start()
    state["url"] = f"http://127.0.0.1:{server.server_address[1]}"
    yield state
    server.shutdown()
    server.server_close()


HUB_CALLS = {
    "listing": lambda c: list(c.list_datasets(limit=5)),
    "listing_pages": lambda c: list(c.list_dataset_pages(limit=5)),
    "dataset_info": lambda c: c.dataset_info("org/ds"),
    "parquet_branch": lambda c: c.parquet_sha("org/ds"),
    "tree": lambda c: c.parquet_tree("org/ds"),
    "model_cards": lambda c: c.list_models_declaring("org/ds", limit=5),
    "discussions": lambda c: c.discussions("org/ds"),
    "whoami": lambda c: c.whoami(),
    "paths_info": lambda c: c.call(c.api.get_paths_info, "org/ds", ["data/x.parquet"], repo_type="dataset"),
}


@pytest.mark.slow
@pytest.mark.parametrize("depth", [101, 900, 50_000])
@pytest.mark.parametrize("call", list(HUB_CALLS))
def test_an_answer_nested_deeper_than_any_real_one_is_a_hub_fault(hostile_answers, call, depth):
    from hubsurvey.core.errors import ExitCode, HubError, exit_code_of
    from hubsurvey.core.hub import HubClient

    hostile_answers["body"] = (b'{"a":' * (depth // 2) + b"[" * (depth - depth // 2) + b"1"
                               + b"]" * (depth - depth // 2) + b"}" * (depth // 2))
    client = HubClient(endpoint=hostile_answers["url"], token="hf_NotARealTokenForTheHostileHub", rate=0, file_rate=0,
                       max_attempts=2, max_wait=0.05)  # retried once (a fault is transient), without a second's backoff
    with pytest.raises(HubError) as caught:
        HUB_CALLS[call](client)
    assert caught.value.error_class == "hub_fault" and exit_code_of(caught.value) == ExitCode.HUB, repr(caught.value)
    assert "nests" in str(caught.value) and "\n" not in str(caught.value)


@pytest.mark.slow
def test_a_real_answer_with_brackets_in_its_strings_still_passes(hostile_answers):
    from hubsurvey.core.hub import HubClient

    hostile_answers["body"] = ('{"id": "org/ds", "sha": "' + "a" * 40 + '", "cardData": {"note": "' + "[" * 50_000
                               + '"}, "tags": [' + "[" * 60 + "1" + "]" * 60 + "]}").encode()
    client = HubClient(endpoint=hostile_answers["url"], token=False, rate=0, file_rate=0, max_attempts=1)
    info = client.dataset_info("org/ds")
    assert info.id == "org/ds" and info.card_data.to_dict()["note"] == "[" * 50_000


@pytest.mark.slow
@pytest.mark.parametrize("ratelimit", ['"api";r=nan;t=10', '"api";r=inf;t=inf', '"api";r=0;t=nan',
                                       '"api";r=1e999;t=-1, "resolvers";r=nan', 'garbage;r=nan'])
def test_a_hub_sending_unusable_ratelimit_numbers_is_still_read(hostile_answers, ratelimit):
    from hubsurvey.core.hub import HubClient

    hostile_answers["ratelimit"] = ratelimit
    hostile_answers["body"] = b'[{"id": "org/one"}, {"id": "org/two"}]'
    client = HubClient(endpoint=hostile_answers["url"], token=False, max_attempts=1)  # following the quota
    assert [d.id for d in client.list_datasets(limit=2)] == ["org/one", "org/two"]
    assert [d.id for d in client.list_datasets(limit=2)] == ["org/one", "org/two"]


# --- clean --out: only a manifest hubsurvey wrote is replaced, only files it wrote go ---------------------

def _clean_source(root):
    import pyarrow as pa
    import pyarrow.parquet as pq

    src = root / "org__clean"
    for config in ("a", "b"):
        for split, texts in (("train", ["one", "two", "three"]), ("test", ["one", "four", "four", "five"])):
            (src / config / split).mkdir(parents=True, exist_ok=True)
            pq.write_table(pa.table({"text": texts, "label": [0] * len(texts)}), src / config / split / "0.parquet")
    return src


def _snapshot(folder):
    return {p.relative_to(folder).as_posix(): (p.read_bytes() if p.is_file() and not p.is_symlink() else "link")
            for p in sorted(folder.rglob("*"))} if folder.exists() else {}


def _clean_cli(*args):
    from typer.testing import CliRunner

    from hubsurvey.cli import app

    return CliRunner().invoke(app, ["clean", *map(str, args)])


def _spoofs(out, outside):
    """Foreign manifests: (name, write it into ``out``)."""
    import hashlib
    import json

    from hubsurvey.core.outputs import _checksum

    def sealed_like(files: dict) -> dict:  # an attacker who read hubsurvey's source and computes the checksum
        content = {"format": "hubsurvey-clean/1", "dataset": "org/clean", "revision": "x", "profile": "normalized",
                   "configs": {"a": {"path": next(iter(files))}}, "files": files}
        return {**content, "checksum": _checksum(content)}

    sibling = out / "notes.txt"
    digest = hashlib.sha256(b"mine\n").hexdigest()
    return {
        "web_app": {"name": "My App", "icons": [{"src": "notes.txt"}], "start_url": "."},
        "right_keys_names_a_sibling": {"dataset": "org/other", "revision": "r", "profile": "normalized",
                                       "configs": {"a": {"path": "notes.txt"}}},
        "right_keys_with_marker_no_checksum": {"format": "hubsurvey-clean/1", "dataset": "org/other", "revision": "r",
                                               "profile": "raw", "configs": {"a": {"path": "notes.txt"}},
                                               "files": {"notes.txt": {"size": 5, "sha256": digest}}},
        "wrong_checksum": {**sealed_like({"notes.txt": {"size": 5, "sha256": digest}}), "checksum": "sha256:" + "0" * 64},
        "dotdot": sealed_like({"../outside.txt": {"size": 5, "sha256": digest}}),
        "absolute": sealed_like({str(outside): {"size": 5, "sha256": digest}}),
        "dot_segment": sealed_like({"./notes.txt": {"size": 5, "sha256": digest}}),
        "backslash": sealed_like({"..\\\\outside.txt": {"size": 5, "sha256": digest}}),
        "nan": json.loads('{"format": "hubsurvey-clean/1", "files": {}, "checksum": "x", "n": NaN}'),
        "not_an_object": [1, 2, 3],
        "deep": None,  # written below: nested beyond the parser
        "_sibling": sibling,
    }


@pytest.mark.slow
@pytest.mark.parametrize("spoof", ["web_app", "right_keys_names_a_sibling", "right_keys_with_marker_no_checksum",
                                   "wrong_checksum", "dotdot", "absolute", "dot_segment", "backslash", "nan",
                                   "not_an_object", "deep", "symlink_to_a_real_manifest", "bom_and_crlf", "directory"])
def test_a_folder_with_a_manifest_hubsurvey_did_not_write_is_refused_and_untouched(tmp_path, spoof):
    import json

    src = _clean_source(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    outside = tmp_path / "outside.txt"
    outside.write_text("mine\n")
    (out / "notes.txt").write_text("mine\n")
    spoofs = _spoofs(out, outside)
    manifest = out / "manifest.json"
    if spoof == "deep":
        manifest.write_text("[" * 50_000 + "]" * 50_000)
    elif spoof == "symlink_to_a_real_manifest":
        real = tmp_path / "real"
        assert _clean_cli(src, "--out", real).exit_code == 0
        manifest.symlink_to(real / "manifest.json")
    elif spoof == "bom_and_crlf":
        real = tmp_path / "real"
        assert _clean_cli(src, "--out", real).exit_code == 0
        manifest.write_bytes(b"\xef\xbb\xbf" + (real / "manifest.json").read_bytes().replace(b"\n", b"\r\n"))
    elif spoof == "directory":
        manifest.mkdir()
    else:
        manifest.write_text(json.dumps(spoofs[spoof]), encoding="utf-8")
    before, outside_before = _snapshot(out), outside.read_text()
    result = _clean_cli(src, "--out", out, "--profile", "raw")
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ") and str(out) in lines[0], result.output
    assert _snapshot(out) == before and outside.read_text() == outside_before  # nothing overwritten, nothing deleted


@pytest.mark.slow
def test_only_the_files_a_clean_wrote_and_that_are_unchanged_go_and_only_inside_the_folder(tmp_path):
    import json

    src = _clean_source(tmp_path)
    out = tmp_path / "out"
    assert _clean_cli(src, "--out", out).exit_code == 0  # configs a and b, normalized
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["format"] == "hubsurvey-clean/1" and manifest["checksum"].startswith("sha256:")
    assert set(manifest["files"]) == {"a/test/0000.parquet", "b/test/0000.parquet"}
    (out / "mine.txt").write_text("an operator's note\n")  # not listed: it stays
    (out / "b" / "test" / "0000.parquet").write_bytes(b"edited by someone")  # listed, but no longer as written
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "0000.parquet").write_bytes(b"keep me")
    result = _clean_cli(src, "--out", out, "--config", "a", "--profile", "raw")  # another profile: a's old file goes
    assert result.exit_code == 0, result.output
    assert (out / "mine.txt").read_text() == "an operator's note\n"
    assert (out / "b" / "test" / "0000.parquet").read_bytes() == b"edited by someone"  # changed since: not deleted
    new = json.loads((out / "manifest.json").read_text())
    assert set(new["configs"]) == {"a"} and set(new["files"]) == {"a/test/0000.parquet"} and new["profile"] == "raw"
    # the changed file sits where a clean of b would write: refused, not overwritten
    result = _clean_cli(src, "--out", out, "--config", "b", "--profile", "raw")
    assert result.exit_code == 2 and "b/test/0000.parquet" in result.output, result.output
    assert (out / "b" / "test" / "0000.parquet").read_bytes() == b"edited by someone"
    # a link planted where a listed file was: not followed, not deleted, not overwritten
    (out / "b" / "test" / "0000.parquet").unlink()
    (out / "b" / "test").rmdir()
    (out / "b").rmdir()
    (out / "b").symlink_to(outside, target_is_directory=True)
    result = _clean_cli(src, "--out", out, "--profile", "normalized")
    assert (outside / "0000.parquet").read_bytes() == b"keep me"
    assert result.exit_code in (1, 2), result.output


@pytest.mark.slow
def test_a_clean_can_still_replace_its_own_folder_again_and_again(tmp_path):
    import json

    src = _clean_source(tmp_path)
    out = tmp_path / "out"
    for profile in ("normalized", "raw", "normalized"):
        result = _clean_cli(src, "--out", out, "--profile", profile)
        assert result.exit_code == 0, result.output
    assert _clean_cli(src, "--out", out, "--config", "a").exit_code == 0  # same clean: a is replaced, b kept
    manifest = json.loads((out / "manifest.json").read_text())
    assert set(manifest["configs"]) == {"a", "b"} and set(manifest["files"]) == {"a/test/0000.parquet", "b/test/0000.parquet"}
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()) == [
        "a/test/0000.parquet", "b/test/0000.parquet", "manifest.json"]


# --- the demo under offline mode --------------------------------------------------------------------------

def test_offline_mode_is_lifted_only_for_a_loopback_hub_and_only_inside(monkeypatch):
    from huggingface_hub import constants

    from hubsurvey.core.settings import SettingsError, online_on_loopback

    for name in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE"):
        monkeypatch.setenv(name, "1")
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    for endpoint in ("http://127.0.0.1:8080", "http://localhost:1", "http://[::1]:80", "http://127.8.9.1:5"):
        with online_on_loopback(endpoint):
            assert not constants.HF_HUB_OFFLINE and not constants.is_offline_mode()
            assert all(name not in __import__("os").environ for name in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"))
        assert constants.HF_HUB_OFFLINE and __import__("os").environ["HF_DATASETS_OFFLINE"] == "1"
    for endpoint in ("https://huggingface.co", "http://127.0.0.1.evil.example", "http://10.0.0.1", "http://localhost.evil:1"):
        with pytest.raises(SettingsError), online_on_loopback(endpoint):
            pass
        assert constants.HF_HUB_OFFLINE


@pytest.mark.slow
@pytest.mark.parametrize("option", ["--report-dir", "--hub-dir", "--db", "--workers"])
def test_a_demo_that_cannot_run_refuses_before_doing_anything(tmp_path, monkeypatch, option):
    from typer.testing import CliRunner

    from hubsurvey.cli import app

    monkeypatch.chdir(tmp_path)
    taken = tmp_path / "taken"
    taken.write_text("x")
    value = {"--report-dir": str(taken), "--hub-dir": str(taken / "sub"), "--db": str(taken / "r.duckdb"),
             "--workers": "0"}[option]
    result = CliRunner().invoke(app, ["demo", option, value])
    assert result.exit_code == 2, result.output
    assert result.output.startswith("error: ") and len(result.output.strip().splitlines()) == 1, result.output
    assert "mini-hub" not in result.output and "demo results" not in result.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["taken"]  # nothing generated, nothing written


@pytest.mark.slow
def test_the_demo_runs_with_offline_mode_set(tmp_path):
    import os
    import subprocess
    import sys

    work, tmp = tmp_path / "survey", tmp_path / "tmp"
    work.mkdir()
    tmp.mkdir()
    env = {**os.environ, "TMPDIR": str(tmp), "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    env.pop("HF_ENDPOINT", None)
    proc = subprocess.run([sys.executable, "-m", "hubsurvey.cli", "demo", "--workers", "1"], cwd=work, env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.strip().splitlines()
    assert lines[-2].startswith("demo results: ") and "16 job(s) done, 0 failed" in proc.stdout
    assert (work / "hubsurvey-demo" / "results.duckdb").is_file() and list(tmp.iterdir()) == []


# --- site --out: replaced whole only when every file in it is one a build wrote ---------------------------

@pytest.fixture(scope="module")
def site_db(tmp_path_factory):
    from test_analysis_fixtures import build_planted_db

    return build_planted_db(tmp_path_factory.mktemp("site-db") / "db")


@pytest.fixture(scope="module")
def built_site(site_db, tmp_path_factory):
    """A site a build wrote and rebuilt, and a copy of it that a build accepts as its own: each case
    below copies it, so that one build (not two a case) gives every case its site."""
    import shutil

    from hubsurvey.analysis.site import build_site
    from hubsurvey.core.store import Store

    out = tmp_path_factory.mktemp("built") / "site"
    with Store(site_db, read_only=True) as store:
        build_site(store, out)
        build_site(store, out)  # its own site: replaced, again and again
        copied = tmp_path_factory.mktemp("copied") / "site"
        shutil.copytree(out, copied, symlinks=True)
        build_site(store, copied)  # a copy is still the build's own: the cases' refusals are theirs alone
    return out


@pytest.mark.slow
@pytest.mark.parametrize("foreign", ["plain_marker", "forged_keys", "extra_file", "changed_page", "link", "empty_marker"])
def test_a_site_folder_with_anything_a_build_did_not_write_is_never_replaced(site_db, built_site, tmp_path, foreign):
    import json
    import shutil

    from hubsurvey.analysis.site import MARKER, build_site
    from hubsurvey.core.errors import BadInputError
    from hubsurvey.core.store import Store

    out = tmp_path / "site"
    shutil.copytree(built_site, out, symlinks=True)
    with Store(site_db, read_only=True) as store:
        page = next(p for p in (out / "d").rglob("*.html"))
        if foreign == "plain_marker":  # what a marker was before the seal, or anyone's own
            for p in list(out.rglob("*")):
                if p.is_file():
                    p.unlink()
            (out / MARKER).write_text("hubsurvey 0.1.0\n")
            (out / "thesis.tex").write_text("precious")
        elif foreign == "forged_keys":
            (out / MARKER).write_text(json.dumps({"format": "hubsurvey-site/1", "files": {}, "checksum": "sha256:0"}))
        elif foreign == "extra_file":
            (out / "d" / "notes.txt").write_text("precious")
        elif foreign == "changed_page":
            page.write_text("edited by hand")
        elif foreign == "link":
            (tmp_path / "elsewhere.txt").write_text("precious")
            (out / "d" / "link.html").symlink_to(tmp_path / "elsewhere.txt")
        elif foreign == "empty_marker":
            (out / MARKER).write_text("")
        before = {p.relative_to(out).as_posix(): p.read_bytes() for p in out.rglob("*") if p.is_file()}
        with pytest.raises(BadInputError) as caught:
            build_site(store, out)
        assert str(out) in str(caught.value) and "\n" not in str(caught.value)
    assert {p.relative_to(out).as_posix(): p.read_bytes() for p in out.rglob("*") if p.is_file()} == before
