"""The v1 record and its one codec: the JSONL wire contract, written and read.

This module is the one place that knows the record's field names and their order (`FIELDS`),
the layouts other RAG frameworks load (`LAYOUTS`: native, langchain, llamaindex, haystack), and
the marks that frame a piped stream. The flatten writer encodes through it; the index loader
decodes through it.

The seven fields ChatCLI reads (`id, source, title, content, chunkSize, repoUrl, commit`) are
always written; the extensions only when they have a value, as flat scalars or short lists so
vector stores keep them. Format-specific fields come from the slicer as `meta` pairs, among them
`lineUnit: "cell"` on notebook slices: their `startLine`/`endLine` are 1-based cell numbers, not
lines of the file's JSON. Without `lineUnit`, ranges are lines. API-spec operations carry
`schemas` (the names of the schemas they reference); Kubernetes manifests `apiVersion` and
`namespace`. Records of a git source carry `repoPath`, the path inside the repository (`source`
stays relative to the folder the user named), and `dirty: true` when the work tree's file is not
what their `commit` holds (modified, staged or untracked).

Reading is lenient about layout (ours, LangChain's, LlamaIndex's, Haystack's, BEIR's, plain
`{"text": ...}`) and strict about values: a line that is not valid UTF-8, not JSON, nested past
the parser's depth, holding a lone surrogate, or an integer a 64-bit store cannot hold is
`Malformed`, with the reason.
"""

from __future__ import annotations

import json
import os
import re
import stat
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache, partial
from operator import attrgetter
from typing import Any

import orjson

from flatten.hashing import sha256_hex

RECORD_VERSION = 1
SECTION_SEPARATOR = " > "  # the breadcrumb as one string, in the framework layouts
INT_MAX = 2**63 - 1  # a record's integers are signed 64-bit: what SQLite and vector stores hold


class Malformed(ValueError):
    """A line or value that is not a record; the message says why."""


@dataclass(frozen=True)
class Provenance:
    """Where a run's documents came from: credentials are stripped before this is built."""

    repo_url: str | None = None
    commit: str | None = None
    ref: str | None = None


@dataclass(frozen=True)
class Record:
    source: str
    ordinal: int  # 1-based position of the slice in its document; -1 when read without one
    title: str
    content: str
    kind: str | None
    hash: str
    doc_hash: str | None
    provenance: Provenance = Provenance()
    lang: str | None = None
    doc_title: str | None = None
    section: tuple[str, ...] = ()
    anchor: str | None = None
    symbol: str | None = None
    start_line: int | None = None
    end_line: int | None = None
    url: str | None = None
    repo_path: str | None = None  # the path inside the repository named by the provenance
    dirty: bool = False  # the work tree's file differs from the provenance's commit
    redactions: int = 0
    syntax_error: bool = False
    meta: tuple[tuple[str, Any], ...] = ()  # format-specific fields (YAML: apiVersion, namespace)

    @property
    def id(self) -> str:
        return f"{self.source}#{self.ordinal}"

    @property
    def chunk_size(self) -> int:
        # An ASCII string's length is its UTF-8 size (isascii is a flag check, not a scan).
        content = self.content
        return len(content) if content.isascii() else len(content.encode("utf-8"))

    def to_dict(self) -> dict[str, Any]:
        """The native layout, keys in a fixed order so output is byte-for-byte deterministic."""
        return encode(self)

    def metadata(self) -> dict[str, Any]:
        """The extension fields that have a value."""
        return _values(self, _EXTENSIONS)


@dataclass(frozen=True)
class Field:
    key: str  # the JSON name
    attr: str  # the Record attribute it holds (dotted: through the provenance)
    type: type  # str, int, list or bool on the wire
    always: bool = False  # written even without a value (the seven fields ChatCLI reads)
    derived: bool = False  # written for readers, recomputed on read (never trusted)
    empty: Any = None  # an extension holding this is not written (nor one holding None)


