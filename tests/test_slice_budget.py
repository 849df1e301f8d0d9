"""--max-chars holds for every slicer, even for a line longer than the budget; labels are capped."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from slicers import SliceOptions, slice_text
from slicers.base import ANCHOR_MAX, TITLE_MAX
from slicers.windows import cut_line
from tests.conftest import run_cli
from tests.slicer_invariants import assert_covers

# (format, lang) pairs whose slicers size by characters (code sizes by non-whitespace).
FORMATS = [("text", None), ("markdown", None), ("rst", None), ("asciidoc", None),
           ("yaml", None), ("terraform", None), ("code", "nolang")]  # fmt: skip

PROSE_LINE = ("lorem ipsum dolor sit amet " * 8000).strip()  # 216,000 characters, one line


@pytest.mark.parametrize(("fmt", "lang"), FORMATS)
def test_one_line_over_the_budget_becomes_many_slices_within_it(fmt, lang):
    sliced = slice_text(fmt, PROSE_LINE + "\n", "one.txt", SliceOptions(1000), lang=lang)
    assert len(sliced.slices) > 200
    assert all(s.start_line == s.end_line == 1 for s in sliced.slices)
    assert_covers(PROSE_LINE + "\n", sliced, max_chars=1000)


def test_a_long_line_is_cut_after_whitespace_else_hard():
    assert cut_line("aaaa bbbb cccc", 10) == [(0, 10), (10, 14)]
    assert cut_line("x" * 25, 10) == [(0, 10), (10, 20), (20, 25)]
    # Whitespace too early in the budget would make tiny pieces: cut hard instead.
    assert cut_line("a " + "x" * 20, 10) == [(0, 10), (10, 20), (20, 22)]


def test_a_cut_line_leaves_its_neighbours_whole_and_in_order():
    text = "# Title\n\nfirst paragraph\n\n" + "y" * 2500 + "\nlast line\n"
    sliced = slice_text("markdown", text, "doc.md", SliceOptions(1000))
    assert [(s.start_line, s.end_line, len(s.content)) for s in sliced.slices] == [
        (1, 3, 24), (5, 5, 1000), (5, 5, 1000), (5, 5, 500), (6, 6, 9),
    ]  # fmt: skip
    assert [s.title for s in sliced.slices] == [f"Title (part {k}/5)" for k in range(1, 6)]
    assert_covers(text, sliced, max_chars=1000)


_words = st.text(alphabet="ab \t#-=:`*", min_size=0, max_size=40)
_long = st.builds(lambda w, n: w * n, st.text(alphabet="ab \t", min_size=1, max_size=9),
                  st.integers(min_value=50, max_value=400))  # fmt: skip
_lines = st.lists(st.one_of(_words, _long, st.sampled_from(["", "```", "---", "# H", "===="])),
                  max_size=30)  # fmt: skip


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    _lines,
    st.sampled_from([*FORMATS, ("code", "python")]),
    st.integers(min_value=200, max_value=600),
)
def test_every_slicer_keeps_the_invariant_with_long_lines(lines, fmt_lang, max_chars):
    fmt, lang = fmt_lang
    text = "\n".join(lines) + "\n"
    sliced = slice_text(fmt, text, "p.x", SliceOptions(max_chars), lang=lang)
    # Parsed code sizes its units by non-whitespace characters: it keeps the coverage invariant
    # but not a character budget. Everything else holds every slice to max_chars.
    assert_covers(text, sliced, max_chars=None if lang == "python" else max_chars)


def test_a_front_matter_longer_than_the_budget_is_cut_like_a_section():
    # Found by the property test above: front matter was one slice, whatever its size.
    text = "---\n" + "summary: " + "a" * 300 + "\nother: b\n---\nBody.\n"
    sliced = slice_text("markdown", text, "p.md", SliceOptions(200))
    assert_covers(text, sliced, max_chars=200)
    assert all("(front matter)" in s.title for s in sliced.slices[:-1])


def test_a_huge_heading_gives_capped_title_anchor_and_breadcrumb():
    heading = "Install " + "x" * 100_000
    text = f"# {heading}\nbody\n\n# {heading}\nagain\n"
    sliced = slice_text("markdown", text, "h.md", SliceOptions(4000))
    assert all(len(s.title) <= TITLE_MAX for s in sliced.slices)
    assert all(len(s.anchor or "") <= ANCHOR_MAX for s in sliced.slices)
    assert all(len(entry) <= TITLE_MAX for s in sliced.slices for entry in s.section)
    assert sliced.doc_title is None or len(sliced.doc_title) <= TITLE_MAX
    firsts = [s for s in sliced.slices if s.title.endswith("(part 1/27)")]
    assert [s.start_line for s in firsts] == [1, 4]
    # Deterministic, and a repeated heading still gets its own anchor.
    assert firsts[0].title.startswith("Install xxx") and "…" in firsts[0].title
    assert firsts[1].anchor == firsts[0].anchor + "-1"
    assert_covers(text, sliced, max_chars=4000)


def test_a_50_mb_one_line_file_becomes_many_records_through_the_cli(tmp_path):
    root = tmp_path / "t"
    root.mkdir()
    line = ("word " * 10_000_001)[: 50 * 1000 * 1000]
    (root / "big.txt").write_text(line + "\n")
    out = tmp_path / "out.jsonl"
    result = run_cli("flatten", "--root", root, "--max-file-size", "64MiB", "--max-chars", "4000",
                     "-o", out, "--quiet", timeout=600)  # fmt: skip
    assert result.code == 0, result.stderr
    sizes = []
    with open(out, encoding="utf-8") as f:
        for raw in f:
            record = json.loads(raw)
            assert record["startLine"] == record["endLine"] == 1
            sizes.append(len(record["content"]))
    assert len(sizes) > 12_000 and max(sizes) <= 4000
    assert sum(sizes) == len(line)  # the pieces tile the line: nothing lost, nothing repeated
