"""Property tests for the parsers a crawl feeds hostile bytes: charset decoding, the nesting
bound, and HTML extraction (any nesting, charset, attributes, tags and text: never raises
beyond a named refusal, and ends within a generous deadline)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from crawl.charset import decode_html
from crawl.extract import MAX_PARSE_DEPTH, Extracted, Unextractable, extract
from crawl.nesting import nests_deeper_than

TAGS = [
    "div",
    "span",
    "p",
    "a",
    "b",
    "i",
    "code",
    "pre",
    "ul",
    "ol",
    "li",
    "table",
    "tr",
    "td",
    "th",
    "h1",
    "h2",
    "h3",
    "main",
    "article",
    "nav",
    "footer",
    "blockquote",
    "dl",
    "dt",
    "dd",
    "br",
    "img",
    "script",
    "style",
    "svg",
    "math",
    "title",
    "textarea",
    "template",
    "select",
    "option",
    "x-custom",
    "section",
    "form",
    "button",
    "font",
    "noscript",
]
ATTRIBUTES = st.sampled_from([
    "", " class='language-python'", " class=token-line", " id=x", " id='a b'", " hidden",
    " aria-hidden=true", " href='/a'", " href='http://[::1'", " href='http://h:99999/'",
    " href=\"javascript:x\"", " title=\"</div>\"", " role=main", " alt='<b>'", " data-x='\"'",
    " class='headerlink'", " src=x/>", " charset=idna",
])  # fmt: skip
TEXT = st.text(alphabet=st.characters(codec="utf-8"), max_size=20) | st.sampled_from([
    "<", "&amp;", "&#0;", "]]>", "<!--", "-->", "<![CDATA[", "charset=utf-16", "\x00", "`",
])  # fmt: skip


def element(children: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.builds(lambda tag, attrs, inner, close: f"<{tag}{attrs}>{''.join(inner)}"
                     + (f"</{tag}>" if close else ""),
                     st.sampled_from(TAGS), ATTRIBUTES, st.lists(children, max_size=4),
                     st.booleans())  # fmt: skip


def chain(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    """One tag nested to an arbitrary depth, closed or not."""
    return st.builds(lambda tag, depth, body, close: f"<{tag}>" * depth + body
                     + (f"</{tag}>" * depth if close else ""),
                     st.sampled_from(TAGS), st.integers(0, 3000), inner, st.booleans())  # fmt: skip


HTML = st.recursive(TEXT, lambda children: element(children) | chain(children), max_leaves=40)
CHARSETS = st.sampled_from(
    [
        "",
        "utf-8",
        "UTF-16",
        "utf-16be",
        "iso-8859-1",
        "windows-1251",
        "shift_jis",
        "gb18030",
        "idna",
        "undefined",
        "rot13",
        "hex",
        "utf-7",
        "unicode_escape",
        "x-user-defined",
        "\x00",
        "utf-8'",
        '"koi8-r"',
    ]
)
GENEROUS = settings(
    max_examples=150,
    deadline=timedelta(seconds=20),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@GENEROUS
@given(body=HTML, header=CHARSETS, meta=CHARSETS, encoding=st.sampled_from(
    ["utf-8", "utf-16-le", "cp1252", "koi8-r"]), bom=st.booleans())  # fmt: skip
def test_extraction_never_raises_but_a_named_refusal(body, header, meta, encoding, bom):
    html = f"<html><head><meta charset='{meta}'><title>T</title></head><body>{body}</body></html>"
    raw = html.encode(encoding, errors="replace")
    if bom and encoding == "utf-16-le":
        raw = b"\xff\xfe" + raw
    text = decode_html(raw, f"text/html; charset={header}")
    try:
        page = extract(text, "http://127.0.0.1/docs/")
    except Unextractable as refusal:
        assert refusal.reason == "too-deep"
        return
    assert isinstance(page, Extracted) and isinstance(page.markdown, str)
    assert all(link.startswith("http") for link in page.links)


@GENEROUS
@given(body=st.binary(max_size=4096), content_type=st.text(max_size=60))
def test_any_bytes_under_any_content_type_decode(body, content_type):
    assert isinstance(decode_html(body, content_type), str)


@pytest.mark.parametrize(("html", "deep"), [
    ("<div>" * 600, True),
    ("<div>x</div>" * 5000, False),
    ("<table><tr><td>" * 600, True),
    ("<ul>" + "<li>x" * 5000 + "</ul>", False),  # items close each other
    ("<div><span>x</div>" * 5000, False),  # </div> closes the span too
    ("<div><a title='</div>'>x</a>" * 600, True),  # an end tag inside a quoted value
    ("<div></ </div>" * 600, True),  # a bogus comment
    ("<div><!-- </div> -->" * 600, True),
    ("<div><script>'</div>'</script>" * 600, True),
    ("<div><script><!--<script></script></div></script>" * 600, True),  # escaped script
    ("<div><script>for(i=0;i<n;i++){a<b}</script></div>" * 600, False),
    ("<svg><span></svg>" * 600, True),  # <span> ends the svg: </svg> closes nothing
    ("<div>" + ("<svg>" + "<path d='x'/>" * 400 + "</svg>") * 50 + "</div>", False),
    ("<svg><g><![CDATA[ > </g> ]]>" * 600, True),  # CDATA in foreign content is text
])  # fmt: skip
def test_the_nesting_bound_is_never_fooled_low(html, deep):
    assert nests_deeper_than(html, MAX_PARSE_DEPTH) is deep


_CONTAINERS = ["main", "article", "div role='main'", "div class='body'", "section", "div"]
_HIDING = ["hidden", "style='display:none'", "style='visibility: hidden !important'"]


@st.composite
def _page_with_hidden_text(draw: st.DrawFn) -> str:
    """A shown container with the page's text, and, before or after it, hidden text (in a
    hidden container, or a hidden element in a container), each container of a random kind."""
    shown = draw(st.sampled_from(_CONTAINERS))
    hider = draw(st.sampled_from(_CONTAINERS))
    hiding = draw(st.sampled_from(_HIDING))
    inner = draw(st.sampled_from(_CONTAINERS))
    hidden = (f"<{hider} {hiding}><{inner}><p>SECRET PROMPT</p></{inner.split()[0]}>"
              f"</{hider.split()[0]}>")  # fmt: skip
    page = f"<{shown}><h1>Shown title</h1><p>Shown text.</p></{shown.split()[0]}>"
    body = hidden + page if draw(st.booleans()) else page + hidden
    return f"<html><body>{body}</body></html>"


@settings(max_examples=150, deadline=None)
@given(_page_with_hidden_text())
def test_text_the_page_hides_never_comes_out_and_the_shown_text_does(page: str) -> None:
    got = extract(page, "http://127.0.0.1/docs/")
    assert "SECRET PROMPT" not in got.markdown
    assert "Shown text." in got.markdown
