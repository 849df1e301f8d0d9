"""Which of several same-text pages a crawl keeps: canonical, then unversioned, then newest."""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import given
from hypothesis import strategies as st

from crawl.duplicates import version_of, without_duplicates


@dataclass(frozen=True)
class P:
    url: str
    markdown: str = "same"
    canonical: str | None = None


def kept_and_dropped(pages: list[P]) -> tuple[list[str], list[tuple[str, str]]]:
    dropped: list[tuple[str, str]] = []
    kept = without_duplicates(pages, lambda url, reason, detail: dropped.append((url, detail)))
    return [p.url for p in kept], dropped


def test_version_segments_are_read_from_the_path():
    assert version_of("http://h/docs/1.1/intro/") == (1, 1)
    assert version_of("http://h/docs/v2/intro/") == (2,)
    assert version_of("http://h/en/3.x/api.html") == (3, 0)
    assert version_of("http://h/docs/intro/") is None
    assert version_of("http://h/en/latest/intro/") is None  # latest and stable are current
    assert version_of("http://h/docs/http2/") is None


versions = st.lists(
    st.tuples(st.integers(0, 12), st.integers(0, 12), st.integers(0, 3)), min_size=1, max_size=6,
    unique=True,
)  # fmt: skip


@given(versions, st.booleans(), st.randoms(use_true_random=False))
def test_unversioned_then_newest_wins_whatever_the_order(found, with_current, rng):
    urls = [f"http://h/docs/{a}.{b}.{c}/page/" for a, b, c in found]
    if with_current:
        urls.append("http://h/docs/page/")
    pages = [P(u) for u in urls]
    rng.shuffle(pages)
    kept, dropped = kept_and_dropped(pages)
    newest = max(found)
    expected = (
        "http://h/docs/page/" if with_current else "http://h/docs/{}.{}.{}/page/".format(*newest)
    )
    assert kept == [expected]
    assert sorted(u for u, _ in dropped) == sorted(u for u in urls if u != expected)
    assert all(detail == f"same text as {expected}" for _, detail in dropped)


def test_an_in_scope_canonical_beats_the_unversioned_rule():
    pages = [P("http://h/docs/a/", canonical="http://h/docs/2.0/a/"), P("http://h/docs/2.0/a/")]
    assert kept_and_dropped(pages)[0] == ["http://h/docs/2.0/a/"]


def test_pages_with_different_text_are_all_kept():
    pages = [P("http://h/docs/1.0/a/", "old"), P("http://h/docs/a/", "new")]
    assert kept_and_dropped(pages) == (["http://h/docs/1.0/a/", "http://h/docs/a/"], [])
