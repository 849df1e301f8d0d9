"""`get` gives back the document its slices were cut from: blank lines where they were, pieces of a
long line joined, a final line break, and nothing but the document on stdout."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from index.documents import Placed, reassemble
from slicers import SliceOptions, slice_text
from slicers.base import is_blank, split_lines
from tests.conftest import run_cli, write

FORMATS = [("text", None), ("markdown", None), ("rst", None), ("asciidoc", None),
           ("yaml", None), ("terraform", None), ("code", "python"), ("code", "nolang")]  # fmt: skip


def blank_lines_emptied(text: str) -> str:
    """`text` without spaces at line ends and with none after the last non-blank line: what
    slices may leave out (the spaces of a blank line between slices, or where a long line was
    cut to the size budget)."""
    lines = ["" if is_blank(line) else line.rstrip() for line in split_lines(text)]
    while lines and not lines[-1]:
        lines.pop()
    return "\n".join(lines) + "\n" if lines else ""


_line = st.one_of(
    st.text(alphabet="ab \t#-=:`*{}()", max_size=30),
    st.builds(
        lambda w, n: w * n,
        st.text(alphabet="ab ", min_size=1, max_size=6),
        st.integers(min_value=40, max_value=200),
    ),
    st.sampled_from(["", "   ", "```", "---", "# H", "def f():", "    return 1", "x = {"]),
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_line, max_size=30), st.sampled_from(FORMATS), st.integers(200, 600))
def test_the_slices_of_any_text_reassemble_into_it(lines, fmt_lang, max_chars):
    fmt, lang = fmt_lang
    text = "\n".join(lines) + "\n"
    sliced = slice_text(fmt, text, "p.x", SliceOptions(max_chars), lang=lang)
    placed = [Placed(s.content, s.start_line, s.end_line) for s in sliced.slices]
    assert blank_lines_emptied(reassemble(placed)) == blank_lines_emptied(text)


def test_slices_without_lines_are_set_a_blank_line_apart():
    assert reassemble([Placed("a", None, None), Placed("b", None, None)]) == "a\n\nb"
    assert reassemble([]) == ""


DOC = (
    """---
title: Front
---

# Install

Run it.



## Long

"""
    + ("word " * 4000).strip()
    + """

```python
def f():

    return 1
```
"""
)


def test_get_writes_the_document_and_its_continuation_goes_to_stderr(tmp_path):
    write(tmp_path / "notes", {"guide.md": DOC, "app.py": "import os\n\n\ndef main():\n    pass\n"})
    store = tmp_path / "store"
    loaded = run_cli("ingest", "--root", tmp_path / "notes", "--kind", "auto",
                     "--max-chars", "1000", "--store", store)  # fmt: skip
    assert loaded.code == 0, loaded.stderr
    for source, text in (("guide.md", DOC), ("app.py", "import os\n\n\ndef main():\n    pass\n")):
        whole = run_cli("get", source, "--all", "--store", store)
        assert whole.code == 0 and whole.stdout == text and whole.stderr == ""
    first = run_cli("get", "guide.md", "--store", store)  # the first page of ~12,000 characters
    assert first.code == 0 and "[continues" not in first.stdout and len(first.stdout) < len(DOC)
    assert "--offset" in first.stderr and DOC.startswith(first.stdout)


@pytest.mark.parametrize("args", [("--all", "--offset", "5")])
def test_all_and_offset_do_not_mix(tmp_path, args):
    write(tmp_path / "notes", {"a.md": "# A\nbody\n"})
    run_cli("ingest", "--root", tmp_path / "notes", "--store", tmp_path / "store")
    result = run_cli("get", "a.md", *args, "--store", tmp_path / "store")
    assert result.code == 2 and "--all" in result.stderr and "Traceback" not in result.stderr
