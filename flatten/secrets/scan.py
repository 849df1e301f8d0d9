"""One text under scan: which needles occur in it and which lines each trigger points at.

Both are found in linear RE2 passes over the text's UTF-8 bytes, case-insensitive where the
patterns want the lower-cased text: one pass of one set for every needle, one pass per trigger.
That gives exactly what searching `text.lower()` with Python's re gives, without lower-casing
or a Python scan: an ASCII needle or trigger match is ASCII, in the lower-cased text only where
the text holds ASCII letters of either case (or the Kelvin sign, which lower-cases to `k`: a
text holding one is searched lower-cased). Where RE2 and Python's re read a trigger differently
(`\\w`, `[^...]` on non-ASCII text), RE2 still reads the text's ASCII lines (a trigger sees
no further than its line), and Python's re the lower-cased text of the others.
"""

from __future__ import annotations

import re
import string
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import cache, cached_property
from operator import attrgetter
from typing import Any

import re2

from flatten.secrets.patterns import PATTERNS, TokenPattern

_BLOCK_NEEDLES = ("PRIVATE KEY", "Secret", "ata")  # the PEM and Kubernetes detectors'
_ASCII_LOWER = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)
_KELVIN = "\u212a"  # the one character str.lower() maps into ASCII on its own (to `k`)
# What Python's (?i) matches to an ASCII letter besides the letter's two cases: İ ı ſ K.
_ODD_FOLDS = ("\u0130", "\u0131", "\u017f", _KELVIN)
_ODD_FOLD = re.compile(f"[{''.join(_ODD_FOLDS)}]")

# Latin-1: every byte is one character, so `(?i)` folds ASCII letters only (in UTF-8 mode RE2
# would also fold `s` with `ſ` and `k` with the Kelvin sign, which lower() leaves or maps).
_LATIN1 = re2.Options()
_LATIN1.encoding = re2.Options.Encoding.LATIN1


def _encoded(text: str) -> bytes:
    # surrogatepass keeps odd text searchable; a surrogate is 3 non-ASCII bytes like any other.
    return text.encode("utf-8", "surrogatepass")


class NeedleSet:
    """Which of many literal needles occur in a text, all found in one linear pass (an RE2
    set): `plain` needles as written, `folded` ones in any ASCII case."""

    def __init__(self, plain: Iterable[str], folded: Iterable[str]) -> None:
        self.needles = tuple(sorted({(n, False) for n in plain} | {(n, True) for n in folded}))
        self._set = re2.Set.SearchSet(_LATIN1)
        for needle, fold in self.needles:
            # An ASCII needle's bytes occur in UTF-8 only as those characters.
            literal = re2.escape(needle.encode("ascii"))
            self._set.Add(b"(?i:" + literal + b")" if fold else literal)
        self._set.Compile()

    def present(self, data: bytes) -> frozenset[tuple[str, bool]]:
        """(needle, folded) for each needle that occurs in `data` (UTF-8)."""
        return frozenset(self.needles[i] for i in self._set.Match(data) or ())


NEEDLES = NeedleSet(
    [*_BLOCK_NEEDLES, *(n for p in PATTERNS if not p.fold for n in p.needles)],
    (n for p in PATTERNS if p.fold for n in p.needles),
)
GATES = tuple(frozenset((n, p.fold) for n in p.needles) for p in PATTERNS)  # one per pattern


@dataclass(frozen=True)
class FastTrigger:
    """A trigger as an RE2 regex over the text's bytes, ASCII letters in any case."""

    regex: Any  # re2's compiled regex
    # Exact on any text (only ASCII literals and classes: a match is ASCII); else on ASCII
    # lines only, and Python's re searches the lower-cased text of any other line.
    any_text: bool


