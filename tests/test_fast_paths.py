"""The fast paths give exactly what the plain code they replace gives (output is byte-identical).

Each fast path (orjson for JSON lines, an RE2 set for the redaction needles, C-level sums for
slice sizes, the markdown indentation count, ASCII heading slugs) is checked against the
straightforward computation on open-ended input.
"""

from __future__ import annotations

import json
import math
import string

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from flatten.record import json_line
from flatten.secrets import _FOLDED, _PLAIN
from slicers.markdown import _indent
from slicers.slug import _kept, github_slug
from slicers.windows import _size

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
    st.sampled_from([*_PLAIN.needles, *_FOLDED.needles]) | st.text(max_size=6), max_size=12
).map("".join)


@settings(max_examples=400)
@given(_needle_text)
def test_needle_sets_find_exactly_the_needles_substring_search_finds(text: str) -> None:
    for needles in (_PLAIN, _FOLDED):
        assert needles.present(text) == {n for n in needles.needles if n in text}


def test_needle_set_reads_text_with_a_lone_surrogate() -> None:
    assert _PLAIN.present("\ud800 sk-") == {"sk-"}


@given(st.lists(st.text(max_size=5), max_size=10), st.integers(-3, 12), st.integers(-3, 12))
def test_window_size_counts_each_line_and_its_newline(lines: list[str], a: int, b: int) -> None:
    start, end = max(a, 0), max(min(b, len(lines)), 0)
    assert _size(lines, start, end) == sum(len(lines[i]) + 1 for i in range(start, end))


@given(st.text(alphabet=" \t\u00a0\u3000x#", max_size=12))
def test_markdown_indent_counts_columns_as_commonmark_does(line: str) -> None:
    # Leading spaces and tabs, tabs to the next multiple of 4: what expandtabs(4) gives.
    leading = line[: len(line) - len(line.lstrip(" \t"))]
    assert _indent(line) == len(leading.expandtabs(4))


@given(st.text(max_size=30) | st.text(alphabet=string.printable, max_size=30))
def test_github_slug_keeps_the_characters_github_slugger_keeps(text: str) -> None:
    expected = "".join(c for c in text.lower() if _kept(c)).replace(" ", "-")
    assert github_slug(text) == expected
