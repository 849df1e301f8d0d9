"""The PostgreSQL store's own parts, against the real test server (tests/pgserver.py): the URL
and its password, the dialect, migrations, and the per-corpus writer locks."""

from __future__ import annotations

import socket
import threading

import numpy as np
import pytest

from index.errors import StoreError
from index.postgres.dialect import parameters, translate
from index.postgres.url import parse, shown
from index.scope import Scope, scope_filter
from index.store import Store
from tests.conftest import assert_clean_failure, run_cli, write


def test_a_password_in_the_store_url_is_refused_and_never_echoed():
    with pytest.raises(StoreError) as caught:
        parse("postgresql://app:s3cret@db.example:5432/docs")
    assert caught.value.reason == "store-password-in-url"
    assert "s3cret" not in str(caught.value) and "s3cret" not in (caught.value.hint or "")
    assert shown("postgresql://app:s3cret@db.example:5432/docs") == (
        "postgresql://app@db.example:5432/docs"
    )


def test_the_password_comes_from_the_variable_the_url_names(monkeypatch):
    url = parse("postgresql://app@db.example/docs?password_env=MY_PG_PW&sslmode=require")
    assert url.conninfo == "postgresql://app@db.example/docs?sslmode=require"
    monkeypatch.delenv("MY_PG_PW", raising=False)
    with pytest.raises(StoreError) as caught:
        url.password()
    assert caught.value.reason == "store-password-missing" and "MY_PG_PW" in str(caught.value)
    monkeypatch.setenv("MY_PG_PW", "pw")
    assert url.password() == "pw"


def test_a_store_url_without_a_database_is_a_named_error():
    with pytest.raises(StoreError) as caught:
        parse("postgresql://app@db.example")
    assert caught.value.reason == "bad-store-url"


def test_the_dialect_rewrites_sqlite_spellings_outside_literals():
    statement = translate(
        "SELECT 'a ? %', group_concat(x, ' ') FROM t WHERE 1 AND id IN "
        "(SELECT value FROM json_each(?)) AND k = ?"
    )
    assert statement.sql == (
        "SELECT 'a ? %%', string_agg(x, ' ') FROM t WHERE true AND id = ANY(%s) AND k = %s"
    )
    assert parameters(statement, ["[1, 2]", "k"]) == [[1, 2], "k"]
    assert translate("INSERT OR IGNORE INTO v (k) VALUES (?)").sql == (
        "INSERT INTO v (k) VALUES (%s) ON CONFLICT DO NOTHING"
    )


def test_a_reader_of_an_empty_database_is_told_to_build_the_index(postgres_url):
    with pytest.raises(StoreError) as caught:
        Store.open(postgres_url, readonly=True)
    assert caught.value.reason == "index-not-built"


def test_a_writer_migrates_and_a_store_of_a_newer_schema_is_refused(postgres_url):
    with Store.open(postgres_url) as store:
        assert store.kind == "postgres"
        tables = {r[0] for r in store.db.execute("SELECT tablename FROM pg_tables")}
        assert {"corpora", "documents", "chunks", "vectors", "schema_migrations"} <= tables
        with store.write():
            store.db.execute("INSERT INTO schema_migrations VALUES ('m999_future', 'x')")
    for readonly in (True, False):
        with pytest.raises(StoreError) as caught:
            Store.open(postgres_url, readonly=readonly)
        assert caught.value.reason == "index-newer"


def _back_to(store_url: str, migration: str, *statements: str) -> None:
    """The store as the version before `migration` left it: `statements` undo its schema."""
    with Store.open(store_url) as store, store.write():
        for statement in statements:
            store.db.execute(statement)
        store.db.execute("DELETE FROM schema_migrations WHERE name = ?", (migration,))


def _handbook(store_url: str, tmp_path) -> None:
    """One corpus, `docs`, of one page that mentions a zebra."""
    write(tmp_path / "handbook", {"docs/install.md": "# Install\n\nRun the zebra installer.\n"})
    loaded = run_cli("ingest", "--root", tmp_path / "handbook", "--corpus", "docs",
                     "--store", store_url)  # fmt: skip
    assert loaded.code == 0, loaded.stderr


