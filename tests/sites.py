"""Real HTTP servers on 127.0.0.1 for crawl tests: a static site, and a hostile one."""

from __future__ import annotations

import struct
import threading
import time
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache, partial
from http.server import BaseHTTPRequestHandler, SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import ClassVar
from urllib.parse import parse_qs, urlsplit


class Responder(BaseHTTPRequestHandler):
    """The test servers' handler base: no request log, and one way to send a whole response."""

    def log_message(self, *args: object) -> None:
        pass

    def respond(self, status: int, body: bytes = b"", ctype: str = "text/html; charset=utf-8",
                headers: dict[str, str] | None = None) -> None:  # fmt: skip
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: object, client_address: object) -> None:
        pass  # a client that hangs up on an endless page is the point of that test


@contextmanager
def serve(handler: type[BaseHTTPRequestHandler] | partial) -> Iterator[str]:
    server = _Server(("127.0.0.1", 0), handler)
    # shutdown() waits for serve_forever's next poll: the default 0.5 s, once per served test.
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@contextmanager
def serve_directory(root: Path) -> Iterator[str]:
    class Handler(SimpleHTTPRequestHandler, Responder):
        pass

    with serve(partial(Handler, directory=str(root))) as base:
        yield base


def page(title: str, body: str) -> bytes:
    return (f"<html><head><title>{title}</title></head><body><nav>NAV LINKS</nav>"
            f"<main><h1 id='top'>{title}</h1>{body}</main><footer>FOOTER TEXT</footer>"
            "</body></html>").encode()  # fmt: skip


def gzip_filled(head: bytes, fill: bytes, mebibytes: int, tail: bytes = b"") -> bytes:
    """A gzip stream of `head`, then `mebibytes` MiB of the byte `fill`, then `tail`: one
    mebibyte compressed once and its deflate block repeated (a full flush makes each block
    stand alone), so a 256 MiB bomb takes a tenth of a second, not the seconds that
    compressing all of it took."""
    chunk = fill * (1 << 20)
    deflate = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)  # raw: gzip framing below
    start = deflate.compress(head) + deflate.flush(zlib.Z_FULL_FLUSH)
    block = deflate.compress(chunk) + deflate.flush(zlib.Z_FULL_FLUSH)
    end = deflate.compress(tail) + deflate.flush()
    crc = zlib.crc32(head)
    for _ in range(mebibytes):
        crc = zlib.crc32(chunk, crc)
    crc = zlib.crc32(tail, crc)
    size = len(head) + len(chunk) * mebibytes + len(tail)
    header = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff"  # deflate, no name, no time
    trailer = struct.pack("<II", crc, size & 0xFFFFFFFF)
    return header + start + block * mebibytes + end + trailer


@cache
def gzip_bomb() -> bytes:
    """64 MiB of zeros in about 64 KiB, made once: compressing it per request took longer than
    the crawl's 1 s timeout on a loaded machine: the page timed out instead of hitting the cap."""
    return gzip_filled(b"<p>", b"0", 64, b"</p>")


class HostileSite(Responder):
    """Every trap in one site under /docs/; `requests` records what was asked, with headers."""

    requests: ClassVar[list[tuple[str, dict[str, str]]]] = []
    busy_hits = 0
    robots = "User-agent: *\nDisallow: /docs/private/\n"

    def do_GET(self) -> None:
        type(self).requests.append((self.path, dict(self.headers)))
        url = urlsplit(self.path)
        path, query = url.path, parse_qs(url.query)
        links = "".join(f"<a href='{h}'>{h}</a> " for h in (
            "/docs/a", "/docs/loop1", "/docs/calendar?month=1", "/docs/redirect-loop",
            "/docs/off-host", "/docs/endless", "/docs/slow", "/docs/bomb", "/docs/busy",
            "/docs/private/secret", "/docs/manual.pdf", "/docs/logo.png", "/docs/a?b=2&a=1",
            "/docs/a?a=1&b=2#part", "/docs-old/page", "/docs/missing", "/docs/data",
            "mailto:team@example.invalid", "https://elsewhere.invalid/x",
        ))  # fmt: skip
        if path == "/robots.txt":
            self.respond(200, type(self).robots.encode(), "text/plain")
        elif path == "/sitemap.xml":
            xml = (f"<urlset><url><loc>http://{self.headers['Host']}/docs/from-sitemap</loc></url>"
                   "<url><loc>https://other.invalid/page</loc></url></urlset>")  # fmt: skip
            self.respond(200, xml.encode(), "application/xml")
        elif path in ("/docs/", "/docs"):
            self.respond(200, page("Home", f"<p>Start here.</p><p>{links}</p>"))
        elif path == "/docs/a":
            body = "<h2 id='usage'>Usage</h2><pre><code class='language-python'>x = 1\ny = 2</code>"
            self.respond(200, page("Page A", body + "</pre><a href='/docs/'>home</a>"))
        elif path == "/docs/loop1":
            self.respond(200, page("Loop 1", "<a href='/docs/loop2'>next</a>"))
        elif path == "/docs/loop2":
            self.respond(200, page("Loop 2", "<a href='/docs/loop1'>back</a>"))
        elif path == "/docs/calendar":
            month = int(query.get("month", ["1"])[0])
            link = f"<a href='/docs/calendar?month={month + 1}'>next month</a>"
            self.respond(200, page(f"Month {month}", f"<p>Events of month {month}.</p>{link}"))
        elif path == "/docs/redirect-loop":
            self.respond(302, headers={"Location": "/docs/redirect-loop2"})
        elif path == "/docs/redirect-loop2":
            self.respond(302, headers={"Location": "/docs/redirect-loop"})
        elif path == "/docs/off-host":
            self.respond(302, headers={"Location": "http://off-host.invalid/steal"})
        elif path == "/docs/endless":
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.end_headers()
            try:
                for _ in range(4000):  # bounded here too: 256 MiB at most, the client stops first
                    self.wfile.write(b"<p>" + b"x" * 65536 + b"</p>")
            except (BrokenPipeError, ConnectionResetError):
                pass
        elif path == "/docs/slow":
            time.sleep(8)  # past the hostile test's 3 s timeout, with room for a loaded machine
            self.respond(200, page("Slow", "<p>too late</p>"))
        elif path == "/docs/bomb":
            self.respond(200, gzip_bomb(), headers={"Content-Encoding": "gzip"})
        elif path == "/docs/busy":
            type(self).busy_hits += 1
            if type(self).busy_hits == 1:
                self.respond(429, b"slow down", "text/plain", {"Retry-After": "1"})
            else:
                self.respond(200, page("Busy", "<p>served after Retry-After</p>"))
        elif path == "/docs/data":
            self.respond(200, b'{"json": true}', "application/json")
        elif path == "/docs/from-sitemap":
            self.respond(200, page("From sitemap", "<p>only the sitemap links here</p>"))
        elif path.startswith("/docs-old/"):
            self.respond(200, page("Old", "<p>must never be fetched</p>"))
        else:
            self.respond(404, b"not found", "text/plain")
