"""A psycopg connection behind sqlite3's interface, so the index's modules run one SQL text on
either store: `execute`/`executemany` with `?` placeholders returning a cursor that iterates and
fetches tuples (or `sqlite3.Row`-like rows when asked), `in_transaction`, explicit BEGIN/COMMIT
(the connection is in autocommit mode, as the SQLite one is with `isolation_level=None`).
SQL is rewritten by `index.postgres.dialect`."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from index.postgres.dialect import parameters, translate


class Row(tuple):
    """A row read by position or by column name, as `sqlite3.Row` is."""

    _names: tuple[str, ...] = ()

    def __getitem__(self, key):  # type: ignore[no-untyped-def, override]
        if isinstance(key, str):
            return tuple.__getitem__(self, self._names.index(key))
        return tuple.__getitem__(self, key)

    def keys(self) -> list[str]:
        return list(self._names)


class Cursor:
    def __init__(self, connection: Connection) -> None:
        self.connection = connection
        self._cursor = connection.raw.cursor()
        self.row_factory: Any = None

    def execute(self, sql: str, params: Sequence[Any] | None = None) -> Cursor:
        statement = translate(sql)
        # Always a sequence: psycopg reads `%%` as `%` only when it substitutes parameters.
        self._cursor.execute(statement.sql, parameters(statement, params) or ())  # type: ignore[arg-type]
        return self

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> Cursor:
        statement = translate(sql)
        batch = [parameters(statement, row) for row in rows]
        if batch:
            self._cursor.executemany(statement.sql, batch)  # type: ignore[arg-type]
        return self

    def _row(self, row: tuple[Any, ...] | None) -> Any:
        if row is None or self.row_factory is not sqlite3.Row:
            return row
        named = Row(row)
        named._names = tuple(column.name for column in self._cursor.description or ())
        return named

    def fetchone(self) -> Any:
        return self._row(self._cursor.fetchone())

    def fetchall(self) -> list[Any]:
        return [self._row(row) for row in self._cursor.fetchall()]

    def fetchmany(self, size: int = 1) -> list[Any]:
        return [self._row(row) for row in self._cursor.fetchmany(size)]

    def __iter__(self) -> Iterator[Any]:
        for row in self._cursor:
            yield self._row(row)

    @property
    def rowcount(self) -> int:
        return self._cursor.rowcount

    @property
    def description(self):  # type: ignore[no-untyped-def]
        return self._cursor.description

    def close(self) -> None:
        self._cursor.close()


class Connection:
    """sqlite3.Connection's interface over a psycopg connection in autocommit mode."""

    vector_type = "vector"  # the store URL's `vectors=` (index.postgres.vectors)
    build_memory: int | None = None  # the store URL's `build_memory=`, in bytes

    def __init__(self, raw: Any) -> None:
        self.raw = raw

    def cursor(self) -> Cursor:
        return Cursor(self)

    # What `index.vectors.storage` asks of a Postgres store (pgvector; `index.postgres.vectors`).
    def vector_literal(self, vector: Any) -> str:
        from index.postgres.vectors import literal

        return literal(vector)

    def index_vectors(self) -> None:
        from index.postgres.vectors import ensure_index

        ensure_index(self)

    def execute(self, sql: str, params: Sequence[Any] | None = None) -> Cursor:
        return self.cursor().execute(sql, params)

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> Cursor:
        return self.cursor().executemany(sql, rows)

    @property
    def in_transaction(self) -> bool:
        from psycopg.pq import TransactionStatus

        return self.raw.info.transaction_status != TransactionStatus.IDLE

    def close(self) -> None:
        self.raw.close()
