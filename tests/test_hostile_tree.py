"""Trees built to make the reader misbehave: links, races, odd names, hostile .gitignore files,
and the run's own output inside the root. Real files, real git repositories, the real CLI."""

from __future__ import annotations

import errno
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

import pathspec
import pytest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from flatten import FlattenOptions, RunReport, flatten_root
from flatten.content import Unreadable, decode, read_snapshot
from flatten.sources import Candidate, list_tree
from flatten.sources.base import escape_name
from flatten.sources.gitignore import compile_gitignore
from tests.conftest import indexed_tree, run_cli, write

SECRET = "root:x:0:0:SECRET-OUTSIDE-THE-ROOT"


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A directory next to the root holding what must never be read."""
    etc = tmp_path / "etc"
    write(etc, {"passwd.md": f"# passwd\n{SECRET}\n", "notes.md": f"# notes\n{SECRET}\n"})
    return etc


def reasons(report: RunReport) -> dict[str, str]:
    return {s.path: s.reason for s in report.skipped}


def contents(records) -> str:
    return "\n".join(r.content for r in records)


# --- 3. never outside the root ---------------------------------------------------------------


def test_tracked_file_under_a_directory_turned_symlink_is_skipped_not_read(make_repo, outside):
    repo = make_repo()
    repo.commit({"README.md": "# R\n", "d/passwd.md": "# tracked\nharmless\n"})
    shutil.rmtree(repo.path / "d")
    os.symlink(outside, repo.path / "d")  # git still lists d/passwd.md from its index
    report = RunReport()
    records = list(flatten_root(repo.path, report=report))
    assert report.listing == "git ls-files"
    assert SECRET not in contents(records)
    assert [r.source for r in records] == ["README.md"]
    assert reasons(report)["d/passwd.md"] == "symlink-parent"


def test_directory_linked_inside_the_root_is_not_read_through_either(make_repo):
    repo = make_repo()
    repo.commit({"README.md": "# R\n", "d/a.md": "# A\n", "real/a.md": "# Real\n"})
    shutil.rmtree(repo.path / "d")
    os.symlink(repo.path / "real", repo.path / "d")
    report = RunReport()
    assert [r.source for r in flatten_root(repo.path, report=report)] == ["README.md", "real/a.md"]
    assert reasons(report)["d/a.md"] == "symlink-parent"


def test_file_swapped_for_a_symlink_after_listing_is_not_followed(tmp_path, outside):
    root = tmp_path / "root"
    write(root, {"a.md": "# A\n", "b.md": "# B\n", "sub/c.md": "# C\n"})

    def swap(report: RunReport) -> None:
        if report.files_done == 1:  # a.md is read; b.md and sub/c.md are listed, not yet read
            (root / "b.md").unlink()
            os.symlink(outside / "passwd.md", root / "b.md")
            shutil.rmtree(root / "sub")
            os.symlink(outside, root / "sub")
            os.rename(outside / "notes.md", outside / "c.md")

    report = RunReport()
    records = list(flatten_root(root, FlattenOptions(workers=1), report, on_progress=swap))
    assert [r.source for r in records] == ["a.md"]
    assert SECRET not in contents(records)
    assert reasons(report) == {"b.md": "symlink", "sub/c.md": "symlink-parent"}


def test_what_is_opened_must_still_be_a_regular_file(tmp_path):
    write(tmp_path, {"a.md": "# A\n"})
    (entry,) = list_tree(tmp_path)[1]
    assert isinstance(entry, Candidate)
    (tmp_path / "a.md").unlink()
    os.mkfifo(tmp_path / "a.md")
    with pytest.raises(Unreadable) as err:
        read_snapshot(entry.root, entry.inner, 1024)
    assert err.value.reason == "not-a-file"


def test_symlink_inside_the_root_is_read_as_its_target_with_the_targets_rules(tmp_path):
    write(tmp_path, {"guide.md": "# Guide\n", ".env": "TOKEN=hunter2\n"})
    os.symlink("guide.md", tmp_path / "alias.md")
    os.symlink(".env", tmp_path / "env.md")  # a docs name for a secret file
    report = RunReport()
    records = list(flatten_root(tmp_path, report=report))
    assert [r.source for r in records] == ["alias.md", "guide.md"]
    assert reasons(report)["env.md"] == "secret-file"


@pytest.mark.parametrize("in_git", [False, True])
def test_symlink_loop_is_reported_as_a_loop(make_repo, tmp_path, in_git):
    root = make_repo().path if in_git else tmp_path / "plain"
    write(root, {"a.md": "# A\n"})
    os.symlink("loop2.md", root / "loop1.md")
    os.symlink("loop1.md", root / "loop2.md")
    os.symlink("self.md", root / "self.md")
    os.symlink("nowhere.md", root / "broken.md")
    report = RunReport()
    list(flatten_root(root, report=report))
    got = reasons(report)
    assert got["loop1.md"] == got["loop2.md"] == got["self.md"] == "symlink-loop"
    assert got["broken.md"] == "missing"


# --- 8. names that are not UTF-8 -------------------------------------------------------------


def _bytes_name(root: Path, name: bytes, text: str) -> None:
    with open(os.path.join(os.fsencode(root), name), "w", encoding="utf-8") as f:
        f.write(text)


@pytest.mark.parametrize("in_git", [False, True])
def test_non_utf8_file_name_is_kept_escaped_end_to_end(make_repo, tmp_path, in_git):
    root = make_repo().path if in_git else tmp_path / "plain"
    write(root, {"good.md": "# Good\n", "back\\slash.md": "# Back\n"})
    _bytes_name(root, b"bad\xff.md", "# Bad\nlatin-1 name\n")
    _bytes_name(root, b"caf\xc3\xa9.md", "# Cafe\nvalid UTF-8 name\n")
    out, report_path = tmp_path / "out.jsonl", tmp_path / "report.json"
    result = run_cli("flatten", "--root", root, "-o", out, "--report", report_path)
    assert result.code == 0, result.stderr
    records = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [r["source"] for r in records] == [
        "back\\\\slash.md",  # a literal backslash is doubled: the escape stays lossless
        "bad\\xff.md",  # the byte 0xff, as the four characters \xff
        "café.md",
        "good.md",
    ]
    assert records[1]["id"] == "bad\\xff.md#1" and "latin-1 name" in records[1]["content"]
    report = json.loads(report_path.read_text(encoding="utf-8"))
    assert report["ok"] is True and report["files"]["kept"] == 4


@given(st.lists(st.binary(min_size=1, max_size=12), min_size=2, max_size=6, unique=True))
def test_name_escape_is_lossless(names):
    escaped = [escape_name(os.fsdecode(n)) for n in names]
    assert len(set(escaped)) == len(names)
    for name, shown in zip(names, escaped, strict=True):
        shown.encode("utf-8")  # always writable
        assert _unescape(shown) == name


def _unescape(shown: str) -> bytes:
    out, raw, i = bytearray(), shown.encode("utf-8"), 0
    while i < len(raw):
        if raw[i : i + 2] == b"\\\\":
            out += b"\\"
            i += 2
        elif raw[i : i + 2] == b"\\x":
            out.append(int(raw[i + 2 : i + 4], 16))
            i += 4
        else:
            out.append(raw[i])
            i += 1
    return bytes(out)


def test_a_run_that_fails_midway_never_reports_ok(tmp_path):
    root = tmp_path / "t"
    write(
        root, {f"doc{i:03}.md": f"# Doc {i}\n" + "words and more words\n" * 400 for i in range(60)}
    )
    report_path = tmp_path / "r.json"
    # stdout is a pipe nobody reads past the first line: the writer blocks on a full pipe,
    # then SIGTERM ends the run (the CLI turns SIGTERM into the same clean-up as Ctrl-C).
    proc = subprocess.Popen(
        [sys.executable, "-m", "flatten", "flatten", "--root", root, "--report", report_path],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline()
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 143, stderr  # 128 + SIGTERM
    report = json.loads(report_path.read_text())
    assert report["ok"] is False and report["error"]["reason"] == "interrupted"


# --- 15. hostile .gitignore outside git ------------------------------------------------------

HOSTILE = "*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b"


def test_backtracking_gitignore_pattern_cannot_stall_the_walk(tmp_path):
    root = tmp_path / "t"
    name = "a" * 40 + ".md"
    write(root, {".gitignore": f"{HOSTILE}\n{'?' * 100_000}\n*.log\n", name: "# A\n",
                 "deep/" + name: "# B\n", "x.log": "log"})  # fmt: skip
    report_path = tmp_path / "r.json"
    result = run_cli("flatten", "--root", root, "--report", report_path, timeout=120)
    assert result.code == 0, result.stderr
    assert [r["source"] for r in result.records()] == ["a" * 40 + ".md", "deep/" + name]
    report = json.loads(report_path.read_text())
    refused = [s for s in report["skipped"] if s["reason"] == "gitignore-pattern-too-large"]
    # RE2 matches the backtracking pattern in linear time; only the one too large is given up,
    # and the report names it (by line).
    assert [(s["path"], s["detail"][:7], s["files"]) for s in refused] == [
        (".gitignore", "line 2:", 0)
    ]
    assert {s["path"]: s["reason"] for s in report["skipped"]}["x.log"] == "gitignored"


def test_invalid_gitignore_lines_are_reported_and_the_rest_applies(tmp_path):
    write(tmp_path, {".gitignore": "!\nbad\\\n*.log\n", "a.md": "# A\n", "x.log": "l"})
    report = RunReport()
    assert [r.source for r in flatten_root(tmp_path, report=report)] == ["a.md"]
    invalid = [(s.reason, s.detail[:7], s.files) for s in report.skipped if s.files == 0]
    assert invalid == [("gitignore-pattern-invalid", f"line {n}:", 0) for n in (1, 2)]


def test_gitignore_too_large_for_one_re2_set_still_matches_like_git(make_repo, tmp_path):
    lines = [f"dir{i}/*file{i}*.md" for i in range(3000)] + ["*.log", "!keep.log"]
    files = {".gitignore": "\n".join(lines) + "\n", "dir7/xfile7y.md": "x", "dir7/other.md": "o",
             "a.log": "l", "keep.log": "k"}  # fmt: skip
    repo = make_repo()
    write(repo.path, files)
    plain = tmp_path / "plain"
    write(plain, files)
    listed = {}
    for root in (repo.path, plain):
        method, entries = list_tree(root)
        listed[method] = [e.rel_path for e in entries if isinstance(e, Candidate)]
    assert listed["walk"] == listed["git ls-files"] == [".gitignore", "dir7/other.md", "keep.log"]


def test_gitignore_that_is_a_symlink_is_not_followed(tmp_path, outside):
    root = tmp_path / "t"
    write(root, {"a.md": "# A\n", "passwd.md": "# P\n"})
    (outside / "ignore").write_text("passwd.md\n")
    os.symlink(outside / "ignore", root / ".gitignore")
    report = RunReport()
    assert [r.source for r in flatten_root(root, report=report)] == ["a.md", "passwd.md"]
    assert reasons(report)[".gitignore"] == "gitignore-symlink"


def _descend(root: Path, visit) -> int:
    """Down a chain of directories named `d` by descriptors (its paths are too long to name),
    calling `visit(dir_fd, level)` at each; the descriptor of the deepest one is returned."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    level = 0
    while True:
        visit(fd, level)
        try:
            below = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
        except FileNotFoundError:
            return fd
        os.close(fd)
        fd, level = below, level + 1


