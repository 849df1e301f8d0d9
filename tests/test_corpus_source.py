"""A corpus remembers its source: indexing another source into it is refused (exit 2,
`corpus-source-mismatch`) unless `--replace`; the same source, however spelled, loads; a store
of the previous version upgrades, its corpora adopting the source of their next load."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from flatten import FlattenOptions, corpus_source, flatten_root
from index import CorpusSourceMismatch
from index.documents import stats
from index.loader import load_records
from index.snapshot import TooManyRemovals
from index.store import Store
from tests.conftest import assert_clean_failure, git, jsonl, record, run_cli, write

HANDBOOK = {"docs/install.md": "# Install\n\nRun the installer.\n", "README.md": "# Handbook\n"}
OTHER = {"guide.md": "# Guide\n\nAnother project's guide.\n"}


def corpus_sources(store_url: str, corpus: str) -> tuple[str | None, list[str]]:
    """The corpus's recorded source and its documents."""
    with Store.open(store_url, readonly=True) as store:
        row = store.db.execute("SELECT source FROM corpora WHERE name = ?", (corpus,)).fetchone()
        docs = store.db.execute(
            "SELECT d.source FROM documents d JOIN corpora k ON k.id = d.corpus_id "
            "WHERE k.name = ? ORDER BY 1",
            (corpus,),
        ).fetchall()
    return row[0], [d for (d,) in docs]


