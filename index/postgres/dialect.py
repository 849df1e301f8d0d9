"""The index's portable SQL, written once for SQLite, as PostgreSQL runs it.

The modules of `index/` write one SQL text for both stores; the few SQLite spellings they use
are rewritten here, in one place, rather than each module keeping a second copy:

- `?` placeholders become `%s` (and a literal `%` becomes `%%`, psycopg's escape);
- an id list passed as JSON, `x IN (SELECT value FROM json_each(?))`, becomes `x = ANY(%s)`
  with the JSON decoded to a list (Postgres plans an array parameter far better than a set
  returning function, and compares it with the column's own type);
- `INSERT OR IGNORE` becomes `INSERT ... ON CONFLICT DO NOTHING`;
- `WHERE 1` (a filter that is then extended with `AND ...`) becomes `WHERE true`;
- `group_concat(x, sep)` becomes `string_agg(x, sep)`; `instr(s, t)` becomes `strpos(s, t)`;
- `? IS NULL` (an optional filter) becomes `?::text IS NULL`: Postgres must know a type;
- `json_extract(col, '$.key')` becomes `(col::jsonb ->> 'key')` (a text value: the index reads
  only text members this way).

Quoted literals are left as they are. The translation is pure and cached per statement.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

_JSON_LIST = re.compile(r"\bIN\s*\(\s*SELECT\s+value\s+FROM\s+json_each\(\s*\?\s*\)\s*\)", re.I)
_OR_IGNORE = re.compile(r"^\s*INSERT\s+OR\s+IGNORE\s+INTO\b", re.I)
_WHERE_1 = re.compile(r"\bWHERE\s+1\b(?!\s*[=<>!])", re.I)
_GROUP_CONCAT = re.compile(r"\bgroup_concat\s*\(", re.I)
_INSTR = re.compile(r"\binstr\s*\(", re.I)
_JSON_EXTRACT = re.compile(r"\bjson_extract\(\s*([\w.]+)\s*,\s*'\$\.(\w+)'\s*\)", re.I)
_PARAM_IS_NULL = re.compile(r"\?(\s+IS\s+(?:NOT\s+)?NULL\b)", re.I)
_JSON_MARK = "\x00json\x00"  # stands for a JSON-list placeholder until `?`s are numbered


@dataclass(frozen=True)
class Statement:
    sql: str
    json_lists: tuple[int, ...]  # parameter positions that hold a JSON list to decode


@functools.lru_cache(maxsize=1024)
def translate(sql: str) -> Statement:
    """`sql` (SQLite's spelling) as PostgreSQL's, with what its parameters need."""
    sql = _JSON_EXTRACT.sub(r"(\1::jsonb ->> '\2')", sql)
    pieces = _split_literals(sql)
    code = "\x01".join(piece for quoted, piece in pieces if not quoted)
    code = _JSON_LIST.sub(f"= ANY({_JSON_MARK})", code)
    code = _WHERE_1.sub("WHERE true", code)
    code = _PARAM_IS_NULL.sub(r"?::text\1", code)
    code = _GROUP_CONCAT.sub("string_agg(", code)
    code = _INSTR.sub("strpos(", code)
    ignore = bool(_OR_IGNORE.match(code))
    if ignore:
        code = _OR_IGNORE.sub("INSERT INTO", code, count=1)
    code = code.replace("%", "%%")
    json_lists = []
    out = []
    position = 0
    for token in re.split(f"(\\?|{re.escape(_JSON_MARK)})", code):
        if token == "?":
            out.append("%s")
            position += 1
        elif token == _JSON_MARK:
            out.append("%s")
            json_lists.append(position)
            position += 1
        else:
            out.append(token)
    code_parts = iter("".join(out).split("\x01"))
    text = "".join(
        piece.replace("%", "%%") if quoted else next(code_parts) for quoted, piece in pieces
    )
    if ignore:
        text = text.rstrip().rstrip(";") + " ON CONFLICT DO NOTHING"
    return Statement(text, tuple(json_lists))


def _split_literals(sql: str) -> list[tuple[bool, str]]:
    """(is a quoted literal or identifier, text) pieces, in order; code pieces may be empty so
    that code and literals alternate (code first)."""
    pieces: list[tuple[bool, str]] = []
    code_start = 0
    i = 0
    while i < len(sql):
        quote = sql[i]
        if quote in "'\"":
            end = i + 1
            while end < len(sql):
                if sql[end] == quote:
                    if end + 1 < len(sql) and sql[end + 1] == quote:
                        end += 2  # a doubled quote inside the literal
                        continue
                    break
                end += 1
            pieces.append((False, sql[code_start:i]))
            pieces.append((True, sql[i : end + 1]))
            i = code_start = end + 1
            continue
        i += 1
    pieces.append((False, sql[code_start:]))
    return pieces


def parameters(statement: Statement, params: Sequence[Any] | None) -> Sequence[Any] | None:
    """The parameters as psycopg takes them: JSON id lists decoded to lists, and booleans as
    the integers SQLite stores (the schema's flags are INTEGER columns on both stores)."""
    if params is None:
        return None
    values = [int(v) if isinstance(v, bool) else v for v in params]
    for position in statement.json_lists:
        value = values[position]
        values[position] = json.loads(value) if isinstance(value, (str, bytes)) else list(value)
    return values
