"""Sources yield files to read (or skips with reasons); they know nothing of slicing.

A lazy face (`flatten._lazy`): `flatten.sources.base` is what the run report needs, and importing
it runs this file first; the walker and the clone load when a run lists a tree.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from flatten._lazy import lazy_getattr

_EXPORTS = {
    "Candidate": "flatten.sources.base",
    "Skip": "flatten.sources.base",
    "WorkTree": "flatten.sources.local",
    "list_tree": "flatten.sources.local",
    "resolve_root": "flatten.sources.local",
    "work_tree": "flatten.sources.local",
    "Checkout": "flatten.sources.repo",
    "clone": "flatten.sources.repo",
    "validate_subdir": "flatten.sources.repo",
}

__all__ = [
    "Candidate",
    "Checkout",
    "Skip",
    "WorkTree",
    "clone",
    "list_tree",
    "resolve_root",
    "validate_subdir",
    "work_tree",
]

__getattr__ = lazy_getattr(__name__, _EXPORTS, globals())

if TYPE_CHECKING:  # for type checkers and editors: the same names, eagerly
    from flatten.sources.base import Candidate, Skip
    from flatten.sources.local import WorkTree, list_tree, resolve_root, work_tree
    from flatten.sources.repo import Checkout, clone, validate_subdir