# The native layout, in the order written. Nothing else in the project spells these names.
FIELDS: tuple[Field, ...] = (
    Field("id", "id", str, always=True),
    Field("source", "source", str, always=True),
    Field("title", "title", str, always=True),
    Field("content", "content", str, always=True),
    Field("chunkSize", "chunk_size", int, always=True, derived=True),
    Field("repoUrl", "provenance.repo_url", str, always=True),
    Field("commit", "provenance.commit", str, always=True),
    Field("kind", "kind", str),
    Field("lang", "lang", str),
    Field("docTitle", "doc_title", str),
    Field("section", "section", list, empty=()),
    Field("anchor", "anchor", str),
    Field("symbol", "symbol", str),
    Field("startLine", "start_line", int),
    Field("endLine", "end_line", int),
    Field("ordinal", "ordinal", int),
    Field("hash", "hash", str, derived=True),
    Field("docHash", "doc_hash", str),
    Field("ref", "provenance.ref", str),
    Field("repoPath", "repo_path", str),
    Field("dirty", "dirty", bool, empty=False),
    Field("url", "url", str),
    Field("redactions", "redactions", int, empty=0),
    Field("syntaxError", "syntax_error", bool, empty=False),
)
_GETTERS = tuple((f.key, attrgetter(f.attr), f.always, f.empty) for f in FIELDS)
_EXTENSIONS = tuple(g for g in _GETTERS if not g[2])


def _values(record: Record, getters: tuple[tuple[str, Any, bool, Any], ...]) -> dict[str, Any]:
    """The fields in order (the always-fields as they are, the others only with a value), then
    the slicer's own fields that have one."""
    data: dict[str, Any] = {}
    for key, get, always, empty in getters:
        value = get(record)
        if always:
            data[key] = value
        elif value is not None and (empty is None or value != empty):
            data[key] = list(value) if type(value) is tuple else value
    data.update((k, v) for k, v in record.meta if v is not None)
    return data


def _native_source() -> str:
    """`_values(record, _GETTERS)` written out from FIELDS, one statement per field (as
    dataclasses writes an `__init__`), returning with the dict whether orjson writes it as
    `dumps` does (`_orjson_exact`), known from each value's type as it is read. A loop calling
    a getter per field, then a walk of the dict for its types, were most of the cost of a line.
    An odd value (not the field's type) leaves the decision to `_orjson_exact`."""
    lines = ["def _native(record):", "    p = record.provenance"]
    for i, f in enumerate(FIELDS):
        owner, _, attr = f.attr.rpartition(".")
        lines.append(f"    v{i} = {'p' if owner else 'record'}.{attr}")
    always = [i for i, f in enumerate(FIELDS) if f.always]
    lines.append("    data = {" + ", ".join(f"{FIELDS[i].key!r}: v{i}" for i in always) + "}")
    lines.append("    exact = " + " and ".join(f"type(v{i}) in _SCALARS" for i in always))
    for i, f in enumerate(FIELDS):
        if f.always:
            continue
        v = f"v{i}"
        lines.append(
            f"    if {v} is not None"
            + (f" and {v} != {f.empty!r}:" if f.empty is not None else ":")
        )
        if f.type is list:  # held as a tuple of scalars, written as a list
            lines += [
                f"        if type({v}) is tuple:",
                f"            {v} = list({v})",
                f"        if type({v}) is not list or not _SCALARS.issuperset(map(type, {v})):",
                "            exact = False",
            ]
        else:
            lines += [
                f"        if type({v}) not in _SCALARS:",
                "            exact = False",
                f"            if type({v}) is tuple:",
                f"                {v} = list({v})",
            ]
        lines.append(f"        data[{f.key!r}] = {v}")
    lines += [
        "    if record.meta:",
        "        data.update((k, v) for k, v in record.meta if v is not None)",
        "        exact = False",
        "    return data, exact",
    ]
    return "\n".join(lines) + "\n"


def _compile_native() -> Callable[[Record], tuple[dict[str, Any], bool]]:
    namespace = {"_SCALARS": _SCALARS}
    exec(compile(_native_source(), "<flatten.record._native>", "exec"), namespace)
    return namespace["_native"]  # type: ignore[return-value]


def encode(record: Record, layout: str = "native") -> dict[str, Any]:
    """The record as one JSON object in `layout` (a key of `LAYOUTS`)."""
    if layout == "native":
        return _native(record)[0]
    return LAYOUTS[layout].encode(record)


