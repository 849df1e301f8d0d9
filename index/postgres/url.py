"""A PostgreSQL store URL: how it is recognised, where its password comes from, how it is shown.

The password never travels on the command line (it would sit in shell history and in `ps`):
a URL that holds one is refused. It comes from an environment variable the user names in the
URL's `password_env` parameter (`postgresql://app@db:5432/docs?password_env=DOCS_PG_PASSWORD`),
else from libpq's own sources (PGPASSWORD, ~/.pgpass). What is shown (errors, `doctor`,
`stats`) is the URL without any password.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from index.errors import StoreError

SCHEMES = ("postgresql://", "postgres://")
PASSWORD_PARAM = "password_env"
VECTORS_PARAM = "vectors"  # `halfvec`: the HNSW index on half-precision vectors
VECTOR_TYPES = ("vector", "halfvec")


def is_postgres(store: object) -> bool:
    """Whether a --store value names a PostgreSQL store rather than a folder."""
    return isinstance(store, str) and store.lower().startswith(SCHEMES)


@dataclass(frozen=True)
class StoreURL:
    conninfo: str  # what psycopg connects to: the URL without `password_env`
    password_env: str | None  # the variable named for the password, if any
    shown: str  # the URL as messages print it (no password, ever)
    vectors: str = "vector"  # what the HNSW index is built on (`VECTOR_TYPES`)

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
    parts = urlsplit(url)
    shown = _shown(parts)
    if parts.password is not None:
        raise StoreError(
            f"the store URL {shown} holds a password: a password on the command line ends up "
            "in shell history and in the process list",
            reason="store-password-in-url",
            hint=f"remove it from the URL and name an environment variable instead: "
            f"{shown}{'&' if parts.query else '?'}{PASSWORD_PARAM}=DOCS_PG_PASSWORD",
        )
    if not parts.hostname or not parts.path.strip("/"):
        raise StoreError(
            f"the store URL {shown} must name a host and a database",
            reason="bad-store-url",
            hint="e.g. postgresql://user@host:5432/docs?password_env=DOCS_PG_PASSWORD",
        )
    try:
        parts.port  # noqa: B018 - validates it
    except ValueError:
        raise StoreError(f"the store URL {shown} has a bad port", reason="bad-store-url") from None
    query = parse_qsl(parts.query, keep_blank_values=True)
    names = [value for key, value in query if key == PASSWORD_PARAM]
    if names and not names[-1].strip():
        raise StoreError(
            f"the store URL {shown} names no variable in {PASSWORD_PARAM}=",
            reason="bad-store-url",
        )
    kinds = [value for key, value in query if key == VECTORS_PARAM] or ["vector"]
    if kinds[-1] not in VECTOR_TYPES:
        raise StoreError(
            f"the store URL {shown} asks for vectors={kinds[-1]}; it takes "
            + " or ".join(VECTOR_TYPES),
            reason="bad-store-url",
        )
    ours = (PASSWORD_PARAM, VECTORS_PARAM)
    rest = [(key, value) for key, value in query if key not in ours]
    conninfo = urlunsplit(parts._replace(query=urlencode(rest)))
    return StoreURL(conninfo=conninfo, password_env=names[-1] if names else None, shown=shown,
                    vectors=kinds[-1])  # fmt: skip


def _shown(parts) -> str:  # type: ignore[no-untyped-def]
    """The URL with any password taken out (the user name and the rest stay: they say which
    store is meant)."""
    if parts.password is None:
        return urlunsplit(parts)
    user = parts.username or ""
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    port = f":{parts.port}" if parts.port else ""
    return urlunsplit(parts._replace(netloc=f"{user}@{host}{port}"))


def shown(url: str) -> str:
    """`url` as messages may print it."""
    return _shown(urlsplit(url))
