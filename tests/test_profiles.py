"""Each output profile loads with the real framework, content and metadata intact."""

from __future__ import annotations

import re
import shutil

import pytest

from tests.conftest import FIXTURES, PROJECT, run_cli


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


def test_llamaindex_refreshes_and_deletes_nodes_by_their_document(make_repo):
    core = pytest.importorskip("llama_index.core", reason="llama-index-core not installed")
    from llama_index.core.embeddings import MockEmbedding
    from llama_index.core.schema import MetadataMode, TextNode

    embedded: list[str] = []

    class CountingEmbedding(MockEmbedding):  # LlamaIndex's own offline model, counted
        def _get_text_embeddings(self, texts: list[str]) -> list[list[float]]:
            embedded.extend(texts)
            return super()._get_text_embeddings(texts)

    def nodes() -> list[TextNode]:
        result = run_cli("flatten", "--root", repo.path, "--format", "llamaindex", "-q")
        assert result.code == 0, result.stderr
        return [TextNode(**line) for line in result.records()]

    def sections(*names: str) -> str:
        return "".join(f"## {name}\n\nAbout {name} in some words.\n\n" for name in names)

    repo = make_repo()
    repo.commit({"a.md": "# A\n\n" + sections("one", "two", "three"),
                 "b.md": "# B\n\n" + sections("kept"), "c.md": "# C\n\nGone soon.\n"})  # fmt: skip
    first = nodes()
    index = core.VectorStoreIndex(first, embed_model=CountingEmbedding(embed_dim=8))
    assert {d: i.node_ids for d, i in index.ref_doc_info.items()} == {
        "a.md": ["a.md#1", "a.md#2", "a.md#3"], "b.md": ["b.md#1"], "c.md": ["c.md#1"],
    }  # fmt: skip
    # What is embedded and what a model reads: where the text sits, not the bookkeeping.
    two = next(n for n in first if n.node_id == "a.md#2")
    as_embedded = next(text for text in embedded if text.endswith(two.text))
    as_read = two.get_content(MetadataMode.LLM)
    assert as_embedded == two.get_content(MetadataMode.EMBED)
    assert "source: a.md" in as_embedded and "section: A > two" in as_embedded
    assert "startLine: 7" in as_read and "startLine" not in as_embedded
    assert {"hash", "docHash", "commit", "chunkSize", "ordinal"} <= two.metadata.keys()
    for key in ("hash", "docHash", "commit", "chunkSize", "ordinal"):
        assert f"{key}: " not in as_embedded + as_read

    # A new commit: a.md loses a section and changes another, c.md goes, b.md stays.
    (repo.path / "c.md").unlink()
    repo.commit({"a.md": "# A\n\n" + sections("one", "two, changed")})
    second = nodes()
    # Refresh by document, as the README shows it: a document whose SOURCE hash (its docHash)
    # changed is replaced, one that is gone is deleted.
    embedded.clear()
    exec(compile(readme_refresh_recipe(), "README.md", "exec"), {"index": index, "nodes": second})

    # Only a.md is embedded again (b.md's commit changed, its docHash did not); nothing of the
    # old a.md#3 or of c.md is left in the docstore or the vector store.
    assert [text.rsplit("\n", 1)[-1] for text in embedded] == [
        "About one in some words.", "About two, changed in some words."
    ]  # fmt: skip
    ids = {n.node_id for n in second}
    assert set(index.docstore.docs) == ids == set(index.vector_store.data.embedding_dict)
    assert {d: i.node_ids for d, i in index.ref_doc_info.items()} == {
        "a.md": ["a.md#1", "a.md#2"], "b.md": ["b.md#1"],
    }  # fmt: skip


def readme_refresh_recipe() -> str:
    readme = (PROJECT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## The record (v1)", 1)[1].split("\n## ", 1)[0]
    (recipe,) = [code for code in re.findall(r"```python\n(.*?)```", section, re.S)
                 if "delete_ref_doc" in code]  # fmt: skip
    return recipe