def test_a_store_one_migration_behind_is_read_as_it_is_on_either_backend(store_url, tmp_path):
    """A migration that only adds columns (m006: corpora.source) leaves a store readers can
    read: search and stats answer, the new column reads as its default, nothing is written."""
    _handbook(store_url, tmp_path)
    _back_to(store_url, "m006_corpus_source", "ALTER TABLE corpora DROP COLUMN source")
    found = run_cli("search", "zebra", "--store", store_url)
    assert found.code == 0 and "docs/install.md" in found.stdout, found.stderr
    counted = run_cli("stats", "--store", store_url)
    assert counted.code == 0 and "corpus docs: 1 documents" in counted.stdout, counted.stderr
    with Store.open(store_url, readonly=True) as reader:
        assert reader.db.execute("SELECT name, source FROM corpora").fetchall() == [("docs", None)]
        applied = {row[0] for row in reader.db.execute("SELECT name FROM schema_migrations")}
    assert "m006_corpus_source" not in applied  # read as it is: only a writer upgrades it
    with Store.open(store_url) as writer:
        assert writer.db.execute("SELECT name, source FROM corpora").fetchall() == [("docs", None)]
    with Store.open(store_url, readonly=True) as reader:  # upgraded: read without the view
        assert "m006_corpus_source" in {row[0] for row in reader.db.execute(
            "SELECT name FROM schema_migrations")}  # fmt: skip


def test_a_store_with_the_chunk_hash_index_is_read_then_loses_it_to_a_writer(store_url, tmp_path):
    """m008 drops an index no query uses: a store that still has it reads as it is, and the
    next writer drops it."""
    _handbook(store_url, tmp_path)
    _back_to(store_url, "m008_no_chunk_hash_index", "CREATE INDEX chunks_hash ON chunks(hash)")
    found = run_cli("search", "zebra", "--store", store_url)
    assert found.code == 0 and "docs/install.md" in found.stdout, found.stderr
    with Store.open(store_url) as writer:
        assert "m008_no_chunk_hash_index" in {row[0] for row in writer.db.execute(
            "SELECT name FROM schema_migrations")}  # fmt: skip
        writer.db.execute("CREATE INDEX chunks_hash ON chunks(hash)")  # gone: made anew
        writer.db.execute("DROP INDEX chunks_hash")


def test_a_reader_that_may_not_make_temporary_views_is_told_to_upgrade(
    postgres_server, postgres_url, tmp_path
):
    """Reading a store one migration behind takes temporary views; a user without the TEMP
    privilege gets the refusal a store lacking more would, not a server error."""
    from tests.pgserver import PASSWORD

    _handbook(postgres_url, tmp_path)
    _back_to(postgres_url, "m006_corpus_source", "ALTER TABLE corpora DROP COLUMN source")
    database = postgres_url.split("/")[-1].split("?")[0]
    role = f"reader_{database}"
    with postgres_server.connect(database, autocommit=True) as db:
        db.execute(f"CREATE ROLE {role} LOGIN PASSWORD '{PASSWORD}'")
        db.execute(f"REVOKE TEMPORARY ON DATABASE {database} FROM PUBLIC")
        db.execute(f"GRANT SELECT ON ALL TABLES IN SCHEMA public TO {role}")
    try:
        reader = postgres_url.replace("postgres@", f"{role}@")
        refused = run_cli("search", "zebra", "--store", reader)
        assert_clean_failure(refused, 1, "predates this version", "any load upgrades it")
    finally:
        with postgres_server.connect(database, autocommit=True) as db:
            db.execute(f"DROP OWNED BY {role}")
            db.execute(f"DROP ROLE {role}")


