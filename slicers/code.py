"""Source code: one slice per top-level declaration, sized by split-then-merge (cAST).

1. The file's top-level nodes become units that tile it: a declaration with the comments and
   attributes directly above it, or a run of preamble (imports, package clause, globals,
   top-level statements). Tiling means every line belongs to exactly one unit.
2. A unit over the budget (non-whitespace characters) splits inside its body at child
   boundaries (a class into its members, a function into runs of statements); each piece keeps
   the parent's symbol (`OrderService.checkout`). A piece still too big becomes line windows.
3. Neighbouring units under the budget merge until the budget is reached.

A language without a grammar here, or a file tree-sitter cannot parse at all, falls back to line
windows titled with their first signature-like line.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass
from functools import cached_property
from itertools import accumulate
from pathlib import PurePosixPath
from typing import Any

from slicers.base import LineSpan, Sliced, SliceOptions, spans_to_slices, split_lines
from slicers.languages import JS_FUNCTION_VALUES, LANGUAGES, NAME_NODES, Language
from slicers.treesitter import node_text, parse, with_leading
from slicers.windows import pack_windows, part_titles

_MAX_DEPTH = 4
_TOP_LEVEL = " (top level)"
_SIGNATURE = re.compile(
    r"^\s*(?:(?:export|public|private|protected|internal|static|async|abstract|final|pub|"
    r"override|open|inline|extern|virtual|local|unsafe|const)\s+)*"
    r"(?:def|fn|func|function|class|struct|enum|interface|trait|impl|module|object|type|"
    r"record|namespace|package|proc|sub|defmodule|defp?|void|int|let|const|var|val)\b"
)


@dataclass
class _Unit:
    start: int  # first line, with leading comments and attributes
    end: int  # line after the node
    node: Any | None
    symbol: str | None  # None for preamble / top-level code
    title: str | None = None  # when it is not the symbol (`rpc Operations.Get`)

    @property
    def is_declaration(self) -> bool:
        return self.symbol is not None


def _file_stem(path: str) -> str:
    return PurePosixPath(path).name.split(".")[0]


def symbol_of(node: Any, kind: str, lang: Language, path: str) -> str | None:
    """The name an engineer would search for, or None if `node` (of type `kind`) is not a
    declaration."""
    if kind not in lang.declarations:
        return None
    if kind == "decorated_definition":
        inner = node.child_by_field_name("definition")
        return symbol_of(inner, inner.type, lang, path) if inner is not None else None
    if kind == "export_statement":
        inner = node.child_by_field_name("declaration")
        if inner is not None:
            return symbol_of(inner, inner.type, lang, path)
        value = node.child_by_field_name("value")
        if value is None:
            return None  # `export { a, b }`: part of the preamble
        name = value.child_by_field_name("name")
        # export default: the file's name
        return node_text(name) if name is not None else _file_stem(path)
    if kind in ("lexical_declaration", "variable_declaration"):
        for declarator in node.named_children:
            value = declarator.child_by_field_name("value")
            if value is not None and value.type in JS_FUNCTION_VALUES:
                return node_text(declarator.child_by_field_name("name"))
        return None
    if kind == "method_declaration" and lang.grammar == "go":
        return _go_method(node)
    if kind == "type_declaration":
        specs = [c.child_by_field_name("name") for c in node.named_children]
        names = [node_text(n) for n in specs if n is not None]
        return ", ".join(names) or None
    if kind == "impl_item":
        trait, target = node.child_by_field_name("trait"), node.child_by_field_name("type")
        trait_name = node_text(trait).split("::")[-1] + " for " if trait is not None else ""
        return f"impl {trait_name}{node_text(target)}"
    if kind == "template_declaration":
        inner = node.named_children[-1] if node.named_children else None
        return symbol_of(inner, inner.type, lang, path) if inner is not None else None
    if kind in ("function_definition", "type_definition") and lang.grammar in ("c", "cpp"):
        return _c_declarator_name(node)
    name = node.child_by_field_name("name")
    if name is not None:
        return node_text(name)
    for child in node.named_children:
        if child.type in NAME_NODES:
            return node_text(child)
    return kind.replace("_", " ")


def name_of(
    node: Any, kind: str, lang: Language, path: str, parent: str | None
) -> tuple[str, str] | None:
    """(symbol, title) of a declaration (`node`, of type `kind`), with its parent's symbol
    before it; None otherwise."""
    if kind not in lang.declarations:
        return None
    if lang.namer is not None:
        return lang.namer(node, parent)
    symbol = symbol_of(node, kind, lang, path)
    if symbol is None:
        return None
    symbol = f"{parent}.{symbol}" if parent else symbol
    return symbol, symbol


def _go_method(node: Any) -> str:
    name = node_text(node.child_by_field_name("name"))
    receiver = node.child_by_field_name("receiver")
    params = receiver.named_children if receiver is not None else []
    receiver_type = params[0].child_by_field_name("type") if params else None
    if receiver_type is None:
        return name
    text = node_text(receiver_type)
    return f"({text}).{name}" if text.startswith("*") else f"{text}.{name}"


def _c_declarator_name(node: Any) -> str | None:
    declarator = node.child_by_field_name("declarator")
    while declarator is not None:
        inner = declarator.child_by_field_name("declarator")
        if inner is None or declarator.type in ("qualified_identifier", "destructor_name"):
            return node_text(declarator)
        declarator = inner
    return None


def _members(node: Any, lang: Language) -> list[Any]:
    """Top-level nodes, with transparent containers (namespaces) opened."""
    if not lang.containers:  # most languages: no type to check
        return node.named_children
    out: list[Any] = []
    for child in node.named_children:
        if child.type in lang.containers:
            body = child.child_by_field_name("body")
            out.extend(_members(body if body is not None else child, lang))
        else:
            out.append(child)
    return out


def _units(nodes: list[Any], lang: Language, path: str, prefix: str = "") -> list[_Unit]:
    """Units in source order; comments and attributes directly above attach to the next node."""
    units: list[_Unit] = []
    attributes = lang.leading

    def leading(kind: str) -> bool:
        return "comment" in kind or kind in attributes

    parent = prefix or None
    for node, kind, first, end in with_leading(nodes, leading):
        named = name_of(node, kind, lang, path, parent)
        if (
            named is None
            and units
            and (lang.runs or not units[-1].is_declaration or _is_about(node, units[-1]))
        ):
            # Extend the run (of preamble, or a stage), or the declaration the statement is about.
            units[-1].end = max(units[-1].end, end)
            continue
        symbol, title = named if named is not None else (None, None)
        units.append(_Unit(first, end, node, symbol, title))
    return units


def _is_about(statement: Any, declaration: _Unit) -> bool:
    """Whether a statement starts with the name of the declaration just above it and a dot:
    `save.alters_data = True` after `def save`, `Button.propTypes = {...}` after `function Button`.

    Such a statement belongs to that declaration's slice. As a unit of its own it would be merged
    forward when the declaration's slice is full, and open the next declaration's slice. (A plain
    call such as `helper(x)` after a nested `def helper` stays with the code around it.)
    """
    first = statement
    while first.child_count:
        first = first.child(0)
    dot = first.next_sibling
    own_name = (declaration.symbol or "").rsplit(".", 1)[-1]
    return (
        first.type == "identifier"
        and dot is not None
        and dot.type == "."
        and node_text(first) == own_name
    )


def _body(node: Any, lang: Language) -> Any | None:
    """The node whose children a declaration splits into."""
    for _ in range(_MAX_DEPTH):
        if node is None:
            return None
        if node.type in lang.bodies and len(node.named_children) >= 2:
            return node
        body = node.child_by_field_name("body")
        if body is not None and len(body.named_children) >= 2:
            return body
        inner = (
            body
            or node.child_by_field_name("definition")
            or node.child_by_field_name("declaration")
            or node.child_by_field_name("value")
            or max(node.named_children, key=lambda c: c.end_byte - c.start_byte, default=None)
        )
        if inner is None or inner == node:
            return None
        if inner.type in lang.bodies or (
            len(inner.named_children) >= 2 and inner.child_by_field_name("body") is None
        ):
            return inner
        node = inner
    return None


@dataclass
class _Piece:
    start: int
    end: int
    title: str
    symbol: str | None
    cols: tuple[int, int] | None = None  # a piece of one line over the budget
    size: int | None = None  # non-whitespace characters, when already counted


class _CodeSlicer:
    def __init__(self, text: str, lines: list[str], lang: Language, path: str, max_chars: int):
        self.text = text
        self.lines = lines
        self.lang = lang
        self.path = path
        # Code is about a third whitespace: half the budget in non-whitespace characters gives
        # slices about as large on disk as a markdown section.
        self.budget = max(100, max_chars // 2)
        self._tabs = "\t" in text

    @cached_property
    def _lengths(self) -> list[int]:
        """Characters in the lines before each line, newlines not counted: line k starts at
        `_lengths[k] + k` in `text` (lines end in one '\n'). Sizes are counted in place, only
        for the ranges slicing asks about (about twice the text in all), which costs less than
        counting every line's whitespace up front. Built when first asked: a file within the
        budget as a whole never needs it."""
        return list(accumulate(map(len, self.lines), initial=0))

    def size(self, start: int, end: int) -> int:
        """Non-whitespace characters (not space, tab or newline) in lines [start, end)."""
        if start == 0 and end == len(self.lines):  # the whole text: no line offsets needed
            first, stop = 0, len(self.text)
            chars = stop - self.text.count("\n")
        else:
            lengths = self._lengths
            first, stop = lengths[start] + start, lengths[end] + end
            chars = lengths[end] - lengths[start]
        blank = self.text.count(" ", first, stop)
        if self._tabs:
            blank += self.text.count("\t", first, stop)
        return chars - blank

    def tile(self, units: list[_Unit], start: int, end: int) -> list[_Unit]:
        """Stretch units so they cover [start, end) exactly, in order."""
        if not units:
            return [_Unit(start, end, None, None)]
        units[0].start = start
        for unit, following in itertools.pairwise(units):
            unit.end = following.start
        units[-1].end = end
        return units

    def pieces(self, unit: _Unit, title: str, depth: int) -> list[_Piece]:
        """A unit as pieces within budget: itself, its split members, or line windows."""
        size = self.size(unit.start, unit.end)
        if size <= self.budget:
            return [_Piece(unit.start, unit.end, title, unit.symbol, size=size)]
        body = _body(unit.node, self.lang) if unit.node is not None and depth < _MAX_DEPTH else None
        if body is not None and unit.symbol is not None:
            members = _units(body.named_children, self.lang, self.path, prefix=unit.symbol)
            if len(members) >= 2 or (members and members[0].is_declaration):
                members = self.tile(members, unit.start, unit.end)
                split: list[list[_Piece]] = []
                for member in members:
                    member.symbol = member.symbol or unit.symbol
                    split.append(self.pieces(member, member.title or title, depth + 1))
                merged = self.merge(split, unit.symbol)
                if len(split[0]) == 1:
                    # The first piece holds the declaration's header (`class X:`, `def outer():`):
                    # it declares X, whichever members (`X.__init__`, `outer.helper`) it holds.
                    # A first member cut in parts keeps its own symbol on all of them.
                    merged[0].symbol = unit.symbol
                return merged
        return self.windows(unit, title)

    def windows(self, unit: _Unit, title: str) -> list[_Piece]:
        windows = pack_windows(self.lines, unit.start, unit.end, self.budget * 3 // 2)
        return [
            _Piece(w.start, w.end, t, unit.symbol, w.cols)
            for w, t in zip(windows, part_titles(title, len(windows)), strict=True)
        ]

    def merge(self, units: list[list[_Piece]], parent: str | None) -> list[_Piece]:
        """Greedily merge whole neighbours (units that fit in one piece) within the budget.

        A unit that had to be split keeps its pieces to itself.
        """
        groups: list[list[_Piece]] = []
        used = 0
        mergeable = False
        for pieces in units:
            if len(pieces) != 1:
                groups.extend([piece] for piece in pieces)
                mergeable = False
                continue
            piece = pieces[0]
            size = piece.size if piece.size is not None else self.size(piece.start, piece.end)
            if mergeable and used + size <= self.budget:
                groups[-1].append(piece)
                used += size
            else:
                groups.append([piece])
                used, mergeable = size, True
        joined = [self.join(group, parent) for group in groups]
        # Runs of statements of one split declaration share its name: number them. (At the
        # top level, equal titles are separate preamble runs, not parts of one thing.)
        return self.number_parts(joined) if parent else joined

    def join(self, group: list[_Piece], parent: str | None) -> _Piece:
        if len(group) == 1:
            return group[0]
        titles = list(dict.fromkeys(p.title for p in group))
        # Declarations name a merged slice; preamble only when there is nothing else.
        titles = [t for t in titles if not t.endswith(_TOP_LEVEL)] or titles
        symbols = [p.symbol for p in group if p.symbol and p.symbol != parent] or [parent]
        if parent and all(t.startswith(parent) for t in titles):
            short = [t[len(parent) + 1 :] for t in titles if t != parent]
            title = (
                parent
                if not short
                else f"{parent}.{short[0]}"
                if len(short) == 1
                else f"{parent}: {', '.join(short[:4])}"
            )
            more = len(short) - 4
        else:
            title = ", ".join(titles[:4])
            more = len(titles) - 4
        if more > 0:
            title += f" (+{more} more)"
        return _Piece(group[0].start, group[-1].end, title, symbols[0])

    def number_parts(self, pieces: list[_Piece]) -> list[_Piece]:
        """Pieces that share a title (statement runs of one function) get `(part k/n)`."""
        counts: dict[str, int] = {}
        for piece in pieces:
            counts[piece.title] = counts.get(piece.title, 0) + 1
        seen: dict[str, int] = {}
        for piece in pieces:
            if counts[piece.title] > 1 and "(part " not in piece.title:
                seen[piece.title] = seen.get(piece.title, 0) + 1
                piece.title = f"{piece.title} (part {seen[piece.title]}/{counts[piece.title]})"
        return pieces


def signature_title(lines: list[str], start: int, end: int, fallback: str) -> str:
    """The first signature-like line of a window (`def run(...)`), else its first line."""
    first = None
    for i in range(start, end):
        line = lines[i].strip()
        if not line:
            continue
        if first is None:
            first = line
        if _SIGNATURE.match(line):
            return line[:80]
    return (first or fallback)[:80]


def slice_windows_with_signatures(text: str, path: str, options: SliceOptions) -> Sliced:
    lines = split_lines(text)
    spans = []
    for w in pack_windows(lines, 0, len(lines), options.max_chars):
        # A piece of a long line is titled by its own text, not by the whole line's.
        own = [lines[w.start][w.cols[0] : w.cols[1]]] if w.cols else lines
        start, end = (0, 1) if w.cols else (w.start, w.end)
        title = signature_title(own, start, end, path)
        spans.append(LineSpan(w.start, w.end, title=title, cols=w.cols))
    return Sliced(slices=spans_to_slices(lines, spans))


def slice_code(text: str, path: str, options: SliceOptions) -> Sliced:
    lang = LANGUAGES.get(options.lang or "")
    root = parse(lang.grammar, text) if lang else None
    if lang is None or root is None:
        return slice_windows_with_signatures(text, path, options)
    lines = split_lines(text)
    slicer = _CodeSlicer(text, lines, lang, path, options.max_chars)
    units = slicer.tile(_units(_members(root, lang), lang, path), 0, len(lines))
    if not any(u.is_declaration for u in units) and root.has_error:
        fallback = slice_windows_with_signatures(text, path, options)
        return Sliced(fallback.slices, notes=(f"{lang.grammar}: did not parse",), syntax_error=True)
    top_level = f"{path}{_TOP_LEVEL}"
    # Within the budget as a whole (most files), merging would join every unit into one slice:
    # join them without sizing each one. A text over three budgets long is all but never within
    # one (code is about a third whitespace), so it is not counted as a whole first.
    if len(text) <= 3 * slicer.budget and slicer.size(0, len(lines)) <= slicer.budget:
        whole = [_Piece(u.start, u.end, u.title or top_level, u.symbol) for u in units]
        pieces = [slicer.join(whole, None)]
    else:
        per_unit = [slicer.pieces(u, u.title or top_level, 0) for u in units]
        pieces = slicer.merge(per_unit, None)
    spans = [LineSpan(p.start, p.end, p.title, symbol=p.symbol, cols=p.cols) for p in pieces]
    slices = spans_to_slices(lines, spans)
    notes = (f"{lang.grammar}: syntax errors; sliced by what parsed",) if root.has_error else ()
    return Sliced(slices=slices, notes=notes, syntax_error=root.has_error)
