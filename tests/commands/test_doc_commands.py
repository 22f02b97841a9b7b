"""Every command a doc page, a template or a notify message tells a person to run runs as written.

The commands are extracted from README.md, docs/*.md and templates/*.j2 (fenced code blocks, inline
code spans, ``<code>`` elements) and from the messages `notify` drafts. Each one parses as the
command line parses it (an option missing, unknown or refused is a failure); the read commands and
the message's commands then run against the demo's survey and its stand-in Hub.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator
from pathlib import Path

import pytest
import typer
from conftest import ROOT
from typer.testing import CliRunner

from hubsurvey.cli import app

REPO = ROOT
SOURCES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md")), *sorted((REPO / "templates").glob("*.j2"))]
runner = CliRunner()

#: a word that stands for a value to fill in (FILE, OWNER/NAME, C, <id>, ...): a form, not a command
PLACEHOLDER = re.compile(r"^(?:[A-Z][A-Z0-9_/]*|.*[<>…\[\]|{}].*|\.\.\.)$")
#: the global options that may come before the command
GLOBAL = {"-v", "-vv", "--verbose"}


def _commands_in(line: str) -> Iterator[str]:
    """The ``hubsurvey`` commands of one shell line of a code block (unindented: an indented line is
    output, such as help text): after a prompt, between ``&&`` and ``;``, before a pipe or a comment."""
    if not line.startswith(("hubsurvey ", "$ hubsurvey ")):
        return
    line = line.strip().removeprefix("$ ")
    for part in re.split(r"&&|;|\|(?!\|)", line):
        part = part.split("  #")[0].strip()
        if part.startswith("hubsurvey "):
            yield part


def extract(path: Path) -> Iterator[tuple[str, str]]:
    """``(where, command)`` for every command ``path`` gives: fenced code lines, inline code spans
    and ``<code>`` elements that start with ``hubsurvey``."""
    fence = ""  # the open code block's fence (a longer one holds shorter ones: a message in ````markdown)
    lines = path.read_text(encoding="utf-8").splitlines()
    for number, line in enumerate(lines, 1):
        where = f"{path.relative_to(REPO) if path.is_relative_to(REPO) else path.name}:{number}"
        marker = re.match(r"\s*(`{3,})", line)
        if marker and not fence:
            fence = marker[1]
            continue
        if marker and marker[1].startswith(fence) and not line.strip().strip("`"):
            fence = ""
            continue
        if fence:
            # a command the page runs to show its error: the next line is that error, or it echoes $?
            shows_error = 'echo "exit $?"' in line or (number < len(lines) and lines[number].startswith("error:"))
            for command in _commands_in(line):
                yield where + (" (an error shown)" if shows_error else ""), command
            continue
        for span in re.findall(r"`(hubsurvey [^`]+)`|<code>(hubsurvey [^<]+)</code>", line):
            for command in filter(None, span):
                if not _mention(command):
                    yield where, command


def _mention(span: str) -> bool:
    """An inline span naming a command or one of its options (`hubsurvey clean`, `hubsurvey clean
    --db`) in prose, not a command line to run."""
    words = span.split()[1:]
    return len(words) == 1 or (len(words) == 2 and words[1].startswith("--"))


def _words(command: str) -> list[str] | None:
    """The command's arguments (after ``hubsurvey``), or None when it is a form to fill in, holds
    a template's expression, or redirects its output."""
    if "{{" in command or "{%" in command:
        return None
    try:
        words = shlex.split(command, comments=True)[1:]
    except ValueError:  # a span cut by a line break
        return None
    if not words or any(PLACEHOLDER.match(w) or w.startswith((">", "2>")) for w in words):
        return None
    return words


def commands() -> list[tuple[str, list[str]]]:
    found = []
    for path in SOURCES:
        for where, command in extract(path):
            words = _words(command)
            if words is not None:
                found.append((where, words))
    return found


def parse(words: list[str]) -> None:
    """Parse ``hubsurvey WORDS`` as the command line does, without running it: an unknown option, a
    missing one or a bad value raises the parser's error."""
    group = typer.main.get_command(app)
    top = group.context_class(group, info_name="hubsurvey")
    words = [w for w in words if w not in GLOBAL]
    if words[0] in ("-h", "--help", "--version"):
        return
    command = group.get_command(top, words[0])  # type: ignore[attr-defined]
    assert command is not None, f"no command {words[0]!r}"
    if {"-h", "--help"} & set(words):
        return
    command.make_context(words[0], list(words[1:]), parent=top).close()


