"""An OpenAI-compatible embeddings client: `POST {base_url}/embeddings`, in batches.

Ollama, LM Studio, llama.cpp, vLLM, TEI and OpenAI itself speak this format. The API key is read
from the environment variable the config names; it is sent as a bearer token and never printed,
logged or stored. 429 and 5xx answers are retried after their Retry-After (or with backoff),
within limits; anything else fails with a named reason.
"""

from __future__ import annotations

import html
import json
import math
import os
import re
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from flatten.config import seconds_at_least, shown, whole_number
from flatten.errors import FlattenError
from flatten.retry import retry_after_seconds
from index.errors import ConfigError
from index.text import safe_display
from index.vectors.template import DEFAULT_DOCUMENT_TEMPLATE, SliceText, render, template_problem

if TYPE_CHECKING:  # httpx loads with the first client: the CLI starts without it, as for crawls
    import httpx

# Models known to want task prefixes, and the ones their authors recommend.
KNOWN_PREFIXES = {
    "embeddinggemma": ("task: search result | query: ", "title: {title} | text: "),
    "nomic-embed": ("search_query: ", "search_document: "),
    "e5": ("query: ", "passage: "),
}


class EmbeddingError(FlattenError):
    """The embeddings server could not be used: unreachable, too slow, or a bad answer."""

    report: Any = None  # what an index-time run had done before it failed
    status: int | None = None  # the HTTP status, when the server answered with an error


class IdentityMismatch(EmbeddingError):
    """The store's vectors were made with other settings: refused, not a server failure. No
    hint here: the way out is the caller's (`reindex=True`, the CLI's --reindex)."""

    exit_code = 2
    stored: Any = None  # the store's identity (index.vectors.storage.Identity)
    wanted: Any = None  # the identity this run would embed with


# The number settings and their bounds, as docs-flatten.yaml's other seconds and counts are
# checked (flatten.config): YAML's .nan passed `timeout <= 0` (nan compares false with any
# bound) and became the client's timeout; a request waits at least 0.1 s, as a crawl's does.
_NUMBERS = {"timeout": seconds_at_least(0.1), "max_retry_after": seconds_at_least(0),
            "batch_size": whole_number(1), "retries": whole_number(0)}  # fmt: skip


@dataclass(frozen=True)
class EmbeddingConfig:
    base_url: str
    model: str
    api_key_env: str | None = None
    timeout: float = 30.0
    batch_size: int = 64
    query_prefix: str = ""
    document_prefix: str = ""  # the older setting: document_template = prefix + "{text}"
    document_template: str | None = None
    retries: int = 3
    max_retry_after: float = 60.0

    @classmethod
    def from_config(cls, data: Any) -> EmbeddingConfig | None:
        """The `embeddings:` section of docs-flatten.yaml, checked; None when there is none."""
        if data is None:
            return None
        if not isinstance(data, dict):
            raise ConfigError("embeddings: expected a mapping", reason="bad-config")
        for name in ("base_url", "model"):
            if not isinstance(data.get(name), str) or not data[name].strip():
                raise ConfigError(f"embeddings.{name}: required", reason="bad-config")
        known = set(cls.__dataclass_fields__)
        unknown = sorted(set(data) - known)
        if unknown:
            raise ConfigError(f"embeddings.{unknown[0]}: not a setting (known: "
                              f"{', '.join(sorted(known))})", reason="bad-config")  # fmt: skip
        try:
            config = cls(**data)
        except TypeError as exc:
            raise ConfigError(f"embeddings: {exc}", reason="bad-config") from exc
        for name, check in _NUMBERS.items():
            value = getattr(config, name)
            problem = check(value)
            if problem:
                raise ConfigError(f"embeddings.{name}: expected {problem}, not {shown(value)}",
                                  reason="bad-config")  # fmt: skip
        if config.document_template is not None:
            if config.document_prefix:
                raise ConfigError("embeddings: set document_template or document_prefix, not "
                                  "both", reason="bad-config")  # fmt: skip
            template = config.document_template
            problem = template_problem(template) if isinstance(template, str) else "not text"
            if problem:
                raise ConfigError(f"embeddings.document_template: {problem}", reason="bad-config")
        return config

    @property
    def template(self) -> str:
        """The document template in force: the one set, else the prefix before the content,
        else the default (title and breadcrumb first)."""
        if self.document_template is not None:
            return self.document_template
        if self.document_prefix:
            return self.document_prefix + "{text}"
        return DEFAULT_DOCUMENT_TEMPLATE

    def document_text(self, piece: SliceText) -> str:
        return render(self.template, piece)

    def query_text(self, text: str) -> str:
        return self.query_prefix + text


