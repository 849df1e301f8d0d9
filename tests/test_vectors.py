"""The vector tier: index-time embedding, identity, fusion, degradation, against a real
OpenAI-format server on 127.0.0.1 (tests/embedserver.py) with failures injected."""

from __future__ import annotations

import importlib
import json
import sqlite3

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from index.documents import stats
from index.fusion import mmr, rrf
from index.loader import load_files, load_records
from index.results import Tier
from index.search import SearchOptions, search
from index.store import Store
from index.textindex import text_index
from index.vectors.backfill import embed_pending
from index.vectors.client import EmbeddingConfig, EmbeddingError, IdentityMismatch
from index.vectors.stage import VectorTier
from tests.conftest import (
    MINIFIED_BUNDLE,
    CliResult,
    assert_clean_failure,
    jsonl,
    lexical_engine,
    record,
    run_cli,
    write,
)
from tests.embedserver import EmbeddingServer
from tests.sites import serve

DOWN = "http://127.0.0.1:9/v1"  # the discard port: nothing listens there


@pytest.fixture
def server():
    EmbeddingServer.reset()
    with serve(EmbeddingServer) as base:
        yield base + "/v1"


def settings(base: str, **extra: object) -> EmbeddingConfig:
    return EmbeddingConfig(base_url=base, model="hash-64", **extra)  # type: ignore[arg-type]


def sent() -> list[str]:
    return [text for batch in EmbeddingServer.requests for text in batch]


def vector_count(store: Store) -> int:
    return store.db.execute("SELECT count(*) FROM vectors").fetchone()[0]


TOPICS = ["kafka consumer lag", "postgres vacuum", "tls certificate rotation", "helm rollback",
          "terraform state lock", "redis eviction", "grpc deadline",
          "oauth refresh token"]  # fmt: skip


def big_document(edited: int | None = None) -> list[dict]:
    """One file of 40 sections; `edited` changes one of them."""
    return [
        record("ops/runbook.md", n, f"Section {n} about {TOPICS[n % 8]} number {n}."
               + (" Edited today." if n == edited else ""), title=f"Runbook {n}",
               docTitle="Ops runbook", section=["Ops runbook", f"Runbook {n}"])
        for n in range(1, 41)
    ]  # fmt: skip


# -- index time -----------------------------------------------------------------------------


def test_only_new_text_is_embedded_after_an_edit_to_one_section(server, store, tmp_path):
    load_files(store, [jsonl(tmp_path / "a.jsonl", big_document())], "ops")
    first = embed_pending(store, settings(server, batch_size=16))
    assert (first.embedded, first.requests) == (40, 3)
    assert [len(batch) for batch in EmbeddingServer.requests] == [16, 16, 8]

    EmbeddingServer.requests = []
    report = load_files(store, [jsonl(tmp_path / "b.jsonl", big_document(edited=7))], "ops")
    assert report.updated == 1  # the whole document was replaced...
    second = embed_pending(store, settings(server, batch_size=16))
    # One sent, with its page title and heading first (the default document template).
    assert sent() == [
        f"Ops runbook > Runbook 7\n\nSection 7 about {TOPICS[7]} number 7. Edited today."
    ]
    assert (second.embedded, second.reused, second.collected) == (1, 39, 1)
    assert vector_count(store) == 40

    EmbeddingServer.requests = []
    assert embed_pending(store, settings(server)).requests == 0  # nothing pending: no request


def test_a_failure_keeps_what_was_embedded_and_the_next_run_resumes(server, store, tmp_path):
    load_files(store, [jsonl(tmp_path / "a.jsonl", big_document())], "ops")
    config = settings(server, batch_size=10, retries=1)
    EmbeddingServer.fail_at = {2: 500, 3: 500}  # the second batch fails, and its one retry
    with pytest.raises(EmbeddingError) as failed:
        embed_pending(store, config)
    assert failed.value.reason == "http-500"
    assert failed.value.report.embedded == 10 and vector_count(store) == 10
    EmbeddingServer.requests, EmbeddingServer.fail_at = [], {}
    resumed = embed_pending(store, config)
    assert resumed.embedded == 30 and vector_count(store) == 40
    texts = sent()
    assert len(texts) == len(set(texts)) == 30  # nothing embedded twice


