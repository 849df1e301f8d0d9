"""Sources yield files to read (or skips with reasons); they know nothing of slicing."""

from flatten.sources.base import Candidate, Skip
from flatten.sources.local import WorkTree, git_provenance, list_tree, resolve_root, work_tree
from flatten.sources.repo import Checkout, clone, validate_subdir

__all__ = [
    "Candidate",
    "Checkout",
    "Skip",
    "WorkTree",
    "clone",
    "git_provenance",
    "list_tree",
    "resolve_root",
    "validate_subdir",
    "work_tree",
]