@dataclass
class BatchTiming:
    size: int
    seconds: float
    attempts: int


@dataclass
class EmbeddingClient:
    config: EmbeddingConfig
    timings: list[BatchTiming] = field(default_factory=list)

    def __post_init__(self) -> None:
        headers = {"Content-Type": "application/json"}
        if self.config.api_key_env:
            key = os.environ.get(self.config.api_key_env)
            if not key:
                raise EmbeddingError(
                    f"embeddings.api_key_env names {self.config.api_key_env}, which is not set",
                    reason="api-key-missing",
                )
            headers["Authorization"] = f"Bearer {key}"
        import httpx

        self._client = httpx.Client(
            base_url=self.config.base_url.rstrip("/"), headers=headers,
            timeout=self.config.timeout,
        )  # fmt: skip

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> EmbeddingClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def embed(self, texts: list[str]) -> list[list[float]]:
        """Vectors for `texts`, in order, sent in batches of `batch_size`."""
        vectors: list[list[float]] = []
        size = self.config.batch_size
        for start in range(0, len(texts), size):
            vectors.extend(self.embed_batch(texts[start : start + size]))
        return vectors

    def embed_batch(self, texts: list[str]) -> list[list[float]]:
        """One request for `texts` (retried on 429/5xx); `EmbeddingError` when it fails."""
        import httpx

        started = time.perf_counter()
        attempt = 0
        while True:
            attempt += 1
            try:
                response = self._client.post(
                    "/embeddings", json={"model": self.config.model, "input": texts}
                )
            except httpx.TimeoutException as exc:
                raise EmbeddingError(
                    f"embeddings server at {self.config.base_url} did not answer within "
                    f"{self.config.timeout:g} s", reason="timeout",
                ) from exc  # fmt: skip
            except httpx.HTTPError as exc:
                raise EmbeddingError(
                    f"embeddings server at {self.config.base_url} is unreachable "
                    f"({type(exc).__name__})", reason="unreachable",
                    hint="start the server, or check embeddings.base_url",
                ) from exc  # fmt: skip
            status = response.status_code
            if (status == 429 or status >= 500) and attempt <= self.config.retries:
                pause = retry_after_seconds(response.headers.get("retry-after"), attempt)
                if pause <= self.config.max_retry_after:
                    time.sleep(pause)
                    continue
            if status >= 400:
                media, excerpt = _answer_body(response)
                error = EmbeddingError(
                    f"embeddings server answered {status} for a batch of {len(texts)}"
                    f"{f' ({media})' if media else ''}: {excerpt}", reason=f"http-{status}",
                )  # fmt: skip
                error.status = status
                raise error
            vectors = _vectors(response, len(texts))
            self.timings.append(BatchTiming(len(texts), time.perf_counter() - started, attempt))
            return vectors


def _vectors(response: httpx.Response, expected: int) -> list[list[float]]:
    try:
        data = response.json()["data"]
    except (ValueError, KeyError, TypeError) as exc:
        media, excerpt = _answer_body(response)
        raise EmbeddingError(
            f"the embeddings answer ({response.status_code}{f' {media}' if media else ''}) is "
            f"not in the OpenAI format: {excerpt}", reason="bad-response",
        ) from exc  # fmt: skip
    return answered_vectors(data, expected)


def answered_vectors(data: Any, expected: int) -> list[list[float]]:
    """The vectors of an answer's `data` for a batch of `expected` inputs, in input order, or
    `EmbeddingError` (reason `bad-response`) naming what is wrong: a vector is only ever stored
    for the text it was asked for, so an answer whose `index` values repeat, miss one or fall
    out of range is refused, never sorted into place. Items without `index` at all are taken
    in order (some servers leave it out); a mix of both is refused."""
    if type(data) is not list or not all(type(item) is dict for item in data):
        raise _bad("its `data` is not a list of objects")
    if len(data) != expected:
        raise _bad(f"asked for {expected} vectors, got {len(data)}")
    indexes = [item.get("index") for item in data]
    if all(i is None for i in indexes):
        indexes = list(range(expected))
    odd = next((i for i in indexes if type(i) is not int or not 0 <= i < expected), _NONE)
    if odd is not _NONE:
        raise _bad(f"index {_shown(odd)} is not one of 0..{expected - 1}")
    twice = sorted({i for i in indexes if indexes.count(i) > 1})
    if twice:
        times = indexes.count(twice[0])
        raise _bad(f"index {twice[0]} comes {times} times ({len(twice)} repeated): "
                   "vectors would go to the wrong texts")  # fmt: skip
    vectors: list[list[float]] = [[] for _ in range(expected)]
    for index, item in zip(indexes, data, strict=True):
        values = item.get("embedding")
        if type(values) is not list or not values:
            raise _bad(f"the vector at index {index} is not a list of numbers")
        if not all(type(x) in (int, float) for x in values):
            raise _bad(f"the vector at index {index} holds something other than numbers")
        vectors[index] = [float(x) for x in values]
    if not all(math.isfinite(x) for v in vectors for x in v):
        raise _bad("it holds NaN or infinite values")
    dimensions = sorted({len(v) for v in vectors})
    if len(dimensions) > 1:
        raise _bad(f"its vectors have different dimensions ({', '.join(map(str, dimensions))})")
    return vectors


