"""The embeddings client and `doctor`, against a real OpenAI-format server on 127.0.0.1."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from index.errors import ConfigError
from index.vectors.client import (
    EmbeddingClient,
    EmbeddingConfig,
    EmbeddingError,
    answered_vectors,
    doctor,
)
from index.vectors.template import SliceText
from tests.conftest import assert_clean_failure, run_cli
from tests.embedserver import EmbeddingServer, embed
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


@pytest.mark.parametrize(
    ("setting", "value", "named"),
    [("timeout", math.nan, "embeddings.timeout: expected a finite number of seconds, not nan"),
     ("timeout", math.inf, "embeddings.timeout: expected a finite number of seconds, not inf"),
     ("timeout", -math.inf, "embeddings.timeout: expected a finite number"),
     ("timeout", -5, "embeddings.timeout: expected seconds, at least 0.1, not -5"),
     ("timeout", 0, "embeddings.timeout: expected seconds, at least 0.1, not 0"),
     ("timeout", True, "embeddings.timeout: expected seconds, at least 0.1, not True"),
     ("timeout", "30", "embeddings.timeout: expected seconds, at least 0.1, not '30'"),
     ("max_retry_after", math.nan, "embeddings.max_retry_after: expected a finite number"),
     ("max_retry_after", -1.0, "embeddings.max_retry_after: expected seconds, at least 0"),
     ("retries", math.nan, "embeddings.retries: expected a whole number from 0, not nan"),
     ("retries", -1, "embeddings.retries: expected a whole number from 0, not -1"),
     ("batch_size", True, "embeddings.batch_size: expected a whole number from 1, not True"),
     ("batch_size", 0, "embeddings.batch_size: expected a whole number from 1, not 0")],
)  # fmt: skip
def test_a_number_setting_out_of_bounds_is_refused_naming_it(setting, value, named):
    """`timeout: .nan` passed (nan compares false with any bound) and the client waited on it;
    the numbers are held to the bounds the config's other seconds and counts take."""
    with pytest.raises(ConfigError) as err:
        EmbeddingConfig.from_config({"base_url": "http://x", "model": "m", setting: value})
    assert str(err.value) == named or str(err.value).startswith(named), str(err.value)
    assert err.value.reason == "bad-config"


@pytest.mark.parametrize("value", [".nan", ".inf", "-.inf", "-1"])
def test_a_timeout_yaml_cannot_hold_is_refused_by_config_and_index(tmp_path, value):
    (tmp_path / "docs-flatten.yaml").write_text(
        f"embeddings:\n  base_url: http://127.0.0.1:9/v1\n  model: m\n  timeout: {value}\n"
    )
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("# A\n\nalpha\n")
    for args in (["config"], ["index", "docs", "--store", "store"]):
        assert_clean_failure(run_cli(*args, cwd=tmp_path), 2, "embeddings.timeout: expected")
    assert not (tmp_path / "store").exists()


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


def _indexes(*values: object):
    def reshape(data: list[dict]) -> list[dict]:
        return [{**item, "index": value} for item, value in zip(data, values, strict=True)]

    return reshape


def _without_index(data: list[dict]) -> list[dict]:
    return [{k: v for k, v in item.items() if k != "index"} for item in data]


# (how the server's answer is changed, words the error must hold)
BAD_ANSWERS = [
    (_indexes(0, 0, 2), "index 0 comes 2 times"),
    (_indexes(0, 2, 2), "index 2 comes 2 times"),
    (_indexes(0, 1, 3), "index 3 is not one of 0..2"),
    (_indexes(-1, 1, 2), "index -1 is not one of 0..2"),
    (_indexes(0, True, 2), "index true is not one of 0..2"),
    (_indexes(0, "1", 2), 'index "1" is not one of 0..2'),
    (lambda data: [data[0], _without_index(data)[1], data[2]], "index null is not one of"),
    (lambda data: data[:2], "asked for 3 vectors, got 2"),
    (lambda data: [*data, data[0]], "asked for 3 vectors, got 4"),
    (lambda data: [data[0], {**data[1], "embedding": data[1]["embedding"][:-1]}, data[2]],
     "different dimensions (63, 64)"),
    (lambda data: [{**data[0], "embedding": []}, data[1], data[2]], "not a list of numbers"),
    (lambda data: [{**data[0], "embedding": ["0.5"] * 64}, data[1], data[2]],
     "something other than numbers"),
    (lambda data: [{**data[0], "embedding": [True] * 64}, data[1], data[2]],
     "something other than numbers"),
    (lambda data: [data[0], {**data[1], "embedding": [1e309] * 64}, data[2]], "infinite"),
    (lambda data: {"0": data[0]}, "not a list of objects"),
]  # fmt: skip


@pytest.mark.parametrize(("reshape", "words"), BAD_ANSWERS)
def test_an_answer_that_would_misplace_or_garble_vectors_is_a_named_error(server, reshape, words):
    EmbeddingServer.reshape = reshape
    with EmbeddingClient(config(server)) as client, pytest.raises(EmbeddingError) as err:
        client.embed(["alpha", "beta", "gamma"])
    assert err.value.reason == "bad-response"
    assert "answered badly" in err.value.message and words in err.value.message


def test_vectors_are_placed_by_index_whatever_the_answers_order(server):
    EmbeddingServer.reshape = lambda data: list(reversed(data))
    texts = ["alpha", "beta", "gamma"]
    with EmbeddingClient(config(server)) as client:
        assert client.embed(texts) == [embed(t, 64) for t in texts]
    EmbeddingServer.reshape = _without_index  # no index at all: the answer's order
    with EmbeddingClient(config(server)) as client:
        assert client.embed(texts) == [embed(t, 64) for t in texts]


@settings(max_examples=200, deadline=None)
@given(indexes=st.lists(st.integers(min_value=-2, max_value=6), min_size=4, max_size=4))
def test_only_a_permutation_of_the_batch_is_taken(indexes):
    data = [{"index": i, "embedding": [float(n), 1.0]} for n, i in enumerate(indexes)]
    if sorted(indexes) == [0, 1, 2, 3]:
        vectors = answered_vectors(data, 4)
        assert all(vectors[i] == [float(n), 1.0] for n, i in enumerate(indexes))
    else:
        with pytest.raises(EmbeddingError) as err:
            answered_vectors(data, 4)
        assert err.value.reason == "bad-response"
