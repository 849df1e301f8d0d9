"""Terraform / HCL: one slice per top-level block, titled with Terraform's own address.

Tree-sitter's `hcl` grammar keeps line numbers and survives syntax errors, so a file with errors
still slices by block (and the result says the file did not parse). Leading comments belong to
the block below them; top-level attributes (`.tfvars`) are grouped. Each block's span runs to
the next block, so stray text is never dropped.
"""

from __future__ import annotations

from typing import Any

from slicers.base import LineSpan, Sliced, SliceOptions, spans_to_slices, split_lines
from slicers.treesitter import node_text, parse, with_leading
from slicers.windows import pack_windows, slice_windows, window_spans

_PREFIXES = {"data": "data", "module": "module", "variable": "var", "output": "output"}


def _labels(block: Any) -> list[str]:
    return [
        node_text(child).strip('"')
        for child in block.children
        if child.type in ("string_lit", "identifier") and child != block.children[0]
    ]


def _attribute(block: Any, name: str) -> str | None:
    body = next((c for c in block.children if c.type == "body"), None)
    for child in body.children if body is not None else ():
        if child.type == "attribute" and node_text(child.children[0]) == name:
            return node_text(child.children[-1]).strip().strip('"')
    return None


def block_address(block: Any) -> tuple[str, str | None]:
    """(title, symbol) for a top-level block: `aws_eks_cluster.main`, `var.region`, ...
    `moved`, `import` and `removed` blocks name an address they do not declare: no symbol,
    so a question naming the resource finds its declaration, not a short block about it."""
    kind = node_text(block.children[0])
    labels = _labels(block)
    if kind == "resource" and len(labels) >= 2:
        address = f"{labels[0]}.{labels[1]}"
        return address, address
    if kind in _PREFIXES and labels:
        address = ".".join([_PREFIXES[kind], *labels])
        return address, address
    if kind == "provider" and labels:
        alias = _attribute(block, "alias")
        address = f"provider.{labels[0]}" + (f".{alias}" if alias else "")
        return address, address
    if kind == "moved":
        source, target = _attribute(block, "from"), _attribute(block, "to")
        return f"moved {source} -> {target}", None
    if kind == "import":
        target = _attribute(block, "to")
        return f"import {target}", None
    if kind == "removed":
        source = _attribute(block, "from")
        return f"removed {source}", None
    title = ".".join([kind, *labels])
    return title, title if labels else None


def slice_terraform(text: str, path: str, options: SliceOptions) -> Sliced:
    root = parse("hcl", text)
    if root is None:
        return slice_windows(text, path, options)
    lines = split_lines(text)
    units = _units(root)
    if not units:
        return slice_windows(text, path, options)

    spans: list[LineSpan] = []
    for i, (start, title, symbol) in enumerate(units):
        stop = units[i + 1][0] if i + 1 < len(units) else len(lines)
        begin = 0 if i == 0 else start
        windows = pack_windows(lines, begin, stop, options.max_chars)
        spans.extend(window_spans(windows, title, symbol=symbol))
    notes = (
        ("terraform: syntax errors; sliced by the blocks that parsed",) if root.has_error else ()
    )
    return Sliced(slices=spans_to_slices(lines, spans), notes=notes, syntax_error=root.has_error)


def _units(root: Any) -> list[tuple[int, str, str | None]]:
    """(first line incl. leading comments, title, symbol) of each top-level unit, in order."""
    nodes = []
    for child in root.children:
        nodes.extend(child.children if child.type == "body" else [child])
    nodes.sort(key=lambda n: n.start_byte)
    units: list[tuple[int, str, str | None]] = []
    attributes: list[str] = []
    for node, kind, first, _ in with_leading(nodes, "comment".__eq__):
        if kind == "block":
            units.append((first, *block_address(node)))
            attributes = []
        elif kind == "attribute":
            name = node_text(node.children[0])
            if attributes and units:  # extend the running group of attributes
                attributes.append(name)
                shown = ", ".join(attributes[:4]) + (", ..." if len(attributes) > 4 else "")
                units[-1] = (units[-1][0], shown, None)
            else:
                attributes = [name]
                units.append((first, name, name))
    return units