@dataclass(frozen=True)
class Layout:
    """Another framework's document: the id, the text and a flat metadata object (scalars only:
    the breadcrumb becomes one string, because several vector stores reject lists)."""

    name: str
    loads_with: str  # how the framework reads one line
    id_key: str
    content_key: str
    meta_key: str
    id_in_meta: bool

    def encode(self, record: Record) -> dict[str, Any]:
        meta = encode(record)
        del meta["content"]
        if not self.id_in_meta:
            del meta["id"]
        if "section" in meta:
            meta["section"] = SECTION_SEPARATOR.join(meta["section"])
        meta = {k: v for k, v in meta.items() if v is not None}
        return {self.id_key: record.id, self.content_key: record.content, self.meta_key: meta}


# What LlamaIndex shows a model of a node's metadata, beside its text, when embedding it and when
# answering with it (it shows every key it is not told to exclude): where the text sits, never
# the bookkeeping (hashes, sizes, commit, ordinal). Any other key, a future one too, is excluded.
NODE_EMBED_KEYS = ("source", "docTitle", "section", "title", "symbol")
NODE_LLM_KEYS = (*NODE_EMBED_KEYS, "startLine", "endLine", "lineUnit", "url")
# NodeRelationship.SOURCE and ObjectType.DOCUMENT, as LlamaIndex's own `to_dict` writes them.
_SOURCE_RELATIONSHIP, _DOCUMENT_TYPE = "1", "4"


@dataclass(frozen=True)
class NodeLayout(Layout):
    """LlamaIndex's `TextNode`: also the metadata keys a model is not shown, and the node's SOURCE
    document (its `source`, hashed by `docHash`), by which LlamaIndex deletes and refreshes a
    document's nodes together."""

    def encode(self, record: Record) -> dict[str, Any]:
        node = super().encode(record)
        keys = node[self.meta_key].keys()
        node["excluded_embed_metadata_keys"] = [k for k in keys if k not in NODE_EMBED_KEYS]
        node["excluded_llm_metadata_keys"] = [k for k in keys if k not in NODE_LLM_KEYS]
        document = {"node_id": record.source, "node_type": _DOCUMENT_TYPE}
        if record.doc_hash is not None:
            document["hash"] = record.doc_hash
        node["relationships"] = {_SOURCE_RELATIONSHIP: document}
        return node


LAYOUTS: dict[str, Layout] = {
    layout.name: layout
    for layout in (
        Layout("langchain", "langchain_core.documents.Document(**line)",
               "id", "page_content", "metadata", id_in_meta=True),
        NodeLayout("llamaindex", "llama_index.core.schema.TextNode(**line)",
                   "id_", "text", "metadata", id_in_meta=False),
        Layout("haystack", "haystack.Document.from_dict(line)",
               "id", "content", "meta", id_in_meta=False),
    )
}  # fmt: skip

# Every layout's encoder by name (`--format`): `native` is the v1 record itself.
PROFILES: dict[str, Callable[[Record], dict[str, Any]]] = {
    "native": encode,
    **{name: partial(encode, layout=name) for name in LAYOUTS},
}

# What reading accepts, first match wins: ours, then the layouts above, then BEIR's `_id`.
ID_KEYS = ("id", "id_", "_id")
CONTENT_KEYS = ("content", "text", "page_content")
META_KEYS = ("metadata", "meta")
_ALIASES = {"permalink": "url"}  # another name a reader may meet for one of ours
_TEXT_FIELDS = frozenset(
    {f.key for f in FIELDS if f.type is str and not f.derived and f.key != "content"}
    | set(ID_KEYS) | set(_ALIASES)
)  # fmt: skip
_INT_FIELDS = frozenset(f.key for f in FIELDS if f.type is int and not f.derived)
_KNOWN = frozenset({f.key for f in FIELDS} | set(ID_KEYS) | set(CONTENT_KEYS) | set(META_KEYS)
                   | set(_ALIASES))  # fmt: skip
_ID = re.compile(r"(.*)#(\d{1,19})", re.DOTALL)  # fullmatch: a source may hold a line break


def place(source: str, start_line: int | None, end_line: int | None, line_unit: str | None) -> str:
    """Where a slice is, in words: `docs/x.md:12-40`, `nb.ipynb (cells 2-3)`, or the source
    alone when the slice has no range."""
    if start_line is None:
        return source
    span = f"{start_line}-{end_line if end_line is not None else start_line}"
    return f"{source} (cells {span})" if line_unit == "cell" else f"{source}:{span}"


