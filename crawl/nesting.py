"""How deep an HTML page nests, bounded from above before the parser sees it.

Lexbor's tree builder walks its stack of open elements on most tags, so its time grows with
tags x depth: 200,000 nested `<div>`s take two minutes. Pages nested deeper than a limit are
refused before parsing. The estimate follows the tokenizer closely (quoted attribute values,
comments, bogus comments) and, where the tree builder's answer depends on state we do not
model (foreign content, script escapes), errs high: an end tag pops only when the tree builder
surely pops too, and end tags inside raw text, CDATA or a `<script>` never pop. Elements that
close themselves (`p`, `li`, `td`...) and void elements are not counted, so the true depth
can be a small multiple of the estimate, never an unbounded one.
"""

from __future__ import annotations

import re


def _names(text: str) -> frozenset[str]:
    return frozenset(text.split())


# One token at a time: a comment, a bogus comment (`<!x>`, `<?x>`, `</ x>`), CDATA, or a tag
# with its attributes (quoted values skipped whole, as the tokenizer does).
_TOKEN = re.compile(
    r"""<!--(?:-?>)?
    | <!\[CDATA\[
    | <[!?][^>]*+>?
    | </(?![A-Za-z])[^>]*+>?
    | <(/?)([A-Za-z][^\t\n\f\r\ />]*+)
      ((?:[\t\n\f\r\ /]++
         | [^\t\n\f\r\ />][^\t\n\f\r\ />=]*+
           (?:[\t\n\f\r\ ]*+=[\t\n\f\r\ ]*+(?:"[^"]*+"|'[^']*+'|[^\t\n\f\r\ >]*+))?+
      )*+)>""",
    re.X,
)
_COMMENT_END = re.compile(r"--!?>")
_SCRIPT_MARK = re.compile(r"(?=(<!--|-->|</?script[\t\n\f\r />]))", re.I)

VOID = _names(
    "area base basefont bgsound br col embed frame hr img input keygen link meta param source "
    "track wbr"
)
# Closed by their next sibling's start tag, so they never pile up; not counted.
SELF_CLOSING_BY_SIBLING = _names(
    "p li dt dd option optgroup tr td th thead tbody tfoot colgroup caption rb rt rp rtc "
    "html head body"
)
# An end tag for one of these pops only the top of the stack (the adoption agency and
# `</form>` can leave elements open that a plain pop would close).
TOP_ONLY = _names("a b big code em font i nobr s small strike strong tt u form")
# Scope boundaries: no end tag pops through them.
BOUNDARY = _names(
    "applet caption html table td th marquee object template foreignobject desc title mi mo "
    "mn ms mtext annotation-xml"
)
# End tags of these pop through anything but a boundary.
SPECIAL = BOUNDARY | _names(
    "address article aside blockquote center details dialog dir div dl fieldset figcaption "
    "figure footer frameset header hgroup h1 h2 h3 h4 h5 h6 iframe listing main menu nav "
    "noembed noframes noscript ol plaintext pre script search section select style summary "
    "tbody textarea tfoot thead ul xmp button"
)
# HTML elements that end foreign content (svg, math); another end tag never pops through
# them, since the tree builder may already have closed the foreign element it names.
BREAKOUT = _names(
    "b big blockquote body br center code dd div dl dt em embed h1 h2 h3 h4 h5 h6 head hr i "
    "img li listing menu meta nobr ol p pre ruby s small span strong strike sub sup table tt "
    "u ul var font"
)
RAW_TEXT = _names("script style xmp iframe noembed noframes noscript textarea title")


def nests_deeper_than(html: str, limit: int) -> bool:
    """True when `html` may open more than `limit` elements at once (an upper bound)."""
    if html.count("<") <= limit:
        return False  # fewer tags than the limit: no need to look closer
    names: list[str] = []  # the stack of open elements
    where: dict[str, list[int]] = {}  # name -> its indices in `names`
    bounds: list[int] = []  # indices of BOUNDARY elements, and of all blocking ones
    blockers: list[int] = []
    pos, end = 0, len(html)
    quiet_until = -1  # raw text or CDATA that may be markup: its end tags never pop
    search = _TOKEN.search
    while (match := search(html, pos)) is not None:
        pos = match.end()
        slash, name = match.group(1, 2)
        quiet = match.start() < quiet_until
        if name is None:  # a comment, bogus comment or CDATA
            token = match.group(0)
            if token == "<![CDATA[":
                if not (where.get("svg") or where.get("math")):
                    pos = html.find(">", pos) + 1 or end  # outside foreign content: a comment
                elif not quiet:
                    close = html.find("]]>", pos)
                    quiet_until = end if close < 0 else close
            elif token.startswith("<!--") and not token.endswith(">") and not quiet:
                close = _COMMENT_END.search(html, pos)
                if close is None:
                    return False  # the rest of the page is a comment
                pos = close.end()
            continue
        name = name.lower()
        if slash:
            indices = where.get(name)
            if not indices or quiet:
                continue  # not open (the tree builder ignores it too), or raw text
            index = indices[-1]
            if index != len(names) - 1:  # not the top: pop through only what surely pops
                if name in TOP_ONLY:
                    continue
                barrier = bounds if name in SPECIAL else blockers
                if barrier and barrier[-1] > index:
                    continue
            while len(names) > index:
                where[names.pop()].pop()
                for barrier in (bounds, blockers):
                    if barrier and barrier[-1] == len(names):
                        barrier.pop()
            continue
        if name in _NOT_COUNTED:
            continue
        index = len(names)
        if index >= limit:
            return True
        names.append(name)
        where.setdefault(name, []).append(index)
        if name in _BLOCKING:
            if name in BOUNDARY:
                bounds.append(index)
            blockers.append(index)
        if name in RAW_TEXT and not quiet:
            stop = _raw_text_end(html, pos, name)
            if where.get("svg") or where.get("math"):
                quiet_until = stop  # maybe foreign content, where these hold markup
            else:
                pos = stop  # raw text: nothing in it is a tag
    return False


_NOT_COUNTED = VOID | SELF_CLOSING_BY_SIBLING
_BLOCKING = SPECIAL | BREAKOUT


def _raw_text_end(html: str, pos: int, name: str) -> int:
    """Where the raw text opened by `<name>` ends (its end tag), or the page's end.

    A script follows the tokenizer's escape states: inside `<!--`, a nested `<script>` makes
    the next `</script>` end only the nesting."""
    if name != "script":
        close = re.compile(rf"</{name}[\t\n\f\r />]", re.I).search(html, pos)
        return close.start() if close else len(html)
    escaped = double = False
    for mark in _SCRIPT_MARK.finditer(html, pos):
        token = mark.group(1).lower()
        if token == "<!--":
            escaped = escaped or not double
        elif token == "-->":
            escaped = double = False
        elif token.startswith("</"):
            if not double:
                return mark.start()
            double = False
        elif escaped:
            double = True
    return len(html)
