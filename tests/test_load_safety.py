"""A load never removes what it could not read, on SQLite and on PostgreSQL: an input with no
records is refused (`empty-input`, nothing written), a reindex with a malformed or truncated
line keeps the documents it could not read (as any snapshot does), a document one of whose
lines could not be read keeps its stored version whole, and a load that fails part-way leaves
the previous index as it was."""

from __future__ import annotations

import json
import shlex
from pathlib import Path
from typing import Any

import pytest

from index.loader import EmptyInput, load_files
from index.store import Store
from tests.conftest import assert_clean_failure, file_size_limit, jsonl, record, run_cli

CORPUS = [record(f"guide/{i}.md", part, f"document {i} part {part} about otters")
          for i in range(6) for part in (1, 2)]  # fmt: skip


def documents(store_url: str) -> dict[str, tuple[Any, ...]]:
    """source -> (chunks, fingerprint, indexed_at, the chunks' hashes): what a load may touch."""
    with Store.open(store_url, readonly=True) as store:
        rows = store.db.execute(
            "SELECT d.source, d.chunks, d.fingerprint, d.indexed_at, "
            "(SELECT group_concat(c.hash, ',') FROM chunks c WHERE c.document_id = d.id) "
            "FROM documents d ORDER BY d.source"
        ).fetchall()
    return {row[0]: tuple(row[1:]) for row in rows}


def corpora(store_url: str) -> list[tuple[str, str]]:
    with Store.open(store_url, readonly=True) as store:
        return store.db.execute("SELECT name, indexed_at FROM corpora ORDER BY name").fetchall()


def loaded(store_url: str, tmp_path: Path, records: list[dict] = CORPUS) -> Path:
    path = jsonl(tmp_path / "whole.jsonl", records)
    result = run_cli("index", path, "--corpus", "c", "--store", store_url, "-q")
    assert result.code == 0, result.stderr
    return path


# 1. An input that yields no record never removes a corpus.

NO_RECORDS = {
    "empty": b"",
    "blank lines": b"\n  \n\n",
    "all malformed": b'garbage\n{"no content": 1}\n',
    "truncated": json.dumps(CORPUS[0]).encode()[:40],
}


@pytest.mark.parametrize("flags", [[], ["--reindex"]], ids=["snapshot", "reindex"])
@pytest.mark.parametrize("name", sorted(NO_RECORDS))
def test_an_input_with_no_records_is_refused_and_the_corpus_is_untouched(
    store_url, tmp_path, name, flags
):
    loaded(store_url, tmp_path)
    before, listed = documents(store_url), corpora(store_url)
    empty = tmp_path / "in.jsonl"
    empty.write_bytes(NO_RECORDS[name])
    result = run_cli("index", empty, "--corpus", "c", "--store", store_url, "--json", *flags)
    assert_clean_failure(
        result, 1, "no records", f"docs-flatten drop --corpus c --store {shlex.quote(store_url)}"
    )
    assert json.loads(result.stdout)["error"]["reason"] == "empty-input"
    assert documents(store_url) == before and corpora(store_url) == listed


def test_an_input_with_no_records_makes_no_corpus_and_partial_is_a_no_op(store_url, tmp_path):
    empty = jsonl(tmp_path / "in.jsonl", [])
    with Store.open(store_url) as store:
        with pytest.raises(EmptyInput) as refused:
            load_files(store, [empty], "new")
        assert refused.value.reason == "empty-input"
        assert store.db.execute("SELECT count(*) FROM corpora").fetchone()[0] == 0
    loaded(store_url, tmp_path)
    before = documents(store_url)
    result = run_cli("index", empty, "--corpus", "c", "--store", store_url, "--partial")
    assert result.code == 0, result.stderr  # adds and updates nothing, as asked
    assert documents(store_url) == before


def test_ingest_of_a_source_with_no_records_is_refused_too(store_url, tmp_path):
    loaded(store_url, tmp_path)
    before = documents(store_url)
    (tmp_path / "tree").mkdir()
    (tmp_path / "tree" / "empty.md").write_text("\n\n")  # slices to nothing
    result = run_cli("ingest", "--root", tmp_path / "tree", "--corpus", "c",
                     "--store", store_url, "--reindex", "--json")  # fmt: skip
    assert result.code == 1, result.stderr
    # The flatten finds nothing (or the load, no record): a named reason either way.
    reason = json.loads(result.stdout.splitlines()[-1])["error"]["reason"]
    assert reason in ("empty-input", "nothing-kept"), reason
    assert documents(store_url) == before