def test_server_down_or_slow_at_index_time_fails_the_command_and_keeps_the_index(server, tmp_path):
    docs = jsonl(tmp_path / "a.jsonl", big_document())
    store = tmp_path / "store"
    load = ["index", docs, "--corpus", "a", "--store", store, "--model", "m"]
    down = run_cli(*load, "--base-url", DOWN, "--json")
    assert_clean_failure(down, 1, "unreachable", "127.0.0.1:9")
    said = json.loads(down.stdout)  # the load happened, and the JSON says what failed
    assert said["ok"] is False and said["error"]["reason"] == "unreachable"
    assert said["load"]["added"] == 1 and said["vectors"]["pending"] == 40  # none embedded
    found = run_cli("search", "kafka", "--store", store, "--tier", "lexical", "--json")
    assert found.code == 0 and json.loads(found.stdout)  # the lexical load is kept

    EmbeddingServer.delay = 1.0
    slow = run_cli(*load, "--base-url", server, "--config", _config(tmp_path, timeout=0.2))
    summary, failure = slow.stderr.split("\n", 1)  # the load's summary, then the embedding's error
    assert summary.startswith("a: 0 added, 0 updated, 1 unchanged") and slow.stdout == ""
    assert_clean_failure(CliResult(slow.code, slow.stdout, failure), 1,
                         "did not answer within 0.2 s")  # fmt: skip

    EmbeddingServer.delay = 0.0
    ok = run_cli(*load, "--base-url", server, "--json")
    assert ok.code == 0, ok.stderr
    assert json.loads(ok.stdout)["vectors"]["embedded"] == 40


def _config(tmp_path, **embeddings: object) -> str:
    path = tmp_path / "docs-flatten.yaml"
    lines = ["embeddings:"] + [f"  {k}: {json.dumps(v)}" for k, v in embeddings.items()]
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def test_429_with_retry_after_is_waited_out(server, store, tmp_path):
    load_files(store, [jsonl(tmp_path / "a.jsonl", big_document()[:5])], "ops")
    EmbeddingServer.fail_next = [(429, {"Retry-After": "0.3"})]
    report = embed_pending(store, settings(server))
    assert report.embedded == 5 and len(EmbeddingServer.requests) == 2


def test_a_rejected_input_is_found_by_splitting_and_skipped(server, store, tmp_path):
    docs = big_document()[:9]
    docs[5]["content"] = "POISON input the server refuses"
    load_files(store, [jsonl(tmp_path / "a.jsonl", docs)], "ops")
    EmbeddingServer.reject = "POISON"
    report = embed_pending(store, settings(server, batch_size=8))
    assert report.embedded == 8 and report.skipped == {"rejected": 1}
    assert report.rejected[0][0] == "ops/runbook.md#6" and "http-400" in report.rejected[0][1]
    assert vector_count(store) == 8
    EmbeddingServer.requests = []
    assert embed_pending(store, settings(server)).requests == 0  # not retried every run


def test_secrets_binary_and_minified_text_never_reach_the_embedder(server, store, tmp_path):
    minified = MINIFIED_BUNDLE * 80
    docs = [
        record("a.md", 1, "Plain prose about retries."),
        record("a.md", 2, "token [REDACTED:github-token] here", redactions=1),
        record("b.js", 1, minified),
        record("c.bin", 1, "\x01\x02\x03\x04 binary \x05\x06\x07\x08\x0b\x0e\x0f" * 20),
    ]
    load_files(store, [jsonl(tmp_path / "a.jsonl", docs)], "mixed")
    report = embed_pending(store, settings(server))
    assert sent() == ["a.md\n\nPlain prose about retries."]  # titled by its path
    assert report.skipped == {"binary": 1, "minified": 1, "redacted": 1}
    vectors = stats(store)["vectors"]
    assert (vectors["model"], vectors["dimension"], vectors["vectors"]) == ("hash-64", 64, 1)
    assert vectors["chunksSkipped"] == {"binary": 1, "minified": 1, "redacted": 1}
    assert (vectors["chunksWithVector"], vectors["chunksPending"]) == (1, 0)


