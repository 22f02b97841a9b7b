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
