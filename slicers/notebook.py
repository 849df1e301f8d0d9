"""Jupyter notebooks (nbformat 4): one slice per markdown heading section, counted in cells.

A notebook's JSON lines mean nothing to a reader, so slices are made of cells: each markdown
heading starts a section, the code cells after it belong to it (fenced with the kernel's
language), and `startLine`/`endLine` are 1-based CELL numbers; every slice says so with
`lineUnit: cell`. Outputs are kept as text only when short; images, HTML and other rich outputs
are dropped with a count, so base64 never reaches the index. A notebook without headings is cut
by cells within the size budget. JSON that is not a notebook falls back to line windows.

Sections come from the same code as markdown's (`section_spans`), run over the rendered cells'
lines with each cell protected whole: breadcrumbs, anchors, heading-only merging and budget
splits all carry over. A cell over the budget is cut like a markdown section (at blank lines,
outside its fences) into parts that share its cell number, each line in exactly one part.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace
from typing import Any

from slicers.base import Slice, Sliced, SliceOptions, is_blank, spans_to_slices
from slicers.markdown import scan_blocks
from slicers.sections import Heading, section_spans
from slicers.slug import GithubSlugger
from slicers.windows import slice_windows

MAX_OUTPUT_LINES = 20
MAX_OUTPUT_CHARS = 4000
_CUT_NOTE = re.compile(r"\[output cut: \d+ more (?:lines|characters)\]\Z")
LINE_UNIT = (("lineUnit", "cell"),)
_TEXT_OUTPUTS = ("text/plain", "text/markdown", "text/latex")


def _text(value: Any) -> str:
    """nbformat stores multi-line strings as a list of lines or as one string."""
    if isinstance(value, list):
        return "".join(str(part) for part in value)
    return value if isinstance(value, str) else ""


def _cut(text: str) -> str:
    """At most MAX_OUTPUT_LINES lines and MAX_OUTPUT_CHARS characters (a progress bar redrawn
    with `\r` is one line of megabytes), with a note of what was cut. A text already cut comes
    back as it is: `strip_outputs` cuts before the slicer reads. Only a text within the limits
    above its note is taken as cut already: an output that merely ends with a line reading like
    a note (`[output cut: 3 more lines]` printed by a cell) is cut like any other."""
    lines = text.rstrip("\n").split("\n")
    if len(lines) <= MAX_OUTPUT_LINES + 1 and _CUT_NOTE.match(lines[-1]):
        above = "\n".join(lines[:-1])
        if len(above) <= MAX_OUTPUT_CHARS:
            return "\n".join(lines)
    head = "\n".join(lines[:MAX_OUTPUT_LINES])
    if len(head) > MAX_OUTPUT_CHARS:
        kept = head[:MAX_OUTPUT_CHARS]
        if kept.endswith("\r") and head[MAX_OUTPUT_CHARS] == "\n":
            kept = kept[:-1]  # a CRLF pair goes whole: no lone `\r` before the note
        more = len(text.rstrip("\n")) - len(kept)
        return f"{kept}\n[output cut: {more} more characters]"
    if len(lines) <= MAX_OUTPUT_LINES:
        return head
    return f"{head}\n[output cut: {len(lines) - MAX_OUTPUT_LINES} more lines]"


def _outputs(outputs: Any) -> str:
    """Short text outputs; a count of the rich ones (images, HTML, widgets) that were dropped."""
    kept: list[str] = []
    dropped = 0
    for output in outputs if isinstance(outputs, list) else []:
        if not isinstance(output, dict):
            continue
        kind = output.get("output_type")
        if kind == "stream":
            kept.append(_cut(_text(output.get("text"))))
        elif kind == "error":
            kept.append(f"{output.get('ename', 'Error')}: {output.get('evalue', '')}")
        elif kind in ("execute_result", "display_data"):
            data = output.get("data") if isinstance(output.get("data"), dict) else {}
            # An image's text/plain is `<Figure size 640x480>`: the image stands for the output.
            if any(str(mime).startswith("image/") for mime in data):
                dropped += 1
                continue
            text = next((_text(data[m]) for m in _TEXT_OUTPUTS if m in data), None)
            if text is None:
                dropped += 1
            else:
                kept.append(_cut(text))
    parts = [f"Output:\n{text}" for text in kept if text.strip()]
    if dropped:
        parts.append(f"[{dropped} rich output(s) dropped: images, HTML or widgets]")
    return "\n\n".join(parts)


def strip_outputs(text: str) -> str | None:
    """The notebook as this slicer reads it, without what it drops: rich outputs' data (the
    mime types stay, so the count of dropped outputs is the same), cell attachments and metadata
    other than the kernel's language. None when `text` is not a notebook.

    A notebook's bytes are mostly images and widget state: its size limit is measured on this.
    """
    try:
        notebook = json.loads(text)
    except (ValueError, RecursionError):
        return None
    cells = notebook.get("cells") if isinstance(notebook, dict) else None
    if not isinstance(cells, list):
        return None
    metadata = notebook.get("metadata") if isinstance(notebook.get("metadata"), dict) else {}
    kept = {k: metadata[k] for k in ("language_info", "kernelspec") if k in metadata}
    return json.dumps({"cells": [_strip_cell(c) for c in cells], "metadata": kept}, indent=1)


def _strip_cell(cell: Any) -> Any:
    if not isinstance(cell, dict):
        return cell
    stripped = {k: v for k, v in cell.items() if k != "attachments"}
    outputs = cell.get("outputs")
    if isinstance(outputs, list):
        stripped["outputs"] = [_strip_output(o) for o in outputs]
    return stripped


def _strip_output(output: Any) -> Any:
    """The output as `_outputs` reads it: its text already cut, tracebacks and rich data gone."""
    if not isinstance(output, dict):
        return output
    if output.get("output_type") == "stream":
        return {**output, "text": _cut(_text(output.get("text")))}
    if output.get("output_type") == "error":
        return {k: v for k, v in output.items() if k != "traceback"}
    data = output.get("data")
    if not isinstance(data, dict):
        return output
    # The text that _outputs keeps; an image's text/plain is never shown, so it goes too.
    text_kept = not any(str(mime).startswith("image/") for mime in data)
    thin = {
        m: (_cut(_text(v)) if text_kept and m in _TEXT_OUTPUTS else "") for m, v in data.items()
    }
    return {**output, "data": thin}


def _render(cell: dict[str, Any], language: str) -> str:
    source = _text(cell.get("source")).strip("\n")
    if cell.get("cell_type") != "code":
        return source
    if not source.strip():
        return ""
    fenced = f"```{language}\n{source}\n```"
    outputs = _outputs(cell.get("outputs"))
    return f"{fenced}\n\n{outputs}" if outputs else fenced


def _language(metadata: Any) -> str:
    """The kernel's language (`python`, `julia`, `r`) for the code fences."""
    metadata = metadata if isinstance(metadata, dict) else {}
    for section, key in (("language_info", "name"), ("kernelspec", "language")):
        value = metadata.get(section)
        if isinstance(value, dict) and isinstance(value.get(key), str):
            return str(value[key])
    return ""


