"""reST, AsciiDoc, the text windows and the anchor sluggers."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from slicers import SLICERS, SliceOptions, slice_text
from slicers.slug import GithubSlugger, asciidoctor_id, docutils_id, github_slug
from slicers.windows import pack_windows
from tests.slicer_invariants import assert_covers

RST = """\
=====
Title
=====

Intro.

Install
=======

Run it::

    pip install x
    =============

Options
-------

Text.

----

Usage
=====

End.
"""


def test_rst_levels_follow_adornment_order_and_overlines():
    sliced = slice_text("rst", RST, "cli.rst")
    assert sliced.doc_title == "Title"
    assert [(s.title, s.section) for s in sliced.slices] == [
        ("Title", ("Title",)),
        ("Install", ("Title", "Install")),
        ("Options", ("Title", "Install", "Options")),
        ("Usage", ("Title", "Usage")),
    ]
    assert [s.anchor for s in sliced.slices] == ["title", "install", "options", "usage"]
    assert_covers(RST, sliced)


def test_rst_transition_is_not_a_title():
    sliced = slice_text("rst", "Para.\n\n----\n\nMore.\n", "t.rst")
    assert len(sliced.slices) == 1


ADOC = """\
= HTTP API

Intro.

== Auth

[[listing]]
== Listing parcels

----
== not a title
----

=== Paging

text
"""


def test_asciidoc_titles_skip_delimited_blocks_and_take_explicit_ids():
    sliced = slice_text("asciidoc", ADOC, "api.adoc")
    assert [s.title for s in sliced.slices] == ["HTTP API", "Listing parcels", "Paging"]
    assert sliced.slices[1].anchor == "listing"
    assert sliced.slices[1].section == ("HTTP API", "Listing parcels")
    assert_covers(ADOC, sliced)


def test_github_slugger_matches_github():
    assert github_slug("Hello, World!") == "hello-world"
    assert github_slug("  Two  spaces ") == "--two--spaces-"  # nothing collapsed or trimmed
    assert github_slug("snake_case & kebab-case") == "snake_case--kebab-case"
    assert github_slug("Ünïcödé ✨ emoji") == "ünïcödé--emoji"
    slugger = GithubSlugger()
    assert [slugger.slug("a"), slugger.slug("a"), slugger.slug("a-1"), slugger.slug("a")] == [
        "a",
        "a-1",
        "a-1-1",
        "a-2",
    ]


def test_docutils_and_asciidoctor_ids():
    assert docutils_id("Getting Started: 2 Steps") == "getting-started-2-steps"
    assert asciidoctor_id("Listing parcels") == "_listing_parcels"


@settings(max_examples=200)
@given(st.lists(st.text(max_size=80), max_size=200), st.integers(50, 500))
def test_windows_tile_the_range_exactly(lines, max_chars):
    lines = [line.replace("\n", " ") for line in lines]
    windows = pack_windows(lines, 0, len(lines), max_chars)
    if lines:
        assert windows[0][0] == 0 and windows[-1][1] == len(lines)
        assert all(a[1] == b[0] for a, b in itertools.pairwise(windows))


@settings(max_examples=200)
@given(st.sampled_from(["rst", "asciidoc", "text", "markdown"]), st.text(max_size=2000))
def test_every_markup_slicer_covers_arbitrary_text(fmt, text):
    assert_covers(text, slice_text(fmt, text, "f", SliceOptions(300)))


def test_text_windows_are_titled_with_the_path():
    sliced = slice_text("text", "a\n\nb\n", "LICENSE")
    assert [s.title for s in sliced.slices] == ["LICENSE"]


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(sorted(SLICERS)), st.binary(max_size=3000))
def test_no_slicer_raises_on_binary_garbage(fmt, data):
    text = data.decode("latin-1")  # garbage that slipped past the binary probe
    for lang in (None, "python", "go", "rust", "bash", "hcl"):
        assert_covers(text, slice_text(fmt, text, "garbage", SliceOptions(300), lang=lang))
