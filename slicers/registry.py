"""One registry of slicers keyed by format name: a new format is a module plus one line here."""

from __future__ import annotations

from dataclasses import replace

from slicers.asciidoc import slice_asciidoc
from slicers.base import TITLE_MAX, Sliced, SliceOptions, Slicer, cap_label
from slicers.code import slice_code
from slicers.markdown import slice_markdown
from slicers.notebook import slice_notebook
from slicers.openapi import slice_openapi
from slicers.rst import slice_rst
from slicers.terraform import slice_terraform
from slicers.windows import slice_windows
from slicers.yaml import slice_yaml

SLICERS: dict[str, Slicer] = {
    "markdown": slice_markdown,
    "notebook": slice_notebook,
    "openapi": slice_openapi,  # OpenAPI 3.x, Swagger 2.0 and JSON Schema
    "rst": slice_rst,
    "asciidoc": slice_asciidoc,
    "text": slice_windows,
    "terraform": slice_terraform,
    "yaml": slice_yaml,
    "code": slice_code,
    "shell": slice_code,  # tree-sitter bash: one slice per function, top-level code grouped
}


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
    slicer = SLICERS.get(fmt, slice_windows)
    try:
        sliced = slicer(text, path, options)
    except Exception as exc:  # a slicer bug must not lose the file's content
        fallback = slice_windows(text, path, options)
        note = f"{fmt} slicer failed ({type(exc).__name__}); sliced as windows"
        return Sliced(slices=fallback.slices, notes=(note,))
    if sliced.doc_title and len(sliced.doc_title) > TITLE_MAX:
        sliced = replace(sliced, doc_title=cap_label(sliced.doc_title))
    return sliced
