"""What documentation generators put around the text: where it lives, which parts are chrome,
and which pages are generated indexes rather than documentation.

Each selector names the generator it is for, so a new generator is a few lines here and no
change to the extraction walk (crawl/extract.py).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from crawl.tree import outermost

MAIN_CONTAINERS = (
    "article.md-content__inner",  # MkDocs Material (never its <main>: it holds both sidebars)
    ".theme-doc-markdown",  # Docusaurus
    "div[itemprop=articleBody]",  # Sphinx, Read the Docs
    "#furo-main-content",  # Furo
    "article.bd-article",  # pydata-sphinx-theme, Jupyter Book
    ".td-content",  # Docsy
    "div.body[role=main]",
    "div.body",  # Sphinx basic
    "article",
    "[role=main]",
    "main",
)

CHROME = ", ".join((
    # Any site: page furniture, never documentation. Not an <aside> that docutils (so Sphinx)
    # writes for the text's own footnotes and topics, nor an aside admonition.
    "nav, header, footer, script, style, noscript, template, form, button, iframe, svg",
    # Shown to no reader: a closed <dialog>; a media element's fallback text (only browsers
    # without the element show it); a form control's options (a version picker).
    "dialog:not([open]), video, audio, canvas, select",
    "aside:not(.footnote-list, .footnote, [role=doc-footnote], .admonition, .topic)",
    # `hidden=until-found` is collapsed text a browser's find-in-page opens: content.
    "[hidden]:not([hidden=until-found]), [aria-hidden=true]",
    ".cookie-banner, #cookie-banner, .cookie-consent, .toc",
    # A table its own summary calls navigation (DocBook XSL's prev/up/next bars), and
    # DocBook's and gtk-doc's navigation blocks.
    "table[summary^=Navigation], .navheader, .navfooter, table.navigation",
    # Line numbers beside or inside code (Pygments, Hugo's Chroma): not the code's text.
    "td.linenos, .linenodiv, pre .linenos, pre .lnt, pre .ln",
    ".headerlink, a.anchor, .hash-link, .edit-this-page, .editLink, .breadcrumbs",
    # Sphinx (and its themes: RTD, Furo, pydata, Jupyter Book)
    ".sphinxsidebar, .related, .viewcode-link, .viewcode-back, #searchbox, .toctree-wrapper",
    ".wy-breadcrumbs, .rst-footer-buttons, .rst-versions",
    ".related-pages, .bottom-of-page, .back-to-top, .content-icon-container, .toc-drawer",
    ".prev-next-area, .prev-next-footer, .bd-header-article, .header-article, #pst-back-to-top",
    ".bd-footer-article, .bd-toc, .theme-switch-button",
    # Sphinx-Gallery
    ".sphx-glr-download-link-note, .sphx-glr-timing, .sphx-glr-footer, .sphx-glr-signature",
    ".sphx-glr-thumbnail-title, .sphx-glr-script-out > p:first-child",
    # Jupyter Book / MyST-NB
    ".article-header-buttons, .dropdown-download-buttons, .dropdown-launch-buttons",
    ".header-article-items, .footer-article-items",
    # Docusaurus
    ".theme-edit-this-page, .theme-doc-toc-mobile, .pagination-nav, .theme-doc-breadcrumbs",
    ".theme-doc-version-badge, .theme-doc-version-banner, .theme-doc-footer",
    ".theme-last-updated",
    # MkDocs and Material
    ".md-sidebar, .md-footer, .md-source-file, .md-content__button, .md-feedback, .md-top",
    ".md-clipboard",
))  # fmt: skip

# An element's own style that hides it (`display: none`, `visibility: hidden`), as one of the
# declarations of its style attribute.
_HIDING_STYLE = re.compile(
    r"(?:^|;)\s*(?:display\s*:\s*none|visibility\s*:\s*(?:hidden|collapse))"
    r"\s*(?:!\s*important\s*)?(?:;|$)",
    re.I,
)


def hides_itself(node: Any) -> bool:
    return bool(_HIDING_STYLE.search(node.attributes.get("style") or ""))


def hides(node: Any) -> bool:
    """Whether the page hides `node` from every reader: its `hidden` attribute (but
    `until-found`, which find-in-page opens) or its own inline style. Not `aria-hidden`: that
    hides from screen readers only (an app root while a modal is open)."""
    attrs = node.attributes
    return ("hidden" in attrs and attrs.get("hidden") != "until-found") or hides_itself(node)


def hidden_inline(container: Any) -> list[Any]:
    """The elements inside `container` that their own style hides, outermost only (the rest
    go with them). The container itself is never one: a page hidden whole until its scripts
    show it is still the page."""
    return outermost(n for n in container.css("[style]")
                     if n.mem_id != container.mem_id and hides_itself(n))  # fmt: skip


# Admonitions (a note, a tip, a warning) and disclosures, by generator: (the element's tags,
# a class it has, and how its title child is known). An element's own tag and classes, never
# its descendants' (selectolax's css_matches also answers for those).
_ADMONITIONS: tuple[tuple[frozenset[str], str | None, Callable[[Any], bool]], ...] = (
    (frozenset({"div", "aside"}), "admonition", lambda c: "admonition-title" in _classes(c)),
    (frozenset({"div"}), "theme-admonition",  # Docusaurus
     lambda c: any(k.startswith("admonitionHeading") for k in _classes(c))),
    (frozenset({"details"}), None, lambda c: c.tag == "summary"),  # any disclosure
)  # fmt: skip


def _classes(node: Any) -> list[str]:
    return (node.attributes.get("class") or "").split()


def admonition_title(node: Any) -> Any | None:
    """The title element of an admonition (its first child that the generator marks as
    one), else None: `node` is no admonition."""
    for tags, name, is_title in _ADMONITIONS:
        if node.tag in tags and (name is None or name in _classes(node)):
            child = node.child
            while child is not None:
                if child.is_element_node and is_title(child):
                    return child
                child = child.next
    return None


# Code block languages that say "no language" (Sphinx's `highlight-none`, Sphinx-Gallery's output).
NO_LANGUAGE = frozenset({"none", "text", "default", "plaintext", "plain", "nohighlight"})

# Sphinx's generated indexes: every entry of the site again, as links. Not documentation.
_GENERATED_INDEX = (
    ("table.indextable", "the general index"),
    ("table.domainindex-table, table.modindextable", "the module index"),
    ("#search-results", "the search page"),
    ("#fallback.admonition", "the search page"),
)
_INDEX_FILE = re.compile(r"/(?:genindex|search|[\w-]*modindex)(?:\.html?|/)?$")


def generated_index(tree: Any, path: str) -> str | None:
    """What generated index `tree` is (Sphinx's genindex, py-modindex or search), else None."""
    if not _INDEX_FILE.search(path):
        return None  # only where Sphinx puts them: a page that merely has a table is content
    for selector, what in _GENERATED_INDEX:
        if tree.css_first(selector) is not None:
            return what
    return None


def whole_book(tree: Any, path: str) -> str | None:
    """What all-in-one page `tree` is (mdBook's print.html: every chapter again on one page, and
    marked noindex by mdBook itself), else None."""
    if not path.endswith("/print.html"):
        return None
    robots = tree.css_first("meta[name=robots]")
    if robots is not None and "noindex" in (robots.attributes.get("content") or ""):
        return "mdBook's print page (the whole book on one page)"
    return None


def prepare(main: Any) -> None:
    """Reshape generator markup in place so the walk reads it as the page reads."""
    for header in main.css("header"):
        if header.css_first("h1") is not None:  # Docusaurus: the page's H1 sits in a <header>
            header.unwrap()
    # Hidden tab panels are content (Docusaurus hides them with `hidden`, sphinx-tabs too), but
    # only panels a tab bar opens: those beside a `[role=tablist]`, each after its label. A
    # hidden "panel" no tab opens is hidden text like any other.
    # One look per tab bar's parent, however many bars share it: asking the parent once per
    # bar would take bars x panels (4,000 bars beside each other: a minute).
    groups: dict[int, tuple[Any, list[Any]]] = {}
    for tabs in main.css("[role=tablist]"):
        if tabs.parent is not None:
            groups.setdefault(tabs.parent.mem_id, (tabs.parent, []))[1].append(tabs)
    for parent, bars in groups.values():
        panels = parent.css("[role=tabpanel]")
        for panel in panels:
            if "hidden" in panel.attrs:
                del panel.attrs["hidden"]
            if hides_itself(panel):
                del panel.attrs["style"]
        labels = [" ".join(t.text(deep=True).split()) for t in bars[0].css("[role=tab]")]
        if len(bars) == 1 and len(labels) == len(panels):
            for label, panel in zip(labels, panels, strict=True):
                panel.insert_before(label)
            bars[0].decompose()
    for tabbed in main.css(".tabbed-set"):  # MkDocs Material (pymdownx.tabbed)
        labels = [" ".join(t.text(deep=True).split()) for t in tabbed.css(".tabbed-labels label")]
        blocks = tabbed.css(".tabbed-block")
        if len(labels) == len(blocks):
            for label, block in zip(labels, blocks, strict=True):
                block.insert_before(label)
            for bar in tabbed.css(".tabbed-labels"):
                bar.decompose()
    # Sphinx field lists and signatures: types are runs of <em> ("list", " of ", "float") that
    # read as plain text; markdown emphasis would make `(*list**of**float*)` of them.
    for node in main.css("dl.field-list em, dl.field-list strong, dt.sig em, dt.sig strong"):
        node.unwrap()
