"""A PostgreSQL store URL: how it is recognised, where its password comes from, how it is shown.

The password never travels on the command line (it would sit in shell history and in `ps`):
a URL that holds one is refused. It comes from an environment variable the user names in the
URL's `password_env` parameter (`postgresql://app@db:5432/docs?password_env=DOCS_PG_PASSWORD`),
else from libpq's own sources (PGPASSWORD, ~/.pgpass). What is shown (errors, `doctor`,
`stats`) is the URL without any password. Two more parameters are ours, not libpq's:
`vectors=halfvec` (the HNSW index on half-precision vectors) and `build_memory=2GB` (the most
the HNSW build may take; `index.postgres.vectors.build_memory`).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from urllib.parse import SplitResult, parse_qsl, unquote_plus, urlencode, urlsplit, urlunsplit

from flatten.errors import UsageError
from index.errors import StoreError

SCHEMES = ("postgresql://", "postgres://")
_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")  # a scheme: a URL, not a folder's path
PASSWORD_PARAM = "password_env"
VECTORS_PARAM = "vectors"  # `halfvec`: the HNSW index on half-precision vectors
VECTOR_TYPES = ("vector", "halfvec")
BUILD_MEMORY_PARAM = "build_memory"  # the most an HNSW build may take (`2GB`)
# libpq's parameters whose value is a secret: refused like a password before the host, and
# never shown (`shown` drops them, whatever their value).
SECRET_PARAMS = ("password", "sslpassword")


class StoreURLError(StoreError):
    """A store URL that cannot be used as written (a password in it, no database, a scheme
    other than PostgreSQL's): the command line's fault, so a usage error."""

    exit_code = 2


def is_postgres(store: object) -> bool:
    """Whether a --store value names a PostgreSQL store rather than a folder."""
    return isinstance(store, str) and store.lower().startswith(SCHEMES)


def check(store: object) -> None:
    """`StoreURLError` for a --store value no command can use (see `refuse_other_urls` and
    `parse`); nothing for a folder or a usable URL. For a command that would otherwise find out
    late (a server answering every call with the same refusal)."""
    refuse_other_urls(store)
    if is_postgres(store):
        parse(str(store))


def refuse_other_urls(store: object) -> None:
    """`StoreURLError` for a --store value that is a URL of another kind (`sqlite://`,
    `mysql://`, `file://`...): taken for a folder, it would make a folder of that name (a
    password in it too) in the working directory."""
    if isinstance(store, str) and _URL.match(store) and not is_postgres(store):
        scheme = store.split("://", 1)[0]
        raise StoreURLError(
            f"the store {shown(store)} is a {scheme}:// URL: a store is a folder or a "
            "postgresql:// URL",
            reason="unsupported-store-url",
            hint="give a folder path (an SQLite index is made there), or a "
            "postgresql://user@host:5432/db?password_env=VAR URL",
        )


@dataclass(frozen=True)
class StoreURL:
    conninfo: str  # what psycopg connects to: the URL without `password_env`
    password_env: str | None  # the variable named for the password, if any
    shown: str  # the URL as messages print it (no password, ever)
    vectors: str = "vector"  # what the HNSW index is built on (`VECTOR_TYPES`)
    build_memory: int | None = None  # bytes; None: index.postgres.vectors decides

    def password(self) -> str | None:
        """The password from the named variable; a named variable that is unset is an error
        (silently connecting without it would fail later with a vaguer message)."""
        if self.password_env is None:
            return None
        value = os.environ.get(self.password_env)
        if value is None:
            raise StoreError(
                f"the store {self.shown} takes its password from ${self.password_env}, "
                "which is not set",
                reason="store-password-missing",
                hint=f"export {self.password_env}=... before running docs-flatten",
            )
        return value


def parse(url: str) -> StoreURL:
    """A store URL, or `StoreError` naming what is wrong with it."""
    try:
        parts = urlsplit(url)
    except ValueError:  # a bad [IPv6] host: not a URL this store can use
        raise StoreURLError(f"the store URL {shown(url)} is not a valid URL",
                            reason="bad-store-url") from None  # fmt: skip
    printed = shown(url)
    hidden = _hidden_password(url, parts)
    query = parse_qsl(parts.query, keep_blank_values=True)
    if any(key.lower() in SECRET_PARAMS for key, _ in query):
        raise StoreURLError(
            f"the store URL {printed} holds a password parameter: a password on the command "
            "line ends up in shell history and in the process list",
            reason="store-password-in-url",
            hint=f"remove it from the URL and name an environment variable instead: {printed}"
            f"{'&' if '?' in printed else '?'}{PASSWORD_PARAM}=DOCS_PG_PASSWORD",
        )
    if parts.password is not None or hidden:
        raise StoreURLError(
            f"the store URL {printed} holds a password"
            + (
                " (a `:` then an `@` after the host: write an `@` that is part of the path or "
                "a parameter as %40)"
                if hidden
                else ""
            )
            + ": a password on the command line ends up in shell history and in the process "
            "list",
            reason="store-password-in-url",
            hint=f"remove it from the URL and name an environment variable instead: {printed}"
            f"{'&' if '?' in printed and not hidden else '?'}{PASSWORD_PARAM}=DOCS_PG_PASSWORD",
        )
    if not parts.hostname or not parts.path.strip("/"):
        raise StoreURLError(
            f"the store URL {printed} must name a host and a database",
            reason="bad-store-url",
            hint="e.g. postgresql://user@host:5432/docs?password_env=DOCS_PG_PASSWORD",
        )
    try:
        parts.port  # noqa: B018 - validates it
    except ValueError:
        raise StoreURLError(f"the store URL {printed} has a bad port",
                            reason="bad-store-url") from None  # fmt: skip
    names = [value for key, value in query if key == PASSWORD_PARAM]
    if names and not names[-1].strip():
        raise StoreURLError(
            f"the store URL {printed} names no variable in {PASSWORD_PARAM}=",
            reason="bad-store-url",
        )
    kinds = [value for key, value in query if key == VECTORS_PARAM] or ["vector"]
    if kinds[-1] not in VECTOR_TYPES:
        raise StoreURLError(
            f"the store URL {printed} asks for vectors={kinds[-1]}; it takes "
            + " or ".join(VECTOR_TYPES),
            reason="bad-store-url",
        )
    memory = [value for key, value in query if key == BUILD_MEMORY_PARAM]
    build_memory = _size(printed, memory[-1]) if memory else None
    ours = (PASSWORD_PARAM, VECTORS_PARAM, BUILD_MEMORY_PARAM)
    rest = [(key, value) for key, value in query if key not in ours]
    conninfo = urlunsplit(parts._replace(query=urlencode(rest)))
    return StoreURL(conninfo=conninfo, password_env=names[-1] if names else None, shown=printed,
                    vectors=kinds[-1], build_memory=build_memory)  # fmt: skip


def _size(printed: str, text: str) -> int:
    """`build_memory=`'s value in bytes (`2GB`, `512MiB`), at least PostgreSQL's 1 MB floor."""
    from flatten.config import parse_size

    try:
        size = parse_size(text)
    except UsageError:
        size = 0
    if size < 1 << 20:
        raise StoreURLError(
            f"the store URL {printed} asks for {BUILD_MEMORY_PARAM}={text}: give a size of 1MB "
            "or more (512MB, 2GB)",
            reason="bad-store-url",
        )
    return size


def _hidden_password(url: str, parts: SplitResult) -> bool:
    """A password holding `/`, `?` or `#` unescaped: the URL parser ends the host at it, so
    it sees no password, and the password lands in the path, query or fragment."""
    return "@" not in parts.netloc and ":" in parts.netloc and "@" in url[len(parts.scheme) + 3 :]


def shown(url: str) -> str:
    """`url` as messages may print it: without any password (the user name and the rest
    stay: they say which store is meant). Where the parser cannot tell the password's end
    (see `_hidden_password`), everything from the user name's `:` to the last `@` goes."""
    try:
        parts = urlsplit(url)
    except ValueError:
        parts = None
    if parts is None or _hidden_password(url, parts):
        scheme, _, rest = url.partition("://")
        user, at, host = rest.rpartition("@")
        return f"{scheme}://{user.split(':', 1)[0]}@{host}" if at and ":" in user else url
    query = _without_secrets(parts.query)
    if parts.password is None:
        return urlunsplit(parts._replace(query=query))
    user = parts.username or ""
    netloc = parts.netloc.rpartition("@")[2]  # host and port as written
    return urlunsplit(parts._replace(netloc=f"{user}@{netloc}", query=query))


def _without_secrets(query: str) -> str:
    """A URL's query less its `SECRET_PARAMS` (the others as written)."""
    kept = [p for p in query.split("&")
            if unquote_plus(p.partition("=")[0]).lower() not in SECRET_PARAMS]  # fmt: skip
    return "&".join(kept)