@pytest.mark.slow
def test_the_docs_give_commands_and_the_forms_left_out_are_forms():
    found = commands()
    assert len(found) > 80  # README, every docs page, the report's templates
    assert {w[0] for _, w in found} >= {"audit", "run", "demo", "sql", "show", "check", "clean", "notify", "site",
                                         "history", "report", "export", "publish", "crossleaks", "exposure"}
    forms = [c for path in SOURCES for _, c in extract(path) if _words(c) is None]
    for form in forms:  # each left out holds a word to fill in, an expression, or a redirection
        assert "{{" in form or any(PLACEHOLDER.match(w) or w.startswith((">", "2>"))
                                   for w in shlex.split(form, comments=True)[1:]) or "'" in form or '"' in form, form


@pytest.mark.parametrize("where, words", commands(), ids=lambda v: v if isinstance(v, str) else None)
def test_every_command_the_docs_give_parses_as_written(where, words):
    try:
        parse(words)
    except Exception as e:  # the parser's own error, which the user would have met
        pytest.fail(f"{where}: hubsurvey {shlex.join(words)}: {e}")


# --- run, against the demo's survey ------------------------------------------------------------------

READ_COMMANDS = {"sql", "show", "status", "history", "report", "export", "site", "crossleaks"}


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    """The mini-hub, served, and its survey's DB."""
    from hubsurvey.core.hub import HubClient
    from hubsurvey.pipeline import RunOptions, run_survey
    from hubsurvey_standin import StandinHub, generate_minihub

    tmp = tmp_path_factory.mktemp("doc-commands")
    root = generate_minihub(tmp / "hub", seed=0)
    with StandinHub(root) as hub:
        client = HubClient(endpoint=hub.url, token=False, rate=0, file_rate=0, cache_dir=tmp / "cache")
        summary = run_survey(tmp / "demo.duckdb", client, None, RunOptions(workers=2, report_dir=tmp / "report"))
        assert summary.failed == 0
        yield hub, tmp / "demo.duckdb"


def _on_demo(words: list[str], db: Path, measured: list[str], *, keep_ids: bool = False) -> list[str]:
    """The command on the demo DB: its --db replaced, a dataset the demo does not hold replaced by
    one it holds (the docs name real Hub datasets)."""
    out, skip = [], False
    for i, word in enumerate(words):
        if skip:
            skip = False
            continue
        if word == "--db":
            skip = True
            continue
        out.append(word)
        if not keep_ids and i == 1 and words[0] in ("show", "history") and not word.startswith("-") and word not in measured \
                and not any(m.endswith("/" + word) for m in measured):
            out[-1] = measured[0]
    return [*out, "--db", str(db)]


@pytest.mark.slow
def test_the_read_commands_and_notifys_commands_run_as_written(demo, tmp_path, monkeypatch):
    from hubsurvey.core.store import Store

    hub, db = demo
    monkeypatch.chdir(tmp_path)
    with Store(db, read_only=True) as store:
        measured = [r[0] for r in store.query("SELECT DISTINCT dataset_id FROM current_measurements ORDER BY 1")[1]]
    ran = 0
    for where, words in commands():
        if words[0] not in READ_COMMANDS or "--source" in words:  # --source names a pair of the docs' data
            continue
        shows_error = where.endswith("(an error shown)")
        result = runner.invoke(app, _on_demo(words, db, measured, keep_ids=shows_error))
        if shows_error:  # the page shows its error (here, on other files, it may not occur): one line
            assert result.exit_code in (0, 1) or (result.exit_code in (2, 3, 4) and result.stderr.startswith("error: ")), \
                (where, result.output)
        else:
            assert result.exit_code in (0, 1), (where, words, result.output[-2000:])
        ran += 1
    assert ran > 20
    # the messages notify drafts: each command in them runs as written, against the stand-in
    messages = tmp_path / "messages"
    drafted = runner.invoke(app, ["notify", "--db", str(db), "--out", str(messages), "--max", "2"])
    assert drafted.exit_code == 0, drafted.output
    monkeypatch.setenv("HF_ENDPOINT", hub.url)
    told = [words for path in sorted(messages.glob("*.md")) for _, c in extract(path) if (words := _words(c))]
    assert {w[0] for w in told} == {"clean", "audit"}, told
    for words in told:
        result = runner.invoke(app, [*words, *(["--db", str(tmp_path / "mine.duckdb")] if words[0] == "audit" else [])])
        assert result.exit_code in (0, 1), (words, result.output[-2000:])
    assert any(Path("clean").rglob("*.parquet"))  # clean wrote the test split without its contaminated rows
