"""Every command's --help, rendered by the real CLI, reads well: no stray ` .` where a default was
eaten as markup, no `<bool>` beside a flag, no `<list[...]>` types, no doubled brackets in the
usage line, help on every option and argument, one name per concept, and the default store shown.

`python -m tests.test_help` prints the artefacts found and their count (docs: notes/pack.md).
"""

from __future__ import annotations

import importlib
import itertools
import json
import re
import subprocess
import sys
from collections import defaultdict
from typing import Any

import typer
from hypothesis import given, settings
from hypothesis import strategies as st
from typer._click.exceptions import ClickException

from flatten.cli.app import COMMANDS, SUMMARIES, app
from tests.conftest import PROJECT

_STRAY_DOT = re.compile(r"\S \.(?:\s|$)")
_TYPE_ARTEFACTS = ("<bool>", "<list[")
_USAGE_ARTEFACTS = re.compile(r"\[\[|\]\]|\.\.\.\}\.\.\.")
# Commands that read an index: each takes --corpus, so one corpus can be asked about alone.
_CORPUS_COMMANDS = ("search", "eval", "match", "sources", "show", "get", "toc", "card", "stats")


# Every command's help in one interpreter (one start-up, not one a command), with the app's
# click command as the console script runs it.
_RENDER_ALL = """
import json, sys
from click.testing import CliRunner
from typer.main import get_command
from flatten.cli.app import app
group = get_command(app)
answers = {name: CliRunner().invoke(group, [name, "--help"], prog_name="python -m flatten")
           for name in sys.argv[1:]}
print(json.dumps({name: [a.exit_code, a.stdout, a.stderr] for name, a in answers.items()}))
"""


