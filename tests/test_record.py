"""The record's one codec: every layout written reads back as the same record, our own lines are
placed from their head without parsing, and the marks that frame a piped stream."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os

import pytest
from hypothesis import given
from hypothesis import strategies as st

from flatten import FlattenOptions, flatten_root
from flatten.hashing import sha256_hex
from flatten.record import (
    FIELDS,
    INT_MAX,
    LAYOUTS,
    NODE_EMBED_KEYS,
    NODE_LLM_KEYS,
    PROFILES,
    Malformed,
    Mark,
    Provenance,
    Record,
    content_digest,
    decode_line,
    encode_line,
    end_mark,
    error_mark,
    is_stream,
    native_head,
    provenance_pairs,
    read_mark,
    read_provenance,
    split_id,
)
from tests.conftest import PROJECT, write

text = st.text(min_size=1, max_size=30)
maybe = st.none() | text
line_number = st.none() | st.integers(min_value=1, max_value=INT_MAX)


@st.composite
def records(draw: st.DrawFn) -> Record:
    content = draw(text.filter(str.strip))
    meta = draw(st.dictionaries(st.sampled_from(["apiVersion", "lineUnit", "namespace", "x-n"]),
                                st.text(max_size=10) | st.integers() | st.booleans()))  # fmt: skip
    return Record(
        source=draw(text),
        ordinal=draw(st.integers(min_value=1, max_value=INT_MAX)),
        title=draw(text),
        content=content,
        kind=draw(st.sampled_from(["markdown", "code", "yaml", "text"])),
        hash=sha256_hex(content),
        doc_hash=draw(maybe),
        provenance=Provenance(draw(maybe), draw(maybe), draw(maybe)),
        lang=draw(maybe),
        doc_title=draw(maybe),
        # A breadcrumb part holding ">" could not be told from the separator in a flat layout.
        section=tuple(draw(st.lists(text.filter(lambda s: ">" not in s), max_size=3))),
        anchor=draw(maybe),
        symbol=draw(maybe),
        start_line=draw(line_number),
        end_line=draw(line_number),
        url=draw(maybe),
        redactions=draw(st.integers(min_value=0, max_value=1000)),
        syntax_error=draw(st.booleans()),
        meta=tuple(sorted(meta.items())),
    )


@pytest.mark.parametrize("layout", sorted(PROFILES))
@given(record=records())
def test_every_layout_written_reads_back_as_the_same_record(layout, record):
    line = encode_line(record, layout)
    assert line.endswith(b"\n") and b"\n" not in line[:-1]
    assert decode_line(line, "fallback") == record


def test_the_native_layout_writes_the_fields_in_the_codecs_order():
    golden = (PROJECT / "tests" / "golden" / "docs-tree.jsonl").read_text().splitlines()
    order = [f.key for f in FIELDS]
    for line in golden:
        keys = [k for k in json.loads(line) if k in order]
        assert keys == sorted(keys, key=order.index)
    assert [f.key for f in FIELDS[:7]] == [
        "id", "source", "title", "content", "chunkSize", "repoUrl", "commit"
    ]  # fmt: skip


def test_framework_layouts_keep_metadata_flat():
    record = Record("a.md", 2, "T", "body", "markdown", sha256_hex("body"), None,
                    section=("A", "B"), start_line=3)  # fmt: skip
    for name, layout in LAYOUTS.items():
        line = json.loads(encode_line(record, name))
        meta = line[layout.meta_key]
        assert line[layout.id_key] == "a.md#2" and line[layout.content_key] == "body"
        assert meta["section"] == "A > B" and all(not isinstance(v, list) for v in meta.values())
        assert ("id" in meta) == layout.id_in_meta and None not in meta.values()


@given(record=records())
def test_llamaindex_nodes_show_a_model_only_where_the_text_sits_and_name_their_document(record):
    node = json.loads(encode_line(record, "llamaindex"))
    keys = node["metadata"].keys()
    shown_to_embed = keys - set(node["excluded_embed_metadata_keys"])
    shown_to_llm = keys - set(node["excluded_llm_metadata_keys"])
    assert shown_to_embed <= set(NODE_EMBED_KEYS) and shown_to_llm <= set(NODE_LLM_KEYS)
    assert {"source", "title"} <= shown_to_embed <= shown_to_llm
    assert not {"hash", "docHash", "chunkSize", "commit", "repoUrl", "ordinal"} & shown_to_llm
    source = {"node_id": record.source, "node_type": "4"}  # LlamaIndex: SOURCE, a DOCUMENT
    if record.doc_hash is not None:
        source["hash"] = record.doc_hash
    assert node["relationships"] == {"1": source}


@given(record=records())
def test_our_lines_are_placed_from_their_head_without_parsing(record):
    # A source JSON escapes, or an ordinal of 19 digits, leaves the line to the parser.
    plain = json.dumps(record.source, ensure_ascii=False) == f'"{record.source}"'
    expected = (record.source, record.ordinal) if plain and record.ordinal < 10**18 else None
    assert native_head(encode_line(record)) == expected
    spaced = json.dumps(record.to_dict())  # json.dumps' default spacing, ASCII escapes
    # ensure_ascii escapes DEL and every non-ASCII character: an escaped source is parsed.
    escaped = json.dumps(record.source) != f'"{record.source}"'
    assert native_head(spaced.encode()) == (None if escaped else expected)


def test_a_head_with_an_ordinal_past_64_bits_is_left_to_the_parser():
    line = b'{"id":"a.md#99999999999999999999999","source":"a.md","content":"x"}'
    assert native_head(line) is None
    assert decode_line(line, "f").ordinal == -1  # the id is no <source>#<ordinal>: no ordinal


@pytest.mark.parametrize(
    ("value", "expected"),
    [("a.md#2", ("a.md", 2)), ("a#b#3", ("a#b", 3)), (f"x#{INT_MAX}", ("x", INT_MAX)),
     (f"x#{INT_MAX + 1}", None), ("x#99999999999999999999999", None), ("x#", None),
     ("x#²", None), ("beir-7", None)],
)  # fmt: skip
def test_split_id_takes_only_ordinals_a_store_can_hold(value, expected):
    assert split_id(value) == expected


def test_marks_are_told_from_records():
    assert read_mark(encode_line(end_mark(3))) == Mark(records=3)
    assert read_mark(encode_line(error_mark("disk-full"))) == Mark(error="disk-full")
    assert read_mark(b'{"id":"a#1","source":"a","content":"x"}\n') is None
    with pytest.raises(Malformed):
        read_mark(b'{"docsFlatten":{"end":"yes"}}\n')
    with pytest.raises(Malformed, match="no text"):  # a mark is clearly not a record
        decode_line(encode_line(end_mark(3)), "f")


def test_a_pipe_is_a_stream_and_a_file_is_not(tmp_path):
    read, write = os.pipe()
    try:
        assert is_stream(read) and is_stream(write)
    finally:
        os.close(read)
        os.close(write)
    with open(tmp_path / "f", "wb") as handle:
        assert not is_stream(handle.fileno())


# Content that spells provenance keys: text, never taken for the record's own fields.
TRICKY = st.sampled_from(['"commit":"abc"', 'x\\", "ref": null, "a', '{"dirty": true}', "repoPath"])
origins = st.tuples(maybe, maybe, maybe, maybe, st.booleans())


def digest_of(line: bytes) -> tuple[str, tuple]:
    digest = hashlib.sha256()
    content_digest(line.rstrip(b"\n"), digest)
    return digest.hexdigest(), read_provenance(provenance_pairs(line) or [])


def with_origin(record: Record, origin: tuple) -> Record:
    repo_url, commit, ref, repo_path, dirty = origin
    return dataclasses.replace(record, provenance=Provenance(repo_url, commit, ref),
                               repo_path=repo_path, dirty=dirty)  # fmt: skip


@given(record=records(), tricky=TRICKY, old=origins, new=origins)
def test_a_line_differing_only_in_provenance_has_the_same_content_digest(record, tricky, old, new):
    record = dataclasses.replace(record, content=record.content + tricky)
    before, read_before = digest_of(encode_line(with_origin(record, old)))
    after, read_after = digest_of(encode_line(with_origin(record, new)))
    assert before == after
    assert (read_before, read_after) == (old, new)
    changed = dataclasses.replace(record, content=record.content + "!")
    assert digest_of(encode_line(with_origin(changed, new)))[0] != after


@given(content=st.text())
def test_chunk_size_is_the_contents_utf8_size(content):
    record = Record(source="a.md", ordinal=1, title="a", content=content, kind=None, hash="",
                    doc_hash=None)  # fmt: skip
    assert record.chunk_size == len(content.encode("utf-8"))


def test_a_record_made_field_by_field_is_the_one_its_constructor_makes(tmp_path):
    # `new_record` skips the frozen __init__ (build_records and decode use it): every field
    # must be set, and nothing else, or records would differ from `Record(...)` ones.
    write(tmp_path, {"a.md": "# A\n\n## B\n\nbody\n", "m.py": "def f():\n    return 1\n"})
    made = list(flatten_root(tmp_path, FlattenOptions(kind="auto", workers=1)))
    names = [f.name for f in dataclasses.fields(Record)]
    for record in made:
        assert list(vars(record)) == names
        assert record == Record(**{name: getattr(record, name) for name in names})
    line = encode_line(made[0])
    assert list(vars(decode_line(line, "x"))) == names
