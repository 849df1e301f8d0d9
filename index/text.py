"""Text helpers shared by loading and querying: identifier parts, query words, safe display."""

from __future__ import annotations

import re
import unicodedata
from typing import Any

from flatten.shown import DISPLAY_ESCAPES, as_written

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


# The scripts written without spaces between words (or, in Korean, with particles glued to
# them): Han, Hiragana, Katakana (full and half width, with the prolonged sound mark) and
# Hangul. unicode61 makes one token of a whole run of them, so a word inside a sentence is no
# token of its own; `cjk_parts` indexes the run's characters and bigrams beside it.
_CJK = (
    "\u1100-\u11ff\u3005-\u3007\u3041-\u3096\u309d-\u309f\u30a1-\u30fa\u30fc-\u30ff"
    "\u3131-\u318e\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\ua960-\ua97f\uac00-\ud7a3"
    "\ud7b0-\ud7ff\uf900-\ufaff\uff66-\uff9f\U00020000-\U0003134f"
)
CJK_CLASS = f"[{_CJK}]"  # a regular expression for Python's `re` and PostgreSQL's alike
_CJK_CHAR = re.compile(CJK_CLASS)
_CJK_RUN = re.compile(f"([{_CJK}]+)")


def has_cjk(text: str) -> bool:
    """Does `text` hold a CJK character? ASCII text (most slices) is told at C speed first."""
    return not text.isascii() and _CJK_CHAR.search(text) is not None


def _grams(run: str) -> list[str]:
    """A CJK run's overlapping bigrams, then each of its characters (a run of one: itself).
    The bigrams come first and together, so a phrase of them matches only inside one run."""
    if len(run) == 1:
        return [run]
    return [run[i : i + 2] for i in range(len(run) - 1)] + list(run)


def cjk_parts(text: str) -> str:
    """What the `parts` column adds for CJK text: for each token (as unicode61 cuts it) that
    holds CJK characters, the bigrams and characters of each CJK run in it, and the other
    letters and digits glued to them (`pip` of `使用pip安装`). "" for text without CJK."""
    if not has_cjk(text):
        return ""
    out: list[str] = []
    for token in TOKEN.findall(text):
        if _CJK_CHAR.search(token) is None:
            continue
        for n, piece in enumerate(_CJK_RUN.split(token)):
            if piece:
                out.extend(_grams(piece) if n % 2 else [piece])
    return " ".join(out)


def derived_parts(title: str, section: str, symbol: str, body: str) -> str:
    """A chunk's `parts` column: the identifier parts of its title, symbol and body, and the
    CJK bigrams of all four. The one derivation the loader and the migrations share."""
    parts = identifier_parts(" ".join((title, symbol, body)))
    # Each field on its own (a token never spans two): no second copy of the body per chunk.
    cjk = " ".join(p for p in map(cjk_parts, (title, section, symbol, body)) if p)
    return f"{parts} {cjk}" if parts and cjk else parts or cjk


def cjk_pieces(word: str) -> list[tuple[str, str]] | None:
    """How to ask for a query word that holds CJK characters (None: it holds none), as
    (what to ask, what it spells) pieces in order: each CJK run as its bigrams, space-separated
    (a phrase of them), or itself when it has one or two characters; other letters and digits
    glued to a run as themselves. `连接池` -> [("连接 接池", "连接池")]."""
    if not has_cjk(word):
        return None
    out = []
    for token in TOKEN.findall(word):
        for n, piece in enumerate(_CJK_RUN.split(token)):
            if not piece:
                continue
            if n % 2 and len(piece) > 2:
                out.append((" ".join(_grams(piece)[: len(piece) - 1]), piece))
            else:
                out.append((piece, piece))
    return out


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
    right-to-left prose needs them), so nothing displays in another order than it reads; a lone
    surrogate (a path's undecodable byte) as `\\xNN`, since no UTF-8 output can hold it."""
    return _CONTROLS.sub("", _ESCAPES.sub("", text)).translate(DISPLAY_ESCAPES)


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
