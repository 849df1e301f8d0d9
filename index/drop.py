"""Drop a corpus: its documents, chunks and text index entries, and its row, in one write
transaction. The one way to empty a corpus on purpose: a load never does (an input with no
records is refused, `index.loader.EmptyInput`). Vectors stay: they are keyed by content, and
another corpus (or the corpus loaded again) reuses them."""

from __future__ import annotations

import time

from flatten.errors import UsageError
from flatten.shown import one_line
from index.loader import LoadReport, check_corpus_name, delete_document
from index.store import Store
from index.textindex import text_index


def drop_corpus(store: Store, corpus: str) -> LoadReport:
    """Remove `corpus` from `store`; its report counts the documents removed. A corpus the
    store does not hold: `UsageError` (`unknown-corpus`), nothing written."""
    check_corpus_name(corpus)
    started = time.perf_counter()
    report = LoadReport(corpus=corpus)
    with store.write(corpus) as db:
        found = db.execute("SELECT id FROM corpora WHERE name = ?", (corpus,)).fetchone()
        if found is None:
            names = [r[0] for r in db.execute("SELECT name FROM corpora ORDER BY name")]
            raise UsageError(
                f"the store {store.location} holds no corpus {corpus!r}",
                reason="unknown-corpus",
                # A name on one line each: a corpus named with a line break cannot forge one.
                hint=f"it holds: {', '.join(map(one_line, names))}"
                if names
                else "it holds no corpus",
            )
        corpus_id = found[0]
        texts = text_index(db)
        texts.prepare_load()
        documents = db.execute(
            "SELECT id FROM documents WHERE corpus_id = ? ORDER BY id", (corpus_id,)
        ).fetchall()
        for (doc_id,) in documents:
            delete_document(db, doc_id, corpus_id)
            report.removed += 1
        finish = getattr(texts, "finish_load", None)  # PostgreSQL folds its term statistics
        if finish is not None:
            finish(corpus_id)
        db.execute("DELETE FROM corpora WHERE id = ?", (corpus_id,))
    report.compacted = store.compact()
    report.seconds = time.perf_counter() - started
    return report
