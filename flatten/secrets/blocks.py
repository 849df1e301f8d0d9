"""Secrets with structure across lines: PEM private-key blocks and Kubernetes Secret data.

Both are walked line by line with anchored regexes (linear time, bounded), never with one
pattern that could run to the end of the file: a PEM header mentioned in a sentence must not
take every later section with it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from flatten.secrets.patterns import LINE_BREAK_CLASS as _NL
from flatten.secrets.patterns import LINE_BREAKS

_LABEL = r"(?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?"
_HEADER = re.compile(rf"-----BEGIN {_LABEL}-----")
# A key body as people paste it: raw lines, indented YAML, `//`/`#` comments, quoted string
# pieces, or one JSON string with `\n` escapes.
_SEP = r"(?:\\r\\n|\\n|\r\n|\n|\r)"
_PREFIX = r"[ \t>#*\"'|+]*(?://[ \t]*)?"
_SUFFIX = r"[ \t\"',+;\\]*"
_CONTENT = (
    rf"(?:[A-Za-z0-9+/=]+(?:\.{{3,}}|…)?|[A-Za-z][A-Za-z0-9-]*:[^{_NL}\\]*|\.{{3,}}|…"
    rf"|\([^(){_NL}]*\)|\[[^\[\]{_NL}]*\]|<[^<>{_NL}]*>)"
)
_FIRST = re.compile(rf"[ \t]*(?P<content>{_CONTENT})?")
_STEP = re.compile(rf"{_SUFFIX}{_SEP}{_PREFIX}(?P<content>{_CONTENT})?")
_END = re.compile(rf"{_SUFFIX}(?:{_SEP})?{_PREFIX}-----END {_LABEL}-----")
_INLINE = re.compile(
    rf"[ \t]+[A-Za-z0-9+/=]{{20,}}(?:[ \t]+[A-Za-z0-9+/=]+)*[ \t]+-----END {_LABEL}-----"
)
_MAX_BODY_LINES = 400  # a 16384-bit RSA key is about 200 lines of 64
_KEY_MATERIAL = re.compile(r"[A-Za-z0-9+/]{16,}")
# What may stand where a key body would: `...`, `(snip)`, `<key>`, `[redacted]`, `xxx`, quotes,
# separators. Bodies longer than this are key material, whatever they hold.
_STAND_IN_TOKEN = re.compile(
    r"\\r|\\n|\s|[\"',+;\\>#*|/]|\.{3,}|…|\([^()]*\)|\[[^\[\]]*\]|<[^<>]*>|(?i:x{3,})"
)
_LONGEST_STAND_IN = 200
_LINE_END = re.compile(rf"[{_NL}]")


@dataclass(frozen=True)
class Span:
    start: int
    end: int
    placeholder: bool | None = None  # None: let the value decide (see placeholders.py)


def private_key_spans(text: str) -> Iterator[Span]:
    """A whole header..END block (its line count kept by the caller), or for a header with no
    END line: that line from the header on, plus any lines of key body that follow it."""
    pos = 0
    while True:
        header = _HEADER.search(text, pos)
        if header is None:
            return
        block = _block(text, header)
        if block is not None:
            yield block
            pos = block.end
            continue
        yield from _orphan(text, header)
        pos = header.end()


def _block(text: str, header: re.Match[str]) -> Span | None:
    inline = _INLINE.match(text, header.end())
    if inline:
        return Span(header.start(), inline.end(), placeholder=False)
    first = _FIRST.match(text, header.end())
    assert first is not None  # every part of it is optional
    pos = first.end()
    for _ in range(_MAX_BODY_LINES):
        end = _END.match(text, pos)
        if end:
            body = text[header.end() : end.start()]
            return Span(header.start(), end.end(), placeholder=_is_stand_in_body(body))
        step = _STEP.match(text, pos)
        if step is None or step.end() == pos:
            return None
        pos = step.end()
    return None


def _orphan(text: str, header: re.Match[str]) -> Iterator[Span]:
    line_end = _line_end(text, header.end())
    first = _FIRST.match(text, header.end())
    assert first is not None
    contents = [first.group("content") or ""]
    body: list[Span] = []
    pos = first.end()
    for _ in range(_MAX_BODY_LINES):
        step = _STEP.match(text, pos)
        if step is None or not step.group("content"):
            break
        content = step.group("content")
        contents.append(content)
        if not _KEY_MATERIAL.fullmatch(content.rstrip("=")):
            break
        start = step.start("content")
        body.append(Span(start, _line_end(text, start), placeholder=False))
        pos = step.end()
    stand_in = not body and any(c and _is_stand_in_body(c) for c in contents[:2])
    yield Span(header.start(), line_end, placeholder=stand_in)
    yield from body


def _is_stand_in_body(body: str) -> bool:
    """`...`, `(snip)`, `<key>` or nothing where the key material would be."""
    return len(body) <= _LONGEST_STAND_IN and not _STAND_IN_TOKEN.sub("", body)


def _line_end(text: str, pos: int) -> int:
    found = _LINE_END.search(text, pos)
    return found.start() if found else len(text)


# Kubernetes: only documents whose kind is Secret; only the values under data/stringData.
_DOC_BREAK = re.compile(r"^(?:---|\.\.\.)(?:[ \t].*)?$|^[ \t]*(?:`{3,}|~{3,})")
_KIND_SECRET = re.compile(
    r"^(?P<lead>[ \t]*(?:-[ \t]+)?)[\"']?kind[\"']?[ \t]*:[ \t]*[\"']?Secret[\"']?[ \t]*(?:#.*)?$"
)
_DATA_KEY = re.compile(
    r"^(?P<lead>[ \t]*(?:-[ \t]+)?)(?:data|stringData)[ \t]*:[ \t]*(?P<rest>.*)$"
)
_CHILD = re.compile(
    r"^(?P<indent>[ \t]+)(?:\"[^\"]*\"|'[^']*'|[^:#\s](?:[^:]*[^:\s])?)[ \t]*:(?P<rest>[ \t].*|)$"
)
_BLOCK_INDICATOR = re.compile(r"^[|>][+-]?\d?[+-]?(?:[ \t]+#.*)?$")
_FLOW_VALUE = re.compile(r"[{,][ \t]*[^:,{}]+:[ \t]*(?P<value>[^,{}]*[^,{}\s])")


@dataclass(frozen=True)
class _Line:
    start: int  # offset of the line in the text
    content: str  # without its line break

    @property
    def indent(self) -> int:
        return len(self.content) - len(self.content.lstrip(" \t"))


def k8s_secret_spans(text: str) -> Iterator[Span]:
    """Each value under `data:`/`stringData:` of a `kind: Secret` document, one span per line."""
    for document in _documents(text):
        kind_col = next(
            (len(m.group("lead")) for line in document if (m := _KIND_SECRET.match(line.content))),
            None,
        )
        if kind_col is None:
            continue
        for i, line in enumerate(document):
            data = _DATA_KEY.match(line.content)
            if data and len(data.group("lead")) == kind_col:
                yield from _data_values(document, i, kind_col, line, data.group("rest"))


def _documents(text: str) -> Iterator[list[_Line]]:
    document: list[_Line] = []
    offset = 0
    for raw in text.splitlines(keepends=True):
        content = raw.rstrip(LINE_BREAKS)
        if _DOC_BREAK.match(content):
            yield document
            document = []
        else:
            document.append(_Line(offset, content))
        offset += len(raw)
    yield document


def _data_values(
    document: list[_Line], at: int, key_col: int, line: _Line, rest: str
) -> Iterator[Span]:
    rest_start = line.start + len(line.content) - len(rest)
    if rest.startswith("{"):
        for m in _FLOW_VALUE.finditer(rest):
            yield Span(rest_start + m.start("value"), rest_start + m.end("value"))
        return
    child_col: int | None = None
    block_col: int | None = None  # inside a multi-line value deeper than this column
    for j in range(at + 1, len(document)):  # by index: slicing per data key would be quadratic
        child = document[j]
        stripped = child.content.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if child.indent <= key_col:
            return
        if block_col is not None and child.indent > block_col:
            yield Span(child.start + child.indent, child.start + len(child.content.rstrip()))
            continue
        block_col = None
        m = _CHILD.match(child.content)
        if m is None or (child_col is not None and child.indent != child_col):
            continue
        child_col = child.indent
        rest = m.group("rest")
        value = rest.strip()
        if not value or _BLOCK_INDICATOR.match(value):
            block_col = child.indent
            continue
        yield _value_span(child.start + m.start("rest") + rest.index(value[0]), value)


def _value_span(start: int, value: str) -> Span:
    if value[0] in "\"'" and len(value) > 1 and value.endswith(value[0]):
        return Span(start + 1, start + len(value) - 1)
    # An unquoted value ends at a comment (` #`); str.find keeps this linear.
    cut = min((i for i in (value.find(" #"), value.find("\t#")) if i >= 0), default=len(value))
    return Span(start, start + len(value[:cut].rstrip()))