_NONE = object()  # no odd index found (None itself is an odd one)

EXCERPT_CHARS = 120  # of an answer's body quoted in an error: enough to recognise the page
_TITLE = re.compile(r"<title[^>]*>(.*?)</title", re.IGNORECASE | re.DOTALL)
_MARKUP = re.compile(r"<!--.*?-->|<(script|style)\b.*?</\1\s*>|<[^>]*>", re.IGNORECASE | re.DOTALL)


def body_excerpt(body: str, content_type: str = "") -> str:
    """What an error says of an answer's body, in one short display-safe line: a JSON error's
    message, an HTML page's title (else its text), else the text; never a page of markup (a
    proxy's 502 page, a web UI where the API was meant)."""
    start = body.lstrip()[:1]
    text = _json_message(body) if "json" in content_type or start in ("{", "[") else None
    if text is None and ("html" in content_type or start == "<"):
        title = _TITLE.search(body)
        text = html.unescape(title.group(1) if title and title.group(1).strip()
                             else _MARKUP.sub(" ", body))  # fmt: skip
    text = " ".join(safe_display(body if text is None else text).split())
    if len(text) > EXCERPT_CHARS:
        text = text[: EXCERPT_CHARS - 1].rstrip() + "…"
    return text


def _json_message(body: str) -> str | None:
    """The message of a JSON error answer (OpenAI's `error.message`, or an `error`, `message`
    or `detail` string), else None."""
    try:
        data = json.loads(body)
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    error = data.get("error")
    for found in (error.get("message") if isinstance(error, dict) else error,
                  data.get("message"), data.get("detail")):  # fmt: skip
        if isinstance(found, str) and found.strip():
            return found
    return None


def _answer_body(response: httpx.Response) -> tuple[str, str]:
    """An answer's media type (`text/html`, or "") and `body_excerpt`, for an error message."""
    media = safe_display(response.headers.get("content-type", "").split(";")[0].strip())
    return media, body_excerpt(response.text, media.lower()) or "(empty body)"


def _bad(what: str) -> EmbeddingError:
    return EmbeddingError(f"the embeddings server answered badly: {what}", reason="bad-response")


def _shown(value: Any) -> str:
    text = json.dumps(value) if type(value) in (int, float, str, bool) or value is None else (
        type(value).__name__
    )  # fmt: skip
    return text[:40]


@dataclass
class DoctorReport:
    base_url: str
    model: str
    reachable: bool = False
    dimension: int | None = None
    normalized: bool | None = None
    batch_latency_ms: list[float] = field(default_factory=list)
    suggested_query_prefix: str | None = None
    suggested_document_prefix: str | None = None
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "baseUrl": self.base_url, "model": self.model, "reachable": self.reachable,
            "dimension": self.dimension, "normalized": self.normalized,
            "batchLatencyMs": self.batch_latency_ms,
            "suggestedQueryPrefix": self.suggested_query_prefix,
            "suggestedDocumentPrefix": self.suggested_document_prefix, "error": self.error,
        }  # fmt: skip


def doctor(config: EmbeddingConfig, *, batches: int = 3) -> DoctorReport:
    """Probe the server: reachable? which dimension? normalised vectors? how fast per batch?"""
    report = DoctorReport(config.base_url, config.model)
    for fragment, (query, document) in KNOWN_PREFIXES.items():
        configured = config.query_prefix or config.document_prefix or config.document_template
        if fragment in config.model.lower() and not configured:
            report.suggested_query_prefix, report.suggested_document_prefix = query, document
    sample = [config.document_text(SliceText(f"docs-flatten doctor probe {i}", "probe"))
              for i in range(8)]  # fmt: skip
    try:
        with EmbeddingClient(config) as client:
            for _ in range(batches):
                vectors = client.embed(sample)
            report.reachable = True
            report.dimension = len(vectors[0])
            report.normalized = all(abs(math.hypot(*v) - 1.0) < 1e-3 for v in vectors)
            report.batch_latency_ms = [round(t.seconds * 1000, 1) for t in client.timings]
    except EmbeddingError as exc:
        report.error = f"{exc.reason}: {exc.message}"
    return report
