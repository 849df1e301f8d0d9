"""The fast paths give exactly what the plain code they replace gives (output is byte-identical).

Each fast path (orjson for JSON lines, an RE2 set for the redaction needles, running totals for
slice sizes, a regex over flag bytes for blank-line blocks, the markdown indentation count,
ASCII heading slugs) is checked against the straightforward computation on open-ended input.
"""

from __future__ import annotations

import json
import math
import string

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from flatten.record import json_line
from flatten.secrets.scan import NEEDLES, Scan
from slicers.base import is_blank
from slicers.markdown import _indent
from slicers.slug import _kept, github_slug
from slicers.windows import Window, _blocks, _Sizes, cut_line, pack_windows

_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text()
)
_values = st.recursive(
    _scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)


def _plain_json(obj: object) -> bytes:
    return (json.dumps(obj, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")


@settings(max_examples=400)
@given(_values)
def test_json_line_writes_the_bytes_json_writes(obj: object) -> None:
    try:
        expected = _plain_json(obj)
    except UnicodeEncodeError:  # a lone surrogate: the same error as ever
        with pytest.raises(UnicodeEncodeError):
            json_line(obj)
        return
    assert json_line(obj) == expected


@pytest.mark.parametrize(
    "obj",
    [
        {"score": 1e-07, "n": 1e16},  # orjson writes 1e-7
        {"x": math.nan, "y": -math.inf},  # orjson writes null
        {"big": 2**64},  # orjson refuses
        {1: "non-str key"},  # orjson refuses
        {"control": "\x00\x1f\x7f\u2028\u2029\ufeff", "emoji": "😀", "quote": '"\\'},
        [[[[[[["deep"]]]]]]],
    ],
)
def test_json_line_matches_json_on_the_values_orjson_writes_differently(obj: object) -> None:
    assert json_line(obj) == _plain_json(obj)


def test_json_line_refuses_a_lone_surrogate_as_json_does() -> None:
    with pytest.raises(UnicodeEncodeError):
        json_line({"content": "broken \ud800 text"})


_needle_text = st.lists(
    st.sampled_from([n.upper() for n, _ in NEEDLES.needles] + [n for n, _ in NEEDLES.needles])
    | st.sampled_from(["\u212a", "\u0130", "\u0131", "\u017f", "\ud800", "é"])  # odd cases
    | st.text(max_size=6),
    max_size=12,
).map("".join)


def _lower_cased(text: str) -> str:
    folded = text.lower()
    if len(folded) == len(text):
        return folded
    return text.translate(str.maketrans(string.ascii_uppercase, string.ascii_lowercase))


@settings(max_examples=400)
@given(_needle_text)
def test_the_needle_set_finds_exactly_what_substring_search_finds(text: str) -> None:
    """Plain needles as written, folded ones in the lower-cased text the patterns fold to."""
    folded = _lower_cased(text)
    expected = {(n, fold) for n, fold in NEEDLES.needles if n in (folded if fold else text)}
    assert Scan(text).found == expected


def test_the_needle_set_reads_text_with_a_lone_surrogate() -> None:
    assert Scan("\ud800 sk- \u212aEY").found >= {("sk-", False), ("key", True)}


@given(st.lists(st.text(max_size=5), max_size=10), st.integers(-3, 12), st.integers(-3, 12))
def test_window_sizes_count_each_line_and_its_newline(lines: list[str], a: int, b: int) -> None:
    start, end = max(a, 0), max(min(b, len(lines)), 0)
    size = _Sizes(lines, 0, len(lines))
    assert size(start, end) == sum(len(lines[i]) + 1 for i in range(start, end))


def _plain_blocks(
    lines: list[str], start: int, end: int, protected: list[tuple[int, int]]
) -> list[tuple[int, int]]:
    """Runs of lines split at blank lines, a protected range jumped over whole: line by line."""
    guard = {}
    for p_start, p_end in protected:
        if p_end > start and p_start < end and p_start < p_end:
            guard[max(p_start, start)] = min(p_end, end)
    blocks, block_start, i = [], None, start
    while i < end:
        if i in guard:
            block_start = i if block_start is None else block_start
            i = guard[i]
            continue
        if is_blank(lines[i]):
            if block_start is not None:
                blocks.append((block_start, i))
                block_start = None
        elif block_start is None:
            block_start = i
        i += 1
    if block_start is not None:
        blocks.append((block_start, end))
    return blocks


_window_lines = st.lists(
    st.sampled_from(["", " ", "\t", "\u3000", "\x0c", "\r", "\x85", "a", "word " * 9, "x" * 70])
    | st.text(max_size=12),
    max_size=60,
)
_ranges = st.lists(st.tuples(st.integers(-2, 62), st.integers(-2, 62)), max_size=6)


@settings(max_examples=400)
@given(_window_lines, _ranges, st.integers(0, 62), st.integers(0, 62))
def test_blocks_are_the_runs_a_line_by_line_scan_finds(lines, protected, a, b) -> None:
    start, end = min(a, len(lines)), min(max(a, b), len(lines))
    assert _blocks(lines, start, end, protected) == _plain_blocks(lines, start, end, protected)


@given(st.text(alphabet=" \t\u00a0\u3000x#", max_size=12))
def test_markdown_indent_counts_columns_as_commonmark_does(line: str) -> None:
    # Leading spaces and tabs, tabs to the next multiple of 4: what expandtabs(4) gives.
    leading = line[: len(line) - len(line.lstrip(" \t"))]
    assert _indent(line) == len(leading.expandtabs(4))


@given(st.text(max_size=30) | st.text(alphabet=string.printable, max_size=30))
def test_github_slug_keeps_the_characters_github_slugger_keeps(text: str) -> None:
    expected = "".join(c for c in text.lower() if _kept(c)).replace(" ", "-")
    assert github_slug(text) == expected


def _plain_pack(lines, start, end, max_chars, protected):
    """`pack_windows` as it was written first: line by line, each size summed again."""

    def size(a, b):
        return sum(len(line) + 1 for line in lines[a:b]) if b > a else 0

    if size(start, end) <= max_chars:
        return [Window(start, end)]
    pieces = []
    for b_start, b_end in _plain_blocks(lines, start, end, protected):
        if size(b_start, b_end) <= max_chars:
            pieces.append(Window(b_start, b_end))
            continue
        cut = b_start
        used = 0
        for i in range(b_start, b_end):
            if len(lines[i]) > max_chars:
                if cut < i:
                    pieces.append(Window(cut, i))
                pieces.extend(Window(i, i + 1, cols) for cols in cut_line(lines[i], max_chars))
                cut, used = i + 1, 0
                continue
            width = len(lines[i]) + 1
            if used and used + width > max_chars:
                pieces.append(Window(cut, i))
                cut, used = i, 0
            used += width
        if cut < b_end:
            pieces.append(Window(cut, b_end))
    windows = []
    w_start, used, gap_start = start, 0, start
    for piece in pieces:
        if piece.cols is not None:
            if used:
                windows.append(Window(w_start, piece.start))
            windows.append(piece)
            w_start, used, gap_start = piece.end, 0, piece.end
            continue
        width = size(gap_start, piece.end)
        if used and used + width > max_chars:
            windows.append(Window(w_start, piece.start))
            w_start, used = piece.start, 0
            width = size(piece.start, piece.end)
        used += width
        gap_start = piece.end
    if used or not windows:
        windows.append(Window(w_start, end))
    return windows


@settings(max_examples=500)
@given(_window_lines, _ranges, st.integers(0, 62), st.integers(0, 62), st.integers(1, 200))
def test_windows_are_the_windows_a_line_by_line_packing_gives(
    lines, protected, a, b, max_chars
) -> None:
    start, end = min(a, len(lines)), min(max(a, b), len(lines))
    expected = _plain_pack(lines, start, end, max_chars, protected)
    assert pack_windows(lines, start, end, max_chars, protected) == expected
