"""A real OpenAI-format embeddings server on 127.0.0.1 with a small deterministic embedder.

The model is a hashing trick, not a network: the protocol, batching and failures are real.
Failures are injected through class attributes; `requests` counts every call and its inputs.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from typing import ClassVar

_WORD = re.compile(r"\w+")


def embed(text: str, dimension: int) -> list[float]:
    vector = [0.0] * dimension
    for word in _WORD.findall(text.lower()):
        digest = hashlib.sha256(word.encode()).digest()
        vector[digest[0] % dimension] += 1.0 if digest[1] % 2 else -1.0
    norm = math.sqrt(sum(x * x for x in vector)) or 1.0
    return [x / norm for x in vector]


class EmbeddingServer(BaseHTTPRequestHandler):
    dimension: ClassVar[int] = 64
    delay: ClassVar[float] = 0.0
    fail_next: ClassVar[list[tuple[int, dict[str, str]]]] = []  # (status, headers) to answer first
    api_key: ClassVar[str | None] = None
    reject: ClassVar[str | None] = None  # a batch with an input holding this gets a 400
    fail_at: ClassVar[dict[int, int]] = {}  # request number (from 1) -> status to answer
    requests: ClassVar[list[list[str]]] = []
    # texts -> vectors; the hashing embedder unless a real model is plugged in (the benchmarks)
    embedder: ClassVar[Callable[[list[str], int], list[list[float]]] | None] = None

    @classmethod
    def reset(cls) -> None:
        cls.dimension, cls.delay, cls.api_key, cls.reject = 64, 0.0, None, None
        cls.fail_next, cls.requests, cls.embedder, cls.fail_at = [], [], None, {}

    def log_message(self, *args: object) -> None:
        pass

    def _answer(self, status: int, body: dict | str, headers: dict[str, str] | None = None) -> None:
        data = (json.dumps(body) if isinstance(body, dict) else body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        payload = json.loads(self.rfile.read(length) or b"{}")
        inputs = payload.get("input") or []
        type(self).requests.append(list(inputs))
        if self.delay:
            time.sleep(self.delay)
        if self.api_key and self.headers.get("Authorization") != f"Bearer {self.api_key}":
            return self._answer(401, {"error": "bad key"})
        if self.path != "/v1/embeddings":
            return self._answer(404, {"error": "not found"})
        if type(self).fail_next:
            status, headers = type(self).fail_next.pop(0)
            return self._answer(status, {"error": "injected"}, headers)
        if len(self.requests) in self.fail_at:
            return self._answer(self.fail_at[len(self.requests)], {"error": "injected"})
        if self.reject and any(self.reject in text for text in inputs):
            return self._answer(400, {"error": "input rejected"})
        embedder = type(self).embedder
        vectors = (embedder(inputs, self.dimension) if embedder
                   else [embed(t, self.dimension) for t in inputs])  # fmt: skip
        data = [{"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)]
        self._answer(200, {"object": "list", "data": data, "model": payload.get("model")})