def test_flattened_secrets_are_redacted_and_not_embedded(server, tmp_path):
    key = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    write(tmp_path / "docs", {"setup.md": f"# Setup\n\nUse the token {key} to log in.\n",
                              "other.md": "# Other\n\nNothing secret.\n"})  # fmt: skip
    result = run_cli("index", tmp_path / "docs", "--store", tmp_path / "s", "--base-url", server,
                     "--model", "m", "--json")  # fmt: skip
    assert result.code == 0, result.stderr
    assert json.loads(result.stdout)["vectors"]["skipped"] == {"redacted": 1}
    assert all(key not in text and "Setup" not in text for text in sent())


def test_a_changed_model_is_refused_before_anything_is_sent(server, tmp_path):
    docs = jsonl(tmp_path / "a.jsonl", big_document()[:4])
    store = tmp_path / "store"
    args = ["index", docs, "--corpus", "a", "--store", store, "--base-url", server]
    assert run_cli(*args, "--model", "model-a").code == 0
    EmbeddingServer.requests = []
    refused = run_cli(*args, "--model", "model-b")
    assert_clean_failure(refused, 2, "identity", "'model-a' -> 'model-b'")
    assert EmbeddingServer.requests == []  # refused before a single request
    command = refused.stderr.split("new settings: ")[1].strip()
    assert command.startswith("docs-flatten index ") and command.endswith(
        "--model model-b --reindex"
    )
    said = json.loads(run_cli(*args, "--model", "model-b", "--json").stdout)["error"]
    assert said["reason"] == "identity-mismatch" and said["hint"].endswith("--json --reindex")
    reindexed = run_cli(*args, "--model", "model-b", "--reindex", "--json")
    assert reindexed.code == 0, reindexed.stderr
    assert json.loads(reindexed.stdout)["vectors"]["model"] == "model-b"
    with Store.open(store, readonly=True) as opened:
        assert opened.db.execute("SELECT model FROM vector_identity").fetchone()[0] == "model-b"
        assert vector_count(opened) == 4


def test_a_server_answering_another_dimension_is_refused(server, store, tmp_path):
    load_files(store, [jsonl(tmp_path / "a.jsonl", big_document()[:4])], "ops")
    embed_pending(store, settings(server))
    load_files(store, [jsonl(tmp_path / "b.jsonl", big_document()[:6])], "ops")
    EmbeddingServer.dimension = 32
    with pytest.raises(IdentityMismatch) as refused:
        embed_pending(store, settings(server))
    assert "dimension 64 -> 32" in refused.value.message and refused.value.hint is None
    # The value at fault, for the caller to act on; the CLI names its flag (tests below).
    assert refused.value.reason == "identity-mismatch"
    assert (refused.value.stored.dimension, refused.value.wanted.dimension) == (64, 32)
    assert vector_count(store) == 4  # nothing of the other dimension stored
    # At query time the same server degrades the search instead of mixing dimensions.
    with VectorTier(store, settings(server)) as vectors:
        response = search(store, "kafka", vectors=vectors)
    assert response.tier.degraded and response.tier.name == Tier.LEXICAL
    assert "dimension 32" in response.tier.reason


def test_vectors_of_removed_documents_are_collected(server, store, tmp_path):
    docs = [*big_document()[:6], record("gone.md", 1, "Soon removed.")]
    load_files(store, [jsonl(tmp_path / "a.jsonl", docs)], "ops")
    embed_pending(store, settings(server))
    assert vector_count(store) == 7
    load_files(store, [jsonl(tmp_path / "b.jsonl", big_document()[:6])], "ops")
    assert embed_pending(store, settings(server)).collected == 1 and vector_count(store) == 6


def test_the_schema_upgrade_adds_vectors_to_a_lexical_store(tmp_path):
    path = tmp_path / "store" / "index.sqlite"
    with Store.open(tmp_path / "store") as store:
        store.db.execute("DELETE FROM schema_migrations WHERE name = 'm002_vectors'")
        store.db.execute("DROP TABLE vectors")
        store.db.execute("DROP TABLE vector_identity")
        store.db.execute("DROP INDEX chunks_embed_key")
        store.db.execute("ALTER TABLE chunks DROP COLUMN embed_key")
        store.db.execute("ALTER TABLE chunks DROP COLUMN embed_skip")
    with Store.open(tmp_path / "store"):
        pass
    names = {r[1] for r in sqlite3.connect(path).execute("PRAGMA table_info(chunks)")}
    assert {"embed_key", "embed_skip"} <= names


