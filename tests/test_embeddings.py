"""The embeddings client and `doctor`, against a real OpenAI-format server on 127.0.0.1."""

from __future__ import annotations

import json
import math

import pytest

from index.errors import ConfigError
from index.vectors.client import EmbeddingClient, EmbeddingConfig, EmbeddingError, doctor
from index.vectors.template import SliceText
from tests.conftest import assert_clean_failure, run_cli
from tests.embedserver import EmbeddingServer
from tests.sites import serve


@pytest.fixture
def server():
    EmbeddingServer.reset()
    with serve(EmbeddingServer) as base:
        yield base + "/v1"


def config(base: str, **extra: object) -> EmbeddingConfig:
    return EmbeddingConfig(base_url=base, model="test-embedder", **extra)  # type: ignore[arg-type]


def test_vectors_come_back_in_order_in_batches(server):
    texts = [f"text number {i}" for i in range(150)]
    with EmbeddingClient(config(server, batch_size=64)) as client:
        vectors = client.embed(texts)
    assert len(vectors) == 150 and all(len(v) == 64 for v in vectors)
    assert [len(r) for r in EmbeddingServer.requests] == [64, 64, 22]
    assert EmbeddingServer.requests[2][-1] == "text number 149"
    assert all(abs(math.hypot(*v) - 1) < 1e-9 for v in vectors)


def test_429_and_500_are_retried_after_retry_after(server):
    EmbeddingServer.fail_next = [(429, {"Retry-After": "0.2"}), (500, {})]
    with EmbeddingClient(config(server)) as client:
        assert len(client.embed(["a", "b"])) == 2
        assert client.timings[0].attempts == 3 and client.timings[0].seconds >= 0.2


def test_retries_are_bounded(server):
    EmbeddingServer.fail_next = [(503, {"Retry-After": "0"})] * 10
    with EmbeddingClient(config(server, retries=2)) as client, pytest.raises(EmbeddingError) as err:
        client.embed(["a"])
    assert err.value.reason == "http-503" and len(EmbeddingServer.requests) == 3


def test_a_slow_server_times_out_with_a_named_reason(server):
    EmbeddingServer.delay = 1.0
    with (
        EmbeddingClient(config(server, timeout=0.2)) as client,
        pytest.raises(EmbeddingError) as err,
    ):
        client.embed(["a"])
    assert err.value.reason == "timeout"


def test_an_unreachable_server_says_so():
    with (
        EmbeddingClient(config("http://127.0.0.1:9/v1")) as client,
        pytest.raises(EmbeddingError) as err,
    ):
        client.embed(["a"])
    assert err.value.reason == "unreachable"


def test_the_api_key_comes_from_the_named_variable(server, monkeypatch):
    EmbeddingServer.api_key = "k-123"
    monkeypatch.setenv("EMBED_KEY", "k-123")
    with EmbeddingClient(config(server, api_key_env="EMBED_KEY")) as client:
        assert len(client.embed(["a"])) == 1
    monkeypatch.delenv("EMBED_KEY")
    with pytest.raises(EmbeddingError) as err:
        EmbeddingClient(config(server, api_key_env="EMBED_KEY"))
    assert err.value.reason == "api-key-missing"


def test_config_is_checked_with_the_setting_named():
    assert EmbeddingConfig.from_config(None) is None
    with pytest.raises(ConfigError, match=r"embeddings\.model: required"):
        EmbeddingConfig.from_config({"base_url": "http://x"})
    with pytest.raises(ConfigError, match=r"embeddings\.batchsize: not a setting"):
        EmbeddingConfig.from_config({"base_url": "http://x", "model": "m", "batchsize": 3})
    with pytest.raises(ConfigError, match=r"embeddings\.batch_size"):
        EmbeddingConfig.from_config({"base_url": "http://x", "model": "m", "batch_size": 0})
    prefixed = EmbeddingConfig(base_url="x", model="m", document_prefix="title: {title} | text: ")
    assert prefixed.document_text(SliceText("body", "Intro")) == "title: Intro | text: body"


def test_doctor_reports_dimension_normalisation_latency_and_prefixes(server):
    report = doctor(EmbeddingConfig(base_url=server, model="google/embeddinggemma-300m"))
    assert report.reachable and report.dimension == 64 and report.normalized
    assert len(report.batch_latency_ms) == 3
    assert report.suggested_query_prefix == "task: search result | query: "


def test_cli_doctor_json_and_a_clear_failure(server, tmp_path):
    (tmp_path / "docs-flatten.yaml").write_text(
        f"embeddings:\n  base_url: {server}\n  model: test-embedder\n"
    )
    ok = run_cli("doctor", "--json", cwd=tmp_path)
    assert ok.code == 0 and json.loads(ok.stdout)["embeddings"]["dimension"] == 64
    down = run_cli("doctor", "--base-url", "http://127.0.0.1:9/v1", "--model", "m")
    assert_clean_failure(down, 1, "unreachable")
    none = run_cli("doctor", cwd=tmp_path / "..")
    assert none.code == 2 and "no embeddings configured" in none.stderr


def test_non_finite_vectors_are_a_bad_response(server):
    EmbeddingServer.embedder = lambda texts, dimension: [[float("nan")] * dimension for _ in texts]
    with EmbeddingClient(config(server)) as client, pytest.raises(EmbeddingError) as err:
        client.embed(["a"])
    assert err.value.reason == "bad-response" and "NaN" in err.value.message
