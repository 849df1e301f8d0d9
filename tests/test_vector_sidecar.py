"""The vectors' memory-mapped sidecar: written beside the store, reused while it matches the
store, rebuilt when the store's vectors or identity change or the file is damaged, skipped when
it cannot be written; a reader never maps a torn file. Against a real store and the tests' real
embeddings server on 127.0.0.1."""

from __future__ import annotations

import importlib
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

from index.loader import load_files
from index.search import SearchOptions, search
from index.store import Store
from index.vectors.backfill import embed_pending
from index.vectors.client import EmbeddingConfig
from index.vectors.sidecar import (
    SIDECAR_NAME,
    STALE_SECONDS,
    load_matrix,
    read_sidecar,
    remove_stale_temporaries,
    sidecar_path,
    store_state,
    write_sidecar,
)
from index.vectors.stage import VectorTier
from index.vectors.storage import Matrix, Product, unit
from tests.conftest import jsonl, record
from tests.embedserver import EmbeddingServer
from tests.sites import serve

WORDS = ["kafka", "vacuum", "helm", "rollback", "tls", "redis", "grpc", "oauth", "lock", "lag"]


@pytest.fixture
def server():
    EmbeddingServer.reset()
    with serve(EmbeddingServer) as base:
        yield base + "/v1"


def settings(base: str, model: str = "hash-64") -> EmbeddingConfig:
    return EmbeddingConfig(base_url=base, model=model)


def documents(count: int, edited: int | None = None) -> list[dict]:
    return [
        record(f"docs/{n}.md", 1, f"{WORDS[n % 10]} {WORDS[n * 7 % 10]} note {n}"
               + (" edited" if n == edited else ""))
        for n in range(count)
    ]  # fmt: skip


@pytest.fixture
def embedded(server, tmp_path):
    """A store of 60 slices, embedded (which leaves the sidecar written)."""
    with Store.open(tmp_path / "store") as store:
        load_files(store, [jsonl(tmp_path / "a.jsonl", documents(60))], "docs")
        embed_pending(store, settings(server))
        yield store


def from_sqlite(store: Store) -> Matrix:
    return Matrix.load(store.db)


def assert_same(matrix: Matrix, expected: Matrix) -> None:
    assert matrix.keys == expected.keys
    assert np.array_equal(matrix.vectors, expected.vectors)
    assert matrix.row_of == expected.row_of


def fresh_matrix(store: Store) -> Matrix:
    return load_matrix(store.db, store.path)


def test_embedding_writes_the_sidecar_and_a_new_reader_maps_it(embedded, server):
    path = sidecar_path(embedded.path)
    assert path.name == SIDECAR_NAME and path.exists()
    with Store.open(embedded.path.parent, readonly=True) as reader:
        matrix = VectorTier(reader, settings(server)).matrix()
        assert not matrix.vectors.flags.owndata  # mapped from the file, not read from SQLite
        assert_same(matrix, from_sqlite(reader))


def test_a_matching_sidecar_is_reused_not_rewritten(embedded):
    path = sidecar_path(embedded.path)
    before = path.stat()
    fresh_matrix(embedded)
    fresh_matrix(embedded)
    after = path.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)


def test_a_missing_sidecar_is_written_by_the_first_query(embedded):
    path = sidecar_path(embedded.path)
    path.unlink()
    assert_same(fresh_matrix(embedded), from_sqlite(embedded))
    assert path.exists()
    assert not fresh_matrix(embedded).vectors.flags.owndata


def test_hybrid_results_are_the_same_from_the_sidecar_and_from_sqlite(embedded, server):
    queries = ["kafka lag", "helm rollback note", "tls", "oauth lock 7"]
    with VectorTier(embedded, settings(server)) as mapped:
        with_sidecar = [
            search(embedded, q, SearchOptions(top_k=10), vectors=mapped) for q in queries
        ]
    sidecar_path(embedded.path).unlink()
    os.mkdir(sidecar_path(embedded.path))  # in the way: nothing can be mapped or written
    with VectorTier(embedded, settings(server)) as unmapped:
        without = [search(embedded, q, SearchOptions(), vectors=unmapped) for q in queries]
        assert unmapped.matrix().vectors.flags.owndata
    for one, other in zip(with_sidecar, without, strict=True):
        assert [(h.chunk_id, h.score, h.similarity) for h in one.results] == [
            (h.chunk_id, h.score, h.similarity) for h in other.results
        ]


