"""Pure slicing functions: one module per format, one registry keyed by format name."""

from slicers.base import DEFAULT_MAX_CHARS, Slice, Sliced, SliceOptions
from slicers.registry import SLICERS, slice_text

__all__ = ["DEFAULT_MAX_CHARS", "SLICERS", "Slice", "SliceOptions", "Sliced", "slice_text"]
