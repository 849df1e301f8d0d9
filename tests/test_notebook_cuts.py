"""A notebook output cut at MAX_OUTPUT_LINES / MAX_OUTPUT_CHARS: the note says exactly what went.

Outputs at the limits, without a trailing newline, with CRLF line ends or astral characters at
the cut, or ending with a line that reads like a note: what is kept is the output's own start,
the note counts the rest, a second cut (the slicer reading `strip_outputs`' text) changes
nothing, and the slicer never raises.
"""

from __future__ import annotations

import json
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from slicers import SliceOptions, slice_text
from slicers.notebook import MAX_OUTPUT_CHARS, MAX_OUTPUT_LINES, strip_outputs

_NOTE = re.compile(r"\n\[output cut: (\d+) more (lines|characters)\]\Z")
_PIECES = st.sampled_from(
    ["a", " ", "\n", "\r", "\r\n", "é", "😀", "\u0301", "[output cut: 3 more lines]"]
)


def shown_output(text: str) -> str:
    """The output as the slicer shows it: one stream output of one code cell."""
    stream = {"output_type": "stream", "name": "stdout", "text": text}
    cell = {"cell_type": "code", "source": "run()", "outputs": [stream]}
    notebook = json.dumps({"cells": [cell], "metadata": {}, "nbformat": 4})
    assert strip_outputs(notebook) is not None
    # strip_outputs cuts first, the slicer cuts what it wrote again: the same either way.
    for source in (notebook, strip_outputs(notebook)):
        sliced = slice_text("notebook", source, "n.ipynb", SliceOptions(max_chars=1_000_000))
        content = "\n".join(piece.content for piece in sliced.slices)
        shown = content.split("```\n\nOutput:\n", 1)[1] if "Output:" in content else ""
        if source is notebook:
            first = shown
        else:
            assert shown == first
    return first


def check_accounted(text: str, shown: str) -> None:
    whole = text.rstrip("\n")
    if shown.strip() == whole.strip():  # nothing cut (blank edges aside)
        return
    note = _NOTE.search(shown)
    assert note is not None, (text, shown)
    kept, count, unit = shown[: note.start()], int(note.group(1)), note.group(2)
    assert whole.startswith(kept)
    if unit == "lines":
        assert kept.count("\n") == MAX_OUTPUT_LINES - 1 and len(kept) <= MAX_OUTPUT_CHARS
        assert count == whole.count("\n") + 1 - MAX_OUTPUT_LINES
    else:
        assert len(kept) <= MAX_OUTPUT_CHARS and len(kept) + count == len(whole)
        assert not kept.endswith("\r") or whole[len(kept)] != "\n"  # no CRLF pair split


@settings(max_examples=300, deadline=None)
@given(st.lists(_PIECES, max_size=60).map("".join), st.integers(0, MAX_OUTPUT_CHARS + 5))
def test_a_cut_output_keeps_its_start_and_counts_the_rest(tail, pad):
    for text in (tail, "x" * pad + tail, "y\n" * (MAX_OUTPUT_LINES - 1) + "z" * pad + tail):
        check_accounted(text, shown_output(text))


@pytest.mark.parametrize(
    ("text", "expected_end"),
    [
        ("r\n" * MAX_OUTPUT_LINES, "r\nr"),  # exactly 20 lines: no note
        ("r\n" * (MAX_OUTPUT_LINES + 1), "r\n[output cut: 1 more lines]"),
        ("r" * MAX_OUTPUT_CHARS, "rrr"),  # exactly 4,000 characters, no newline: no note
        ("r" * (MAX_OUTPUT_CHARS + 1), "rrr\n[output cut: 1 more characters]"),
        # A CRLF pair at the cut goes whole (a lone \r was kept before the note).
        ("r" * (MAX_OUTPUT_CHARS - 1) + "\r\nend", "rrr\n[output cut: 5 more characters]"),
        ("r" * (MAX_OUTPUT_CHARS - 1) + "😀😀", "r😀\n[output cut: 1 more characters]"),
    ],
)
def test_outputs_at_the_limits(text, expected_end):
    shown = shown_output(text)
    assert shown.endswith(expected_end)
    check_accounted(text, shown)


def test_an_output_ending_like_a_note_is_still_cut_to_the_limits():
    """A cell that prints a line reading `[output cut: 3 more lines]` after 5,000 characters
    was taken as cut already: all 5,000 shown, past the limit."""
    text = "w" * 5000 + "\n[output cut: 3 more lines]\n"
    shown = shown_output(text)
    assert shown.endswith("\n[output cut: 1027 more characters]")
    check_accounted(text, shown)