# 2. A reindex keeps what it could not read, and removes what a whole input no longer holds.


def _lines(records: list[dict]) -> list[str]:
    return [json.dumps(r) for r in records]


UNREADABLE = {
    # the last line cut mid-JSON: guide/5.md's second slice
    "truncated": (lambda lines: [*lines[:-1], lines[-1][:-15]], "guide/5.md"),
    # both of guide/3.md's lines unreadable: the input no longer names it
    "malformed": (lambda lines: [*lines[:6], "garbage", "{bad", *lines[8:]], "guide/3.md"),
}


@pytest.mark.parametrize("flags", [["--reindex"], []], ids=["reindex", "snapshot"])
@pytest.mark.parametrize("case", sorted(UNREADABLE))
def test_a_load_with_unreadable_lines_keeps_the_documents_it_could_not_read(
    store_url, tmp_path, case, flags
):
    loaded(store_url, tmp_path)
    before = documents(store_url)
    cut, unreadable = UNREADABLE[case]
    path = tmp_path / "cut.jsonl"
    path.write_text("\n".join(cut(_lines(CORPUS))) + "\n")
    result = run_cli("index", path, "--corpus", "c", "--store", store_url, "--json", *flags)
    assert result.code == 0, result.stderr
    load = json.loads(result.stdout)["load"]
    assert load["removed"] == 0 and load["malformed"] >= 1
    after = documents(store_url)
    assert sorted(after) == sorted(before)
    assert after[unreadable] == before[unreadable]  # kept whole, as it was
    if flags:  # a reindex writes every other document anew
        assert load["updated"] == 5 and load["unchanged"] == 0


def test_a_whole_reindex_writes_everything_anew_and_reports_what_it_removed(store_url, tmp_path):
    loaded(store_url, tmp_path)
    kept = [r for r in CORPUS if r["source"] not in ("guide/0.md", "guide/1.md")]
    result = run_cli("index", jsonl(tmp_path / "less.jsonl", kept), "--corpus", "c",
                     "--store", store_url, "--reindex", "--json")  # fmt: skip
    assert result.code == 0, result.stderr
    load = json.loads(result.stdout)["load"]
    assert (load["added"], load["updated"], load["unchanged"], load["removed"]) == (0, 4, 0, 2)
    assert sorted(documents(store_url)) == [f"guide/{i}.md" for i in range(2, 6)]
    # Told to drop the corpus and load it afresh: the removal limit does not apply.
    other = [record(f"other/{i}.md", 1, f"other {i}") for i in range(2)]
    result = run_cli("index", jsonl(tmp_path / "other.jsonl", other), "--corpus", "c",
                     "--store", store_url, "--reindex", "--json")  # fmt: skip
    assert result.code == 0, result.stderr
    assert json.loads(result.stdout)["load"]["removed"] == 4


# 3. A load that fails part-way leaves the previous index as it was.


def _big(path: Path, docs: int = 6) -> Path:
    """More than one of the loader's write batches (its first is 512 KiB), in few documents: a
    Postgres reindex deletes its documents one by one, each a few statements."""
    return jsonl(path, [record(f"big/{i}.md", 1, " ".join(f"w{i}x{j % 300}" for j in range(40_000)))
                        for i in range(docs)])  # fmt: skip


def test_a_reindex_failing_on_a_full_disk_leaves_the_previous_index(tmp_path):
    store = tmp_path / "store"
    big = _big(tmp_path / "big.jsonl")
    assert run_cli("index", big, "--corpus", "c", "--store", store, "-q").code == 0
    before = documents(str(store))
    size = (store / "index.sqlite").stat().st_size
    result = run_cli("index", big, "--corpus", "c", "--store", store, "--reindex",
                     preexec_fn=file_size_limit(size + 100_000))  # fmt: skip
    assert_clean_failure(result, 1, "cannot write the index", "as it was before this run")
    assert documents(str(store)) == before