def _make_file(name: str, dir_fd: int) -> None:
    os.close(os.open(name, os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=dir_fd))


def _remove_chain(root: Path) -> None:
    """rmtree recurses once a level (past Python's limit here): empty the chain bottom up."""

    def empty(fd: int, level: int) -> None:
        for name in os.listdir(fd):
            if name != "d":
                os.unlink(name, dir_fd=fd)

    fd = _descend(root, empty)
    while True:
        up = os.open("..", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
        os.close(fd)
        fd = up
        try:
            os.rmdir("d", dir_fd=fd)
        except FileNotFoundError:
            break
        if os.path.samestat(os.fstat(fd), os.stat(root)):
            break
    os.close(fd)


def test_a_tree_deeper_than_a_path_can_name_is_walked_with_a_few_calls_a_directory(
    tmp_path, monkeypatch
):
    """A chain of directories deeper than PATH_MAX: every file above the level whose path is
    too long is found, that level is reported unreadable, and the walk asks the file system a
    bounded number of times per directory (it opened every directory from the root down, for
    a .gitignore each, and resolved every file's directory from the root: quadratic)."""
    root = tmp_path / "t"
    root.mkdir()
    levels = os.pathconf(root, "PC_PATH_MAX") // 2 + 8  # "d/" per level: past PATH_MAX
    (root / ".gitignore").write_text("*.log\n")

    def build(fd: int, level: int) -> None:
        _make_file("f.md", fd)
        if level == 5:
            _make_file("x.log", fd)
        if level < levels:
            os.mkdir("d", dir_fd=fd)

    os.close(_descend(root, build))
    try:
        calls = Counter()
        for name in ("open", "lstat", "stat", "scandir"):
            real = getattr(os, name)

            def counted(*args, _real=real, _name=name, **kwargs):
                calls[_name] += 1
                if calls.total() > 4 * levels:  # the quadratic walk made millions: stop early
                    raise AssertionError(f"over {4 * levels} file-system calls: {calls}")
                return _real(*args, **kwargs)

            monkeypatch.setattr(os, name, counted)
        method, entries = list_tree(root)
    finally:
        monkeypatch.undo()
        _remove_chain(root)
    assert method == "walk"
    skipped = [(e.path, e.reason, e.detail) for e in entries if not isinstance(e, Candidate)]
    assert len(skipped) == 2
    gitignored, (deepest, why, detail) = sorted(skipped, key=lambda s: s[1])
    assert gitignored == ("d/" * 5 + "x.log", "gitignored", "")
    assert why == "unreadable" and detail == os.strerror(errno.ENAMETOOLONG)
    reached = deepest.count("d/")
    assert 0 < reached < levels
    found = [e.rel_path for e in entries if isinstance(e, Candidate)]
    assert found == sorted([".gitignore"] + ["d/" * i + "f.md" for i in range(reached)])
    assert sum(calls.values()) <= 4 * reached, calls


_globs = st.text(alphabet="ab*?/![]!.", min_size=1, max_size=8)
_paths = st.lists(st.text(alphabet="ab.", min_size=1, max_size=5), min_size=1, max_size=3)


@pytest.mark.filterwarnings("ignore::FutureWarning")  # Python's re on `[[`: not our concern
@settings(max_examples=300, deadline=None)
@given(st.lists(_globs, min_size=1, max_size=4), _paths, st.booleans())
@example(["!*", "?"], ["a"], True)  # where pathspec's backends disagree
def test_bounded_gitignore_matches_like_pathspec(lines, parts, is_dir):
    """RE2 changes how fast a pattern matches, never what it matches."""
    try:
        reference = pathspec.GitIgnoreSpec.from_lines(lines, backend="simple")
    except Exception:  # pathspec rejects the pattern: nothing to compare
        return
    ours, refused = compile_gitignore(lines)
    assert refused == []
    path = "/".join(parts) + ("/" if is_dir else "")
    ignored = ours.check_file(path).include
    if ignored != reference.check_file(path).include:
        # pathspec's two backends disagree on a few directory paths (`!*` then `?` on `a/`):
        # there git itself decides.
        assume(not {".", ".."} & set(parts))
        assert ignored == _git_ignores(lines, parts, is_dir)


def _git_ignores(lines: list[str], parts: list[str], is_dir: bool) -> bool:
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        subprocess.run(["git", "init", "-q", str(root)], check=True)
        (root / ".gitignore").write_text("\n".join(lines) + "\n")
        target = root.joinpath(*parts)
        (target if is_dir else target.parent).mkdir(parents=True, exist_ok=True)
        if not is_dir:
            target.write_text("x")
        asked = "/".join(parts) + ("/" if is_dir else "")
        done = subprocess.run(["git", "-C", str(root), "check-ignore", "-q", asked])
        return done.returncode == 0


# --- 18. own output, line endings ------------------------------------------------------------


@pytest.mark.parametrize("in_git", [False, True])
def test_output_and_report_inside_the_root_are_never_read(make_repo, tmp_path, in_git):
    root = make_repo().path if in_git else tmp_path / "plain"
    write(root, {"a.md": "# A\nalpha\n"})
    out, report_path = root / "out.jsonl", root / "report.json"
    args = ("flatten", "--root", root, "--kind", "auto", "-o", out, "--report", report_path)
    first = run_cli(*args)
    assert first.code == 0, first.stderr
    second = run_cli(*args)  # out.jsonl and report.json now exist inside the root
    assert second.code == 0, second.stderr
    sources = [json.loads(line)["source"] for line in out.read_text().splitlines()]
    assert sources == ["a.md"]
    report = json.loads(report_path.read_text())
    skipped = {s["path"]: s["reason"] for s in report["skipped"]}
    # The previous output and report; the writer's temporary file for this run's output is
    # not a file of the tree (and its name is random: listing it made reports differ run to run).
    assert skipped == {"out.jsonl": "output", "report.json": "output"}
    assert (
        run_cli(*args).code == 0
        and json.loads(report_path.read_text())["skipped"] == (report["skipped"])
    )


def test_writers_temporary_file_beside_the_output_is_never_listed(tmp_path):
    write(tmp_path, {"a.md": "# A\n", ".out.jsonl.k3j4h5.tmp": "x", ".other.tmp": "y",
                     "out.jsonl": "{}"})  # fmt: skip
    _, entries = list_tree(tmp_path, outputs=[str(tmp_path / "out.jsonl")])
    got = {getattr(e, "path", None) or e.rel_path: getattr(e, "reason", "kept") for e in entries}
    assert got == {".other.tmp": "kept", "a.md": "kept", "out.jsonl": "output"}


@pytest.mark.parametrize("in_git", [False, True])
def test_a_file_named_as_a_temporary_output_is_reported_skipped(make_repo, tmp_path, in_git):
    # Another run's bytes in flight, one a killed run left, or a user's file of that shape:
    # never read as input, and never dropped without a word either.
    root = make_repo().path if in_git else tmp_path / "plain"
    left = "docs/.notes.docs-flatten-12-abcdefgh.tmp"
    write(root, {"a.md": "# A\nalpha\n", left: "# Notes\nbeta\n"})
    if in_git:
        subprocess.run(["git", "-C", str(root), "add", "-f", "."], check=True)
    report_path = tmp_path / "report.json"
    done = run_cli("flatten", "--root", root, "--kind", "auto", "-q", "--report", report_path)
    assert done.code == 0, done.stderr
    assert [record["source"] for record in done.records()] == ["a.md"]
    report = json.loads(report_path.read_text())
    assert {s["path"]: s["reason"] for s in report["skipped"]} == {left: "temporary-output"}
    assert report["files"]["seen"] == 2


def test_lone_cr_line_endings_are_lines():
    assert decode(b"# T\rone\r\r## Two\r\ntwo\r").text == "# T\none\n\n## Two\ntwo\n"


def test_old_mac_file_is_sliced_by_its_headings_with_true_lines(tmp_path):
    (tmp_path / "mac.md").write_bytes(b"# Title\rintro\r\r## Usage\rrun it\r")
    records = list(flatten_root(tmp_path))
    assert [(r.title, r.start_line, r.end_line) for r in records] == [
        ("Title", 1, 2),
        ("Usage", 4, 5),
    ]


@pytest.mark.parametrize("name", ["de\nploy.md", "tab\there.md", "cr\rname.md"])
def test_a_token_and_source_printed_for_a_name_with_a_line_break_work_when_given_back(
    tmp_path, name
):
    # Output writes the break as `\n` (one line per hit); show and get must take that back.
    store = indexed_tree(tmp_path, {f"docs/{name}": "# Deploy\n\nRoll out the zebra.\n"}, "t")
    found = run_cli("search", "zebra", "--store", store)
    assert found.code == 0, found.stderr
    label = found.stdout.splitlines()[0].removeprefix("1. ").split("  ")[0]  # `source (slice 1)`
    assert "\n" not in label and "\r" not in label and "\t" not in label
    shown = run_cli("show", label, "--store", store)
    assert shown.code == 0 and "zebra" in shown.stdout, (label, shown.stderr)
    for asked in (label, label.rsplit(" (slice ", 1)[0]):  # the slice's document, the source
        page = run_cli("get", asked, "--store", store)
        assert page.code == 0 and "zebra" in page.stdout, page.stderr
