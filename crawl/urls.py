"""URLs for crawling: one normal form, and the scope a crawl may not leave.

The normal form is what gets checked (scope, robots.txt) and what gets requested, so the two
cannot differ: dot segments are removed (RFC 3986 section 5.2.4) after escapes of unreserved
characters are decoded (section 6.2.2.2), so `/s/../x` and `/s/%2e%2e/x` are both `/x`.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass
from urllib.parse import parse_qsl, unquote, urlencode, urljoin, urlsplit, urlunsplit

from flatten.errors import UsageError
from flatten.userinfo import strip_credentials

_DEFAULT_PORTS = {"http": 80, "https": 443}
_ESCAPE = re.compile(r"%([0-9A-Fa-f]{2})")
_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
# Never HTML: skipped before any request is made.
NON_HTML_SUFFIXES = frozenset({
    ".pdf", ".zip", ".gz", ".tgz", ".bz2", ".xz", ".7z", ".tar", ".png", ".jpg", ".jpeg", ".gif",
    ".svg", ".webp", ".ico", ".bmp", ".mp3", ".mp4", ".webm", ".mov", ".avi", ".woff", ".woff2",
    ".ttf", ".otf", ".eot", ".css", ".js", ".mjs", ".map", ".json", ".xml", ".txt", ".csv",
    ".exe", ".dmg", ".pkg", ".deb", ".rpm", ".whl", ".jar", ".wasm", ".epub", ".rss", ".atom",
})  # fmt: skip


def normalize(url: str) -> str:
    """Fragment dropped, query sorted, default port removed, scheme and host lowercased, path
    without dot segments. Raises ValueError for a URL that cannot be parsed (a bad port or
    IPv6 literal)."""
    parts = urlsplit(url.strip())
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()
    port = parts.port  # raises ValueError when out of range
    if ":" in host:
        host = f"[{host}]"  # an IPv6 literal keeps its brackets
    netloc = host if port in (None, _DEFAULT_PORTS.get(scheme)) else f"{host}:{port}"
    path = remove_dot_segments(_ESCAPE.sub(_normal_escape, parts.path)) or "/"
    query = urlencode(sorted(parse_qsl(parts.query, keep_blank_values=True)))
    return urlunsplit((scheme, netloc, path, query, ""))


def _normal_escape(match: re.Match[str]) -> str:
    """An escaped unreserved character decoded (`%2e` is `.`); any other escape uppercased."""
    char = chr(int(match.group(1), 16))
    return char if char in _UNRESERVED else "%" + match.group(1).upper()


def remove_dot_segments(path: str) -> str:
    """RFC 3986 section 5.2.4: `.` and `..` segments resolved; never above the root."""
    if "." not in path:
        return path  # the common case: nothing to do
    segments = path.split("/")
    out: list[str] = []
    for index, segment in enumerate(segments):
        last = index == len(segments) - 1
        if segment in (".", ".."):
            if segment == ".." and len(out) > 1:
                out.pop()
            if last:
                out.append("")  # `/a/..` is `/`, `/a/.` is `/a/`: the directory itself
        else:
            out.append(segment)
    return "/".join(out)


def lenient_path(url: str) -> str:
    """The path as the most lenient server reads it: every escape decoded (`%2F` too), `\\` as
    `/`, then dot segments resolved. Checked beside the normal form, so that a server which
    decodes `..%2F` cannot lead a request out of scope or past robots.txt."""
    path = unquote(urlsplit(url).path, errors="replace").replace("\\", "/")
    return remove_dot_segments(path) or "/"


def resolve(base: str, href: str) -> str | None:
    """An absolute, normal http(s) URL for a link, or None for mailto:, javascript:, a link
    that cannot be parsed (a bad port or IPv6 literal) and such."""
    href = href.strip()
    if not href or href.startswith(("#", "mailto:", "javascript:", "tel:", "data:")):
        return None
    try:
        absolute = urljoin(base, href)
        if urlsplit(absolute).scheme not in ("http", "https"):
            return None
        return normalize(absolute)
    except ValueError:
        return None


def looks_non_html(url: str) -> bool:
    suffix = posixpath.splitext(urlsplit(url).path)[1].lower()
    return suffix in NON_HTML_SUFFIXES


def _parsed(url: str) -> str:
    """The normal form of a URL the user gave, or a usage error that says what is wrong. Never
    a word of its credentials: the URL is shown without them, and the parser's complaint is
    the one about the URL without them (`http://u:p/w@h/` reads as host `u`, port `p`)."""
    try:
        return normalize(url)
    except ValueError as exc:
        shown = strip_credentials(url)
        why = str(exc)
        if shown != url:
            try:
                normalize(shown)
                why = "a user name or password with a raw '/', '?' or '#': percent-encode it"
            except ValueError as plain:
                why = str(plain)
        raise UsageError(
            f"not a valid URL: {shown!r} ({why})", reason="bad-url",
            hint="give --url (and --scope) as http(s)://host[:port]/path, a port up to 65535",
        ) from None  # fmt: skip


@dataclass(frozen=True)
class Scope:
    """Same scheme, host and port, and a path prefix matched on whole segments."""

    scheme: str
    netloc: str
    prefix: str  # ends with "/"

    @classmethod
    def for_seed(cls, seed: str, prefix: str | None = None) -> Scope:
        parts = urlsplit(_parsed(seed))
        if prefix is not None and prefix.startswith(("http://", "https://")):
            prefix = urlsplit(_parsed(prefix)).path
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise UsageError(f"not an http(s) URL: {strip_credentials(seed)!r}", reason="bad-url")
        if prefix is None:
            path = parts.path
            prefix = path if path.endswith("/") else posixpath.dirname(path).rstrip("/") + "/"
        if not prefix.startswith("/"):
            prefix = "/" + prefix
        prefix = remove_dot_segments(prefix)
        if not prefix.endswith("/"):
            prefix += "/"
        return cls(parts.scheme, parts.netloc, prefix)

    def admits(self, url: str) -> bool:
        parts = urlsplit(url)
        if (parts.scheme, parts.netloc) != (self.scheme, self.netloc):
            return False
        return self._inside(parts.path or "/") and self._inside(lenient_path(url))

    def _inside(self, path: str) -> bool:
        return path.startswith(self.prefix) or path + "/" == self.prefix

    def wider(self, outside: list[str]) -> tuple[str, int] | None:
        """The nearest ancestor of the prefix that admits most of `outside` (same-host URLs
        this scope refused), with how many it admits; None if none does."""
        prefix = self.prefix.rstrip("/")
        while prefix:
            prefix = prefix.rsplit("/", 1)[0]
            wider = Scope(self.scheme, self.netloc, prefix + "/")
            admitted = sum(wider.admits(url) for url in outside)
            if admitted * 2 > len(outside):
                return wider.prefix, admitted
        return None