def test_a_reindex_failing_after_its_batches_leaves_the_previous_index(postgres_url, tmp_path):
    big = _big(tmp_path / "big.jsonl")
    assert run_cli("index", big, "--corpus", "c", "--store", postgres_url, "-q").code == 0
    before = documents(postgres_url)
    # Another session holds the corpus's term statistics, which a load folds at its very end
    # (after writing every batch): the load waits for them, gives up, and rolls back.
    with Store.open(postgres_url) as holder:
        holder.db.execute("BEGIN")
        holder.db.execute("SELECT 1 FROM text_terms t JOIN corpora k ON k.id = t.corpus_id "
                          "WHERE k.name = 'c' FOR UPDATE OF t")  # fmt: skip
        result = run_cli("index", big, "--corpus", "c", "--store", postgres_url, "--reindex",
                         "--wait", "1")  # fmt: skip
        holder.db.execute("ROLLBACK")
    assert_clean_failure(result, 1, "another docs-flatten run is writing")
    assert documents(postgres_url) == before


# 4. Dropping a corpus is asked for by name.


def test_drop_removes_one_corpus_and_keeps_the_others(store_url, tmp_path):
    loaded(store_url, tmp_path)
    other = jsonl(tmp_path / "other.jsonl", [record("keep.md", 1, "otters stay")])
    assert run_cli("index", other, "--corpus", "kept", "--store", store_url, "-q").code == 0
    kept = {s: v for s, v in documents(store_url).items() if s == "keep.md"}
    result = run_cli("drop", "--corpus", "c", "--store", store_url, "--json")
    assert result.code == 0, result.stderr
    said = json.loads(result.stdout)
    assert (said["command"], said["ok"], said["corpus"]) == ("drop", True, "c")
    assert said["load"]["removed"] == 6 and said["chunks"]["total"] == 0
    assert [name for name, _ in corpora(store_url)] == ["kept"]
    assert documents(store_url) == kept
    found = run_cli("search", "otters", "--store", store_url, "--json")
    assert found.code == 0 and "guide/" not in found.stdout and "keep.md" in found.stdout
    # The name is free again: a load makes it anew.
    assert run_cli("index", tmp_path / "whole.jsonl", "--corpus", "c", "--store", store_url,
                   "-q").code == 0  # fmt: skip
    assert len(documents(store_url)) == 7
    text = run_cli("drop", "--corpus", "c", "--store", store_url)
    assert text.code == 0 and "c: dropped (6 documents removed)" in text.stderr
    assert text.stdout == ""  # data on stdout, diagnostics on stderr


def test_drop_of_a_corpus_the_store_does_not_hold_is_a_usage_error(store_url, tmp_path):
    loaded(store_url, tmp_path)
    before = documents(store_url)
    result = run_cli("drop", "--corpus", "typo", "--store", store_url, "--json")
    assert_clean_failure(result, 2, "holds no corpus 'typo'", "it holds: c")
    assert json.loads(result.stdout)["error"]["reason"] == "unknown-corpus"
    assert documents(store_url) == before


def test_drop_without_a_store_makes_none(tmp_path):
    result = run_cli("drop", "--corpus", "c", "--store", tmp_path / "none")
    assert_clean_failure(result, 1, "no index at")
    assert not (tmp_path / "none").exists()
    blank = run_cli("drop", "--corpus", " ", "--store", tmp_path / "none")
    assert blank.code == 2 and "corpus name cannot be empty" in blank.stderr


def test_a_renamed_folder_is_no_removal_for_the_limit_on_either_store(store_url, tmp_path):
    docs = [record(f"a/{i}.md", 1, f"page {i}", docHash=f"{i:064x}") for i in range(12)]
    moved = [{**r, "id": r["id"].replace("a/", "b/"), "source": r["source"].replace("a/", "b/")}
             for r in docs]  # fmt: skip
    with Store.open(store_url) as store:
        load_files(store, [jsonl(tmp_path / "a.jsonl", docs)], "c")
        report = load_files(store, [jsonl(tmp_path / "b.jsonl", moved)], "c")
    assert (report.added, report.removed) == (12, 12)


# 5. A stop while a batch is being written leaves nothing behind.


