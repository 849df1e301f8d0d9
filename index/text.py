"""Text helpers shared by loading and querying: identifier parts, query words, safe display."""

from __future__ import annotations

import re
import unicodedata
from typing import Any

from flatten.shown import ESCAPED_BIDI, as_written

_WORD = re.compile(r"\w+", re.UNICODE)
# The index tokenizer's (unicode61's) tokens: runs of letters and digits; `_`, punctuation and
# spaces separate them. The one definition for every module that splits text as the index does.
TOKEN = re.compile(r"[^\W_]+")
_UPPER = re.compile(r"[A-Z]")
_CAMEL_PART = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
# CSI/OSC and other escape sequences, then any remaining C0/C1 control except \n and \t.
_ESCAPES = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-_]")
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")

STOPWORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "can",
        "do",
        "does",
        "for",
        "from",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "me",
        "my",
        "no",
        "not",
        "of",
        "on",
        "or",
        "our",
        "should",
        "so",
        "that",
        "the",
        "their",
        "them",
        "then",
        "there",
        "these",
        "they",
        "this",
        "to",
        "was",
        "we",
        "what",
        "when",
        "where",
        "which",
        "who",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
    ]
)


_CAMEL_BOUNDARY = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def split_name(text: str) -> list[str]:
    """The words of a name or a path segment, lowercased, split at punctuation and camelCase
    (`kubectl-argo-rollouts_abort` -> kubectl argo rollouts abort; `StringSplitter` -> string
    splitter)."""
    return [w.lower() for w in TOKEN.findall(_CAMEL_BOUNDARY.sub(" ", text))]


def identifier_parts(text: str) -> str:
    """The parts of camelCase and PascalCase words, for the `parts` column.

    `snake_case` and `kebab-case` already split at the tokenizer; `getUserName` does not, so its
    parts `get user name` are indexed beside it. Only words that have parts contribute.
    """
    if not _has_inner_capital(text):
        return ""  # most prose: nothing to split
    out: list[str] = []
    for word in _WORD.findall(text):
        if word.islower() or word.isupper() or not _has_inner_capital(word):
            continue
        for piece in word.split("_"):
            parts = _CAMEL_PART.findall(piece)
            if len(parts) > 1:
                out.extend(p.lower() for p in parts)
    return " ".join(out)


def _has_inner_capital(text: str) -> bool:
    """A capital after a lowercase letter or digit (`getUser`, `v2Beta`), or ending an acronym
    before a word (`HTTPServer`)?

    Scans capitals only, which are rare in prose: several times faster than a regex over pairs;
    text with no capital past its first character (most slices) is told at C speed first.
    """
    rest = text[1:]
    if rest.lower() == rest:
        return False
    match = _UPPER.search(text, 1)
    while match:
        at = match.start()
        before = text[at - 1]
        if before.islower() or before.isdigit():
            return True
        if before.isupper() and text[at + 1 : at + 2].islower():
            return True
        match = _UPPER.search(text, match.start() + 1)
    return False


def query_words(query: str) -> list[str]:
    """The words of a query, lowercased, stopwords dropped unless nothing else is left."""
    words = [w.lower() for w in _WORD.findall(query)]
    content = [w for w in words if w not in STOPWORDS]
    return list(dict.fromkeys(content or words))


_QUOTED = re.compile(r'"([^"]*)"|\u201c([^\u201d]*)\u201d')


def quoted_phrases(query: str) -> list[str]:
    """The runs of two or more words a query puts in quotes ("next-generation HTTP client"),
    lowercased and space-separated: asked for as phrases besides their words, so the slice that
    says it verbatim outranks one that mentions the words apart."""
    phrases = []
    for straight, curly in _QUOTED.findall(query):
        words = [w.lower() for w in _WORD.findall(straight or curly)]
        if len(words) > 1:
            phrases.append(" ".join(words))
    return list(dict.fromkeys(phrases))


def fts_string(word: str) -> str:
    """A word as an FTS5 string literal: no query syntax can leak through.

    Control characters go first: FTS5 reads a NUL as the end of the string.
    """
    return '"' + _CONTROLS.sub("", word.replace("\x00", "")).replace('"', '""') + '"'


def safe_display(text: str) -> str:
    """Indexed text is untrusted: strip terminal escape and control sequences before printing,
    and write bidirectional overrides as `\\u202e` (the plain marks LRM, RLM and ALM stay:
    right-to-left prose needs them), so nothing displays in another order than it reads."""
    return _CONTROLS.sub("", _ESCAPES.sub("", text)).translate(ESCAPED_BIDI)


def clean(text: str) -> str:
    """What may leave the tool: display-safe and secret-free, since indexed text may be anyone's.

    The one cleaning of the output boundary (every line the CLI prints, every string of a JSON
    answer); the library keeps the indexed text as it is.
    """
    from flatten.secrets import redact  # its patterns compile on first use, not at import

    return redact(safe_display(text)).text


def sources_as_shown(shown: str) -> list[str]:
    """The sources a person may mean by `shown`, copied from a line of output: itself, then
    with `one_line`'s escapes read back as the characters (a file named with a newline is
    printed as `de\\nploy.md`, and that token must work when given back)."""
    return list(dict.fromkeys([shown, as_written(shown)]))


def nfc(text: str) -> str:
    """`text` in Unicode NFC, the form sources are compared in (looked up, matched by prefix,
    suggested): a name committed from macOS is stored decomposed (`cafe` + U+0301), the same
    name typed on Linux or copied from a page is composed (`caf` + U+00E9), and the two look
    alike. Stored sources keep their own bytes."""
    return text if text.isascii() else unicodedata.normalize("NFC", text)


def clean_json(value: Any) -> Any:
    """JSON-ready data with every string in it (keys too) cleaned."""
    if isinstance(value, str):
        return clean(value)
    if isinstance(value, dict):
        return {clean(str(k)): clean_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [clean_json(item) for item in value]
    return value
