"""Where a query looks: the join from a slice to its document and corpus, and the corpus filter,
written once for every query module.

Aliases: `c` chunks, `d` documents, `k` corpora. A corpus that does not exist is an error naming
the ones that do: an empty answer would read as "searched, nothing there".
"""

from __future__ import annotations

import sqlite3

from index.errors import QueryError

DOCUMENTS = "documents d JOIN corpora k ON k.id = d.corpus_id"
CHUNKS = "chunks c JOIN documents d ON d.id = c.document_id JOIN corpora k ON k.id = d.corpus_id"
NAMED_CORPORA = 20  # an unknown-corpus error lists at most this many


def corpus_filter(db: sqlite3.Connection, corpus: str | None) -> tuple[str, list[object]]:
    """`AND k.name = ?` and its parameter for one corpus, nothing for all (None).

    `QueryError` (reason `unknown-corpus`) when the corpus is not in the index."""
    if corpus is None:
        return "", []
    if db.execute("SELECT 1 FROM corpora WHERE name = ?", (corpus,)).fetchone() is None:
        names = [n for (n,) in db.execute("SELECT name FROM corpora ORDER BY name")]
        shown = ", ".join(repr(n) for n in names[:NAMED_CORPORA])
        more = f" and {len(names) - NAMED_CORPORA} more" if len(names) > NAMED_CORPORA else ""
        there = f"the index has {shown}{more}" if names else "the index has no corpus yet"
        # Quoted, not repr'd: the output's cleaning must see the value itself to redact a secret.
        raise QueryError(f"no corpus '{corpus[:200]}' in the index ({there})",
                         reason="unknown-corpus", value=corpus)  # fmt: skip
    return "AND k.name = ?", [corpus]
