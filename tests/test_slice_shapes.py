"""No slice reads as nothing on its own: labels open the section they label, headings stay with
their content, and the slicers' invariants hold while they do (tests/slice_shapes.py)."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from slicers import SliceOptions, slice_text
from slicers.base import is_blank
from tests.slice_shapes import FRONT_MATTER, Shapes, is_heading_only, is_label, is_label_only
from tests.slicer_invariants import assert_covers


def _slices(fmt: str, text: str, max_chars: int = 4000) -> list[tuple[int, int, str]]:
    sliced = slice_text(fmt, text, "doc", SliceOptions(max_chars))
    assert_covers(text, sliced, max_chars)
    return [(s.start_line, s.end_line, s.title) for s in sliced.slices]


def test_rst_label_opens_the_section_it_labels():
    text = (
        ".. _`pip cache`:\n\npip cache\n---------\n\nUsage.\n\n"
        ".. _logging:\n\nLogging\n=======\n\nText.\n"
    )
    assert _slices("rst", text) == [(1, 6, "pip cache"), (8, 13, "Logging")]


def test_rst_heading_above_a_labelled_subheading_is_kept_with_its_content():
    text = (
        "Intro\n=====\n\nText.\n\nBinary Library Types\n--------------------\n\n"
        ".. _`Normal Libraries`:\n\nNormal Libraries\n^^^^^^^^^^^^^^^^\n\nBody.\n"
    )
    sliced = slice_text("rst", text, "b.rst")
    assert [(s.start_line, s.title, s.section) for s in sliced.slices] == [
        (1, "Intro", ("Intro",)),
        (6, "Normal Libraries", ("Intro", "Binary Library Types", "Normal Libraries")),
    ]


def test_rst_link_target_and_indented_label_stay_where_they_are():
    text = "A\n=\n\n.. _Python: https://python.org\n\n.. note::\n\n   .. _inner:\n\nB\n=\n\nx\n"
    assert _slices("rst", text) == [(1, 8, "A"), (10, 13, "B")]


def test_markdown_anchor_line_opens_the_section_it_labels():
    text = '# Errors\n\nIntro.\n\n<a id="ABORT_ERR"></a>\n\n## `ABORT_ERR`\n\nAborted.\n'
    sliced = slice_text("markdown", text, "errors.md")
    assert [(s.start_line, s.title, s.anchor) for s in sliced.slices] == [
        (1, "Errors", "errors"),
        (5, "ABORT_ERR", "abort_err"),
    ]


def test_anchor_inside_a_fence_is_code_not_a_label():
    text = '# A\n\n```html\n<a id="x"></a>\n```\n## B\n\ny\n'
    assert _slices("markdown", text) == [(1, 5, "A"), (6, 8, "B")]


def test_heading_opens_the_first_part_of_a_body_over_the_budget():
    rows = "\n".join(f"  <tr><td>E{i}</td><td>error number {i}</td></tr>" for i in range(40))
    text = f"## Error constants\n\n#### POSIX error constants\n\n<table>\n{rows}\n</table>\n"
    sliced = slice_text("markdown", text, "os.md", SliceOptions(600))
    assert_covers(text, sliced, 600)
    first = sliced.slices[0]
    assert first.title == "POSIX error constants (part 1/4)"
    assert first.content.startswith("## Error constants") and "<td>E0</td>" in first.content


def test_heading_opens_the_first_part_of_a_code_block_over_the_budget():
    code = "\n".join(f"x_{i} = {i}" for i in range(200))
    text = f"# Big\n\n```python\n{code}\n```\n"
    sliced = slice_text("markdown", text, "big.md", SliceOptions(500))
    assert_covers(text, sliced, 500)
    assert sliced.slices[0].content.startswith("# Big\n\n```python\nx_0 = 0")


def test_preamble_is_titled_by_the_document_title_else_by_its_path():
    rst = ".. meta::\n   :keywords: x\n\nIntro before the title.\n\nGuide\n=====\n\nText.\n"
    md = "Badges and intro.\n\n# Guide\n\nText.\n"
    for fmt, text in (("rst", rst), ("markdown", md)):
        sliced = slice_text(fmt, text, "docs/guide.txt")
        assert [(s.title, s.section) for s in sliced.slices] == [
            ("Guide", ()),
            ("Guide", ("Guide",)),
        ]
    untitled = slice_text("markdown", "Intro.\n\n## Usage\n\nText.\n", "docs/usage.md")
    assert untitled.slices[0].title == "docs/usage.md"


def test_trailing_heading_without_content_ends_the_section_before():
    # nbconvert's MixedMarkdown.ipynb ends in a heading cell; docs end in "## Next steps".
    assert _slices("markdown", "# A\n\nbody\n\n## Next steps\n") == [(1, 5, "A")]
    assert _slices("rst", "A\n=\n\nbody\n\n.. _next:\n\nNext\n----\n") == [(1, 9, "A")]
    assert _slices("markdown", "# Only\n") == [(1, 1, "Only")]


def test_shapes_counts_what_it_names():
    sliced = slice_text("rst", ".. _a:\n\n.. _b:\n", "labels.rst")
    shapes = Shapes()
    assert shapes.add(sliced.slices, "rst", "labels.rst") == [
        "label-only labels.rst:1 'labels.rst'",
        "preamble titled by its path labels.rst:1 'labels.rst'",
    ]
    assert (shapes.label_only, shapes.path_titled_preambles) == (1, 1)


# --- properties -------------------------------------------------------------------------------

RST_BLOCKS = st.sampled_from([
    "Title\n=====", "=====\nTitle\n=====", "Sub\n---", "Deep\n~~~", ".. _label:", ".. _`a b`:",
    ".. _link: https://x.invalid", "Para text.", "More text", "", "", "----", "Code::",
    "    literal", ".. note::", "   indented body", "   .. _inner:", ".. index:: x",
])  # fmt: skip
MD_BLOCKS = st.sampled_from([
    "# Title", "## Sub", "### Deep", "Setext\n===", '<a id="x"></a>', "<a name='y'/>",
    '<span id="z"></span>', "Para text.", "more text", "", "", "```", "~~~", "    code",
    "- item", "> quote", "<div>", "</div>", "<!-- c -->", "---",
])  # fmt: skip


def _documents(blocks: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    # Blocks one after another or between blank lines, as titles and labels mostly stand.
    joined = st.tuples(st.sampled_from(["\n", "\n\n"]), st.lists(blocks, max_size=40))
    return joined.map(lambda parts: parts[0].join(parts[1]))


def _check_shapes(fmt: str, text: str) -> None:
    # The budget holds the whole document: these properties are about headings and labels,
    # not about where an oversized section is cut.
    sliced = slice_text(fmt, text, "doc", SliceOptions(4000))
    assert_covers(text, sliced, 4000)
    only_labels = all(is_blank(line) or is_label(line, fmt) for line in text.split("\n"))
    sections = [s for s in sliced.slices if not s.title.endswith(FRONT_MATTER)]
    for piece in sliced.slices:
        if not piece.section:  # text before the first heading: named by the document, else its path
            name = sliced.doc_title or "doc"
            assert piece.title in (name, f"{name} (front matter)"), piece
        # A label-only slice only when nothing else is there to label (front matter aside).
        assert only_labels or len(sections) == 1 or not is_label_only(piece, fmt), piece
        # A heading-only slice only when the document holds nothing else beside its front
        # matter (a trailing heading ends the section before it).
        assert len(sections) == 1 or not is_heading_only(piece, fmt), piece


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(_documents(RST_BLOCKS))
def test_rst_slices_are_never_only_labels_or_only_headings(text):
    _check_shapes("rst", text)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(_documents(MD_BLOCKS))
def test_markdown_slices_are_never_only_labels_or_only_headings(text):
    _check_shapes("markdown", text)


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(["rst", "markdown"]), st.data(), st.integers(200, 1200))
def test_labels_and_kept_headings_lose_nothing_at_any_budget(fmt, data, max_chars):
    text = data.draw(_documents(RST_BLOCKS if fmt == "rst" else MD_BLOCKS))
    assert_covers(text, slice_text(fmt, text, "doc", SliceOptions(max_chars)), max_chars)