# -- query time -----------------------------------------------------------------------------


@pytest.fixture
def indexed(server, tmp_path, store_url):
    user = record("api/users.md", 1, "getUserName returns the display name of a user.",
                  title="getUserName", symbol="getUserName")  # fmt: skip
    docs = [*big_document(), user]
    store = store_url
    result = run_cli("index", jsonl(tmp_path / "a.jsonl", docs), "--store", store,
                     "--corpus", "ops", "--base-url", server, "--model", "hash-64")  # fmt: skip
    assert result.code == 0, result.stderr
    return store


def test_hybrid_search_fuses_and_shows_similarity_and_keyword_match(server, indexed):
    base = ["--store", indexed, "--base-url", server, "--model", "hash-64"]
    result = run_cli("search", "kafka consumer lag", "-k", "5", "--slices", *base, "--json")
    assert result.code == 0, result.stderr
    engine = lexical_engine(indexed)
    assert result.stderr.strip() == f"tier: hybrid ({engine} + vectors, RRF) - model=hash-64 dim=64"
    hits = json.loads(result.stdout)
    assert len(hits) == 5 and all("kafka consumer lag" in h["snippet"] for h in hits)
    for hit in hits:
        # > 0.3: the embedded text also holds the page title and heading, not the query's words
        assert hit["keywordMatch"] is True and 0.3 < hit["similarity"] <= 1.0001
        assert hit["fused"] == pytest.approx(
            sum(1 / (60 + r) for r in (hit["lexicalRank"], hit["vectorRank"]) if r), abs=1e-6
        )
    explained = run_cli("search", "kafka consumer lag", "-k", "2", "--rrf-k", "10", *base,
                        "--explain")  # fmt: skip
    assert "explain: lexical rank" in explained.stdout and "vector rank" in explained.stdout
    # An identifier still comes first: fusion keeps exact words precise.
    exact = run_cli("search", "getUserName", "-k", "3", *base, "--json")
    assert json.loads(exact.stdout)[0]["symbol"] == "getUserName"


def test_vector_tier_ranks_by_similarity_and_says_which_hits_share_words(server, indexed):
    base = ["--store", indexed, "--base-url", server, "--model", "hash-64"]
    result = run_cli("search", "postgres vacuum", "-k", "41", "--tier", "vector", *base, "--json")
    assert result.code == 0 and result.stderr.startswith("tier: vector - model=hash-64")
    hits = json.loads(result.stdout)
    similarities = [h["similarity"] for h in hits]
    assert similarities == sorted(similarities, reverse=True)
    assert {h["keywordMatch"] for h in hits} == {True, False}
    for hit in hits:
        assert hit["keywordMatch"] == ("postgres" in hit["snippet"])


def test_unreachable_server_at_query_time_degrades_to_lexical(indexed):
    result = run_cli("search", "kafka", "--store", indexed, "--base-url", DOWN, "--model",
                     "hash-64")  # fmt: skip
    assert result.code == 0, result.stderr
    first = result.stderr.splitlines()[0]
    assert first.startswith("tier: hybrid -> DEGRADED to lexical (embeddings unreachable: ")
    assert "1. ops/runbook.md (slice " in result.stdout
    forced = run_cli("search", "kafka", "--store", indexed, "--base-url", DOWN, "--model",
                     "hash-64", "--tier", "vector")  # fmt: skip
    assert_clean_failure(forced, 1, "vector search unavailable")
    lexical = run_cli("search", "kafka", "--store", indexed, "--tier", "lexical")
    engine = lexical_engine(indexed)
    assert lexical.stderr.startswith(f"tier: lexical ({engine}) - no embeddings configured")
    forced = run_cli("search", "kafka", "--store", indexed, "--base-url", DOWN, "--model",
                     "hash-64", "--tier", "lexical")  # fmt: skip
    assert forced.code == 0
    assert forced.stderr.startswith(f"tier: lexical ({engine}) - forced by --tier")
    no_vectors = run_cli("search", "kafka", "--store", indexed, "--rerank", "mmr")
    assert_clean_failure(no_vectors, 2, "--rerank: re-ranking by mmr needs vectors")
    no_config = run_cli("search", "kafka", "--store", indexed, "--tier", "hybrid")
    assert_clean_failure(no_config, 2, "needs embeddings")


