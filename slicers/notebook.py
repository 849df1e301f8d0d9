"""Jupyter notebooks (nbformat 4): one slice per markdown heading section, counted in cells.

A notebook's JSON lines mean nothing to a reader, so slices are made of cells: each markdown
heading starts a section, the code cells after it belong to it (fenced with the kernel's
language), and `startLine`/`endLine` are 1-based CELL numbers; every slice says so with
`lineUnit: cell`. Outputs are kept as text only when short; images, HTML and other rich outputs
are dropped with a count, so base64 never reaches the index. A notebook without headings is cut
by cells within the size budget. JSON that is not a notebook falls back to line windows.

Sections come from the same code as markdown's (`section_spans`), run over the cells as if each
cell were one line: breadcrumbs, anchors, heading-only merging and budget splits all carry over.
"""

from __future__ import annotations

import json
from typing import Any

from slicers.base import LineSpan, Slice, Sliced, SliceOptions, is_blank
from slicers.markdown import scan_blocks
from slicers.sections import Heading, section_spans
from slicers.slug import GithubSlugger
from slicers.windows import slice_windows

MAX_OUTPUT_LINES = 20
LINE_UNIT = (("lineUnit", "cell"),)
_TEXT_OUTPUTS = ("text/plain", "text/markdown", "text/latex")


def _text(value: Any) -> str:
    """nbformat stores multi-line strings as a list of lines or as one string."""
    if isinstance(value, list):
        return "".join(str(part) for part in value)
    return value if isinstance(value, str) else ""


def _cut(text: str) -> str:
    lines = text.rstrip("\n").split("\n")
    if len(lines) <= MAX_OUTPUT_LINES:
        return "\n".join(lines)
    more = len(lines) - MAX_OUTPUT_LINES
    return "\n".join([*lines[:MAX_OUTPUT_LINES], f"[output cut: {more} more lines]"])


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


def _heading(index: int, cell: dict[str, Any], rendered: str) -> Heading | None:
    """The first heading of a markdown cell (fences and setext handled as in markdown files)."""
    if cell.get("cell_type") != "markdown":
        return None
    lines = rendered.split("\n")
    headings = scan_blocks(lines).headings
    if not headings:
        return None
    first = headings[0]
    # `end` says where the heading's body starts: past this cell when the cell holds only the
    # heading (so an empty section merges into the next), else this cell itself.
    only_heading = all(is_blank(line) for line in lines[first.end :])
    return Heading(index, index + 1 if only_heading else index, first.level, first.text)


def slice_notebook(text: str, path: str, options: SliceOptions) -> Sliced:
    try:
        notebook = json.loads(text)
    except ValueError:
        fallback = slice_windows(text, path, options)
        return Sliced(fallback.slices, notes=("notebook: not valid JSON; sliced as windows",))
    cells = notebook.get("cells") if isinstance(notebook, dict) else None
    if not isinstance(cells, list):
        fallback = slice_windows(text, path, options)
        return Sliced(fallback.slices, notes=("notebook: no nbformat 4 cells; sliced as windows",))

    language = _language(notebook.get("metadata"))
    rendered = [_render(c, language) if isinstance(c, dict) else "" for c in cells]
    headings = [
        h
        for i, cell in enumerate(cells)
        if isinstance(cell, dict) and (h := _heading(i, cell, rendered[i])) is not None
    ]
    doc_title = next((h.text for h in headings if h.level == 1 and h.text), None)
    spans = section_spans(
        rendered,
        headings,
        start=0,
        end=len(cells),
        fallback_title=doc_title or path,
        slugger=GithubSlugger(),
        max_chars=options.max_chars,
    )
    slices = [piece for span in spans if (piece := _cell_slice(rendered, span)) is not None]
    return Sliced(slices=slices, doc_title=doc_title)


def _cell_slice(rendered: list[str], span: LineSpan) -> Slice | None:
    """Cells [start, end) as one slice: blank cells trimmed at both ends, a blank line between."""
    used = [i for i in range(span.start, span.end) if not is_blank(rendered[i])]
    if not used:
        return None
    return Slice(
        content="\n\n".join(rendered[i] for i in used),
        start_line=used[0] + 1,
        end_line=used[-1] + 1,
        title=span.title,
        section=span.section,
        anchor=span.anchor,
        meta=LINE_UNIT,
    )