_NAME_ESCAPE = re.compile(r"\\(\\|x[0-9a-f]{2})")


def source_bytes(source: str) -> bytes:
    """The file name a `source` stands for, as bytes: sources show a byte that is not UTF-8 as
    `\\xNN` and a backslash doubled (flatten.sources.base.escape_name); a link to the file
    must percent-encode the byte itself."""
    if "\\" not in source:
        return source.encode()
    out, last = bytearray(), 0
    for match in _NAME_ESCAPE.finditer(source):
        out += source[last : match.start()].encode()
        token = match.group(1)
        out += b"\\" if token == "\\" else bytes([int(token[1:], 16)])
        last = match.end()
    return bytes(out + source[last:].encode())


def split_id(value: str) -> tuple[str, int] | None:
    """`<source>#<ordinal>` as (source, ordinal), or None when it is not one (an ordinal past
    `INT_MAX` is not one either)."""
    match = _ID.fullmatch(value)
    if match is None or int(match.group(2)) > INT_MAX:
        return None
    return match.group(1), int(match.group(2))


def _checked(data: dict[str, Any]) -> dict[str, Any]:
    """Types checked (and numbers given as text accepted) in one pass over the fields present."""
    fixed: dict[str, Any] = {}
    for key, value in data.items():
        if value is None:
            continue
        if key in _TEXT_FIELDS:
            if type(value) is not str:
                if isinstance(value, bool) or not isinstance(value, int | float):
                    raise Malformed(f"{key} must be a string, not {type(value).__name__}")
                fixed[key] = str(value)
        elif key in _INT_FIELDS:
            if type(value) is not int:
                if not (isinstance(value, str) and value.isascii() and value.isdigit()):
                    raise Malformed(f"{key} must be an integer")
                if len(value) > 19:
                    raise Malformed(f"{key} is out of range (at most {INT_MAX})")
                value = fixed[key] = int(value)
            if not -INT_MAX - 1 <= value <= INT_MAX:
                raise Malformed(f"{key} is out of range (at most {INT_MAX})")
    if fixed:
        data = {**data, **fixed}
    return data


@lru_cache(maxsize=64)
def _provenance(repo_url: str | None, commit: str | None, ref: str | None) -> Provenance:
    return Provenance(repo_url, commit, ref)  # one per corpus, usually: shared, not rebuilt


# Where another framework's chunk says which document it is part of, when it has no `source`:
# the file it was read from (LlamaIndex's readers and Haystack's converters), else LlamaIndex's
# SOURCE relationship. Their node ids are fresh on every export, so a chunk named by its id would
# be a document of its own, and a refresh would replace every document.
DOCUMENT_KEYS = ("file_path",)


def _document_of(data: dict[str, Any]) -> str | None:
    for key in DOCUMENT_KEYS:
        value = data.get(key)
        if type(value) is str and value.strip():
            return value
    relationships = data.get("relationships")
    parent = relationships.get(_SOURCE_RELATIONSHIP) if type(relationships) is dict else None
    node_id = parent.get("node_id") if type(parent) is dict else None
    return node_id if type(node_id) is str and node_id.strip() else None


