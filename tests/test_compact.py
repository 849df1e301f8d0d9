"""Compaction of the SQLite store after a load or a drop that freed much of it (`Store.compact`):
the real CLI on real SQLite files; sizes read from the file and from SQLite's own counts."""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from index.store import Store
from tests.conftest import jsonl, record, run_cli

DOCS = 300
KEPT = 12  # 96% of the documents removed, as in the report that found the store at 64 MB
QUERIES = ("alpha", "topic7 notes", "setup guide", "word5", "configuring the widget")


def _records(documents: range) -> list[dict]:
    return [record(f"docs/d{n:04}.md", o, f"# Topic{n % 17} notes\n\nSection {o} of document {n}: "
                   f"setup guide for the widget word{n} alpha beta gamma {'lorem ipsum ' * 40}",
                   title=f"Document {n}") for n in documents for o in (1, 2, 3)]  # fmt: skip


def _index(store: Path, path: Path, *args: str) -> dict:
    done = run_cli("index", path, "--corpus", "c", "--store", store, "--max-delete", "100%",
                   "--json", *args)  # fmt: skip
    assert done.code == 0, done.stderr
    return json.loads(done.stdout)


def _pages(store: Path) -> tuple[int, int]:
    db = sqlite3.connect(store / "index.sqlite")
    try:
        return tuple(
            db.execute(f"PRAGMA {p}").fetchone()[0] for p in ("page_count", "freelist_count")
        )
    finally:
        db.close()


def _answers(store: Path) -> list[list[tuple[str, float]]]:
    found = []
    for query in QUERIES:
        done = run_cli("search", query, "--store", store, "--json", "-k", "20")
        assert done.code == 0, done.stderr
        found.append([(r["token"], r["score"]) for r in json.loads(done.stdout)])
    return found


@pytest.fixture
def full(tmp_path) -> tuple[Path, Path]:
    """A store of DOCS documents, and the snapshot that keeps KEPT of them."""
    store = tmp_path / "store"
    _index(store, jsonl(tmp_path / "all.jsonl", _records(range(DOCS))))
    return store, jsonl(tmp_path / "few.jsonl", _records(range(KEPT)))


def test_a_snapshot_removing_most_documents_shrinks_the_file_and_answers_as_a_fresh_store(
    tmp_path, full
):
    store, few = full
    before = (store / "index.sqlite").stat().st_size
    summary = _index(store, few)
    after = (store / "index.sqlite").stat().st_size
    assert summary["load"]["removed"] == DOCS - KEPT
    compacted = summary["load"]["compacted"]
    assert compacted == {"bytesBefore": before, "bytesAfter": after}
    assert after < before / 4
    pages, free = _pages(store)
    assert free == 0 and pages * 4096 == after
    # What remains answers as a store that never held the rest (BM25's statistics included).
    fresh = tmp_path / "fresh"
    _index(fresh, few)
    assert _answers(store) == _answers(fresh)
    assert all(_answers(store))
    health = json.loads(run_cli("doctor", "--store", store, "--json").stdout)["store"]
    assert health["findings"] == [] and health["text"]["checked"] == [
        "chunks_fts", "chunks_exact", "documents_fts"]  # fmt: skip


def test_the_text_summary_says_what_compaction_did(tmp_path, full):
    store, few = full
    done = run_cli("index", few, "--corpus", "c", "--store", store, "--max-delete", "100%")
    assert done.code == 0, done.stderr
    assert "compacted: " in done.stdout + done.stderr and " MiB -> " in done.stdout + done.stderr


def test_a_small_delete_leaves_the_file_as_it_is(tmp_path, full):
    store, _ = full
    size, pages = (store / "index.sqlite").stat().st_size, _pages(store)[0]
    summary = _index(store, jsonl(tmp_path / "most.jsonl", _records(range(DOCS - 10))))
    assert summary["load"]["removed"] == 10 and summary["load"]["compacted"] is None
    assert (store / "index.sqlite").stat().st_size == size and _pages(store)[0] == pages
    assert _pages(store)[1] > 0  # the rows' pages are free, kept for the next load


def test_a_drop_of_the_larger_corpus_compacts_and_answers_as_without_compaction(
    tmp_path, full, monkeypatch
):
    store, few = full

    def dropped(store: Path) -> dict:
        done = run_cli("index", few, "--corpus", "other", "--store", store, "-q")
        assert done.code == 0, done.stderr
        done = run_cli("drop", "--corpus", "c", "--store", store, "--json")
        assert done.code == 0, done.stderr
        return json.loads(done.stdout)["load"]

    compacted = dropped(store)["compacted"]
    assert compacted["bytesAfter"] < compacted["bytesBefore"] / 4
    assert compacted["bytesAfter"] == (store / "index.sqlite").stat().st_size
    # The same store and the same drop, never compacted (run_cli runs in this process).
    monkeypatch.setattr(Store, "compact", lambda self: None)
    plain = tmp_path / "plain"
    _index(plain, jsonl(tmp_path / "all.jsonl", _records(range(DOCS))))
    assert dropped(plain)["compacted"] is None
    assert (plain / "index.sqlite").stat().st_size > compacted["bytesBefore"] / 2
    assert _answers(store) == _answers(plain)
    # And as a store that only ever held what remains: a term's commonness and BM25's N count
    # the chunks there are, not the ids ever given (a drop once left every term looking rare).
    fresh = tmp_path / "fresh"
    assert run_cli("index", few, "--corpus", "other", "--store", fresh, "-q").code == 0
    assert _answers(store) == _answers(fresh)


