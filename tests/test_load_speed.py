"""The loader's fast paths read and index exactly what the plain ones did: orjson reads every line
to json's value (or leaves it to json), the camelCase check finds what the pair rule finds, and a
store takes the FTS5 write buffer at its next load."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from flatten.record import Malformed, parse_line
from flatten.record import json_value as read_by_json
from index.loader import _BatchWriter, load_files, load_records
from index.search import SearchOptions, search
from index.store import Store
from index.text import _has_inner_capital, identifier_parts
from index.textindex import ChunkText, text_index
from index.textindex.fts5 import FTS_BUFFER_BYTES
from tests.conftest import jsonl, record

SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**40), max_value=10**40)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text()
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


def typed(value: Any) -> Any:
    """The value with every number's type kept beside it: 1, 1.0 and True compare unequal."""
    if isinstance(value, dict):
        return {k: typed(v) for k, v in value.items()}
    if isinstance(value, list):
        return [typed(v) for v in value]
    if isinstance(value, float) and math.copysign(1, value) < 0 and value == 0:
        return ("float", "-0.0")
    return (type(value).__name__, value)


def json_value(line: bytes) -> Any:
    """What json reads from the line, or the reason it is malformed."""
    try:
        return typed(parse_line_with_json(line))
    except Malformed as exc:
        return ("malformed", str(exc))


def parse_line_with_json(line: bytes) -> Any:
    return read_by_json(line)  # the standard library alone


def either_value(line: bytes) -> Any:
    try:
        return typed(parse_line(line))
    except Malformed as exc:
        return ("malformed", str(exc))


@settings(max_examples=300)
@given(VALUES, st.booleans())
def test_every_line_reads_to_the_value_json_reads(value, ascii_only):
    line = json.dumps(value, ensure_ascii=ascii_only).encode("utf-8", "surrogatepass") + b"\n"
    assert either_value(line) == json_value(line)


@given(st.text(alphabet='{}[]",:0123456789.eE-+ truefalsnNaI\\u\x00é', max_size=40))
def test_any_text_reads_as_json_reads_it_or_fails_the_same(text):
    line = text.encode("utf-8")
    assert either_value(line) == json_value(line)


def test_integers_past_64_bits_stay_integers():
    line = b'{"content": "x", "big": 100000000000000000000000000000, "neg": -9223372036854775809}'
    assert parse_line(line) == {
        "content": "x",
        "big": 10**29,
        "neg": -9223372036854775809,
    }
    assert type(parse_line(line)["big"]) is int


def test_long_digit_runs_in_text_are_read_by_orjson(monkeypatch):
    """A commit or hash of digits is text: only a number past 64 bits needs json (a line of the
    index bench, whose commit is forty zeros, went to json every time)."""
    import flatten.record as codec

    def refuse(text: str) -> Any:
        raise AssertionError("read by json")

    line = b'{"content": "x", "commit": "' + b"0" * 40 + b'", "n": 12345678901234567890}'
    monkeypatch.setattr(codec.json, "loads", refuse)
    assert parse_line(line) == {"content": "x", "commit": "0" * 40, "n": 12345678901234567890}
    with pytest.raises(AssertionError, match="read by json"):
        parse_line(b'{"content": "x", "big": 100000000000000000000000, "f": 1.5}')


def pair_rule(text: str) -> bool:
    """The inner-capital rule, position by position."""
    for at in range(1, len(text)):
        if not "A" <= text[at] <= "Z":
            continue
        before = text[at - 1]
        if before.islower() or before.isdigit():
            return True
        if before.isupper() and text[at + 1 : at + 2].islower():
            return True
    return False


@given(st.text(alphabet="aZbY09 _-.ÉéİıßΣσ\u0130\n", max_size=30))
def test_the_inner_capital_check_finds_what_the_pair_rule_finds(text):
    assert _has_inner_capital(text) == pair_rule(text)


