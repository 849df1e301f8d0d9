"""A name shown inside a line of output (a path, a title), and read back when it is given again.

Line breaks are written `\\n`, `\\r`, `\\t`, so a file named with a newline cannot break the
layout or forge a line (a search result, a pack's slice header); the bidirectional embeddings,
overrides and isolates (U+202A-202E, U+2066-2069) are written `\\u202e`, so a name cannot display
in another order than it reads (Trojan Source, CVE-2021-42574). Both are read back by
`as_written`: a name copied from the output works when it is given back.
"""

from __future__ import annotations

import re

BIDI_CONTROLS = [chr(c) for c in (*range(0x202A, 0x202F), *range(0x2066, 0x206A))]
_BREAKS = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
_WRITTEN = {char: f"\\u{ord(char):04x}" for char in BIDI_CONTROLS}
# A lone surrogate cannot be written as UTF-8: one from a file name's undecodable byte (Python's
# surrogateescape) is written as that byte, `\xNN`, as a source spells it; any other as `\uXXXX`.
_UNWRITABLE = {chr(c): f"\\x{c - 0xDC00:02x}" if 0xDC80 <= c <= 0xDCFF else f"\\u{c:04x}"
               for c in range(0xD800, 0xE000)}  # fmt: skip
DISPLAY_ESCAPES = str.maketrans({**_WRITTEN, **_UNWRITABLE})
_ESCAPED = str.maketrans({**_BREAKS, **_WRITTEN, **_UNWRITABLE})
_READ_BACK = {shown: char for char, shown in {**_BREAKS, **_WRITTEN}.items()}
_SHOWN = re.compile("|".join(re.escape(shown) for shown in _READ_BACK))


def one_line(text: str) -> str:
    """`text` with its line breaks and bidirectional controls written as escapes."""
    return text.translate(_ESCAPED)


def as_written(shown: str) -> str:
    """`one_line`'s escapes read back as the characters."""
    return _SHOWN.sub(lambda m: _READ_BACK[m.group()], shown)


def is_utf8(text: str) -> bool:
    """Whether `text` can be written as UTF-8: False when it holds a lone surrogate (a name's
    undecodable byte, held as a surrogate escape, or a `\\ud800` read from JSON)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
