"""A real smart-HTTP git server on 127.0.0.1: `git http-backend` behind Basic auth."""

from __future__ import annotations

import base64
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit


def _handler(
    project_root: Path, token: str | None, seen: list[str]
) -> type[BaseHTTPRequestHandler]:
    expected = "Basic " + base64.b64encode(f"x-access-token:{token}".encode()).decode()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:  # keep test output quiet
            pass

        def _serve(self) -> None:
            seen.append(self.headers.get("Authorization", ""))
            if token and self.headers.get("Authorization") != expected:
                self.send_response(401)
                self.send_header("WWW-Authenticate", 'Basic realm="git"')
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            url = urlsplit(self.path)
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            env = {
                "GIT_PROJECT_ROOT": str(project_root), "GIT_HTTP_EXPORT_ALL": "1",
                "PATH_INFO": url.path, "QUERY_STRING": url.query,
                "REQUEST_METHOD": self.command,
                "CONTENT_TYPE": self.headers.get("Content-Type", ""),
                "CONTENT_LENGTH": str(len(body)), "REMOTE_ADDR": "127.0.0.1",
                "HTTP_CONTENT_ENCODING": self.headers.get("Content-Encoding", ""),
                "GIT_PROTOCOL": self.headers.get("Git-Protocol", ""),
                "PATH": "/usr/bin:/bin:/usr/local/bin",
            }  # fmt: skip
            out = subprocess.run(["git", "http-backend"], input=body, env=env,
                                 capture_output=True, check=False).stdout  # fmt: skip
            head, _, payload = out.partition(b"\r\n\r\n")
            status = 200
            headers = []
            for line in head.decode("latin-1").split("\r\n"):
                name, _, value = line.partition(":")
                if name.lower() == "status":
                    status = int(value.strip().split()[0])
                elif name:
                    headers.append((name, value.strip()))
            self.send_response(status)
            for name, value in headers:
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        do_GET = _serve
        do_POST = _serve

    return Handler


@contextmanager
def serve_git(project_root: Path, token: str | None = None) -> Iterator[tuple[str, list[str]]]:
    """Serve the repositories under `project_root`; yield the base URL and the auth headers seen."""
    seen: list[str] = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(project_root, token, seen))
    # shutdown() waits for serve_forever's next poll: the default 0.5 s, once per served test.
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", seen
    finally:
        server.shutdown()
        server.server_close()