def test_queries_file_and_eval_run_hybrid_with_queries_embedded_in_one_batch(
    server, indexed, tmp_path
):
    queries = jsonl(tmp_path / "q.jsonl", [{"id": str(n), "query": f"{TOPICS[n]} number"}
                                            for n in range(8)])  # fmt: skip
    qrels = tmp_path / "qrels.tsv"
    qrels.write_text("".join(f"{n}\tops/runbook.md\t1\n" for n in range(8)))
    base = ["--store", indexed, "--base-url", server, "--model", "hash-64"]
    EmbeddingServer.requests = []
    many = run_cli("search", "--queries", queries, "-k", "3", *base)
    assert many.code == 0, many.stderr
    lines = [json.loads(line) for line in many.stdout.splitlines()]
    assert len(lines) == 8 and all(line["tier"]["name"] == "hybrid" for line in lines)
    assert [len(batch) for batch in EmbeddingServer.requests] == [8]
    hybrid = run_cli("eval", "--queries", queries, "--qrels", qrels, *base, "--json")
    lexical = run_cli("eval", "--queries", queries, "--qrels", qrels, *base, "--tier", "lexical",
                      "--json")  # fmt: skip
    assert hybrid.stderr.startswith("tier: hybrid (") and lexical.stderr.startswith("tier: lex")
    assert json.loads(hybrid.stdout)["queries"] == json.loads(lexical.stdout)["queries"] == 8


def test_mmr_keeps_near_duplicates_out_of_the_top(server, store, tmp_path):
    copies = [record(f"mirror{n}.md", 1, "Rotate the signing key with keyctl rotate.")
              for n in range(4)]  # fmt: skip
    other = record("other.md", 1, "Rotate logs daily with logrotate and keep seven.")
    load_files(store, [jsonl(tmp_path / "a.jsonl", [*copies, other])], "d")
    embed_pending(store, settings(server))
    with VectorTier(store, settings(server)) as vectors:
        plain = search(store, "rotate the signing key", SearchOptions(top_k=2), vectors=vectors)
        spread = search(store, "rotate the signing key", SearchOptions(top_k=2, rerank="mmr"),
                        vectors=vectors)  # fmt: skip
    assert all(r.source.startswith("mirror") for r in plain.results)
    assert [r.source for r in spread.results][1] == "other.md"


# -- fusion functions -----------------------------------------------------------------------


def test_rrf_follows_the_formula():
    fused = dict(rrf([[1, 2, 3], [3, 1]], k=60))
    assert fused[1] == pytest.approx(1 / 61 + 1 / 62)
    assert fused[3] == pytest.approx(1 / 63 + 1 / 61)
    assert fused[2] == pytest.approx(1 / 62)
    assert [item for item, _ in rrf([[1, 2, 3], [3, 1]])] == [1, 3, 2]


@given(st.lists(st.lists(st.integers(0, 30), unique=True), max_size=4), st.integers(1, 100))
def test_rrf_keeps_every_item_once_in_score_order(rankings, k):
    fused = rrf(rankings, k)
    assert sorted(item for item, _ in fused) == sorted({i for r in rankings for i in r})
    scores = [score for _, score in fused]
    assert scores == sorted(scores, reverse=True)


@given(st.integers(1, 12), st.integers(1, 12), st.integers(0, 2**32 - 1))
def test_mmr_picks_distinct_candidates_and_lambda_one_is_relevance_order(n, top_k, seed):
    rng = np.random.default_rng(seed)
    relevance = sorted(rng.random(n).tolist(), reverse=True)
    rows = rng.normal(size=(n, 8)).astype(np.float32)
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    picked = mmr(relevance, rows, top_k)
    assert len(picked) == len(set(picked)) == min(n, top_k)
    assert mmr(relevance, rows, top_k, lam=1.0) == list(range(min(n, top_k)))


