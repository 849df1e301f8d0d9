"""The text of an HTML page from its bytes: the charset comes from a byte order mark, the
Content-Type header, or a real `<meta charset>` / `<meta http-equiv>` element, in that order
(the HTML standard's order), else UTF-8. Only the web's encodings are taken: a label such as
`idna`, `undefined` or `rot13` names a Python codec, not a page encoding, and is ignored.
Decoding never raises: undecodable bytes become U+FFFD.
"""

from __future__ import annotations

import codecs
import re

from selectolax.lexbor import LexborHTMLParser

_BOMS = ((codecs.BOM_UTF8, "utf-8"), (codecs.BOM_UTF16_BE, "utf-16-be"),
         (codecs.BOM_UTF16_LE, "utf-16-le"))  # fmt: skip
_CHARSET_PARAM = re.compile(r"charset\s*=\s*[\"']?\s*([^\s\"';]+)", re.I)
# Labels of the WHATWG Encoding Standard that Python spells differently.
_LABELS = {
    "windows-874": "cp874", "x-mac-cyrillic": "mac-cyrillic", "windows-31j": "cp932",
    "unicode-1-1-utf-8": "utf-8", "iso-8859-8-i": "iso8859-8", "x-sjis": "cp932",
}  # fmt: skip
# The Encoding Standard's encodings as Python names them; where the standard maps a label to a
# superset (latin-1 and ascii to windows-1252...), the superset.
_WEB_CODECS = {
    "utf-8": "utf-8", "utf-16-le": "utf-16-le", "utf-16-be": "utf-16-be",
    "utf-16": "utf-16-le", "cp866": "cp866", "koi8-r": "koi8-r", "koi8-u": "koi8-u",
    "mac-roman": "mac-roman", "mac-cyrillic": "mac-cyrillic", "cp874": "cp874",
    "latin-1": "cp1252", "iso8859-1": "cp1252", "ascii": "cp1252", "iso8859-9": "cp1254",
    "iso8859-11": "cp874", "gb2312": "gbk", "gbk": "gbk", "gb18030": "gb18030",
    "big5": "big5hkscs", "big5hkscs": "big5hkscs", "euc_jp": "euc_jp",
    "iso2022_jp": "iso2022_jp", "shift_jis": "cp932", "cp932": "cp932", "euc_kr": "cp949",
    "cp949": "cp949",
    **{f"iso8859-{n}": f"iso8859-{n}" for n in (2, 3, 4, 5, 6, 7, 8, 10, 13, 14, 15, 16)},
    **{f"cp{n}": f"cp{n}" for n in range(1250, 1259)},
}  # fmt: skip
PRESCAN_BYTES = 1024  # as the HTML standard's prescan: a <meta> later than this is not seen


def decode_html(body: bytes, content_type: str = "") -> str:
    for bom, encoding in _BOMS:
        if body.startswith(bom):
            return body[len(bom) :].decode(encoding, errors="replace")
    encoding = _header_charset(content_type) or _meta_charset(body[:PRESCAN_BYTES]) or "utf-8"
    return body.decode(encoding, errors="replace")


def web_codec(label: str | None) -> str | None:
    """The Python codec for a charset label, or None when it names no web encoding."""
    if not label:
        return None
    label = label.strip().lower()
    try:
        name = codecs.lookup(_LABELS.get(label, label)).name
    except (LookupError, ValueError):  # ValueError: a label with a NUL in it
        return None
    return _WEB_CODECS.get(name)


def _header_charset(content_type: str) -> str | None:
    params = content_type.partition(";")[2]
    match = _CHARSET_PARAM.search(params)
    return web_codec(match.group(1)) if match else None


def _meta_charset(head: bytes) -> str | None:
    """The charset a `<meta>` element in the page's first bytes declares, read by the parser
    (so text that merely mentions `charset=` is not taken)."""
    if b"<meta" not in head.lower():
        return None
    tree = LexborHTMLParser(head.decode("latin-1"))  # ASCII-compatible: tags read the same
    for meta in tree.css("meta"):
        attributes = meta.attributes
        label = attributes.get("charset")
        if not label and (attributes.get("http-equiv") or "").strip().lower() == "content-type":
            match = _CHARSET_PARAM.search(attributes.get("content") or "")
            label = match.group(1) if match else None
        encoding = web_codec(label)
        if encoding:
            # A page whose <meta> can be read as ASCII is not UTF-16 (the standard's rule).
            return "utf-8" if encoding.startswith("utf-16") else encoding
    return None
