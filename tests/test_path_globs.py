"""--include/--exclude globs: `**/` matches zero or more directories, as git's wildmatch does;
`*` still crosses `/` (documented: `docs/*` takes everything below docs/)."""

from __future__ import annotations

import fnmatch
import os
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flatten.classify import include_exclude_reason, matches_any
from tests.conftest import GIT_ENV, git, run_cli, write


@pytest.mark.parametrize(
    ("path", "pattern"),
    [
        ("docs/index.rst", "docs/**/*.rst"),  # zero directories: fnmatch alone missed it
        ("docs/ref/api.rst", "docs/**/*.rst"),
        ("docs/a/b/c.rst", "docs/**/*.rst"),
        ("a/b", "a/**/b"),
        ("a/x/y/b", "a/**/**/b"),
        ("README.md", "**/README.md"),
        ("docs/a/b.md", "docs/*"),
        ("docs/a/b.md", "docs/**"),
    ],
)
def test_a_glob_takes(path, pattern):
    assert matches_any(path, (pattern,))


@pytest.mark.parametrize(
    ("path", "pattern"),
    [
        ("src/index.rst", "docs/**/*.rst"),
        ("docs/index.md", "docs/**/*.rst"),
        ("xdocs/index.rst", "docs/**/*.rst"),
        ("ab", "a/**/b"),
        ("src/a.py", "*.md"),
    ],
)
def test_a_glob_leaves(path, pattern):
    assert not matches_any(path, (pattern,))


def test_include_and_exclude_read_double_stars_alike():
    assert include_exclude_reason("docs/index.rst", ("docs/**/*.rst",), ()) is None
    assert include_exclude_reason("docs/index.rst", (), ("docs/**/*.rst",)) == "excluded"
    assert include_exclude_reason("/docs/intro/", ("docs/**/intro/",), ()) is None  # a URL path


def test_the_cli_includes_top_level_files_of_a_double_star_glob(tmp_path):
    write(tmp_path, {"docs/index.rst": "Index\n=====\n\nTop.\n",
                     "docs/ref/api.rst": "API\n===\n\nBelow.\n",
                     "README.md": "# Readme\n"})  # fmt: skip
    result = run_cli("flatten", "--root", tmp_path, "--include", "docs/**/*.rst")
    assert result.code == 0, result.stderr
    assert sorted({r["source"] for r in result.records()}) == ["docs/index.rst", "docs/ref/api.rst"]
    excluded = run_cli("flatten", "--root", tmp_path, "--exclude", "docs/**/*.rst")
    assert {r["source"] for r in excluded.records()} == {"README.md"}


# --- against git's own matching -------------------------------------------------------------
# Patterns whose wildcards are whole `**` segments and whose last segment names a file (or is
# `**`): there a glob and a .gitignore line mean the same (a single `*` is where the two differ
# by design, and a pattern naming a directory ignores what is inside it in git).
DIRS = ["a", "b"]
FILES = ["x.md", "y.md"]
_segment = st.sampled_from([*DIRS, "**"])
_patterns = st.builds(
    lambda head, last: "/".join([*head, last]),
    st.lists(_segment, min_size=1, max_size=4),
    st.sampled_from([*FILES, "**"]),
)
_paths = st.builds(
    lambda dirs, name: "/".join([*dirs, name]),
    st.lists(st.sampled_from(DIRS), max_size=4),
    st.sampled_from(FILES),
)


@pytest.fixture(scope="module")
def ignore_repo(tmp_path_factory) -> Path:
    repo = tmp_path_factory.mktemp("wildmatch")
    git(repo, "init", "-q")
    return repo


def git_ignores(repo: Path, pattern: str, paths: list[str]) -> set[str]:
    (repo / ".gitignore").write_text(pattern + "\n")
    out = subprocess.run(
        ["git", "check-ignore", "--no-index", "--stdin"],
        cwd=repo, input="\n".join(paths) + "\n", capture_output=True, text=True,
        env={**os.environ, **GIT_ENV},
    )  # fmt: skip
    assert out.returncode in (0, 1), out.stderr  # 1: none of them is ignored
    return set(out.stdout.split())


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(pattern=_patterns, paths=st.lists(_paths, min_size=1, max_size=12, unique=True))
def test_double_star_globs_match_as_git_matches_them(ignore_repo, pattern, paths):
    ours = {path for path in paths if matches_any(path, (pattern,))}
    assert ours == git_ignores(ignore_repo, pattern, paths)


# --- many `**/`: 2**n spellings hung (x/**/ 22 times: over a minute, memory growing) --------
def test_a_pattern_of_many_double_stars_matches_without_spelling_them_all():
    pattern = "x/**/" * 40 + "*.md"
    assert matches_any("x/" * 40 + "a.md", (pattern,))
    assert matches_any("x/" * 40 + "deep/er/a.md", (pattern,))
    assert not matches_any("x/" * 39 + "a.md", (pattern,))
    assert not matches_any("x/" * 40 + "a.rst", (pattern,))


_pieces_text = st.lists(st.sampled_from(["a", "b", "/", "*", "?", "**/", "[ab]", "."]), max_size=9)


@settings(max_examples=400, deadline=None)
@given(_pieces_text.map("".join), st.lists(st.sampled_from(["a", "b", "/", "."]), max_size=8))
def test_matching_piece_by_piece_answers_as_the_spellings_do(pattern, target):
    from flatten.classify import _pieces, _pieces_match, _spellings

    target = "".join(target)
    spelled = any(fnmatch.fnmatchcase(target, spelling) for spelling in _spellings(pattern))
    assert _pieces_match(target, _pieces(pattern)) == spelled
