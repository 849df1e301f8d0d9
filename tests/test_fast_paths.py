"""The fast paths give exactly what the plain code they replace gives (output is byte-identical).

Each fast path (orjson for JSON lines, the record encoder written out from its fields, control
characters of ASCII text counted by a byte deletion, an RE2 set for the redaction needles,
running totals for slice sizes, a regex over flag bytes for blank-line blocks, the markdown
indentation count, ASCII heading slugs, reST titles looked for only beside the adornment lines
one regex finds, slices cut without re-capping labels, markdown block rules tried only after a
marker, front matter without a title not parsed) is checked against the straightforward
computation on open-ended input.
"""

from __future__ import annotations

import json
import math
import re
import string
import tomllib
import unicodedata

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from flatten import record as codec
from flatten.content import _CONTROL, _control_share
from flatten.record import FIELDS, Provenance, encode, encode_line, json_line, new_record
from flatten.secrets.scan import NEEDLES, Scan
from slicers.base import (
    ANCHOR_MAX,
    TITLE_MAX,
    LineSpan,
    Slice,
    cap_label,
    cap_title,
    is_blank,
    make_slice,
    split_lines,
)
from slicers.markdown import (
    _ATX,
    _BLOCK_MARKERS,
    _BLOCKQUOTE,
    _FENCE,
    _LIST_ITEM,
    _SETEXT,
    _THEMATIC,
    _front_matter_title,
    _html_block,
    _indent,
)
from slicers.rst import _title_text, adornment_rows, find_rst_headings
from slicers.ruamel_yaml import YAML
from slicers.sections import Heading
from slicers.slug import _kept, docutils_id, github_slug
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


_ADORNMENT = re.compile(r"""^([!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~])\1*[ \t]*$""")


def _plain_adornment(line: str) -> str | None:
    return line[0] if _ADORNMENT.match(line) else None


def _plain_rst_headings(lines: list[str]) -> list[Heading]:
    """`find_rst_headings` as it was written first: every line looked at in turn."""
    headings: list[Heading] = []
    styles: list[tuple[str, bool]] = []

    def heading(style: tuple[str, bool], start: int, end: int, raw: str) -> Heading:
        if style not in styles:
            styles.append(style)
        return Heading(start, end, styles.index(style) + 1, _plain_title_text(raw))

    i, count = 0, len(lines)
    while i < count:
        if i and not is_blank(lines[i - 1]):
            i += 1
            continue
        line = lines[i]
        char = _plain_adornment(line)
        if char and i + 2 < count and not is_blank(lines[i + 1]):
            title, under = lines[i + 1], lines[i + 2]
            width = len(line.rstrip())
            if _plain_adornment(under) == char and len(under.rstrip()) == width >= len(
                title.strip()
            ):
                headings.append(heading((char, True), i, i + 3, title))
                i += 3
                continue
        if not is_blank(line) and not line[0].isspace() and char is None and i + 1 < count:
            under_char = _plain_adornment(lines[i + 1])
            if under_char and len(lines[i + 1].rstrip()) >= min(len(line.rstrip()), 3):
                headings.append(heading((under_char, False), i, i + 2, line))
                i += 2
                continue
        i += 1
    return headings


_ROLE = re.compile(r":[\w\-+:.]+:`([^`]*)`")
_INLINE_MARKUP = re.compile(r"``|\*\*|`_{0,2}|(?<!\w)\*(?=\S)|(?<=\S)\*(?!\w)")


def _plain_title_text(raw: str) -> str:
    return _INLINE_MARKUP.sub("", _ROLE.sub(r"\1", raw.strip())).strip()


_RST_LINES = [
    "", " ", "\t", "\x0c", "\r", "\u3000", "Title", "Install guide", " indented", "x", "=====",
    "===", "==", "=", "-----", "~~~~~ ", "=====\t", "====\r", "=-=-=", "#", "**", ":ref:`a`",
    "``code`` *em*", ".. _label:", "+---+", "\\\\\\",
]  # fmt: skip
_rst_lines = st.lists(
    st.sampled_from(_RST_LINES)
    | st.text(alphabet="=-~ #*`:\tab\r\x0c", max_size=8)
    | st.text(max_size=8),
    max_size=40,
)


