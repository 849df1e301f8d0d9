"""`--repo owner/repo`, `github:owner/repo` and `gitlab:group/repo` expand to https clone URLs;
a local path of the same spelling wins. No test reaches GitHub: git rewrites the expanded URL to
a local repository (url.<base>.insteadOf), and GIT_ALLOW_PROTOCOL=file refuses https outright."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from flatten.sources.shorthand import expand_repo, shorthand_url
from tests.conftest import git, run_cli, write


@pytest.mark.parametrize(
    ("text", "url"),
    [
        ("encode/httpx", "https://github.com/encode/httpx.git"),
        ("encode/httpx.git", "https://github.com/encode/httpx.git"),
        ("github:encode/httpx", "https://github.com/encode/httpx.git"),
        ("gitlab:group/repo", "https://gitlab.com/group/repo.git"),
        ("gitlab:group/sub/repo", "https://gitlab.com/group/sub/repo.git"),
        ("owner/my.repo_name-2/", "https://github.com/owner/my.repo_name-2.git"),
    ],
)
def test_shorthands_expand_to_https_clone_urls(text, url):
    assert shorthand_url(text) == url


@pytest.mark.parametrize(
    "text",
    ["https://github.com/a/b", "git@github.com:a/b.git", "file:///tmp/x", "./docs", "../a/b",
     "/abs/path", "~/x", "a/b/c", "x", "owner/.", "-owner/repo", "github:a/b/c", "gitlab:../x",
     "gitlab:repo", ""],
)  # fmt: skip
def test_urls_paths_and_other_text_are_not_shorthands(text):
    assert shorthand_url(text) is None


@given(st.text(max_size=40))
def test_an_expansion_is_always_an_https_clone_url_of_a_known_host(text):
    url = shorthand_url(text)
    if url is not None:
        assert url.startswith(("https://github.com/", "https://gitlab.com/"))
        assert url.endswith(".git") and " " not in url and "/../" not in url


def test_an_existing_local_path_is_never_expanded(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert expand_repo("owner/repo") == "https://github.com/owner/repo.git"
    (tmp_path / "owner" / "repo").mkdir(parents=True)
    assert expand_repo("owner/repo") is None


def _repo(path):
    write(path, {"README.md": "# Hello\n\nFrom a local repository.\n"})
    git(path, "init", "-q")
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "init")


def test_a_local_path_that_looks_like_a_shorthand_is_cloned_as_a_path(tmp_path):
    _repo(tmp_path / "owner" / "repo")
    result = run_cli("flatten", "--repo", "owner/repo", cwd=tmp_path,
                     env={"GIT_ALLOW_PROTOCOL": "file"})  # fmt: skip
    assert result.code == 0, result.stderr
    assert "source expanded" not in result.stderr
    assert result.records()[0]["repoUrl"] == (tmp_path / "owner" / "repo").as_uri()


def test_the_expansion_is_said_in_the_summary_and_the_report(tmp_path):
    mirror = tmp_path / "mirror"
    _repo(mirror / "owner" / "repo.git")
    work = tmp_path / "work"
    work.mkdir()
    env = {
        # git rewrites the expanded URL to the local mirror before connecting anywhere
        "GIT_CONFIG_COUNT": "1",
        "GIT_CONFIG_KEY_0": f"url.{mirror.as_uri()}/.insteadOf",
        "GIT_CONFIG_VALUE_0": "https://github.com/",
        "GIT_ALLOW_PROTOCOL": "file",  # and https is refused, should the rewrite ever not apply
    }
    report = tmp_path / "report.json"
    result = run_cli("flatten", "--repo", "owner/repo", "--report", report, cwd=work, env=env)
    assert result.code == 0, result.stderr
    said = "source expanded: owner/repo -> https://github.com/owner/repo.git"
    assert said in result.stderr
    assert json.loads(report.read_text())["sourceExpanded"] == {
        "from": "owner/repo", "to": "https://github.com/owner/repo.git"}  # fmt: skip
    assert result.records()[0]["repoUrl"] == "https://github.com/owner/repo.git"