def test_a_load_that_changes_vectors_rebuilds_the_sidecar(embedded, server, tmp_path):
    path = sidecar_path(embedded.path)
    before = path.stat().st_ino
    load_files(embedded, [jsonl(tmp_path / "b.jsonl", documents(60, edited=3))], "docs")
    embed_pending(embedded, settings(server))
    assert path.stat().st_ino != before
    assert_same(fresh_matrix(embedded), from_sqlite(embedded))


def test_a_reader_sees_the_writers_new_vectors(embedded, server, tmp_path):
    with Store.open(embedded.path.parent, readonly=True) as reader:
        tier = VectorTier(reader, settings(server))
        assert len(tier.matrix().keys) == 60
        load_files(embedded, [jsonl(tmp_path / "b.jsonl", documents(70))], "docs")
        embed_pending(embedded, settings(server))
        assert_same(tier.matrix(), from_sqlite(reader))
        assert len(tier.matrix().keys) == 70


def test_an_identity_change_rebuilds_the_sidecar(embedded, server):
    path = sidecar_path(embedded.path)
    _, state = store_state(embedded.db)
    before = path.stat().st_ino
    embed_pending(embedded, settings(server, model="hash-64-renamed"), reindex=True)
    assert store_state(embedded.db)[1] != state
    assert path.stat().st_ino != before
    assert_same(fresh_matrix(embedded), from_sqlite(embedded))


def test_a_sidecar_of_another_dimension_is_rebuilt(embedded, server):
    EmbeddingServer.dimension = 32
    embed_pending(embedded, settings(server, model="hash-32"), reindex=True)
    matrix = fresh_matrix(embedded)
    assert matrix.dimension == 32
    assert_same(matrix, from_sqlite(embedded))


def damage_flip(path):
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x40  # one bit in the middle of the rows
    path.write_bytes(bytes(data))


def damage_swap_rows(path):
    data = bytearray(path.read_bytes())
    row = 64 * 4
    start = 4096  # the first row
    first, second = data[start : start + row], data[start + row : start + 2 * row]
    data[start : start + 2 * row] = second + first
    path.write_bytes(bytes(data))


def damage_truncate(path):
    with open(path, "r+b") as handle:
        handle.truncate(path.stat().st_size - 100)


def damage_empty(path):
    path.write_bytes(b"")


def damage_garbage(path):
    path.write_bytes(os.urandom(9000))


def damage_key(path):
    data = path.read_bytes()
    path.write_bytes(data[:-1] + (b"0" if data[-1:] != b"0" else b"1"))


def damage_header(path):
    data = bytearray(path.read_bytes())
    data[20] ^= 0x01  # inside the header's JSON
    path.write_bytes(bytes(data))


@pytest.mark.parametrize(
    "damage",
    [
        damage_flip,
        damage_swap_rows,
        damage_truncate,
        damage_empty,
        damage_garbage,
        damage_key,
        damage_header,
    ],
)
def test_a_damaged_sidecar_is_detected_and_rebuilt(embedded, damage):
    path = sidecar_path(embedded.path)
    damage(path)
    assert_same(fresh_matrix(embedded), from_sqlite(embedded))
    assert not fresh_matrix(embedded).vectors.flags.owndata  # whole again, and mapped


def test_a_sidecar_copied_from_another_store_is_not_used(embedded, server, tmp_path):
    with Store.open(tmp_path / "other") as other:
        load_files(other, [jsonl(tmp_path / "o.jsonl", documents(60, edited=5))], "docs")
        embed_pending(other, settings(server))
        sidecar_path(other.path).write_bytes(sidecar_path(embedded.path).read_bytes())
        assert_same(fresh_matrix(other), from_sqlite(other))


