"""How a question's everyday phrasing maps to the words documentation uses for the same idea.

People ask in everyday words ("the server takes too long", "faking responses"); documentation
is written in its field's vocabulary ("timeout", "mock"). Lexical search cannot bridge that gap
on its own, so two small tables of general software-documentation English (nothing about any
one project) add the words the docs would use:

- `PHRASINGS`: an everyday phrase and the technical words for its idea. Always applied: the
  phrase is how a question is worded, not a word a page would be found by.
- `SYNONYMS`: groups of words technical writing uses interchangeably (and common short forms).
  Applied only to a query word the index lacks: the corpus does not speak that way, so it most
  likely says it with a sibling. A word the index has is left as it is (its pages use it).

Words are compared by stem (the index's tokenizer), so `taking too long` and `takes too long`
are one phrasing and `faking` is `fake`. The search keeps only added words the index holds.
Pure functions; the lexical plan applies them.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache

from index.text import TOKEN

# (everyday phrase, the words documentation uses for it). Each entry is a gap between how
# questions are asked and how docs are written that holds for any project's docs.
PHRASINGS: tuple[tuple[str, tuple[str, ...]], ...] = (
    # "the server takes too long" / "give up waiting": a time limit.
    ("take too long", ("timeout",)),
    ("took too long", ("timeout",)),
    ("give up waiting", ("timeout",)),
    ("wait forever", ("timeout",)),
    ("hang forever", ("timeout",)),
    # "moving from X to Y": a migration guide or the compatibility notes of Y.
    ("move from", ("migration", "compatibility")),
    ("switch from", ("migration", "compatibility")),
    ("port from", ("migration", "compatibility")),
    ("upgrade from", ("migration", "upgrading")),
    # "several at the same time": concurrency.
    ("at the same time", ("concurrent", "parallel")),
    ("in parallel", ("concurrent",)),
    # "try again": retries.
    ("try again", ("retry",)),
    # "log in" / "sign in": authentication.
    ("log in", ("login", "authentication")),
    ("sign in", ("login", "authentication")),
)

# Words used interchangeably in technical writing, and short forms of common words.
SYNONYMS: tuple[frozenset[str], ...] = tuple(
    frozenset(group.split())
    for group in (
        "mock fake stub dummy",
        "concurrent simultaneous parallel",
        "delete remove erase",
        "folder directory dir",
        "config configuration settings",
        "auth authentication",
        "repo repository",
        "app application",
        "docs documentation",
        "env environment",
        "args arguments",
        "params parameters",
        "quit exit",
        "begin start",
        "picture image",
    )
)


def _stems(text: str, stem: Callable[[str], str]) -> list[str]:
    return [stem(w.lower()) for w in TOKEN.findall(text)]


@lru_cache(maxsize=4)
def _stemmed_phrasings(
    stem: Callable[[str], str],
) -> tuple[tuple[tuple[str, ...], tuple[str, ...]], ...]:
    return tuple((tuple(_stems(phrase, stem)), words) for phrase, words in PHRASINGS)


def implied_by_phrasing(query: str, stem: Callable[[str], str]) -> list[str]:
    """The words documentation uses for the everyday phrases in `query`, in table order."""
    said = tuple(_stems(query, stem))
    present = set(said)
    out: list[str] = []
    for wanted, words in _stemmed_phrasings(stem):
        if not present.issuperset(wanted):
            continue  # most queries: no phrase's words are all there
        n = len(wanted)
        if any(said[i : i + n] == wanted for i in range(len(said) - n + 1)):
            out.extend(words)
    return list(dict.fromkeys(out))


def synonyms(word: str, stem: Callable[[str], str]) -> list[str]:
    """The other members of `word`'s synonym groups (compared by stem), in sorted order."""
    own = stem(word)
    out = {m for group in SYNONYMS if own in {stem(w) for w in group} for m in group}
    return sorted(m for m in out if stem(m) != own)
