"""Rows written as one SQLite statement: the loader's batches of chunk text (FTS5).

A leaf module (the FTS5 text index uses it; it uses none of the index's modules).
"""

from __future__ import annotations

import functools
import sqlite3
from collections.abc import Callable, Sequence
from typing import Any

import orjson


def bulk_insert(db: Any, sql: str, rows: Sequence[tuple[Any, ...]]) -> Callable[[], object]:
    """`executemany(sql, rows)` for an `INSERT ... VALUES (?, ...)`, made ready now and run when
    the result is called. On SQLite: one statement over the rows as a JSON array, which SQLite
    runs without taking the GIL (`executemany` takes it at every row: a second thread writing
    that way waits for the GIL at each row). The array is made now, so a caller stages it on one
    thread and writes it on another. What JSON cannot carry as bound parameters do goes row by
    row: a NUL (SQLite's JSON ends a string at its first NUL), an integer past 53 bits, text
    that is not UTF-8 (each then fails or passes as `executemany` would). Other stores:
    `executemany` as it is."""
    if not isinstance(db, sqlite3.Connection) or not rows:
        return functools.partial(db.executemany, sql, rows)
    try:
        # Integers past 53 bits are refused: orjson writes up to 64 unsigned, and SQLite reads
        # past 63 as a float, where a bound parameter overflows (row by row, it fails the same).
        payload = orjson.dumps(rows, option=orjson.OPT_STRICT_INTEGER)
    except orjson.JSONEncodeError:
        return functools.partial(db.executemany, sql, rows)
    if b"\\u0000" in payload:
        return functools.partial(db.executemany, sql, rows)
    head, _, values = sql.partition(" VALUES ")
    columns = ", ".join(f"value ->> {i}" for i in range(values.count("?")))
    return functools.partial(db.execute, f"{head} SELECT {columns} FROM json_each(?)", (payload,))