def decode(obj: Any, fallback_source: str) -> Record:
    """One JSON value in any layout read as a record, or `Malformed` with the reason.

    `fallback_source` names a record that says nothing of where it came from (a plain
    `{"text": ...}` line). Without an ordinal (in `ordinal` or its id) the record's ordinal is -1:
    the reader numbers it in order of appearance."""
    if type(obj) is not dict:
        raise Malformed("not a JSON object")
    data = obj
    for key in META_KEYS:
        if type(obj.get(key)) is dict:
            data = {**obj[key], **obj}
            break
    content = None
    for key in CONTENT_KEYS:
        content = data.get(key)
        if content is not None:
            break
    if type(content) is not str:
        raise Malformed("no text: expected content, text or page_content as a string")
    if not content.strip():
        raise Malformed("empty content")
    data = _checked(data)
    get = data.get
    raw_id = get("id") or get("id_") or get("_id")  # ID_KEYS, in order
    source = get("source") or get("url") or _document_of(data)
    ordinal = get("ordinal")
    split = split_id(raw_id) if raw_id and not (source and ordinal is not None) else None
    source = source or (split[0] if split else raw_id) or fallback_source
    if ordinal is None and split and split[0] == source:
        ordinal = split[1]
    start_line, end_line = get("startLine"), get("endLine")
    for key, line in (("startLine", start_line), ("endLine", end_line)):
        if line is not None and line < 1:  # lines (and cells) count from 1
            raise Malformed(f"{key} must be at least 1, not {line}")
    section = get("section")
    if type(section) is str:
        section = tuple(part for part in section.split(SECTION_SEPARATOR) if part)
    elif section is None:
        section = ()
    elif type(section) is list and all(type(s) is str for s in section):
        section = tuple(section)
    else:
        raise Malformed("section must be a list of strings")
    extra = data.keys() - _KNOWN
    meta = (
        tuple((k, data[k]) for k in sorted(extra) if isinstance(data[k], str | int | float | bool))
        if extra
        else ()
    )
    return new_record(
        source=source,
        ordinal=ordinal if ordinal is not None else -1,
        title=get("title") or get("docTitle") or source,
        content=content,
        kind=get("kind"),
        hash=sha256_hex(content),
        doc_hash=get("docHash"),
        provenance=_provenance(get("repoUrl"), get("commit"), get("ref")),
        lang=get("lang"),
        doc_title=get("docTitle"),
        section=section,
        anchor=get("anchor"),
        symbol=get("symbol"),
        start_line=start_line,
        end_line=end_line,
        url=get("url") or get("permalink"),
        repo_path=get("repoPath"),
        dirty=get("dirty") is True,
        redactions=get("redactions") or 0,
        syntax_error=get("syntaxError") is True,
        meta=meta,
    )


_new = object.__new__


def new_record(**fields: Any) -> Record:
    """A `Record` from every one of its fields (all of them, by name), set straight into the
    instance: the frozen `__init__`'s guarded setattr per field cost as much as encoding the
    record, on every slice made and every line read (tests hold this to `Record(**fields)`)."""
    record = _new(Record)
    record.__dict__.update(fields)
    return record


# A `\uD800`-`\uDFFF` escape: the only way a lone surrogate gets into parsed JSON (UTF-8 itself
# cannot carry one), so only lines holding one are checked for it.
SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


# orjson reads a line about three times faster than json, to the same value, except integers
# past 64 bits, which it reads as floats: a value holding a float, from a line holding a run of 19
# digits (found by mapping every digit to "0": a regex scan costs more than the parse), is read
# by json instead. Checking the value first keeps lines whose long digit runs are text (a commit
# of zeros, a hash) on orjson. What orjson refuses (invalid UTF-8, lone surrogates, NaN, 1e400,
# nesting past its depth of 1,024), json reads, or names the reason.
_DIGITS_AS_ZERO = bytes(48 if 48 <= b <= 57 else 32 for b in range(256))
_LONG_NUMBER = b"0" * 19
_NESTED = frozenset({dict, list})


def _holds_float(value: Any) -> bool:
    kind = type(value)
    if kind is float:
        return True
    if kind is dict:
        items: Any = value.values()
    elif kind is list:
        items = value
    else:
        return False
    kinds = set(map(type, items))
    if float in kinds:
        return True
    return not kinds.isdisjoint(_NESTED) and any(
        _holds_float(item) for item in items if type(item) in _NESTED
    )


def parse_line(line: bytes) -> Any:
    """One line's JSON value, or `Malformed`: invalid UTF-8, bad JSON, nesting deeper than the
    parser goes, an integer of more digits than Python converts, or a lone surrogate (text that
    UTF-8, and so hashing, the store and every JSON consumer, cannot carry). A byte order mark
    before the value (an editor's, on a file's first line) is no part of it."""
    line = line.removeprefix(b"\xef\xbb\xbf")
    try:
        value = orjson.loads(line)
    except orjson.JSONDecodeError:
        return json_value(line)
    if _holds_float(value) and _LONG_NUMBER in line.translate(_DIGITS_AS_ZERO):
        return json_value(line)
    return value


