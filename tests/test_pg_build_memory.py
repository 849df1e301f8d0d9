"""The HNSW build's memory (maintenance_work_mem) follows the graph's size: the rule as a pure
function, and real builds on the test PostgreSQL server, where pgvector says (a NOTICE) when the
graph no longer fits the memory it was given."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from index.postgres import vectors as pgvectors
from index.postgres.url import StoreURLError, parse
from index.postgres.vectors import GRAPH_BYTES, MIN_BUILD, build_memory, server_cap
from index.store import Store

MB, GB = 1 << 20, 1 << 30


def test_the_graph_estimate_grows_with_the_vectors_count_and_dimension():
    small = build_memory(100_000, 384, half=False, cap=64 * GB)
    assert small.needed == int(100_000 * (384 * 4 + 8 + GRAPH_BYTES) * 1.25)  # ~270 MiB
    assert build_memory(200_000, 384, half=False, cap=64 * GB).needed == 2 * small.needed
    assert build_memory(100_000, 768, half=False, cap=64 * GB).needed > small.needed
    assert build_memory(100_000, 384, half=True, cap=64 * GB).needed < small.needed
    assert small.chosen == small.needed and small.setting == f"{-(-small.needed // 1024)}kB"


def test_the_build_memory_is_bounded_below_and_above():
    tiny = build_memory(1_000, 64, half=False, cap=GB)
    assert tiny.chosen == MIN_BUILD  # PostgreSQL's default at least
    huge = build_memory(10_000_000, 1536, half=False, cap=server_cap(128 * MB, 64 * MB))
    assert huge.chosen == GB  # an untuned server: 1 GB at most
    tuned = server_cap(16 * GB, 64 * MB)
    assert build_memory(10_000_000, 1536, half=False, cap=tuned).chosen == 16 * GB
    dba = build_memory(1_000, 64, half=False, cap=server_cap(128 * MB, 2 * GB), current=2 * GB)
    assert dba.chosen == 2 * GB  # a server tuned higher keeps its setting
    asked = build_memory(10_000_000, 1536, half=False, cap=300 * MB, current=2 * GB)
    assert asked.chosen == 300 * MB  # the URL's build_memory= wins over all


@settings(max_examples=300, deadline=None)
@given(count=st.integers(0, 50_000_000), dimension=st.integers(1, 4096), half=st.booleans(),
       cap=st.integers(MB, 64 * GB), current=st.integers(MB, 4 * GB))  # fmt: skip
def test_the_rule_fits_the_graph_when_the_cap_allows_and_never_passes_the_cap(
    count, dimension, half, cap, current
):
    memory = build_memory(count, dimension, half=half, cap=cap, current=current)
    assert memory.chosen <= cap
    assert memory.chosen >= min(cap, memory.needed, MIN_BUILD, current) or memory.chosen == cap
    if max(memory.needed, MIN_BUILD, current) <= cap:
        assert memory.chosen >= memory.needed
    more = build_memory(count + 1000, dimension, half=half, cap=cap, current=current)
    assert more.chosen >= memory.chosen


def test_build_memory_in_the_store_url_is_a_size():
    assert parse("postgresql://a@h/d?build_memory=2GB").build_memory == 2 * 10**9
    assert "build_memory" not in parse("postgresql://a@h/d?build_memory=512MiB").conninfo
    for bad in ("lots", "0", "10k"):
        with pytest.raises(StoreURLError) as caught:
            parse(f"postgresql://a@h/d?build_memory={bad}")
        assert caught.value.reason == "bad-store-url" and caught.value.exit_code == 2


def _store_with_vectors(url: str, tmp_path, count: int) -> Store:
    from index.loader import load_files
    from index.vectors.backfill import embed_pending
    from index.vectors.client import EmbeddingConfig
    from tests.conftest import jsonl, record
    from tests.embedserver import EmbeddingServer
    from tests.sites import serve

    EmbeddingServer.reset()
    store = Store.open(url)
    rows = [record(f"n/{i}.md", 1, f"note {i} about topic {i % 97} and {i % 13}")
            for i in range(count)]  # fmt: skip
    load_files(store, [jsonl(tmp_path / "n.jsonl", rows)], "n")
    with serve(EmbeddingServer) as base:  # below EXACT_BELOW: no index yet
        embed_pending(store, EmbeddingConfig(base_url=base + "/v1", model="hash-64"))
    return store


def _build(store: Store) -> tuple[str, list[str]]:
    """Build the index as a backfill does; (the maintenance_work_mem it ran with, NOTICEs)."""
    notices: list[str] = []
    store.db.raw.add_notice_handler(lambda d: notices.append(d.message_primary or ""))
    with store.write() as db:
        pgvectors.ensure_index(db)
        setting = db.execute("SELECT current_setting('maintenance_work_mem')").fetchone()[0]
    assert store.db.execute("SELECT to_regclass('vectors_hnsw')").fetchone()[0] is not None
    return setting, notices


def test_a_real_build_gets_the_rules_memory_and_its_graph_fits(postgres_url, tmp_path, monkeypatch):
    with _store_with_vectors(postgres_url, tmp_path, 2500) as store:
        monkeypatch.setattr(pgvectors, "EXACT_BELOW", 1000)
        shared, current = store.db.execute(
            "SELECT pg_size_bytes(current_setting('shared_buffers')), "
            "pg_size_bytes(current_setting('maintenance_work_mem'))").fetchone()  # fmt: skip
        expected = build_memory(2500, 64, half=False, cap=server_cap(shared, current),
                                current=current)  # fmt: skip
        setting, notices = _build(store)
    assert _bytes(setting) == -(-expected.chosen // 1024) * 1024
    assert not [n for n in notices if "no longer fits" in n]


def test_a_build_memory_in_the_url_caps_a_real_build(postgres_url, tmp_path, monkeypatch):
    # 1 MB is less than the 2,500 elements' graph (~2.4 MB): pgvector says it goes on on disk.
    with _store_with_vectors(postgres_url + "&build_memory=1MiB", tmp_path, 2500) as store:
        monkeypatch.setattr(pgvectors, "EXACT_BELOW", 1000)
        setting, notices = _build(store)
    assert _bytes(setting) == MB
    assert [n for n in notices if "no longer fits" in n]


def _bytes(setting: str) -> int:
    units = {"kB": 1024, "MB": MB, "GB": GB}
    for unit, size in units.items():
        if setting.endswith(unit):
            return int(setting.removesuffix(unit)) * size
    return int(setting)