def render_helps(commands: list[str]) -> dict[str, str]:
    """`docs-flatten COMMAND --help` as a user sees it, wide enough for one line per option, in
    an environment of only these variables (no colour forced by CI's)."""
    proc = subprocess.run(
        [sys.executable, "-c", _RENDER_ALL, *commands],
        capture_output=True, text=True, timeout=120, cwd=PROJECT,
        env={"COLUMNS": "200", "PATH": "/usr/bin:/bin", "TERM": "dumb"},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    helps = {}
    for name, (code, stdout, stderr) in json.loads(proc.stdout).items():
        assert code == 0, (name, stderr)
        helps[name] = stdout
    return helps


def render_help(command: str) -> str:
    return render_helps([command])[command]


def text_artefacts(command: str, text: str) -> list[str]:
    found = []
    for line in text.splitlines():
        cells = line.strip().strip("│").rstrip()
        if _STRAY_DOT.search(cells):
            found.append(f"{command}: stray ' .': {cells.strip()}")
        found += [f"{command}: {t} type: {cells.strip()}" for t in _TYPE_ARTEFACTS if t in cells]
        if line.lstrip().startswith("Usage:") and _USAGE_ARTEFACTS.search(line):
            found.append(f"{command}: doubled brackets in usage: {line.strip()}")
    if "--store" in text and ".docs-flatten" not in text:
        found.append(f"{command}: the default store .docs-flatten is not shown")
    return found


def declaration_artefacts() -> list[str]:
    """Missing help and names that differ for one concept, from the commands' declarations."""
    group = typer.main.get_command(app)
    found = []
    longs_by_dest: dict[str, set[tuple[str, ...]]] = defaultdict(set)
    long_by_short: dict[str, set[str]] = defaultdict(set)
    for name, command in sorted(group.commands.items()):
        ctx = command.make_context(name, [], resilient_parsing=True)
        for param in command.get_params(ctx):
            if getattr(param, "hidden", False):
                continue
            label = "/".join(param.opts)
            if not (getattr(param, "help", None) or "").strip():
                found.append(f"{name}: no help for {label}")
            longs = tuple(sorted(o for o in param.opts if o.startswith("--")))
            longs_by_dest[param.name or ""].add(longs)
            shorts = [o for o in param.opts if re.fullmatch(r"-\w", o)]
            for short in shorts:
                long_by_short[short].update(longs)
            found += [f"{name}: one-letter long option {o}" for o in longs if len(o) == 3]
        if name in _CORPUS_COMMANDS and "corpus" not in {p.name for p in command.params}:
            found.append(f"{name}: no --corpus")
    for dest, spellings in sorted(longs_by_dest.items()):
        if len(spellings) > 1:
            found.append(f"{dest!r} is spelled {sorted(spellings)} in different commands")
    for short, longs in sorted(long_by_short.items()):
        if len(longs) > 1:
            found.append(f"{short} stands for {sorted(longs)} in different commands")
    return found


def all_artefacts() -> list[str]:
    found = declaration_artefacts()
    for name, text in render_helps([name for name, _command, _settings in COMMANDS]).items():
        found += text_artefacts(name, text)
    return found


def test_every_commands_help_reads_well():
    assert all_artefacts() == []


def test_the_default_store_is_shown():
    assert ".docs-flatten" in render_help("search")


def test_eval_takes_the_top_k_spelling_of_search_and_keeps_its_old_one(tmp_path):
    from tests.conftest import run_cli

    for spelling in ("-k", "--top-k", "--k"):
        result = run_cli("eval", "--queries", tmp_path / "q", "--qrels", tmp_path / "r",
                         spelling, "5", "--store", tmp_path / "nostore")  # fmt: skip
        assert "No such option" not in result.stderr, result.stderr


def test_card_and_stats_take_a_corpus(tmp_path):
    from tests.conftest import FIXTURES, run_cli, write

    store = tmp_path / "store"
    write(tmp_path / "other", {"notes.md": "# Notes\n\nElsewhere.\n"})
    for corpus, tree in (("docs", FIXTURES / "docs-tree"), ("other", tmp_path / "other")):
        loaded = run_cli("ingest", "--root", tree, "--corpus", corpus, "--store", store, "-q")
        assert loaded.code == 0, loaded.stderr
    stats = run_cli("stats", "--corpus", "other", "--store", store, "--json")
    assert stats.code == 0, stats.stderr
    info = json.loads(stats.stdout)
    assert [c["name"] for c in info["corpora"]] == ["other"]
    assert (info["documents"], info["chunks"], info["kinds"]) == (1, 1, {"markdown": 1})
    card = run_cli("card", "--corpus", "other", "--store", store)
    assert card.code == 0, card.stderr
    assert "corpus `other`" in card.stdout and "notes.md" in card.stdout
    assert "corpus `docs`" not in card.stdout and "install.md" not in card.stdout
    both = run_cli("card", "--store", store).stdout
    assert "corpus `docs`" in both and "corpus `other`" in both


def _typed_params() -> list[tuple[str, Any, Any]]:
    """(command, its click context, parameter) for every typed parameter of the app."""
    group = typer.main.get_command(app)
    found = [("", group.make_context("docs-flatten", [], resilient_parsing=True), p)
             for p in group.get_params(group.make_context("docs-flatten", [],
                                                          resilient_parsing=True))]  # fmt: skip
    for name, command in sorted(group.commands.items()):
        ctx = command.make_context(name, [], resilient_parsing=True)
        found += [(name, ctx, param) for param in command.get_params(ctx)]
    return [(name, ctx, p) for name, ctx, p in found if hasattr(p, "type_descriptor")]


_PARAMS = _typed_params()
_CLI_VALUES = (
    st.sampled_from(["", "0", "1", "-1", "007", "1.5", "-0.5", ".5", "1e3", " 2", "2 ", "1_000",
                     "nan", "inf", "true", "md", "jsonl", "auto", "docs", "DOCS", "-", ".",
                     "a/b/", "\udcff", "9" * 25])
    | st.text(max_size=12)
    | st.integers(-(2**70), 2**70)
    | st.floats()
    | st.booleans()
)  # fmt: skip


def _outcome(coerce: Any, value: Any, param: Any, ctx: Any) -> tuple[str, str]:
    try:
        got = coerce._coerce_value(value, param=param, ctx=ctx)
    except ClickException as exc:
        return ("refused", f"{type(exc).__name__}: {exc.format_message()}")
    return ("taken", f"{type(got).__name__}: {got!r}")


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(range(len(_PARAMS))), _CLI_VALUES | st.lists(_CLI_VALUES, max_size=3))
def test_plain_coercion_takes_and_refuses_exactly_what_typers_own_does(which, value):
    """Every parameter the app declares, coerced without pydantic, gives what typer's pydantic
    coercion gives: the same value of the same type, or the same refusal, word for word."""
    from typer._coercion import build_runtime_param

    from flatten.cli.coerce import PlainRuntimeParam

    _name, ctx, param = _PARAMS[which]
    plain = param.get_runtime_param()
    own = build_runtime_param(param.type_descriptor)
    assert _outcome(plain, value, param, ctx) == _outcome(own, value, param, ctx)
    if param.type_descriptor.annotation is not bool:  # typer coerces no flag
        assert isinstance(plain, PlainRuntimeParam)