def json_value(line: bytes) -> Any:
    """`parse_line` by the standard library alone: what every line must read to."""
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise Malformed(f"invalid UTF-8 at byte {exc.start}") from exc
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as exc:
        raise Malformed(f"bad JSON: {exc.msg} (column {exc.colno})") from exc
    except RecursionError:
        raise Malformed("JSON nested too deeply") from None
    except ValueError as exc:  # an integer past sys.get_int_max_str_digits()
        raise Malformed(f"bad JSON: {exc}") from None
    if "\\u" in text and SURROGATE_ESCAPE.search(text):  # `in` first: most lines have no escape
        try:
            json.dumps(obj, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError as exc:
            raise Malformed(f"a lone surrogate ({exc.object[exc.start]!r}) in a string") from None
        except RecursionError:
            raise Malformed("JSON nested too deeply") from None
    return obj


def decode_line(line: bytes, fallback_source: str) -> Record:
    """One JSONL line (any layout) as a record, or `Malformed` with the reason."""
    return decode(parse_line(line), fallback_source)


def dumps(obj: Any) -> str:
    """One JSON line: UTF-8 kept as is, compact separators, insertion-ordered keys."""
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


_SCALARS = frozenset({str, int, bool, type(None)})
_STR = frozenset({str})


def _orjson_exact(value: Any) -> bool:
    """Whether orjson writes `value` byte for byte as `dumps` does: only exact str, int, bool,
    None, lists, tuples and str-keyed dicts of them. Floats are not (orjson writes `1e-7` and
    `null` where json writes `1e-07` and `NaN`), nor subclasses (an enum, say)."""
    kind = type(value)
    if kind in _SCALARS:
        return True
    if kind is dict:
        if not _STR.issuperset(map(type, value)):
            return False
        items = value.values()
    elif kind is list or kind is tuple:
        items = value
    else:
        return False
    # The types of a flat container are checked in C; only nested ones recurse.
    return _SCALARS.issuperset(map(type, items)) or all(map(_orjson_exact, items))


def json_line(obj: Any) -> bytes:
    """`dumps(obj)` as UTF-8 bytes and a newline. orjson writes records about ten times faster
    than json; anything it would write differently, or refuses (an int past 64 bits, a lone
    surrogate, deep nesting), goes through `dumps`, which gives the same bytes or error as ever."""
    return _line(obj, _orjson_exact(obj))


def _line(obj: Any, exact: bool) -> bytes:
    if exact:
        try:
            return orjson.dumps(obj, option=orjson.OPT_APPEND_NEWLINE)
        except orjson.JSONEncodeError:
            pass
    return dumps(obj).encode("utf-8") + b"\n"


def encode_line(record: Record | dict[str, Any], layout: str = "native") -> bytes:
    """One JSONL line (with its newline) for a record, or for a dict already in a layout."""
    if isinstance(record, dict):
        return json_line(record)
    if layout != "native":
        return json_line(encode(record, layout))
    data, exact = _native(record)  # not exact: a value of another type than its field's
    return _line(data, exact or _orjson_exact(data))


# (record) -> (its native dict, whether orjson writes that as `dumps` does without a walk).
_native = _compile_native()


# Our own lines start `{"id":"<source>#<ordinal>","source":"<source>"` (the first two FIELDS, as
# `dumps` writes them; json.dumps' default spacing accepted too): a reader takes a line's place
# from there without parsing it. No escapes inside, and at most 18 digits (always in range).
_HEAD = re.compile(
    rb"^\{\s*"
    + re.escape(json.dumps(FIELDS[0].key).encode())
    + rb':\s*"([^"\\]*)#(\d{1,18})",\s*'
    + re.escape(json.dumps(FIELDS[1].key).encode())
    + rb':\s*"([^"\\]*)"'
)


def native_head(line: bytes) -> tuple[str, int] | None:
    """(source, ordinal) of a line in our native layout, read from its fixed head without
    parsing; None for any other line. The line may still be malformed further on."""
    head = _HEAD.match(line)
    if head is None or head.group(1) != head.group(3):
        return None
    return head.group(3).decode("utf-8", "replace"), int(head.group(2))


# Where a record came from rather than what it holds: the provenance, the path inside the
# repository and whether the work tree differed. A document whose records differ only in these
# (a new commit that did not touch it) is the same document (`content_digest`).
PROVENANCE_KEYS = tuple(
    f.key for f in FIELDS if f.attr.startswith("provenance.") or f.attr in ("repo_path", "dirty")
)
_KEYS = b"|".join(re.escape(k.encode()) for k in PROVENANCE_KEYS)
# A provenance key with the comma before it and its scalar value, as `dumps` writes them. In
# valid JSON a quote before a key name cannot be inside a string (a string's own quotes are
# escaped), so this never matches text in the content.
_VALUE = rb'"[^"\\]*(?:\\.[^"\\]*)*"|null|true|false'  # unrolled: no per-character choice
_PROVENANCE = re.compile(rb',"(' + _KEYS + rb')":(' + _VALUE + rb")")
_LEAVE_OUT = re.compile(rb',"(?:' + _KEYS + rb')":(?:' + _VALUE + rb")")  # no groups: faster
# Every provenance key comes after `chunkSize`, which comes after the content: the search
# starts there (found from the end), not at the line's head.
_AFTER_CONTENT = b',"' + FIELDS[4].key.encode() + b'":'


def content_digest(line: bytes, digest: Any) -> None:
    """Feed `digest` (a hashlib object) one of our native lines with its provenance left out:
    what the line holds, apart from where it came from. A record without a key (no ref, not
    dirty) reads the same as one with it, so a new commit that did not change a document leaves
    its digest as it was. Any other line is fed as it is."""
    start = line.rfind(_AFTER_CONTENT)
    if start < 0:
        digest.update(line)
        return
    digest.update(memoryview(line)[:start])
    digest.update(_LEAVE_OUT.sub(b"", line[start:]))


def provenance_pairs(line: bytes) -> list[tuple[bytes, bytes]] | None:
    """A native line's provenance as (key, raw JSON value) pairs, for `read_provenance`; None
    for a line `content_digest` feeds as it is (not in our layout: parse it to know)."""
    start = line.rfind(_AFTER_CONTENT)
    return _PROVENANCE.findall(line, start) if start >= 0 else None


def read_provenance(pairs: list[tuple[bytes, bytes]]) -> tuple[Any, ...]:
    """(repoUrl, commit, ref, repoPath, dirty) from `provenance_pairs`, as decode reads
    them (a missing key or a non-string is None; dirty only when true)."""
    values = {key.decode(): orjson.loads(value) for key, value in pairs}
    strings = tuple(
        value if isinstance(value := values.get(k), str) else None for k in PROVENANCE_KEYS[:-1]
    )
    return (*strings, values.get(PROVENANCE_KEYS[-1]) is True)


# A piped stream is framed: the writer ends it with one mark line, which is clearly not a
# record, so a reader can tell a complete snapshot from one cut short or failed midway. A file
# written with -o is atomic and carries no mark, but for a partial run's (a crawl cut by a
# bound): its closing mark says `partial`, so loading the file later removes nothing.
MARK_KEY = "docsFlatten"
MARK_PREFIX = b'{"' + MARK_KEY.encode() + b'":'


@dataclass(frozen=True)
class Mark:
    records: int | None = None  # the closing mark: how many records the stream holds
    error: str | None = None  # the error mark: why the producer failed
    # The closing mark of a run that saw its source in part (a crawl cut by a bound or that
    # lost pages): why. Such a stream adds and updates, and removes nothing.
    partial: str | None = None


def end_mark(records: int, partial: str | None = None) -> dict[str, Any]:
    mark: dict[str, Any] = {"end": True, "records": records}
    if partial is not None:
        mark["partial"] = partial
    return {MARK_KEY: mark}


def error_mark(reason: str) -> dict[str, Any]:
    return {MARK_KEY: {"error": reason}}


def read_mark(line: bytes) -> Mark | None:
    """The mark a line holds, None for any other line, or `Malformed` for a mark of unknown
    shape."""
    if not line.startswith(MARK_PREFIX):
        return None
    body = parse_line(line)
    mark = body.get(MARK_KEY) if type(body) is dict and len(body) == 1 else None
    if type(mark) is dict and mark.get("end") is True and type(mark.get("records")) is int:
        partial = mark.get("partial")
        if partial is None or type(partial) is str:
            return Mark(records=mark["records"], partial=partial)
    if type(mark) is dict and type(mark.get("error")) is str:
        return Mark(error=mark["error"])
    raise Malformed(f"a {MARK_KEY} mark of unknown shape")


def is_stream(fd: int) -> bool:
    """A pipe or socket: where the writer frames its output with a mark, and where a reader
    expects one."""
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)