# RE2 reads \s, \d and \b otherwise than Python's re (whose ASCII \s takes \v and \x1c-\x1f)
# and has no look-around; \w is [0-9A-Za-z_] in both on ASCII. A negated class's \s is spelled
# out; a trigger with anything else of these stays with Python's re, and so does one with an
# anchor: every other trigger matches alike in a line alone and in the whole text.
_RE2_UNSAFE = re.compile(r"\\[sSdDbBAZ]|\(\?[<=!]|\$|(?<!\[)\^")
_NOT_SPACE = "[^ \\t\\n\\r\\x0b\\x0c\\x1c-\\x1f"  # Python's ASCII \s, inside [^...]
_NON_ASCII_SENSITIVE = re.compile(r"\[\^|\\[wWsSdDbB]|\.|\(\?[^:]")


@cache
def fast_trigger(trigger: str) -> FastTrigger | None:
    """The trigger (as written) as RE2 reads it, compiled when a text first meets it; None
    where RE2 would read it otherwise than Python's re."""
    spelled = trigger.replace("[^\\s", _NOT_SPACE)
    if not spelled.isascii() or _RE2_UNSAFE.search(spelled):
        return None
    regex = re2.compile(b"(?i)" + spelled.encode("ascii"), _LATIN1)
    return FastTrigger(regex, any_text=not _NON_ASCII_SENSITIVE.search(trigger))


@cache
def line_check(check: str) -> Any:
    """A line check as RE2 searches it, in lines where the pattern's (?i) can match ASCII
    letters only; compiled when first needed."""
    return re2.compile(b"(?i)" + check.encode("ascii"), _LATIN1)


def __getattr__(name: str) -> Any:
    # The whole tables, for tests and readers: the scan itself compiles one entry at a time.
    if name == "RE2_TRIGGERS":
        return {
            p.trigger: fast
            for p in PATTERNS
            if p.trigger_source is not None and (fast := fast_trigger(p.trigger_source)) is not None
        }
    if name == "LINE_CHECKS":
        return {p.line_check: line_check(p.line_check) for p in PATTERNS if p.line_check}
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


_NON_ASCII_BYTE = re2.compile(b"[\\x80-\\xff]", _LATIN1)


@dataclass(frozen=True)
class Line:
    start: int  # characters, end at the line's `\n` (or the text's end)
    end: int
    byte_start: int | None = None  # in the scanned bytes, when they were scanned
    byte_end: int | None = None

    @property
    def is_ascii(self) -> bool:
        return (
            self.byte_start is not None and self.byte_end - self.byte_start == self.end - self.start
        )


_START = attrgetter("start")