def test_a_command_starts_with_only_what_it_needs(tmp_path):
    """Typer would import pydantic to coerce the options' defaults (a quarter of a small run),
    and every command's module would come in at start-up: a flatten needs none of the index's,
    the app's --help no command's (its list is `SUMMARIES`). A flatten of a folder without a
    .gitignore loads no pathspec, nor the clone's module, and one that writes no --report not
    the summary's classes; a failed one prints its error without the search results' modules."""
    (tmp_path / "a.md").write_text("# A\n\ntext\n")
    (tmp_path / "empty").mkdir()
    check = (
        "import sys\n"
        "from flatten.cli.app import main\n"
        "unwanted = sys.argv.pop(1).split(',')\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "loaded = sorted(m for m in sys.modules if m in unwanted or m.split('.')[0] in unwanted)\n"
        "assert not loaded, loaded\n"
    )
    commands = sorted({f"flatten.cli.{target.partition(':')[0]}" for _n, target, _s in COMMANDS})
    flatten_run = ["flatten", "--root", str(tmp_path), "-q", "-o", str(tmp_path / "out.jsonl")]
    # The redaction's tables: the scan (re2's needle set), the key blocks', the placeholders'.
    tables = ["flatten.secrets.scan", "flatten.secrets.blocks", "flatten.secrets.placeholders"]
    # A text without a key block or a finding needs neither of those two detectors.
    unused = ["pydantic", "index", "pathspec", "flatten.summary", "flatten.sources.repo"]
    unused += tables[1:]
    for args, unwanted in (
        (["--help"], ["pydantic", "index", "flatten.secrets", *commands]),
        (["flatten", "--help"], ["pydantic", "index", *tables]),
        (["search", "--help"], ["pydantic", *tables]),
        (flatten_run, unused),
        (["flatten", "--root", str(tmp_path / "empty")], ["index.results", "index.citations"]),
    ):
        proc = subprocess.run([sys.executable, "-c", check, ",".join(unwanted), *args],
                              capture_output=True, text=True, timeout=60, cwd=PROJECT)  # fmt: skip
        assert proc.returncode == 0, (args, proc.stderr)
    assert (tmp_path / "out.jsonl").read_text().count("\n") == 1  # the run did run


def test_the_redaction_patterns_compile_on_first_use_and_the_first_redaction_finds_secrets():
    """Every flatten and every command that prints imports `flatten.secrets` (output is
    redacted); compiling its ~70 patterns and the RE2 tables at import was a third of an empty
    flatten's start-up. A redaction compiles only the patterns whose needles its text holds."""
    check = (
        "import sys\n"
        "import flatten.secrets as secrets\n"
        "from flatten.secrets.patterns import PATTERNS\n"
        "def compiled():\n"
        "    return sorted({p.kind for p in PATTERNS if {'regex', 'trigger'} & set(vars(p))})\n"
        "tables = ('re2', 'flatten.secrets.scan', 'flatten.secrets.blocks',\n"
        "          'flatten.secrets.placeholders')\n"
        "assert not [m for m in tables if m in sys.modules], sys.modules.keys()\n"
        "assert compiled() == [], compiled()\n"
        "found = secrets.redact('token: 8Fq2zLw9Xv4Rt7Yp\\nnothing here\\n')\n"
        "assert found.text == 'token: [REDACTED:password-assignment]\\nnothing here\\n', found\n"
        "assert compiled() == ['password-assignment'], compiled()\n"
        "assert 'flatten.secrets.blocks' not in sys.modules\n"
        "assert len(secrets.RE2_TRIGGERS) == 7  # the whole table, still importable\n"
    )
    proc = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True,
                          timeout=60, cwd=PROJECT)  # fmt: skip
    assert proc.returncode == 0, proc.stderr


def test_the_apps_command_list_is_each_commands_docstring_summary():
    """`SUMMARIES` (the app's --help draws its list from it, without building the commands) says
    what each command's docstring says first, on one line, for every command in order."""
    assert list(SUMMARIES) == [name for name, _target, _settings in COMMANDS]
    for name, target, _settings in COMMANDS:
        module, _, function = target.partition(":")
        doc = getattr(importlib.import_module(f"flatten.cli.{module}"), function).__doc__
        first_paragraph = (doc or "").strip().split("\n\n", 1)[0]
        assert SUMMARIES[name] == " ".join(first_paragraph.split()), name


if __name__ == "__main__":
    artefacts = all_artefacts()
    print("\n".join(artefacts))
    print(f"{len(artefacts)} help artefacts")


def test_the_apps_own_help_reads_well():
    # The app's options as a command's (no `<bool>` beside a flag), and each command's summary
    # wrapped as one paragraph: a docstring's own line break used to cut a sentence mid-row.
    proc = subprocess.run(
        [sys.executable, "-m", "flatten", "--help"], capture_output=True, text=True, timeout=60,
        cwd=PROJECT, env={"COLUMNS": "80", "PATH": "/usr/bin:/bin", "TERM": "dumb"},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert text_artefacts("docs-flatten", proc.stdout) == []
    box = [line.strip("│") for line in proc.stdout.split("Commands")[1].splitlines()[1:-1]]
    inner = len(box[0]) - 1  # the box's width inside its borders, less the right padding
    for row, below in itertools.pairwise(box):
        if below.startswith(" " * 3):  # the summary goes on: did its next word fit above?
            assert len(row.rstrip()) + 1 + len(below.split()[0]) > inner, (row, below)
    assert len(box) >= len(COMMANDS)
