"""The CI job and the one-off user: one run summary for flatten, index and ingest (schema 1),
one corpus naming rule, snapshots that cannot silently delete, a config that drives `ingest`,
hints that work as printed, and the CI recipe in examples/ run on a real git repository."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from index.snapshot import RemovalLimit, parse_limit
from index.store import Store
from tests.conftest import (
    PROJECT,
    CliResult,
    assert_clean_failure,
    git,
    jsonl,
    record,
    run_cli,
    write,
)

# The summary's shape, schema 1: every key always present; a part that did not run is null.
# (type, or a dict for a nested object, or None for "any"); `| None` marks a nullable part.
COUNTS = {"added": int, "updated": int, "unchanged": int, "removed": int, "malformed": int,
          "lines": int, "malformedLines": list,
          "compacted": ({"bytesBefore": int, "bytesAfter": int}, None)}  # fmt: skip
SHAPE: dict[str, Any] = {
    "schema": int, "command": str, "ok": bool, "corpus": (str, None), "source": (str, None),
    "sourceExpanded": (dict, None), "repoUrl": (str, None), "ref": (str, None),
    "commit": (str, None), "dirty": (bool, None), "upToDate": (bool, None), "kind": (str, None),
    "listing": (str, None),
    "files": ({"seen": int, "kept": int, "skipped": int, "skippedByReason": dict,
               "bytesRead": int}, None),
    "slices": ({"total": int, "byKind": dict}, None),
    "redactions": ({"total": int, "byRule": dict, "placeholdersKept": dict}, None),
    "load": (COUNTS, None),
    "chunks": ({"total": int, "written": int}, None),
    "vectors": ({"model": str, "dimension": (int, None), "embedded": int, "reused": int,
                 "pending": int, "failed": int, "skipped": dict, "requests": int,
                 "collected": int}, None),
    "timings": {"flatten": (float, int, None), "load": (float, int, None),
                "embed": (float, int, None), "total": (float, int)},
    "error": ({"reason": str, "message": str, "hint": (str, None)}, None),
    "skipped": list, "notes": list, "crawl": (dict, None), "pack": (dict, None),
    "partial": ({"reason": str, "detail": str}, None),
}  # fmt: skip


def assert_shape(data: Any, shape: Any, where: str = "$") -> None:
    """`data` has exactly the keys of `shape`, each of an allowed type (a JSON-schema check)."""
    options = shape if isinstance(shape, tuple) else (shape,)
    if data is None:
        assert None in options, f"{where}: null"
        return
    nested = [o for o in options if isinstance(o, dict)]
    if nested:
        assert isinstance(data, dict), f"{where}: {data!r} is not an object"
        assert set(data) == set(nested[0]), (where, sorted(set(data) ^ set(nested[0])))
        for key, sub in nested[0].items():
            assert_shape(data[key], sub, f"{where}.{key}")
        return
    types = tuple(o for o in options if isinstance(o, type))
    assert isinstance(data, types) and not (isinstance(data, bool) and bool not in types), (
        f"{where}: {data!r} is not {types}"
    )


def summary(result, *, ok: bool, command: str) -> dict[str, Any]:
    """The one summary on stdout (one JSON line per source), checked against the shape."""
    lines = [json.loads(line) for line in result.stdout.splitlines() if line.strip()]
    assert len(lines) == 1, result.stdout
    data = lines[0]
    assert_shape(data, SHAPE)
    assert (data["schema"], data["command"], data["ok"]) == (1, command, ok), data
    assert (data["error"] is None) == ok
    return data


@pytest.fixture
def docs_repo(make_repo):
    repo = make_repo("handbook")
    repo.commit({"README.md": "# Handbook\n\nHow we work.\n",
                 "docs/deploy.md": "# Deploy\n\nRoll out with care.\n\n## Rollback\n\nUndo.\n",
                 "src/app.py": "print('hi')\n"})  # fmt: skip
    return repo


# 1. One summary for the three commands, success and failure.


def test_flatten_report_index_json_and_ingest_json_share_one_summary(tmp_path, docs_repo):
    report = tmp_path / "report.json"
    flat = run_cli("flatten", "--repo", docs_repo.url, "-o", tmp_path / "h.jsonl", "--report",
                   report, "-q")  # fmt: skip
    assert flat.code == 0, flat.stderr
    data = json.loads(report.read_text())
    assert_shape(data, SHAPE)
    assert (data["command"], data["ok"], data["load"], data["vectors"]) == ("flatten", True, None,
                                                                            None)  # fmt: skip
    assert data["files"]["kept"] == 2 and data["files"]["skippedByReason"] == {"not-docs": 1}
    assert data["repoUrl"] == docs_repo.url and data["commit"] and data["ref"] == "trunk"
    assert data["slices"]["byKind"] == {"markdown": data["slices"]["total"]}

    store = tmp_path / "store"
    indexed = summary(run_cli("index", tmp_path / "h.jsonl", "--corpus", "h", "--store", store,
                              "--json"), ok=True, command="index")  # fmt: skip
    assert indexed["files"] is None and indexed["load"]["added"] == 2
    assert indexed["chunks"] == {"total": data["slices"]["total"], "written": 3}

    first = summary(run_cli("ingest", "--repo", docs_repo.url, "--store", store, "--json"),
                    ok=True, command="ingest")  # fmt: skip
    again = summary(run_cli("ingest", "--repo", docs_repo.url, "--store", store, "--json"),
                    ok=True, command="ingest")  # fmt: skip
    assert first["corpus"] == again["corpus"] == "handbook"  # the repository's name
    assert first["commit"] and first["ref"] == "trunk" and first["source"] == docs_repo.url
    assert first["files"]["kept"] == 2 and first["load"]["added"] == 2
    # A no-op run still says how big the corpus is.
    assert again["load"]["unchanged"] == 2 and again["chunks"] == {"total": 3, "written": 0}


@pytest.mark.parametrize(
    ("args", "command", "reason", "code"),
    [(["ingest", "--root", "missing-dir"], "ingest", "root-missing", 1),
     (["ingest"], "ingest", "no-source", 2),
     (["index", "missing.jsonl", "--corpus", "c"], "index", "path-missing", 2),
     (["index", "FILE"], "index", "corpus-needed", 2)],
    ids=["ingest source missing", "ingest nothing", "index file missing", "index no corpus"],
)  # fmt: skip
def test_a_failed_run_prints_the_same_summary_with_its_error(tmp_path, args, command, reason, code):
    file = jsonl(tmp_path / "c.jsonl", [record("a.md", 1, "alpha")])
    args = [str(file) if a == "FILE" else a for a in args]
    result = run_cli(*args, "--store", tmp_path / "s", "--json", cwd=tmp_path)
    assert_clean_failure(result, code)
    data = summary(result, ok=False, command=command)
    assert data["error"]["reason"] == reason and data["error"]["message"] in result.stderr


def test_a_failed_flatten_writes_the_summary_with_its_error(tmp_path):
    write(tmp_path / "code", {"a.py": "x = 1\n"})
    report = tmp_path / "r.json"
    result = run_cli("flatten", "--root", tmp_path / "code", "--report", report)
    assert_clean_failure(result, 1)
    data = json.loads(report.read_text())
    assert_shape(data, SHAPE)
    assert data["ok"] is False and data["error"]["reason"] == "no-docs"
    assert "--kind code" in data["error"]["hint"]


# 2. One naming rule; snapshots that cannot silently delete.


def test_the_corpus_defaults_to_the_repository_folder_or_site_name():
    from flatten.corpus_names import source_corpus

    assert source_corpus(repo="https://github.com/encode/httpx.git") == "httpx"
    assert source_corpus(repo="git@gitlab.com:group/sub/tool.git") == "tool"
    assert source_corpus(repo="encode/httpx") == "httpx"
    assert source_corpus(repo="file:///srv/git/handbook/") == "handbook"
    assert source_corpus(root="/srv/docs/") == "docs"
    assert source_corpus(url="https://docs.example.com/guide/") == "docs.example.com/guide"
    assert source_corpus(url="http://127.0.0.1:8000/") == "127.0.0.1:8000"


def test_stdin_and_jsonl_need_a_corpus_and_the_hint_works_as_printed(tmp_path):
    first = jsonl(tmp_path / "a.jsonl", [record("a.md", 1, "alpha")])
    second = jsonl(tmp_path / "b.jsonl", [record("b.md", 1, "beta")])
    store = tmp_path / "s"
    two = run_cli("index", first, second, "--store", store)
    assert_clean_failure(two, 2, "--corpus")
    assert not store.exists()  # nothing was loaded under a guessed name
    with open(first, "rb") as handle:
        piped = subprocess.run([sys.executable, "-m", "flatten", "index", "-", "--store",
                                str(store)], stdin=handle, capture_output=True, text=True,
                               timeout=120)  # fmt: skip
    assert piped.returncode == 2 and "stdin carries no corpus name" in piped.stderr
    hint = _commands(two.stderr)[0]
    assert hint.endswith("--corpus a")
    assert _run_hint(hint).code == 0
    with Store.open(store, readonly=True) as opened:
        assert opened.db.execute("SELECT name FROM corpora").fetchall() == [("a",)]


def _many(prefix: str, n: int) -> list[dict]:
    return [record(f"{prefix}{i}.md", 1, f"document {i}") for i in range(n)]


def test_a_snapshot_removing_most_of_a_corpus_stops_unless_allowed(tmp_path):
    store = tmp_path / "s"
    earlier = jsonl(tmp_path / "earlier.jsonl", _many("guide/", 30))
    other = jsonl(tmp_path / "other.jsonl", _many("other/", 3))
    assert run_cli("index", earlier, "--corpus", "docs", "--store", store, "-q").code == 0
    refused = run_cli("index", other, "--corpus", "docs", "--store", store, "--json")
    assert_clean_failure(refused, 1, "would remove 30 of the 30 documents", "--max-delete 30")
    assert summary(refused, ok=False, command="index")["error"]["reason"] == "too-many-removals"
    with Store.open(store, readonly=True) as opened:  # nothing written, nothing removed
        assert opened.db.execute("SELECT count(*) FROM documents").fetchone()[0] == 30
    low = run_cli("index", other, "--corpus", "docs", "--store", store, "--max-delete", "29")
    assert_clean_failure(low, 1, "past --max-delete 29")
    allowed = _run_hint(_commands(refused.stderr)[0])
    assert allowed.code == 0, allowed.stderr
    data = json.loads(allowed.stdout)
    assert (data["load"]["removed"], data["load"]["added"]) == (30, 3)


def test_a_renamed_folder_is_no_removal_for_the_limit(tmp_path):
    # 30 documents moved from guide/ to handbook/, content and all: 30 removed and 30 added,
    # and none of them gone. One more document really removed counts as one.
    store = tmp_path / "s"
    docs = [record(f"guide/{i}.md", 1, f"document {i}", docHash=f"{i:064x}") for i in range(31)]
    moved = [{**r, "id": r["id"].replace("guide/", "handbook/"),
              "source": r["source"].replace("guide/", "handbook/")} for r in docs[:30]]  # fmt: skip
    assert run_cli("index", jsonl(tmp_path / "a.jsonl", docs), "--corpus", "c",
                   "--store", store, "-q").code == 0  # fmt: skip
    result = run_cli("index", jsonl(tmp_path / "b.jsonl", moved), "--corpus", "c",
                     "--store", store, "--json")  # fmt: skip
    assert result.code == 0, result.stderr
    load = json.loads(result.stdout)["load"]
    assert (load["added"], load["removed"]) == (30, 31)
    assert _documents(store) == sorted(r["source"] for r in moved)
    # Other content under the old names is a removal: the limit holds.
    other = [{**r, "content": "else", "docHash": "f" * 64} for r in docs[:30]]
    refused = run_cli("index", jsonl(tmp_path / "c.jsonl", other), "--corpus", "c",
                      "--store", store)  # fmt: skip
    assert_clean_failure(refused, 1, "would remove 30 of the 30 documents")


def test_small_or_partial_removals_and_percentages_need_no_flag(tmp_path):
    store = tmp_path / "s"
    assert run_cli("index", jsonl(tmp_path / "a.jsonl", _many("a", 12)), "--corpus", "c",
                   "--store", store).code == 0  # fmt: skip
    # 10 of 12: more than half, but not more than 10.
    kept = jsonl(tmp_path / "b.jsonl", _many("a", 2))
    assert run_cli("index", kept, "--corpus", "c", "--store", store).code == 0
    grown = jsonl(tmp_path / "c.jsonl", _many("b", 40))
    assert run_cli("index", grown, "--corpus", "c", "--store", store, "--partial").code == 0
    # 42 -> 2: 40 removed (95.2%): allowed by a percentage above it.
    assert run_cli("index", kept, "--corpus", "c", "--store", store, "--max-delete", "96%",
                   "-q").code == 0  # fmt: skip


def _documents(store: Path) -> list[str]:
    with Store.open(store, readonly=True) as opened:
        return [r[0] for r in opened.db.execute("SELECT source FROM documents ORDER BY source")]


def test_a_snapshot_with_malformed_lines_or_no_records_removes_nothing(tmp_path):
    # A malformed line may be a whole document, and an empty file names none: neither input
    # is a whole snapshot, so the documents it does not mention are kept, and the run says so.
    store = tmp_path / "s"
    good = _many("guide/", 8)
    assert run_cli("index", jsonl(tmp_path / "a.jsonl", good), "--corpus", "c",
                   "--store", store, "-q").code == 0  # fmt: skip
    before = _documents(store)
    lines = (tmp_path / "a.jsonl").read_text().splitlines()
    broken = tmp_path / "broken.jsonl"
    broken.write_text("\n".join([lines[0][:-5], *lines[1:]]) + "\n")  # guide/0.md cut short
    result = run_cli("index", broken, "--corpus", "c", "--store", store, "--json")
    load = json.loads(result.stdout)["load"]
    assert (load["removed"], load["malformed"], load["unchanged"]) == (0, 1, 7)
    said = run_cli("index", broken, "--corpus", "c", "--store", store)
    assert "partial input (1 malformed lines): nothing removed" in said.stderr + said.stdout
    assert _documents(store) == before
    for empty in ("", "garbage\n"):  # no record at all: refused, named (tests/test_load_safety)
        (tmp_path / "e.jsonl").write_text(empty)
        result = run_cli("index", tmp_path / "e.jsonl", "--corpus", "c", "--store", store)
        assert_clean_failure(result, 1, "holds no records", "nothing was loaded")
        assert _documents(store) == before
    # The same file whole again is a snapshot: what it lacks is removed, as before.
    assert run_cli("index", jsonl(tmp_path / "b.jsonl", good[1:]), "--corpus", "c",
                   "--store", store, "-q").code == 0  # fmt: skip
    assert _documents(store) == before[1:]


@given(st.integers(0, 10_000), st.integers(0, 10_000))
def test_the_default_limit_is_half_the_corpus_or_ten(removing, documents):
    removing = min(removing, documents)
    allowed = parse_limit(None).allows(removing, documents)
    assert allowed == (removing <= 10 or removing * 2 <= documents)
    assert parse_limit("100%").allows(removing, documents)
    assert parse_limit(str(removing)).allows(removing, documents)
    assert RemovalLimit(count=0).allows(0, documents)


@pytest.mark.parametrize("text", ["-1", "ten", "1.5", "%", "10%%"])
def test_a_bad_max_delete_is_a_usage_error(tmp_path, text):
    corpus = jsonl(tmp_path / "a.jsonl", [record("a.md", 1, "alpha")])
    result = run_cli("index", corpus, "--corpus", "c", "--store", tmp_path / "s",
                     f"--max-delete={text}")  # fmt: skip
    assert_clean_failure(result, 2, "--max-delete")


# Every hint that holds a docs-flatten command works as printed (placeholders filled in).
_COMMAND = re.compile(r"`(docs-flatten [^`]+)`|: (docs-flatten .+)$")
_PLACEHOLDERS = {"DIR": "{docs}", "FILE.jsonl": "{jsonl}", "NAME": "hinted", "URL": "{repo}"}


def _commands(text: str) -> list[str]:
    return [a or b for line in text.splitlines() if line.startswith("hint: ")
            for a, b in _COMMAND.findall(line)]  # fmt: skip


def _run_hint(command: str, cwd: Path | None = None) -> CliResult:
    """The hint as a user pastes it: split as a shell would, run as the CLI."""
    args = shlex.split(command)
    assert args[0] == "docs-flatten"
    return run_cli(*args[1:], cwd=cwd)


def _hinted_commands() -> set[str]:
    """`docs-flatten <command>` in the code's hints: `hint=` arguments, `hint` assignments and
    the functions that build hints."""
    import ast

    from flatten.cli.app import COMMANDS

    commands = "|".join(name for name, _, _ in COMMANDS)
    found: set[str] = set()
    for path in sorted((PROJECT / "flatten").rglob("*.py")) + sorted(
        (PROJECT / "index").rglob("*.py")
    ):
        source = path.read_text()
        for node in ast.walk(ast.parse(source)):
            parts: list[ast.AST] = []
            if isinstance(node, ast.keyword) and node.arg == "hint":
                parts = [node.value]
            elif isinstance(node, ast.Assign | ast.AugAssign):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                if any("hint" in ast.unparse(t) for t in targets):
                    parts = [node.value]
            elif isinstance(node, ast.FunctionDef) and "hint" in node.name:
                parts = [node]
            for part in parts:
                segment = ast.get_source_segment(source, part) or ""
                found.update(re.findall(rf"docs-flatten (?:{commands})\b", segment))
    return found


def test_every_hint_naming_a_command_is_covered_and_works(tmp_path, docs_repo):
    store = tmp_path / "s"
    write(tmp_path / "docs", {"a.md": "# A\n\nalpha\n"})
    corpus = jsonl(tmp_path / "c.jsonl", [record("a.md", 1, "alpha")])
    values = {"docs": tmp_path / "docs", "jsonl": corpus, "repo": docs_repo.url}
    # A store that is not there (search, and MCP's index_not_built, carry the same hint): each
    # command it names builds the very store that was read.
    built = _commands(run_cli("search", "alpha", "--store", store).stderr)
    assert len(built) == 2 and all(f"--store {store}" in c for c in built), built
    for command in built:
        for name, value in _PLACEHOLDERS.items():
            command = command.replace(name, value.format(**values))
        done = _run_hint(command, cwd=tmp_path)
        assert done.code == 0, (command, done.stderr)
    assert run_cli("search", "alpha", "--store", store).code == 0
    listing = _commands(run_cli("get", "nope.md", "--store", store).stderr)
    assert listing == [f"docs-flatten sources --store {store}"]
    assert _run_hint(listing[0]).code == 0
    # A folder asked for as a document: its table of contents.
    nested = jsonl(tmp_path / "n.jsonl", [record("guide/b.md", 1, "beta")])
    assert run_cli("index", nested, "--corpus", "n", "--store", store, "-q").code == 0
    contents = _commands(run_cli("get", "guide/", "--store", store).stderr)
    assert contents == [f"docs-flatten toc guide/ --store {store}"]
    assert "guide/b.md" in _run_hint(contents[0]).stdout
    # ingest with nothing to ingest: ingest this folder.
    ingest = _commands(run_cli("ingest", "--store", store, cwd=tmp_path / "docs").stderr)
    assert _run_hint(ingest[0], cwd=tmp_path / "docs").code == 0
    # A stream without the closing mark: pipe flatten into it.
    cut = subprocess.run([sys.executable, "-m", "flatten", "index", "-", "--corpus", "p",
                          "--store", str(store)], input=corpus.read_text(), capture_output=True,
                         text=True, timeout=120)  # fmt: skip
    producer = _commands(cut.stderr)[0].replace("DIR", str(tmp_path / "docs"))
    piped = subprocess.run(f"{producer} | docs-flatten index - --corpus p --store {store}"
                           .replace("docs-flatten", f"{sys.executable} -m flatten"),
                           shell=True, capture_output=True, text=True, timeout=120)  # fmt: skip
    assert piped.returncode == 0, piped.stderr
    # An input with no records: the hint drops the corpus by name, in the very store.
    (tmp_path / "empty.jsonl").write_text("")
    refused = run_cli("index", tmp_path / "empty.jsonl", "--corpus", "p", "--store", store)
    assert _commands(refused.stderr) == [f"docs-flatten drop --corpus p --store {store}"]
    assert _run_hint(_commands(refused.stderr)[0]).code == 0
    covered = {"docs-flatten ingest", "docs-flatten index", "docs-flatten sources",
               "docs-flatten flatten", "docs-flatten toc", "docs-flatten drop"}  # fmt: skip
    assert _hinted_commands() == covered


# 3. A config that drives the job.


@pytest.mark.parametrize(
    ("config", "named"),
    [("colour: blue\n", "colour: not a section (known: citations, embeddings, flatten"),
     ("flatten:\n  exlude: ['*.md']\n", "flatten.exlude: not a setting (known: exclude"),
     ("sources:\n  - root: .\n    kindd: code\n", "sources[0].kindd: not a setting"),
     ("sources:\n  - root: .\n    repo: x\n", "sources[0]: give exactly one of repo, root"),
     ("flatten:\n  kind: everything\n", "flatten.kind: expected one of docs, code, auto"),
     ("citations:\n  - pattern: x\n    replace: y\n    corpuss: z\n", "citations[0].corpuss"),
     ("embeddings:\n  base_url: http://x\n  model: m\n  modle: n\n", "embeddings.modle"),
     ("redaction:\n  allows: []\n", "redaction.allows: not a setting")],
    ids=["top", "flatten", "source", "two sources", "kind", "citations", "embeddings",
         "redaction"],
)  # fmt: skip
def test_an_unknown_or_bad_config_key_is_an_error_naming_it(tmp_path, config, named):
    (tmp_path / "docs-flatten.yaml").write_text(config)
    write(tmp_path / "docs", {"a.md": "# A\n"})
    for args in (["ingest", "--store", tmp_path / "s"], ["config"],
                 ["flatten", "--root", tmp_path / "docs"]):  # fmt: skip
        result = run_cli(*args, cwd=tmp_path)
        assert_clean_failure(result, 2, named)


def _two_sources(tmp_path: Path, docs_repo, extra: str = "") -> Path:
    write(tmp_path / "notes", {"a.md": "# A\n\nalpha\n", "b.txt": "plain text notes\n",
                               "c.py": "def f():\n    return 1\n"})  # fmt: skip
    config = tmp_path / "docs-flatten.yaml"
    config.write_text(
        "flatten:\n  kind: code\n  max-chars: 3000\n"
        f"sources:\n  - root: {tmp_path / 'notes'}\n    exclude: ['*.py']\n"
        f"  - repo: {docs_repo.url}\n    kind: docs\n    corpus: hb\n{extra}"
    )
    return config


def test_a_bare_ingest_refreshes_every_configured_source(tmp_path, docs_repo):
    _two_sources(tmp_path, docs_repo)
    result = run_cli("ingest", "--store", tmp_path / "s", "--json", cwd=tmp_path)
    assert result.code == 0, result.stderr
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    for line in lines:
        assert_shape(line, SHAPE)
    notes, handbook = lines
    assert (notes["corpus"], notes["kind"], handbook["corpus"], handbook["kind"]) == (
        "notes",
        "code",
        "hb",
        "docs",
    )
    # code from the config's flatten: takes b.txt; the source's exclude drops c.py
    assert notes["files"]["kept"] == 2 and notes["files"]["skippedByReason"] == {"excluded": 1}
    assert handbook["files"]["kept"] == 2 and handbook["commit"]
    again = run_cli("ingest", "--store", tmp_path / "s", "--json", cwd=tmp_path)
    notes, handbook = [json.loads(x) for x in again.stdout.splitlines()]
    # The folder is flattened again (all unchanged); the repository, whose remote names the
    # commit of its last load, is not even cloned.
    assert notes["load"]["unchanged"] == 2 and notes["upToDate"] is None
    assert handbook["upToDate"] is True and handbook["load"] is None


def test_one_failing_source_does_not_stop_the_others(tmp_path, docs_repo):
    _two_sources(tmp_path, docs_repo, extra="  - root: /no/such/folder\n    corpus: gone\n")
    result = run_cli("ingest", "--store", tmp_path / "s", "--json", cwd=tmp_path)
    assert result.code == 1 and "1 of 3 sources failed" in result.stderr
    oks = [json.loads(x)["ok"] for x in result.stdout.splitlines()]
    assert oks == [True, True, False]


def test_two_sources_loading_one_corpus_are_refused_before_anything_runs(tmp_path, docs_repo):
    _two_sources(tmp_path, docs_repo, extra=f"  - root: {tmp_path / 'notes'}\n    corpus: hb\n")
    result = run_cli("ingest", "--store", tmp_path / "s", cwd=tmp_path)
    assert_clean_failure(result, 2, "sources[1]", "sources[2]", "corpus 'hb'")
    assert not (tmp_path / "s").exists()


def test_config_show_says_flag_over_config_over_default(tmp_path, docs_repo):
    _two_sources(tmp_path, docs_repo)
    shown = run_cli("config", "--show", "--max-chars", "2500", "--json", cwd=tmp_path)
    assert shown.code == 0, shown.stderr
    data = json.loads(shown.stdout)
    notes, handbook = data["sources"]
    assert notes["settings"]["kind"] == {"value": "code", "origin": "config flatten.kind"}
    assert handbook["settings"]["kind"] == {"value": "docs", "origin": "config sources[1].kind"}
    assert notes["settings"]["max_chars"] == {"value": 2500, "origin": "flag"}
    assert notes["settings"]["max_file_size"] == {"value": "1MiB", "origin": "default"}
    assert notes["settings"]["corpus"]["origin"] == "default (the folder's name)"
    text = run_cli("config", "--show", cwd=tmp_path).stdout
    assert re.search(r"kind\s+docs\s+config sources\[1\]\.kind", text), text


def test_flatten_takes_its_defaults_from_the_config_and_a_flag_wins(tmp_path):
    write(tmp_path / "t", {"a.md": "# A\n", "b.py": "x = 1\n"})
    (tmp_path / "docs-flatten.yaml").write_text("flatten:\n  kind: code\n")
    configured = run_cli("flatten", "--root", tmp_path / "t", "-q", cwd=tmp_path)
    assert {r["source"] for r in configured.records()} == {"a.md", "b.py"}
    flagged = run_cli("flatten", "--root", tmp_path / "t", "-q", "--kind", "docs", cwd=tmp_path)
    assert {r["source"] for r in flagged.records()} == {"a.md"}


# 5. The CI recipe, run as CI would run it, on a local git repository.


def test_the_ci_recipe_refreshes_an_index_on_every_merge(tmp_path, make_repo):
    repo = make_repo("site")
    repo.commit({"docs/a.md": "# A\n\nalpha\n", "docs/b.md": "# B\n\nbeta\n",
                 "docs-flatten.yaml": "sources:\n  - root: .\n"})  # fmt: skip
    script = PROJECT / "examples" / "ci" / "refresh.sh"
    summary_file = tmp_path / "step-summary.md"
    env = {**os.environ, "DOCS_FLATTEN": f"{sys.executable} -m flatten", "PYTHON": sys.executable,
           "GITHUB_STEP_SUMMARY": str(summary_file), "PYTHONPATH": str(PROJECT)}  # fmt: skip

    def refresh() -> subprocess.CompletedProcess[str]:
        return subprocess.run(["sh", str(script)], cwd=repo.path, env=env, capture_output=True,
                              text=True, timeout=300)  # fmt: skip

    first = refresh()
    assert first.returncode == 0, first.stderr
    rows = [json.loads(x) for x in (repo.path / ".docs-flatten/last-run/summary.jsonl").read_text()
            .splitlines()]  # fmt: skip
    assert [(r["corpus"], r["load"]["added"]) for r in rows] == [("site", 2)]
    assert "| site |" in first.stdout and "| site |" in summary_file.read_text()
    assert (repo.path / ".docs-flatten" / "index.sqlite").exists()  # the cached store

    repo.commit({"docs/b.md": "# B\n\nbeta, revised\n"})  # the next merge
    second = refresh()
    assert second.returncode == 0, second.stderr
    row = json.loads((repo.path / ".docs-flatten/last-run/summary.jsonl").read_text())
    # Only b.md changed: a.md's new commit is updated in place, not rewritten; the recipe's own
    # output is not input.
    assert (row["load"]["added"], row["load"]["updated"], row["load"]["removed"]) == (0, 1, 0)
    assert row["load"]["unchanged"] == 1
    assert row["files"]["kept"] == 2

    (repo.path / "docs-flatten.yaml").write_text("sources:\n  - root: ./missing\n")
    failed = refresh()
    assert failed.returncode == 1
    row = json.loads((repo.path / ".docs-flatten/last-run/summary.jsonl").read_text())
    assert row["ok"] is False and "FAILED: root-missing" in failed.stdout


def test_the_ci_recipe_says_a_repository_was_up_to_date(tmp_path, make_repo):
    """A second refresh of a repository whose remote has not moved loads nothing: its row says
    so, rather than "ok" beside a row of dashes."""
    origin = make_repo("handbook")
    origin.commit({"docs/a.md": "# A\n\nalpha\n"})
    (tmp_path / "docs-flatten.yaml").write_text(f"sources:\n  - repo: {origin.url}\n")
    env = {**os.environ, "DOCS_FLATTEN": f"{sys.executable} -m flatten", "PYTHON": sys.executable,
           "PYTHONPATH": str(PROJECT), "GITHUB_STEP_SUMMARY": ""}  # fmt: skip
    rows = []
    for _ in range(2):
        done = subprocess.run(["sh", str(SCRIPT)], cwd=tmp_path, env=env, capture_output=True,
                              text=True, timeout=300)  # fmt: skip
        assert done.returncode == 0, done.stderr
        rows.append(next(x for x in done.stdout.splitlines() if x.startswith("| handbook |")))
    assert rows[0].endswith("| ok |") and rows[1].endswith("| up to date, not cloned |")


def test_the_ci_workflows_cache_by_the_config_and_call_the_one_script():
    from ruamel.yaml import YAML

    examples = PROJECT / "examples" / "ci"
    github = YAML(typ="safe").load((examples / "github-actions.yml").read_text())
    steps = github["jobs"]["refresh"]["steps"]
    cache = next(s for s in steps if s.get("uses", "").startswith("actions/cache"))
    assert "hashFiles('docs-flatten.yaml')" in cache["with"]["key"]
    assert cache["with"]["path"] == ".docs-flatten"
    assert [s["run"] for s in steps if "run" in s][-1] == "sh examples/ci/refresh.sh"
    gitlab = YAML(typ="safe").load((examples / "gitlab-ci.yml").read_text())["docs-index"]
    assert gitlab["cache"]["key"] == {"files": ["docs-flatten.yaml"]}
    assert "sh examples/ci/refresh.sh" in gitlab["script"]
    assert ".docs-flatten/" in gitlab["artifacts"]["paths"]
    config = run_cli("config", "--config", examples / "docs-flatten.yaml")
    assert config.code == 0 and "2 source(s)" in config.stdout


SCRIPT = PROJECT / "examples" / "ci" / "refresh.sh"


def _refresh(cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """The CI recipe, run as CI runs it, in `cwd`."""
    base = {**os.environ, "DOCS_FLATTEN": f"{sys.executable} -m flatten", "PYTHON": sys.executable,
            "PYTHONPATH": str(PROJECT)}  # fmt: skip
    base.pop("GITHUB_STEP_SUMMARY", None)
    return subprocess.run(["sh", str(SCRIPT)], cwd=cwd, env={**base, **env},
                          capture_output=True, text=True, timeout=300)  # fmt: skip


def _rows(out: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (out / "summary.jsonl").read_text().splitlines()]


def test_the_recipe_never_indexes_its_own_summary_and_keeps_what_it_makes_private(
    tmp_path, make_repo
):
    repo = make_repo("site")
    repo.commit({"docs/a.md": "# A\n\nalpha\n", "docs-flatten.yaml": "sources:\n  - root: .\n"})
    for _run in range(2):  # the second run finds the first's summaries under the store
        done = _refresh(repo.path, DOCS_FLATTEN_STORE="ci-index")
        assert done.returncode == 0, done.stderr
        (row,) = _rows(repo.path / "ci-index" / "last-run")
        assert row["files"]["kept"] == 1, row  # docs/a.md alone
    with Store.open(repo.path / "ci-index", readonly=True) as store:
        sources = [r[0] for r in store.db.execute("SELECT source FROM documents")]
    assert sources == ["docs/a.md"]
    # The store's folder as the library makes it (0700), and the summaries private too.
    modes = {p.name: p.stat().st_mode & 0o777 for p in
             (repo.path / "ci-index", repo.path / "ci-index" / "last-run",
              repo.path / "ci-index" / "last-run" / "summary.md",
              repo.path / "ci-index" / "last-run" / "summary.jsonl")}  # fmt: skip
    assert modes == {"ci-index": 0o700, "last-run": 0o700, "summary.md": 0o600,
                     "summary.jsonl": 0o600}  # fmt: skip


def test_the_recipe_takes_a_postgresql_store_as_a_url_not_a_folder(
    tmp_path, make_repo, postgres_url
):
    repo = make_repo("site")
    repo.commit({"docs/a.md": "# A\n\nalpha\n", "docs-flatten.yaml": "sources:\n  - root: .\n"})
    before = set(repo.path.iterdir())
    done = _refresh(repo.path, DOCS_FLATTEN_STORE=postgres_url)
    assert done.returncode == 0, done.stderr
    made = set(repo.path.iterdir()) - before
    assert made == {repo.path / ".docs-flatten"}  # no folder named after the URL
    assert [p.name for p in (repo.path / ".docs-flatten").iterdir()] == ["last-run"]
    (row,) = _rows(repo.path / ".docs-flatten" / "last-run")
    assert row["ok"] and row["load"]["added"] == 1
    with Store.open(postgres_url, readonly=True) as store:
        assert [r[0] for r in store.db.execute("SELECT source FROM documents")] == ["docs/a.md"]


def test_the_recipe_passes_when_a_docs_folder_is_renamed(tmp_path, make_repo):
    repo = make_repo("site")
    pages = {f"docs/page{i}.md": f"# Page {i}\n\nabout topic {i}\n" for i in range(14)}
    repo.commit({**pages, "docs-flatten.yaml": "sources:\n  - root: .\n"})
    assert _refresh(repo.path).returncode == 0
    git(repo.path, "mv", "docs", "handbook")
    git(repo.path, "commit", "-q", "-m", "rename")
    done = _refresh(repo.path)
    assert done.returncode == 0, done.stdout + done.stderr
    (row,) = _rows(repo.path / ".docs-flatten" / "last-run")
    assert (row["load"]["added"], row["load"]["removed"]) == (14, 14)


def test_a_message_of_several_lines_stays_on_its_row_of_the_table(tmp_path, make_repo):
    repo = make_repo("site")
    repo.commit({"docs-flatten.yaml": 'sources:\n  - root: "./no\\nsuch | folder"\n'})
    done = _refresh(repo.path)
    assert done.returncode == 1
    table = (repo.path / ".docs-flatten" / "last-run" / "summary.md").read_text().splitlines()
    assert len(table) == 3 and table[2].startswith("| ") and table[2].endswith(" |"), table
    assert "FAILED: root-missing" in table[2] and "no such \\| folder" in table[2]
    assert table[2].count(" | ") == 8  # nine cells: the | in the path is escaped


def test_the_recipe_fails_when_it_cannot_write_its_table(tmp_path, make_repo):
    """A run whose loads succeeded but whose summary table could not be made (no python3 on the
    runner, a summary line it cannot read) does not pass as green with an empty table."""
    repo = make_repo("tableless")
    repo.commit({"docs/a.md": "# A\n\nalpha\n", "docs-flatten.yaml": "sources:\n  - root: .\n"})
    done = _refresh(repo.path, DOCS_FLATTEN_STORE="ci-index", PYTHON="false")
    assert done.returncode == 1, done.stderr
    assert "summary table" in done.stderr
    assert _rows(repo.path / "ci-index" / "last-run")[0]["ok"] is True  # the summaries are kept