class Scan:
    """One text under scan, with what several patterns share computed once: which needles
    occur, and the lines each trigger points at."""

    def __init__(self, text: str) -> None:
        self.text = text
        data = _encoded(text)
        self.is_ascii = len(data) == len(text)
        self.found = NEEDLES.present(data)
        self._data = data
        self._bytes = data  # where triggers are searched, ASCII letters in any case
        if not self.is_ascii and _KELVIN in text:
            self._bytes = _encoded(self.folded)
            self.found = frozenset(n for n in self.found if not n[1]) | frozenset(
                n for n in NEEDLES.present(self._bytes) if n[1]
            )
        self._lines: dict[str, list[Line]] = {}  # by trigger, as written
        self._cursor = (0, 0)  # a byte offset already turned into characters, and its count

    @cached_property
    def folded(self) -> str:
        """The lower-cased text, whose characters are the text's one for one."""
        folded = self.text.lower()  # may lengthen a few non-ASCII letters: then fold ASCII only
        return folded if len(folded) == len(self.text) else self.text.translate(_ASCII_LOWER)

    def has(self, needle: str) -> bool:
        """Whether `needle`, one of the plain needles, occurs in the text."""
        return (needle, False) in self.found

    def matches(self, pattern: TokenPattern) -> Iterator[re.Match[str]]:
        if pattern.trigger is None:
            yield from pattern.regex.finditer(self.text)
            return
        trigger = pattern.trigger_source
        if trigger not in self._lines:
            self._lines[trigger] = self._lines_hit(pattern)
        check = line_check(pattern.line_check) if pattern.line_check else None
        for line in self._lines[trigger]:
            if check is None or self._may_match(check, line):
                yield from pattern.regex.finditer(self.text, line.start, line.end)

    def _may_match(self, check: Any, line: Line) -> bool:
        if line.byte_start is None:
            return True
        if not line.is_ascii and self._folds_oddly(line):
            return True  # the pattern's (?i) may read `ſ` as `s`: the check is no sure sign
        return check.search(self._bytes, line.byte_start, line.byte_end) is not None

    @cached_property
    def _odd_folds(self) -> bool:
        return any(c in self.text for c in _ODD_FOLDS)  # a substring search is fastest

    def _folds_oddly(self, line: Line) -> bool:
        return self._odd_folds and _ODD_FOLD.search(self.text, line.start, line.end) is not None

    def _lines_hit(self, pattern: TokenPattern) -> list[Line]:
        fast = fast_trigger(pattern.trigger_source)
        if fast is None or (self._bytes is not self._data and not fast.any_text):
            # RE2 reads it otherwise than re, or reads a text lower-cased for its Kelvin sign.
            return list(self._lines_hit_by_re(pattern.trigger))
        if fast.any_text or self.is_ascii:
            return self._lines_hit_by_re2(fast)
        # `\w`, `[^...]`: RE2 reads the ASCII lines, Python's re the others (a few, mostly).
        by_re = [
            Line(a, b) for a, b, folded in self._non_ascii_lines if pattern.trigger.search(folded)
        ]
        if not by_re:
            return self._lines_hit_by_re2(fast, ascii_only=True)
        return sorted([*self._lines_hit_by_re2(fast, ascii_only=True), *by_re], key=_START)

    def _lines_hit_by_re2(self, fast: FastTrigger, *, ascii_only: bool = False) -> list[Line]:
        data = self._bytes
        lines: list[Line] = []
        pos = 0
        while (hit := fast.regex.search(data, pos)) is not None:
            start = data.rfind(b"\n", 0, hit.start()) + 1
            end = data.find(b"\n", hit.end())
            end = len(data) if end < 0 else end
            if not ascii_only or data[start:end].isascii():
                lines.append(Line(self._chars(start), self._chars(end), start, end))
            pos = end  # the rest of this line is taken; no hit spans a line break
        return lines

    @cached_property
    def _non_ascii_lines(self) -> list[tuple[int, int, str]]:
        """(start, end, lower-cased text) of each line holding a non-ASCII character: what
        `folded` holds there (a line break ends the context of a final sigma's lower case, so
        each line lower-cases alone as it does in the text)."""
        data, text = self._bytes, self.text
        spans: list[tuple[int, int]] = []
        pos = 0
        while (hit := _NON_ASCII_BYTE.search(data, pos)) is not None:
            start = data.rfind(b"\n", 0, hit.start()) + 1
            end = data.find(b"\n", hit.end())
            end = len(data) if end < 0 else end
            spans.append((self._chars(start), self._chars(end)))
            pos = end
        lines = [text[a:b] for a, b in spans]
        folded = [line.lower() for line in lines]
        # No character lower-cases to nothing: the text keeps its length when every line does.
        if any(len(low) != len(line) for low, line in zip(folded, lines, strict=True)):
            folded = [line.translate(_ASCII_LOWER) for line in lines]
        return [(a, b, low) for (a, b), low in zip(spans, folded, strict=True)]

    def _lines_hit_by_re(self, trigger: re.Pattern[str]) -> Iterator[Line]:
        text = self.text
        done = 0
        for hit in trigger.finditer(self.folded):
            if hit.start() < done:
                continue
            start = text.rfind("\n", 0, hit.start()) + 1
            done = text.find("\n", hit.end())
            done = len(text) if done < 0 else done
            yield Line(start, done)

    def _chars(self, offset: int) -> int:
        """The character offset of a byte offset in the scanned bytes; offsets mostly come in
        order, so each is counted on from the last."""
        if self.is_ascii:
            return offset
        done, chars = self._cursor
        if offset < done:
            done, chars = 0, 0
        chars += len(self._bytes[done:offset].decode("utf-8", "surrogatepass"))
        self._cursor = (offset, chars)
        return chars
