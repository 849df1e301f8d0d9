"""One registry of slicers keyed by format name: a new format is a module plus one line here.

Each slicer's module loads when its format is first sliced: a run over markdown never imports the
code slicer and its language tables (nearly a third of an empty `flatten`'s import work went to
modules it never called). `preload()` loads them all at once, for a parent process about to fork
workers that would otherwise each import the same modules.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping
from dataclasses import replace

from slicers.base import TITLE_MAX, Sliced, SliceOptions, Slicer, cap_label
from slicers.windows import slice_windows

# Format -> "module:function" in this package, loaded on first use.
_TARGETS: dict[str, str] = {
    "markdown": "markdown:slice_markdown",
    "notebook": "notebook:slice_notebook",
    "openapi": "openapi:slice_openapi",  # OpenAPI 3.x, Swagger 2.0 and JSON Schema
    "rst": "rst:slice_rst",
    "asciidoc": "asciidoc:slice_asciidoc",
    "text": "windows:slice_windows",
    "terraform": "terraform:slice_terraform",
    "yaml": "yaml:slice_yaml",
    "code": "code:slice_code",
    "shell": "code:slice_code",  # tree-sitter bash: one slice per function, top-level code grouped
}


class _Slicers(Mapping[str, Slicer]):
    """The slicers by format, each imported when first asked for."""

    def __init__(self, targets: dict[str, str]) -> None:
        self._targets = targets
        self._loaded: dict[str, Slicer] = {}

    def __getitem__(self, fmt: str) -> Slicer:
        slicer = self._loaded.get(fmt)
        if slicer is None:
            module, _, function = self._targets[fmt].partition(":")
            slicer = getattr(importlib.import_module(f"slicers.{module}"), function)
            self._loaded[fmt] = slicer
        return slicer

    def __iter__(self) -> Iterator[str]:
        return iter(self._targets)

    def __len__(self) -> int:
        return len(self._targets)


SLICERS: Mapping[str, Slicer] = _Slicers(_TARGETS)


def preload() -> None:
    """Import every slicer now (before forking workers, which then inherit them)."""
    for fmt in SLICERS:
        SLICERS[fmt]


def slice_text(
    fmt: str,
    text: str,
    path: str,
    options: SliceOptions | None = None,
    *,
    lang: str | None = None,
) -> Sliced:
    """Slice `text` with the slicer for `fmt`; windows for an unknown format or a slicer failure.

    Slicers are written not to raise; this is the last guard that keeps one odd file from ending
    a run, and the fallback says so in the result's notes.
    """
    options = options or SliceOptions()
    if lang is not None:
        options = replace(options, lang=lang)
    slicer = SLICERS[fmt] if fmt in _TARGETS else slice_windows
    try:
        sliced = slicer(text, path, options)
    except Exception as exc:  # a slicer bug must not lose the file's content
        fallback = slice_windows(text, path, options)
        note = f"{fmt} slicer failed ({type(exc).__name__}); sliced as windows"
        return Sliced(slices=fallback.slices, notes=(note,))
    if sliced.doc_title and len(sliced.doc_title) > TITLE_MAX:
        sliced = replace(sliced, doc_title=cap_label(sliced.doc_title))
    return sliced