def test_a_store_lacking_more_than_columns_is_refused_until_a_load_on_either_backend(
    store_url, tmp_path
):
    """m005 adds an index (and on SQLite a table) besides its column: a reader refuses the
    store with the same reason and hint on both backends; a writer upgrades it."""
    _handbook(store_url, tmp_path)
    undo = ["DROP INDEX documents_locale", "ALTER TABLE documents DROP COLUMN locale"]
    if not store_url.startswith("postgresql://"):
        undo.append("DROP TABLE documents_fts")
    _back_to(store_url, "m005_document_fields", *undo)
    refused = run_cli("search", "zebra", "--store", store_url)
    assert_clean_failure(refused, 1, "predates this version", "any load upgrades it",
                         "docs-flatten index FILE.jsonl --corpus NAME --store")  # fmt: skip
    Store.open(store_url).close()  # a writer applies m005
    found = run_cli("search", "zebra", "--store", store_url)
    assert found.code == 0 and "docs/install.md" in found.stdout, found.stderr


def test_a_wrong_password_is_a_named_error_without_the_password(postgres_url, monkeypatch):
    monkeypatch.setenv("DOCS_FLATTEN_TEST_PG_PASSWORD", "wrong-pw-123")
    with pytest.raises(StoreError) as caught:
        Store.open(postgres_url)
    assert caught.value.reason == "store-unreachable"
    assert "wrong-pw-123" not in str(caught.value)


def test_a_second_writer_of_one_corpus_waits_then_fails_store_busy(postgres_url):
    with Store.open(postgres_url) as first, Store.open(postgres_url, busy_timeout=0.5) as second:
        with first.write("docs"):
            with pytest.raises(StoreError) as caught, second.write("docs"):
                pass
            assert caught.value.reason == "store-busy"
            with second.write("other"):  # another corpus writes alongside
                second.db.execute("INSERT INTO corpora (name) VALUES ('other')")
        with second.write("docs"):  # and the corpus is free once the first commits
            pass


def test_a_waiting_writer_of_one_corpus_goes_on_once_the_first_commits(postgres_url):
    with Store.open(postgres_url) as first, Store.open(postgres_url) as second:
        done = threading.Event()

        def wait_and_write() -> None:
            with second.write("docs"):
                second.db.execute("INSERT INTO corpora (name) VALUES ('second')")
            done.set()

        with first.write("docs"):
            first.db.execute("INSERT INTO corpora (name) VALUES ('first')")
            waiter = threading.Thread(target=wait_and_write)
            waiter.start()
            assert not done.wait(0.5)  # blocked on the corpus lock
        waiter.join(60)
        assert done.is_set()
        names = [r[0] for r in first.db.execute("SELECT name FROM corpora ORDER BY id")]
        assert names == ["first", "second"]


def test_the_cli_names_an_unreachable_store_and_a_password_in_the_url_without_echoing_it():
    from tests.conftest import assert_clean_failure, run_cli

    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    down = run_cli("search", "x", "--store", f"postgresql://app@127.0.0.1:{port}/docs")
    assert_clean_failure(down, 1, "cannot connect to the store", f"127.0.0.1:{port}/docs")
    leaked = run_cli("stats", "--store", "postgresql://app:hunter2@127.0.0.1:5/docs")
    assert_clean_failure(leaked, 2, "holds a password", "password_env=")
    assert "hunter2" not in leaked.stdout + leaked.stderr


def test_the_store_url_may_come_from_the_environment(postgres_url, tmp_path):
    from tests.conftest import jsonl, record, run_cli

    data = jsonl(tmp_path / "a.jsonl", [record("a.md", 1, "otters hold hands")])
    env = {"DOCS_FLATTEN_STORE": postgres_url}
    assert run_cli("index", data, "--corpus", "c", env=env).code == 0
    stats = run_cli("stats", env=env)
    assert (
        stats.code == 0 and postgres_url in stats.stdout and "corpus c: 1 documents" in stats.stdout
    )