def test_vectors_changed_behind_the_same_keys_are_noticed(embedded):
    """A re-embedding under the same identity and keys (another server build, say) changes
    every vector: the sampled rows differ from the store's."""
    with embedded.write() as db:
        rows = db.execute("SELECT id, embedding FROM vectors").fetchall()
        db.executemany(
            "UPDATE vectors SET embedding = ? WHERE id = ?",
            [(unit(-np.frombuffer(blob, "<f4")).tobytes(), id_) for id_, blob in rows],
        )
    assert_same(fresh_matrix(embedded), from_sqlite(embedded))


def test_a_sidecar_that_cannot_be_written_falls_back_to_sqlite(embedded):
    path = sidecar_path(embedded.path)
    path.unlink()
    os.mkdir(path)  # as a read-only folder would: nothing can be written there
    assert_same(fresh_matrix(embedded), from_sqlite(embedded))
    assert fresh_matrix(embedded).vectors.flags.owndata
    leftovers = [p.name for p in path.parent.iterdir() if p.name.endswith(".tmp")]
    assert leftovers == []


def test_a_reader_never_maps_a_torn_sidecar_while_a_writer_replaces_it(tmp_path):
    rng = np.random.default_rng(7)
    states = {}
    for name in ("one", "two"):
        vectors = unit(rng.standard_normal((3000, 96)).astype("<f4"))
        keys = [f"{name}-{i:05}" for i in range(3000)]
        states[name] = Matrix(keys, vectors, {k: i for i, k in enumerate(keys)})
    path = tmp_path / SIDECAR_NAME
    done = threading.Event()
    failures: list[str] = []

    # The rows a store would hold for both states (read_sidecar compares a few with them).
    store = sqlite3.connect(":memory:")
    store.execute("CREATE TABLE vectors (key TEXT PRIMARY KEY, embedding BLOB)")
    for matrix in states.values():
        store.executemany(
            "INSERT INTO vectors VALUES (?, ?)",
            [(key, matrix.vectors[i].tobytes()) for i, key in enumerate(matrix.keys)],
        )

    def writer() -> None:
        try:
            for i in range(60):
                name = "one" if i % 2 else "two"
                assert write_sidecar(path, name, states[name])
        finally:
            done.set()

    thread = threading.Thread(target=writer)
    thread.start()
    reads = 0
    while not done.is_set() or reads < 20:
        for name, matrix in states.items():
            got = read_sidecar(path, len(matrix.keys), name, store)
            reads += 1
            if got is not None and (
                got.keys != matrix.keys or not np.array_equal(got.vectors, matrix.vectors)
            ):
                failures.append(name)
    thread.join()
    assert failures == []
    assert [p.name for p in tmp_path.iterdir()] == [SIDECAR_NAME]


def test_the_lexical_stage_alongside_returns_its_result_or_its_error(embedded, server):
    with VectorTier(embedded, settings(server)) as tier:
        alone = tier.nearest_chunks("kafka lag", 10, None)
        vector, hits, other = tier.nearest_chunks_alongside("kafka lag", 10, None, lambda: "done")
        assert (np.array_equal(vector, alone[0]), hits, other) == (True, alone[1], "done")

        def failing() -> None:
            raise ValueError("the lexical stage failed")

        with pytest.raises(ValueError, match="lexical stage failed"):
            tier.nearest_chunks_alongside("kafka lag", 10, None, failing)
        assert tier.nearest_chunks("kafka lag", 10, None)[1] == alone[1]


def lexical_stage_started(monkeypatch) -> threading.Event:
    """Set once a search's lexical stage starts."""
    search_module = importlib.import_module("index.search")  # `index.search` is the function
    started = threading.Event()
    lexical_stage = search_module._lexical_stage

    def lexical(*args, **kwargs):
        started.set()
        return lexical_stage(*args, **kwargs)

    monkeypatch.setattr(search_module, "_lexical_stage", lexical)
    return started


