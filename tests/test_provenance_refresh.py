"""A refresh after a new commit rewrites only the documents that commit changed: a fingerprint is
the content's, not the provenance's. The rest keep their rows and text, and their commit, ref and
citations move to the new commit in place. Stores whose fingerprints an older version wrote (a
digest of the raw lines, commit and all) keep working and convert as they load."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path

import pytest

from flatten.hashing import sha256_hex
from flatten.record import Provenance, Record, encode_line
from index.documents import show, sources
from index.loader import load_files
from index.store import Store
from tests.conftest import Repo, git, run_cli

DOCS = {
    "guide.md": "# Guide\n\nRun the installer with zebra.\n",
    "notes.md": "# Notes\n\nNothing changed here.\n",
    "faq.md": "# FAQ\n\nAsk about otters.\n\n## More\n\nStill otters.\n",
}


@pytest.fixture
def repo(make_repo) -> Repo:
    made = make_repo("repo")
    made.commit(DOCS)
    git(made.path, "remote", "add", "origin", "git@github.com:o/r.git")
    return made


def ingest(repo: Repo, store: Path) -> dict:
    result = run_cli("ingest", "--root", repo.path, "--store", store, "--corpus", "docs", "--json",
                     "-q")  # fmt: skip
    assert result.code == 0, result.stderr
    return json.loads(result.stdout)["load"]


def rows(store: Path) -> dict[str, tuple]:
    """source -> (document id, its chunk ids, commit, fingerprint)."""
    db = sqlite3.connect(store / "index.sqlite")
    try:
        return {
            source: (doc_id, tuple(c for (c,) in db.execute(
                "SELECT id FROM chunks WHERE document_id = ? ORDER BY id", (doc_id,))),
                commit, fingerprint)
            for doc_id, source, commit, fingerprint in db.execute(
                "SELECT id, source, commit_sha, fingerprint FROM documents")
        }  # fmt: skip
    finally:
        db.close()


def citations(store: Path) -> dict[str, str | None]:
    """Each document's first slice's citation, as `show` gives it."""
    with Store.open(store, readonly=True) as opened:
        return {s.source: show(opened, f"{s.source}#1").citation for s in sources(opened)[0]}


def test_a_new_commit_updates_only_the_changed_document_and_moves_every_citation(repo, tmp_path):
    store = tmp_path / "store"
    first = git(repo.path, "rev-parse", "HEAD")
    assert ingest(repo, store)["added"] == 3
    before = rows(store)
    second = repo.commit({"guide.md": DOCS["guide.md"] + "\nAnd with a yak.\n"})
    load = ingest(repo, store)
    assert (load["added"], load["updated"], load["unchanged"], load["removed"]) == (0, 1, 2, 0)
    after = rows(store)
    for source in ("notes.md", "faq.md"):  # same rows, same slices: not rewritten
        assert after[source][:2] == before[source][:2]
    assert after["guide.md"][0] != before["guide.md"][0]
    assert {row[2] for row in before.values()} == {first}
    assert {row[2] for row in after.values()} == {second}
    cited = citations(store)
    assert cited["notes.md"] == f"https://github.com/o/r/blob/{second}/notes.md?plain=1#L1-L3"
    assert all(second in link for link in cited.values() if link)
    db = sqlite3.connect(store / "index.sqlite")
    assert db.execute("SELECT commit_sha FROM corpora").fetchone() == (second,)
    db.close()
    hit = run_cli("search", "otters", "--store", store, "--json")
    assert hit.code == 0 and second in json.loads(hit.stdout)[0]["citation"]


def test_a_commit_that_changes_nothing_flattened_leaves_every_document_unchanged(repo, tmp_path):
    store = tmp_path / "store"
    ingest(repo, store)
    before = rows(store)
    third = repo.commit({"image.bin": b"\x00\x01binary, not flattened"})
    load = ingest(repo, store)
    assert (load["added"], load["updated"], load["unchanged"]) == (0, 0, 3)
    after = rows(store)
    assert {s: r[:2] for s, r in after.items()} == {s: r[:2] for s, r in before.items()}
    assert {row[2] for row in after.values()} == {third}


def as_older_fingerprints(store: Path, flattened: bytes) -> None:
    """What the previous version stored: the digest of each document's raw lines."""
    digests: dict[str, hashlib._Hash] = {}
    for line in flattened.splitlines():
        source = json.loads(line)["source"]
        digests.setdefault(source, hashlib.sha256()).update(line + b"\n")
    db = sqlite3.connect(store / "index.sqlite")
    with db:
        db.executemany("UPDATE documents SET fingerprint = ? WHERE source = ?",
                       [(d.hexdigest(), s) for s, d in digests.items()])  # fmt: skip
    db.close()


def test_a_store_with_older_fingerprints_reloads_as_unchanged_then_refreshes_by_content(
    repo, tmp_path
):
    store = tmp_path / "store"
    ingest(repo, store)
    flattened = run_cli("flatten", "--root", repo.path, "-q", "-o", tmp_path / "out.jsonl")
    assert flattened.code == 0, flattened.stderr
    as_older_fingerprints(store, (tmp_path / "out.jsonl").read_bytes())
    before = rows(store)
    load = ingest(repo, store)  # the same commit: nothing to rewrite, fingerprints converted
    assert (load["added"], load["updated"], load["unchanged"]) == (0, 0, 3)
    converted = rows(store)
    assert {s: r[:2] for s, r in converted.items()} == {s: r[:2] for s, r in before.items()}
    assert all(r[3] != before[s][3] for s, r in converted.items())
    repo.commit({"faq.md": DOCS["faq.md"] + "\nA last otter.\n"})
    load = ingest(repo, store)
    assert (load["updated"], load["unchanged"]) == (1, 2)


@pytest.mark.parametrize("layout", ["native", "langchain", "llamaindex", "haystack"])
def test_a_record_in_any_layout_that_only_moved_commit_is_unchanged(tmp_path, layout):
    def lines(commit: str) -> bytes:
        return b"".join(
            encode_line(Record(source=f"{n}.md", ordinal=1, title=n, content=f"about {n}",
                               kind="markdown", hash=sha256_hex(f"about {n}"), doc_hash=None,
                               provenance=Provenance("https://h/r.git", commit, "main")), layout)
            for n in ("a", "b")
        )  # fmt: skip

    first, second = tmp_path / "1.jsonl", tmp_path / "2.jsonl"
    first.write_bytes(lines("1" * 40))
    second.write_bytes(lines("2" * 40).replace(b"about b", b"about c"))
    with Store.open(tmp_path / "store") as store:
        load_files(store, [first], "docs")
        report = load_files(store, [second], "docs")
        assert (report.updated, report.unchanged) == (1, 1)
        commits = store.db.execute("SELECT DISTINCT commit_sha FROM documents").fetchall()
        assert commits == [("2" * 40,)]


def test_an_unchanged_line_in_spaced_json_keeps_its_commit(tmp_path):
    """A line with our head but written by json.dumps (spaces, no chunkSize) is digested as it
    is; reloaded unchanged, its stored commit stays what it says."""
    line = {"id": "a.md#1", "source": "a.md", "title": "A", "content": "otters", "ordinal": 1,
            "commit": "c" * 40, "ref": "main"}  # fmt: skip
    path = tmp_path / "a.jsonl"
    path.write_text(json.dumps(line) + "\n")
    with Store.open(tmp_path / "store") as store:
        load_files(store, [path], "docs")
        report = load_files(store, [path], "docs")
        assert report.unchanged == 1
        row = store.db.execute("SELECT commit_sha, ref FROM documents").fetchone()
        assert row == ("c" * 40, "main")
