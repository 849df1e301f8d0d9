"""Contextual embeddings: the text embedded for a slice starts with its page title and heading
path (its path for code), the template is part of the vector identity, and unchanged slices keep
their vectors. Against the real OpenAI-format test server on 127.0.0.1, counting what it is sent."""

from __future__ import annotations

import sqlite3

import pytest

from index.errors import ConfigError
from index.store import Store
from index.vectors.client import EmbeddingConfig
from index.vectors.template import SliceText, render
from tests.conftest import assert_clean_failure, run_cli
from tests.embedserver import EmbeddingServer
from tests.sites import serve


@pytest.fixture
def server():
    EmbeddingServer.reset()
    with serve(EmbeddingServer) as base:
        yield base + "/v1"


def sent() -> list[str]:
    return [text for batch in EmbeddingServer.requests for text in batch]


def project(root, timeouts_intro: str = "Intro text.") -> None:
    (root / "docs" / "guide").mkdir(parents=True, exist_ok=True)
    (root / "src").mkdir(exist_ok=True)
    (root / "docs" / "guide" / "timeouts.md").write_text(
        f"# Timeouts\n\n{timeouts_intro}\n\n## Setting a default\n\nUse timeout=5.\n"
    )
    (root / "src" / "app.py").write_text("def fetch(url):\n    return url\n")


def ingest(root, store, server, *extra):
    return run_cli("ingest", "--root", root, "--kind", "auto", "--corpus", "p", "--store", store,
                   "--base-url", server, "--model", "hash-64", *extra)  # fmt: skip


def test_embedded_text_starts_with_page_title_and_breadcrumb_and_path_for_code(server, tmp_path):
    project(tmp_path / "p")
    result = ingest(tmp_path / "p", tmp_path / "store", server)
    assert result.code == 0, result.stderr
    assert sorted(sent()) == [
        "Timeouts\n\n# Timeouts\n\nIntro text.",
        "Timeouts > Setting a default\n\n## Setting a default\n\nUse timeout=5.",
        "src/app.py > fetch\n\ndef fetch(url):\n    return url",
    ]


def test_unchanged_slices_are_not_sent_again_after_an_edit(server, tmp_path):
    project(tmp_path / "p")
    assert ingest(tmp_path / "p", tmp_path / "store", server).code == 0
    EmbeddingServer.requests = []
    project(tmp_path / "p", timeouts_intro="Intro text, edited.")
    assert ingest(tmp_path / "p", tmp_path / "store", server).code == 0
    assert sent() == ["Timeouts\n\n# Timeouts\n\nIntro text, edited."]
    EmbeddingServer.requests = []
    assert ingest(tmp_path / "p", tmp_path / "store", server).code == 0
    assert sent() == []


def test_a_changed_template_is_refused_by_name_until_reindex(server, tmp_path):
    project(tmp_path / "p")
    store = tmp_path / "store"
    assert ingest(tmp_path / "p", store, server).code == 0
    config = tmp_path / "docs-flatten.yaml"
    config.write_text('embeddings:\n  document_template: "{path}: {text}"\n')
    EmbeddingServer.requests = []
    refused = ingest(tmp_path / "p", store, server, "--config", config)
    assert_clean_failure(refused, 2, "identity", "document_template", "'{path}: {text}'",
                         "--reindex")  # fmt: skip
    assert EmbeddingServer.requests == []  # refused before a single request
    # A search with the new template says why it runs lexical, instead of mixing texts.
    searched = run_cli("search", "timeout", "--store", store, "--config", config,
                       "--base-url", server, "--model", "hash-64")  # fmt: skip
    assert searched.code == 0 and "DEGRADED" in searched.stderr
    assert "document_template" in searched.stderr
    redone = ingest(tmp_path / "p", store, server, "--config", config, "--reindex")
    assert redone.code == 0, redone.stderr
    assert sorted(sent())[0] == "docs/guide/timeouts.md: # Timeouts\n\nIntro text."
    with Store.open(store, readonly=True) as opened:
        template = opened.db.execute("SELECT document_template FROM vector_identity")
        assert template.fetchone()[0] == "{path}: {text}"


def test_the_older_document_prefix_is_the_template_prefix_then_text(server, tmp_path):
    project(tmp_path / "p")
    config = tmp_path / "docs-flatten.yaml"
    config.write_text('embeddings:\n  document_prefix: "title: {title} | text: "\n')
    assert ingest(tmp_path / "p", tmp_path / "store", server, "--config", config).code == 0
    assert "title: fetch | text: def fetch(url):\n    return url" in sent()


def test_a_store_embedded_before_templates_keeps_its_vectors_under_its_old_settings(
    server, tmp_path
):
    """The migration records the old prefix as `<prefix>{text}`: the same settings go on
    reusing the vectors; the new default template is refused, naming it."""
    project(tmp_path / "p")
    store = tmp_path / "store"
    config = tmp_path / "docs-flatten.yaml"
    config.write_text('embeddings:\n  document_prefix: "{title}. "\n')
    assert ingest(tmp_path / "p", store, server, "--config", config).code == 0
    path = store / "index.sqlite"
    with sqlite3.connect(path) as db:  # as the previous version left it
        db.execute("DELETE FROM schema_migrations WHERE name = 'm004_document_template'")
        db.execute("ALTER TABLE vector_identity DROP COLUMN document_template")
    db.close()
    EmbeddingServer.requests = []
    again = ingest(tmp_path / "p", store, server, "--config", config)
    assert again.code == 0, again.stderr
    assert sent() == []  # every vector still valid
    refused = ingest(tmp_path / "p", store, server)
    assert_clean_failure(refused, 2, "document_template '{title}. {text}' -> "
                         "'{context}\\n\\n{text}'")  # fmt: skip


def test_template_settings_are_checked_with_the_reason_named():
    base = {"base_url": "http://x", "model": "m"}
    with pytest.raises(ConfigError, match=r"document_template: unknown placeholder \{heading\}"):
        EmbeddingConfig.from_config({**base, "document_template": "{heading} {text}"})
    with pytest.raises(ConfigError, match=r"document_template: must contain \{text\}"):
        EmbeddingConfig.from_config({**base, "document_template": "{title}"})
    with pytest.raises(ConfigError, match="not both"):
        EmbeddingConfig.from_config(
            {**base, "document_template": "{text}", "document_prefix": "p: "}
        )
    assert EmbeddingConfig.from_config(base).template == "{context}\n\n{text}"


def test_context_names_each_step_once_and_a_title_holding_a_placeholder_stays_literal():
    piece = SliceText(
        "Body.", title="Install", doc_title="Guide", section=("guide", "Install"), kind="markdown"
    )
    assert piece.context() == "Guide > Install"
    odd = SliceText("Body.", title="{text}", doc_title="Doc {path}")
    assert render("{doc_title} / {title}: {text}", odd) == "Doc {path} / {text}: Body."
