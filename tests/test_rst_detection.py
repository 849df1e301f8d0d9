"""Text documents that are reStructuredText (Sphinx sources named `.txt`, as Django's docs are)
are sliced as reST; plain text, READMEs and licences stay text."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from flatten.classify import classify_text, looks_like_rst
from tests.conftest import run_cli, write

# Written in the style of a Sphinx project's sources (Django's docs/*.txt).
SPHINX_TOPIC = """\
=====================
Working with requests
=====================

.. currentmodule:: shop.http

When a page is requested, the framework builds a :class:`Request` and passes
it to the view. See :doc:`/topics/views` for how views are found.

Reading the body
================

.. method:: Request.read(size=None)

    Reads up to ``size`` bytes.

.. note::

    The body can be read once.

Uploads
-------

Files arrive in :attr:`Request.files`; see :ref:`upload-handlers`.
"""
SPHINX_RELEASE_NOTE = """\
==========================
Shop 2.1.3 release notes
==========================

*January 2, 2026*

Shop 2.1.3 fixes a regression in 2.1.2 (:ticket:`31415`).
"""
SPHINX_REFERENCE = """\
.. _settings-reference:

Settings
========

A list of the settings, their defaults, and what they do.
"""

PLAIN_README = """\
Widget Tool
===========

Widget Tool turns widgets into gadgets.

Installation
------------

Run ./configure && make && make install. Options:

  --prefix=DIR   where to install (default /usr/local)

Copyright (c) 2026 The Widget Authors. See the file COPYING.
"""
MIT_LICENSE = """\
MIT License

Copyright (c) 2026 The Widget Authors

Permission is hereby granted, free of charge, to any person obtaining a copy
of this software and associated documentation files (the "Software"), to deal
in the Software without restriction, including without limitation the rights
to use, copy, modify, merge, publish, distribute, sublicense, and/or sell
copies of the Software, subject to the following conditions:

THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND.
"""
RFC_STYLE = """\
Network Working Group                                          A. Author
Request for Comments: 9999                                  January 2026

                     The Widget Transfer Protocol

Abstract

   This document specifies the Widget Transfer Protocol... Section 2.1
   describes the framing; see also [RFC2119]:  MUST, SHOULD, MAY.

1.  Introduction
----------------

   Widgets are sent as lines of text.
"""
# Plain text that boxes its banner and fences its examples in lines of dashes: to a reST
# reader, over- and underlined titles, which is why titles alone are no evidence.
BOXED_TODO = """\
------------------------------------------------------------------------------
To do list for widget-tool
------------------------------------------------------------------------------

BUGS:
------------------------------------------------------------------------------
 88008 update-catalog should change its name
------------------------------------------------------------------------------
"""
FENCED_README = """\
widget-jump
===========

Jump to the lines git names, in your editor:

-----------------------------------
foo.c:2: printf("hello word!\\n");
-----------------------------------

Related Programs
----------------

See also `grep -n` and 'vim -q'.
"""
REQUIREMENTS = "django>=4.2\nrequests==2.32.3  # http\n-r base.txt\n"


@pytest.mark.parametrize("text", [SPHINX_TOPIC, SPHINX_RELEASE_NOTE, SPHINX_REFERENCE])
def test_sphinx_sources_are_rst(text):
    assert looks_like_rst(text)
    assert classify_text("docs/topics/requests.txt", text).fmt == "rst"


@pytest.mark.parametrize(
    "text", [PLAIN_README, MIT_LICENSE, RFC_STYLE, BOXED_TODO, FENCED_README, REQUIREMENTS, ""]
)
def test_plain_text_readmes_and_licences_are_not(text):
    assert not looks_like_rst(text)
    assert classify_text("README.txt", text).fmt == "text"


def test_only_text_documents_are_reconsidered():
    # A markdown file holding a role is markdown; a code file is code.
    assert classify_text("docs/a.md", SPHINX_TOPIC).fmt == "markdown"
    assert classify_text("conf.py", SPHINX_TOPIC).fmt == "code"
    assert classify_text("README", SPHINX_TOPIC).fmt == "rst"  # extensionless docs too


def test_a_short_underline_is_no_title_docutils_accepts():
    text = "A rather long title\n=====\n\nSee :ref:`x`.\n"
    assert not looks_like_rst(text)
    assert looks_like_rst(text.replace("=====\n", "=" * 19 + "\n"))


# --- properties ---------------------------------------------------------------------------

_WORD = st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=1, max_size=10)
# Prose with the punctuation plain text uses (no backquotes: reST's roles need them).
_PROSE_LINE = st.lists(
    st.one_of(_WORD, st.sampled_from([".", ",", ":", "::", "(c)", "--", "..", "-", "*", "#"])),
    min_size=1,
    max_size=12,
).map(" ".join)
_ADORNMENT = st.sampled_from("=-~^\"'*+#")


@st.composite
def plain_text(draw) -> str:
    """Paragraphs and underlined headings, as plain text files have them."""
    blocks = []
    for _ in range(draw(st.integers(1, 6))):
        if draw(st.booleans()):
            title = draw(_PROSE_LINE)
            blocks.append(f"{title}\n{draw(_ADORNMENT) * len(title)}")
        blocks.append("\n".join(draw(st.lists(_PROSE_LINE, min_size=1, max_size=4))))
    return "\n\n".join(blocks) + "\n"


@given(plain_text())
def test_prose_with_underlined_headings_is_not_rst(text):
    assert not looks_like_rst(text)


_DIRECTIVES = st.sampled_from(["note", "code-block:: python", "versionadded:: 2.0", "toctree",
                               "py:function:: run()", "warning"])  # fmt: skip
_ROLES = st.sampled_from(["ref", "doc", "class", "py:meth", "setting", "ticket"])


_TITLE = st.builds(lambda word, rest: f"{word} {rest}", _WORD, _PROSE_LINE)  # words lead


@given(plain_text(), _TITLE, _ADORNMENT, st.one_of(_DIRECTIVES, _ROLES), st.booleans())
def test_a_titled_document_with_explicit_markup_is_rst(text, title, char, markup, overline):
    # A role or directive beside a title docutils accepts (over- and underlined or not).
    line = f".. {markup}::" if markup in _DIRECTIVES.elements else f"See :{markup}:`target`."
    bar = char * len(title)
    head = f"{bar}\n{title}\n{bar}" if overline else f"{title}\n{bar}"
    assert looks_like_rst(f"{head}\n\n{text}\n{line}\n")


@given(st.text())
def test_any_text_is_answered(text):
    assert looks_like_rst(text) in (True, False)


def test_a_sphinx_tree_of_txt_files_is_sliced_by_sections(tmp_path):
    write(tmp_path, {"docs/topics/requests.txt": SPHINX_TOPIC, "docs/README.txt": PLAIN_README})
    result = run_cli("flatten", "--root", tmp_path)
    assert result.code == 0, result.stderr
    by_source: dict[str, list[dict]] = {}
    for record in result.records():
        by_source.setdefault(record["source"], []).append(record)
    topic = by_source["docs/topics/requests.txt"]
    assert [r["title"] for r in topic] == ["Working with requests", "Reading the body", "Uploads"]
    assert {r["kind"] for r in topic} == {"rst"}
    assert {r["kind"] for r in by_source["docs/README.txt"]} == {"text"}