def test_doctor_names_a_sparse_store_and_a_reload_of_the_same_input_compacts_it(tmp_path, full):
    store, _ = full
    # As a version before compaction left a store: the rows deleted, the file as it was.
    with Store.open(store) as opened, opened.write() as db:
        from index.loader import delete_document

        for doc_id, corpus_id in db.execute(
            "SELECT id, corpus_id FROM documents WHERE source >= 'docs/d0100.md'"
        ).fetchall():
            delete_document(db, doc_id, corpus_id)
    found = run_cli("doctor", "--store", store, "--json")
    assert found.code == 0, found.stderr
    findings = json.loads(found.stdout)["store"]["findings"]
    assert [(f["reason"], f["level"]) for f in findings] == [("store-sparse", "warning")]
    assert "any load compacts it" in findings[0]["message"]
    assert f"--store {store}" in findings[0]["message"]
    summary = _index(store, jsonl(tmp_path / "kept.jsonl", _records(range(100))))
    assert summary["load"]["unchanged"] == 100 and summary["load"]["compacted"] is not None
    assert json.loads(run_cli("doctor", "--store", store, "--json").stdout)["store"][
        "findings"] == []  # fmt: skip


def test_a_reader_open_across_the_compaction_keeps_its_snapshot(tmp_path, full):
    store, few = full
    reader = sqlite3.connect(store / "index.sqlite", isolation_level=None)
    try:
        reader.execute("BEGIN")
        assert reader.execute("SELECT count(*) FROM documents").fetchone()[0] == DOCS
        summary = _index(store, few)  # not blocked by the reader
        assert summary["load"]["compacted"] is not None
        # The reader still reads the store it began with, whole.
        assert reader.execute("SELECT count(*) FROM documents").fetchone()[0] == DOCS
        hits = reader.execute(
            "SELECT count(*) FROM chunks_fts WHERE chunks_fts MATCH 'alpha'"
        ).fetchone()[0]
        assert hits == DOCS * 3
        reader.execute("COMMIT")
        assert reader.execute("SELECT count(*) FROM documents").fetchone()[0] == KEPT
    finally:
        reader.close()
    # Once no reader holds the old snapshot, the next checkpoint shrinks the file.
    Store.open(store).close()
    assert (store / "index.sqlite").stat().st_size == summary["load"]["compacted"]["bytesAfter"]


def _load_committed_and_locked(db_path: Path, kept: int) -> bool:
    """The load has committed (a reader sees the snapshot's documents) and a write is still
    under way: the compaction. Only the write lock's refusal counts as under way: the count
    itself may meet a busy store (a checkpoint), which says nothing of the load."""
    probe = sqlite3.connect(db_path, timeout=0, isolation_level=None)
    try:
        try:
            if probe.execute("SELECT count(*) FROM documents").fetchone()[0] != kept:
                return False
        except sqlite3.OperationalError:
            return False  # busy for a moment: look again
        try:
            probe.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            assert "locked" in str(exc) or "busy" in str(exc), exc
            return True
        probe.execute("ROLLBACK")
        return False
    finally:
        probe.close()


@pytest.mark.parametrize("signum, code", [(signal.SIGTERM, 143), (signal.SIGKILL, -9)])
def test_a_stop_during_compaction_leaves_the_loaded_store_whole(tmp_path, signum, code):
    store = tmp_path / "store"
    documents = 6000  # big enough that the compaction is seen under way
    _index(store, jsonl(tmp_path / "all.jsonl", _records(range(documents))))
    few = jsonl(tmp_path / "few.jsonl", _records(range(KEPT)))
    proc = subprocess.Popen(
        [sys.executable, "-m", "flatten", "index", str(few), "--corpus", "c", "--store",
         str(store), "--max-delete", "100%"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while not _load_committed_and_locked(store / "index.sqlite", KEPT):
            if proc.poll() is not None:
                pytest.skip("the compaction ended before it was seen; nothing to check")
            assert time.monotonic() < deadline, "the compaction never began"
        proc.send_signal(signum)
        _, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    if proc.returncode == 0:
        pytest.skip("the compaction finished before the signal; nothing to check")
    assert proc.returncode == code, stderr
    if signum == signal.SIGTERM:
        assert "interrupted" in stderr and "Traceback" not in stderr
    # The load is committed and the store whole, compacted or not; any later load compacts it.
    health = json.loads(run_cli("doctor", "--store", store, "--json").stdout)["store"]
    assert health["documents"] == KEPT, (health, stderr)
    assert {f["level"] for f in health["findings"]} <= {"warning"}
    assert {f["reason"] for f in health["findings"]} <= {"store-sparse"}
    assert _answers(store) == _answers_fresh(tmp_path, few)
    summary = _index(store, few)
    assert summary["load"]["unchanged"] == KEPT
    assert _pages(store)[1] == 0


def _answers_fresh(tmp_path: Path, few: Path) -> list[list[tuple[str, float]]]:
    fresh = tmp_path / "fresh"
    _index(fresh, few)
    return _answers(fresh)