@settings(max_examples=600)
@given(_rst_lines)
@example(["", "=====", "Title", "-----", "", "Next", "=====", "x", "", "===", "Title", "==="])
@example(["Title", "==", "", "=====", "Over long title", "=====", "", "-----", "", "-----"])
@example(["Title", "-----", ""])  # the text ends in a line break
def test_rst_headings_are_the_ones_a_line_by_line_scan_finds(lines: list[str]) -> None:
    text = "\n".join(lines)
    lines = split_lines(text)  # no line holds a newline, as the slicer's never do
    expected = [i for i, line in enumerate(lines) if _plain_adornment(line)]
    assert find_rst_headings(lines) == find_rst_headings(lines, text) == _plain_rst_headings(lines)
    assert adornment_rows(lines) == adornment_rows(lines, text) == expected
    assert adornment_rows(lines, text + "\n") == expected


@given(st.text(alphabet="ab :`*_\\", max_size=20) | st.text(max_size=20))
def test_rst_title_text_is_the_markup_free_text(raw: str) -> None:
    assert _title_text(raw) == _plain_title_text(raw)


@given(st.text(max_size=20) | st.text(alphabet=string.printable, max_size=20))
def test_docutils_id_of_ascii_text_is_its_normalized_form(text: str) -> None:
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    ident = re.sub(r"^[^a-z]+", "", re.sub(r"[^a-z0-9]+", "-", ascii_text.lower()).strip("-"))
    assert docutils_id(text) == (ident or "section")


def _plain_make_slice(lines: list[str], span: LineSpan) -> Slice | None:
    """`make_slice` as it was written first: every label capped, the content tested again."""
    start, end = span.start, span.end
    if span.cols is not None:
        content = lines[start][span.cols[0] : span.cols[1]]
        end = start + 1
    else:
        while start < end and is_blank(lines[start]):
            start += 1
        while end > start and is_blank(lines[end - 1]):
            end -= 1
        content = "\n".join(lines[start:end])
    if start >= end or is_blank(content):
        return None
    return Slice(
        content=content,
        start_line=start + 1,
        end_line=end,
        title=cap_title(span.title),
        section=tuple(cap_label(entry) for entry in span.section),
        anchor=span.anchor[:ANCHOR_MAX] if span.anchor else span.anchor,
        symbol=cap_label(span.symbol) if span.symbol else span.symbol,
        meta=span.meta,
    )


_labels = st.text(max_size=4) | st.text(
    alphabet="ab ", min_size=TITLE_MAX - 2, max_size=TITLE_MAX + 3
)


@settings(max_examples=400)
@given(
    _window_lines.filter(bool),
    st.integers(0, 60),
    st.integers(0, 60),
    st.none() | st.tuples(st.integers(0, 80), st.integers(0, 80)),
    _labels,
    st.lists(_labels, max_size=3).map(tuple),
)
def test_slices_are_the_slices_the_plain_cut_gives(lines, a, b, cols, title, section) -> None:
    start = min(a, len(lines) - 1)
    end = start + 1 if cols is not None else min(max(a, b), len(lines))
    span = LineSpan(start, end, title=title, section=section, anchor="x", cols=cols)
    assert make_slice(lines, span) == _plain_make_slice(lines, span)


_BLOCK_STARTS = (_FENCE, _ATX, _SETEXT, _THEMATIC, _LIST_ITEM, _BLOCKQUOTE)


@settings(max_examples=600)
@given(
    st.text(alphabet=" \t", max_size=5),
    st.sampled_from("`~#=-*_+<>1.[!/|\u3000\x0c²") | st.characters(),
    st.text(alphabet="`~#=-*_+<>! abc1.)\t", max_size=8) | st.text(max_size=8),
)
def test_markdown_lines_without_a_marker_open_no_block(indent: str, first: str, rest: str) -> None:
    line = indent + first + rest
    if first in " \t\n" or first in _BLOCK_MARKERS or first.isdecimal():
        return
    assert not any(pattern.match(line) for pattern in _BLOCK_STARTS)
    assert _html_block(line, can_interrupt=True) is None


