"""Rows written as few SQLite statements: the loader's batches of chunk text (FTS5).

A leaf module (the FTS5 text index uses it; it uses none of the index's modules).
"""

from __future__ import annotations

import functools
import sqlite3
from collections.abc import Callable, Sequence
from typing import Any

# Rows a statement binds at most (fewer where SQLite allows fewer parameters): a power of two,
# as every statement's row count is (see `bulk_insert`). The connection keeps each size it ran
# prepared: for FTS5's six columns about 9 MB for every size up to this one (38 MB up to 2**14).
# A larger batch (many small slices) takes several statements.
MAX_ROWS = 1 << 12


def bulk_insert(db: Any, sql: str, rows: Sequence[tuple[Any, ...]]) -> Callable[[], object]:
    """`executemany(sql, rows)` for an `INSERT ... VALUES (?, ...)`, made ready now and run when
    the result is called. On SQLite: one statement binds many rows (`VALUES (...), (...)`), which
    SQLite runs without taking the GIL (`executemany` takes it at every row: a second thread
    writing that way waits for the GIL at each row). The parameters are bound as `executemany`
    binds them, so the same values are stored (text holding a NUL, any integer SQLite takes) and
    the same values fail. The statements are made now, so a caller stages them on one thread and
    writes them on another.

    A statement's row count is a power of two, the rows past the batch's end never read
    (`LIMIT`): the few statements of each size are prepared once (the connection caches them),
    where a statement per batch size would fill the cache with large statements. Other stores:
    `executemany` as it is."""
    if not isinstance(db, sqlite3.Connection) or not rows:
        return functools.partial(db.executemany, sql, rows)
    head, _, values = sql.partition(" VALUES ")
    columns = values.count("?")
    most = min(MAX_ROWS, (db.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER) - 1) // columns)
    most = 1 << (most.bit_length() - 1)  # a power of two
    statements = []
    for at in range(0, len(rows), most):
        part = rows[at : at + most]
        size = 1 << (len(part) - 1).bit_length()
        params = [value for row in part for value in row]
        params.extend([None] * (columns * (size - len(part))))
        params.append(len(part))
        statement = f"{head} SELECT * FROM (VALUES {', '.join([values] * size)}) LIMIT ?"
        statements.append((statement, params))

    def write() -> None:
        for statement, params in statements:
            db.execute(statement, params)

    return write
