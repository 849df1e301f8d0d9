"""Citations a reader can click: forge permalinks pinned to the commit, a crawled page's URL and
heading id, else the path and lines; rules with placeholders override; provenance in the index.

Real git repositories in temp dirs (a remote named like a forge needs no network), real sites
served on 127.0.0.1, real SQLite.
"""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path
from urllib.parse import quote

import pytest
from hypothesis import given
from hypothesis import strategies as st

from crawl.crawler import CrawlOptions
from flatten.pipeline import FlattenOptions, flatten_url
from flatten.record import source_bytes
from flatten.report import RunReport
from flatten.sources.base import escape_name
from index.agent import Knowledge
from index.citations import Origin, citation, cite, default_citation, parse_remote, parse_rules
from index.documents import show
from index.errors import ConfigError
from index.loader import load_records
from index.store import Store
from tests.conftest import Repo, git, run_cli, write
from tests.site_checks import SITES, served, served_html

SHA = "0123456789abcdef0123456789abcdef01234567"


def code_slice(remote: str, **fields: object) -> Origin:
    base: dict[str, object] = {"ordinal": 2, "start_line": 12, "end_line": 40, "repo_url": remote,
                               "commit": SHA, "repo_path": "src/app/main.py"}  # fmt: skip
    return Origin("app/main.py", **{**base, **fields})  # type: ignore[arg-type]


# -- forges ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("remote", "expected"),
    [
        ("https://github.com/o/r.git",
         f"https://github.com/o/r/blob/{SHA}/src/app/main.py#L12-L40"),
        ("https://gitlab.com/group/sub/r.git",
         f"https://gitlab.com/group/sub/r/-/blob/{SHA}/src/app/main.py#L12-40"),
        ("https://bitbucket.org/o/r.git",
         f"https://bitbucket.org/o/r/src/{SHA}/src/app/main.py#lines-12:40"),
        ("https://codeberg.org/o/r.git",
         f"https://codeberg.org/o/r/src/commit/{SHA}/src/app/main.py#L12-L40"),
        ("https://forgejo.example.org/o/r.git",
         f"https://forgejo.example.org/o/r/src/commit/{SHA}/src/app/main.py#L12-L40"),
        ("https://dev.azure.com/org/proj/_git/r",
         f"https://dev.azure.com/org/proj/_git/r?path=/src/app/main.py&version=GC{SHA}"
         "&line=12&lineEnd=41&lineStartColumn=1&lineEndColumn=1"),
    ],
)  # fmt: skip
def test_each_forge_gets_a_permalink_pinned_to_the_commit_in_its_own_form(remote, expected):
    cited = default_citation(code_slice(remote))
    assert (cited.text, cited.kind, cited.at) == (expected, "permalink", "lines")


@pytest.mark.parametrize(
    ("remote", "web"),
    [
        ("git@github.com:o/r.git", "https://github.com/o/r"),
        ("ssh://git@github.com/o/r.git", "https://github.com/o/r"),
        ("ssh://git@github.com:22/o/r.git", "https://github.com/o/r"),
        ("ssh://git@github.com:o/r.git", "https://github.com/o/r"),
        ("https://x-access-token:ghp_secret@github.com/o/r", "https://github.com/o/r"),
        ("git@gitlab.example.com:platform/docs.git", "https://gitlab.example.com/platform/docs"),
        ("git@bitbucket.org:o/r.git", "https://bitbucket.org/o/r"),
        ("git@codeberg.org:o/r.git", "https://codeberg.org/o/r"),
        ("https://org@dev.azure.com/org/proj/_git/r", "https://dev.azure.com/org/proj/_git/r"),
        ("git@ssh.dev.azure.com:v3/org/proj/r", "https://dev.azure.com/org/proj/_git/r"),
    ],
)
def test_ssh_scp_like_and_credentialed_remotes_map_to_the_https_web_address(remote, web):
    forge = parse_remote(remote)
    assert forge is not None and forge.web == web


