"""The store's semantics, the same on SQLite and on PostgreSQL (`store_url` runs each test on
both): one writer per corpus (a second waits, then fails `store-busy`), readers never blocked,
other corpora load alongside on Postgres, and a writer killed mid-load (SIGKILL), or a server
stopped mid-load (`pg_ctl -m immediate`), leaves the previous corpus as it was."""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from index.loader import load_files
from index.store import Store
from tests.conftest import assert_clean_failure, jsonl, record, run_cli

DOCS = [
    record("guide/deploy.md", 1, "Deployments roll out with kubectl apply.", title="Deploying"),
    record("faq.md", 1, "How do I reset my password? Open settings.", title="Password reset"),
]
OTHER = [record("notes/otters.md", 1, "Otters hold hands while they sleep.", title="Otters")]


def postgres(store_url: str) -> bool:
    return store_url.startswith("postgresql://")


def loaded_sources(store_url: str, corpus: str | None = None) -> list[str]:
    with Store.open(store_url, readonly=True) as store:
        rows = store.db.execute(
            "SELECT d.source FROM documents d JOIN corpora k ON k.id = d.corpus_id "
            "WHERE ? IS NULL OR k.name = ? ORDER BY d.source",
            (corpus, corpus),
        ).fetchall()
    return [source for (source,) in rows]


def big_file(tmp_path: Path) -> Path:
    big = [record(f"gen/{i:06}.md", 1, f"generated document {i} " + "word " * 60)
           for i in range(60_000)]  # fmt: skip
    return jsonl(tmp_path / "big.jsonl", big)


def in_write(store_url: str):  # -> Callable[[], bool]
    """A probe: whether another process is inside a write transaction of the store now."""
    if postgres(store_url):
        store = Store.open(store_url, readonly=True)

        def probe() -> bool:
            return bool(store.db.execute(
                "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted "
                "AND pid <> pg_backend_pid()").fetchone()[0])  # fmt: skip

        probe.close = store.close  # type: ignore[attr-defined]
        return probe
    db = sqlite3.connect(Path(store_url) / "index.sqlite", timeout=0, isolation_level=None)

    def probe_sqlite() -> bool:
        try:
            db.execute("BEGIN IMMEDIATE")
            db.execute("ROLLBACK")
            return False
        except sqlite3.OperationalError:
            return True

    probe_sqlite.close = db.close  # type: ignore[attr-defined]
    return probe_sqlite


def start_big_load(store_url: str, tmp_path: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "flatten", "index", str(big_file(tmp_path)), "--corpus", "docs",
         "--store", store_url], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip


def load_in_flight(store_url: str, tmp_path: Path) -> subprocess.Popen[bytes]:
    """A big load, well inside its write transaction (the test skips if it ended first)."""
    proc = start_big_load(store_url, tmp_path)
    if not wait_until_writing(proc, store_url):
        proc.kill()
        proc.wait()
        pytest.skip("the load finished before it could be interrupted mid-transaction")
    return proc


def wait_until_writing(proc: subprocess.Popen[bytes], store_url: str) -> bool:
    """True once `proc` is well inside its write transaction; False if it ended first."""
    probe = in_write(store_url)
    deadline = time.monotonic() + 120
    try:
        while proc.poll() is None and time.monotonic() < deadline:
            if probe():
                time.sleep(0.3)  # well inside it: the inserts take seconds
                return proc.poll() is None
            time.sleep(0.01)
    finally:
        probe.close()  # type: ignore[attr-defined]
    return False


