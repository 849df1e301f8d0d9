"""The documents someone asking for a source the index does not hold may have meant.

A source is typed or copied by hand: with a trailing slash or `./` in front, with the `#ordinal`
of a token or the `:lines` of a citation still on it, in another case, without its folder, with
another extension, a letter off, under the folder it was indexed from (`pkg/_client.py`, an
absolute path), or it names a folder. The index is asked for its sources only
when a document was not found (never on the way to a hit).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from index.errors import QueryError
from index.scope import known_sources
from index.store import Store
from index.text import nfc

SUGGESTED = 3  # sources named at most
CLOSE = 0.8  # difflib's similarity a near miss needs: a letter or two off in a path
# A token's `#ordinal`, a label's ` (slice N)` (`index.results.Located.label`), a citation's
# `:lines`.
_TAIL = re.compile(r"(?:#\d+| \(slice \d+\)|:\d+(?:-\d+)?)$")


@dataclass(frozen=True)
class Meant:
    """What a missing source may have meant: `sources`, best first (none: nothing is close);
    or, when it names a `folder` (its path, no last slash), `total` documents below it, the
    first of them in `sources`."""

    sources: list[str] = field(default_factory=list)
    folder: str | None = None
    total: int = 0


def meant(wanted: str, known: Sequence[str], limit: int = SUGGESTED) -> Meant:
    """The sources of `known` someone asking for `wanted` (not one of them) may have meant."""
    bare = nfc(_bare(wanted))
    if not bare:
        return Meant()
    # Compared in NFC (`index.text.nfc`), named as stored.
    forms = {s: nfc(s) for s in known}
    exact = [s for s, form in forms.items() if form == bare]
    if exact:
        return Meant(exact)
    inside = sorted(s for s, form in forms.items() if form.startswith(bare + "/"))
    if inside:
        return Meant(inside[:limit], folder=bare, total=len(inside))
    folded = bare.casefold()
    for same in (_casefolded, _by_name, _under_root, _by_stem):
        found = sorted({s for s, form in forms.items() if same(form, folded)})
        if found:
            return Meant(found[:limit])
    by_fold = {forms[s].casefold(): s for s in sorted(known, reverse=True)}  # first one wins
    close = difflib.get_close_matches(folded, list(by_fold), n=limit, cutoff=CLOSE)
    return Meant([by_fold[c] for c in close])


def meant_in(store: Store, wanted: str, corpus: str | None = None) -> Meant:
    """`meant` against the sources of the index (of `corpus` when given)."""
    return meant(wanted, known_sources(store.db, corpus))


def same_name(wanted: Iterable[str], known: Iterable[str]) -> list[str]:
    """The sources of `known` that are one of `wanted` in Unicode NFC (`index.text.nfc`)."""
    forms = {nfc(w) for w in wanted}
    return sorted({s for s in known if nfc(s) in forms})


def spelled(source: str) -> str:
    """A source with every character beyond ASCII written as a `\\u` escape, in `$'...'` (as
    bash and zsh read it back): how two names that differ only in Unicode normalization are
    told apart."""
    escaped = "".join(
        c if c.isascii() and c.isprintable() and c not in "\\'" else
        f"\\u{ord(c):04x}" if ord(c) <= 0xFFFF else f"\\U{ord(c):08x}"
        for c in source
    )  # fmt: skip
    return f"$'{escaped}'"


def ambiguous(wanted: str, found: Sequence[str]) -> QueryError:
    """The error for a source that names several documents differing only in normalization."""
    shown = " and ".join(spelled(s) for s in found)
    return QueryError(
        f"'{wanted}' names {len(found)} documents whose sources differ only in Unicode "
        f"normalization: {shown}",
        reason="ambiguous-source",
        value=wanted,
        hint="give the exact spelling (the escapes above, as a shell reads them)",
    )


def did_you_mean(found: Meant) -> str | None:
    """The sentence saying what was meant, or None when nothing is close."""
    if not found.sources:
        return None
    forms = [nfc(s) for s in found.sources]  # names alike but for normalization: told apart
    shown = ", ".join(spelled(s) if forms.count(form) > 1 else f"'{s}'"
                      for s, form in zip(found.sources, forms, strict=True))  # fmt: skip
    if found.folder is not None:
        left = found.total - len(found.sources)
        more = f" and {left} more" if left else ""
        return f"'{found.folder}' is a folder: its documents include {shown}{more}"
    return f"did you mean {shown}?" if len(found.sources) == 1 else f"did you mean one of {shown}?"


def _bare(wanted: str) -> str:
    """The source as it would be written in the index: no `./`, no trailing slash, no token
    ordinal or citation lines, no surrounding blanks."""
    text = _TAIL.sub("", wanted.strip())
    while text.startswith("./"):
        text = text[2:]
    return text.rstrip("/")


def _casefolded(source: str, folded: str) -> bool:
    return source.casefold() == folded


def _by_name(source: str, folded: str) -> bool:
    """A file name given without its folder."""
    return "/" not in folded and source.casefold().rsplit("/", 1)[-1] == folded


def _under_root(source: str, folded: str) -> bool:
    """The path with the folder the corpus was indexed from before it (`httpx/_client.py`,
    `/home/me/repo/docs/x.md`): it ends with the source on whole segments."""
    return folded.endswith("/" + source.casefold())


def _by_stem(source: str, folded: str) -> bool:
    """The same path with another extension (`cli.md` for `cli.rst`)."""
    return _stem(source.casefold()) == _stem(folded)


def _stem(path: str) -> str:
    folder, _, name = path.rpartition("/")
    base = name.split(".", 1)[0] if not name.startswith(".") else name
    return f"{folder}/{base}"