def test_identifier_parts_of_capitalised_prose_and_of_code():
    assert identifier_parts("Getting started with the client") == ""
    assert identifier_parts("Call getUserName on an HTTPServer") == "get user name http server"


def test_a_store_without_the_write_buffer_takes_it_at_its_next_load(tmp_path):
    with Store.open(tmp_path / "store") as store:
        with store.write() as db:  # as a store built before the buffer was set
            db.execute("DELETE FROM chunks_fts_config WHERE k = 'hashsize'")
            db.execute("DELETE FROM chunks_exact_config WHERE k = 'hashsize'")
        load_records(store, [record("a.md", 1, "otters hold hands")], "docs")
        for table in ("chunks_fts", "chunks_exact"):
            value = store.db.execute(f"SELECT v FROM {table}_config WHERE k = 'hashsize'")
            assert value.fetchone() == (FTS_BUFFER_BYTES,)


def test_a_slice_holding_a_nul_is_indexed_whole(tmp_path):
    """The text goes to SQLite as JSON, whose strings end at a NUL: such a batch goes row by
    row, as bound parameters keep the whole text."""
    with Store.open(tmp_path / "store") as store:
        load_records(store, [record("a.md", 1, "before\x00after otters")], "docs")
        body = store.db.execute("SELECT body FROM chunks_fts").fetchone()[0]
        assert body == "before\x00after otters"
        assert [h.source for h in search(store, "otters").results] == ["a.md"]


@pytest.mark.parametrize("body", ["green otters", "before\x00after otters"])
def test_staged_chunks_run_no_statement_until_their_write_is_called(tmp_path, body):
    """The loader stages a batch on its reading thread while the one before is written: the
    staging must leave the connection alone (JSON route and row-by-row route alike)."""
    rows = [ChunkText(1, "Otters", "", "", body, ""), ChunkText(2, "Seals", "", "", "seals", "")]
    with Store.open(tmp_path / "store") as store:
        statements: list[str] = []
        store.db.set_trace_callback(statements.append)
        with store.write() as db:
            write = text_index(db).stage_chunks(1, rows)
            staged, statements[:] = list(statements), []
            write()
        store.db.set_trace_callback(None)
        assert staged == ["BEGIN IMMEDIATE"]
        assert any("chunks_fts" in s for s in statements)
        assert any("chunks_exact" in s for s in statements)
        assert store.db.execute("SELECT rowid, body FROM chunks_fts").fetchall() == [
            (1, body),
            (2, "seals"),
        ]
        exact = store.db.execute("SELECT rowid FROM chunks_exact WHERE chunks_exact MATCH 'otters'")
        assert exact.fetchall() == [(1,)]


def corpus(edited: set[int]) -> list[dict]:
    return [
        record(f"docs/{n}.md", k, f"slice {k} of page {n} about otters{' edited' * (n in edited)}")
        for n in range(40)
        for k in (1, 2, 3)
    ]


def index_state(store: Store) -> list[tuple]:
    rows = store.db.execute(
        "SELECT d.source, c.ordinal, f.body, d.fingerprint FROM chunks c "
        "JOIN documents d ON d.id = c.document_id JOIN chunks_fts f ON f.rowid = c.id "
        "ORDER BY d.source, c.ordinal"
    ).fetchall()
    exact = store.db.execute("SELECT count(*) FROM chunks_exact('edited')").fetchone()[0]
    return [*rows, ("exact 'edited'", exact)]


def test_many_small_batches_index_what_one_batch_does(tmp_path, monkeypatch):
    """Batches written on the second thread, replaced documents deleted between them."""
    states = []
    for name, batch in (("one", 1 << 30), ("many", 100)):
        monkeypatch.setattr(_BatchWriter, "BATCH_CHARS", batch)
        with Store.open(tmp_path / name) as store:
            load_records(store, corpus(set()), "docs")
            report = load_records(store, corpus({3, 17, 18, 39}), "docs")
            assert (report.updated, report.unchanged) == (4, 36)
            states.append(index_state(store))
    assert states[0] == states[1]
    assert states[0][-1] == ("exact 'edited'", 12)


