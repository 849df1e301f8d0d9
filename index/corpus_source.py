"""One corpus, one source: a load that names its source (`flatten.corpus_sources`) into a corpus
that holds another one is refused, unless it is asked to replace the corpus's content.

A snapshot of another source would remove nearly every document of the corpus (or, past the
removal limit, fail with a count that does not say why); refused up front, the message says
what the corpus holds and how to proceed. A corpus of an older version (or loaded from JSONL
that named no source) has none: the next load that names one adopts it.
"""

from __future__ import annotations

from typing import Any

from flatten.errors import UsageError
from flatten.userinfo import strip_credentials


class CorpusSourceMismatch(UsageError):
    """`corpus-source-mismatch`: the corpus holds a snapshot of another source."""

    def __init__(self, corpus: str, stored: str, source: str) -> None:
        super().__init__(
            f"corpus {corpus!r} holds {stored}, not {source}: indexing this source into it "
            "would replace its documents, so nothing was loaded",
            reason="corpus-source-mismatch",
            hint="index it into a corpus of its own (--corpus NAME), or add --replace to "
            f"replace the content of {corpus!r} with it",
        )
        self.corpus, self.stored, self.source = corpus, stored, source


def clean_source(source: str | None) -> str | None:
    """What the store keeps of a caller's source: never a credential, never blank."""
    if source is None or not source.strip():
        return None
    return strip_credentials(source.strip())


def stored_source(db: Any, corpus: str) -> str | None:
    """The source a corpus records (None: no such corpus, or none recorded yet)."""
    row = db.execute("SELECT source FROM corpora WHERE name = ?", (corpus,)).fetchone()
    return None if row is None else row[0]


def refuse_mismatch(corpus: str, stored: str | None, source: str | None) -> None:
    """`CorpusSourceMismatch` when both are known and differ (`flatten.corpus_sources` gives
    one source one normal form: a checkout, wherever it is, is named by its origin)."""
    if stored is not None and source is not None and stored != source:
        raise CorpusSourceMismatch(corpus, stored, source)


def check_source(db: Any, corpus: str, source: str) -> None:
    """`CorpusSourceMismatch` when `corpus` in `db` records a source other than `source`: the
    check a load makes, made before its flatten or clone."""
    refuse_mismatch(corpus, stored_source(db, corpus), clean_source(source))


def adopt_source(db: Any, corpus: str, source: str | None, *, replace: bool) -> bool:
    """Inside a load's transaction, before anything is written: refuse another source (unless
    `replace`), and record this one, making the corpus if it is new (a load naming no source
    leaves the record as it is). True when the load replaces the corpus's content: `replace`
    asked for, and the corpus held another source or none recorded (the same source again is
    a plain snapshot, limited as any, so a `--replace` left in a CI script disarms nothing)."""
    source = clean_source(source)
    if source is None:
        return replace
    stored = stored_source(db, corpus)
    if not replace:
        refuse_mismatch(corpus, stored, source)
    db.execute(
        "INSERT INTO corpora (name, source) VALUES (?, ?) "
        "ON CONFLICT(name) DO UPDATE SET source = excluded.source",
        (corpus, source),
    )
    return replace and stored != source