def _plain_front_matter_title(body: str, *, yaml: bool) -> str | None:
    try:
        data = YAML(typ="safe", pure=True).load(body) if yaml else tomllib.loads(body)
    except Exception:
        return None
    if isinstance(data, dict):
        title = data.get("title")
        if isinstance(title, str | int | float) and str(title).strip():
            return str(title).strip()
    return None


_front_matter_keys = st.sampled_from(["title", "Title", "name", '"ti\\u0074le"', "'title'", "t"])


@settings(max_examples=300)
@given(
    st.lists(st.tuples(_front_matter_keys, st.text(alphabet="ab #:", max_size=4)), max_size=3),
    st.booleans(),
)
def test_front_matter_title_is_the_parsed_title(rows: list[tuple[str, str]], yaml: bool) -> None:
    form = "{}: {}" if yaml else '{} = "{}"'
    body = "\n".join(form.format(key, value) for key, value in rows)
    assert _front_matter_title(body, yaml=yaml) == _plain_front_matter_title(body, yaml=yaml)


# Values of each field's own type, and in a few fields any value at all: the written-out encoder
# must give the getter loop's dict, and the line `json.dumps` writes (or its error).
_odd_values = _values | st.tuples(_scalars, _scalars) | st.sampled_from([(), 2**64, 1e-07])
_typed = {
    str: st.none() | st.text(max_size=8),
    int: st.none() | st.integers(min_value=-(2**63), max_value=2**63 - 1),
    bool: st.booleans(),
    list: st.lists(st.text(max_size=8), max_size=3).map(tuple),
}


@st.composite
def _field_values(draw: st.DrawFn) -> list:
    odd = draw(st.sets(st.sampled_from(range(len(FIELDS))), max_size=2))
    return [draw(_odd_values if i in odd else _typed[f.type]) for i, f in enumerate(FIELDS)]


@settings(max_examples=400)
@given(_field_values(), st.lists(st.tuples(st.text(max_size=8), _odd_values), max_size=2))
def test_the_native_encoder_gives_what_the_getter_loop_gives(values: list, meta: list) -> None:
    attrs = {f.attr: v for f, v in zip(FIELDS, values, strict=True) if "." not in f.attr}
    attrs.pop("id"), attrs.pop("chunk_size")  # properties: from source, ordinal and content
    attrs["content"] = str(attrs["content"])
    repo_url, commit, ref = (values[i] for i, f in enumerate(FIELDS) if "." in f.attr)
    record = new_record(**attrs, provenance=Provenance(repo_url, commit, ref), meta=tuple(meta))
    expected = codec._values(record, codec._GETTERS)
    assert encode(record) == expected
    assert [type(v) for v in encode(record).values()] == [type(v) for v in expected.values()]
    try:
        line = _plain_json(expected)
    except (UnicodeEncodeError, TypeError, ValueError) as exc:
        with pytest.raises(type(exc)):
            encode_line(record)
        return
    assert encode_line(record) == line


@pytest.mark.parametrize("odd", [1e-07, math.nan, 2**64, ("a", 1e-07), ["b", ["c"]]])
def test_an_odd_value_in_any_field_or_in_meta_is_written_as_json_writes_it(odd: object) -> None:
    typed = {"source": "a.md", "ordinal": 1, "title": "A", "content": "x", "kind": "markdown",
             "hash": "h", "doc_hash": "d", "provenance": Provenance("u", "c", "r"), "lang": "md",
             "doc_title": "A", "section": ("A",), "anchor": "a", "symbol": "s", "start_line": 1,
             "end_line": 2, "url": "u", "repo_path": "a.md", "dirty": True, "redactions": 1,
             "syntax_error": True, "meta": ()}  # fmt: skip
    fields = [name for name in typed if name not in ("provenance", "content", "meta")]
    places = [{name: odd} for name in fields] + [{"meta": (("n", odd),)}]
    for place in places:
        record = new_record(**{**typed, **place})
        expected = codec._values(record, codec._GETTERS)
        assert encode(record) == expected
        assert encode_line(record) == _plain_json(expected), place


@given(st.text(st.characters(max_codepoint=0x7F) | st.sampled_from("\x00\x1b\x7f\x85é")))
def test_the_control_share_of_ascii_text_is_the_one_the_regex_counts(text: str) -> None:
    expected = len(_CONTROL.findall(text)) / len(text) if text else 0.0
    assert _control_share(text) == expected