def corpus_state(store: Store, corpus: str) -> list[tuple]:
    return store.db.execute(
        "SELECT d.source, d.fingerprint, c.ordinal, c.title, d.commit_sha FROM chunks c "
        "JOIN documents d ON d.id = c.document_id JOIN corpora k ON k.id = d.corpus_id "
        "WHERE k.name = ? ORDER BY d.source, c.ordinal",
        (corpus,),
    ).fetchall()


@pytest.mark.parametrize("batch", [1, 1 << 30])  # every document a batch of its own, or one
def test_a_document_split_across_the_input_loads_as_if_it_came_whole(
    store, tmp_path, monkeypatch, batch
):
    """Documents are written as soon as the next begins; one that comes back later undoes
    that (a document whose first part replaced the stored one among them) and every document
    is written after the whole input is read: the same rows, counts and matches either way."""
    first = [record(f"{s}.md", k, f"{s} part {k} about otters", commit="c1")
             for s in "abcd" for k in (1, 2)]  # fmt: skip
    changed = [record("b.md", 2, "b part 2 about beavers now", commit="c2")]
    whole = [*first[:2], first[2], changed[0], *first[4:]]
    split = [*first[:2], first[2], *first[4:6], changed[0], *first[6:]]  # b.md#2 after c.md
    monkeypatch.setattr(_BatchWriter, "BATCH_CHARS", batch)
    reports = {}
    for corpus, second in (("whole", whole), ("split", split)):
        load_files(store, [jsonl(tmp_path / f"{corpus}-1.jsonl", first)], corpus)
        report = load_files(store, [jsonl(tmp_path / f"{corpus}-2.jsonl", second)], corpus)
        reports[corpus] = (report.added, report.updated, report.unchanged, report.chunks)
    assert reports["split"] == reports["whole"] == (0, 1, 3, 2)
    assert corpus_state(store, "split") == corpus_state(store, "whole")
    for corpus in ("whole", "split"):
        found = search(store, "beavers", SearchOptions(corpus=corpus)).results
        assert [r.token for r in found] == ["b.md#2"]
        otters = search(store, "otters", SearchOptions(corpus=corpus, top_k=20)).results
        assert "b.md#2" not in [r.token for r in otters]


def lines_by_readline(handle: Any, limit: int) -> list[tuple[int, int, bytes | None]]:
    """The reader pass 1 used before blocks: one readline a line, over `limit` skipped."""
    out, number = [], 0
    while True:
        offset = handle.tell()
        line = handle.readline(limit + 1)
        if not line:
            return out
        number += 1
        if len(line) > limit and not line.endswith(b"\n"):
            while line and not line.endswith(b"\n"):
                line = handle.readline(7)
            out.append((number, offset, None))
            continue
        out.append((number, offset, line.removesuffix(b"\n")))


@settings(max_examples=300)
@given(st.binary(max_size=200).map(lambda b: b.replace(b"a", b"\n")), st.integers(1, 9),
       st.integers(1, 12))  # fmt: skip
def test_lines_read_a_block_at_a_time_are_the_lines_readline_gives(data, block, limit):
    import io

    import index.loader as loader

    saved = loader.READ_BYTES, loader.MAX_LINE_BYTES
    loader.READ_BYTES, loader.MAX_LINE_BYTES = block, limit
    try:
        got = list(loader._read_lines(io.BytesIO(data)))
    finally:
        loader.READ_BYTES, loader.MAX_LINE_BYTES = saved
    assert got == lines_by_readline(io.BytesIO(data), limit)


def fingerprints(store: Store) -> dict[str, str]:
    return dict(store.db.execute("SELECT source, fingerprint FROM documents").fetchall())


