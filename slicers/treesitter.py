"""Tree-sitter access shared by the structural slicers: cached parsers and true line ranges."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from functools import lru_cache
from typing import Any


@lru_cache(maxsize=64)
def parser(language: str) -> Any:
    """A parser from the bundled language pack (0.13.0 ships its grammars: no download)."""
    from tree_sitter_language_pack import get_parser

    return get_parser(language)  # type: ignore[arg-type]


def parse(language: str, text: str) -> Any | None:
    """The syntax tree's root node, or None when the grammar cannot be loaded or parse fails."""
    try:
        return parser(language).parse(text.encode("utf-8")).root_node
    except Exception:  # a missing grammar or a parser fault means windows, never a crash
        return None


def node_text(node: Any) -> str:
    text = node.text  # read once: each read copies the node's bytes
    return text.decode("utf-8", "replace") if text is not None else ""


def with_leading(
    nodes: Iterable[Any], is_leading: Callable[[str], bool]
) -> Iterator[tuple[Any, str, int, int]]:
    """(node, its type, first line, end line) for each node that is not itself leading matter
    (comments, attributes: `is_leading` is asked about each node's type); the first line
    includes a leading block directly above it, with no blank line between. Lines are 0-based,
    the end exclusive.

    Each node's type and points are read once (each read builds a new Python object): this loop
    runs for every top-level node of every code file.
    """
    pending: int | None = None  # first line of the leading block directly above
    pending_end = -1
    for node in nodes:
        kind = node.type
        start = node.start_point[0]
        end_row, end_col = node.end_point
        # A node that ends at column 0 of a line ends on the line before: tree-sitter puts the
        # end of a block that swallowed its newline there, and counting that line would be off
        # by one.
        end = end_row if end_col == 0 and end_row > start else end_row + 1
        if is_leading(kind):
            if pending is None or start > pending_end:
                pending = start
            pending_end = end
            continue
        yield node, kind, (pending if pending is not None and pending_end >= start else start), end
        pending = None
