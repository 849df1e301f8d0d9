"""Questions about a node's ancestors, answered in time linear in the page's size.

A page may nest thousands of elements deep (a hostile one, or a broken generator), so asking
each of n matches "is one of your ancestors such-and-such?" by walking up costs n x depth.
Here each ancestor is looked at once: what is learnt about it is kept for the next question.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any


class Ancestry:
    """Whether a node has an ancestor for which `marks(ancestor)` holds."""

    def __init__(self, marks: Callable[[Any], bool]) -> None:
        self.marks = marks
        self.known: dict[int, bool] = {}  # a node -> whether it, or an ancestor, is marked

    def below_mark(self, node: Any) -> bool:
        path: list[int] = []
        parent = node.parent
        found = False
        while parent is not None:
            known = self.known.get(parent.mem_id)
            if known is not None:
                found = known
                break
            if self.marks(parent):
                found = True
                break
            path.append(parent.mem_id)
            parent = parent.parent
        for mem_id in path:
            self.known[mem_id] = found
        return found


def outermost(nodes: Iterable[Any]) -> list[Any]:
    """`nodes` (in document order) without any that sits inside another of them."""
    nodes = list(nodes)
    ids = {n.mem_id for n in nodes}
    ancestry = Ancestry(lambda n: n.mem_id in ids)
    return [n for n in nodes if not ancestry.below_mark(n)]