def test_a_hybrid_search_runs_its_lexical_stage_while_the_vectors_are_scored(
    embedded, server, monkeypatch
):
    lexical_started = lexical_stage_started(monkeypatch)
    scoring = Product.share

    def share(self):
        # Scoring waits (bounded) for the lexical stage: run one after the other, it never starts.
        overlapped.append(lexical_started.wait(timeout=10))
        return scoring(self)

    overlapped: list[bool] = []
    monkeypatch.setattr(Product, "share", share)
    with VectorTier(embedded, settings(server)) as tier:
        response = search(embedded, "kafka lag", SearchOptions(top_k=5), vectors=tier)
    assert response.tier.name == "hybrid" and response.results
    assert overlapped[:1] == [True]


_KILLED_MID_WRITE = """
import os, sys, time
from pathlib import Path
from index.store import Store
from index.vectors.sidecar import load_matrix, sidecar_path

def stuck(*args):  # the file is written, the rename not yet done: where a kill leaves it
    print("written", flush=True)
    time.sleep(600)

os.replace = stuck
with Store.open(sys.argv[1]) as store:
    sidecar_path(store.path).unlink()
    load_matrix(store.db, store.path)
"""


def temporaries(folder) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


def test_a_temporary_file_left_by_a_writer_killed_mid_write_is_removed_by_the_next_open(
    embedded,
):
    folder = embedded.path.parent
    writer = subprocess.Popen([sys.executable, "-c", _KILLED_MID_WRITE, str(folder)],
                              stdout=subprocess.PIPE, text=True)  # fmt: skip
    try:
        assert writer.stdout is not None and writer.stdout.readline() == "written\n"
        assert len(temporaries(folder)) == 1
    finally:
        writer.send_signal(signal.SIGKILL)
        writer.wait(timeout=30)
    assert_same(fresh_matrix(embedded), from_sqlite(embedded))
    assert temporaries(folder) == [] and sidecar_path(embedded.path).exists()


def test_only_dead_or_abandoned_writers_temporary_files_are_removed(tmp_path):
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait(timeout=30)  # reaped: its pid runs no more
    alive = os.getpid()
    names = {
        f".{SIDECAR_NAME}-{alive}-k2x9.tmp": "kept",  # a writer at work
        f".{SIDECAR_NAME}-{gone.pid}-a81c.tmp": "removed",  # its writer was killed
        f".{SIDECAR_NAME}-{alive}-old1.tmp": "removed",  # nobody wrote to it for too long
        f".{SIDECAR_NAME}-q7rzw3.tmp": "kept",  # an older version's name: no pid, recent
        f".{SIDECAR_NAME}-zzxq01.tmp.old": "kept",  # not a temporary file of ours
        "notes.tmp": "kept",
    }
    for name in names:
        (tmp_path / name).write_bytes(b"partial")
    long_ago = time.time() - STALE_SECONDS - 60
    for name in (
        f".{SIDECAR_NAME}-{alive}-old1.tmp",
        "notes.tmp",
        f".{SIDECAR_NAME}-zzxq01.tmp.old",
    ):
        os.utime(tmp_path / name, (long_ago, long_ago))
    removed = remove_stale_temporaries(tmp_path)
    assert sorted(p.name for p in removed) == sorted(
        n for n, fate in names.items() if fate == "removed"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        n for n, fate in names.items() if fate == "kept"
    )


def test_a_hybrid_search_runs_its_lexical_half_while_the_query_is_embedded(
    embedded, server, monkeypatch
):
    # The embeddings server answers only once the lexical stage has started (bounded): run one
    # after the other, the query's vector would come first and the wait would time out.
    from tests.embedserver import embed

    lexical_started = lexical_stage_started(monkeypatch)
    waited: list[bool] = []

    def embedder(texts, dimension):
        waited.append(lexical_started.wait(timeout=10))
        return [embed(text, dimension) for text in texts]

    EmbeddingServer.embedder = embedder
    with VectorTier(embedded, settings(server)) as tier:
        response = search(embedded, "kafka lag", SearchOptions(top_k=5), vectors=tier)
    assert response.tier.name == "hybrid" and response.results
    assert waited == [True]