def test_a_stop_while_a_batch_is_written_on_the_second_thread_commits_none_of_it(tmp_path):
    """The batch in flight is finished (or abandoned) before the transaction is rolled back:
    a statement of it run after the rollback would run on its own, and commit. The stop lands
    while the writing thread is inside its first statement (SQLite's progress handler, a real
    callback of that thread, raises it on the reading thread and lets the statement go on)."""
    import gc
    import signal
    import threading
    import time

    from index import loader

    def stop(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    records = [record(f"guide/{i}.md", 1, f"document {i} about otters " * 40) for i in range(3000)]
    path = jsonl(tmp_path / "a.jsonl", records)
    main = threading.main_thread().ident
    sent: list[bool] = []

    def on_writer_thread() -> int:
        if threading.current_thread().name.startswith("docs-flatten-load") and not sent:
            sent.append(True)
            signal.pthread_kill(main, signal.SIGUSR1)
            time.sleep(0.3)  # the reading thread's stop lands meanwhile
        return 0

    previous = signal.signal(signal.SIGUSR1, stop)
    # No collection meanwhile: a stop landing in a gc callback (hypothesis installs one in this
    # process) is printed as unraisable and lost, and the load then ends without it.
    gc.disable()
    try:
        with Store.open(tmp_path / "store") as store:
            store.db.set_progress_handler(on_writer_thread, 1000)
            with pytest.raises(KeyboardInterrupt):
                loader.load_files(store, [path], "c", hold_chars=1 << 30)
            store.db.set_progress_handler(None, 0)
    finally:
        gc.enable()
        signal.signal(signal.SIGUSR1, previous)
    assert sent
    with Store.open(tmp_path / "store", readonly=True) as store:
        tables = ("corpora", "documents", "chunks", "chunks_fts", "documents_fts")
        counts = [store.db.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in tables]
    assert counts == [0, 0, 0, 0, 0]


def test_a_stop_during_close_still_waits_for_the_batch_in_flight(tmp_path):
    """`close()` waits through a stop: on Python 3.11 a `Thread.join()` that a signal
    interrupts marks the thread ended while it runs on (the next join returns at once), and a
    store closed under the writing thread crashes the process."""
    import signal
    import threading
    import time

    from index.loader import _BatchWriter

    def stop(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    ended = threading.Event()

    def slow_statement() -> None:
        time.sleep(0.6)
        ended.set()

    previous = signal.signal(signal.SIGALRM, stop)
    try:
        with Store.open(tmp_path / "store") as store:
            writer = _BatchWriter(store.db)
            writer._writing = writer._thread.submit(writer._write, slow_statement)
            signal.setitimer(signal.ITIMER_REAL, 0.15)  # lands while close() waits
            with pytest.raises(KeyboardInterrupt):
                writer.close()
            assert ended.is_set()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def test_a_store_that_is_a_file_or_holds_a_folder_for_its_index_is_said_plainly(tmp_path):
    """A reader was told to build an index in a file, and SQLite called a folder where the
    index goes a disk I/O error; both are named, on reads and writes, and nothing is made."""
    a_file = tmp_path / "notes.txt"
    a_file.write_text("mine\n")
    odd = tmp_path / "odd"
    (odd / "index.sqlite").mkdir(parents=True)
    records = jsonl(tmp_path / "a.jsonl", [record("a.md", 1, "otters")])
    for store, reason in ((a_file, "is not a folder"), (odd, "it is not a file")):
        for args in (("search", "otters"), ("index", records, "--corpus", "c")):
            result = run_cli(*args, "--store", store)
            assert_clean_failure(result, 1, reason)
            assert "build it with" not in result.stderr and "disk I/O" not in result.stderr
    assert a_file.read_text() == "mine\n" and [p.name for p in odd.iterdir()] == ["index.sqlite"]


def test_close_waits_for_a_batch_whose_future_a_stop_inside_submit_lost(tmp_path):
    """A stop landing inside `submit()`, once the writing thread has taken the batch, loses its
    future: `close()` waits on what the writing thread says it is doing, not on the future."""
    import threading
    import time

    from index.loader import _BatchWriter

    started, ended = threading.Event(), threading.Event()

    def slow_statement() -> None:
        started.set()
        time.sleep(0.5)
        ended.set()

    with Store.open(tmp_path / "store") as store:
        writer = _BatchWriter(store.db)
        writer._thread.submit(writer._write, slow_statement)  # its future dropped, as a stop does
        assert started.wait(5)
        writer.close()
        assert ended.is_set()
