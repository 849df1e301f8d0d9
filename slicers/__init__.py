"""Pure slicing functions: one module per format, one registry keyed by format name."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from slicers.base import DEFAULT_MAX_CHARS, Slice, Sliced, SliceOptions

if TYPE_CHECKING:
    from slicers.registry import SLICERS, slice_text

__all__ = ["DEFAULT_MAX_CHARS", "SLICERS", "Slice", "SliceOptions", "Sliced", "slice_text"]


def __getattr__(name: str) -> Any:
    """The registry (every slicer's module) loads on first use: `DEFAULT_MAX_CHARS` alone is
    read by --help."""
    if name not in ("SLICERS", "slice_text"):
        raise AttributeError(f"module 'slicers' has no attribute {name!r}")
    value = getattr(importlib.import_module("slicers.registry"), name)
    globals()[name] = value
    return value