@pytest.mark.parametrize("kind", ["vector", "halfvec"])
def test_hnsw_returns_the_whole_depth_and_fills_a_corpus_filtered_depth(
    postgres_url, tmp_path, monkeypatch, kind
):
    """Past the exact threshold, the HNSW index answers: `ef_search` is raised to the depth
    (pgvector's default 40 would cap a top-100 at 40 rows) and iterative scans fill a depth
    filtered to one corpus; the top 10 match the exact scan's. `?vectors=halfvec` builds the
    index on half-precision vectors."""
    from index.loader import load_files
    from index.postgres import vectors as pgvectors
    from index.vectors.backfill import embed_pending
    from index.vectors.client import EmbeddingConfig
    from tests.conftest import jsonl, record
    from tests.embedserver import EmbeddingServer, embed
    from tests.sites import serve

    monkeypatch.setattr(pgvectors, "EXACT_BELOW", 10)
    url = f"{postgres_url}&vectors={kind}"
    topics = ["kafka lag", "vacuum", "tls rotation", "helm rollback", "state lock", "eviction"]
    EmbeddingServer.reset()
    with serve(EmbeddingServer) as base, Store.open(url) as store:
        for corpus, count in (("big", 150), ("small", 60)):
            rows = [record(f"{corpus}/{i}.md", 1, f"{corpus} {topics[i % 6]} note {i}")
                    for i in range(count)]  # fmt: skip
            load_files(store, [jsonl(tmp_path / f"{corpus}.jsonl", rows)], corpus)
        embed_pending(store, EmbeddingConfig(base_url=base + "/v1", model="hash-64"))
        built = store.db.execute("SELECT pg_get_indexdef(to_regclass('vectors_hnsw'))")
        assert f"::{kind}(64)" in built.fetchone()[0]
        query = np.asarray(embed("helm rollback", 64), dtype=np.float32)
        indexed = pgvectors.PgVectors.load(store.db)
        top = indexed.nearest(query, 100)
        assert len(top) == 100
        small = indexed.nearest(query, 50, scope_filter(store.db, Scope(corpus="small")))
        keys = {k for (k,) in store.db.execute(
            "SELECT c.embed_key FROM chunks c JOIN documents d ON d.id = c.document_id "
            "JOIN corpora k ON k.id = d.corpus_id WHERE k.name = 'small'")}  # fmt: skip
        assert len(small) == 50 and {k for k, _ in small} <= keys
        exact = pgvectors.PgVectors(store.db, len(indexed.keys), 64).nearest(query, 10)  # no index
        # The graph's top 10 are the exact top 10 (a tie at the edge may swap one).
        assert len({k for k, _ in top[:10]} & {k for k, _ in exact}) >= 9


def test_under_ci_a_server_that_cannot_start_fails_the_postgres_tests(tmp_path):
    """CI=true: a Postgres test whose server cannot start errors and fails the run (a skipped
    store would be an untested store). A real pytest run: the run's outcome is the point."""
    import os
    import subprocess
    import sys

    from tests.conftest import PROJECT
    from tests.pgserver import BIN_ENV

    env = {**os.environ, "CI": "true", BIN_ENV: str(tmp_path)}  # a folder without Postgres
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-n", "0",
         "tests/test_postgres_store.py::test_a_reader_of_an_empty_database_is_told_to_build_the_index"],
        cwd=PROJECT, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert "1 error" in done.stdout, done.stdout[-2000:]
    assert done.returncode != 0


def test_outside_ci_a_server_that_cannot_start_skips_saying_why(tmp_path, monkeypatch):
    """Elsewhere the server the Postgres tests start (`started_postgres`, which their fixture
    calls) skips them, saying why: asked in this process, as the CI=true case above asks a
    whole run."""
    from tests.conftest import started_postgres
    from tests.pgserver import BIN_ENV

    monkeypatch.delenv("CI", raising=False)
    monkeypatch.setenv(BIN_ENV, str(tmp_path))  # a folder without Postgres
    with pytest.raises(pytest.skip.Exception, match="cannot start here: no PostgreSQL binaries"):
        started_postgres()
