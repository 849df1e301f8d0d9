"""URLs for crawling: one normal form, and the scope a crawl may not leave."""

from __future__ import annotations

import posixpath
from dataclasses import dataclass
from urllib.parse import parse_qsl, urlencode, urljoin, urlsplit, urlunsplit

from flatten.errors import UsageError

_DEFAULT_PORTS = {"http": 80, "https": 443}
# Never HTML: skipped before any request is made.
NON_HTML_SUFFIXES = frozenset({
    ".pdf", ".zip", ".gz", ".tgz", ".bz2", ".xz", ".7z", ".tar", ".png", ".jpg", ".jpeg", ".gif",
    ".svg", ".webp", ".ico", ".bmp", ".mp3", ".mp4", ".webm", ".mov", ".avi", ".woff", ".woff2",
    ".ttf", ".otf", ".eot", ".css", ".js", ".mjs", ".map", ".json", ".xml", ".txt", ".csv",
    ".exe", ".dmg", ".pkg", ".deb", ".rpm", ".whl", ".jar", ".wasm", ".epub", ".rss", ".atom",
})  # fmt: skip


def normalize(url: str) -> str:
    """Fragment dropped, query sorted, default port removed, scheme and host lowercased."""
    parts = urlsplit(url.strip())
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()
    port = parts.port
    netloc = host if port in (None, _DEFAULT_PORTS.get(scheme)) else f"{host}:{port}"
    path = parts.path or "/"
    query = urlencode(sorted(parse_qsl(parts.query, keep_blank_values=True)))
    return urlunsplit((scheme, netloc, path, query, ""))


def resolve(base: str, href: str) -> str | None:
    """An absolute, normal http(s) URL for a link, or None for mailto:, javascript: and such."""
    href = href.strip()
    if not href or href.startswith(("#", "mailto:", "javascript:", "tel:", "data:")):
        return None
    absolute = urljoin(base, href)
    if urlsplit(absolute).scheme not in ("http", "https"):
        return None
    return normalize(absolute)


def looks_non_html(url: str) -> bool:
    suffix = posixpath.splitext(urlsplit(url).path)[1].lower()
    return suffix in NON_HTML_SUFFIXES


@dataclass(frozen=True)
class Scope:
    """Same scheme, host and port, and a path prefix matched on whole segments."""

    scheme: str
    netloc: str
    prefix: str  # ends with "/"

    @classmethod
    def for_seed(cls, seed: str, prefix: str | None = None) -> Scope:
        parts = urlsplit(normalize(seed))
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise UsageError(f"not an http(s) URL: {seed!r}", reason="bad-url")
        if prefix is None:
            path = parts.path
            prefix = path if path.endswith("/") else posixpath.dirname(path) + "/"
        elif prefix.startswith(("http://", "https://")):
            prefix = urlsplit(normalize(prefix)).path
        if not prefix.startswith("/"):
            prefix = "/" + prefix
        if not prefix.endswith("/"):
            prefix += "/"
        return cls(parts.scheme, parts.netloc, prefix)

    def admits(self, url: str) -> bool:
        parts = urlsplit(url)
        if (parts.scheme, parts.netloc) != (self.scheme, self.netloc):
            return False
        path = parts.path or "/"
        return path.startswith(self.prefix) or path + "/" == self.prefix
