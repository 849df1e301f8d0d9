"""The README's Python API examples run as written, against the real libraries."""

from __future__ import annotations

import contextlib
import io
import re
import shutil

import pytest

from tests.conftest import FIXTURES, PROJECT


def python_examples() -> list[str]:
    readme = (PROJECT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Python API", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", section, re.S)


def test_the_readme_has_the_examples_the_api_promises():
    examples = python_examples()
    assert len(examples) == 3
    assert "langchain_core" in examples[1] and "llama_index" in examples[1]


@pytest.mark.parametrize("number", range(3))
def test_readme_python_examples_run(number, tmp_path, monkeypatch):
    pytest.importorskip("langchain_core", reason="the interop extra is not installed")
    pytest.importorskip("llama_index.core", reason="the interop extra is not installed")
    shutil.copytree(FIXTURES / "docs-tree" / "docs", tmp_path / "docs")
    monkeypatch.chdir(tmp_path)
    examples = python_examples()
    for earlier in examples[:number]:  # later examples read the index the first one built
        with contextlib.redirect_stdout(io.StringIO()):
            exec(compile(earlier, "README.md", "exec"), {})
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(examples[number], "README.md", "exec"), {})
    printed = out.getvalue()
    expected = [
        ["guide/install.md#3", "['Title', 'Part']", "['guide/install.md']"],
        ["guide/", "guide/"],
        ["'name': 'lexical'", "guide/install.md:16-35"],  # cited by path and lines
    ][number]
    for text in expected:
        assert text in printed, (text, printed)


def test_every_public_name_resolves_even_after_its_module_was_imported():
    import index
    import index.search  # the module shares its name with the function
    from index import search

    assert callable(search) and search.__module__ == "index.search"
    for name in index.__all__:
        assert getattr(index, name) is not None, name
