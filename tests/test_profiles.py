"""Each output profile loads with the real framework, content and metadata intact."""

from __future__ import annotations

import shutil

import pytest

from tests.conftest import FIXTURES, run_cli


@pytest.fixture(scope="module")
def docs_tree(tmp_path_factory):
    tree = tmp_path_factory.mktemp("profiles") / "docs-tree"
    shutil.copytree(FIXTURES / "docs-tree", tree)
    return tree


def lines(tree, fmt: str) -> list[dict]:
    result = run_cli("flatten", "--root", tree, "--format", fmt, "-q")
    assert result.code == 0, result.stderr
    return result.records()


def test_langchain_documents(docs_tree):
    documents = pytest.importorskip(
        "langchain_core.documents", reason="langchain-core not installed"
    )
    native = lines(docs_tree, "native")
    docs = [documents.Document(**line) for line in lines(docs_tree, "langchain")]
    assert [d.page_content for d in docs] == [r["content"] for r in native]
    assert [d.id for d in docs] == [r["id"] for r in native]
    cli = next(
        d
        for d in docs
        if d.metadata["source"] == "docs/reference/cli.rst" and d.metadata["title"] == "Options"
    )
    assert cli.metadata["section"] == "CLI reference > serve > Options"
    assert cli.metadata["startLine"] == 14 and cli.metadata["anchor"] == "options"


def test_llamaindex_nodes(docs_tree):
    schema = pytest.importorskip("llama_index.core.schema", reason="llama-index-core not installed")
    native = lines(docs_tree, "native")
    nodes = [schema.TextNode(**line) for line in lines(docs_tree, "llamaindex")]
    assert [n.node_id for n in nodes] == [r["id"] for r in native]
    assert [n.text for n in nodes] == [r["content"] for r in native]
    assert all(n.metadata["hash"] == r["hash"] for n, r in zip(nodes, native, strict=True))
    # Flat metadata: every value a scalar, as vector stores require.
    assert all(isinstance(v, str | int | float) for n in nodes for v in n.metadata.values())


def test_haystack_documents(docs_tree):
    haystack = pytest.importorskip("haystack", reason="haystack-ai not installed")
    native = lines(docs_tree, "native")
    docs = [haystack.Document.from_dict(line) for line in lines(docs_tree, "haystack")]
    # Document.from_dict silently gives content=None on a layout it does not expect.
    assert all(d.content is not None for d in docs)
    assert [d.content for d in docs] == [r["content"] for r in native]
    assert [d.id for d in docs] == [r["id"] for r in native]
    assert docs[0].meta["source"] == native[0]["source"]