@dataclass(frozen=True)
class _Flat:
    """The rendered cells as one list of lines, a blank line between cells, so the shared
    windowing (`section_spans`, `pack_windows`) cuts them: `cell_of[i]` is line i's cell."""

    lines: list[str]
    cell_of: list[int]
    first_line: list[int]  # each cell's first line (a blank cell: where it would start)
    protected: list[tuple[int, int]]


def _flatten(rendered: list[str], max_chars: int) -> _Flat:
    """Cells within the budget are protected whole (a window never cuts one); a cell over it
    is cut like a markdown section, at blank lines outside its code fences."""
    lines: list[str] = []
    cell_of: list[int] = []
    first_line: list[int] = []
    protected: list[tuple[int, int]] = []
    for index, text in enumerate(rendered):
        if is_blank(text):
            first_line.append(len(lines))
            continue
        if lines:
            lines.append("")
            cell_of.append(cell_of[-1])
        start = len(lines)
        first_line.append(start)
        own = text.split("\n")
        lines.extend(own)
        cell_of.extend([index] * len(own))
        if len(text) < max_chars:
            protected.append((start, len(lines)))
        else:
            protected.extend((start + a, start + b) for a, b in scan_blocks(own).protected)
    return _Flat(lines, cell_of, first_line, protected)


def _heading(index: int, cell: dict[str, Any], rendered: str, flat: _Flat) -> Heading | None:
    """The first heading of a markdown cell (fences and setext handled as in markdown files),
    placed at the cell's first line: the whole cell belongs to its section."""
    if cell.get("cell_type") != "markdown" or is_blank(rendered):
        return None
    lines = rendered.split("\n")
    headings = scan_blocks(lines).headings
    if not headings:
        return None
    first = headings[0]
    start = flat.first_line[index]
    # `end` says where the heading's body starts: past this cell when the cell holds only the
    # heading (so an empty section merges into the next), else this cell itself.
    only_heading = all(is_blank(line) for line in lines[first.end :])
    return Heading(start, start + len(lines) if only_heading else start, first.level, first.text)


def slice_notebook(text: str, path: str, options: SliceOptions) -> Sliced:
    try:
        notebook = json.loads(text)
    except (ValueError, RecursionError):
        fallback = slice_windows(text, path, options)
        return Sliced(fallback.slices, notes=("notebook: not valid JSON; sliced as windows",))
    cells = notebook.get("cells") if isinstance(notebook, dict) else None
    if not isinstance(cells, list):
        fallback = slice_windows(text, path, options)
        return Sliced(fallback.slices, notes=("notebook: no nbformat 4 cells; sliced as windows",))

    language = _language(notebook.get("metadata"))
    rendered = [_render(c, language) if isinstance(c, dict) else "" for c in cells]
    flat = _flatten(rendered, options.max_chars)
    headings = [
        h
        for i, cell in enumerate(cells)
        if isinstance(cell, dict) and (h := _heading(i, cell, rendered[i], flat)) is not None
    ]
    doc_title = next((h.text for h in headings if h.level == 1 and h.text), None)
    spans = section_spans(
        flat.lines,
        headings,
        start=0,
        end=len(flat.lines),
        fallback_title=doc_title or path,
        slugger=GithubSlugger(),
        max_chars=options.max_chars,
        protected=flat.protected,
    )
    slices = [_in_cells(piece, flat) for piece in spans_to_slices(flat.lines, spans)]
    return Sliced(slices=slices, doc_title=doc_title)


def _in_cells(piece: Slice, flat: _Flat) -> Slice:
    """A slice of the flattened lines, its range counted in cells: the parts of a cell cut to
    the budget share its number."""
    start, end = flat.cell_of[piece.start_line - 1] + 1, flat.cell_of[piece.end_line - 1] + 1
    return replace(piece, start_line=start, end_line=end, meta=LINE_UNIT)