def test_a_second_writer_of_a_corpus_waits_then_fails_store_busy_and_readers_go_on(
    store_url, tmp_path
):
    with Store.open(store_url) as store:
        load_files(store, [jsonl(tmp_path / "a.jsonl", DOCS)], "docs")
        with store.write("docs"):  # another writer of this corpus, mid-transaction
            started = time.monotonic()
            busy = run_cli("index", tmp_path / "a.jsonl", "--corpus", "docs",
                           "--store", store_url, "--wait", "0.3")  # fmt: skip
            assert_clean_failure(busy, 1, "another docs-flatten run is writing")
            assert time.monotonic() - started >= 0.3
            reader = run_cli("search", "deployments", "--store", store_url, "--json")
            assert reader.code == 0
            assert json.loads(reader.stdout)[0]["source"] == "guide/deploy.md"
    assert loaded_sources(store_url) == ["faq.md", "guide/deploy.md"]


def test_another_corpus_loads_while_a_corpus_is_being_written(store_url, tmp_path):
    """Postgres: alongside (one writer per corpus). SQLite: once the first writer commits (one
    writer per store). Either way both corpora end up loaded."""
    other = jsonl(tmp_path / "other.jsonl", OTHER)
    with Store.open(store_url) as store:
        load_files(store, [jsonl(tmp_path / "a.jsonl", DOCS)], "docs")
        results: list[object] = []
        loader = threading.Thread(
            target=lambda: results.append(
                run_cli("index", other, "--corpus", "other", "--store", store_url, "--wait", "60")
            )
        )
        with store.write("docs"):
            loader.start()
            if postgres(store_url):
                loader.join(60)
                assert results and results[0].code == 0  # type: ignore[attr-defined]
        loader.join(60)
    assert results[0].code == 0, results[0]  # type: ignore[attr-defined]
    assert loaded_sources(store_url, "other") == ["notes/otters.md"]
    assert loaded_sources(store_url, "docs") == ["faq.md", "guide/deploy.md"]


def test_two_corpora_loaded_at_once_both_commit(store_url, tmp_path):
    files = {
        name: jsonl(tmp_path / f"{name}.jsonl",
                    [record(f"{name}/{i}.md", 1, f"{name} text {i}") for i in range(300)])
        for name in ("one", "two")
    }  # fmt: skip
    with Store.open(store_url):
        pass  # the schema first: both loads below find it made
    procs = [
        subprocess.Popen([sys.executable, "-m", "flatten", "index", str(path), "--corpus", name,
                          "--store", store_url], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        for name, path in files.items()
    ]  # fmt: skip
    for proc in procs:
        _, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err.decode()
    assert len(loaded_sources(store_url, "one")) == len(loaded_sources(store_url, "two")) == 300


def test_a_writer_killed_mid_load_leaves_the_previous_corpus_intact(store_url, tmp_path):
    with Store.open(store_url) as store:
        load_files(store, [jsonl(tmp_path / "small.jsonl", DOCS)], "docs")
    proc = load_in_flight(store_url, tmp_path)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert loaded_sources(store_url) == ["faq.md", "guide/deploy.md"]
    again = run_cli("index", tmp_path / "small.jsonl", "--corpus", "docs", "--store", store_url)
    assert again.code == 0 and "2 unchanged" in again.stderr


def test_a_server_stopped_mid_load_leaves_the_previous_corpus_intact(tmp_path, monkeypatch):
    """`pg_ctl -m immediate` (no shutdown checkpoint: a crash) while a load is in its
    transaction: the loader fails with a named error, and after recovery the corpus is as it
    was. Its own server: the session's must keep running."""
    from tests.conftest import started_postgres
    from tests.pgserver import PASSWORD, PASSWORD_ENV

    server = started_postgres()
    try:
        monkeypatch.setenv(PASSWORD_ENV, PASSWORD)
        url = server.create_database("crash") + f"?password_env={PASSWORD_ENV}"
        with Store.open(url) as store:
            load_files(store, [jsonl(tmp_path / "small.jsonl", DOCS)], "docs")
        proc = load_in_flight(url, tmp_path)
        server.stop("immediate")
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 1, err.decode()
        assert "Traceback" not in err.decode() and "the index is as it was" in err.decode()
        server.start()
        assert loaded_sources(url) == ["faq.md", "guide/deploy.md"]
    finally:
        server.remove()