@pytest.mark.parametrize(
    "remote",
    ["file:///srv/git/r", "/srv/git/r", "https://git.example.com/o/r.git",
     "git@git.example.com:o/r.git", "https://github.com/only-owner", "https://dev.azure.com/org"],
)  # fmt: skip
def test_a_remote_not_recognisably_on_a_forge_falls_back_to_the_path_and_lines(remote):
    assert parse_remote(remote) is None
    cited = default_citation(code_slice(remote))
    assert (cited.text, cited.kind) == ("app/main.py:12-40", "path")


@given(user=st.from_regex(r"[A-Za-z0-9_.-]{1,12}", fullmatch=True),
       token=st.from_regex(r"[A-Za-z0-9_]{8,40}", fullmatch=True))  # fmt: skip
def test_credentials_in_a_remote_never_reach_a_citation(user, token):
    cited = default_citation(code_slice(f"https://{user}:{token}@github.com/o/r.git")).text
    assert token not in cited.replace(SHA, "") and "@" not in cited


@pytest.mark.parametrize(
    ("remote", "expected"),
    [
        ("https://github.com/o/r", f"https://github.com/o/r/blob/{SHA}/docs/a.md?plain=1#L3-L9"),
        ("https://gitlab.com/o/r", f"https://gitlab.com/o/r/-/blob/{SHA}/docs/a.md?plain=1#L3-9"),
        ("https://codeberg.org/o/r",
         f"https://codeberg.org/o/r/src/commit/{SHA}/docs/a.md?display=source#L3-L9"),
    ],
)  # fmt: skip
def test_a_markdown_permalink_opens_the_source_view_so_its_lines_land(remote, expected):
    markdown = Origin("a.md", ordinal=2, anchor="set-up", start_line=3, end_line=9,
                      repo_url=remote, commit=SHA, repo_path="docs/a.md")  # fmt: skip
    assert citation([], markdown) == expected


def test_notebook_cells_link_to_the_file_never_to_line_fragments():
    cells = code_slice("https://github.com/o/r", repo_path="nb/demo.ipynb", line_unit="cell",
                       start_line=2, end_line=3)  # fmt: skip
    assert citation([], cells) == f"https://github.com/o/r/blob/{SHA}/nb/demo.ipynb"
    local = Origin("demo.ipynb", start_line=2, end_line=3, line_unit="cell")
    assert citation([], local) == "demo.ipynb (cells 2-3)"


def test_notebook_ranges_say_cells_and_never_fill_a_rules_line_placeholders():
    local = default_citation(Origin("demo.ipynb", start_line=2, end_line=3, line_unit="cell"))
    assert (local.text, local.at) == ("demo.ipynb (cells 2-3)", "cells")
    rules = parse_rules([{"pattern": ".", "replace": "https://x/{path}#L{startLine}-L{endLine}"
                                                     "?cells={startCell}-{endCell}"}])  # fmt: skip
    cells = Origin("demo.ipynb", start_line=2, end_line=3, line_unit="cell")
    assert citation(rules, cells) == "https://x/demo.ipynb#L-L?cells=2-3"
    lines = Origin("a.md", start_line=2, end_line=3)
    assert citation(rules, lines) == "https://x/a.md#L2-L3?cells=-"


def test_a_dirty_file_is_cited_by_its_path_and_lines_not_by_a_commit_that_lacks_it():
    cited = default_citation(code_slice("https://github.com/o/r", dirty=True))
    assert (cited.text, cited.kind) == ("app/main.py:12-40", "path")


def test_a_crawled_page_cites_its_url_and_past_the_first_slice_its_heading_id():
    url = "https://docs.example.com/guide/debugging/"
    first = Origin(url, ordinal=1, anchor="debugging", url=url)
    later = Origin(url, ordinal=2, anchor="printing-the-configuration", url=url)
    plain = Origin(url, ordinal=3, url=url)
    assert citation([], first) == url
    assert citation([], later) == url + "#printing-the-configuration"
    assert citation([], plain) == url