def test_chunks_once_skipped_by_a_heuristic_are_looked_at_again(server, store, tmp_path):
    load_files(store, [jsonl(tmp_path / "a.jsonl", big_document()[:3])], "ops")
    embed_pending(store, settings(server))
    # As an older version that took this prose for minified text would have left it:
    store.db.execute("UPDATE chunks SET embed_key = NULL, embed_skip = 'minified' WHERE id = 1")
    store.db.execute("DELETE FROM vectors WHERE key NOT IN (SELECT embed_key FROM chunks "
                     "WHERE embed_key IS NOT NULL)")  # fmt: skip
    report = embed_pending(store, settings(server))
    assert report.embedded == 1 and report.skipped == {}
    assert (
        store.db.execute("SELECT count(*) FROM chunks WHERE embed_skip IS NOT NULL").fetchone()[0]
        == 0
    )


def test_a_slow_server_at_query_time_degrades_and_is_not_asked_again_at_once(
    server, store, tmp_path
):
    load_files(store, [jsonl(tmp_path / "a.jsonl", big_document()[:6])], "ops")
    embed_pending(store, settings(server))
    EmbeddingServer.delay, EmbeddingServer.requests = 1.0, []
    with VectorTier(store, settings(server, timeout=0.2)) as vectors:
        first = search(store, "postgres vacuum", vectors=vectors)
        second = search(store, "redis eviction", vectors=vectors)
    assert first.tier.degraded and first.tier.reason.startswith("embeddings unreachable: ")
    assert "did not answer within 0.2 s" in first.tier.reason and first.results
    assert second.tier == first.tier and len(EmbeddingServer.requests) == 1


def test_pages_of_pending_chunks_send_each_distinct_text_once(server, store, tmp_path, monkeypatch):
    monkeypatch.setattr("index.vectors.backfill.PAGE", 7)
    docs = [record(f"copy{n}.md", 1, f"Shared text {n % 5}.", title="Copy") for n in range(30)]
    load_files(store, [jsonl(tmp_path / "a.jsonl", docs)], "d")
    seen: list[tuple[int, int]] = []
    report = embed_pending(store, settings(server, batch_size=3),
                          progress=lambda done, total: seen.append((done, total)))  # fmt: skip
    assert sorted(sent()) == [f"Copy\n\nShared text {n}." for n in range(5)]
    assert (report.embedded, report.reused) == (5, 25)
    assert seen[-1] == (30, 30) and len(seen) == 5  # pages of 7, 7, 7, 7, 2
    assert (
        store.db.execute("SELECT count(*) FROM chunks WHERE embed_key IS NULL").fetchone()[0] == 0
    )


def test_vectors_that_are_not_normalised_still_score_by_cosine(server, store, tmp_path):
    from tests.embedserver import embed

    EmbeddingServer.embedder = lambda texts, dim: [[7.0 * x for x in embed(t, dim)] for t in texts]
    load_files(store, [jsonl(tmp_path / "a.jsonl", big_document()[:8])], "ops")
    config = settings(server, document_template="{text}")  # the content alone, to compare
    embed_pending(store, config)
    with VectorTier(store, config) as vectors:
        hits = search(store, "helm rollback", SearchOptions(top_k=8, tier="vector"),
                      vectors=vectors).results  # fmt: skip
    for hit in hits:
        text = text_index(store.db).chunk_texts([hit.chunk_id])[hit.chunk_id]
        expected = float(np.dot(embed(text, 64), embed("helm rollback", 64)))
        assert hit.similarity == pytest.approx(expected, abs=1e-5)


def test_a_path_filter_keeps_the_vector_stage_full_depth_within_it(server, store):
    # 60 pages outside the path say what the query says; one inside says nothing like it. The
    # vector stage must look within the path, not drop its 50 nearest overall afterwards.
    outside = [record(f"blog/post{n}.md", 1, f"kafka consumer lag number {n}") for n in range(60)]
    inside = record("guide/ops.md", 1, "postgres vacuum freezes old rows", title="Vacuum")
    load_records(store, [*outside, inside], "ops")
    config = settings(server)
    embed_pending(store, config)
    with VectorTier(store, config) as tier:
        hits = search(store, "kafka consumer lag", SearchOptions(tier=Tier.VECTOR,
                      paths=("guide/",)), vectors=tier).results  # fmt: skip
    assert [(h.source, h.vector_rank) for h in hits] == [("guide/ops.md", 1)]


