"""The markdown slicer: CommonMark block rules decide what is a heading."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from slicers.base import SliceOptions, split_lines
from slicers.markdown import scan_blocks, slice_markdown
from tests.slicer_invariants import assert_covers


def titles(text: str, max_chars: int = 4000) -> list[str]:
    return [s.title for s in slice_markdown(text, "doc.md", SliceOptions(max_chars)).slices]


def test_atx_headings_start_sections_with_breadcrumbs():
    sliced = slice_markdown(
        "# A\nintro\n## B\nbody\n### C\nmore\n## D\nend\n", "x.md", SliceOptions()
    )
    assert [s.section for s in sliced.slices] == [("A",), ("A", "B"), ("A", "B", "C"), ("A", "D")]
    assert [(s.start_line, s.end_line) for s in sliced.slices] == [(1, 2), (3, 4), (5, 6), (7, 8)]


def test_setext_heading_starts_a_section():
    assert titles("Title\n=====\ntext\n\nSub\n---\nmore\n") == ["Title", "Sub"]


def test_multi_line_setext_heading_spans_its_paragraph():
    sliced = slice_markdown("intro\n\nFirst line\nsecond line\n===\nbody\n", "x.md", SliceOptions())
    assert sliced.slices[1].title == "First line second line"
    assert sliced.slices[1].start_line == 3


def test_hash_lines_inside_fences_of_any_length_are_not_headings():
    text = "# Real\n````md\n```\n# fake\n```\n# still fake\n````\n~~~\n# fake\n~~~\ntext\n"
    assert titles(text) == ["Real"]


def test_unclosed_fence_runs_to_the_end():
    assert titles("# A\n```\n# not\n## not\n") == ["A"]


def test_indented_code_is_not_a_heading_but_an_indented_atx_is():
    lines = split_lines("para\n\n    # code\n\n   # Heading\ntext\n")
    assert [(h.line, h.text) for h in scan_blocks(lines).headings] == [(4, "Heading")]


def test_headings_inside_html_blocks_are_content():
    text = "# Top\n<div>\n# inside html\n</div>\n\n<!--\n# in a comment\n-->\n## Next\nx\n"
    assert titles(text) == ["Top", "Next"]


def test_dashes_after_a_list_item_are_a_thematic_break_not_a_heading():
    assert titles("# A\n- item\n---\ntext\n") == ["A"]


def test_dashes_after_a_blank_line_are_a_thematic_break():
    assert titles("# A\ntext\n\n---\n\nmore\n") == ["A"]


def test_yaml_front_matter_gives_the_title_and_is_its_own_slice():
    sliced = slice_markdown(
        "---\ntitle: Guide\nlayout: doc\n---\nIntro\n# Part\nx\n", "g.md", SliceOptions()
    )
    assert sliced.doc_title == "Guide"
    first, intro, part = sliced.slices
    assert (first.start_line, first.end_line) == (1, 4)
    assert "Intro" not in first.content
    assert intro.content == "Intro" and intro.title == "Guide"
    assert part.title == "Part"


def test_toml_front_matter_gives_the_title():
    assert slice_markdown('+++\ntitle = "T"\n+++\nbody\n', "t.md", SliceOptions()).doc_title == "T"


def test_malformed_front_matter_is_kept_as_content():
    sliced = slice_markdown("---\ntitle: [unclosed\n---\nbody\n", "t.md", SliceOptions())
    assert sliced.doc_title is None
    assert_covers("---\ntitle: [unclosed\n---\nbody\n", sliced)


def test_first_h1_is_the_doc_title_without_front_matter():
    assert slice_markdown("# Hello\nx\n", "h.md", SliceOptions()).doc_title == "Hello"


def test_repeated_headings_get_github_anchor_suffixes():
    text = "## Usage\na\n## Usage\nb\n## Usage\nc\n"
    anchors = [s.anchor for s in slice_markdown(text, "x.md", SliceOptions()).slices]
    assert anchors == ["usage", "usage-1", "usage-2"]


def test_explicit_heading_id_is_the_anchor():
    sliced = slice_markdown("## Events {#timeline-events}\nx\n", "x.md", SliceOptions())
    assert (sliced.slices[0].title, sliced.slices[0].anchor) == ("Events", "timeline-events")


def test_heading_markup_is_stripped_from_titles():
    assert titles("## The `run` [command](cli.md) **now**\nx\n") == ["The run command now"]


def test_heading_only_sections_merge_into_the_next():
    sliced = slice_markdown("# Guide\n\n## Install\nsteps\n", "x.md", SliceOptions())
    assert len(sliced.slices) == 1
    only = sliced.slices[0]
    assert (only.start_line, only.title, only.section) == (1, "Install", ("Guide", "Install"))


def test_oversized_section_splits_at_blank_lines_never_inside_a_fence():
    fence = "```\n" + "\n".join(f"line {i}" for i in range(30)) + "\n\n" + "tail\n```\n"
    paragraphs = "\n\n".join(f"paragraph {i} " + "word " * 30 for i in range(10))
    text = f"# Big\n{paragraphs}\n\n{fence}\nafter\n"
    sliced = slice_markdown(text, "x.md", SliceOptions(max_chars=400))
    assert len(sliced.slices) > 3
    assert all(s.title.startswith("Big (part ") for s in sliced.slices)
    fenced = [s for s in sliced.slices if "line 0" in s.content]
    assert len(fenced) == 1 and "tail\n```" in fenced[0].content
    assert_covers(text, sliced)


def test_ten_thousand_lines_without_headings_become_windows():
    text = "\n".join(
        f"line {i} of a long note" + ("\n" if i % 7 == 0 else "") for i in range(10_000)
    )
    sliced = slice_markdown(text, "notes.md", SliceOptions())
    assert len(sliced.slices) > 10
    assert all(s.title.startswith("notes.md") for s in sliced.slices)
    assert_covers(text, sliced)


def test_one_giant_fenced_block_is_cut_between_lines_and_loses_nothing():
    text = "```python\n" + "\n".join(f"x_{i} = {i}" for i in range(5000)) + "\n```\n"
    sliced = slice_markdown(text, "big.md", SliceOptions())
    assert len(sliced.slices) > 5
    assert_covers(text, sliced)


def test_a_single_huge_line_is_kept_whole():
    text = "# T\n" + "x" * 50_000 + "\n"
    sliced = slice_markdown(text, "x.md", SliceOptions(max_chars=500))
    assert_covers(text, sliced)


# --- properties -------------------------------------------------------------------------------

BLOCKS = st.sampled_from(
    [
        "# Title",
        "## Sub section",
        "### Deep",
        "#### x #",
        "#",
        "#nope",
        "Para line",
        "another line",
        "Setext\n===",
        "Setext two\n---",
        "---",
        "***",
        "",
        "",
        "```",
        "```py",
        "~~~",
        "````",
        "    indented # code",
        "- item",
        "- item\n  continued",
        "1. first",
        "> quote",
        "> # quoted",
        "<div>",
        "</div>",
        "<!-- c -->",
        "<!--",
        "-->",
        "<pre>",
        "</pre>",
        "\t# tab",
        "   # three",
        "| a | b |\n|---|---|",
        "text ``` inline",
        "===",
        "  ---",
        "* * *",
        "<span>x</span>",
    ]
)
documents = st.lists(BLOCKS, max_size=40).map("\n".join)


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(documents, st.integers(min_value=200, max_value=2000))
def test_slices_cover_every_non_blank_line_in_order(text, max_chars):
    assert_covers(text, slice_markdown(text, "p.md", SliceOptions(max_chars)))


@settings(max_examples=300)
@given(st.text(max_size=3000), st.integers(min_value=200, max_value=4000))
def test_never_raises_on_arbitrary_text(text, max_chars):
    assert_covers(text, slice_markdown(text, "any.md", SliceOptions(max_chars)))


@settings(max_examples=400)
@given(documents)
def test_top_level_headings_agree_with_a_commonmark_parser(text):
    """Differential check against markdown-it-py (CommonMark) on the constructs we track."""
    lines = split_lines(text)
    ours = [h.line for h in scan_blocks(lines).headings]
    tokens = MarkdownIt("commonmark").parse(text)
    theirs = [t.map[0] for t in tokens if t.type == "heading_open" and t.level == 0]
    assert ours == theirs


def test_heading_ids_given_beside_the_text_become_anchors_and_stay_out_of_content():
    text = "# Debugging\nintro\n## Printing the configuration\nrun it\n## Other\nx\n"
    options = SliceOptions(heading_ids=((0, "top"), (2, "printing-the-configuration")))
    slices = slice_markdown(text, "page", options).slices
    assert [s.anchor for s in slices] == ["top", "printing-the-configuration", "other"]
    assert all("{#" not in s.content for s in slices)