@given(source=st.text(alphabet=st.characters(exclude_characters="#"), min_size=1, max_size=40),
       ordinal=st.integers(1, 10_000), start=st.none() | st.integers(1, 10_000))  # fmt: skip
def test_a_default_citation_is_never_the_index_token(source, ordinal, start):
    origin = Origin(source, ordinal=ordinal, start_line=start, end_line=start)
    assert citation([], origin) != f"{source}#{ordinal}"


# -- rules -------------------------------------------------------------------------------------


def test_rules_fill_the_commit_ref_path_line_and_anchor_placeholders():
    rules = parse_rules([
        {"pattern": r"\.py$", "replace": "https://git.example.com/o/r/src/{commit}/{path}"
                                         "#L{startLine}-L{endLine}"},
        {"pattern": r"^(?P<page>.+)\.md$",
         "replace": "https://docs.example.com/{ref}/${page}/#{anchor}"},
    ])  # fmt: skip
    assert citation(rules, code_slice("https://github.com/o/r")) == (
        f"https://git.example.com/o/r/src/{SHA}/src/app/main.py#L12-L40"
    )
    page = Origin("guide/a b.md", ref="v2", anchor="set-up", start_line=1)
    assert citation(rules, page) == "https://docs.example.com/v2/guide/a%20b/#set-up"
    # The old call form still maps a bare source.
    assert cite(rules, "x.md", anchor="y") == "https://docs.example.com//x/#y"


