"""A real OpenAI-format embeddings server on 127.0.0.1 with a small deterministic embedder.

The model is a hashing trick, not a network: the protocol, batching and failures are real.
Failures are injected through class attributes; `requests` counts every call and its inputs.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import socket
import threading
import time
import zlib
from collections.abc import Callable
from typing import ClassVar

from tests.sites import Responder

_WORD = re.compile(r"\w+")


def embed(text: str, dimension: int) -> list[float]:
    vector = [0.0] * dimension
    for word in _WORD.findall(text.lower()):
        digest = hashlib.sha256(word.encode()).digest()
        vector[digest[0] % dimension] += 1.0 if digest[1] % 2 else -1.0
    norm = math.sqrt(sum(x * x for x in vector)) or 1.0
    return [x / norm for x in vector]


class EmbeddingServer(Responder):
    protocol_version = "HTTP/1.1"  # keep-alive, as real embedding servers do
    dimension: ClassVar[int] = 64
    delay: ClassVar[float] = 0.0
    fail_next: ClassVar[list[tuple[int, dict[str, str]]]] = []  # (status, headers) to answer first
    api_key: ClassVar[str | None] = None
    reject: ClassVar[str | None] = None  # a batch with an input holding this gets a 400
    fail_at: ClassVar[dict[int, int]] = {}  # request number (from 1) -> status to answer
    busy_seconds: ClassVar[float] = 0.0  # time spent answering, for the benchmarks
    requests: ClassVar[list[list[str]]] = []
    # texts -> vectors; the hashing embedder unless a real model is plugged in (the benchmarks)
    embedder: ClassVar[Callable[[list[str], int], list[list[float]]] | None] = None
    # Requests still being answered: one a client gave up on (a timeout test) sleeps on and
    # would take the next test's injected failure, as the state is the class's.
    # The answer's `data` items -> what is sent instead (a server answering badly)
    reshape: ClassVar[Callable[[list[dict]], object] | None] = None
    answering: ClassVar[int] = 0
    _answering_lock = threading.Lock()
    # Set by reset(): a delayed answer still sleeping ends at once and answers nothing (its
    # client gave up long ago), instead of holding the next test's reset for the whole delay.
    _released: ClassVar[threading.Event] = threading.Event()

    @classmethod
    def reset(cls) -> None:
        cls._released.set()
        deadline = time.monotonic() + 30
        while cls.answering and time.monotonic() < deadline:
            time.sleep(0.02)
        cls._released = threading.Event()
        cls.dimension, cls.delay, cls.api_key, cls.reject = 64, 0.0, None, None
        cls.fail_next, cls.requests, cls.embedder, cls.fail_at = [], [], None, {}
        cls.busy_seconds, cls.reshape = 0.0, None

    def setup(self) -> None:
        super().setup()
        # As real servers do: without it, headers and body in two writes wait on delayed ACKs.
        self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def _answer(self, status: int, body: dict, headers: dict[str, str] | None = None) -> None:
        self.respond(status, json.dumps(body).encode(), "application/json", headers)

    def do_POST(self) -> None:
        started = time.perf_counter()
        with self._answering_lock:
            type(self).answering += 1
        try:
            self._embeddings()
        finally:
            type(self).busy_seconds += time.perf_counter() - started
            with self._answering_lock:
                type(self).answering -= 1

    def _embeddings(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        payload = json.loads(self.rfile.read(length) or b"{}")
        inputs = payload.get("input") or []
        type(self).requests.append(list(inputs))
        if self.delay and type(self)._released.wait(self.delay):
            self.close_connection = True
            return  # released by reset(): the test that made the server slow is over
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
        if type(self).reshape is not None:
            data = type(self).reshape(data)
        self._answer(200, {"object": "list", "data": data, "model": payload.get("model")})

    def do_GET(self) -> None:
        if self.path != "/stats":
            return self._answer(404, {"error": "not found"})
        self._answer(200, {"busySeconds": self.busy_seconds, "requests": len(self.requests)})


def instant(texts: list[str], dimension: int) -> list[list[float]]:
    """A seeded random vector per text: answers at once, for measuring the client's side."""
    import numpy as np

    return [
        np.random.default_rng(zlib.crc32(t.encode())).standard_normal(dimension).tolist()
        for t in texts
    ]


def sentence_transformer(name: str) -> Callable[[list[str], int], list[list[float]]]:
    """A real model (sentence-transformers, loaded offline) for quality measurements."""
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(name, device="cpu")

    def encode(texts: list[str], dimension: int) -> list[list[float]]:
        return model.encode(texts, batch_size=64, normalize_embeddings=True).tolist()

    return encode


def main() -> None:
    """Serve on 127.0.0.1 and print the base URL: `python -m tests.embedserver --embedder ...`."""
    import argparse
    from http.server import ThreadingHTTPServer

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--dimension", type=int, default=64)
    parser.add_argument("--embedder", default="hash",
                        help="hash, instant, or st:<sentence-transformers model>")  # fmt: skip
    args = parser.parse_args()
    EmbeddingServer.reset()
    EmbeddingServer.dimension = args.dimension
    if args.embedder == "instant":
        EmbeddingServer.embedder = instant
    elif args.embedder.startswith("st:"):
        EmbeddingServer.embedder = sentence_transformer(args.embedder[3:])
    server = ThreadingHTTPServer(("127.0.0.1", args.port), EmbeddingServer)
    print(f"http://127.0.0.1:{server.server_address[1]}/v1", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