def test_a_hybrid_query_looks_up_its_candidates_pages_once(server, indexed, monkeypatch):
    # The lexical and the fused rankings both score slices as pages: the lexical candidates'
    # pages (looked up beside the vector scoring) serve the fused ranking too, which looks up
    # only the pages of the vector stage's other candidates.
    ranking = importlib.import_module("index.ranking")
    search_module = importlib.import_module("index.search")  # `index.search` is the function
    looked_up: list[list[int]] = []
    real = ranking.locate

    def locate(db, chunk_ids):
        if chunk_ids:
            looked_up.append(list(chunk_ids))
        return real(db, chunk_ids)

    for module in (ranking, search_module):  # the search's own call, and the scoring's
        monkeypatch.setattr(module, "locate", locate)
    with Store.open(indexed, readonly=True) as opened, VectorTier(opened, settings(server)) as tier:
        hits = search(opened, "kafka consumer lag", SearchOptions(top_k=5), vectors=tier)
    assert hits.tier.name == Tier.HYBRID and hits.results
    every = [chunk_id for ids in looked_up for chunk_id in ids]
    assert every and len(every) == len(set(every)) and len(looked_up) <= 2


def test_the_vector_product_runs_on_one_blas_thread_with_the_same_scores():
    """The product is memory-bound: OpenBLAS's helper threads would only spin on the core the
    lexical stage runs on (index.vectors.blas). One thread inside, the count put back after,
    and every score bit-for-bit what the multi-threaded product gives."""
    from index.vectors import blas
    from index.vectors.storage import Matrix, unit

    rng = np.random.default_rng(3)
    rows = unit(rng.standard_normal((20_000, 96)).astype(np.float32))  # past OpenBLAS's cut-off
    query = unit(rng.standard_normal(96).astype(np.float32))
    threads = blas._openblas()
    if threads is None:
        pytest.skip("numpy's BLAS here is not OpenBLAS")
    seen = []

    class Counted(np.ndarray):  # the matrix, saying how many BLAS threads its products had
        def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
            seen.append(threads[0]())
            plain = [np.asarray(i) for i in inputs]
            kwargs["out"] = tuple(np.asarray(o) for o in kwargs.get("out", ()))
            return getattr(ufunc, method)(*plain, **{k: v for k, v in kwargs.items() if v})

    matrix = Matrix([str(i) for i in range(len(rows))], rows.view(Counted), {})
    before = threads[0]()
    with blas.one_thread():
        assert threads[0]() == 1
        with blas.one_thread():  # nested (or another thread's at once): still one, then back
            assert threads[0]() == 1
        assert threads[0]() == 1
    assert threads[0]() == before
    with blas.one_thread():  # the same bits on any number of cores (index.vectors.blas)
        scores = rows @ query
    best = np.lexsort((np.arange(len(scores)), -scores))[:50]
    assert matrix.nearest(query, 50) == [(str(i), float(scores[i])) for i in best]
    assert seen and set(seen) == {1} and threads[0]() == before


def test_a_product_shared_by_two_threads_scores_every_row_as_one_product_does():
    """The query's thread joins the worker's product once its lexical stage is done
    (storage.Product): whichever thread computes a block, each score is bit-for-bit the same."""
    import threading

    from index.vectors import blas
    from index.vectors.storage import Product, unit

    rng = np.random.default_rng(4)
    rows = unit(rng.standard_normal((3 * Product.BLOCK_ROWS + 17, 64)).astype(np.float32))
    for n in range(6):  # and a float64 query scores in float64, as the plain product does
        query = unit(rng.standard_normal(64).astype(np.float32))
        query = query.astype(np.float64) if n == 5 else query
        product = Product(rows, query)
        helper = threading.Thread(target=product.share)
        helper.start()
        scores = product.result()
        helper.join()
        with blas.one_thread():
            assert scores.tobytes() == (rows @ query).tobytes()