@pytest.mark.parametrize(
    ("replace", "message"),
    [
        ("https://x/{comit}/{path}", "citations[1].replace: {comit} is not a placeholder"),
        ("https://x/{page}", "citations[1].replace: {page} is not a placeholder"),
        ("https://x/$nope", "citations[1].replace: $nope is neither"),
    ],
)
def test_an_unknown_placeholder_is_refused_at_load_with_the_rules_position(replace, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        parse_rules([{"pattern": "a", "replace": "b"},
                     {"pattern": "(?P<page>.+)", "replace": replace}])  # fmt: skip


# -- records from git sources ------------------------------------------------------------------

DOCS = {
    "docs/guide.md": "# Guide\n\nIntro text.\n\n## Set up\n\nRun the installer with zebra.\n",
    "docs/notes.md": "# Notes\n\nNothing changed here.\n",
    "CONTRIBUTING.md": "# Contributing\n\nAt the top.\n",
}


@pytest.fixture
def forge_repo(make_repo) -> Repo:
    repo = make_repo("repo")
    repo.commit(DOCS)
    git(repo.path, "remote", "add", "origin", "git@github.com:o/r.git")
    return repo


def flattened(*args: str | Path) -> list[dict]:
    result = run_cli("flatten", *args, "-q")
    assert result.code == 0, result.stderr
    return result.records()


def test_a_subfolder_root_keeps_sources_relative_and_adds_the_repository_path(forge_repo):
    records = flattened("--root", forge_repo.path / "docs")
    assert {r["source"] for r in records} == {"guide.md", "notes.md"}
    assert {r["source"]: r["repoPath"] for r in records} == {
        "guide.md": "docs/guide.md", "notes.md": "docs/notes.md"}  # fmt: skip
    assert not any("dirty" in r for r in records)
    top = flattened("--root", forge_repo.path)
    assert {r["source"] for r in top} == {r["repoPath"] for r in top}


def test_modified_staged_and_untracked_files_are_flagged_dirty(forge_repo):
    write(forge_repo.path, {"docs/guide.md": DOCS["docs/guide.md"] + "\nMore.\n",
                            "docs/new.md": "# New\n\nNot committed.\n",
                            "docs/staged.md": "# Staged\n\nAdded only.\n"})  # fmt: skip
    git(forge_repo.path, "add", "docs/staged.md")
    records = flattened("--root", forge_repo.path / "docs")
    dirty = {r["source"]: r.get("dirty", False) for r in records}
    assert dirty == {"guide.md": True, "new.md": True, "staged.md": True, "notes.md": False}
    # The field sits in the one key order, after the provenance.
    keys = list(next(r for r in records if r["source"] == "guide.md"))
    assert keys.index("ref") < keys.index("repoPath") < keys.index("dirty")


def test_the_run_summary_says_whether_the_work_tree_was_dirty(forge_repo, tmp_path):
    report = tmp_path / "report.json"

    def summary_dirty() -> object:
        result = run_cli("flatten", "--root", forge_repo.path / "docs", "-q", "--report", report)
        assert result.code == 0, result.stderr
        return json.loads(report.read_text())["dirty"]

    assert summary_dirty() is False
    write(forge_repo.path, {"docs/new.md": "# New\n\nNot committed.\n"})
    assert summary_dirty() is True
    write(tmp_path / "plain", {"a.md": "# A\n"})  # not in git: nothing to say
    result = run_cli("flatten", "--root", tmp_path / "plain", "-q", "--report", report)
    assert result.code == 0 and json.loads(report.read_text())["dirty"] is None


def test_a_repo_subdir_gives_repository_paths_too(forge_repo):
    records = flattened("--repo", forge_repo.url, "--subdir", "docs")
    assert {(r["source"], r["repoPath"]) for r in records} == {
        ("docs/guide.md", "docs/guide.md"), ("docs/notes.md", "docs/notes.md")}  # fmt: skip


def ingest(root: Path, store: Path, corpus: str = "docs") -> None:
    result = run_cli("ingest", "--root", root, "--store", store, "--corpus", corpus, "-q")
    assert result.code == 0, result.stderr


def search_json(store: Path, query: str, *extra: str | Path) -> list[dict]:
    result = run_cli("search", query, "--store", store, "--json", *extra)
    assert result.code == 0, result.stderr
    return json.loads(result.stdout)


@pytest.mark.parametrize(
    ("remote", "link"),
    [
        ("git@github.com:o/r.git", "https://github.com/o/r/blob/{c}/docs/guide.md?plain=1#L5-L7"),
        ("https://gitlab.com/o/r.git",
         "https://gitlab.com/o/r/-/blob/{c}/docs/guide.md?plain=1#L5-7"),
        ("git@bitbucket.org:o/r.git", "https://bitbucket.org/o/r/src/{c}/docs/guide.md#lines-5:7"),
        ("https://codeberg.org/o/r.git",
         "https://codeberg.org/o/r/src/commit/{c}/docs/guide.md?display=source#L5-L7"),
        ("https://dev.azure.com/org/p/_git/r", "https://dev.azure.com/org/p/_git/r"
         "?path=/docs/guide.md&version=GC{c}&line=5&lineEnd=8&lineStartColumn=1&lineEndColumn=1"),
    ],
)  # fmt: skip
def test_search_cites_a_permalink_to_the_repository_path_of_a_subfolder_root(
    make_repo, tmp_path, remote, link
):
    repo = make_repo("repo")
    commit = repo.commit(DOCS)
    git(repo.path, "remote", "add", "origin", remote)
    ingest(repo.path / "docs", tmp_path / "store")
    hit = search_json(tmp_path / "store", "zebra installer")[0]
    assert hit["source"] == "guide.md" and hit["citation"] == link.format(c=commit)


def test_a_dirty_file_is_cited_by_path_and_lines_in_search_and_mcp(forge_repo, tmp_path):
    commit = git(forge_repo.path, "rev-parse", "HEAD")
    write(forge_repo.path, {"docs/notes.md": "# Notes\n\nNow it mentions zebra.\n"})
    ingest(forge_repo.path / "docs", tmp_path / "store")
    hits = {h["source"]: h["citation"] for h in search_json(tmp_path / "store", "zebra")}
    permalink = f"https://github.com/o/r/blob/{commit}/docs/guide.md?plain=1#L5-L7"
    assert hits == {"notes.md": "notes.md:1-3", "guide.md": permalink}
    knowledge = Knowledge(tmp_path / "store")
    try:
        answered = knowledge.search("zebra", 5)["results"]
    finally:
        knowledge.close()
    assert {h["citation"] for h in answered} == set(hits.values())
    assert all(h["citation"] != h["token"] for h in answered)


def test_files_the_commit_lacks_are_cited_locally_in_search(forge_repo, tmp_path):
    """A folder git ignores (a built site/), one inside an ignored folder, and an untracked
    file: none is in the commit, so a permalink would be a 404; they are cited by path and
    lines, in the JSON and the text output, while the committed file keeps its permalink."""
    commit = forge_repo.commit({".gitignore": "site/\nbuild/\n"}, "ignore built output")
    write(forge_repo.path, {"site/built.md": "# Built\n\nA zebra page.\n",
                            "build/html/out.md": "# Out\n\nZebra output.\n",
                            "docs/draft.md": "# Draft\n\nZebra draft.\n"})  # fmt: skip
    store = tmp_path / "store"
    for name, root in (("site", "site"), ("out", "build/html"), ("docs", "docs")):
        ingest(forge_repo.path / root, store, corpus=name)
    hits = {h["source"]: h["citation"] for h in search_json(store, "zebra")}
    assert hits == {
        "built.md": "built.md:1-3",
        "out.md": "out.md:1-3",
        "draft.md": "draft.md:1-3",
        "guide.md": f"https://github.com/o/r/blob/{commit}/docs/guide.md?plain=1#L5-L7",
    }
    text = run_cli("search", "zebra", "--store", store)
    assert text.code == 0, text.stderr
    assert text.stdout.count("https://github.com/") == 1 and "built.md:1-3" in text.stdout


def test_a_folder_outside_git_cites_path_and_lines_and_never_null(tmp_path):
    write(tmp_path / "plain", DOCS)
    ingest(tmp_path / "plain", tmp_path / "store")
    hit = search_json(tmp_path / "store", "zebra installer")[0]
    assert hit["citation"] == "docs/guide.md:5-7"


def test_search_and_show_json_say_whether_a_range_counts_lines_or_cells(tmp_path):
    cells = [{"cell_type": "markdown", "source": "# Zebra notebook"},
             {"cell_type": "code", "source": "zebra_count = 3", "outputs": []}]  # fmt: skip
    write(tmp_path / "plain", {
        "nb.ipynb": json.dumps({"cells": cells, "metadata": {}, "nbformat": 4}),
        "guide.md": "# Guide\n\nThe zebra guide.\n",
    })  # fmt: skip
    ingest(tmp_path / "plain", tmp_path / "store")
    hits = {h["source"]: h for h in search_json(tmp_path / "store", "zebra")}
    assert hits["nb.ipynb"]["lineUnit"] == "cell"
    assert hits["nb.ipynb"]["citation"] == "nb.ipynb (cells 1-2)"
    assert hits["guide.md"]["lineUnit"] == "line"
    shown = run_cli("show", "nb.ipynb#1", "--store", tmp_path / "store", "--json")
    assert json.loads(shown.stdout)["lineUnit"] == "cell"
    text = run_cli("search", "zebra", "--store", tmp_path / "store")
    assert "cells 1-2" in text.stdout and "L1-2" not in text.stdout


def test_config_rules_with_placeholders_override_the_default(forge_repo, tmp_path):
    commit = git(forge_repo.path, "rev-parse", "HEAD")
    ingest(forge_repo.path / "docs", tmp_path / "store")
    config = tmp_path / "docs-flatten.yaml"
    rule = "https://git.example.com/o/r/src/{commit}/{path}#L{startLine}-L{endLine}"
    config.write_text(f"citations:\n  - pattern: '\\.md$'\n    replace: '{rule}'\n")
    hit = search_json(tmp_path / "store", "zebra installer", "--config", config)[0]
    assert hit["citation"] == f"https://git.example.com/o/r/src/{commit}/docs/guide.md#L5-L7"
    config.write_text("citations:\n  - pattern: '.'\n    replace: 'https://x/{sha}'\n")
    result = run_cli("search", "zebra", "--store", tmp_path / "store", "--config", config)
    assert result.code == 2 and "citations[0].replace: {sha} is not a placeholder" in result.stderr


# -- stores built before repo paths ------------------------------------------------------------


def as_before_repo_paths(store_dir: Path) -> None:
    """Turn a store back into what the previous version built: no m003 columns, no record of it."""
    db = sqlite3.connect(store_dir / "index.sqlite")
    with db:
        db.execute("DELETE FROM schema_migrations WHERE name = 'm003_repo_paths'")
        db.execute("ALTER TABLE documents DROP COLUMN repo_path")
        db.execute("ALTER TABLE documents DROP COLUMN dirty")
    db.close()


def test_a_store_built_before_repo_paths_is_read_as_it_is_then_upgraded_by_a_load(
    forge_repo, tmp_path
):
    commit = git(forge_repo.path, "rev-parse", "HEAD")
    store = tmp_path / "store"
    ingest(forge_repo.path, store)  # from the top: source and repository path agree
    as_before_repo_paths(store)
    hit = search_json(store, "zebra installer")[0]
    assert hit["citation"] == f"https://github.com/o/r/blob/{commit}/docs/guide.md?plain=1#L5-L7"
    shown = run_cli("show", "docs/guide.md#2", "--store", store)
    assert shown.code == 0 and "cite: https://github.com/o/r/blob/" in shown.stdout
    ingest(forge_repo.path / "docs", store, corpus="sub")  # a writer upgrades it
    db = sqlite3.connect(store / "index.sqlite")
    assert ("m003_repo_paths",) in db.execute("SELECT name FROM schema_migrations").fetchall()
    assert db.execute("SELECT repo_path FROM documents WHERE source = 'guide.md'").fetchone() == (
        "docs/guide.md",
    )
    db.close()


# -- crawled pages -----------------------------------------------------------------------------


def test_crawled_pages_cite_their_url_and_the_pages_real_heading_ids(tmp_path):
    site = next(s for s in SITES if s.name == "mkdocs-material")
    with served(site) as base:
        records = list(flatten_url(base + site.seed, FlattenOptions(), RunReport(),
                                   crawl_options=CrawlOptions(max_depth=20)))  # fmt: skip
        with Store.open(tmp_path / "store") as store:
            load_records(store, records, "site")
            anchored = 0
            for record in records:
                cited = show(store, record.id).citation  # type: ignore[union-attr]
                if record.ordinal == 1 or not record.anchor:
                    assert cited == record.url
                    continue
                anchored += 1
                assert cited == f"{record.url}#{record.anchor}"
                assert f'id="{record.anchor}"' in served_html(site, record.url)
    assert anchored > 5


_name_bytes = st.binary(min_size=1, max_size=12).filter(lambda b: b"/" not in b and b"\0" not in b)


@given(_name_bytes)
def test_a_file_name_that_is_not_utf8_is_linked_by_its_own_bytes(raw):
    # A source shows a byte that is not UTF-8 as `\xNN` (and a backslash doubled); the link
    # must percent-encode the byte itself, or the forge answers 404.
    source = "docs/" + escape_name(raw.decode("utf-8", "surrogateescape")) + ".py"
    assert source_bytes(source) == b"docs/" + raw + b".py"
    forge = parse_remote("https://github.com/o/r.git")
    assert forge is not None
    link = forge.permalink(SHA, source, (1, 3))
    assert (
        link
        == f"https://github.com/o/r/blob/{SHA}/{quote(b'docs/' + raw + b'.py', safe='/')}#L1-L3"
    )


def test_a_latin1_name_is_cited_with_its_byte_percent_encoded():
    forge = parse_remote("https://github.com/o/r.git")
    assert forge is not None
    assert forge.permalink(SHA, "caf\\xe9.md", (1, 3)).endswith(f"/{SHA}/caf%E9.md?plain=1#L1-L3")