def test_a_no_op_reload_hashes_the_lines_and_computes_no_content_digest(
    store, tmp_path, monkeypatch
):
    import index.loader as loader

    path = jsonl(tmp_path / "a.jsonl", corpus(set()))
    load_files(store, [path], "docs")

    def refuse(*args: object) -> None:
        raise AssertionError("content digest computed")

    monkeypatch.setattr(loader, "content_digest", refuse)
    report = load_files(store, [path], "docs")
    assert (report.unchanged, report.added, report.updated, report.chunks) == (40, 0, 0, 0)


def test_fingerprints_of_the_previous_version_match_and_are_rewritten(store, tmp_path):
    """`v2:<content>` (no lines digest) still matches by content; the next load adds the lines
    digest without rewriting the documents."""
    from flatten.hashing import sha256_hex
    from flatten.record import Provenance, Record, encode_line

    ours = [encode_line(Record(r["source"], r["ordinal"], r["title"], r["content"], "markdown",
                               sha256_hex(r["content"]), None, Provenance("u", "c1", "main")))
            for r in corpus(set())]  # fmt: skip
    path = jsonl(tmp_path / "a.jsonl", [line.rstrip(b"\n") for line in ours])
    load_files(store, [path], "docs")
    full = fingerprints(store)
    with store.write() as db:
        db.executemany("UPDATE documents SET fingerprint = ? WHERE source = ?",
                       [(f.rpartition(":")[0], s) for s, f in full.items()])  # fmt: skip
    chunk_ids = store.db.execute("SELECT id FROM chunks ORDER BY id").fetchall()
    report = load_files(store, [path], "docs")
    assert (report.unchanged, report.chunks) == (40, 0)
    assert fingerprints(store) == full
    assert store.db.execute("SELECT id FROM chunks ORDER BY id").fetchall() == chunk_ids


CELLS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63 - 1)
    | st.integers(min_value=2**63, max_value=2**70)
    | st.text()
)


@settings(max_examples=200)
@given(st.lists(st.tuples(CELLS, CELLS, CELLS), max_size=11))
def test_a_bulk_insert_stores_what_executemany_stores(rows):
    """Rows bound many to a statement (`bulk_insert`) store the values, and their types, that
    binding each row stores, or fail as it fails; also when they take several statements, the
    last one's rows padded to a power of two."""
    import sqlite3
    from unittest import mock

    from index import bulk

    db = sqlite3.connect(":memory:", isolation_level=None)
    numbered = [(n, *row) for n, row in enumerate(rows)]
    outcomes = []
    for table, most in (("bound", None), ("bulk", bulk.MAX_ROWS), ("pieces", 4)):
        db.execute(f"CREATE TABLE {table} (id INTEGER PRIMARY KEY, a, b TEXT, c INTEGER)")
        sql = f"INSERT INTO {table} (id, a, b, c) VALUES (?, ?, ?, ?)"
        try:
            if most is None:
                db.executemany(sql, numbered)
            else:
                with mock.patch.object(bulk, "MAX_ROWS", most):
                    bulk.bulk_insert(db, sql, numbered)()
        except Exception as exc:
            outcomes.append(type(exc))
            continue
        outcomes.append(db.execute(
            f"SELECT id, a, typeof(a), b, typeof(b), c, typeof(c) FROM {table} ORDER BY id"
        ).fetchall())  # fmt: skip
    assert outcomes[0] == outcomes[1] == outcomes[2]


def test_a_title_holding_a_nul_is_stored_whole(tmp_path):
    with Store.open(tmp_path / "store") as store:
        load_records(store, [record("a.md", 1, "otters", title="Before\x00after")], "docs")
        titles = store.db.execute("SELECT d.title, c.title FROM chunks c JOIN documents d "
                                  "ON d.id = c.document_id").fetchall()  # fmt: skip
        assert titles == [("Before\x00after", "Before\x00after")]
