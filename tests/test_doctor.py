"""`doctor` checks the store, the same on SQLite and on PostgreSQL (`store_url` runs each test on
both): schema against this version, the text index's integrity (FTS5's integrity-check; the
BM25 statistics against the postings), the vectors, the corpora; a damaged or newer store is a
named failure with a non-zero exit, and a password is never printed."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from index.health import check_store
from index.store import Store
from tests.conftest import assert_clean_failure, jsonl, record, run_cli
from tests.embedserver import EmbeddingServer
from tests.sites import serve

DOCS = [
    record("guide/deploy.md", 1, "Deployments roll out with kubectl apply.", title="Deploying"),
    record("guide/deploy.md", 2, "Roll back with kubectl rollout undo.", title="Rolling back"),
    record("faq.md", 1, "How do I reset my password? Open settings.", title="Password reset"),
]


@pytest.fixture
def embeddings():
    EmbeddingServer.reset()
    with serve(EmbeddingServer) as base:
        yield base + "/v1"


def postgres(store_url: str) -> bool:
    return store_url.startswith("postgresql://")


def load(store_url: str, tmp_path: Path, records=DOCS, corpus="docs", *embed: str) -> None:
    done = run_cli("index", jsonl(tmp_path / f"{corpus}.jsonl", records), "--corpus", corpus,
                   "--store", store_url, *(embed or ("--no-embed",)))  # fmt: skip
    assert done.code == 0, done.stderr


def doctor(store_url: str, *args: str, cwd: Path | None = None):
    found = run_cli("doctor", "--store", store_url, "--json", *args, cwd=cwd)
    return found, json.loads(found.stdout) if found.stdout.strip() else None


def test_doctor_reports_a_sound_store_with_its_vectors_and_the_embeddings(
    store_url, tmp_path, embeddings
):
    embed = ("--base-url", embeddings, "--model", "test-embedder")
    load(store_url, tmp_path, DOCS, "docs", *embed)
    load(store_url, tmp_path, DOCS[:1], "other", *embed)
    result, found = doctor(store_url, *embed)
    assert result.code == 0, result.stderr
    store = found["store"]
    assert store["kind"] == ("postgres" if postgres(store_url) else "sqlite")
    assert store["schemaState"] == "current" and store["schema"] == store["thisSchema"]
    assert [(c["name"], c["documents"], c["chunks"]) for c in store["corpora"]] == [
        ("docs", 2, 3), ("other", 1, 1)]  # fmt: skip
    assert store["text"]["chunks"] == 4 and store["text"]["checked"]
    vectors = store["vectors"]
    assert vectors["model"] == "test-embedder" and vectors["dimension"] == 64
    assert vectors["chunksWithVector"] == 4 and vectors["chunksPending"] == 0
    assert vectors["chunksMissingVector"] == 0
    if postgres(store_url):
        assert store["text"]["engine"] == "bm25 (postgres)"
        assert "vector" in store["server"]["extensions"] and vectors["pgvector"]
        assert store["server"]["pgSearch"] in ("installed", "available", "absent")
        assert vectors["search"] == "exact"  # below the HNSW threshold
    else:
        assert store["text"]["checked"] == ["chunks_fts", "chunks_exact", "documents_fts"]
        assert vectors["search"] == "matrix" and vectors["sidecar"] in ("current", "absent")
    assert not [f for f in store["findings"] if f["level"] == "failed"]
    assert found["embeddings"]["reachable"] and found["embeddings"]["dimension"] == 64
    if postgres(store_url):  # the index a backfill builds from 20,000 vectors, made here
        with Store.open(store_url) as opened, opened.write():
            opened.db.execute("CREATE INDEX vectors_hnsw ON vectors "
                              "USING hnsw ((embedding::halfvec(64)) halfvec_ip_ops)")  # fmt: skip
        assert check_store(store_url).vectors.search == "hnsw (halfvec)"
    else:  # a sidecar that no longer copies the store: rebuilt by the next vector query
        (Path(store_url) / "vectors.f32").write_bytes(b"DFVECS01 not the store's")
        assert check_store(store_url).vectors.sidecar == "stale"
    text = run_cli("doctor", "--store", store_url, *embed)
    assert text.code == 0
    assert "store check:" in text.stdout and "corpus docs: 2 documents, 3 chunks" in text.stdout
    assert "embeddings server:" in text.stdout and "reachable: yes" in text.stdout


def test_doctor_refuses_a_store_of_a_newer_version(store_url, tmp_path):
    load(store_url, tmp_path)
    with Store.open(store_url) as store, store.write():
        store.db.execute("INSERT INTO schema_migrations VALUES ('m999_future', 'later')")
    newer = run_cli("doctor", "--store", store_url)
    assert_clean_failure(newer, 1, "index-newer", "m999_future")
    assert "newer than this version: refused" in newer.stdout


def test_doctor_says_an_older_store_is_upgraded_by_the_next_load(store_url, tmp_path):
    load(store_url, tmp_path)
    with Store.open(store_url) as store, store.write():  # as the previous version left it
        store.db.execute("DELETE FROM schema_migrations WHERE name = 'm005_document_fields'")
        store.db.execute("DROP INDEX documents_locale")
        store.db.execute("ALTER TABLE documents DROP COLUMN locale")
        if not postgres(store_url):
            store.db.execute("DROP TABLE documents_fts")
    health = check_store(store_url)
    assert health.schema_state == "older" and health.failure is None
    assert [f.reason for f in health.findings] == ["index-outdated"]
    result = run_cli("doctor", "--store", store_url)
    assert result.code == 0 and "older: the next load upgrades it" in result.stdout


def test_doctor_finds_a_damaged_fts5_table(tmp_path):
    store_dir = tmp_path / "store"
    load(str(store_dir), tmp_path)
    db = sqlite3.connect(store_dir / "index.sqlite", isolation_level=None)
    # The stored text changed behind the index's back: the index no longer matches it.
    db.execute("UPDATE chunks_fts_content SET c3 = 'zebra quokka' WHERE id = 1")
    db.close()
    result, found = doctor(str(store_dir))
    assert_clean_failure(result, 1, "store-damaged", "chunks_fts")
    failed = [f for f in found["store"]["findings"] if f["level"] == "failed"]
    assert failed[0]["reason"] == "store-damaged" and failed[0]["check"] == "text"
    assert found["store"]["text"]["checked"] == []


def test_a_load_leaves_no_deltas_and_doctor_finds_statistics_that_disagree(postgres_url, tmp_path):
    many = DOCS + [record(f"notes/{i}.md", 1, f"kubectl note {i}") for i in range(5)]
    load(postgres_url, tmp_path, many)
    # faq.md deleted: its postings stay in their block (under a quarter of it), listed dead.
    load(postgres_url, tmp_path, [r for r in many if r["source"] != "faq.md"])
    health = check_store(postgres_url)
    assert health.failure is None and health.findings == []
    assert health.text is not None and health.text.dead_chunks == 1
    assert health.text.pending_deltas == 0  # folded at the end of each load
    with Store.open(postgres_url) as store, store.write():
        store.db.execute("UPDATE text_terms SET docs = docs + 1 WHERE term = 'kubectl'")
    damaged = check_store(postgres_url)
    assert damaged.failure is not None and damaged.failure.reason == "store-damaged"
    assert "'kubectl': 8 counted, 7 postings" in damaged.failure.message
    result = run_cli("doctor", "--store", postgres_url)
    assert_clean_failure(result, 1, "store-damaged", "kubectl")


def test_doctor_reports_deltas_an_earlier_load_left_unfolded(postgres_url, tmp_path):
    load(postgres_url, tmp_path)
    with Store.open(postgres_url) as store, store.write():  # as an earlier build left them
        store.db.execute("INSERT INTO text_terms SELECT term, corpus_id, 77, 0, 0 "
                         "FROM text_terms WHERE term IN ('kubectl', 'password')")  # fmt: skip
    health = check_store(postgres_url)
    assert health.failure is None and [f.reason for f in health.findings] == ["deltas-pending"]
    assert health.text.pending_deltas == 2 and health.text.pending_corpora == ["docs"]
    result = run_cli("doctor", "--store", postgres_url)
    assert result.code == 0 and "warning: deltas-pending" in result.stdout
    load(postgres_url, tmp_path, DOCS[:2])  # the next load folds them
    assert check_store(postgres_url).text.pending_deltas == 0


def test_doctor_finds_a_chunk_missing_from_the_text_index(postgres_url, tmp_path):
    load(postgres_url, tmp_path)
    with Store.open(postgres_url) as store, store.write():
        store.db.execute("DELETE FROM text_chunks WHERE chunk_id = (SELECT min(id) FROM chunks)")
    health = check_store(postgres_url)
    assert health.failure is not None and health.failure.reason == "store-damaged"
    messages = " ".join(f.message for f in health.findings)
    assert "text index holds 2 chunk(s), the store 3" in messages and "totals say" in messages


def test_doctor_names_an_unreachable_server_and_never_prints_the_password(tmp_path):
    url = "postgresql://docs@127.0.0.1:9/docs?password_env=DOCTOR_PW"
    result = run_cli("doctor", "--store", url, "--json", env={"DOCTOR_PW": "hunter2-secret"})
    assert_clean_failure(result, 1, "store-unreachable")
    assert "hunter2-secret" not in result.stdout + result.stderr
    found = json.loads(result.stdout)
    assert found["store"]["kind"] is None and found["store"]["store"].startswith("postgresql://")
    refused = run_cli("doctor", "--store", "postgresql://docs:hunter2-secret@127.0.0.1:9/docs")
    assert_clean_failure(refused, 2, "holds a password")  # the command line's fault: usage
    assert "hunter2-secret" not in refused.stdout + refused.stderr


def test_doctor_checks_the_store_the_environment_names_and_a_missing_one_fails(store_url, tmp_path):
    load(store_url, tmp_path)
    named = run_cli("doctor", env={"DOCS_FLATTEN_STORE": store_url}, cwd=tmp_path)
    assert named.code == 0, named.stderr
    assert "corpus docs: 2 documents, 3 chunks" in named.stdout
    missing = run_cli("doctor", "--store", str(tmp_path / "nowhere"))
    assert_clean_failure(missing, 1, "index-not-built")
    nothing = run_cli("doctor", cwd=tmp_path)  # no default store there, no embeddings
    assert_clean_failure(nothing, 2, "nothing to check", "no embeddings configured")


def test_a_reload_of_the_same_records_writes_no_row_on_postgres(postgres_url, tmp_path):
    """The fold at the end of a load writes only when the load left deltas."""
    from index.loader import load_files

    def row_writes(db) -> int:  # every table but corpora (its row records the load's time)
        db.execute("SELECT pg_stat_force_next_flush()")
        db.execute("SELECT pg_stat_clear_snapshot()")
        return int(db.execute(
            "SELECT coalesce(sum(n_tup_ins + n_tup_upd + n_tup_del), 0) FROM pg_stat_user_tables "
            "WHERE relname <> 'corpora'").fetchone()[0])  # fmt: skip

    path = jsonl(tmp_path / "docs.jsonl", DOCS)
    with Store.open(postgres_url) as store:
        load_files(store, [path], "docs")
        before = row_writes(store.db)
        load_files(store, [path], "docs")
        assert row_writes(store.db) == before


def test_doctor_skips_the_fts5_check_while_a_load_holds_the_write_lock(tmp_path, monkeypatch):
    import index.health

    store_dir = tmp_path / "store"
    load(str(store_dir), tmp_path)
    monkeypatch.setattr(index.health, "CHECK_WAIT", 0.2)
    writer = sqlite3.connect(store_dir / "index.sqlite", isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")
    try:
        health = check_store(str(store_dir))
    finally:
        writer.execute("ROLLBACK")
        writer.close()
    assert health.failure is None
    assert [(f.reason, f.level) for f in health.findings] == [("text-unchecked", "warning")]
    assert "another run is writing" in health.findings[0].message