# --- the normal form ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "spelling",
    [
        "https://github.com/encode/httpx",
        "https://github.com/encode/httpx.git",
        "https://github.com/encode/httpx/",
        "HTTPS://GitHub.com/encode/httpx.git",
        "https://x-access-token:ghp_secret@github.com/encode/httpx.git",
        "https://github.com:443/encode/httpx",
        "ssh://git@github.com/encode/httpx.git",
        "git@github.com:encode/httpx.git",
        "encode/httpx",
        "github:encode/httpx",
    ],
)
def test_every_spelling_of_a_repository_is_one_source(spelling, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # `encode/httpx` is a shorthand only where no such folder is
    assert corpus_source("repo", spelling) == "repo github.com/encode/httpx"


_NAME = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-_", min_size=1, max_size=12)


@given(host=st.sampled_from(["github.com", "gitlab.example.org", "git.example.com"]),
       owner=_NAME, name=_NAME)  # fmt: skip
def test_a_repository_is_one_source_over_https_ssh_and_scp(host, owner, name):
    path = f"{owner}/{name}"
    spellings = [f"https://{host}/{path}", f"https://{host.upper()}/{path}.git/",
                 f"ssh://git@{host}/{path}.git", f"git@{host}:{path}.git"]  # fmt: skip
    assert {corpus_source("repo", s) for s in spellings} == {f"repo {host}/{path}"}


def test_a_local_repository_and_a_folder_are_their_absolute_paths(tmp_path, monkeypatch):
    (tmp_path / "handbook").mkdir()
    monkeypatch.chdir(tmp_path)
    absolute = str((tmp_path / "handbook").resolve())
    assert corpus_source("root", "handbook") == f"root {absolute}"
    assert corpus_source("root", "./handbook/") == f"root {absolute}"
    assert corpus_source("repo", "handbook") == f"repo {absolute}"
    assert corpus_source("repo", (tmp_path / "handbook").as_uri()) == f"repo {absolute}"


def test_a_site_is_its_host_and_path():
    assert corpus_source("url", "https://Docs.Example.com/guide/?q=1#top") == (
        "url docs.example.com/guide"
    )
    assert corpus_source("url", "http://docs.example.com:8080/guide") == (
        "url docs.example.com:8080/guide"
    )


_SECRET = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789_-.~", min_size=6, max_size=30)


@given(user=_SECRET, password=_SECRET, kind=st.sampled_from(["repo", "url"]))
def test_a_source_never_holds_a_credential(user, password, kind):
    shown = corpus_source(kind, f"https://{user}:{password}@git.example.com/team/project.git")
    assert password not in shown.replace("git.example.com/team/project", "")
    assert shown.endswith("git.example.com/team/project" + ("" if kind == "repo" else ".git"))


# --- the CLI, on both stores --------------------------------------------------------------


def test_another_folder_into_a_corpus_is_refused_until_replace(store_url, tmp_path):
    write(tmp_path / "handbook", HANDBOOK)
    write(tmp_path / "other", OTHER)
    first = run_cli("ingest", "--root", tmp_path / "handbook", "--corpus", "docs",
                    "--store", store_url)  # fmt: skip
    assert first.code == 0, first.stderr
    before = corpus_sources(store_url, "docs")
    assert before == (f"root {(tmp_path / 'handbook').resolve()}", ["README.md", "docs/install.md"])

    for command in (("ingest", "--root"), ("index",)):
        refused = run_cli(*command, tmp_path / "other", "--corpus", "docs", "--store", store_url)
        assert_clean_failure(refused, 2, "--replace", "--corpus NAME",
                             str((tmp_path / "handbook").resolve()))  # fmt: skip
        said = run_cli(*command, tmp_path / "other", "--corpus", "docs", "--json",
                       "--store", store_url)  # fmt: skip
        assert said.code == 2 and json.loads(said.stdout)["error"]["reason"] == (
            "corpus-source-mismatch"
        )
        assert corpus_sources(store_url, "docs") == before

    again = run_cli("index", tmp_path / "handbook", "--corpus", "docs", "--store", store_url)
    assert again.code == 0 and "2 unchanged" in again.stderr, again.stderr

    replaced = run_cli("ingest", "--root", tmp_path / "other", "--corpus", "docs", "--replace",
                       "--store", store_url)  # fmt: skip
    assert replaced.code == 0, replaced.stderr
    assert corpus_sources(store_url, "docs") == (f"root {(tmp_path / 'other').resolve()}",
                                                 ["guide.md"])  # fmt: skip


def test_a_checkout_moved_to_another_runner_path_is_the_same_source(make_repo, tmp_path):
    """CI runners check one project out under different paths: its folder is named by the
    origin and its path there, so the corpus is refreshed (and its documents), not refused."""
    origin = make_repo("handbook")
    origin.commit(HANDBOOK)
    store = tmp_path / "store"
    runners = [tmp_path / "runner-1" / "work", tmp_path / "runner-2" / "builds" / "hb"]
    for checkout in runners:
        checkout.parent.mkdir(parents=True)
        git(checkout.parent, "clone", "-q", origin.url, checkout.name)
    write(runners[1] / "docs", {"new.md": "# New\n\nText.\n"})
    for checkout in runners:
        done = run_cli("index", checkout / "docs", "--corpus", "docs", "--store", store)
        assert done.code == 0, done.stderr
    assert corpus_sources(str(store), "docs") == (
        f"repo {origin.path.resolve()}",
        ["install.md", "new.md"],
    )


def test_a_checkout_is_the_repository_its_origin_names(make_repo, tmp_path):
    """`--root` of any folder of a checkout and `--repo` of its origin are one source."""
    origin = make_repo("handbook")
    origin.commit(HANDBOOK)
    git(tmp_path, "clone", "-q", origin.url, "checkout")
    assert corpus_source("root", str(tmp_path / "checkout" / "docs")) == (
        corpus_source("repo", origin.url)
    )
    assert corpus_source("root", str(tmp_path / "checkout")) == corpus_source("repo", origin.url)


def test_manifests_of_a_folder_load_in_a_job_without_its_checkout(make_repo, tmp_path):
    """`index --manifests` in a job that did not check the repository out cannot name a `root:`
    source's repository: the corpus (recorded from the checkout) loads, not refused."""
    origin = make_repo("handbook")
    origin.commit(HANDBOOK)
    git(tmp_path, "clone", "-q", origin.url, "checkout")
    (tmp_path / "checkout" / "sources.yaml").write_text("- root: docs\n  corpus: hb\n")
    store = tmp_path / "store"
    first = run_cli("ingest", "--sources", "sources.yaml", "--store", store,
                    cwd=tmp_path / "checkout")  # fmt: skip
    assert first.code == 0, first.stderr
    (tmp_path / "checkout" / "docs" / "more.md").write_text("# More\n\nText.\n")
    shard = run_cli("ingest", "--sources", "sources.yaml", "--out", tmp_path / "shard",
                    cwd=tmp_path / "checkout")  # fmt: skip
    assert shard.code == 0, shard.stderr
    (tmp_path / "elsewhere").mkdir()
    loaded = run_cli("index", "--manifests", tmp_path / "shard", "--store", store,
                     cwd=tmp_path / "elsewhere")  # fmt: skip
    assert loaded.code == 0, loaded.stderr
    assert corpus_sources(str(store), "hb") == (
        f"repo {origin.path.resolve()}",
        ["install.md", "more.md"],
    )


def test_two_projects_docs_folders_are_two_sources(make_repo, tmp_path):
    """`docs/` of one project and `docs/` of another share a name and a default corpus: the
    second is refused, not loaded over the first (plain folders and checkouts alike)."""
    store = tmp_path / "store"
    write(tmp_path / "alpha" / "docs", HANDBOOK)
    write(tmp_path / "beta" / "docs", OTHER)
    first = run_cli("ingest", "--root", tmp_path / "alpha" / "docs", "--store", store)
    assert first.code == 0, first.stderr
    refused = run_cli("ingest", "--root", tmp_path / "beta" / "docs", "--store", store)
    assert_clean_failure(refused, 2, "holds root", "--replace")
    for name in ("gamma", "delta"):
        origin = make_repo(name)
        origin.commit({"docs/" + name + ".md": f"# {name}\n\nText.\n"})
    loaded = run_cli("index", tmp_path / "gamma" / "docs", "--corpus", "c", "--store", store)
    assert loaded.code == 0, loaded.stderr
    refused = run_cli("index", tmp_path / "delta" / "docs", "--corpus", "c", "--store", store)
    assert_clean_failure(refused, 2, "--replace")
    assert corpus_sources(str(store), "docs")[1] == ["README.md", "docs/install.md"]
    assert corpus_sources(str(store), "c")[1] == ["gamma.md"]


def test_a_folder_outside_any_checkout_is_named_without_git(make_repo, tmp_path, git_spy):
    """`ingest --root` and `index DIR` of a plain folder start no git process (naming its source
    asked git for an origin remote in any folder); in a checkout, git names its origin."""
    write(tmp_path / "plain", HANDBOOK)
    store = tmp_path / "store"
    for args in (["ingest", "--root", tmp_path / "plain"], ["index", tmp_path / "plain"]):
        git_spy.clear()
        done = run_cli(*args, "--corpus", "docs", "--store", store, env=git_spy.env)
        assert done.code == 0, done.stderr
        assert git_spy.calls() == []
    assert corpus_sources(str(store), "docs")[0] == f"root {(tmp_path / 'plain').resolve()}"
    origin = make_repo("handbook")
    origin.commit(HANDBOOK)
    git(tmp_path, "clone", "-q", origin.url, "checkout")
    git_spy.clear()
    done = run_cli("ingest", "--root", tmp_path / "checkout", "--corpus", "hb", "--store", store,
                   env=git_spy.env)  # fmt: skip
    assert done.code == 0, done.stderr
    assert any(" get-url origin" in call for call in git_spy.calls())
    assert corpus_sources(str(store), "hb")[0] == f"repo {origin.path.resolve()}"


def test_a_repository_reindexed_by_another_spelling_is_the_same_source(make_repo, tmp_path):
    repo = make_repo("handbook")
    repo.commit(HANDBOOK)
    store = tmp_path / "store"
    for url in (repo.url, repo.url + "/", str(repo.path)):
        done = run_cli("ingest", "--repo", url, "--corpus", "hb", "--store", store)
        assert done.code == 0, done.stderr
    assert corpus_sources(str(store), "hb")[0] == f"repo {repo.path.resolve()}"
    write(tmp_path / "other", OTHER)
    refused = run_cli("ingest", "--root", tmp_path / "other", "--corpus", "hb", "--store", store)
    assert_clean_failure(refused, 2, "holds repo", "--replace")


def test_jsonl_names_no_source_and_loads_into_any_corpus(tmp_path):
    write(tmp_path / "handbook", HANDBOOK)
    store = tmp_path / "store"
    assert run_cli("index", tmp_path / "handbook", "--corpus", "docs", "--store", store).code == 0
    records = jsonl(tmp_path / "r.jsonl", [record("notes.md", 1, "Some notes.")])
    loaded = run_cli("index", records, "--corpus", "docs", "--store", store)
    assert loaded.code == 0, loaded.stderr
    assert corpus_sources(str(store), "docs") == (
        f"root {(tmp_path / 'handbook').resolve()}",
        ["notes.md"],
    )


# --- the library --------------------------------------------------------------------------


def test_the_library_takes_source_and_replace(store, tmp_path):
    write(tmp_path / "handbook", HANDBOOK)
    write(tmp_path / "other", OTHER)
    handbook = corpus_source("root", str(tmp_path / "handbook"))
    other = corpus_source("root", str(tmp_path / "other"))
    load_records(store, flatten_root(tmp_path / "handbook", FlattenOptions()), "docs",
                 source=handbook)  # fmt: skip
    with pytest.raises(CorpusSourceMismatch) as refused:
        load_records(store, flatten_root(tmp_path / "other", FlattenOptions()), "docs",
                     source=other)  # fmt: skip
    assert refused.value.reason == "corpus-source-mismatch" and refused.value.exit_code == 2
    report = load_records(store, flatten_root(tmp_path / "other", FlattenOptions()), "docs",
                          source=other, replace=True)  # fmt: skip
    assert (report.added, report.removed) == (1, 2)  # the two documents it replaced, removed
    assert [c["name"] for c in stats(store)["corpora"]] == ["docs"]
    assert store.db.execute("SELECT source FROM corpora").fetchall() == [(other,)]
    assert store.db.execute("SELECT source FROM documents").fetchall() == [("guide.md",)]


def test_replace_of_the_same_source_is_a_snapshot_limited_as_any(store, tmp_path):
    """`--replace` left on a CI command lifts the removal limit only when it replaces another
    source: the same source cut short still stops at the limit, writing nothing."""
    pages = {f"docs/page{i}.md": f"# Page {i}\n\nText {i}.\n" for i in range(30)}
    write(tmp_path / "handbook", pages)
    handbook = corpus_source("root", str(tmp_path / "handbook"))
    load_records(store, flatten_root(tmp_path / "handbook", FlattenOptions()), "docs",
                 source=handbook, replace=True)  # fmt: skip
    for i in range(25):
        (tmp_path / "handbook" / f"docs/page{i}.md").unlink()
    with pytest.raises(TooManyRemovals):
        load_records(store, flatten_root(tmp_path / "handbook", FlattenOptions()), "docs",
                     source=handbook, replace=True)  # fmt: skip
    assert stats(store)["corpora"][0]["documents"] == 30


# --- a store of the previous version --------------------------------------------------------


def _as_before_m006(store: Path) -> None:
    db = sqlite3.connect(store / "index.sqlite")
    db.executescript(
        "ALTER TABLE corpora DROP COLUMN source; "
        "DELETE FROM schema_migrations WHERE name = 'm006_corpus_source';"
    )
    db.close()


def test_a_store_without_sources_is_read_then_upgraded_and_adopts_the_next_source(tmp_path):
    write(tmp_path / "handbook", HANDBOOK)
    write(tmp_path / "other", OTHER)
    store = tmp_path / "store"
    assert run_cli("ingest", "--root", tmp_path / "handbook", "--corpus", "docs",
                   "--store", store).code == 0  # fmt: skip
    _as_before_m006(store)
    read = run_cli("stats", "--store", store)  # a reader reads it as it is
    assert read.code == 0 and "corpus docs: 2 documents" in read.stdout, read.stderr
    # The old corpus has no source: the next load, of whatever source, adopts it.
    adopted = run_cli("ingest", "--root", tmp_path / "other", "--corpus", "docs",
                      "--max-delete", "100%", "--store", store)  # fmt: skip
    assert adopted.code == 0, adopted.stderr
    assert corpus_sources(str(store), "docs") == (f"root {(tmp_path / 'other').resolve()}",
                                                  ["guide.md"])  # fmt: skip
    refused = run_cli("ingest", "--root", tmp_path / "handbook", "--corpus", "docs",
                      "--store", store)  # fmt: skip
    assert_clean_failure(refused, 2, "holds root", "--replace")


def test_a_many_source_run_refuses_a_corpus_of_another_source_and_loads_the_rest(tmp_path):
    write(tmp_path / "handbook", HANDBOOK)
    write(tmp_path / "other", OTHER)
    store, sources = tmp_path / "store", tmp_path / "sources.yaml"
    sources.write_text(f"- root: {tmp_path / 'handbook'}\n  corpus: docs\n")
    assert run_cli("ingest", "--sources", sources, "--store", store).code == 0
    sources.write_text(f"- root: {tmp_path / 'other'}\n  corpus: docs\n"
                       f"- root: {tmp_path / 'other'}\n  corpus: other\n")  # fmt: skip
    mixed = run_cli("ingest", "--sources", sources, "--store", store, "--json")
    assert mixed.code == 2, mixed.stderr
    reasons = {s["corpus"]: (s["error"] or {}).get("reason") for s in map(json.loads,
               mixed.stdout.splitlines())}  # fmt: skip
    assert reasons == {"docs": "corpus-source-mismatch", "other": None}
    # Refused before its flatten (or clone): a CI run spends nothing on a source it cannot load.
    assert [s["files"] is None for s in map(json.loads, mixed.stdout.splitlines())] == [True, False]
    assert corpus_sources(str(store), "docs")[1] == ["README.md", "docs/install.md"]
    replaced = run_cli("ingest", "--sources", sources, "--replace", "--store", store)
    assert replaced.code == 0, replaced.stderr
    assert corpus_sources(str(store), "docs")[1] == ["guide.md"]


def test_an_older_store_on_either_backend_upgrades_and_adopts(store_url, tmp_path):
    write(tmp_path / "handbook", HANDBOOK)
    assert (
        run_cli("index", tmp_path / "handbook", "--corpus", "docs", "--store", store_url).code == 0
    )
    with Store.open(store_url) as store, store.write():  # as the previous version left it
        store.db.execute("ALTER TABLE corpora DROP COLUMN source")
        store.db.execute("DELETE FROM schema_migrations WHERE name = 'm006_corpus_source'")
    with Store.open(store_url) as store:  # a writer applies m006: the corpus has no source yet
        assert store.db.execute("SELECT name, source FROM corpora").fetchall() == [("docs", None)]
    again = run_cli("index", tmp_path / "handbook", "--corpus", "docs", "--store", store_url)
    assert again.code == 0 and "2 unchanged" in again.stderr, again.stderr
    assert corpus_sources(store_url, "docs")[0] == f"root {(tmp_path / 'handbook').resolve()}"
